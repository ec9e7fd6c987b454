/* store.c — the run log's public face: opening (connection, pragmas, schema, writer thread), closing,
 * the bounded queue between the engine's threads and the writer, synchronous requests (sessions,
 * flush, pruning), attaching to engines and the watched set. The writer is in writer.c, the observer
 * callbacks in observer.c, the schema in schema.c, graph versions in graph_log.c, the account of what
 * could not be recorded in health.c. */
#include <ctype.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

#define DEFAULT_QUEUE_CAPACITY 65536
#define DEFAULT_QUEUE_BYTES ((size_t)256 << 20)
#define DEFAULT_WAIT_MS 30000
#define DEFAULT_VALUE_CAP (1u << 20)
#define DEFAULT_TRACE_EVERY 100
#define BUSY_TIMEOUT_MS ST_BUSY_TIMEOUT_MS

/* ---------------------------------------------------------------- small helpers */

char *st_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int64_t st_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void st_buf_add(st_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void st_buf_puts(st_buf *b, const char *s) { st_buf_add(b, s, strlen(s)); }

char *st_buf_take(st_buf *b)
{
    if (b->failed) {
        free(b->p);
        return NULL;
    }
    if (!b->p)
        return st_strdup("");
    return b->p;
}

void st_buf_json_string(st_buf *b, const char *s)
{
    st_buf_puts(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            st_buf_add(b, esc, 2);
        } else if (c < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            st_buf_puts(b, esc);
        } else {
            st_buf_add(b, (const char *)&c, 1);
        }
    }
    st_buf_puts(b, "\"");
}

char *st_json_strings(const char *const *v, int n)
{
    st_buf b = {0};
    st_buf_puts(&b, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            st_buf_puts(&b, ",");
        st_buf_json_string(&b, v[i] ? v[i] : "");
    }
    st_buf_puts(&b, "]");
    return st_buf_take(&b);
}

/* ---------------------------------------------------------------- records and the queue */

void st_record_free(st_record *r)
{
    if (!r)
        return;
    switch (r->kind) {
    case ST_RUN_START:
    case ST_RUN_END:
        free(r->u.run.error);
        free(r->u.run.feeds);
        free(r->u.run.fetches);
        free(r->u.run.targets);
        free(r->u.run.feed_shapes);
        free(r->u.run.device_memory);
        break;
    case ST_TIMING:
        free(r->u.timing.node);
        free(r->u.timing.op);
        free(r->u.timing.device);
        free(r->u.timing.shapes);
        free(r->u.timing.frame);
        free(r->u.timing.fused);
        free(r->u.timing.lane);
        break;
    case ST_TENSOR:
        free(r->u.tensor.node);
        free(r->u.tensor.dtype);
        free(r->u.tensor.shape);
        free(r->u.tensor.histogram);
        free(r->u.tensor.frame);
        free(r->u.tensor.value);
        break;
    case ST_SUMMARY:
        free(r->u.summary.tag);
        break;
    case ST_SESSION:
        free(r->u.session.label);
        free(r->u.session.devices);
        break;
    case ST_GRAPH:
        for (int i = 0; i < r->u.graph.num_changed; i++)
            st_node_rec_clear(&r->u.graph.nodes[i]);
        free(r->u.graph.nodes);
        break;
    case ST_FLUSH:
    case ST_PRUNE:
        break;
    }
    free(r);
}

/* Appends r (its counters already raised). The writer is woken only when it has something to do: it
 * sleeps while the queue is empty, then lingers until a batch is worth writing (st_wants_batch_now).
 * Waking it for every record cost a context switch per record (4 per training step of the MLP). */
static void enqueue_locked(tide_store *s, st_record *r)
{
    r->next = NULL;
    bool was_empty = !s->tail;
    if (s->tail)
        s->tail->next = r;
    else
        s->head = r;
    s->tail = r;
    if (was_empty || st_wants_batch_now(s))
        pthread_cond_signal(&s->nonempty);
}

