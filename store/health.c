/* health.c — what the run log could not record, and why: the channel from the store's threads (the
 * writer, and the engine's threads that drop records when the queue is full) to its owner, who reads
 * it with tide_store_health_get and tells the user (the REPL prints a warning at once, :log shows the
 * counts, a script whose log lost records exits non-zero).
 *
 * Counters are atomics, so that dropping a record costs the engine's thread no lock; `events` grows
 * with every problem, so that an owner polling after each run sees at once whether something new
 * happened. The first and the latest message are kept under a leaf mutex. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

int st_kind_counted_as(st_kind kind)
{
    switch (kind) {
    case ST_RUN_START:
    case ST_RUN_END: return TIDE_STORE_RUNS;
    case ST_TIMING: return TIDE_STORE_TIMINGS;
    case ST_TENSOR: return TIDE_STORE_TENSORS;
    case ST_SUMMARY: return TIDE_STORE_SUMMARIES;
    case ST_GRAPH: return TIDE_STORE_GRAPHS;
    case ST_SESSION: return TIDE_STORE_SESSIONS;
    case ST_FLUSH:
    case ST_PRUNE: return -1;
    }
    return -1;
}

const char *tide_store_record_kind_name(tide_store_record_kind kind)
{
    static const char *const names[TIDE_STORE_NUM_RECORD_KINDS] = {
        [TIDE_STORE_RUNS] = "runs", [TIDE_STORE_TIMINGS] = "node timings", [TIDE_STORE_TENSORS] = "tensors",
        [TIDE_STORE_SUMMARIES] = "summaries", [TIDE_STORE_GRAPHS] = "graph versions",
        [TIDE_STORE_SESSIONS] = "sessions"};
    return (int)kind >= 0 && kind < TIDE_STORE_NUM_RECORD_KINDS ? names[kind] : "records";
}

void st_health_init(st_health *h)
{
    memset(h, 0, sizeof *h);
    atomic_init(&h->events, 0);
    for (int k = 0; k < TIDE_STORE_NUM_RECORD_KINDS; k++)
        atomic_init(&h->dropped[k], 0);
    atomic_init(&h->queue_full, 0);
    atomic_init(&h->failed_writes, 0);
    atomic_init(&h->runs_unknown, 0);
    atomic_init(&h->runs_unfinished, 0);
    pthread_mutex_init(&h->lock, NULL);
}

void st_health_destroy(st_health *h) { pthread_mutex_destroy(&h->lock); }

/* Sets the latest message (and the first, when there was none). Called with h->lock held. */
static void set_message(st_health *h, const char *text, bool queue_full)
{
    if (!h->first_error[0])
        snprintf(h->first_error, sizeof h->first_error, "%s", text);
    snprintf(h->latest_error, sizeof h->latest_error, "%s", text);
    h->latest_is_queue_full = queue_full;
}

void st_note_dropped(tide_store *s, st_kind kind, int64_t n, bool queue_full)
{
    int k = st_kind_counted_as(kind);
    if (k < 0 || n <= 0)
        return;
    st_health *h = &s->health;
    atomic_fetch_add(&h->dropped[k], n);
    if (queue_full) {
        atomic_fetch_add(&h->queue_full, n);
        pthread_mutex_lock(&h->lock);
        if (!h->latest_is_queue_full) {
            char text[TIDE_STORE_MESSAGE_MAX], waited[64] = "";
            if (s->opts.wait_ms > 0)
                snprintf(waited, sizeof waited, " for %lld ms", (long long)s->opts.wait_ms);
            snprintf(text, sizeof text,
                     "run log %s: the writer fell behind and its queue (%d records) was full%s: %s and other records "
                     "were dropped",
                     s->path, s->opts.queue_capacity, waited, tide_store_record_kind_name((tide_store_record_kind)k));
            set_message(h, text, true);
        }
        pthread_mutex_unlock(&h->lock);
    }
    atomic_fetch_add(&h->events, 1);
}

