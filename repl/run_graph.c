/* run_graph.c — `tide run-graph`: runs a TensorFlow GraphDef without writing any Lua, as a quick check
 * that a model imports and computes (docs/tensorflow.md):
 *
 *   tide run-graph model.pb --feed x=images.npy --fetch y [--fetch loss] [--target init] [--format text]
 *
 * The GraphDef is imported into a fresh graph (names as in the file), the targets run first (one run
 * each, in order: an initializer), then one run feeds every --feed tensor (NumPy .npy files, converted
 * to the fed tensor's dtype as TensorFlow's feed_dict does) and fetches every --fetch tensor, each
 * printed NumPy-style as `NAME = value`. --threads and --devices as
 * for `tide`. No run log is written. Exit status 0; 1 when importing or running fails (the message
 * names the file, node and op); 2 for bad options; 130 (143) when SIGINT, Ctrl-C (SIGTERM) stopped it:
 * the run in flight is cancelled and the message says what was interrupted (stop_signals.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphdef_repl.h"
#include "stop_signals.h"
#include "tide_graphdef.h"

#define RUN_GRAPH_MAX 64 /* feeds, fetches and targets each */

typedef struct run_graph_args {
    const char *file;
    const char *fetch[RUN_GRAPH_MAX], *target[RUN_GRAPH_MAX];
    char *feed_name[RUN_GRAPH_MAX];
    const char *feed_file[RUN_GRAPH_MAX];
    int num_fetch, num_target, num_feed;
    tide_graphdef_format format;
    int threads, devices;
    bool all_values, clear_devices;
} run_graph_args;

