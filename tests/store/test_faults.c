/* test_faults.c — the run log under faults, SQLite's own way: an SQLite VFS shim (fault_vfs.c) fails
 * the Nth write, fsync or lock of a small training workload (a session, two graph versions, 60 runs
 * fetching and watching a tensor, traced every 10th, the log flushed every 5th), swept over N, once
 * and from N on. For every N: no crash, the file passes PRAGMA integrity_check afterwards, and nothing
 * is missing from it (runs with their status, tensors, timings, the session, the latest graph
 * version) without the store's health counting at least as many lost records of that kind and giving
 * the reason. Plus the full disk (a 512 KiB tmpfs when the test may mount one, else the shim's disk
 * budget: the output says which), a file that turns read-only in the middle of a session and back,
 * a run whose end was in a failed transaction (written later with its status), and a run whose end is
 * lost beyond recall (status UNKNOWN at close, never NULL). */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "engine/graph_util.h"
#include "store/fault_vfs.h"
#include "store/sql_read.h"
#include "store/temp_db.h"
#include "store.h"
#include "store_internal.h"

#define RUNS 60
#define SWEEP_ALL 150 /* every N up to this; beyond, a spread of values */

/* What a workload left: what the store said, and what the file holds. */
typedef struct outcome {
    bool opened;
    char open_error[512];
    tide_store_health health;
    bool file_exists, intact;
    char integrity[256];
    int64_t runs_ok, runs_not_ok, sessions, tensors, timings;
    char latest_graph[256]; /* the latest version's node names, in graph order */
    int64_t ops[FAULT_KINDS]; /* the shim's counts of the workload's operations */
    int64_t injected;         /* faults the shim injected */
} outcome;

/* Reads the file with a plain connection (the shim disarmed). */
static void read_file(outcome *o)
{
    o->file_exists = access(db_path, F_OK) == 0;
    if (!o->file_exists)
        return;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        snprintf(o->integrity, sizeof o->integrity, "cannot open: %s", sqlite3_errmsg(db));
        sqlite3_close(db);
        return;
    }
    char *text = q_text(db, "PRAGMA integrity_check");
    snprintf(o->integrity, sizeof o->integrity, "%s", text);
    free(text);
    o->intact = strcmp(o->integrity, "ok") == 0;
    if (q_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'runs'") == 1) {
        o->runs_ok = q_int(db, "SELECT count(*) FROM runs WHERE status = 0");
        o->runs_not_ok = q_int(db, "SELECT count(*) FROM runs WHERE status IS NOT 0");
        o->sessions = q_int(db, "SELECT count(*) FROM sessions");
        o->tensors = q_int(db, "SELECT count(*) FROM tensors");
        o->timings = q_int(db, "SELECT count(*) FROM node_timings");
        text = q_text(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM nodes WHERE graph_id = "
                          "(SELECT max(id) FROM graphs) ORDER BY rowid)");
        snprintf(o->latest_graph, sizeof o->latest_graph, "%s", text);
        free(text);
    }
    sqlite3_close(db);
}

static tide_status run_fetch(tide_session *s, tide_node *n, tide_error *err)
{
    tide_output out = {n, 0};
    tide_tensor *v = NULL;
    tide_status st = tide_session_run(s, NULL, NULL, 0, &out, 1, &v, NULL, 0, NULL, err);
    tide_tensor_release(v);
    return st;
}

/* A store on db_path attached to the engine, and a session of a graph holding one constant x. */
typedef struct logged {
    tide_store *s;
    tide_graph *g;
    tide_node *x;
    tide_session *session;
    int att;
} logged;

static void logged_open(logged *l, const tide_store_options *opts)
{
    l->s = tide_store_open(db_path, opts, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l->s);
    l->g = tide_graph_new();
    l->x = gu_const(l->g, "x", th_f32(1, TH_DIMS(2), (float[]){1, 2}));
    l->session = tide_session_new(th_engine(), l->g, NULL, NULL);
    l->att = tide_store_attach(l->s, th_engine(), NULL);
}

