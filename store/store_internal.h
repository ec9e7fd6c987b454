/* store_internal.h — what the files of store/ share: the record that travels from the engine's
 * threads to the writer, the store object, and the functions each file provides to the others.
 * Not installed; tests may include it for tide__store_pause_writer. */
#ifndef TIDE_STORE_INTERNAL_H
#define TIDE_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "store.h"

#define ST_HIST_BINS 30
#define ST_BATCH_MIN 256            /* records per transaction while the writer keeps up */
#define ST_BATCH_MAX 4096           /* ... and when it falls behind (fewer lock round trips) */
#define ST_BATCH_LINGER_NS (50 * 1000000LL)
#define ST_BUSY_TIMEOUT_MS 5000     /* how long a statement waits for another connection's lock */

typedef enum st_kind {
    ST_RUN_START = 1,
    ST_RUN_END = 2,
    ST_TIMING = 3,
    ST_TENSOR = 4,
    ST_SESSION = 5, /* synchronous */
    ST_GRAPH = 6,   /* synchronous */
    ST_FLUSH = 7,   /* synchronous */
    ST_PRUNE = 8,   /* synchronous: sync->id receives the number of values cleared */
    ST_SUMMARY = 9, /* a ScalarSummary's value */
} st_kind;

/* What st_kind a record kind of tide_store_health counts under (-1: not a record of the log). */
int st_kind_counted_as(st_kind kind);

/* A synchronous request: the caller waits on the store's done condition until done is set. */
typedef struct st_sync {
    bool done;
    int64_t id;          /* the row id produced, -1 on failure */
    tide_status status;
    char message[256];
} st_sync;

/* One node of a graph version: its row of graph_nodes, at its index in the graph. */
typedef struct st_node_rec {
    int position;
    char *name, *op, *inputs, *control_inputs, *attrs, *requested_device, *assigned_device, *line;
} st_node_rec;

/* One unit of work for the writer. Strings are owned (malloc'd) unless NULL. */
typedef struct st_record {
    struct st_record *next;
    st_kind kind;
    unsigned char outcome;         /* the writer's: written, skipped or failed (writer.c) */
    st_sync *sync;                 /* synchronous kinds only */
    uint64_t run_id;               /* the engine's run id */
    const void *session;           /* the tide_session pointer, a key only */
    int64_t step;
    union {
        struct { /* ST_RUN_START, ST_RUN_END */
            int64_t started_at_ns; /* CLOCK_REALTIME */
            int64_t wall_ns;
            int64_t peak_bytes;    /* ST_RUN_END: tide_run_info.peak_bytes */
            int status;
            bool traced;
            bool written_with_start; /* ST_RUN_END: the writer wrote it with its start's row */
            char *error, *feeds, *fetches, *targets; /* names as JSON arrays */
            char *feed_shapes; /* JSON array: "dtype [shape]" of each feed, in feeds' order */
            char *device_memory; /* ST_RUN_END: JSON array, runs.device_memory (NULL: unknown) */
        } run;
        struct { /* ST_TIMING */
            char *node, *op, *device, *shapes;
            char *frame; /* the loop frame instance ("while", "outer:3/inner"); NULL outside loops */
            char *fused; /* a fused group's members ("h, r, out"); NULL for a node run by itself */
            char *lane;  /* a device stream's lane, "/sim:0 compute"; NULL: the executor thread ran it */
            int64_t iteration;
            int thread;
            int64_t scheduled_ns, start_ns, end_ns, output_bytes;
            int64_t launch_start_ns, launch_end_ns; /* with a lane: when the host launched it */
        } timing;
        struct { /* ST_TENSOR */
            char *node, *dtype, *shape, *histogram;
            char *frame; /* as timing.frame */
            int64_t iteration;
            int output;
            bool has_stats; /* false when there is no finite value */
            double min, max, mean, std;
            int64_t nan_count, inf_count;
            void *value; /* NULL: not stored */
            size_t value_len;
            const char *kind; /* tensors.kind: "watched", "fetched", "image" or "dumped" (static text) */
        } tensor;
        struct { /* ST_SUMMARY */
            char *tag;
            double value;
        } summary;
        struct { /* ST_SESSION */
            char *label, *devices;
            int threads;
        } session;
        struct { /* ST_GRAPH: a version as the difference from the previous one (graph_log.c) */
            int64_t version;   /* tide_graph_version */
            int64_t made_at_ns; /* CLOCK_REALTIME when the version was taken: its created_at */
            uint64_t seq;      /* this version's number in its lineage (1, 2, ...) */
            bool whole;        /* every node is in nodes: the version does not depend on earlier ones */
            bool unchanged;    /* nothing changed since version seq: the writer answers its id */
            int num_nodes;     /* the graph's nodes; positions >= num_nodes are gone */
            int num_changed;   /* nodes new or changed since version seq - 1 */
            st_node_rec *nodes;
        } graph;
        struct { /* ST_PRUNE */
            int64_t keep_last_runs;
        } prune;
    } u;
} st_record;