void st_note_error(tide_store *s, bool failed_write, const char *fmt, ...)
{
    st_health *h = &s->health;
    char text[TIDE_STORE_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (failed_write)
        atomic_fetch_add(&h->failed_writes, 1);
    pthread_mutex_lock(&h->lock);
    set_message(h, text, false);
    pthread_mutex_unlock(&h->lock);
    atomic_fetch_add(&h->events, 1);
}

void st_note_runs_unknown(tide_store *s, int64_t n)
{
    if (n <= 0)
        return;
    atomic_fetch_add(&s->health.runs_unknown, n);
    atomic_fetch_add(&s->health.events, 1);
}

void st_note_runs_unfinished(tide_store *s, int64_t n, const char *names)
{
    st_health *h = &s->health;
    pthread_mutex_lock(&h->lock);
    snprintf(h->unfinished_runs, sizeof h->unfinished_runs, "%s", names);
    atomic_store(&h->runs_unfinished, n);
    pthread_mutex_unlock(&h->lock);
    atomic_fetch_add(&h->events, 1);
}

uint64_t tide_store_events(const tide_store *s)
{
    return s ? atomic_load(&((tide_store *)s)->health.events) : 0;
}

void tide_store_health_get(const tide_store *s, tide_store_health *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    st_health *h = &((tide_store *)s)->health;
    out->events = atomic_load(&h->events);
    for (int k = 0; k < TIDE_STORE_NUM_RECORD_KINDS; k++) {
        out->dropped_by_kind[k] = atomic_load(&h->dropped[k]);
        out->dropped += out->dropped_by_kind[k];
    }
    out->queue_full = atomic_load(&h->queue_full);
    out->failed_writes = atomic_load(&h->failed_writes);
    out->runs_unknown = atomic_load(&h->runs_unknown);
    pthread_mutex_lock(&h->lock);
    out->runs_unfinished = atomic_load(&h->runs_unfinished);
    memcpy(out->first_error, h->first_error, sizeof out->first_error);
    memcpy(out->latest_error, h->latest_error, sizeof out->latest_error);
    memcpy(out->unfinished_runs, h->unfinished_runs, sizeof out->unfinished_runs);
    pthread_mutex_unlock(&h->lock);
}

int64_t tide_store_dropped(const tide_store *s)
{
    int64_t n = 0;
    for (int k = 0; s && k < TIDE_STORE_NUM_RECORD_KINDS; k++)
        n += atomic_load(&((tide_store *)s)->health.dropped[k]);
    return n;
}

bool tide_store_health_ok(const tide_store_health *h)
{
    return h->dropped == 0 && h->failed_writes == 0 && h->runs_unknown == 0 && h->runs_unfinished == 0 &&
           !h->first_error[0];
}

char *tide_store_health_format(const tide_store_health *h)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    if (tide_store_health_ok(h)) {
        fputs("nothing lost", f);
    } else {
        fprintf(f, "%lld record%s lost", (long long)h->dropped, h->dropped == 1 ? "" : "s");
        const char *sep = " (";
        for (int k = 0; k < TIDE_STORE_NUM_RECORD_KINDS; k++)
            if (h->dropped_by_kind[k]) {
                fprintf(f, "%s%s %lld", sep, tide_store_record_kind_name((tide_store_record_kind)k),
                        (long long)h->dropped_by_kind[k]);
                sep = ", ";
            }
        if (sep[0] == ',')
            fputs(")", f);
        if (h->queue_full)
            fprintf(f, ", %lld for a full queue", (long long)h->queue_full);
        if (h->failed_writes)
            fprintf(f, ", %lld failed write%s", (long long)h->failed_writes, h->failed_writes == 1 ? "" : "s");
        if (h->runs_unknown)
            fprintf(f, ", %lld run%s whose end was lost (status UNKNOWN)", (long long)h->runs_unknown,
                    h->runs_unknown == 1 ? "" : "s");
        if (h->runs_unfinished)
            fprintf(f, ", %lld run%s read as unfinished in the file though %s ended (%s)", (long long)h->runs_unfinished,
                    h->runs_unfinished == 1 ? "" : "s", h->runs_unfinished == 1 ? "it" : "they", h->unfinished_runs);
    }
    fclose(f);
    return text;
}