/* Detaches and closes the store (everything queued is written), then frees the session and graph. */
static void logged_close(logged *l)
{
    tide_store_detach(l->s, th_engine(), l->att);
    tide_store_close(l->s);
    tide_session_free(l->session);
    tide_graph_free(l->g);
}

/* The workload under whatever the shim is armed with; the shim is disarmed before the file is read. */
static void workload(outcome *o)
{
    memset(o, 0, sizeof *o);
    temp_db_new_in_memory_fs("tide-faults");
    tide_error *err = tide_error_new();
    tide_store_options opts;
    tide_store_options_init(&opts);
    opts.trace_every = 10;
    tide_store *s = tide_store_open(db_path, &opts, err);
    o->opened = s != NULL;
    snprintf(o->open_error, sizeof o->open_error, "%s", s ? "" : tide_error_message(err));
    if (s) {
        tide_graph *g = tide_graph_new();
        tide_node *a = gu_const(g, "a", th_f32(2, TH_DIMS(2, 2), (float[]){1, 2, 3, 4}));
        tide_node *m = gu_op(g, "MatMul", "m", 2, (tide_node *[]){a, a});
        tide_node *y = gu_op(g, "Add", "y", 2, (tide_node *[]){m, a}), *fetched = y;
        tide_session *session = tide_session_new(th_engine(), g, NULL, NULL);
        int att = tide_store_attach(s, th_engine(), NULL);
        tide_store_log_session(s, session, th_engine(), "faults", NULL); /* a failure is in the health */
        tide_store_watch(s, "y", NULL);
        for (int step = 0; step < RUNS; step++) {
            if (step == RUNS / 2) /* the graph grows: a second version, logged before its first run */
                fetched = gu_op(g, "Add", "z", 2, (tide_node *[]){y, a});
            CU_ASSERT_EQUAL(run_fetch(session, fetched, NULL), TIDE_OK);
            if (step % 5 == 4)
                tide_store_flush(s, NULL);
        }
        tide_store_flush(s, NULL);
        tide_store_health_get(s, &o->health);
        tide_store_detach(s, th_engine(), att);
        tide_store_close(s);
        tide_session_free(session);
        tide_graph_free(g);
    }
    for (int k = 0; k < FAULT_KINDS; k++)
        o->ops[k] = fault_vfs_count((fault_kind)k);
    o->injected = fault_vfs_injected();
    fault_vfs_disarm();
    read_file(o);
    tide_error_free(err);
    temp_db_remove();
}

/* Nothing missing without a report: each kind's shortfall against the baseline is at most what the
 * health counts as lost of that kind, and any loss comes with a message. */
static bool check(const outcome *base, const outcome *o, const char *label)
{
    const tide_store_health *h = &o->health;
    bool ok;
    if (!o->opened) /* the open failed: the caller was told, and the file is not damaged */
        ok = o->open_error[0] && (!o->file_exists || o->intact);
    else
        ok = o->intact && base->runs_ok - o->runs_ok <= h->dropped_by_kind[TIDE_STORE_RUNS] &&
             (o->runs_not_ok == 0 || h->dropped_by_kind[TIDE_STORE_RUNS] > 0) &&
             base->tensors - o->tensors <= h->dropped_by_kind[TIDE_STORE_TENSORS] &&
             base->timings - o->timings <= h->dropped_by_kind[TIDE_STORE_TIMINGS] &&
             (o->sessions == 1 || h->dropped_by_kind[TIDE_STORE_SESSIONS] > 0) &&
             (strcmp(o->latest_graph, base->latest_graph) == 0 || h->dropped_by_kind[TIDE_STORE_GRAPHS] > 0) &&
             (tide_store_health_ok(h) || h->first_error[0]);
    if (!ok) {
        char *counts = tide_store_health_format(h);
        fprintf(stderr,
                "\n%s: opened %d (%s), integrity '%s'; runs ok %lld (of %lld), not ok %lld; tensors %lld (of %lld); "
                "timings %lld (of %lld); sessions %lld; latest graph '%s' (want '%s'); health: %s; first: %s\n",
                label, o->opened, o->open_error, o->integrity, (long long)o->runs_ok, (long long)base->runs_ok,
                (long long)o->runs_not_ok, (long long)o->tensors, (long long)base->tensors, (long long)o->timings,
                (long long)base->timings, (long long)o->sessions, o->latest_graph, base->latest_graph,
                counts ? counts : "?", h->first_error);
        free(counts);
    }
    return ok;
}

