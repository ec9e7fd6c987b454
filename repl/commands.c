/* commands.c — the REPL's ':' commands: the graph (:help, :nodes, :info, :graph, :history, :reset,
 * :save, :load, :quit), the run log (:runs, :run, :tensor, :sql, :trace, :watch, :unwatch, :prune,
 * :log) and the browser views of the log (:web, web/web.h).
 *
 * A command line is split into words (double or single quotes group a word with spaces; `\` escapes
 * inside double quotes), its first word is looked up in the table `commands` (data, as SQLite's
 * shell keeps its dot-commands: name, alias, argument counts, synopsis, help, handler) and the
 * handler runs. A command of `whole_line_commands` (:sql) gets the rest of the line as its one
 * argument, unsplit. Only exact names and the documented aliases (:h, :q) are accepted; anything else is
 * an error that suggests the nearest names by repl_edit_distance. Results go to stdout, errors to
 * stderr; every handler returns REPL_DONE, REPL_FAILED or REPL_QUIT.
 *
 * The run-log commands read the log through the store's queries (store/query.c: a read-only
 * connection of their own, after a flush of the REPL's store so that the latest runs show) and change
 * its policy through the store's setters. Without a log (--no-log) they say so and fail.
 *
 * Lua is touched only by :help (op functions, tide.help and suggestions), always inside lua_pcall
 * with raw table accesses, so that no Lua error can escape while the command holds C memory.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "debugger.h"
#include "graphdef_repl.h"
#include "lua_checkpoint.h"
#include "repl.h"
#include "web.h"

#define MAX_WORDS 8          /* words kept from a command line (more are counted, for the error) */
#define WRAP_WIDTH 78        /* help text is wrapped at this column */
#define SMALL_GRAPH 40       /* :graph prints the text format of graphs with fewer nodes */
#define SMALL_TENSOR 16      /* :info prints the values of tensor attrs up to this many elements */
#define MAX_LIST_ITEMS 16    /* :info prints list attrs up to this many items */
#define MAX_CONSUMERS 50     /* :info lists at most this many consumers */

/* ---------------------------------------------------------------- the command table */

typedef repl_command_entry command;

static repl_result cmd_help(repl *r, int argc, char **argv);
static repl_result cmd_nodes(repl *r, int argc, char **argv);
static repl_result cmd_info(repl *r, int argc, char **argv);
static repl_result cmd_fusion(repl *r, int argc, char **argv);
static repl_result cmd_capture(repl *r, int argc, char **argv);
static repl_result cmd_graph(repl *r, int argc, char **argv);
static repl_result cmd_history(repl *r, int argc, char **argv);
static repl_result cmd_reset(repl *r, int argc, char **argv);
static repl_result cmd_save(repl *r, int argc, char **argv);
static repl_result cmd_load(repl *r, int argc, char **argv);
static repl_result cmd_quit(repl *r, int argc, char **argv);
static repl_result cmd_web(repl *r, int argc, char **argv);

