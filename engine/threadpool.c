/* threadpool.c — the engine's one pool of worker threads: a FIFO of tasks under a mutex, and a
 * parallel-for that splits a range into chunks the caller helps with. The executor and kernels share
 * it, so OpenBLAS and tide never fight over the cores (OpenBLAS itself is told to use the caller's
 * thread only when kernels call it from pool threads). */
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "internal.h"

typedef struct task {
    void (*fn)(void *arg);
    void *arg;
} task;

struct tide_threadpool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    task *queue;
    size_t head, count, cap;
    int num_threads;
    atomic_int idle;                /* threads waiting for work; read without the lock as a hint */
    atomic_int queued;              /* count, readable without the lock (by spinning workers) */
    int64_t spin_ns;                /* how long an idle worker polls before it sleeps ($TIDE_SPIN_US) */
    bool stopping;
    pthread_t *threads;
};

static __thread int thread_index = -1;
static __thread tide_threadpool *current_pool; /* the pool of the calling thread, NULL for others */

int tide__pool_thread_index(void) { return thread_index; }
tide_threadpool *tide__pool_current(void) { return current_pool; }
int tide__pool_size(const tide_threadpool *p) { return p->num_threads; }

int tide__pool_idle(const tide_threadpool *p)
{
    return atomic_load_explicit(&p->idle, memory_order_relaxed);
}

typedef struct start_arg {
    tide_threadpool *pool;
    int index;
} start_arg;