static outcome baseline(void)
{
    outcome base;
    fault_vfs_disarm();
    workload(&base);
    CU_ASSERT_FATAL(base.opened && base.intact);
    CU_ASSERT(tide_store_health_ok(&base.health));
    CU_ASSERT_EQUAL(base.runs_ok, RUNS);
    CU_ASSERT_EQUAL(base.tensors, 2 * RUNS); /* y watched, and the value fetched */
    CU_ASSERT(base.timings > 0);
    CU_ASSERT_STRING_EQUAL(base.latest_graph, "a,m,y,z");
    return base;
}

/* The N to try: every one up to SWEEP_ALL, then about 50 spread over the rest; from-N-on faults (each
 * costs the retries of every later transaction) about 40 spread over all. */
static int64_t next_n(int64_t n, int64_t total, bool persistent)
{
    if (persistent)
        return n + total / 40 + 1;
    if (n < SWEEP_ALL)
        return n + 1;
    int64_t step = (total - SWEEP_ALL) / 50 + 1;
    return n + step;
}

/* Fails the Nth operation of kind (from N on when persistent) for every N of the sweep. */
static void sweep(fault_kind kind, bool persistent)
{
    fault_vfs_install();
    outcome base = baseline();
    outcome dry;
    fault_vfs_arm(kind, INT64_MAX, false); /* counts, injects nothing */
    workload(&dry);
    int64_t total = dry.ops[kind];
    CU_ASSERT(total > 0);
    int tried = 0, failed = 0, told = 0, open_failed = 0, lossless = 0;
    for (int64_t n = 1; n <= total; n = next_n(n, total, persistent)) {
        fault_vfs_arm(kind, n, persistent);
        outcome o;
        workload(&o);
        char label[96];
        snprintf(label, sizeof label, "%s fault %s%lld", fault_vfs_kind_name(kind), persistent ? "from " : "#",
                 (long long)n);
        bool ok = check(&base, &o, label);
        CU_ASSERT(ok);
        tried++;
        failed += !ok;
        open_failed += !o.opened;
        told += o.opened && !tide_store_health_ok(&o.health);
        lossless += o.opened && tide_store_health_ok(&o.health) && o.injected > 0;
    }
    fprintf(stderr, "\n  %s faults%s: %d of %lld operations tried: %d failed the open (told), %d runs told of losses, "
                    "%d recovered without loss; %d unreported losses or damaged files",
            fault_vfs_kind_name(kind), persistent ? " (from N on)" : "", tried, (long long)total, open_failed, told,
            lossless, failed);
}

static void test_write_faults(void) { sweep(FAULT_WRITE, false); }
static void test_sync_faults(void) { sweep(FAULT_SYNC, false); }
static void test_lock_faults(void) { sweep(FAULT_LOCK, false); }
static void test_persistent_write_faults(void) { sweep(FAULT_WRITE, true); }

/* ---------------------------------------------------------------- the full disk */

#define DISK_BYTES (512 * 1024)