static const command commands[] = {
    {"help", "h", 0, 1, "[NAME]", "the commands, or the help of a command, op function or tide function",
     "Without NAME: the commands and how to start. With the name of a command (`:help nodes`), its\n"
     "help; with the name of an op function (`:help matmul`) or an op (`:help MatMul`), the op's\n"
     "signature, attrs, kernels and documentation, and how to call it from Lua; with the name of\n"
     "another tide function (`:help variable`), its usage.",
     cmd_help, false},
    {"nodes", NULL, 0, 1, "[PATTERN]", "the graph's nodes: name, op, output dtype and shape, device",
     "Lists the nodes of the graph in creation order, one per line: name, op, the dtype and shape of\n"
     "output 0 (`?` is a dimension known only at run time), and the requested device (with the one\n"
     "it was placed on once it has run). PATTERN is a shell glob matched against whole names:\n"
     "`:nodes layer1/*`, `:nodes *grad*`.",
     cmd_nodes, false},
    {"info", NULL, 1, 1, "NODE", "one node: op, inputs, consumers, outputs, devices, attrs",
     "Describes the node NODE (a name as `:nodes` shows it; `name:1` is accepted): its op, its inputs\n"
     "(node:output, dtype, shape), control inputs, the nodes that consume it, its outputs with dtype\n"
     "and shape, the requested and assigned devices, its attrs (large tensor values are shown by\n"
     "shape) and whether it is stateful.",
     cmd_info, false},
    {"graph", NULL, 0, 0, "", "a summary of the graph: ops, variables, scopes, version",
     "Summarises the graph: the node count, the ops by count, the variables with their shapes, the\n"
     "name scopes (first components of node names) with their node counts and the graph version.\n"
     "Graphs of fewer than 40 nodes are also printed in the graph text format\n"
     "(docs/graph-text-format.md).",
     cmd_graph, false},
    {"history", NULL, 0, 0, "", "the entries of this session, numbered",
     "Prints every entry of this session (statements and commands), numbered from 1. The prompt also\n"
     "keeps entries across sessions in ~/.tide_history.",
     cmd_history, false},
    {"reset", NULL, 0, 1, "[all]", "drop the graph, its session and every node handle",
     "Drops the graph, the default session and every node handle (Lua variables that held nodes\n"
     "now hold dead handles), and starts a fresh graph and session. The engine, the values of its\n"
     "variables (kept in the engine's containers) and the run log stay: a new variable of the same\n"
     "name, dtype and shape starts with the old value; one of another shape or dtype refuses to read\n"
     "it until run(init()) replaces it. `:reset all` also drops the variables' values.",
     cmd_reset, false},
    {"save", NULL, 1, 1, "FILE", "write the graph to FILE in the graph text format",
     "Writes the whole graph to FILE in the graph text format (docs/graph-text-format.md), atomically:\n"
     "the text goes to a temporary file next to FILE that then replaces it, so FILE is never left\n"
     "half written. Variable values are not saved (only the nodes that initialise them).",
     cmd_save, false},
    {"load", NULL, 1, 1, "FILE", "add the nodes of a graph text file to the graph",
     "Adds every node of FILE (graph text format) to the graph, or none: on any error (the message\n"
     "names the file and line) the graph is left as it was. Loaded nodes are reachable from Lua as\n"
     "node(\"name\"). Names must not clash with nodes already in the graph (`:reset` first to load a\n"
     "saved graph again). A file that is not text, or larger than the cap on input files\n"
     "($TIDE_MAX_INPUT_BYTES, 1 GiB unless set), is refused as it is read.",
     cmd_load, false},
    {"save-vars", NULL, 1, 1, "PATH", "write every variable's value to the checkpoint PATH.npz",
     "Saves the current value of every variable of the graph to PATH.npz (PATH when it ends in .npz), a\n"
     "zip of .npy files numpy.load reads, written atomically (a crash leaves the old file or the new one)\n"
     "and recorded in the directory's 'checkpoint' file. saver() does the same from Lua, with a global\n"
     "step and keeping the last N (docs/checkpoints.md).",
     repl_cmd_save_vars, false},
    {"restore", NULL, 1, 1, "PATH|DIR", "assign every variable its value from a checkpoint",
     "Assigns every variable of the graph the value saved under its name in the checkpoint PATH (.npz\n"
     "may be left out), or in the latest checkpoint of the directory DIR. A variable the file lacks, or\n"
     "whose dtype or shape differs, is an error naming it, and then no variable is changed.",
     repl_cmd_restore, false},
    {"import", NULL, 1, 2, "FILE [SCOPE]", "add the nodes of a TensorFlow GraphDef (.pb, .pbtxt) to the graph",
     "Adds every node of the TensorFlow GraphDef FILE (binary .pb or text .pbtxt, told apart by the\n"
     "extension or the bytes) to the graph, under the name scope SCOPE if given, or none: on any error\n"
     "(an op tide lacks, a malformed file, a bad attr; the message names them all) the graph is left as\n"
     "it was. import_graph(FILE, {scope=, input_map=}) does the same from Lua and remaps inputs to\n"
     "existing nodes. docs/tensorflow.md says what maps to what.",
     repl_cmd_import, false},
    {"export", NULL, 1, 2, "FILE [text|binary]", "write the graph as a TensorFlow GraphDef (.pb, .pbtxt)",
     "Writes the whole graph to FILE as a TensorFlow GraphDef that TensorFlow 1.x, TensorBoard and\n"
     "Netron read: binary unless FILE ends in .pbtxt or the format is given. Attrs follow TensorFlow's\n"
     "conventions and every node carries _output_shapes. :import reads it back as the same graph.",
     repl_cmd_export, false},
    {"runs", NULL, 0, 1, "[N]", "the last N runs of the run log (20), newest last",
     "Lists the last N runs of the run log (default 20, every session of the file, the newest last): the\n"
     "run's id, its session and step, its status, its wall time in milliseconds, whether it was traced\n"
     "(has per-node timings), what it fetched and when it started (local time). `:run ID` shows one.\n"
     "Every run() is logged; `:log` says where the log is.",
     repl_cmd_runs, false},
    {"run", NULL, 0, 1, "[ID]", "one run of the log: its status, memory, lanes and slowest nodes",
     "Shows the run ID of the run log (as `:runs` lists it; without ID, the latest): its step and\n"
     "session, status and error, wall time, start time, feeds, fetches and targets, how many tensors it\n"
     "logged, its memory per device (the most its kernels held at once there; what the device held when\n"
     "it ended) and, for a traced run, its lanes (each executor thread and device stream, such as\n"
     "/sim:0 compute or /sim:0 copy h2d, with its executions and busy time) and its 10 slowest nodes (op,\n"
     "device, executor thread, kernel time in microseconds and its share of the run's wall time). Which\n"
     "runs are traced: `:trace`.",
     repl_cmd_run, false},
    {"tensor", NULL, 1, 2, "NODE [STEP]", "a watched node's value and statistics at a past step",
     "Time travel: the value a watched node (`:watch NODE`) had at step STEP of its session, read from\n"
     "the run log: the latest step at or before STEP that logged it (without STEP, the latest). Prints\n"
     "the value when it was stored (within the value cap, `:log cap`, and not pruned, `:prune`), then its\n"
     "shape, dtype, min, max, mean, std, NaN and Inf counts and a histogram of its finite elements.\n"
     "`NODE:1` is output 1. The session is the one that logged the node last.",
     repl_cmd_tensor, false},
    {"sql", NULL, 1, 1, "[-w N] QUERY", "a read-only SQL query of the run log, printed as a table",
     "Runs one SQL statement on the run log (the rest of the line, as typed) through a read-only\n"
     "connection and prints the result as a table: cells clipped at 40 characters (-w N: at N, -w 0:\n"
     "never), at most 100 rows.\n"
     "Only reading statements run (SELECT, WITH, VALUES, PRAGMA, EXPLAIN); the log's tables and columns\n"
     "are in docs/run-log.md. status_name(status) gives a status's name; Ctrl-C stops a long query.\n"
     "Example:\n"
     "`:sql SELECT step, mean FROM tensors WHERE node = 'loss' ORDER BY step DESC LIMIT 5`.",
     repl_cmd_sql, false},
    {"fusion", NULL, 0, 1, "[on|off]", "fuse element-wise chains into one pass (on by default)",
     "Without an argument: whether the session's plans fuse chains and trees of element-wise ops (bias\n"
     "add, activations, their gradients, an update's arithmetic) into one item that makes one pass over\n"
     "the data. `:fusion off` plans every node as an item of its own (per-node timings, the graph as\n"
     "written); `:fusion on` fuses again. Also tide.fusion(false) in Lua, or TIDE_FUSION=0 for the\n"
     "process. Watched and fetched nodes are never fused away, and nothing is fused while a breakpoint\n"
     "is set. A traced run shows a group as one execution of its last node: `:info NODE` names the\n"
     "group. docs/fusion.md.",
     cmd_fusion, false},
    {"capture", NULL, 0, 1, "[on|off]", "whole-step capture: whether steps are replayed from a device graph",
     "Without an argument: whether the session captures its steps and how its last step ran: eagerly\n"
     "(with the reason it was not replayed), captured, or replayed from the graph (on which device, how\n"
     "many replays, the memory the graph holds). A step all on one simulated device or GPU with the same\n"
     "fed shapes is captured after two eager runs and replayed from then on. `:capture off` runs every\n"
     "step eagerly; TIDE_CAPTURE=0 for the process. `:run` says it for the latest run. docs/devices.md.",
     cmd_capture, false},
    {"trace", NULL, 0, 2, "[MODE]", "which runs record per-node timings: on, off, every N",
     "Without MODE: which runs record per-node timings (the run log's trace policy). `:trace on` traces\n"
     "every run, `:trace off` only the runs traced by the caller (run(..., {trace=true})), and\n"
     "`:trace every N` the steps 0, N, 2N... of each session (the default is every 100). Takes effect\n"
     "from the next run. `:run ID` shows a traced run's slowest nodes.",
     repl_cmd_trace, false},
    {"watch", NULL, 0, 1, "[NODE]", "log a node's values at every run (or list the watched nodes)",
     "Logs every output of the node NODE at every run that computes it, from the next run on: its\n"
     "statistics (min, max, mean, std, NaN and Inf counts, histogram) and its value when within the\n"
     "value cap (`:log cap`). `:tensor NODE [STEP]` reads them back. A name with no node yet is watched\n"
     "anyway (with a warning). NODE may be a shell glob matched against whole names: `:watch layer1/*`,\n"
     "`:watch *loss*` (also nodes added later). Without NODE: the watched nodes.",
     repl_cmd_watch, false},
    {"unwatch", NULL, 0, 1, "[NODE]", "stop logging a node's values (or list the watched nodes)",
     "Stops logging the node NODE (or the glob, as it was watched) from the next run on; what was\n"
     "logged stays. Without NODE: the watched nodes.",
     repl_cmd_unwatch, false},
    {"prune", NULL, 0, 1, "[KEEP]", "clear the stored values of all but the last KEEP runs (100)",
     "Retention: clears the stored tensor values of every run of the log except the KEEP most recent\n"
     "(default 100; 0 clears them all) and says how many it cleared. Statistics, histograms and all\n"
     "other rows stay. The file does not shrink (SQLite reuses the space); `sqlite3 FILE 'VACUUM'` while\n"
     "nothing writes it gives the space back.",
     repl_cmd_prune, false},
    {"log", NULL, 0, 2, "[cap BYTES]", "the run log: its file, size, counts and policy",
     "Where the run log is and its size, its counts (sessions, runs, traced and failed runs, node\n"
     "timings, tensors, stored values), the policy (`:trace`, the value cap, the watched nodes) and the\n"
     "records dropped because the writer fell behind. `:log cap BYTES` sets the value cap: a watched\n"
     "tensor's value is stored when it holds at most BYTES bytes (64K, 1M; 0: statistics only).\n"
     "Start tide with --log FILE for another file, --no-log for none.",
     repl_cmd_log, false},
    {"web", NULL, 0, 1, "[PORT|stop]", "serve the run log's browser views (graph, timeline, tensors)",
     "Starts the web server on the run log (http://127.0.0.1:6006/ unless PORT is given; 0 picks a\n"
     "free port) and prints its address: open it in a browser for the runs and their curves, the graph\n"
     "coloured by device, the timeline of a traced run, tensors and the comparison of two runs. The\n"
     "pages follow the log live while you run. It listens on 127.0.0.1 only and never writes. `:web`\n"
     "again says where it is, `:web stop` stops it; it stops when tide exits. `tide serve FILE.db`\n"
     "serves a log without a REPL (docs/web.md).",
     cmd_web, false},
    {"quit", "q", 0, 0, "", "leave tide",
     "Leaves tide (as Ctrl-D at the prompt, or quit() in Lua).", cmd_quit, false},
};
#define NUM_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

/* Commands whose one argument is the rest of the line as typed, not split into words (SQL has quotes
 * of its own). */
static const char *const whole_line_commands[] = {"sql"};

/* Command i of all the tables: this file's, then the debugger's (debugger_commands.c). */
static int num_all_commands(void) { return NUM_COMMANDS + repl_num_debugger_commands; }
static const command *command_at(int i)
{
    return i < NUM_COMMANDS ? &commands[i] : &repl_debugger_commands[i - NUM_COMMANDS];
}

static const command *find_command(const char *name)
{
    for (int i = 0; i < num_all_commands(); i++) {
        const command *c = command_at(i);
        if (strcmp(c->name, name) == 0 || (c->alias && strcmp(c->alias, name) == 0))
            return c;
    }
    return NULL;
}

