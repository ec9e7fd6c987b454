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
#define ST_BATCH_MAX 256
#define ST_BATCH_LINGER_NS (50 * 1000000LL)

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

/* A synchronous request: the caller waits on the store's done condition until done is set. */
typedef struct st_sync {
    bool done;
    int64_t id;          /* the row id produced, -1 on failure */
    tide_status status;
    char message[256];
} st_sync;

typedef struct st_node_rec {
    char *name, *op, *inputs, *control_inputs, *attrs, *requested_device, *assigned_device;
} st_node_rec;

/* One unit of work for the writer. Strings are owned (malloc'd) unless NULL. */
typedef struct st_record {
    struct st_record *next;
    st_kind kind;
    st_sync *sync;                 /* synchronous kinds only */
    uint64_t run_id;               /* the engine's run id */
    const void *session;           /* the tide_session pointer, a key only */
    int64_t step;
    union {
        struct { /* ST_RUN_START, ST_RUN_END */
            int64_t started_at_ns; /* CLOCK_REALTIME */
            int64_t wall_ns;
            int status;
            bool traced;
            char *error, *feeds, *fetches, *targets; /* names as JSON arrays */
        } run;
        struct { /* ST_TIMING */
            char *node, *op, *device, *shapes;
            int thread;
            int64_t scheduled_ns, start_ns, end_ns, output_bytes;
        } timing;
        struct { /* ST_TENSOR */
            char *node, *dtype, *shape, *histogram;
            int output;
            bool has_stats; /* false when there is no finite value */
            double min, max, mean, std;
            int64_t nan_count, inf_count;
            void *value; /* NULL: not stored */
            size_t value_len;
            bool fetched; /* a fetched tensor (else a watched node's output) */
        } tensor;
        struct { /* ST_SUMMARY */
            char *tag;
            double value;
        } summary;
        struct { /* ST_SESSION */
            char *label, *devices;
            int threads;
        } session;
        struct { /* ST_GRAPH */
            int64_t version;
            char *text;
            int num_nodes;
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

struct tide_store {
    char *path;
    sqlite3 *db; /* used only by the writer thread once it has started */
    tide_store_options opts;

    pthread_mutex_t lock; /* guards the queue, paused, stop, and every st_sync */
    pthread_cond_t nonempty, done;
    st_record *head, *tail;
    int queued;           /* asynchronous records in the queue (synchronous ones don't count) */
    int syncs_queued;     /* synchronous records in the queue (the writer stops lingering) */
    bool stop, paused;
    pthread_t writer;
    bool writer_started;
    atomic_llong dropped;
    char last_error[256]; /* the writer's last failure, under lock */

    /* Lock order: attach_lock, then the engine's observer lock (it calls wants_tensors), then
     * watch_lock. watch_lock is a leaf: nothing is called while holding it. */
    pthread_mutex_t watch_lock; /* guards the watched set */
    char **watched;
    int num_watched, cap_watched;
    pthread_mutex_t attach_lock; /* guards the attachments and calls to engines' observer lists */
    st_attachment *attachments;
};

/* store.c */
void st_record_free(st_record *r);
/* Queues r. Asynchronous records are dropped (freed and counted) when the queue is full. */
void st_push(tide_store *s, st_record *r);
/* Queues a synchronous record and waits for the writer to process it; returns sync->id. */
int64_t st_push_wait(tide_store *s, st_record *r, tide_error *err);
char *st_strdup(const char *s);
/* A JSON array of the strings (escaped); malloc'd, NULL on out of memory. */
char *st_json_strings(const char *const *v, int n);
int64_t st_realtime_ns(void);

/* schema.c: creates or migrates the schema of an open connection. */
tide_status st_schema_migrate(sqlite3 *db, const char *path, tide_error *err);

/* writer.c */
void *st_writer_main(void *arg);

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