st_lost_end st_lost_end_of(const st_record *r)
{
    return (st_lost_end){.run_id = r->run_id, .session = r->session, .step = r->step,
                         .started_at_ns = r->u.run.started_at_ns, .wall_ns = r->u.run.wall_ns,
                         .peak_bytes = r->u.run.peak_bytes, .status = r->u.run.status, .traced = r->u.run.traced};
}

static bool is_run_record(const st_record *r) { return r->kind == ST_RUN_START || r->kind == ST_RUN_END; }

size_t st_record_bytes(const st_record *r)
{
    size_t n = sizeof *r;
    if (r->kind == ST_TENSOR)
        n += r->u.tensor.value_len + 256;
    else if (r->kind == ST_TIMING)
        n += 128;
    return n;
}

/* Whether r fits in the queue now (lock held): run records and data records have room of their own. */
static bool has_room(const tide_store *s, const st_record *r)
{
    if (is_run_record(r))
        return s->queued_runs < s->opts.queue_capacity;
    return s->queued < s->opts.queue_capacity && s->queued_bytes + st_record_bytes(r) <= s->opts.queue_bytes;
}

/* Waits (lock held) until r fits, the store stops, or wait_ms passes; false when it does not fit. After
 * one wait in vain, the next records of r's class (run or data) do not wait until the writer has
 * emptied half of the queue (pop_batch), so a writer that is stuck costs one wait, not one per record.
 * A data record bigger than the whole queue_bytes would never fit: it does not wait. */
static bool wait_for_room(tide_store *s, const st_record *r)
{
    if (s->stop)
        return false;
    if (has_room(s, r))
        return true;
    bool *behind = is_run_record(r) ? &s->runs_behind : &s->data_behind;
    if (*behind || s->opts.wait_ms <= 0 || (!is_run_record(r) && st_record_bytes(r) > s->opts.queue_bytes))
        return false;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t ns = deadline.tv_nsec + (s->opts.wait_ms % 1000) * 1000000LL;
    deadline.tv_sec += (time_t)(s->opts.wait_ms / 1000 + ns / 1000000000LL);
    deadline.tv_nsec = (long)(ns % 1000000000LL);
    s->waiting++;
    pthread_cond_signal(&s->nonempty); /* a record waits: the writer writes now instead of lingering */
    while (!has_room(s, r) && !s->stop)
        if (pthread_cond_timedwait(&s->room, &s->lock, &deadline) != 0)
            break;
    s->waiting--;
    if (has_room(s, r) && !s->stop)
        return true;
    if (!s->stop)
        *behind = true;
    return false;
}

void st_push(tide_store *s, st_record *r)
{
    pthread_mutex_lock(&s->lock);
    bool fits = r->kind == ST_GRAPH ? !s->stop /* rare, and the runs that follow refer to it */
                                    : wait_for_room(s, r);
    if (!fits) {
        bool stopping = s->stop;
        if (r->kind == ST_RUN_END && !stopping && s->num_lost_ends < ST_LOST_ENDS_MAX)
            s->lost_ends[s->num_lost_ends++] = st_lost_end_of(r);
        pthread_mutex_unlock(&s->lock);
        st_note_dropped(s, r->kind, 1, !stopping);
        if (stopping)
            st_note_error(s, false, "run log %s: a record arrived while the log was closing (a run in flight?)",
                          s->path);
        st_record_free(r);
        return;
    }
    if (is_run_record(r))
        s->queued_runs++;
    else if (r->kind != ST_GRAPH) {
        s->queued++;
        s->queued_bytes += st_record_bytes(r);
    }
    enqueue_locked(s, r);
    pthread_mutex_unlock(&s->lock);
}

/* Queues a synchronous record (never dropped: its caller waits) without waiting for it. */
static void push_sync_locked(tide_store *s, st_record *r, st_sync *sync)
{
    *sync = (st_sync){.done = false, .id = -1, .status = TIDE_OK};
    r->sync = sync;
    s->syncs_queued++;
    enqueue_locked(s, r);
}