const char *const *repl_command_names(void)
{
    static const char *names[NUM_COMMANDS + 64];
    if (!names[0])
        for (int i = 0; i < num_all_commands() && i < NUM_COMMANDS + 63; i++)
            names[i] = command_at(i)->name;
    return names;
}

/* ---------------------------------------------------------------- "did you mean" */

/* The (up to) three candidates nearest to a word, copied (candidates need not outlive it). */
typedef struct suggestions {
    const char *word;
    int limit;          /* the largest distance worth suggesting */
    int count;
    int dist[3];
    char name[3][72];
} suggestions;

static void suggest_init(suggestions *s, const char *word)
{
    size_t n = strlen(word);
    memset(s, 0, sizeof *s);
    s->word = word;
    s->limit = n == 0 ? 0 : n <= 3 ? 1 : n <= 6 ? 2 : 3;
}

/* Considers one candidate: near by edit distance, or (for words of 3+ letters) containing the word. */
static void suggest_consider(suggestions *s, const char *candidate)
{
    if (!candidate || !candidate[0] || strlen(candidate) >= sizeof s->name[0])
        return;
    if (strcmp(candidate, s->word) == 0)
        return;
    char a[72], b[72]; /* case does not count: Matmul suggests matmul */
    snprintf(a, sizeof a, "%s", s->word);
    snprintf(b, sizeof b, "%s", candidate);
    for (char *c = a; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    for (char *c = b; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    int d = repl_edit_distance(a, b);
    if (d > s->limit && strlen(a) >= 3 && strstr(b, a))
        d = s->limit;
    if (d > s->limit)
        return;
    for (int i = 0; i < s->count; i++)
        if (strcmp(s->name[i], candidate) == 0)
            return;
    int at = s->count < 3 ? s->count : 3;
    while (at > 0 && (s->dist[at - 1] > d || (s->dist[at - 1] == d && strcmp(s->name[at - 1], candidate) > 0)))
        at--;
    if (at >= 3)
        return;
    int last = s->count < 3 ? s->count : 2;
    for (int i = last; i > at; i--) {
        s->dist[i] = s->dist[i - 1];
        memcpy(s->name[i], s->name[i - 1], sizeof s->name[i]);
    }
    s->dist[at] = d;
    snprintf(s->name[at], sizeof s->name[at], "%s", candidate);
    if (s->count < 3)
        s->count++;
}

/* Writes "; did you mean A, B or C?" (each name after prefix) and a newline; just the newline when
 * there is nothing to suggest. */
static void suggest_print(const suggestions *s, FILE *out, const char *prefix)
{
    if (s->count > 0) {
        fputs("; did you mean ", out);
        for (int i = 0; i < s->count; i++)
            fprintf(out, "%s%s%s", i == 0 ? "" : i == s->count - 1 ? " or " : ", ", prefix, s->name[i]);
        fputc('?', out);
    }
    fputc('\n', out);
}

static void suggest_commands(suggestions *s)
{
    for (int i = 0; i < num_all_commands(); i++)
        suggest_consider(s, command_at(i)->name);
}

/* ---------------------------------------------------------------- small helpers */

/* Splits a command line into words in w->buf (a copy of line): whitespace separates words, "..." and
 * '...' group, `\` escapes the next character inside "...". False (with msg) for an unclosed quote. */
typedef struct words {
    char *buf;
    int count;               /* every word, also those beyond MAX_WORDS */
    char *word[MAX_WORDS];
} words;

static bool split_words(const char *line, words *w, char *msg, size_t size)
{
    memset(w, 0, sizeof *w);
    w->buf = strdup(line);
    if (!w->buf) {
        snprintf(msg, size, "out of memory");
        return false;
    }
    char *in = w->buf, *out = w->buf;
    for (;;) {
        while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r')
            in++;
        if (!*in)
            return true;
        char *start = out;
        while (*in && *in != ' ' && *in != '\t' && *in != '\n' && *in != '\r') {
            if (*in != '"' && *in != '\'') {
                *out++ = *in++;
                continue;
            }
            char quote = *in++;
            while (*in && *in != quote) {
                if (quote == '"' && *in == '\\' && in[1])
                    in++;
                *out++ = *in++;
            }
            if (!*in) {
                snprintf(msg, size, "unclosed %s quote in the command line", quote == '"' ? "double" : "single");
                return false;
            }
            in++;
        }
        bool at_end = !*in;
        if (!at_end)
            in++;
        *out++ = 0;
        if (w->count < MAX_WORDS)
            w->word[w->count] = start;
        w->count++;
        if (at_end)
            return true;
    }
}

char *repl_expand_path(const char *path)
{
    const char *home = getenv("HOME");
    if (path[0] == '~' && (path[1] == '/' || !path[1]) && home && home[0]) {
        size_t n = strlen(home) + strlen(path);
        char *s = malloc(n);
        if (s)
            snprintf(s, n, "%s%s", home, path + 1);
        return s;
    }
    return strdup(path);
}

/* Prints text wrapped at WRAP_WIDTH, every line indented by indent spaces. Existing newlines are kept. */
static void print_wrapped(FILE *out, const char *text, int indent)
{
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        int col = 0;
        const char *q = p, *end = p + len;
        fprintf(out, "%*s", indent, "");
        while (q < end) {
            const char *ws = q;
            while (ws < end && *ws != ' ')
                ws++;
            int wl = (int)(ws - q);
            if (col > 0 && indent + col + 1 + wl > WRAP_WIDTH) {
                fprintf(out, "\n%*s", indent, "");
                col = 0;
            } else if (col > 0) {
                fputc(' ', out);
                col++;
            }
            fwrite(q, 1, (size_t)wl, out);
            col += wl;
            q = ws;
            while (q < end && *q == ' ')
                q++;
        }
        fputc('\n', out);
        p = eol ? eol + 1 : end;
    }
}

static void format_output(const tide_node *n, int i, char *dtype, size_t dsize, char *shape, size_t ssize)
{
    if (i >= tide_node_num_outputs(n)) {
        snprintf(dtype, dsize, "-");
        snprintf(shape, ssize, "-");
        return;
    }
    const char *name = tide_dtype_name(tide_node_output_dtype(n, i));
    snprintf(dtype, dsize, "%s", name ? name : "?");
    tide_shape s = tide_node_output_shape(n, i);
    tide_shape_format(&s, shape, ssize);
}

/* Finds a node by name or "name:index"; prints the error (with suggestions) when there is none. */
static tide_node *find_node(repl *r, const char *name)
{
    tide_node *n = tide_graph_node(r->graph, name);
    tide_output out;
    if (!n && strchr(name, ':')) {
        tide_error_clear(r->err);
        if (tide_graph_output(r->graph, name, &out, r->err) == TIDE_OK)
            return out.node;
        char *base = strndup(name, strcspn(name, ":"));
        bool known = base && tide_graph_node(r->graph, base);
        free(base);
        if (known) { /* "x:5" of a node x with fewer outputs: the engine's message says why */
            fprintf(stderr, "%s\n", tide_error_message(r->err));
            return NULL;
        }
    }
    if (n)
        return n;
    suggestions s;
    suggest_init(&s, name);
    for (int i = 0; i < tide_graph_num_nodes(r->graph); i++)
        suggest_consider(&s, tide_node_name(tide_graph_node_at(r->graph, i)));
    fprintf(stderr, "unknown node '%s'", name);
    if (tide_graph_num_nodes(r->graph) == 0)
        fputs(" (the graph is empty)\n", stderr);
    else
        suggest_print(&s, stderr, "");
    return NULL;
}

/* ---------------------------------------------------------------- :help */

/* What :help NAME finds in Lua; filled by help_lookup inside lua_pcall. */
typedef struct help_query {
    const char *name;
    const char *op;          /* the op NAME stands for (registry string), or NULL */
    char lua_name[72];       /* the Lua function of that op ("" if none is known) */
    suggestions *suggest;    /* help_suggest: where the names go */
} help_query;

/* Replaces the table on top of the stack by its field `key` when that is a table, else by nil (raw
 * gets only: no metamethod runs). nil on top stays nil. */
static void raw_subtable(lua_State *L, const char *key)
{
    if (lua_istable(L, -1)) {
        lua_pushstring(L, key);
        lua_rawget(L, -2);
        lua_remove(L, -2);
    }
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_pushnil(L);
    }
}