/* Mounts a DISK_BYTES tmpfs on dir; false (with why) when this process may not. */
static bool mount_small_disk(const char *where, char *why, size_t size)
{
    char options[32];
    snprintf(options, sizeof options, "size=%d", DISK_BYTES);
    if (mount("tmpfs", where, "tmpfs", 0, options) == 0)
        return true;
    snprintf(why, size, "%s", strerror(errno));
    return false;
}

static void test_full_disk(void)
{
    fault_vfs_install();
    temp_db_new("tide-full-disk");
    char why[128] = "";
    bool mounted = mount_small_disk(dir, why, sizeof why);
    if (mounted)
        fprintf(stderr, "\n  full disk: a %d KiB tmpfs mounted on %s", DISK_BYTES / 1024, dir);
    else {
        fprintf(stderr, "\n  full disk: played by the VFS shim's disk budget of %d KiB (mounting a tmpfs: %s)",
                DISK_BYTES / 1024, why);
        fault_vfs_disk_budget(DISK_BYTES);
    }
    tide_error *err = tide_error_new();
    tide_store *s = tide_store_open(db_path, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_const(g, "x", th_f32(1, TH_DIMS(2), (float[]){1.5f, 2}));
    tide_node *y = gu_op(g, "Mul", "y", 2, (tide_node *[]){x, x});
    tide_session *session = tide_session_new(th_engine(), g, NULL, NULL);
    int att = tide_store_attach(s, th_engine(), NULL);
    CU_ASSERT(tide_store_log_session(s, session, th_engine(), "full", NULL) > 0);
    int runs = 0, after = 0;
    for (; runs < 20000 && after < 2000; runs++) { /* until the log fails, and 2,000 runs more */
        CU_ASSERT_EQUAL(run_fetch(session, y, NULL), TIDE_OK);
        after += tide_store_events(s) > 0;
    }
    tide_store_flush(s, NULL);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT(!tide_store_health_ok(&h));
    CU_ASSERT(h.dropped > 0 && h.failed_writes > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.first_error, "full"));
    tide_store_detach(s, th_engine(), att);
    tide_store_close(s);
    tide_session_free(session);
    tide_graph_free(g);
    fault_vfs_disarm();
    outcome o;
    memset(&o, 0, sizeof o);
    read_file(&o);
    CU_ASSERT(o.intact);
    CU_ASSERT(o.runs_ok + o.runs_not_ok < runs); /* the disk filled: some runs are not in the file... */
    CU_ASSERT(runs - o.runs_ok <= h.dropped_by_kind[TIDE_STORE_RUNS]); /* ...and every one is counted */
    fprintf(stderr, "; %d runs, %lld in the file; %lld records lost, reported: %s", runs, (long long)o.runs_ok,
            (long long)h.dropped, h.first_error);
    if (mounted)
        CU_ASSERT_EQUAL(umount(dir), 0);
    tide_error_free(err);
    temp_db_remove();
}

/* ---------------------------------------------------------------- a file that turns read-only */

/* The file stops taking writes in the middle of a session (every write fails from then on, as on a
 * disk remounted read-only: EROFS is SQLite's I/O error too), then takes them again: every run of the
 * read-only stretch is counted as lost with the reason, the runs before and after land, the file is
 * intact. */
