/* test_crash.c — the run log across processes: crash_writer children killed with SIGKILL mid-write,
 * ten times on one file (the file stays intact, every step a child reported flushed is there with
 * its status, tide_store_open still works, nothing committed is lost), and two children writing one
 * file at once (both sessions' runs all land, "database is locked" never surfaces). Checks read the
 * file with plain SQLite. The path of crash_writer comes in $TIDE_CRASH_WRITER. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "store/sql_read.h"
#include "store/temp_db.h"
#include "store.h"

/* ---------------------------------------------------------------- files */


/* PRAGMA integrity_check's rows joined by newlines; "ok" when the file is intact. Malloc'd; NULL on
 * out of memory. */
static char *integrity(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    char *all = strdup("");
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) {
        free(all);
        return strdup(sqlite3_errmsg(db));
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *row = (const char *)sqlite3_column_text(st, 0);
        size_t n = strlen(all), m = strlen(row);
        char *more = realloc(all, n + m + 2);
        if (!more)
            break;
        all = more;
        snprintf(all + n, m + 2, "%s%s", n ? "\n" : "", row);
    }
    if (rc != SQLITE_DONE) {
        free(all);
        all = strdup(sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    return all;
}

/* ---------------------------------------------------------------- children */

typedef struct child {
    pid_t pid;
    int fd;     /* its stdout and stderr; -1 once at EOF */
    char *out;  /* everything it printed, NUL-terminated */
    size_t len, cap;
} child;

/* The writer program: $TIDE_CRASH_WRITER (meson sets it), else store_crash_writer beside this test. */
static const char *writer_path(void)
{
    static char path[4096];
    const char *env = getenv("TIDE_CRASH_WRITER");
    if (env)
        return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return NULL;
    path[n] = 0;
    char *slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    strcpy(slash + 1, "store_crash_writer");
    return path;
}

/* Starts crash_writer FILE LABEL FLUSH_EVERY SECONDS with stdout and stderr into a pipe. */
static void spawn(child *c, const char *label, const char *flush_every, const char *seconds)
{
    const char *exe = writer_path();
    CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
    *c = (child){.fd = -1};
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    c->pid = fork();
    CU_ASSERT_FATAL(c->pid >= 0);
    if (c->pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execl(exe, exe, db_path, label, flush_every, seconds, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    c->fd = p[0];
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
}

/* Reads what is available without blocking; closes fd at EOF. */
static void drain(child *c)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) /* EAGAIN: nothing more for now */
            return;
        if (n == 0) {
            close(c->fd);
            c->fd = -1;
            return;
        }
        if (c->len + (size_t)n + 1 > c->cap) {
            size_t cap = (c->len + (size_t)n + 1) * 2;
            char *o = realloc(c->out, cap);
            if (!o)
                return;
            c->out = o;
            c->cap = cap;
        }
        memcpy(c->out + c->len, buf, (size_t)n);
        c->len += (size_t)n;
        c->out[c->len] = '\0';
    }
}

/* Collects the children's output for ms milliseconds, or until all reach EOF when ms < 0. */
static void collect(child *cs, int n, int ms)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd p[4];
        int open = 0;
        for (int i = 0; i < n; i++)
            if (cs[i].fd >= 0)
                p[open++] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
        if (!open)
            return;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        int64_t spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= 0 && spent >= ms)
            return;
        poll(p, (nfds_t)open, ms >= 0 ? (int)(ms - spent) : 1000);
        for (int i = 0; i < n; i++)
            if (cs[i].fd >= 0)
                drain(&cs[i]);
    }
}

/* Waits for the child to end (after reading all it printed); returns its wait status. */
static int reap(child *c)
{
    collect(c, 1, -1);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* The highest step the child printed as flushed; -1 when none. */
static int64_t highest_flushed(const child *c)
{
    int64_t high = -1;
    for (const char *line = c->out; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end) /* a partial last line: never a whole report */
            break;
        long long step;
        if (sscanf(line, "flushed %lld", &step) == 1 && step > high)
            high = step;
        line = end + 1;
    }
    return high;
}