/* Pushes the table tide (or nil). */
static void push_tide(lua_State *L)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    raw_subtable(L, "tide");
}

/* Pushes tide.help (or nil). */
static void push_tide_help(lua_State *L)
{
    push_tide(L);
    raw_subtable(L, "help");
}

/* Protected: resolves q->name to an op and to the Lua name its call form shows: the name typed when
 * tide holds the op's function under it (`:help mat_mul` shows mat_mul(a, b...)), else the op
 * function's preferred name (`:help MatMul`: matmul), else the shortest name under which tide holds
 * the function itself (not a prelude wrapper of the same name, such as sum), else "tide.ops.Op".
 * Returns tide.help[name] (a string, or nil). */
static int help_lookup(lua_State *L)
{
    help_query *q = lua_touserdata(L, 1);
    tide_op_info info;
    q->op = repl_op_of_function(L, q->name);
    if (!q->op && tide_registry_op_info(q->name, &info))
        q->op = info.name;
    push_tide(L);
    int tide = lua_gettop(L);
    if (q->op && lua_istable(L, tide)) {
        lua_pushliteral(L, "ops");
        lua_rawget(L, tide);
        if (lua_istable(L, -1)) {
            lua_pushstring(L, q->op);
            lua_rawget(L, -2);
        } else
            lua_pushnil(L);
        int fn = lua_gettop(L);
        if (lua_isfunction(L, fn))
            snprintf(q->lua_name, sizeof q->lua_name, "tide.ops.%s", q->op);
        const char *names[2] = {q->name, repl_preferred_name(L, fn)};
        for (int i = 0; i < 2 && lua_isfunction(L, fn) && strncmp(q->lua_name, "tide.", 5) == 0; i++) {
            if (!names[i])
                continue;
            lua_pushstring(L, names[i]);
            if (lua_rawget(L, tide) != LUA_TNIL && lua_rawequal(L, -1, fn))
                snprintf(q->lua_name, sizeof q->lua_name, "%s", names[i]);
            lua_pop(L, 1);
        }
        lua_pushnil(L);
        while (lua_isfunction(L, fn) && strncmp(q->lua_name, "tide.", 5) == 0 && lua_next(L, tide)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
                const char *key = lua_tostring(L, -2);
                if (strlen(key) < strlen(q->lua_name))
                    snprintf(q->lua_name, sizeof q->lua_name, "%s", key);
            }
            lua_pop(L, 1);
        }
    }
    lua_settop(L, tide - 1);
    push_tide_help(L);
    if (lua_istable(L, -1)) {
        lua_pushstring(L, q->name);
        lua_rawget(L, -2);
        return lua_type(L, -1) == LUA_TSTRING ? 1 : 0;
    }
    return 0;
}

/* Protected: offers the functions of tide and the names of tide.help to q->suggest. */
static int help_suggest(lua_State *L)
{
    help_query *q = lua_touserdata(L, 1);
    push_tide(L);
    push_tide_help(L);
    for (int t = -2; t <= -1; t++) {
        if (!lua_istable(L, t))
            continue;
        lua_pushnil(L);
        while (lua_next(L, t - 1)) {
            /* a function once, under its preferred name (matmul, not mat_mul too) */
            const char *preferred = t == -2 ? repl_preferred_name(L, -1) : NULL;
            if (lua_type(L, -2) == LUA_TSTRING && (t == -1 || lua_type(L, -1) == LUA_TFUNCTION))
                suggest_consider(q->suggest, preferred ? preferred : lua_tostring(L, -2));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 2);
    return 0;
}

/* Runs fn(q) under lua_pcall; on success leaves its result (nil if none) on the stack. */
static bool run_protected(lua_State *L, lua_CFunction fn, help_query *q)
{
    lua_pushcfunction(L, fn);
    lua_pushlightuserdata(L, q);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        fprintf(stderr, "help: %s\n", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
        lua_pop(L, 1);
        return false;
    }
    return true;
}

/* Prints the registry's Markdown help for a terminal: no `###`, no backticks, paragraphs wrapped. */
static void print_markdown(FILE *out, const char *md)
{
    char *copy = strdup(md);
    if (!copy)
        return;
    char *w = copy;
    for (const char *p = md; *p; p++)
        if (*p != '`')
            *w++ = *p;
    *w = 0;
    bool blank = false;
    for (char *line = copy; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = 0;
        if (!line[0]) {
            if (!blank)
                fputc('\n', out);
            blank = true;
        } else {
            blank = false;
            if (strncmp(line, "### ", 4) == 0)
                fprintf(out, "%s (op)\n", line + 4);
            else if (strncmp(line, "- ", 2) == 0)
                print_wrapped(out, line + 2, 2);
            else
                print_wrapped(out, line, 2);
        }
        line = eol ? eol + 1 : NULL;
    }
    free(copy);
}

static const char *attr_type_name(tide_attr_type t)
{
    switch (t) {
    case TIDE_ATTR_INT: return "int";
    case TIDE_ATTR_FLOAT: return "number";
    case TIDE_ATTR_BOOL: return "bool";
    case TIDE_ATTR_STRING: return "string";
    case TIDE_ATTR_TYPE: return "dtype";
    case TIDE_ATTR_SHAPE: return "shape";
    case TIDE_ATTR_TENSOR: return "tensor";
    case TIDE_ATTR_INT_LIST: return "{int...}";
    case TIDE_ATTR_FLOAT_LIST: return "{number...}";
    case TIDE_ATTR_TYPE_LIST: return "{dtype...}";
    case TIDE_ATTR_STRING_LIST: return "{string...}";
    case TIDE_ATTR_BOOL_LIST: return "{bool...}";
    case TIDE_ATTR_SHAPE_LIST: return "{shape...}";
    case TIDE_ATTR_TENSOR_LIST: return "{tensor...}";
    default: return "?";
    }
}

/* "matmul(a, b[, {transpose_a=bool, transpose_b=bool}])": inputs positional (a list input is a Lua
 * table: "concat({values...}, axis)"), the attrs the inputs do not determine in a trailing table
 * (optional ones after the required ones; the whole table in brackets when all are optional). */
static void print_call_form(FILE *out, const char *fn, const tide_op_info *info)
{
    fprintf(out, "%s(", fn);
    for (int i = 0; i < info->num_inputs; i++) {
        bool list = info->inputs[i].number_attr != NULL;
        fprintf(out, "%s%s%s%s", i ? ", " : "", list ? "{" : "", info->inputs[i].name, list ? "...}" : "");
    }
    int required = 0, optional = 0;
    for (int i = 0; i < info->num_attrs; i++)
        if (!info->attrs[i].inferred && info->attrs[i].name[0] != '_')
            info->attrs[i].has_default ? optional++ : required++;
    if (required + optional > 0) {
        const char *sep = info->num_inputs ? ", " : "";
        fprintf(out, "%s%s{", required ? "" : "[", sep);
        int k = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < info->num_attrs; i++) {
                const tide_op_attr_info *a = &info->attrs[i];
                if (a->inferred || a->name[0] == '_' || a->has_default != (pass == 1))
                    continue;
                bool mark = required && pass == 1;
                fprintf(out, "%s%s%s=%s%s", k++ ? ", " : "", mark ? "[" : "", a->name, attr_type_name(a->type),
                        mark ? "]" : "");
            }
        fprintf(out, "}%s", required ? "" : "]");
    }
    fputs(")\n", out);
}

static void print_op_help(const help_query *q)
{
    char *md = tide_registry_op_help(q->op);
    tide_op_info info;
    if (md)
        print_markdown(stdout, md);
    free(md);
    if (q->lua_name[0] && tide_registry_op_info(q->op, &info)) {
        fputs("\nIn Lua (inputs: nodes, tensors or Lua values; a trailing table holds attrs, name and device):\n  ",
              stdout);
        print_call_form(stdout, q->lua_name, &info);
    }
}

/* A command's help is written as one paragraph broken at about 100 columns in the source: its line
 * breaks are spaces, so that the paragraph is wrapped once, at WRAP_WIDTH (a blank line still parts
 * two paragraphs). */