int64_t st_wait_sync(tide_store *s, st_sync *sync, tide_error *err)
{
    pthread_mutex_lock(&s->lock);
    while (!sync->done)
        pthread_cond_wait(&s->done, &s->lock);
    pthread_mutex_unlock(&s->lock);
    if (sync->status != TIDE_OK) {
        tide_error_set(err, sync->status, "%s", sync->message);
        return -1;
    }
    return sync->id;
}

void st_push_sync(tide_store *s, st_record *r, st_sync *sync)
{
    pthread_mutex_lock(&s->lock);
    push_sync_locked(s, r, sync);
    pthread_mutex_unlock(&s->lock);
}

int64_t st_push_wait(tide_store *s, st_record *r, tide_error *err)
{
    st_sync sync;
    st_push_sync(s, r, &sync);
    return st_wait_sync(s, &sync, err);
}

void tide__store_pause_writer(tide_store *s, bool paused)
{
    pthread_mutex_lock(&s->lock);
    s->paused = paused;
    pthread_cond_broadcast(&s->nonempty);
    pthread_mutex_unlock(&s->lock);
}

/* ---------------------------------------------------------------- open and close */

void tide_store_options_init(tide_store_options *opts)
{
    opts->queue_capacity = DEFAULT_QUEUE_CAPACITY;
    opts->queue_bytes = DEFAULT_QUEUE_BYTES;
    opts->wait_ms = DEFAULT_WAIT_MS;
    opts->value_cap_bytes = DEFAULT_VALUE_CAP;
    opts->trace_every = DEFAULT_TRACE_EVERY;
}

/* The busy handler of the store's connection: while another connection holds the write lock, retry
 * after short naps that double from 50 us to 2 ms, each shortened by a random part so that several
 * writers do not retry in step, for BUSY_TIMEOUT_MS in all. SQLite's own handler naps up to 100 ms,
 * which lets a writer lose the lock to others many times in a row while its queue fills. */
static int busy_backoff(void *arg, int attempt)
{
    unsigned *seed = arg;
    int64_t slept_us = 0, nap_us = 50;
    for (int i = 0; i < attempt && slept_us <= BUSY_TIMEOUT_MS * 1000LL; i++) {
        slept_us += nap_us;
        nap_us = nap_us < 2000 ? nap_us * 2 : 2000;
    }
    if (slept_us > BUSY_TIMEOUT_MS * 1000LL)
        return 0;
    int64_t us = nap_us / 2 + rand_r(seed) % (nap_us / 2 + 1);
    nanosleep(&(struct timespec){0, (long)(us * 1000)}, NULL);
    return 1;
}

static tide_status open_db(tide_store *s, tide_error *err)
{
    int rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK)
        return tide_error_set(err, TIDE_UNAVAILABLE, "cannot open run log %s: %s", s->path,
                              s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    s->busy_seed = (unsigned)st_realtime_ns() ^ (unsigned)(uintptr_t)s;
    sqlite3_busy_handler(s->db, busy_backoff, &s->busy_seed);
    /* Two connections switching a new file to WAL at once: the loser gets "locked" at once, without
     * the busy handler, so retry for as long as the busy timeout. */
    bool wal = false;
    for (int waited_ms = 0; !wal && waited_ms <= BUSY_TIMEOUT_MS; waited_ms += 10) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
            wal = strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        sqlite3_finalize(st);
        if (!wal && rc != SQLITE_BUSY && rc != SQLITE_LOCKED && rc != SQLITE_ROW)
            break;
        if (!wal)
            nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    if (!wal)
        return tide_error_set(err, TIDE_UNAVAILABLE, "run log %s: cannot switch to WAL mode: %s", s->path,
                              sqlite3_errmsg(s->db));
    /* In WAL mode NORMAL keeps the file consistent on power loss; only the last commits may go. */
    sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    return st_schema_migrate(s->db, s->path, err);
}

