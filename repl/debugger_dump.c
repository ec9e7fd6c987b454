/* debugger_dump.c — keeping a finished step's values and writing a step into the run log
 * (docs/debugger.md "Dumping a step"): `:keep on|off` (dbg.keep), `:dump` (dbg.dump).
 *
 * Keep mode attaches the engine debugger with keep_values (nothing of a step is let go before the step
 * ends, so no kernel writes over a value) and a `finished` callback that takes one more reference to
 * every value of the step when it ends (no copies). Those stay held until the next run() starts, or
 * keep mode is switched off, or the REPL ends; :dump then writes them. At a stop, :dump writes what the
 * stopped step holds (the values produced so far). Either way each value becomes a tensors row of kind
 * `dumped`: statistics always, the value itself when it fits under the log's value cap; the command
 * says which values were left out and why.
 *
 * Threads: `finished` runs on the thread that called tide_session_run (the main thread in the REPL, but
 * any for runs made elsewhere), so the kept step is swapped under kept_lock; :dump and :keep run on the
 * main thread.
 */
#include <stdlib.h>
#include <string.h>

#include "debugger.h"

#define LIST_LEFT_OUT 8 /* names shown of the values a dump left out; the rest counted */

typedef struct kept_value {
    char *node;
    int output;
    tide_tensor *value;
    char *frame;          /* "" in the root frame */
    int64_t iteration;
} kept_value;

struct repl_kept_step {
    tide_run_info run;    /* run_id, session and step only: what the run log's rows need */
    kept_value *values;
    int num, cap;
    size_t bytes;         /* of the distinct tensors held */
    bool failed;          /* out of memory while collecting: some values are missing */
};

static void kept_free(repl_kept_step *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->num; i++) {
        free(k->values[i].node);
        free(k->values[i].frame);
        tide_tensor_release(k->values[i].value);
    }
    free(k->values);
    free(k);
}

typedef struct collector {
    repl_debugger *d;
    repl_kept_step *k;
} collector;

/* tide_debug_step_each_value's visitor: one value (nodes of the REPL's graph only: not the _Send and
 * _Recv pairs a plan adds between devices, which carry copies of values already there). */
static void collect(void *user, const tide_node *node, int output, tide_tensor *value, const tide_exec_point *at)
{
    collector *c = user;
    repl_kept_step *k = c->k;
    if (tide_graph_node(c->d->r->graph, tide_node_name(node)) != node)
        return;
    if (k->num == k->cap) {
        int cap = k->cap ? 2 * k->cap : 64;
        kept_value *grown = realloc(k->values, sizeof *grown * (size_t)cap);
        if (!grown) {
            k->failed = true;
            return;
        }
        k->values = grown;
        k->cap = cap;
    }
    kept_value v = {strdup(tide_node_name(node)), output, NULL, strdup(at && at->frame ? at->frame : ""),
                    at ? at->iteration : 0};
    if (!v.node || !v.frame) {
        free(v.node);
        free(v.frame);
        k->failed = true;
        return;
    }
    if (k->num == 0 || k->values[k->num - 1].value != value) /* twins share a tensor: counted once */
        k->bytes += tide_tensor_byte_size(value);
    v.value = tide_tensor_retain(value);
    k->values[k->num++] = v;
}

/* Every value step holds now, retained; NULL when out of memory. */
static repl_kept_step *kept_from(repl_debugger *d, const tide_debug_step *step)
{
    repl_kept_step *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    const tide_run_info *run = tide_debug_step_run(step);
    k->run = (tide_run_info){.run_id = run->run_id, .session = run->session, .step = run->step};
    collector c = {d, k};
    tide_debug_step_each_value(step, collect, &c);
    return k;
}

/* The engine's `finished` in keep mode: the step's values replace the ones kept before. */
static void dbg_finished(void *user, tide_debug_step *step)
{
    repl_debugger *d = user;
    repl_kept_step *k = kept_from(d, step);
    pthread_mutex_lock(&d->kept_lock);
    repl_kept_step *old = d->kept;
    d->kept = k;
    pthread_mutex_unlock(&d->kept_lock);
    kept_free(old);
}

void repl_debugger_keep_callbacks(repl_debugger *d, tide_debugger *dbg)
{
    dbg->keep_values = d->keep;
    dbg->finished = d->keep ? dbg_finished : NULL;
}

/* Lets go of the kept step; what it held goes to *was (may be NULL): values, bytes, step. */
typedef struct kept_summary {
    int num;
    size_t bytes;
    int64_t step;
} kept_summary;

static void release_kept(repl_debugger *d, kept_summary *was)
{
    pthread_mutex_lock(&d->kept_lock);
    repl_kept_step *k = d->kept;
    d->kept = NULL;
    pthread_mutex_unlock(&d->kept_lock);
    if (was)
        *was = k ? (kept_summary){k->num, k->bytes, k->run.step} : (kept_summary){0, 0, 0};
    kept_free(k);
}

void repl_debugger_run_starts(repl_debugger *d)
{
    if (d && d->keep)
        release_kept(d, NULL);
}

void repl_debugger_free_kept(repl_debugger *d) { release_kept(d, NULL); }

/* About how many bytes, for people ("4.0 MiB"; tide_format_bytes says it exactly). */
static void format_bytes(char *buf, size_t size, size_t bytes)
{
    if (bytes >= 1u << 20)
        snprintf(buf, size, "%.1f MiB", (double)bytes / (1 << 20));
    else if (bytes >= 10u << 10)
        snprintf(buf, size, "%.1f KiB", (double)bytes / (1 << 10));
    else
        snprintf(buf, size, "%zu bytes", bytes);
}