static void print_command_help(const command *c)
{
    printf(":%s%s%s — %s\n", c->name, c->synopsis[0] ? " " : "", c->synopsis, c->summary);
    if (c->alias)
        printf("  (also :%s)\n", c->alias);
    putchar('\n');
    char *text = strdup(c->help);
    if (!text) {
        print_wrapped(stdout, c->help, 2);
        return;
    }
    for (char *p = text; *p; p++)
        if (p[0] == '\n' && p[1] != '\n' && p[1] && (p == text || p[-1] != '\n'))
            *p = ' ';
    print_wrapped(stdout, text, 2);
    free(text);
}

static void print_overview(void)
{
    puts("Commands (a line starting with ':'):");
    for (int i = 0; i < num_all_commands(); i++) {
        char head[40];
        if (i == NUM_COMMANDS)
            puts("The step debugger (docs/debugger.md):");
        snprintf(head, sizeof head, ":%s %s", command_at(i)->name, command_at(i)->synopsis);
        printf("  %-19s %s\n", head, command_at(i)->summary);
    }
    puts("\n"
         "Everything else is Lua 5.4. Op functions build graph nodes; run() computes them:\n"
         "\n"
         "    x = placeholder(float32, {nil, 3})   -- fed at run time; batch size left open\n"
         "    W = variable(ones{3, 2})             -- a trainable variable\n"
         "    y = relu(matmul(x, W))\n"
         "    run(init())                          -- initialises the variables\n"
         "    run(y, {[x] = {{1, -2, 3}}})         -- feeds x and returns y's value\n"
         "\n"
         "Assigning a node to a global names it (:nodes lists W, y). :help NAME explains a command,\n"
         "an op function (:help matmul) or a tide function (:help run). The guide: docs/repl.md.");
}

/* :help NAME for Lua: tide.help's text, then the op behind the name. False if neither exists. */
static bool help_lua(repl *r, const char *name, bool after_command)
{
    help_query q = {.name = name};
    lua_State *L = r->L;
    int top = lua_gettop(L);
    bool found = false;
    if (run_protected(L, help_lookup, &q)) {
        if (lua_type(L, -1) == LUA_TSTRING) {
            fputs(after_command ? "\nIn Lua:\n" : "", stdout);
            print_wrapped(stdout, lua_tostring(L, -1), 0);
            found = true;
        }
        if (q.op) {
            fputs(found ? "\nThe op it builds on:\n\n" : after_command ? "\n" : "", stdout);
            print_op_help(&q);
            found = true;
        }
    }
    lua_settop(L, top);
    return found;
}

static repl_result cmd_help(repl *r, int argc, char **argv)
{
    if (argc == 1) {
        print_overview();
        return REPL_DONE;
    }
    const char *name = argv[1];
    bool colon = name[0] == ':';
    const command *c = find_command(colon ? name + 1 : name);
    if (c)
        print_command_help(c);
    bool lua = !colon && help_lua(r, name, c != NULL);
    if (c || lua)
        return REPL_DONE;
    suggestions s;
    suggest_init(&s, colon ? name + 1 : name);
    suggest_commands(&s);
    help_query q = {.name = name, .suggest = &s};
    int top = lua_gettop(r->L);
    if (!colon)
        run_protected(r->L, help_suggest, &q);
    lua_settop(r->L, top);
    fprintf(stderr, "no help for '%s'", name);
    suggest_print(&s, stderr, colon ? ":" : "");
    return REPL_FAILED;
}

/* ---------------------------------------------------------------- :nodes */

static void node_device(const tide_node *n, char *buf, size_t size)
{
    const char *req = tide_node_requested_device(n);
    const char *placed = tide_node_assigned_device(n);
    char dev[256];
    if (placed)
        snprintf(buf, size, "%s (on %s)", req && req[0] ? req : "-", tide_device_short_name(placed, dev, sizeof dev));
    else
        snprintf(buf, size, "%s", req && req[0] ? req : "-");
}

static void print_node_row(const tide_node *n, const int *width, FILE *out)
{
    char dtype[32], shape[TIDE_SHAPE_STR_MAX], device[256];
    format_output(n, 0, dtype, sizeof dtype, shape, sizeof shape);
    node_device(n, device, sizeof device);
    fprintf(out, "%-*s  %-*s  %-*s  %-*s  %s\n", width[0], tide_node_name(n), width[1], tide_node_op(n),
            width[2], dtype, width[3], shape, device);
}

static repl_result cmd_nodes(repl *r, int argc, char **argv)
{
    const char *pattern = argc > 1 ? argv[1] : NULL;
    int total = tide_graph_num_nodes(r->graph), matched = 0;
    int width[4] = {4, 2, 5, 5}; /* NAME, OP, DTYPE, SHAPE */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && matched > 0)
            fprintf(stdout, "%-*s  %-*s  %-*s  %-*s  %s\n", width[0], "NAME", width[1], "OP", width[2],
                    "DTYPE", width[3], "SHAPE", "DEVICE");
        matched = 0;
        for (int i = 0; i < total; i++) {
            const tide_node *n = tide_graph_node_at(r->graph, i);
            if (pattern && fnmatch(pattern, tide_node_name(n), 0) != 0)
                continue;
            matched++;
            if (pass == 1) {
                print_node_row(n, width, stdout);
                continue;
            }
            char dtype[32], shape[TIDE_SHAPE_STR_MAX];
            format_output(n, 0, dtype, sizeof dtype, shape, sizeof shape);
            int w[4] = {(int)strlen(tide_node_name(n)), (int)strlen(tide_node_op(n)), (int)strlen(dtype),
                        (int)strlen(shape)};
            for (int k = 0; k < 4; k++)
                if (w[k] > width[k])
                    width[k] = w[k] < 60 ? w[k] : 60;
        }
    }
    if (!pattern)
        printf("%d node%s\n", total, total == 1 ? "" : "s");
    else
        printf("%d of %d node%s match%s '%s'\n", matched, total, total == 1 ? "" : "s",
               matched == 1 ? "es" : "", pattern);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :info */

static void print_tensor_attr(FILE *out, const tide_tensor *t);

static void print_list_attr(FILE *out, const tide_attrs *a, const char *name, tide_attr_type type)
{
    const int64_t *iv = NULL;
    const double *fv = NULL;
    const tide_dtype *tv = NULL;
    const char *const *sv = NULL;
    const bool *bv = NULL;
    const tide_shape *shv = NULL;
    tide_tensor *const *tensors = NULL;
    int n = 0;
    if (!tide_attrs_get_int_list(a, name, &iv, &n) && !tide_attrs_get_float_list(a, name, &fv, &n) &&
        !tide_attrs_get_type_list(a, name, &tv, &n) && !tide_attrs_get_string_list(a, name, &sv, &n) &&
        !tide_attrs_get_bool_list(a, name, &bv, &n) && !tide_attrs_get_shape_list(a, name, &shv, &n))
        tide_attrs_get_tensor_list(a, name, &tensors, &n);
    (void)type;
    fputc('[', out);
    char buf[TIDE_SHAPE_STR_MAX];
    for (int i = 0; i < n && i < MAX_LIST_ITEMS; i++) {
        fputs(i ? ", " : "", out);
        if (iv)
            fprintf(out, "%" PRId64, iv[i]);
        else if (fv)
            fprintf(out, "%.9g", fv[i]);
        else if (tv)
            fputs(tide_dtype_name(tv[i]) ? tide_dtype_name(tv[i]) : "?", out);
        else if (sv)
            fprintf(out, "\"%s\"", sv[i]);
        else if (bv)
            fputs(bv[i] ? "true" : "false", out);
        else if (shv)
            fputs(tide_shape_format(&shv[i], buf, sizeof buf), out);
        else
            print_tensor_attr(out, tensors[i]);
    }
    if (n > MAX_LIST_ITEMS)
        fprintf(out, ", ... (%d items)", n);
    fputc(']', out);
}

/* A tensor attr: its values on one line when small, else dtype and shape only. */
static void print_tensor_attr(FILE *out, const tide_tensor *t)
{
    char shape[TIDE_SHAPE_STR_MAX];
    const char *dt = tide_dtype_name(tide_tensor_dtype(t));
    tide_shape_format(tide_tensor_shape(t), shape, sizeof shape);
    fprintf(out, "tensor %s %s", dt ? dt : "?", shape);
    if (tide_tensor_num_elements(t) > SMALL_TENSOR)
        return;
    char *text = tide_tensor_format(t, 0, 3);
    if (!text)
        return;
    fputs(" = ", out);
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            fputc(' ', out);
            while (p[1] == ' ')
                p++;
        } else {
            fputc(*p, out);
        }
    }
    free(text);
}