static void store_free(tide_store *s)
{
    sqlite3_close(s->db);
    for (int i = 0; i < s->num_watched; i++)
        free(s->watched[i]);
    free(s->watched);
    while (s->attachments) {
        st_attachment *a = s->attachments;
        s->attachments = a->next;
        free(a);
    }
    st_lineages_free(s);
    free(s->lost_ends);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->watch_lock);
    pthread_mutex_destroy(&s->attach_lock);
    pthread_mutex_destroy(&s->graphs_lock);
    pthread_cond_destroy(&s->nonempty);
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->room);
    st_health_destroy(&s->health);
    free(s->path);
    free(s);
}

tide_store *tide_store_open(const char *path, const tide_store_options *opts, tide_error *err)
{
    if (!path || !*path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "run log: no file name given");
        return NULL;
    }
    tide_store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = st_strdup(path))) {
        free(s);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory opening run log %s", path);
        return NULL;
    }
    tide_store_options_init(&s->opts);
    if (opts) {
        if (opts->queue_capacity > 0)
            s->opts.queue_capacity = opts->queue_capacity;
        if (opts->queue_bytes > 0)
            s->opts.queue_bytes = opts->queue_bytes;
        s->opts.wait_ms = opts->wait_ms > 0 ? opts->wait_ms : 0;
        s->opts.value_cap_bytes = opts->value_cap_bytes;
        s->opts.trace_every = opts->trace_every > 0 ? opts->trace_every : 0;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->watch_lock, NULL);
    pthread_mutex_init(&s->attach_lock, NULL);
    pthread_mutex_init(&s->graphs_lock, NULL);
    pthread_cond_init(&s->nonempty, NULL);
    pthread_cond_init(&s->done, NULL);
    pthread_cond_init(&s->room, NULL);
    st_health_init(&s->health);
    s->lost_ends = calloc(ST_LOST_ENDS_MAX, sizeof *s->lost_ends);
    if (!s->lost_ends) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory opening run log %s", path);
        store_free(s);
        return NULL;
    }
    if (open_db(s, err) != TIDE_OK) {
        store_free(s);
        return NULL;
    }
    sigset_t all, old; /* the writer blocks asynchronous signals: Ctrl-C is for the application */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int started = pthread_create(&s->writer, NULL, st_writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started != 0) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "run log %s: cannot start the writer thread", path);
        store_free(s);
        return NULL;
    }
    s->writer_started = true;
    return s;
}

void tide_store_close(tide_store *s) { tide_store_close_with_health(s, NULL); }

void tide_store_close_with_health(tide_store *s, tide_store_health *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s)
        return;
    pthread_mutex_lock(&s->attach_lock);
    for (st_attachment *a = s->attachments; a; a = a->next)
        if (a->engine) {
            tide_engine_remove_observer(a->engine, a->run_observer);
            tide_engine_remove_observer(a->engine, a->tensor_observer);
            a->engine = NULL;
        }
    pthread_mutex_unlock(&s->attach_lock);
    if (s->writer_started) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        s->paused = false;
        pthread_cond_broadcast(&s->nonempty);
        pthread_cond_broadcast(&s->room);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->writer, NULL);
    }
    if (out)
        tide_store_health_get(s, out);
    store_free(s);
}

tide_status tide_store_flush(tide_store *s, tide_error *err)
{
    if (!s)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "run log is NULL");
    st_record *r = calloc(1, sizeof *r);
    if (!r)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory flushing the run log");
    r->kind = ST_FLUSH;
    tide_error *local = err ? err : tide_error_new();
    int64_t id = st_push_wait(s, r, local);
    tide_status st = id < 0 ? tide_error_code(local) : TIDE_OK;
    if (local != err)
        tide_error_free(local);
    return id < 0 && st == TIDE_OK ? TIDE_INTERNAL : st;
}

tide_status tide_store_prune_values(tide_store *s, int64_t keep_last_runs, int64_t *pruned, tide_error *err)
{
    if (pruned)
        *pruned = 0;
    if (!s)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "run log is NULL");
    if (keep_last_runs < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "run log %s: prune_values: keep_last_runs is %lld, must be >= 0", s->path,
                              (long long)keep_last_runs);
    st_record *r = calloc(1, sizeof *r);
    if (!r)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory pruning the run log");
    r->kind = ST_PRUNE;
    r->u.prune.keep_last_runs = keep_last_runs;
    tide_error *local = err ? err : tide_error_new();
    int64_t n = st_push_wait(s, r, local);
    tide_status st = n < 0 ? tide_error_code(local) : TIDE_OK;
    if (local != err)
        tide_error_free(local);
    if (n >= 0 && pruned)
        *pruned = n;
    return n < 0 && st == TIDE_OK ? TIDE_INTERNAL : st;
}

