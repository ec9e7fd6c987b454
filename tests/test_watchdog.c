/* test_watchdog.c — the harness's watchdog (tests/watchdog.c, th_watch_start): a deadlock and a spin
 * end the process with status 3 and a message naming the run; a run that keeps working for longer than
 * the hang limit, and one whose process gets no CPU at all for longer than it (stopped, as by a machine
 * too busy to run it), are left alone. Each case runs in a child process with short limits. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs child() in a child process whose stderr goes to out; meanwhile(pid), when given, runs in the
 * parent. Returns the child's exit status, or -1 when it did not end within 60 s (it is killed). */
static int in_child(void (*child)(void), void (*meanwhile)(pid_t), char *out, size_t size)
{
    int fds[2];
    CU_ASSERT_FATAL(pipe(fds) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        child();
        _exit(0);
    }
    close(fds[1]);
    if (meanwhile)
        meanwhile(pid);
    size_t len = 0;
    double deadline = now_s() + 60;
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 1000) > 0) {
            ssize_t n = read(fds[0], out + len, size - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
        } else if (now_s() > deadline) {
            kill(pid, SIGKILL);
            break;
        }
    }
    out[len] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *take_held(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held); /* never given back: the main thread holds it and waits for this one */
    return NULL;
}

static void deadlock_child(void)
{
    th_watch_limits(1, 60);
    th_watch_start("a deadlock of %d threads", 2);
    pthread_mutex_lock(&held);
    pthread_t t;
    pthread_create(&t, NULL, take_held, NULL);
    pthread_join(t, NULL);
}

static void spin_child(void)
{
    th_watch_limits(30, 0.5);
    th_watch_start("a spin");
    for (volatile unsigned long i = 0;; i++)
        ;
}

/* Two threads hand a counter to each other until `until` (work that keeps going, however slowly). */
typedef struct ping_pong {
    pthread_mutex_t lock;
    pthread_cond_t turn;
    long count;
    double until;
} ping_pong;

typedef struct player {
    ping_pong *game;
    long parity; /* this player moves when count has it */
} player;

static void *play(void *arg)
{
    const player *me = arg;
    ping_pong *p = me->game;
    pthread_mutex_lock(&p->lock);
    while (now_s() < p->until) {
        if ((p->count & 1) == me->parity) {
            p->count++;
            pthread_cond_broadcast(&p->turn);
        } else {
            pthread_cond_wait(&p->turn, &p->lock);
        }
    }
    pthread_cond_broadcast(&p->turn); /* the other one may wait for a move that never comes */
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void ping_pong_for(double seconds)
{
    ping_pong p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, now_s() + seconds};
    player even = {&p, 0}, odd = {&p, 1};
    pthread_t t;
    pthread_create(&t, NULL, play, &even);
    play(&odd);
    pthread_join(t, NULL);
}

static void slow_child(void)
{
    th_watch_limits(0.5, 60);
    th_watch_start("slow work");
    ping_pong_for(2.0);
    th_watch_stop();
}

static void stopped_child(void)
{
    th_watch_limits(0.5, 60);
    th_watch_start("work stopped for a while");
    ping_pong_for(3.0);
    th_watch_stop();
}

/* The machine gives the child no CPU for 1.5 s, three times the hang limit. */
static void stop_a_while(pid_t pid)
{
    nanosleep(&(struct timespec){0, 500000000L}, NULL);
    kill(pid, SIGSTOP);
    nanosleep(&(struct timespec){1, 500000000L}, NULL);
    kill(pid, SIGCONT);
}

static void test_deadlock_is_caught(void)
{
    char out[8192];
    double t0 = now_s();
    int status = in_child(deadlock_child, NULL, out, sizeof out);
    CU_ASSERT_EQUAL(status, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "watchdog: hung"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "a deadlock of 2 threads"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "state S")); /* the threads' states are listed */
    CU_ASSERT(now_s() - t0 < 30);
    if (status != 3)
        fprintf(stderr, "\n  child's output: %s\n", out);
}

static void test_spin_is_caught(void)
{
    char out[8192];
    int status = in_child(spin_child, NULL, out, sizeof out);
    CU_ASSERT_EQUAL(status, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "watchdog: spinning"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "a spin"));
}

static void test_slow_work_is_left_alone(void)
{
    char out[8192];
    CU_ASSERT_EQUAL(in_child(slow_child, NULL, out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_EQUAL(in_child(stopped_child, stop_a_while, out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_deadlock_is_caught), TH_TEST(test_spin_is_caught),
                                    TH_TEST(test_slow_work_is_left_alone), TH_END};
    return th_main("watchdog", tests);
}