static void print_attr(FILE *out, const tide_attrs *a, const char *name)
{
    tide_attr_type type = tide_attrs_type(a, name);
    int64_t i;
    double f;
    bool b;
    const char *s;
    tide_dtype dt;
    tide_shape shape;
    tide_tensor *t;
    char buf[TIDE_SHAPE_STR_MAX];
    fprintf(out, "%s = ", name);
    if (tide_attrs_get_int(a, name, &i))
        fprintf(out, "%" PRId64, i);
    else if (tide_attrs_get_float(a, name, &f))
        fprintf(out, "%.9g", f);
    else if (tide_attrs_get_bool(a, name, &b))
        fputs(b ? "true" : "false", out);
    else if (tide_attrs_get_string(a, name, &s))
        fprintf(out, "\"%s\"", s);
    else if (tide_attrs_get_type(a, name, &dt))
        fputs(tide_dtype_name(dt) ? tide_dtype_name(dt) : "?", out);
    else if (tide_attrs_get_shape(a, name, &shape))
        fputs(tide_shape_format(&shape, buf, sizeof buf), out);
    else if (tide_attrs_get_tensor(a, name, &t))
        print_tensor_attr(out, t);
    else if (type != TIDE_ATTR_NONE)
        print_list_attr(out, a, name, type); /* every other kind is a list */
    else
        fputs("?", out);
    fputc('\n', out);
}

/* Prints the label for the first row of a section, blanks for the following ones. */
static void label(FILE *out, const char *text, int row)
{
    fprintf(out, "  %-16s", row == 0 ? text : "");
}

static void print_consumers(repl *r, const tide_node *n)
{
    int shown = 0, total = 0;
    for (int i = 0; i < tide_graph_num_nodes(r->graph); i++) {
        const tide_node *m = tide_graph_node_at(r->graph, i);
        for (int k = 0; k < tide_node_num_inputs(m); k++) {
            tide_output in = tide_node_input(m, k);
            if (in.node != n)
                continue;
            if (total++ < MAX_CONSUMERS) {
                label(stdout, "consumers", shown++);
                printf("%s (input %d, from output %d)\n", tide_node_name(m), k, in.index);
            }
        }
        for (int k = 0; k < tide_node_num_control_inputs(m); k++)
            if (tide_node_control_input(m, k) == n && total++ < MAX_CONSUMERS) {
                label(stdout, "consumers", shown++);
                printf("^%s (control)\n", tide_node_name(m));
            }
    }
    if (total == 0) {
        label(stdout, "consumers", 0);
        puts("none");
    } else if (total > shown) {
        label(stdout, "consumers", shown);
        printf("... and %d more\n", total - shown);
    }
}

static void print_inputs(const tide_node *n)
{
    char dtype[32], shape[TIDE_SHAPE_STR_MAX];
    int count = tide_node_num_inputs(n);
    for (int i = 0; i < count; i++) {
        tide_output in = tide_node_input(n, i);
        format_output(in.node, in.index, dtype, sizeof dtype, shape, sizeof shape);
        label(stdout, "inputs", i);
        printf("%d  %s:%d  %s %s\n", i, tide_node_name(in.node), in.index, dtype, shape);
    }
    if (count == 0) {
        label(stdout, "inputs", 0);
        puts("none");
    }
    int controls = tide_node_num_control_inputs(n);
    label(stdout, "control inputs", 0);
    if (controls == 0)
        puts("none");
    for (int i = 0; i < controls; i++)
        printf("%s^%s", i ? ", " : "", tide_node_name(tide_node_control_input(n, i)));
    if (controls)
        putchar('\n');
}

/* Whether name is one of the ", "-separated members of a fused group. */
static bool fused_member(const char *members, const char *name)
{
    size_t len = strlen(name);
    for (const char *at = members; (at = strstr(at, name)) != NULL; at += len)
        if ((at == members || (at >= members + 2 && at[-2] == ',' && at[-1] == ' ')) && (at[len] == ',' || !at[len]))
            return true;
    return false;
}

/* The node's executions in the last traced run: once, or inside a loop once per iteration (frames and
 * iteration ranges, mean time); a fused group's, or the group a fused node ran in (docs/fusion.md). */
static void print_executions(repl *r, const char *name)
{
    int count = 0, in_loops = 0;
    int64_t total_ns = 0, first = INT64_MAX, last = -1;
    const char *frame = NULL, *fused = NULL;
    const struct repl_execution *into = NULL; /* the fused group it ran in, when it has none of its own */
    bool one_frame = true;
    for (int i = 0; i < r->num_last_trace; i++) {
        const struct repl_execution *e = &r->last_trace[i];
        if (e->node && e->fused && strcmp(e->node, name) != 0 && fused_member(e->fused, name))
            into = e;
        if (!e->node || strcmp(e->node, name) != 0)
            continue;
        fused = e->fused ? e->fused : fused;
        count++;
        total_ns += e->ns;
        if (e->frame) {
            in_loops++;
            one_frame = one_frame && (!frame || strcmp(frame, e->frame) == 0);
            frame = e->frame;
            first = e->iteration < first ? e->iteration : first;
            last = e->iteration > last ? e->iteration : last;
        }
    }
    label(stdout, "executions", 0);
    if (r->num_last_trace == 0) {
        puts("(no traced run yet: run(..., {trace=true}))");
        return;
    }
    if (count == 0 && into) {
        printf("none of its own in the last traced run: fused into '%s' (%s)\n", into->node, into->fused);
        return;
    }
    if (count == 0) {
        puts("none in the last traced run");
        return;
    }
    printf("%d in the last traced run, %.1f us each on average", count, (double)total_ns / count / 1e3);
    if (fused)
        printf(" (a fused group: %s)", fused);
    if (in_loops && one_frame)
        printf("; loop %s, iterations %" PRId64 "-%" PRId64, frame, first, last);
    else if (in_loops)
        printf("; in %d iterations of several loop frames", in_loops);
    putchar('\n');
}

static repl_result cmd_info(repl *r, int argc, char **argv)
{
    (void)argc;
    tide_node *n = find_node(r, argv[1]);
    if (!n)
        return REPL_FAILED;
    char dtype[32], shape[TIDE_SHAPE_STR_MAX];
    printf("%s\n", tide_node_name(n));
    label(stdout, "op", 0);
    printf("%s\n", tide_node_op(n));
    print_inputs(n);
    print_consumers(r, n);
    for (int i = 0; i < tide_node_num_outputs(n) || i == 0; i++) {
        label(stdout, "outputs", i);
        if (tide_node_num_outputs(n) == 0) {
            puts("none");
            break;
        }
        format_output(n, i, dtype, sizeof dtype, shape, sizeof shape);
        printf("%d  %s %s\n", i, dtype, shape);
    }
    const char *req = tide_node_requested_device(n), *placed = tide_node_assigned_device(n);
    label(stdout, "device", 0);
    printf("requested %s; assigned %s\n", req && req[0] ? req : "(any)", placed ? placed : "(not placed yet: not run)");
    const tide_attrs *attrs = tide_node_attrs(n);
    int count = attrs ? tide_attrs_count(attrs) : 0;
    for (int i = 0; i < count; i++) {
        label(stdout, "attrs", i);
        print_attr(stdout, attrs, tide_attrs_name_at(attrs, i));
    }
    if (count == 0) {
        label(stdout, "attrs", 0);
        puts("none");
    }
    label(stdout, "stateful", 0);
    puts(tide_node_is_stateful(n) ? "yes" : "no");
    print_executions(r, tide_node_name(n));
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :fusion */

static repl_result cmd_fusion(repl *r, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0) {
        fputs("usage: :fusion [on|off]\n", stderr);
        return REPL_FAILED;
    }
    if (argc == 2)
        tide_session_set_fusion(r->session, strcmp(argv[1], "on") == 0);
    bool on = tide_session_fusion_enabled(r->session);
    printf("fusion %s", on ? "on" : "off");
    if (!on && argc == 2 && strcmp(argv[1], "on") == 0)
        printf(" (the engine's option is off: TIDE_FUSION=0)");
    putchar('\n');
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :capture */

static repl_result cmd_capture(repl *r, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0) {
        fputs("usage: :capture [on|off]\n", stderr);
        return REPL_FAILED;
    }
    if (argc == 2)
        tide_session_set_capture(r->session, strcmp(argv[1], "on") == 0);
    bool on = tide_session_capture_enabled(r->session);
    printf("capture %s", on ? "on" : "off");
    if (!on && argc == 2 && strcmp(argv[1], "on") == 0)
        printf(" (the engine's option is off: TIDE_CAPTURE=0)");
    putchar('\n');
    repl_print_capture(r);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :graph */

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct tally {
    const char *name;
    int count;
} tally;

static int compare_tallies(const void *a, const void *b)
{
    const tally *x = a, *y = b;
    if (x->count != y->count)
        return y->count - x->count;
    return strcmp(x->name, y->name);
}

/* Counts equal strings of names[0..n) (sorted in place); fills tallies (n entries at most) by count.
 * Returns the number of distinct strings. */
static int count_distinct(const char **names, int n, tally *tallies)
{
    qsort(names, (size_t)n, sizeof *names, compare_strings);
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        if (distinct > 0 && strcmp(tallies[distinct - 1].name, names[i]) == 0)
            tallies[distinct - 1].count++;
        else
            tallies[distinct++] = (tally){names[i], 1};
    }
    qsort(tallies, (size_t)distinct, sizeof *tallies, compare_tallies);
    return distinct;
}