/* One engine the store observes: two observers, one for runs and timings (fixed), one for tensors
 * (re-registered when the watched set changes, so that the engine asks wants_tensors again). */
typedef struct st_attachment {
    struct st_attachment *next;
    tide_store *store;
    tide_engine *engine; /* NULL once detached; the struct lives until close (runs in flight) */
    int run_observer, tensor_observer;
} st_attachment;

/* What the store could not record (health.c): counters, and the first and latest problem. */
typedef struct st_health {
    atomic_ullong events;
    atomic_llong dropped[TIDE_STORE_NUM_RECORD_KINDS];
    atomic_llong queue_full, failed_writes, runs_unknown, runs_unfinished;
    pthread_mutex_t lock; /* a leaf: guards the messages */
    char first_error[TIDE_STORE_MESSAGE_MAX], latest_error[TIDE_STORE_MESSAGE_MAX];
    char unfinished_runs[TIDE_STORE_MESSAGE_MAX];
    bool latest_is_queue_full; /* the latest message is the queue's (not rewritten per drop) */
} st_health;

typedef struct st_lineage st_lineage;

#define ST_LOST_ENDS_MAX 4096
typedef struct st_lost_end {
    uint64_t run_id;
    const void *session;
    int64_t step, started_at_ns, wall_ns, peak_bytes;
    int status;
    bool traced;
} st_lost_end;

struct tide_store {
    char *path;
    sqlite3 *db; /* used only by the writer thread once it has started */
    tide_store_options opts;

    pthread_mutex_t lock; /* guards the queue, paused, stop, the behind flags, and every st_sync */
    pthread_cond_t nonempty, done, room;
    st_record *head, *tail;
    int queued;           /* data records in the queue (timings, tensors, summaries) */
    int queued_runs;      /* run records in the queue (starts and ends) */
    size_t queued_bytes;  /* the data records' approximate size */
    int syncs_queued;     /* synchronous records in the queue (the writer stops lingering) */
    int waiting;          /* records waiting for room (st_push) */
    bool runs_behind;     /* a run record waited wait_ms in vain: the next ones do not wait */
    bool data_behind;     /* a data record waited wait_ms in vain: the next ones do not wait */
    bool stop, paused;
    pthread_t writer;
    bool writer_started;
    unsigned busy_seed;   /* the busy handler's random naps */
    st_health health;
    /* Run ends that found no room in the queue, kept small (no strings) for the writer, which writes
     * their status late; beyond ST_LOST_ENDS_MAX the runs get status UNKNOWN at close. Under lock. */
    st_lost_end *lost_ends;
    int num_lost_ends;

    /* Graph versions logged per session (graph_log.c), guarded by graphs_lock (taken before lock). */
    pthread_mutex_t graphs_lock;
    struct st_lineage *lineages;

    /* Lock order: attach_lock, then the engine's observer lock (it calls wants_tensors), then
     * watch_lock. watch_lock is a leaf: nothing is called while holding it. */
    pthread_mutex_t watch_lock; /* guards the watched set */
    char **watched;
    int num_watched, cap_watched;
    pthread_mutex_t attach_lock; /* guards the attachments and calls to engines' observer lists */
    st_attachment *attachments;
};

/* writer.c: whether the writer should write a batch now rather than wait for more records (lock held) */
bool st_wants_batch_now(const tide_store *s);

/* store.c */
void st_record_free(st_record *r);
/* Queues r. A run record (start, end) or data record (timing, tensor, summary) that finds the queue
 * full waits up to opts.wait_ms for room, then is dropped (freed, counted and reported); a graph
 * record is never dropped (it is rare, and the runs that follow refer to it). */
void st_push(tide_store *s, st_record *r);
/* Queues a synchronous record and waits for the writer to process it; returns sync->id (-1 with err
 * set on failure). st_push_sync queues without waiting; st_wait_sync waits. */
int64_t st_push_wait(tide_store *s, st_record *r, tide_error *err);
void st_push_sync(tide_store *s, st_record *r, st_sync *sync);
int64_t st_wait_sync(tide_store *s, st_sync *sync, tide_error *err);
/* The compact note kept of a run end record that is dropped (its status survives). */
st_lost_end st_lost_end_of(const st_record *r);
/* The approximate bytes a queued record holds (for queue_bytes). */
size_t st_record_bytes(const st_record *r);
void st_node_rec_clear(st_node_rec *n);