static const char *output(const child *c) { return c->out ? c->out : ""; }

/* ---------------------------------------------------------------- the tests */

static int64_t count_for(sqlite3 *db, const char *fmt, const char *label)
{
    char sql[512];
    snprintf(sql, sizeof sql, fmt, label);
    return q_int(db, sql);
}

static void test_kill_loop(void)
{
    temp_db_new("tide-crash");
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(seed);
    int64_t prev_runs = 0, prev_sessions = 0, flushed_total = 0;
    for (int i = 0; i < 10; i++) {
        char label[32];
        snprintf(label, sizeof label, "crash-%d", i);
        child c;
        spawn(&c, label, "10", "0");
        /* Even kills land anywhere from 50 ms after the start (the writer's start-up included); odd
         * ones 0-250 ms after the writer reported its first flush, so that some kills hit a writer
         * that is writing however slowly a loaded machine under a sanitizer starts it (with fixed
         * times alone, all ten came before the first flush there: ASan, load ~30). */
        int ms = i % 2 == 0 ? 50 + rand() % 251 : rand() % 251;
        if (i % 2 == 1) {
            bool flushed = false;
            for (int waited = 0; waited < 120000 && !flushed && c.fd >= 0; waited += 20) {
                collect(&c, 1, 20);
                flushed = highest_flushed(&c) >= 0;
            }
            if (!flushed)
                fprintf(stderr, "\nkill %d: the writer reported no flush in 120 s (or ended): %s\n", i, output(&c));
            CU_ASSERT(flushed);
        }
        collect(&c, 1, ms);
        kill(c.pid, SIGKILL);
        int status = reap(&c);
        if (!WIFSIGNALED(status) || strstr(output(&c), "error"))
            fprintf(stderr, "\ncrash_writer (seed %u, kill %d after %d ms) said:\n%s\n", seed, i, ms, output(&c));
        CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        CU_ASSERT_PTR_NULL(strstr(output(&c), "error"));

        if (access(db_path, F_OK) != 0) { /* killed before it even created the file (a slow start) */
            fprintf(stderr, "\nkill %d after %d ms came before the file was created\n", i, ms);
            CU_ASSERT(highest_flushed(&c) < 0 && prev_runs == 0 && prev_sessions == 0);
            free(c.out);
            continue;
        }
        sqlite3 *db = NULL;
        CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        char *check = integrity(db);
        bool intact = check && strcmp(check, "ok") == 0;
        if (!intact)
            fprintf(stderr, "\nintegrity_check after kill %d (seed %u): %s\n", i, seed, check ? check : "?");
        CU_ASSERT(intact);
        free(check);
        int64_t high = highest_flushed(&c);
        /* A writer killed before its first commit (a slow start under the sanitizers) leaves a file
         * without the schema: valid only if nothing was reported flushed and nothing committed before. */
        if (q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'") != 1) {
            fprintf(stderr, "\nkill %d after %d ms came before the schema was committed\n", i, ms);
            CU_ASSERT(high < 0 && prev_runs == 0 && prev_sessions == 0);
            high = -1;
        } else if (high >= 0) { /* steps 0..high all ran, all ended: each has its row, its status, its tensor */
            char sql[512];
            snprintf(sql, sizeof sql,
                     "SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.label = '%s' "
                     "AND r.step <= %lld AND r.status IS NOT NULL",
                     label, (long long)high);
            CU_ASSERT_EQUAL(q_int(db, sql), high + 1);
            snprintf(sql, sizeof sql,
                     "SELECT count(*) FROM tensors t JOIN runs r ON r.id = t.run_id JOIN sessions s ON "
                     "s.id = r.session_id WHERE t.kind = 'watched' AND s.label = '%s' AND r.step <= %lld AND t.value IS NOT NULL",
                     label, (long long)high);
            CU_ASSERT_EQUAL(q_int(db, sql), high + 1);
            flushed_total += high + 1;
        }
        if (q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'") == 1) {
            CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM node_timings WHERE run_id NOT IN (SELECT id FROM runs)"),
                            0);
            CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM tensors WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
            /* what was committed stays: the counts only grow */
            int64_t runs = q_int(db, "SELECT count(*) FROM runs"), sessions = q_int(db, "SELECT count(*) FROM sessions");
            CU_ASSERT(runs >= prev_runs && sessions >= prev_sessions);
            prev_runs = runs;
            prev_sessions = sessions;
        }
        sqlite3_close(db);
        free(c.out);

        tide_error *err = tide_error_new();
        tide_store *s = tide_store_open(db_path, NULL, err);
        if (!s)
            fprintf(stderr, "\nreopen after kill %d: %s\n", i, tide_error_message(err));
        CU_ASSERT_PTR_NOT_NULL(s);
        CU_ASSERT_EQUAL(tide_store_flush(s, err), TIDE_OK);
        tide_store_close(s);
        tide_error_free(err);
    }
    fprintf(stderr, "\n10 kills (seed %u): %lld steps reported flushed, %lld runs, %lld sessions\n", seed,
            (long long)flushed_total, (long long)prev_runs, (long long)prev_sessions);
    /* the kills must have hit children that were writing, or the test proved little */
    CU_ASSERT(flushed_total > 0);
    CU_ASSERT(prev_sessions > 0);
    temp_db_remove();
}