/* Prints "label: a 3, b 2, ..." wrapped. */
static void print_tallies(const char *what, const tally *t, int n)
{
    size_t size = 64;
    for (int i = 0; i < n; i++)
        size += strlen(t[i].name) + 16;
    char *line = malloc(size);
    if (!line)
        return;
    size_t len = (size_t)snprintf(line, size, "%s (%d):", what, n);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(line + len, size - len, " %s %d%s", t[i].name, t[i].count, i + 1 < n ? "," : "");
    print_wrapped(stdout, line, 0);
    free(line);
}

static void print_variables(repl *r)
{
    int n = tide_graph_variables(r->graph, false, NULL, 0);
    printf("variables (%d)%s\n", n, n ? ":" : "");
    tide_node **vars = n ? malloc((size_t)n * sizeof *vars) : NULL;
    if (!vars)
        return;
    tide_graph_variables(r->graph, false, vars, n);
    for (int i = 0; i < n; i++) {
        char dtype[32], shape[TIDE_SHAPE_STR_MAX];
        bool trainable = false;
        tide_attrs_get_bool(tide_node_attrs(vars[i]), "_trainable", &trainable);
        format_output(vars[i], 0, dtype, sizeof dtype, shape, sizeof shape);
        printf("  %s %s %s%s\n", tide_node_name(vars[i]), dtype, shape, trainable ? "" : " (not trainable)");
    }
    free(vars);
}

/* The ops and the name scopes by count. */
static bool print_ops_and_scopes(repl *r, int total)
{
    const char **names = malloc((size_t)total * sizeof *names);
    tally *tallies = malloc((size_t)total * sizeof *tallies);
    char **scopes = calloc((size_t)total, sizeof *scopes);
    bool ok = names && tallies && scopes;
    for (int i = 0; ok && i < total; i++)
        names[i] = tide_node_op(tide_graph_node_at(r->graph, i));
    if (ok)
        print_tallies("ops", tallies, count_distinct(names, total, tallies));
    int num_scopes = 0;
    for (int i = 0; ok && i < total; i++) {
        const char *name = tide_node_name(tide_graph_node_at(r->graph, i));
        const char *slash = strchr(name, '/');
        if (!slash)
            continue;
        scopes[num_scopes] = strndup(name, (size_t)(slash - name));
        ok = scopes[num_scopes] != NULL;
        names[num_scopes] = scopes[num_scopes];
        num_scopes++;
    }
    if (ok && num_scopes > 0)
        print_tallies("scopes", tallies, count_distinct(names, num_scopes, tallies));
    else if (ok)
        puts("scopes (0)");
    for (int i = 0; scopes && i < total; i++)
        free(scopes[i]);
    free(scopes);
    free(tallies);
    free(names);
    if (!ok)
        fputs(":graph: out of memory\n", stderr);
    return ok;
}