/* The policy may change while engines run: the observers read these two fields at every run (the
 * period when a run starts, the cap when a tensor is produced), so they are accessed atomically. */
void tide_store_set_trace_every(tide_store *s, int64_t every)
{
    if (s)
        __atomic_store_n(&s->opts.trace_every, every > 0 ? every : 0, __ATOMIC_RELAXED);
}

void tide_store_set_value_cap(tide_store *s, size_t bytes)
{
    if (s)
        __atomic_store_n(&s->opts.value_cap_bytes, bytes, __ATOMIC_RELAXED);
}

int64_t tide_store_trace_every(const tide_store *s)
{
    return s ? __atomic_load_n(&s->opts.trace_every, __ATOMIC_RELAXED) : 0;
}

size_t tide_store_value_cap(const tide_store *s)
{
    return s ? __atomic_load_n(&s->opts.value_cap_bytes, __ATOMIC_RELAXED) : 0;
}

/* ---------------------------------------------------------------- sessions and graphs */

int64_t tide_store_log_session(tide_store *s, const tide_session *session, const tide_engine *engine,
                               const char *label, tide_error *err)
{
    if (!s || !session || !engine) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "log_session: store, session and engine are required");
        return -1;
    }
    int n = tide_engine_num_devices(engine);
    const char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
    st_record *r = calloc(1, sizeof *r);
    if (names)
        for (int i = 0; i < n; i++)
            names[i] = tide_engine_device_name(engine, i);
    if (r) {
        r->kind = ST_SESSION;
        r->session = session;
        r->u.session.threads = tide_engine_num_threads(engine);
        r->u.session.label = st_strdup(label);
        r->u.session.devices = names ? st_json_strings(names, n) : NULL;
    }
    free(names);
    if (!r || !r->u.session.devices || (label && !r->u.session.label)) {
        st_record_free(r);
        st_note_dropped(s, ST_SESSION, 1, false);
        st_note_error(s, false, "run log %s: out of memory logging a session", s->path);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory logging a session");
        return -1;
    }
    st_lineage_reset(s, session); /* its graph versions start afresh */
    return st_push_wait(s, r, err);
}

/* ---------------------------------------------------------------- engines and the watched set */

static int add_tensor_observer(st_attachment *a, tide_error *err)
{
    tide_observer obs = st_tensor_observer(a);
    return tide_engine_add_observer(a->engine, &obs, err);
}

int tide_store_attach(tide_store *s, tide_engine *engine, tide_error *err)
{
    if (!s || !engine) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "attach: store and engine are required");
        return 0;
    }
    st_attachment *a = calloc(1, sizeof *a);
    if (!a) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory attaching the run log");
        return 0;
    }
    a->store = s;
    a->engine = engine;
    pthread_mutex_lock(&s->attach_lock);
    tide_observer obs = st_run_observer(a);
    a->run_observer = tide_engine_add_observer(engine, &obs, err);
    if (a->run_observer > 0) {
        a->tensor_observer = add_tensor_observer(a, err);
        if (a->tensor_observer <= 0) {
            tide_engine_remove_observer(engine, a->run_observer);
            a->run_observer = 0;
        }
    }
    int id = a->run_observer;
    if (id > 0) {
        a->next = s->attachments;
        s->attachments = a;
    } else {
        free(a);
    }
    pthread_mutex_unlock(&s->attach_lock);
    return id;
}