static void test_two_processes(void)
{
    temp_db_new("tide-crash"); /* a new file: both children create the schema at once too */
    const char *labels[2] = {"two-A", "two-B"};
    child c[2];
    for (int i = 0; i < 2; i++)
        spawn(&c[i], labels[i], "10", "1");
    collect(c, 2, 30000);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    for (int i = 0; i < 2; i++) {
        int status = reap(&c[i]);
        long long runs = -1, dropped = -1;
        const char *done = strstr(output(&c[i]), "done ");
        if (done)
            sscanf(done, "done %lld %lld", &runs, &dropped);
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && done && !strstr(output(&c[i]), "error") &&
                  !strstr(output(&c[i]), "locked");
        if (!ok)
            fprintf(stderr, "\ncrash_writer %s said:\n%s\n", labels[i], output(&c[i]));
        CU_ASSERT(ok);
        CU_ASSERT(runs > 10);
        CU_ASSERT_EQUAL(dropped, 0);
        CU_ASSERT_EQUAL(count_for(db, "SELECT count(*) FROM sessions WHERE label = '%s'", labels[i]), 1);
        CU_ASSERT_EQUAL(count_for(db, "SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id "
                                      "WHERE s.label = '%s' AND r.status = 0",
                                  labels[i]),
                        runs);
        CU_ASSERT_EQUAL(count_for(db, "SELECT count(DISTINCT step) + 1000000 * max(step) FROM runs r JOIN "
                                      "sessions s ON s.id = r.session_id WHERE s.label = '%s'",
                                  labels[i]),
                        runs + 1000000 * (runs - 1)); /* steps 0 .. runs - 1, each once */
        CU_ASSERT_EQUAL(count_for(db, "SELECT count(*) FROM tensors t JOIN runs r ON r.id = t.run_id JOIN "
                                      "sessions s ON s.id = r.session_id WHERE t.kind = 'watched' AND s.label = '%s'",
                                  labels[i]),
                        runs);
        free(c[i].out);
    }
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(*) FROM runs WHERE session_id IS NULL OR status IS NULL"), 0);
    CU_ASSERT_EQUAL(q_int(db, "SELECT count(DISTINCT session_id) FROM runs"), 2);
    char *check = integrity(db);
    CU_ASSERT(check && strcmp(check, "ok") == 0);
    free(check);
    sqlite3_close(db);
    temp_db_remove();
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_kill_loop),
        TH_TEST(test_two_processes),
        TH_END,
    };
    return th_main("store crash", tests);
}