static repl_result cmd_graph(repl *r, int argc, char **argv)
{
    (void)argc, (void)argv;
    int total = tide_graph_num_nodes(r->graph);
    printf("graph: %d node%s, version %" PRIu64 "\n", total, total == 1 ? "" : "s", tide_graph_version(r->graph));
    if (total == 0)
        return REPL_DONE;
    if (!print_ops_and_scopes(r, total))
        return REPL_FAILED;
    print_variables(r);
    if (total >= SMALL_GRAPH) {
        puts("(:save FILE writes the graph text; :nodes lists the nodes)");
        return REPL_DONE;
    }
    char *text = tide_graph_to_text(r->graph, r->err);
    if (!text) {
        fprintf(stderr, ":graph: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    printf("text:\n%s", text);
    free(text);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :history, :reset, :quit */

static repl_result cmd_history(repl *r, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (r->num_history == 0)
        puts("no entries yet");
    for (int i = 0; i < r->num_history; i++) {
        const char *entry = r->history[i];
        printf("%5d  ", i + 1);
        for (const char *p = entry; *p; p++) {
            putchar(*p);
            if (*p == '\n' && p[1])
                fputs("       ", stdout);
        }
        if (!entry[0] || entry[strlen(entry) - 1] != '\n')
            putchar('\n');
    }
    return REPL_DONE;
}

static repl_result cmd_reset(repl *r, int argc, char **argv)
{
    bool all = argc == 2;
    if (all && strcmp(argv[1], "all") != 0) {
        fprintf(stderr, "usage: :reset [all] (all: drop the variables' values too), not '%s'\n", argv[1]);
        return REPL_FAILED;
    }
    int nodes = tide_graph_num_nodes(r->graph);
    int variables = tide_graph_variables(r->graph, false, NULL, 0);
    int dropped = all ? tide_engine_container_size(r->engine, "") : 0;
    tide_error_clear(r->err);
    if (repl_reset(r, r->err) != TIDE_OK ||
        (all && tide_engine_reset_container(r->engine, "", r->err) != TIDE_OK)) {
        fprintf(stderr, ":reset failed: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    char msg[640];
    int len = snprintf(msg, sizeof msg,
                       "reset: dropped %d node%s (%d variable%s), the default session and every node handle; "
                       "the graph is new and empty.",
                       nodes, nodes == 1 ? "" : "s", variables, variables == 1 ? "" : "s");
    int held = tide_engine_container_size(r->engine, "");
    if (all && len > 0 && (size_t)len < sizeof msg)
        snprintf(msg + len, sizeof msg - (size_t)len, " Dropped the values of %d variable%s too.", dropped,
                 dropped == 1 ? "" : "s");
    else if (held > 0 && len > 0 && (size_t)len < sizeof msg)
        snprintf(msg + len, sizeof msg - (size_t)len,
                 " The engine still holds %d variable value%s: a new variable of the same name, dtype and shape "
                 "starts with it; one of another shape is initialised again by run(init()). `:reset all` drops "
                 "the values too.", held, held == 1 ? "" : "s");
    print_wrapped(stdout, msg, 0);
    return REPL_DONE;
}

static repl_result cmd_quit(repl *r, int argc, char **argv)
{
    (void)argc, (void)argv;
    r->quit = true;
    return REPL_QUIT;
}

/* ---------------------------------------------------------------- :web */

/* The REPL's web server: one per process (it serves the REPL's run log), stopped at exit. */
static tide_web *web_server;

static void web_stop_at_exit(void)
{
    tide_web_stop(web_server);
    web_server = NULL;
}

void repl_web_stop(void) { web_stop_at_exit(); }

static repl_result cmd_web(repl *r, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "stop") == 0) {
        if (!web_server) {
            fputs("the web server is not running (:web starts it)\n", stderr);
            return REPL_FAILED;
        }
        printf("stopped the web server at %s\n", tide_web_url(web_server));
        web_stop_at_exit();
        return REPL_DONE;
    }
    if (web_server) {
        if (argc == 1) {
            printf("serving %s at %s\n", tide_web_db_path(web_server), tide_web_url(web_server));
            return REPL_DONE;
        }
        fprintf(stderr, "the web server already runs at %s; `:web stop` first to move it\n", tide_web_url(web_server));
        return REPL_FAILED;
    }
    if (!r->store || !r->opts.log_path) {
        fputs("the web views read the run log, which is off (started with --no-log); restart with --log FILE\n",
              stderr);
        return REPL_FAILED;
    }
    tide_web_options o;
    tide_web_options_init(&o);
    o.db_path = r->opts.log_path;
    if (argc == 2) {
        char *end = NULL;
        long port = strtol(argv[1], &end, 10);
        if (!argv[1][0] || *end || port < 0 || port > 65535) {
            fprintf(stderr, ":web wants a port from 1 to 65535 (0: any free port) or `stop`, not '%s'\n", argv[1]);
            return REPL_FAILED;
        }
        o.port = port == 0 ? -1 : (int)port;
    }
    /* The debugger page drives the REPL's step debugger (debugger_web.c); `tide serve` has none. */
    tide_web_debugger table;
    if (!r->debugger)
        r->debugger = repl_debugger_new(r);
    if (r->debugger && repl_dbg_web_enable(r->debugger)) {
        table = (tide_web_debugger){r->debugger, repl_dbg_web_state_json, repl_dbg_web_command,
                                    repl_dbg_web_tensor_json};
        o.debugger = &table;
    }
    repl_log_flush(r); /* the log file exists and holds this session */
    web_server = tide_web_start(&o, r->err);
    if (!web_server) {
        fprintf(stderr, "%s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    static bool registered;
    if (!registered)
        registered = atexit(web_stop_at_exit) == 0;
    printf("serving %s at %s\n", o.db_path, tide_web_url(web_server));
    if (tide_web_debugger_url(web_server))
        printf("the debugger page: %s\n", tide_web_debugger_url(web_server));
    fflush(stdout);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :save, :load */

/* Writes len bytes to path atomically: a temporary file next to it, then rename. On failure the
 * message names the path and the reason; path is unchanged. */
static bool write_atomically(const char *path, const char *data, size_t len, char *msg, size_t size)
{
    size_t n = strlen(path) + 48;
    char *tmp = malloc(n);
    if (!tmp) {
        snprintf(msg, size, "out of memory");
        return false;
    }
    /* Created with mode 0666 less the umask, as the file itself would be (mkstemp's are 0600). */
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(tmp, n, "%s.tmp.%ld.%d", path, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        snprintf(msg, size, "%s", strerror(errno));
        free(tmp);
        return false;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        (void)fchmod(fd, st.st_mode & 07777); /* replacing a file keeps its mode */
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int saved = done < len ? errno : 0;
    if (!saved && fsync(fd) != 0)
        saved = errno;
    if (close(fd) != 0 && !saved)
        saved = errno;
    if (!saved && rename(tmp, path) != 0)
        saved = errno;
    if (saved) {
        unlink(tmp);
        snprintf(msg, size, "%s", strerror(saved ? saved : EIO));
    }
    free(tmp);
    return !saved;
}

static repl_result cmd_save(repl *r, int argc, char **argv)
{
    (void)argc;
    char *path = repl_expand_path(argv[1]);
    char *text = path ? tide_graph_to_text(r->graph, r->err) : NULL;
    char msg[256];
    bool ok = text && write_atomically(path, text, strlen(text), msg, sizeof msg);
    if (ok) {
        int n = tide_graph_num_nodes(r->graph);
        printf("saved %d node%s to %s\n", n, n == 1 ? "" : "s", argv[1]);
    } else {
        fprintf(stderr, "cannot save to '%s': %s\n", argv[1],
                !path ? "out of memory" : !text ? tide_error_message(r->err) : msg);
    }
    free(text);
    free(path);
    return ok ? REPL_DONE : REPL_FAILED;
}

static void print_loaded(repl *r, const char *file, int before)
{
    int after = tide_graph_num_nodes(r->graph), added = after - before;
    printf("loaded %d node%s from %s (the graph has %d); in Lua: ", added, added == 1 ? "" : "s", file, after);
    for (int i = before; i < after && i < before + 4; i++)
        printf("%snode(\"%s\")", i > before ? ", " : "", tide_node_name(tide_graph_node_at(r->graph, i)));
    puts(added > 4 ? ", ..." : "");
}

static repl_result cmd_load(repl *r, int argc, char **argv)
{
    (void)argc;
    char *path = repl_expand_path(argv[1]);
    if (!path) {
        fprintf(stderr, "cannot load %s: out of memory\n", argv[1]);
        return REPL_FAILED;
    }
    int before = tide_graph_num_nodes(r->graph);
    tide_error_clear(r->err);
    tide_status st = tide_graph_extend_file(r->graph, path, 0, r->err);
    free(path);
    if (st != TIDE_OK) { /* the message names the file (and the line) */
        fprintf(stderr, "cannot load %s (nothing was added)\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    if (tide_graph_num_nodes(r->graph) == before)
        printf("%s holds no nodes: nothing was added\n", argv[1]);
    else
        print_loaded(r, argv[1], before);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- dispatch */

static void print_usage(const command *c, const words *w)
{
    fprintf(stderr, "usage: :%s%s%s", c->name, c->synopsis[0] ? " " : "", c->synopsis);
    if (w->count - 1 > c->max_args)
        fprintf(stderr, " (unexpected argument '%s')\n", w->word[c->max_args + 1]);
    else
        fputs(" (an argument is missing)\n", stderr);
}

/* The command of a line whose argument is the rest of the line (:sql), or NULL; *rest receives it. */
static const command *whole_line_command(const char *line, const char **rest)
{
    size_t n = strcspn(line, " \t\r\n");
    for (int i = NUM_COMMANDS; i < num_all_commands(); i++) /* the debugger's whole-line commands */
        if (command_at(i)->whole_line && ((strlen(command_at(i)->name) == n && strncmp(command_at(i)->name, line, n) == 0) ||
                                          (command_at(i)->alias && strlen(command_at(i)->alias) == n &&
                                           strncmp(command_at(i)->alias, line, n) == 0))) {
            *rest = line + n;
            return command_at(i);
        }
    for (size_t i = 0; i < sizeof whole_line_commands / sizeof whole_line_commands[0]; i++)
        if (strlen(whole_line_commands[i]) == n && strncmp(whole_line_commands[i], line, n) == 0) {
            *rest = line + n;
            return find_command(whole_line_commands[i]);
        }
    return NULL;
}

static repl_result run_whole_line(repl *r, const command *c, const char *rest)
{
    while (isspace((unsigned char)*rest))
        rest++;
    size_t len = strlen(rest);
    while (len > 0 && isspace((unsigned char)rest[len - 1]))
        len--;
    if (len == 0 && c->whole_line) {
        char *argv[2] = {(char *)c->name, NULL};
        return c->run(r, 1, argv);
    }
    if (len == 0) {
        fprintf(stderr, "usage: :%s %s (an argument is missing)\n", c->name, c->synopsis);
        return REPL_FAILED;
    }
    char *arg = strndup(rest, len);
    if (!arg) {
        fputs("out of memory\n", stderr);
        return REPL_FAILED;
    }
    char *argv[3] = {(char *)c->name, arg, NULL};
    repl_result result = c->run(r, 2, argv);
    free(arg);
    return result;
}

repl_result repl_command(repl *r, const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line == ':')
        line++;
    const char *rest = NULL;
    const command *whole = whole_line_command(line, &rest);
    if (whole) {
        repl_result result = run_whole_line(r, whole, rest);
        fflush(stdout);
        return result;
    }
    words w;
    char msg[128];
    repl_result result = REPL_FAILED;
    if (!split_words(line, &w, msg, sizeof msg)) {
        fprintf(stderr, "%s\n", msg);
    } else if (w.count == 0) {
        fputs("empty command: :help lists the commands\n", stderr);
    } else {
        const command *c = find_command(w.word[0]);
        if (!c) {
            suggestions s;
            suggest_init(&s, w.word[0]);
            suggest_commands(&s);
            fprintf(stderr, "unknown command ':%s'", w.word[0]);
            if (s.count == 0)
                fputs("; :help lists the commands\n", stderr);
            else
                suggest_print(&s, stderr, ":");
        } else if (w.count - 1 < c->min_args || w.count - 1 > c->max_args) {
            print_usage(c, &w);
        } else {
            result = c->run(r, w.count, w.word);
        }
    }
    free(w.buf);
    fflush(stdout);
    return result;
}