void tide_store_detach(tide_store *s, tide_engine *engine, int id)
{
    if (!s || !engine)
        return;
    pthread_mutex_lock(&s->attach_lock);
    for (st_attachment *a = s->attachments; a; a = a->next)
        if (a->engine == engine && a->run_observer == id) {
            tide_engine_remove_observer(engine, a->run_observer);
            tide_engine_remove_observer(engine, a->tensor_observer);
            a->engine = NULL; /* runs in flight may still call back: freed at close */
        }
    pthread_mutex_unlock(&s->attach_lock);
}

/* The engine asks wants_tensors only when its observers change, so a change of the watched set
 * re-registers the tensor observer of every attached engine. Runs that start while it happens may
 * miss their tensors; runs that start after it returns see the new set. */
static void reregister(tide_store *s)
{
    pthread_mutex_lock(&s->attach_lock);
    for (st_attachment *a = s->attachments; a; a = a->next) {
        if (!a->engine)
            continue;
        tide_engine_remove_observer(a->engine, a->tensor_observer);
        a->tensor_observer = add_tensor_observer(a, NULL);
    }
    pthread_mutex_unlock(&s->attach_lock);
}

/* A watched entry is a node name or a shell glob ("*loss*"): a node is watched when an entry matches
 * its whole name. */
bool st_is_watched(tide_store *s, const char *name)
{
    bool found = false;
    pthread_mutex_lock(&s->watch_lock);
    for (int i = 0; i < s->num_watched && !found; i++)
        found = strpbrk(s->watched[i], "*?[") ? fnmatch(s->watched[i], name, 0) == 0
                                              : strcmp(s->watched[i], name) == 0;
    pthread_mutex_unlock(&s->watch_lock);
    return found;
}

/* Whether the entry itself (a name or a glob, as given) is in the watched set. */
static bool is_watch_entry(tide_store *s, const char *entry)
{
    bool found = false;
    pthread_mutex_lock(&s->watch_lock);
    for (int i = 0; i < s->num_watched && !found; i++)
        found = strcmp(s->watched[i], entry) == 0;
    pthread_mutex_unlock(&s->watch_lock);
    return found;
}

tide_status tide_store_watch(tide_store *s, const char *node_name, tide_error *err)
{
    if (!s || !node_name || !*node_name)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "watch: a node name is required");
    if (is_watch_entry(s, node_name))
        return TIDE_OK;
    char *copy = st_strdup(node_name);
    pthread_mutex_lock(&s->watch_lock);
    if (copy && s->num_watched == s->cap_watched) {
        int cap = s->cap_watched ? s->cap_watched * 2 : 8;
        char **w = realloc(s->watched, (size_t)cap * sizeof *w);
        if (w) {
            s->watched = w;
            s->cap_watched = cap;
        }
    }
    tide_status st = TIDE_OK;
    if (!copy || s->num_watched == s->cap_watched) {
        free(copy);
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory watching %s", node_name);
    } else {
        s->watched[s->num_watched++] = copy;
    }
    pthread_mutex_unlock(&s->watch_lock);
    if (st == TIDE_OK)
        reregister(s);
    return st;
}

char **tide_store_watched(tide_store *s, int *count)
{
    if (count)
        *count = 0;
    if (!s)
        return calloc(1, sizeof(char *));
    pthread_mutex_lock(&s->watch_lock);
    int n = s->num_watched;
    char **names = calloc((size_t)n + 1, sizeof *names);
    bool ok = names != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = (names[i] = st_strdup(s->watched[i])) != NULL;
    pthread_mutex_unlock(&s->watch_lock);
    if (!ok) {
        tide_store_names_free(names);
        return NULL;
    }
    if (count)
        *count = n;
    return names;
}

void tide_store_names_free(char **names)
{
    for (int i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

void tide_store_unwatch(tide_store *s, const char *node_name)
{
    if (!s || !node_name)
        return;
    bool removed = false;
    pthread_mutex_lock(&s->watch_lock);
    for (int i = 0; i < s->num_watched && !removed; i++)
        if (strcmp(s->watched[i], node_name) == 0) {
            free(s->watched[i]);
            s->watched[i] = s->watched[--s->num_watched];
            removed = true;
        }
    pthread_mutex_unlock(&s->watch_lock);
    if (removed)
        reregister(s);
}
