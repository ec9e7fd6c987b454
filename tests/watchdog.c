/* watchdog.c — ends a test process whose run is hung, not one whose machine is slow (harness.h,
 * th_watch_start). A thread of its own looks at the process every 100 ms while a run is watched:
 *
 *  - hung: for hang_s seconds the other threads of the process used (next to) no CPU time (2 ms at
 *    most), and at every look none was ready to run or in an uninterruptible wait (/proc/self/task/N/
 *    stat state R or D). Nothing of the process ran, and nothing of it can wake the rest: a deadlock. On a loaded machine a run's threads wait
 *    for a CPU (state R) and then use some: that is progress, however slow.
 *  - spinning: the run used more than cpu_s seconds of CPU (a livelock uses CPU and never ends).
 *  - The watchdog's own sleeps are checked too: when one lasted far longer than asked (the process was
 *    stopped, or the machine gave it no CPU), what it saw says nothing about the run, and the quiet
 *    time starts again.
 *
 * It prints what runs (the caller's text), the time and CPU time since the run began and the state
 * of every thread (with the kernel function it waits in, where the system tells it), then ends the
 * process with status 3. A run that waits on something outside the process (a timer, a file, a
 * socket) is not for this watchdog: sleeping threads look hung to it. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

enum { TICK_MS = 100 };
/* CPU seconds the other threads may show over a quiet stretch: what the watchdog's own clock reads
 * add to the difference (microseconds), far below what a run waiting for a CPU gets once it runs. */
#define QUIET_CPU_S 0.002

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static bool started, armed;
static pthread_t watcher;
static char what[512];           /* the run watched */
static double hang_limit_s = 10, cpu_limit_s = 60;
static double run_wall0, run_cpu0; /* when the run began: wall and the other threads' CPU seconds */

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double clock_seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds of every thread of the process but the watchdog. */
static double others_cpu(void)
{
    clockid_t own;
    double watcher_cpu = pthread_getcpuclockid(watcher, &own) == 0 ? clock_seconds(own) : 0;
    return clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - watcher_cpu;
}

/* The state letter of thread tid (R running or ready, S sleeping, D uninterruptible...), '?' if unknown. */
static char thread_state(const char *tid)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return close && close[1] == ' ' && close[2] ? close[2] : '?';
}

/* Whether a thread other than the watchdog is ready to run or in an uninterruptible wait. */
static bool others_ready(void)
{
    char self[32];
    snprintf(self, sizeof self, "%ld", (long)syscall(SYS_gettid));
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return true; /* cannot tell: never call that a hang */
    bool ready = false;
    for (struct dirent *e; !ready && (e = readdir(d));)
        if (e->d_name[0] != '.' && strcmp(e->d_name, self) != 0) {
            char s = thread_state(e->d_name);
            ready = s == 'R' || s == 'D' || s == '?';
        }
    closedir(d);
    return ready;
}

/* Prints why the watchdog fired, what ran and every thread's state, and ends the process. */
static void fire(const char *why, double now)
{
    fprintf(stderr, "\nwatchdog: %s: %s (%.1f s since the run began, %.2f s of CPU)\n", why, what, now - run_wall0,
            others_cpu() - run_cpu0);
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], wchan[128] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/wchan", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(wchan, 1, sizeof wchan - 1, f) : 0;
        wchan[n] = 0;
        if (f)
            fclose(f);
        fprintf(stderr, "  thread %s: state %c%s%s\n", e->d_name, thread_state(e->d_name), n && strcmp(wchan, "0") ?
                ", waits in " : "", n && strcmp(wchan, "0") ? wchan : "");
    }
    if (d)
        closedir(d);
    fflush(stderr);
    _exit(3);
}

static void *watch(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!armed)
            pthread_cond_wait(&changed, &lock);
        double last_tick = wall_seconds(), quiet_since = last_tick, quiet_cpu = others_cpu();
        while (armed) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += TICK_MS * 1000000L;
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&changed, &lock, &until);
            if (!armed)
                break;
            double now = wall_seconds(), cpu = others_cpu();
            bool overslept = now - last_tick > 3 * TICK_MS / 1000.0;
            last_tick = now;
            if (overslept || cpu - quiet_cpu > QUIET_CPU_S || others_ready()) {
                quiet_since = now;
                quiet_cpu = cpu;
            } else if (now - quiet_since >= hang_limit_s) {
                fire("hung (no thread of the process ran or was ready to run for that long)", now);
            }
            if (cpu - run_cpu0 > cpu_limit_s)
                fire("spinning (the run used more CPU time than it may)", now);
        }
    }
    return NULL;
}

void th_watch_limits(double hang_s, double cpu_s)
{
    pthread_mutex_lock(&lock);
    hang_limit_s = hang_s;
    cpu_limit_s = cpu_s;
    pthread_mutex_unlock(&lock);
}

void th_watch_start(const char *fmt, ...)
{
    pthread_mutex_lock(&lock);
    if (!started) {
        sigset_t all, old; /* the watchdog takes no signal meant for the test */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        started = pthread_create(&watcher, NULL, watch, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!started) {
            fprintf(stderr, "watchdog: cannot start its thread\n");
            abort();
        }
        pthread_detach(watcher);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    run_wall0 = wall_seconds();
    run_cpu0 = others_cpu();
    armed = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

void th_watch_stop(void)
{
    pthread_mutex_lock(&lock);
    armed = false;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}