bool repl_debugger_set_keep(repl_debugger *d, bool on, char *msg, size_t size)
{
    if (d->step) {
        snprintf(msg, size, "keep mode cannot change at a stop (from the step's first stop on nothing is let go "
                            "already: :print shows every value still held); set it before the run");
        return false;
    }
    kept_summary was = {0, 0, 0};
    d->keep = on;
    if (!on)
        release_kept(d, &was);
    repl_debugger_update(d);
    char b[32];
    format_bytes(b, sizeof b, was.bytes);
    if (on)
        snprintf(msg, size, "keep mode on: each run keeps every value it computes until the next run starts "
                            "(memory: all of a step's intermediates at once); :dump after a run writes them");
    else if (was.num)
        snprintf(msg, size, "keep mode off: the %d values of step %lld released (%s, variables' values included)", was.num, (long long)was.step, b);
    else
        snprintf(msg, size, "keep mode off");
    return true;
}

void repl_debugger_keep_status(repl_debugger *d, char *msg, size_t size)
{
    pthread_mutex_lock(&d->kept_lock);
    repl_kept_step *k = d->kept;
    char b[32];
    format_bytes(b, sizeof b, k ? k->bytes : 0);
    if (!d->keep)
        snprintf(msg, size, "keep mode off (`:keep on` keeps the values of each run until the next one, for :dump)");
    else if (!k)
        snprintf(msg, size, "keep mode on; no run has finished since (or a run has started: its values come when "
                            "it ends)");
    else
        snprintf(msg, size, "keep mode on: %d values of step %lld held (%s, variables' values included)", k->num, (long long)k->run.step, b);
    pthread_mutex_unlock(&d->kept_lock);
}

/* ---------------------------------------------------------------- :dump */

/* Writes k's values into the run log; prints what it did (where: "stopped ..." or "the last ..."). */
static void write_dump(repl_debugger *d, const repl_kept_step *k, const char *where)
{
    repl *r = d->r;
    size_t cap = tide_store_value_cap(r->store);
    int with_values = 0, strings = 0, over = 0;
    char left_out[1024] = "";
    size_t used = 0;
    for (int i = 0; i < k->num; i++) {
        const kept_value *v = &k->values[i];
        tide_exec_point at = {v->frame, v->iteration};
        tide_store_log_dumped(r->store, &k->run, v->node, v->output, v->value, &at);
        size_t bytes = tide_tensor_byte_size(v->value);
        if (tide_tensor_dtype(v->value) == TIDE_STRING) {
            strings++;
        } else if (cap > 0 && bytes <= cap) {
            with_values++;
        } else if (over++ < LIST_LEFT_OUT && used < sizeof left_out) {
            char b[32];
            format_bytes(b, sizeof b, bytes);
            used += (size_t)snprintf(left_out + used, sizeof left_out - used, "%s'%s:%d' (%s)", over > 1 ? ", " : "",
                                     v->node, v->output, b);
        }
    }
    repl_log_flush(r); /* committed, and any record the log could not take is told */
    printf("dumped %d tensors of step %lld into the run log (%s); %d with their values\n", k->num,
           (long long)k->run.step, where, with_values);
    if (over && cap == 0) {
        printf("left out: the values of all %d tensors: the log stores none (`:log cap BYTES` stores them up to that "
               "size), only their statistics\n", over);
    } else if (over) {
        char b[32];
        tide_format_bytes(cap, b, sizeof b);
        printf("left out: the values of %d tensors larger than the log's value cap (%s), logged as statistics only: "
               "%s%s (`:log cap BYTES` raises the cap)\n",
               over, b, left_out, over > LIST_LEFT_OUT ? ", ..." : "");
    }
    if (strings)
        printf("left out: the values of %d string tensors (the log keeps their dtype and shape)\n", strings);
    if (k->failed)
        printf("left out: some values (out of memory while collecting them)\n");
    printf("`:tensor NODE %lld` reads one back\n", (long long)k->run.step);
}

bool repl_dbg_dump(repl_debugger *d, char *msg, size_t size)
{
    repl *r = d->r;
    if (!r->store) {
        snprintf(msg, size, "no run log (%s)", r->opts.log_off_reason ? r->opts.log_off_reason : "off");
        return false;
    }
    if (d->step) { /* the stopped step: what it holds now */
        repl_kept_step *k = kept_from(d, d->step);
        if (!k) {
            snprintf(msg, size, "out of memory");
            return false;
        }
        char where[320];
        snprintf(where, sizeof where, "stopped %s '%.200s': the values computed so far", d->ev->after ? "after" : "before",
                 tide_node_name(d->ev->node));
        write_dump(d, k, where);
        kept_free(k);
        return true;
    }
    pthread_mutex_lock(&d->kept_lock); /* held while writing: a run on another thread may replace it */
    repl_kept_step *k = d->kept;
    if (k)
        write_dump(d, k, "the last finished run, kept by keep mode");
    pthread_mutex_unlock(&d->kept_lock);
    if (k)
        return true;
    if (d->keep)
        snprintf(msg, size, "no run has finished since keep mode went on (or since the last run started): run one, "
                            "then :dump");
    else
        snprintf(msg, size, "no step is stopped, and the last run's values are gone (the debugger keeps none by "
                            "default): `:keep on`, run the step again, then :dump; or stop it with :break NODE and "
                            ":dump at the stop");
    return false;
}