static void test_read_only_mid_run(void)
{
    enum { BEFORE = 100, DURING = 100, AFTER = 50 };
    fault_vfs_install();
    fault_vfs_disarm();
    temp_db_new_in_memory_fs("tide-faults");
    logged l;
    logged_open(&l, NULL);
    tide_store *s = l.s;
    tide_session *session = l.session;
    tide_node *x = l.x;
    for (int i = 0; i < BEFORE; i++)
        CU_ASSERT_EQUAL(run_fetch(session, x, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_events(s), 0);
    fault_vfs_arm(FAULT_WRITE, 1, true); /* read-only from now on */
    for (int i = 0; i < DURING; i++)
        CU_ASSERT_EQUAL(run_fetch(session, x, NULL), TIDE_OK);
    CU_ASSERT_NOT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT(h.events > 0 && h.failed_writes > 0);
    CU_ASSERT_EQUAL(h.dropped_by_kind[TIDE_STORE_RUNS], 2 * DURING); /* each run's start and end */
    CU_ASSERT_EQUAL(h.dropped_by_kind[TIDE_STORE_TENSORS], DURING);  /* each fetched value */
    CU_ASSERT_PTR_NOT_NULL(strstr(h.first_error, "disk I/O error"));
    fault_vfs_disarm(); /* writable again */
    for (int i = 0; i < AFTER; i++)
        CU_ASSERT_EQUAL(run_fetch(session, x, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
    tide_store_health h2;
    tide_store_health_get(s, &h2);
    CU_ASSERT_EQUAL(h2.dropped, h.dropped); /* nothing more lost */
    logged_close(&l);
    outcome o;
    memset(&o, 0, sizeof o);
    read_file(&o);
    CU_ASSERT(o.intact);
    CU_ASSERT_EQUAL(o.runs_ok, BEFORE + AFTER);
    CU_ASSERT_EQUAL(o.runs_not_ok, 0);
    temp_db_remove();
}

/* ---------------------------------------------------------------- ends written late, or UNKNOWN */

/* A run whose start is committed and whose end is in a transaction that fails for good (a full disk)
 * gets its status once the disk has room again: it never passes for unfinished. */
static void test_end_written_late(void)
{
    fault_vfs_install();
    temp_db_new("tide-faults");
    logged l;
    logged_open(&l, NULL);
    tide_store *s = l.s;
    tide_session *session = l.session;
    tide_run_info run = {.run_id = 424242, .session = session, .step = 7};
    const tide_observer obs = st_run_observer(s->attachments);
    obs.run_started(obs.user, &run);
    CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK); /* the start is in the file */
    fault_vfs_disk_budget(1);                            /* nothing more fits */
    obs.run_ended(obs.user, &run, TIDE_OK, "", 1234);
    CU_ASSERT_NOT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT(h.failed_writes > 0 && h.dropped_by_kind[TIDE_STORE_RUNS] == 1);
    fault_vfs_disarm(); /* room again */
    CU_ASSERT_EQUAL(run_fetch(session, l.x, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(q_int(db, "SELECT status FROM runs WHERE run_id = 424242"), 0);
    CU_ASSERT_EQUAL(q_int(db, "SELECT wall_ns FROM runs WHERE run_id = 424242"), 1234);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status IS NULL"), 0);
    sqlite3_close(db);
    logged_close(&l);
    temp_db_remove();
}

/* A run whose start is committed and whose end cannot be written before the store closes (the disk
 * stays full): the file shows it as unfinished (a status needs room too), so the close says so about
 * that very run: its runs.id and step in the health it hands back, counted, with the reason. The same
 * for a run whose end never came (its status UNKNOWN cannot be written either). */
static void test_end_unwritable_at_close(void)
{
    fault_vfs_install();
    temp_db_new("tide-faults");
    logged l;
    logged_open(&l, NULL);
    tide_store *s = l.s;
    tide_session *session = l.session;
    tide_run_info ended = {.run_id = 515151, .session = session, .step = 31};
    tide_run_info never = {.run_id = 525252, .session = session, .step = 32};
    const tide_observer obs = st_run_observer(s->attachments);
    obs.run_started(obs.user, &ended);
    obs.run_started(obs.user, &never);
    CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK); /* both starts are in the file */
    fault_vfs_disk_budget(1);                            /* nothing more fits, until the end */
    obs.run_ended(obs.user, &ended, TIDE_OK, "", 1234);
    CU_ASSERT_NOT_EQUAL(tide_store_flush(s, NULL), TIDE_OK);
    tide_store_detach(s, th_engine(), l.att);
    tide_store_health h;
    tide_store_close_with_health(s, &h);
    tide_session_free(session);
    tide_graph_free(l.g);
    fault_vfs_disarm();
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t id_ended = q_int(db, "SELECT id FROM runs WHERE run_id = 515151");
    int64_t id_never = q_int(db, "SELECT id FROM runs WHERE run_id = 525252");
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status IS NULL"), 2); /* the disk was full */
    sqlite3_close(db);
    CU_ASSERT_FALSE(tide_store_health_ok(&h));
    CU_ASSERT_EQUAL(h.runs_unfinished, 2);
    char want[64];
    snprintf(want, sizeof want, "id %lld (step 31)", (long long)id_ended);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.unfinished_runs, want));
    snprintf(want, sizeof want, "id %lld (step 32)", (long long)id_never);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.unfinished_runs, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(h.latest_error, "full"));
    char *counts = tide_store_health_format(&h);
    CU_ASSERT_PTR_NOT_NULL(counts ? strstr(counts, "2 runs read as unfinished in the file though they ended") : NULL);
    if (counts && !strstr(counts, want))
        fprintf(stderr, "\n  health: %s", counts);
    free(counts);
    temp_db_remove();
}