static void run_graph_usage(FILE *out)
{
    fprintf(out,
            "usage: tide run-graph FILE.pb [--feed NAME=FILE.npy]... --fetch NAME [--fetch NAME]...\n"
            "                      [--target NAME]... [--format binary|text] [--clear-devices] [--threads N]\n"
            "                      [--devices N] [--all]\n"
            "\n"
            "Imports the TensorFlow GraphDef FILE (.pb binary, .pbtxt text; docs/tensorflow.md), runs each\n"
            "--target once (an initializer, `init`), then runs the graph once with every --feed and prints\n"
            "every --fetch as NAME = value (NumPy style).\n"
            "\n"
            "  --feed NAME=FILE.npy  feed the tensor NAME (\"x\" or \"x:0\") with the array in FILE.npy\n"
            "                        (converted to NAME's dtype)\n"
            "  --fetch NAME          a tensor to compute and print (\"y\", \"split:1\")\n"
            "  --target NAME         a node to run first, on its own (repeatable, in order)\n"
            "  --format F            the file's format when its extension does not say (binary, text)\n"
            "  --clear-devices       ignore the nodes' device requests (\"/device:GPU:0\" on a CPU machine)\n"
            "  --threads N           executor threads (default: one per core)\n"
            "  --devices N           virtual CPU devices\n"
            "  --all                 print every value (long tensors are elided otherwise)\n"
            "  -h, --help            this help\n"
            "\n"
            "Exit status: 0; 1 when importing or running fails; 2 for bad options; 130 when Ctrl-C\n"
            "(SIGINT) stopped it, 143 for SIGTERM (the run in flight is cancelled).\n");
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < lo || n > hi) {
        fprintf(stderr, "tide run-graph: %s wants a number from %d to %d, not '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Fills a from argv; 0, or the exit status to leave with (-1: --help printed). */
static int parse_args(int argc, char **argv, run_graph_args *a)
{
    enum { OPT_FEED = 256, OPT_FETCH, OPT_TARGET, OPT_FORMAT, OPT_THREADS, OPT_DEVICES, OPT_ALL, OPT_CLEAR };
    static const struct option longs[] = {
        {"feed", required_argument, 0, OPT_FEED},       {"fetch", required_argument, 0, OPT_FETCH},
        {"target", required_argument, 0, OPT_TARGET},   {"format", required_argument, 0, OPT_FORMAT},
        {"threads", required_argument, 0, OPT_THREADS}, {"devices", required_argument, 0, OPT_DEVICES},
        {"all", no_argument, 0, OPT_ALL},               {"help", no_argument, 0, 'h'},
        {"clear-devices", no_argument, 0, OPT_CLEAR},
        {0, 0, 0, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        bool full = (c == OPT_FEED && a->num_feed == RUN_GRAPH_MAX) || (c == OPT_FETCH && a->num_fetch == RUN_GRAPH_MAX) ||
                    (c == OPT_TARGET && a->num_target == RUN_GRAPH_MAX);
        if (full) {
            fprintf(stderr, "tide run-graph: at most %d of each of --feed, --fetch and --target\n", RUN_GRAPH_MAX);
            return 2;
        }
        switch (c) {
        case OPT_FEED: {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1]) {
                fprintf(stderr, "tide run-graph: --feed wants NAME=FILE.npy, not '%s'\n", optarg);
                return 2;
            }
            a->feed_name[a->num_feed] = strndup(optarg, (size_t)(eq - optarg));
            a->feed_file[a->num_feed++] = eq + 1;
            break;
        }
        case OPT_FETCH: a->fetch[a->num_fetch++] = optarg; break;
        case OPT_TARGET: a->target[a->num_target++] = optarg; break;
        case OPT_FORMAT: {
            int f = tide_graphdef_format_from_name(optarg);
            if (f <= 0) {
                fprintf(stderr, "tide run-graph: --format is binary or text, not '%s'\n", optarg);
                return 2;
            }
            a->format = (tide_graphdef_format)f;
            break;
        }
        case OPT_THREADS: if (parse_int("--threads", optarg, 1, 1024, &a->threads)) return 2; break;
        case OPT_DEVICES: if (parse_int("--devices", optarg, 1, 64, &a->devices)) return 2; break;
        case OPT_ALL: a->all_values = true; break;
        case OPT_CLEAR: a->clear_devices = true; break;
        case 'h': run_graph_usage(stdout); return -1;
        default: run_graph_usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tide run-graph: give one GraphDef file (tide run-graph --help)\n");
        return 2;
    }
    a->file = argv[optind];
    if (!a->num_fetch && !a->num_target) {
        fprintf(stderr, "tide run-graph: nothing to do: give --fetch NAME (or --target NAME)\n");
        return 2;
    }
    return 0;
}

/* A feed in the dtype of the tensor it replaces, as TensorFlow converts what feed_dict gives it (NumPy
 * writes float64 and int64 where a graph takes float32 and int32). 0, or 1 with err set. */
static int cast_feed(tide_feed *feed, tide_error *err)
{
    tide_dtype want = tide_node_output_dtype(feed->output.node, feed->output.index);
    if (tide_tensor_dtype(feed->value) == want)
        return 0;
    tide_tensor *cast = tide_tensor_cast(feed->value, want, err);
    tide_tensor_release(feed->value);
    feed->value = cast;
    return cast ? 0 : 1;
}

/* 0, or the exit status of a SIGINT or SIGTERM received while the command was `doing` (told on stderr,
 * with how far that went: `outcome`). */
static int stop_status(const repl_stop_signals *w, const char *doing, const char *outcome)
{
    int sig = repl_stop_signals_received(w);
    if (sig)
        fprintf(stderr, "tide run-graph: interrupted by %s while %s%s\n", repl_stop_signal_name(sig), doing, outcome);
    return sig ? 128 + sig : 0;
}

/* One run of s: 0, 1 with err set when it fails, or a stop signal's status (stop_status). The cancel mark
 * comes before the signal check, so a signal after the check still cancels the run (stop_signals.h). */
static int run_step(repl_stop_signals *w, tide_session *s, const char *doing, const tide_feed *feeds, int num_feeds,
                    const tide_output *fetches, int num_fetches, tide_tensor **values, tide_node *const *targets,
                    int num_targets, tide_error *err)
{
    tide_run_options ro = {0};
    repl_stop_signals_arm(w, s, &ro);
    int status = stop_status(w, doing, " (before its run started)");
    if (status)
        return status;
    tide_status st = tide_session_run(s, &ro, feeds, num_feeds, fetches, num_fetches, values, targets, num_targets,
                                      NULL, err);
    status = stop_status(w, doing, st == TIDE_OK ? ": the run had finished; nothing printed" : ": the run was cancelled");
    return status ? status : st != TIDE_OK;
}

/* "running --fetch y --fetch loss", shortened with "..." to fit. */
static void describe_fetches(const run_graph_args *a, char *out, size_t size)
{
    size_t len = (size_t)snprintf(out, size, "running");
    for (int i = 0; i < a->num_fetch && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, " --fetch %s", a->fetch[i]);
    if (len >= size && size > 4)
        memcpy(out + size - 4, "...", 4);
}

/* Runs every target once, then feeds and fetches; prints the values. 0, 1 with err set, or a stop
 * signal's status (told). */
static int run(tide_engine *engine, tide_graph *g, const run_graph_args *a, repl_stop_signals *w, tide_error *err)
{
    tide_session *s = tide_session_new(engine, g, NULL, err);
    if (!s)
        return 1;
    char doing[256];
    int status = 0;
    for (int i = 0; i < a->num_target && !status; i++) {
        tide_node *n = tide_graph_node(g, a->target[i]);
        if (!n) {
            tide_error_set(err, TIDE_NOT_FOUND, "--target %s: the graph has no node '%s'", a->target[i], a->target[i]);
            status = 1;
            break;
        }
        snprintf(doing, sizeof doing, "running --target %s", a->target[i]);
        status = run_step(w, s, doing, NULL, 0, NULL, 0, NULL, &n, 1, err);
    }
    tide_feed feeds[RUN_GRAPH_MAX];
    memset(feeds, 0, sizeof feeds);
    tide_output fetches[RUN_GRAPH_MAX];
    tide_tensor *values[RUN_GRAPH_MAX] = {0};
    for (int i = 0; i < a->num_feed && !status; i++) {
        if (tide_graph_output(g, a->feed_name[i], &feeds[i].output, err) != TIDE_OK)
            status = 1;
        else if (!(feeds[i].value = tide_read_npy(a->feed_file[i], NULL, err)))
            status = 1;
        else
            status = cast_feed(&feeds[i], err);
    }
    for (int i = 0; i < a->num_fetch && !status; i++)
        if (tide_graph_output(g, a->fetch[i], &fetches[i], err) != TIDE_OK)
            status = 1;
    if (!status && a->num_fetch) {
        describe_fetches(a, doing, sizeof doing);
        status = run_step(w, s, doing, feeds, a->num_feed, fetches, a->num_fetch, values, NULL, 0, err);
    }
    for (int i = 0; i < a->num_fetch && !status; i++) {
        char *text = tide_tensor_format(values[i], a->all_values ? 0 : 1000, 3);
        printf("%s = %s\n", a->fetch[i], text ? text : "(out of memory)");
        free(text);
        snprintf(doing, sizeof doing, "printing --fetch %s", a->fetch[i]);
        status = stop_status(w, doing, "");
    }
    for (int i = 0; i < RUN_GRAPH_MAX; i++) {
        tide_tensor_release(feeds[i].value);
        tide_tensor_release(values[i]);
    }
    repl_stop_signals_arm(w, NULL, NULL); /* before the free: a signal from now on cancels nothing */
    tide_session_free(s);
    return status;
}

int repl_run_graph_main(int argc, char **argv)
{
    run_graph_args a = {0};
    int status = parse_args(argc, argv, &a);
    if (status == 0) {
        repl_stop_signals *w = repl_stop_signals_start("tide run-graph"); /* before the engine's threads */
        tide_error *err = tide_error_new();
        tide_engine_options eo;
        tide_engine_options_init(&eo);
        eo.num_threads = a.threads;
        eo.num_cpu_devices = a.devices;
        tide_engine *engine = tide_engine_new(&eo, err);
        tide_graph *g = tide_graph_new();
        tide_graphdef_import_options io;
        tide_graphdef_import_options_init(&io);
        io.format = a.format;
        io.clear_devices = a.clear_devices;
        status = !engine || !g || tide_graphdef_import_file(g, a.file, &io, err) != TIDE_OK ? 1 : 0;
        if (status == 0) {
            char doing[320];
            snprintf(doing, sizeof doing, "importing %.300s", a.file);
            status = stop_status(w, doing, "");
        }
        if (status == 0)
            status = run(engine, g, &a, w, err);
        if (status == 1)
            fprintf(stderr, "tide run-graph: %s\n", tide_error_message(err));
        tide_graph_free(g);
        tide_engine_free(engine);
        tide_error_free(err);
        repl_stop_signals_finish(w);
    }
    for (int i = 0; i < a.num_feed; i++)
        free(a.feed_name[i]);
    return status < 0 ? 0 : status;
}