static void *worker(void *arg)
{
    start_arg *sa = arg;
    tide_threadpool *p = sa->pool;
    thread_index = sa->index;
    current_pool = p;
    free(sa);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (!p->count && !p->stopping && p->spin_ns > 0) { /* a short spin before sleeping */
            pthread_mutex_unlock(&p->lock);
            int64_t until = tide__now_ns() + p->spin_ns;
            while (!atomic_load_explicit(&p->queued, memory_order_relaxed) && tide__now_ns() < until)
                sched_yield();
            pthread_mutex_lock(&p->lock);
        }
        while (!p->count && !p->stopping) {
            atomic_fetch_add_explicit(&p->idle, 1, memory_order_relaxed);
            pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
        }
        if (!p->count && p->stopping)
            break;
        task t = p->queue[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        if (p->spin_ns > 0)
            atomic_store_explicit(&p->queued, (int)p->count, memory_order_relaxed);
        pthread_mutex_unlock(&p->lock);
        t.fn(t.arg);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

tide_threadpool *tide__pool_new(int threads)
{
    tide_threadpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->cap = 1024;
    /* Opt-in: an idle worker may poll for new work up to $TIDE_SPIN_US microseconds (0..10000) before it
     * sleeps, so that handing work to another device's threads costs ~4 us instead of a wake-up (7-57 us
     * here; docs/devices.md). Off by default: it burns CPU that other processes might use. */
    const char *spin = getenv("TIDE_SPIN_US");
    double us = spin && *spin ? atof(spin) : 0;
    p->spin_ns = us > 0 ? (int64_t)((us < 10000 ? us : 10000) * 1e3) : 0;
    p->queue = malloc(p->cap * sizeof *p->queue);
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (!p->queue || !p->threads) {
        tide__pool_free(p);
        return NULL;
    }
    /* Workers block asynchronous signals (they inherit the creator's mask): a Ctrl-C is for the
     * application's thread, which may be waiting in read() for it to arrive. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < threads; i++) {
        start_arg *sa = malloc(sizeof *sa);
        if (!sa)
            break;
        sa->pool = p;
        sa->index = i;
        if (pthread_create(&p->threads[i], NULL, worker, sa) != 0) {
            free(sa);
            break;
        }
        p->num_threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p->num_threads == 0) {
        tide__pool_free(p);
        return NULL;
    }
    return p;
}

void tide__pool_free(tide_threadpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->num_threads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p->queue);
    free(p->threads);
    free(p);
}

bool tide__pool_run_pending(tide_threadpool *p)
{
    pthread_mutex_lock(&p->lock);
    if (!p->count) {
        pthread_mutex_unlock(&p->lock);
        return false;
    }
    task t = p->queue[p->head];
    p->head = (p->head + 1) % p->cap;
    p->count--;
    pthread_mutex_unlock(&p->lock);
    t.fn(t.arg);
    return true;
}

void tide__pool_submit(tide_threadpool *p, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&p->lock);
    if (p->count == p->cap) {
        size_t cap = p->cap * 2;
        task *q = malloc(cap * sizeof *q);
        if (!q) { /* cannot queue: run it here rather than lose it */
            pthread_mutex_unlock(&p->lock);
            fn(arg);
            return;
        }
        for (size_t i = 0; i < p->count; i++)
            q[i] = p->queue[(p->head + i) % p->cap];
        free(p->queue);
        p->queue = q;
        p->head = 0;
        p->cap = cap;
    }
    p->queue[(p->head + p->count) % p->cap] = (task){fn, arg};
    p->count++;
    if (p->spin_ns > 0)
        atomic_store_explicit(&p->queued, (int)p->count, memory_order_relaxed);
    if (atomic_load_explicit(&p->idle, memory_order_relaxed))
        pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

/* ---------------------------------------------------------------- parallel for */

/* Heap-allocated and reference counted: a helper task that starts after the caller has finished
 * every chunk itself just drops its reference, so the caller never waits for queued helpers (no
 * deadlock when every pool thread is inside a parallel_for of its own). */
typedef struct pfor {
    void (*fn)(int64_t, int64_t, void *);
    void *arg;
    int64_t n, chunk;
    atomic_llong next, done_items;
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t done;
} pfor;

static void pfor_unref(pfor *pf)
{
    if (atomic_fetch_sub(&pf->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&pf->lock);
    pthread_cond_destroy(&pf->done);
    free(pf);
}

static void pfor_drain(pfor *pf)
{
    for (;;) {
        int64_t b = atomic_fetch_add(&pf->next, pf->chunk);
        if (b >= pf->n)
            return;
        int64_t e = b + pf->chunk < pf->n ? b + pf->chunk : pf->n;
        pf->fn(b, e, pf->arg);
        if (atomic_fetch_add(&pf->done_items, e - b) + (e - b) == pf->n) {
            pthread_mutex_lock(&pf->lock);
            pthread_cond_broadcast(&pf->done);
            pthread_mutex_unlock(&pf->lock);
        }
    }
}

static void pfor_helper(void *arg)
{
    pfor *pf = arg;
    pfor_drain(pf);
    pfor_unref(pf);
}

void tide__pool_parallel_for(tide_threadpool *p, int64_t n, int64_t min_chunk,
                             void (*fn)(int64_t begin, int64_t end, void *arg), void *arg)
{
    int workers = p ? p->num_threads : 0;
    int64_t chunks = min_chunk > 0 ? n / min_chunk : n;
    pfor *pf = workers > 1 && chunks >= 2 ? calloc(1, sizeof *pf) : NULL;
    if (!pf) {
        fn(0, n, arg);
        return;
    }
    int parts = workers + 1; /* the caller helps */
    if (chunks < parts)
        parts = (int)chunks;
    pf->fn = fn;
    pf->arg = arg;
    pf->n = n;
    pf->chunk = (n + parts * 4 - 1) / (parts * 4);
    if (pf->chunk < min_chunk)
        pf->chunk = min_chunk;
    atomic_init(&pf->next, 0);
    atomic_init(&pf->done_items, 0);
    atomic_init(&pf->refs, parts);
    pthread_mutex_init(&pf->lock, NULL);
    pthread_cond_init(&pf->done, NULL);
    for (int i = 0; i < parts - 1; i++)
        tide__pool_submit(p, pfor_helper, pf);
    pfor_drain(pf);
    pthread_mutex_lock(&pf->lock);
    while (atomic_load(&pf->done_items) < n)
        pthread_cond_wait(&pf->done, &pf->lock);
    pthread_mutex_unlock(&pf->lock);
    pfor_unref(pf);
}