/* Runs whose start is committed and whose end is lost beyond recall (no room in the queue, none in the
 * notes of lost ends) get status 2, UNKNOWN, with an error saying why, when the store closes. */
static void test_lost_end_unknown(void)
{
    temp_db_new("tide-faults");
    tide_store_options opts;
    tide_store_options_init(&opts);
    opts.queue_capacity = 2;
    opts.wait_ms = 0;
    logged l;
    logged_open(&l, &opts);
    tide_store *s = l.s;
    tide_session *session = l.session;
    const tide_observer obs = st_run_observer(s->attachments);
    tide_run_info runs[3];
    for (int i = 0; i < 3; i++) {
        runs[i] = (tide_run_info){.run_id = 5000 + (uint64_t)i, .session = session, .step = i};
        obs.run_started(obs.user, &runs[i]);
        CU_ASSERT_EQUAL(tide_store_flush(s, NULL), TIDE_OK); /* (the queue holds two run records) */
    }
    tide__store_pause_writer(s, true);
    pthread_mutex_lock(&s->lock);
    s->num_lost_ends = ST_LOST_ENDS_MAX; /* the notes are full */
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < 3; i++) /* two fit in the queue, the third is lost */
        obs.run_ended(obs.user, &runs[i], TIDE_OK, "", 10);
    pthread_mutex_lock(&s->lock);
    s->num_lost_ends = 0; /* (the notes were not real) */
    pthread_mutex_unlock(&s->lock);
    tide_store_health h;
    tide_store_health_get(s, &h);
    CU_ASSERT_EQUAL(h.dropped_by_kind[TIDE_STORE_RUNS], 1);
    CU_ASSERT_EQUAL(h.queue_full, 1);
    tide__store_pause_writer(s, false);
    logged_close(&l);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status = 0"), 2);
    CU_ASSERT_EQUAL(q_int(db, "SELECT status FROM runs WHERE run_id = 5002"), 2);
    char *error = q_text(db, "SELECT error FROM runs WHERE run_id = 5002");
    CU_ASSERT_PTR_NOT_NULL(strstr(error, "UNKNOWN: the run log lost the end of this run"));
    free(error);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE status IS NULL"), 0);
    sqlite3_close(db);
    temp_db_remove();
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_end_written_late),
        TH_TEST(test_lost_end_unknown),
        TH_TEST(test_end_unwritable_at_close),
        TH_TEST(test_full_disk),
        TH_TEST(test_read_only_mid_run),
        TH_TEST(test_write_faults),
        TH_TEST(test_sync_faults),
        TH_TEST(test_lock_faults),
        TH_TEST(test_persistent_write_faults),
        TH_END,
    };
    return th_main("store faults", tests);
}