/* A growable string; on out of memory it stays failed and st_buf_take returns NULL. */
typedef struct st_buf {
    char *p;
    size_t len, cap;
    bool failed;
} st_buf;
void st_buf_add(st_buf *b, const char *s, size_t n);
void st_buf_puts(st_buf *b, const char *s);
void st_buf_json_string(st_buf *b, const char *s); /* s as a JSON string, quoted and escaped */
char *st_buf_take(st_buf *b); /* the string (malloc'd; "" when empty), NULL when out of memory */
char *st_strdup(const char *s);
/* A JSON array of the strings (escaped); malloc'd, NULL on out of memory. */
char *st_json_strings(const char *const *v, int n);
int64_t st_realtime_ns(void);

/* schema.c: creates or migrates the schema of an open connection. */
tide_status st_schema_migrate(sqlite3 *db, const char *path, tide_error *err);

/* writer.c */
void *st_writer_main(void *arg);

/* health.c: counting what is lost and saying why. Any thread; the messages are copied. */
void st_health_init(st_health *h);
void st_health_destroy(st_health *h);
/* n records of kind `kind` were lost; queue_full says it was for want of room in the queue. */
void st_note_dropped(tide_store *s, st_kind kind, int64_t n, bool queue_full);
/* A failure (a write, a transaction) with its message; counted as a failed write when failed_write. */
void st_note_error(tide_store *s, bool failed_write, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void st_note_runs_unknown(tide_store *s, int64_t n);
/* n runs read as unfinished in the file though they ended (their final status could not be written);
 * names lists them. Replaces an earlier note: it is the file's state, not a count of events. */
void st_note_runs_unfinished(tide_store *s, int64_t n, const char *names);

/* graph_log.c: graph versions as differences. The caller's side builds records (under graphs_lock);
 * the writer's side writes them. */
void st_lineages_free(tide_store *s);
/* Forgets what was logged for session (a new session at that address starts a new lineage). */
void st_lineage_reset(tide_store *s, const void *session);
/* Called by the run observer before a run starts: logs the session's graph when the session was
 * logged and its graph changed (or a new plan placed nodes) since the last version logged. */
void st_graph_before_run(tide_store *s, const tide_run_info *run);
typedef struct st_graph_writer st_graph_writer;
st_graph_writer *st_graph_writer_new(sqlite3 *db);
void st_graph_writer_free(st_graph_writer *gw);
/* Writes one ST_GRAPH record in the current transaction, under a savepoint; session_id is its
 * sessions.id (0: none). Returns the graphs.id (> 0), 0 when the record was skipped (its lineage lost
 * an earlier version: a whole version follows), -1 on an SQL failure (*what says which statement;
 * the connection's error is SQLite's): read it, then call st_graph_write_undo. */
int64_t st_graph_write(st_graph_writer *gw, tide_store *s, st_record *r, int64_t session_id, const char **what);
void st_graph_write_undo(st_graph_writer *gw, tide_store *s, const st_record *r);
/* The transaction with graph records was rolled back: the writer forgets what it wrote in it; when
 * lost (it will not be retried), their lineages send a whole version next. */
void st_graph_writer_rollback(st_graph_writer *gw, tide_store *s, bool lost);
/* The transaction committed. */
void st_graph_writer_commit(st_graph_writer *gw);

/* observer.c */
tide_observer st_run_observer(st_attachment *a);
tide_observer st_tensor_observer(st_attachment *a);
bool st_is_watched(tide_store *s, const char *name);

/* For tests: a paused writer commits nothing (the queue fills and records drop) until resumed.
 * Flush waits for a paused writer. */
void tide__store_pause_writer(tide_store *s, bool paused);

/* ---------------------------------------------------------------- query.c: read-only connections */

/* A read-only connection to a run log for one call (query.c: SQLITE_OPEN_READONLY, query_only, a busy
 * timeout, the SQL functions status_name() and short_device()). */
typedef struct st_reader {
    sqlite3 *db;
    const char *path;
    char denied[32]; /* what the authorizer refused ("ATTACH"), for the message */
    const volatile sig_atomic_t *cancel; /* stops the statement when non-zero; may be NULL */
} st_reader;

tide_status st_reader_open(st_reader *r, const char *path, tide_error *err);
void st_reader_close(st_reader *r);
/* Fails with a clear message unless the file is a run log of a schema this build reads; *version (may
 * be NULL) receives its schema version. */
tide_status st_check_schema(st_reader *r, int *version, tide_error *err);
/* Runs one of the store's own statements with params bound as tide_store_query_bound binds them. */
tide_store_table *st_reader_run(st_reader *r, const char *sql, const char *const *params, int num_params, int max_rows,
                                tide_error *err);

#endif
