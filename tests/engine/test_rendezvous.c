/* test_rendezvous.c — the rendezvous (engine/rendezvous.h) and the _Send/_Recv kernels: pairing in
 * both orders by reference (the very tensor, refcounts right), keys that differ in any one part,
 * duplicates, abort (waking waiting Recvs, also from another thread; later calls fail; racing with
 * sends and recvs), end_step and free releasing what is left, 8 threads pairing 80,000 values in
 * random order, the kernels paired inside one run on one device, and across two CPU devices through
 * the plan's partition pass. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_util.h"
#include "rendezvous.h"

#define DEV0 "/job:localhost/replica:0/task:0/device:cpu:0"
#define DEV1 "/job:localhost/replica:0/task:0/device:cpu:1"

/* What one Recv's callback saw. */
typedef struct got {
    atomic_int calls;
    tide_status status;
    tide_tensor *value;
    char message[256];
    pthread_t thread;
} got;

static void on_recv(void *arg, tide_status status, tide_tensor *value, const char *message)
{
    got *g = arg;
    g->status = status;
    g->value = value;
    snprintf(g->message, sizeof g->message, "%s", message ? message : "");
    g->thread = pthread_self();
    atomic_fetch_add(&g->calls, 1);
}

static atomic_int freed; /* tensors wrapped by counted() whose memory went */

static void count_free(void *data, size_t bytes, void *arg)
{
    TIDE_UNUSED(bytes);
    TIDE_UNUSED(arg);
    free(data);
    atomic_fetch_add(&freed, 1);
}

/* A float32 scalar over malloc'd memory whose deallocator counts in `freed`. */
static tide_tensor *counted(float v)
{
    float *d = malloc(sizeof *d);
    *d = v;
    tide_shape s = tide_shape_make(0, NULL);
    tide_tensor *t = tide_tensor_wrap(TIDE_FLOAT32, &s, d, sizeof *d, count_free, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t;
}

static int refs(tide_tensor *t) { return atomic_load(&t->refs); }

static tide_rendezvous_key key_of(const char *tensor, uint64_t step)
{
    return (tide_rendezvous_key){DEV0, DEV1, tensor, step, NULL, 0};
}

static void test_send_then_recv(void)
{
    tide_rendezvous *r = tide__rendezvous_new();
    int freed0 = atomic_load(&freed);
    tide_tensor *t = counted(1.5f);
    tide_rendezvous_key k = key_of("a:0", 1);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(refs(t), 2); /* the rendezvous holds one */
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 1);
    got g = {0};
    tide__rendezvous_recv(r, &k, on_recv, &g);
    CU_ASSERT_EQUAL(atomic_load(&g.calls), 1); /* at once: the value was there */
    CU_ASSERT_EQUAL(g.status, TIDE_OK);
    CU_ASSERT_PTR_EQUAL(g.value, t); /* the very tensor: no copy */
    CU_ASSERT_TRUE(pthread_equal(g.thread, pthread_self()));
    CU_ASSERT_EQUAL(refs(t), 2); /* the rendezvous's reference moved to the receiver */
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    tide_tensor_release(g.value);
    CU_ASSERT_EQUAL(refs(t), 1);
    tide__rendezvous_end_step(r, 1);
    tide_tensor_release(t);
    CU_ASSERT_EQUAL(atomic_load(&freed), freed0 + 1);
    tide__rendezvous_free(r);
}

static void test_recv_then_send(void)
{
    tide_rendezvous *r = tide__rendezvous_new();
    tide_tensor *t = counted(2.5f);
    tide_rendezvous_key k = key_of("b:1", 7);
    got g = {0};
    tide__rendezvous_recv(r, &k, on_recv, &g);
    CU_ASSERT_EQUAL(atomic_load(&g.calls), 0); /* waits, holding no thread */
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 1);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(atomic_load(&g.calls), 1); /* completed by the Send, on its thread */
    CU_ASSERT_EQUAL(g.status, TIDE_OK);
    CU_ASSERT_PTR_EQUAL(g.value, t);
    CU_ASSERT_EQUAL(refs(t), 2);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    tide_tensor_release(g.value);
    tide_tensor_release(t);
    tide__rendezvous_free(r);
}

/* A key differing from the sent one in any one part does not match (the frame and iteration of a loop
 * included: "" and NULL are the same, outside loops); end_step cancels what waits. */
static void test_keys_differ(void)
{
    enum { N = 7 };
    tide_rendezvous *r = tide__rendezvous_new();
    tide_tensor *t = counted(3), *u = counted(5);
    tide_rendezvous_key k = {DEV0, DEV1, "c:0", 3, NULL, 0};
    tide_rendezvous_key in_loop = {DEV0, DEV1, "c:0", 3, "while", 2}, same_root = {DEV0, DEV1, "c:0", 3, "", 0};
    tide_rendezvous_key other[N] = {{DEV1, DEV1, "c:0", 3, NULL, 0}, {DEV0, DEV0, "c:0", 3, NULL, 0},
                                    {DEV0, DEV1, "c:1", 3, NULL, 0}, {DEV0, DEV1, "c:0", 4, NULL, 0},
                                    {DEV0, DEV1, "c:0", 3, "while", 1}, {DEV0, DEV1, "c:0", 3, "whilf", 2},
                                    {DEV0, DEV1, "c:0", 3, "while:2/inner", 2}};
    got g[N] = {0}, exact = {0}, exact_loop = {0};
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &in_loop, u, NULL), TIDE_OK);
    for (int i = 0; i < N; i++)
        tide__rendezvous_recv(r, &other[i], on_recv, &g[i]);
    for (int i = 0; i < N; i++)
        CU_ASSERT_EQUAL(atomic_load(&g[i].calls), 0);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), N + 2);
    tide__rendezvous_recv(r, &same_root, on_recv, &exact);
    CU_ASSERT_EQUAL(atomic_load(&exact.calls), 1);
    CU_ASSERT_PTR_EQUAL(exact.value, t);
    tide_tensor_release(exact.value);
    tide__rendezvous_recv(r, &in_loop, on_recv, &exact_loop);
    CU_ASSERT_EQUAL(atomic_load(&exact_loop.calls), 1);
    CU_ASSERT_PTR_EQUAL(exact_loop.value, u);
    tide_tensor_release(exact_loop.value);
    tide__rendezvous_end_step(r, 3);
    tide__rendezvous_end_step(r, 4);
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(atomic_load(&g[i].calls), 1);
        CU_ASSERT_EQUAL(g[i].status, TIDE_CANCELLED);
        CU_ASSERT_PTR_NULL(g[i].value);
    }
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    tide_tensor_release(t);
    tide_tensor_release(u);
    tide__rendezvous_free(r);
}

static void test_duplicates(void)
{
    tide_rendezvous *r = tide__rendezvous_new();
    tide_tensor *t = counted(4);
    tide_error *err = tide_error_new();
    tide_rendezvous_key k = key_of("dup:0", 9);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, err), TIDE_ALREADY_EXISTS);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "tensor 'dup:0' from " DEV0 " to " DEV1));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "step 9 was already sent"));
    CU_ASSERT_EQUAL(refs(t), 2); /* the failed Send kept nothing */
    got first = {0}, second = {0};
    tide__rendezvous_recv(r, &k, on_recv, &first);
    CU_ASSERT_EQUAL(first.status, TIDE_OK);
    tide_tensor_release(first.value);
    /* Still caught after the transfer completed, on both sides. */
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, err), TIDE_ALREADY_EXISTS);
    tide__rendezvous_recv(r, &k, on_recv, &second);
    CU_ASSERT_EQUAL(atomic_load(&second.calls), 1);
    CU_ASSERT_EQUAL(second.status, TIDE_ALREADY_EXISTS);
    CU_ASSERT_PTR_NOT_NULL(strstr(second.message, "already asked for by another Recv"));
    /* Two Recvs waiting for one key: the second is refused at once. */
    tide_rendezvous_key k2 = key_of("dup:1", 9);
    got w1 = {0}, w2 = {0};
    tide__rendezvous_recv(r, &k2, on_recv, &w1);
    tide__rendezvous_recv(r, &k2, on_recv, &w2);
    CU_ASSERT_EQUAL(atomic_load(&w1.calls), 0);
    CU_ASSERT_EQUAL(w2.status, TIDE_ALREADY_EXISTS);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k2, t, err), TIDE_OK);
    CU_ASSERT_PTR_EQUAL(w1.value, t);
    tide_tensor_release(w1.value);
    /* A missing key part or value is an error, not a crash. */
    tide_rendezvous_key bad = {NULL, DEV1, "x:0", 9, NULL, 0};
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &bad, t, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k2, NULL, err), TIDE_INVALID_ARGUMENT);
    got b = {0};
    tide__rendezvous_recv(r, &bad, on_recv, &b);
    CU_ASSERT_EQUAL(b.status, TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    CU_ASSERT_EQUAL(refs(t), 1);
    tide_error_free(err);
    tide_tensor_release(t);
    tide__rendezvous_free(r);
}

static void test_abort(void)
{
    tide_rendezvous *r = tide__rendezvous_new();
    int freed0 = atomic_load(&freed);
    tide_tensor *unreceived = counted(5), *t = counted(6);
    got w[3] = {0}, other = {0};
    char names[3][8];
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof names[i], "w%d:0", i);
        tide_rendezvous_key k = key_of(names[i], 5);
        tide__rendezvous_recv(r, &k, on_recv, &w[i]);
    }
    tide_rendezvous_key kv = key_of("v:0", 5), ko = key_of("w0:0", 6);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &kv, unreceived, NULL), TIDE_OK);
    tide_tensor_release(unreceived); /* the rendezvous holds the only reference now */
    tide__rendezvous_recv(r, &ko, on_recv, &other);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 5);
    tide__rendezvous_abort(r, 5, TIDE_UNAVAILABLE, "node 'x' (Add): device cpu:1 went away");
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(atomic_load(&w[i].calls), 1);
        CU_ASSERT_EQUAL(w[i].status, TIDE_UNAVAILABLE);
        CU_ASSERT_PTR_NULL(w[i].value);
        CU_ASSERT_STRING_EQUAL(w[i].message, "node 'x' (Add): device cpu:1 went away");
    }
    CU_ASSERT_EQUAL(atomic_load(&freed), freed0 + 1); /* the unreceived value went at once */
    CU_ASSERT_EQUAL(atomic_load(&other.calls), 0);    /* another step is untouched */
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 1);
    /* The first abort wins; later Sends and Recvs of the step fail at once with it. */
    tide__rendezvous_abort(r, 5, TIDE_CANCELLED, "a second abort");
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &kv, t, err), TIDE_UNAVAILABLE);
    CU_ASSERT_STRING_EQUAL(tide_error_message(err), "node 'x' (Add): device cpu:1 went away");
    CU_ASSERT_EQUAL(refs(t), 1);
    got late = {0};
    tide_rendezvous_key kl = key_of("late:0", 5);
    tide__rendezvous_recv(r, &kl, on_recv, &late);
    CU_ASSERT_EQUAL(atomic_load(&late.calls), 1);
    CU_ASSERT_EQUAL(late.status, TIDE_UNAVAILABLE);
    CU_ASSERT_STRING_EQUAL(late.message, "node 'x' (Add): device cpu:1 went away");
    /* An abort of a step nobody used yet still fails its later calls. */
    tide__rendezvous_abort(r, 8, TIDE_DEADLINE_EXCEEDED, "the run exceeded its timeout");
    tide_rendezvous_key k8 = key_of("a:0", 8);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k8, t, err), TIDE_DEADLINE_EXCEEDED);
    /* end_step forgets the abort. */
    tide__rendezvous_end_step(r, 5);
    tide__rendezvous_end_step(r, 8);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &kv, t, err), TIDE_OK);
    tide__rendezvous_end_step(r, 5);
    tide__rendezvous_end_step(r, 6);
    CU_ASSERT_EQUAL(other.status, TIDE_CANCELLED);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    CU_ASSERT_EQUAL(refs(t), 1);
    tide_error_free(err);
    tide_tensor_release(t);
    tide__rendezvous_free(r);
}

typedef struct aborter {
    tide_rendezvous *r;
    uint64_t step;
    pthread_t self;
} aborter;

static void *abort_later(void *arg)
{
    aborter *a = arg;
    a->self = pthread_self();
    tide__rendezvous_abort(a->r, a->step, TIDE_ABORTED, "aborted from another thread");
    return NULL;
}

static void test_abort_from_another_thread(void)
{
    tide_rendezvous *r = tide__rendezvous_new();
    enum { N = 64 };
    got *w = calloc(N, sizeof *w);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d:0", i);
        tide_rendezvous_key k = key_of(name, 11);
        tide__rendezvous_recv(r, &k, on_recv, &w[i]);
    }
    aborter a = {r, 11, pthread_self()};
    pthread_t t;
    pthread_create(&t, NULL, abort_later, &a);
    pthread_join(t, NULL);
    int woken = 0, on_aborter = 0;
    for (int i = 0; i < N; i++) {
        woken += atomic_load(&w[i].calls) == 1 && w[i].status == TIDE_ABORTED &&
                 strcmp(w[i].message, "aborted from another thread") == 0;
        on_aborter += pthread_equal(w[i].thread, t) != 0;
    }
    CU_ASSERT_EQUAL(woken, N);
    CU_ASSERT_EQUAL(on_aborter, N); /* the callbacks ran on the aborting thread */
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    tide__rendezvous_end_step(r, 11);
    free(w);
    tide__rendezvous_free(r);
}

static void test_end_step_and_free_release(void)
{
    int freed0 = atomic_load(&freed);
    tide_rendezvous *r = tide__rendezvous_new();
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "e%d:0", i);
        tide_rendezvous_key k = key_of(name, 21);
        tide_tensor *t = counted((float)i);
        CU_ASSERT_EQUAL(tide__rendezvous_send(r, &k, t, NULL), TIDE_OK);
        tide_tensor_release(t);
    }
    CU_ASSERT_EQUAL(atomic_load(&freed), freed0);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 10);
    tide__rendezvous_end_step(r, 21);
    CU_ASSERT_EQUAL(atomic_load(&freed), freed0 + 10);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(r), 0);
    tide__rendezvous_end_step(r, 21); /* a step it does not know: nothing happens */
    /* free: values released, waiting Recvs completed with CANCELLED. */
    tide_rendezvous_key kv = key_of("kept:0", 22), kw = key_of("waits:0", 23);
    tide_tensor *t = counted(1);
    CU_ASSERT_EQUAL(tide__rendezvous_send(r, &kv, t, NULL), TIDE_OK);
    tide_tensor_release(t);
    got w = {0};
    tide__rendezvous_recv(r, &kw, on_recv, &w);
    tide__rendezvous_free(r);
    CU_ASSERT_EQUAL(atomic_load(&freed), freed0 + 11);
    CU_ASSERT_EQUAL(atomic_load(&w.calls), 1);
    CU_ASSERT_EQUAL(w.status, TIDE_CANCELLED);
    CU_ASSERT_PTR_NULL(w.value);
    tide__rendezvous_free(NULL);
}

/* ---------------------------------------------------------------- many threads */

#define THREADS 8
#define PAIRS_PER_THREAD 10000
#define PAIRS (THREADS * PAIRS_PER_THREAD)
#define STEPS 5

typedef struct pair_test {
    tide_rendezvous *r;
    tide_tensor **values;
    atomic_int *received;    /* per pair: Recv callbacks seen */
    atomic_int wrong;        /* callbacks with a wrong status or value */
    int *ops;                /* 2 * PAIRS: pair * 2 + (0 send, 1 recv), shuffled */
    atomic_int failed_sends;
} pair_test;

typedef struct pair_recv {
    pair_test *pt;
    int pair;
} pair_recv;

static void pair_key(int pair, char *name, size_t size, tide_rendezvous_key *k)
{
    snprintf(name, size, "node%d:%d", pair / 3, pair % 3);
    *k = (tide_rendezvous_key){pair % 2 ? DEV0 : DEV1, pair % 2 ? DEV1 : DEV0, name,
                               100 + (uint64_t)(pair % STEPS), NULL, 0};
}

static void on_pair(void *arg, tide_status status, tide_tensor *value, const char *message)
{
    TIDE_UNUSED(message);
    pair_recv *pr = arg;
    pair_test *pt = pr->pt;
    if (status != TIDE_OK || value != pt->values[pr->pair])
        atomic_fetch_add(&pt->wrong, 1);
    atomic_fetch_add(&pt->received[pr->pair], 1);
    tide_tensor_release(value);
    free(pr);
}

typedef struct worker {
    pair_test *pt;
    int begin, end;
} worker;

static void *pair_worker(void *arg)
{
    worker *w = arg;
    pair_test *pt = w->pt;
    for (int i = w->begin; i < w->end; i++) {
        int pair = pt->ops[i] / 2;
        char name[32];
        tide_rendezvous_key k;
        pair_key(pair, name, sizeof name, &k);
        if (pt->ops[i] % 2 == 0) {
            if (tide__rendezvous_send(pt->r, &k, pt->values[pair], NULL) != TIDE_OK)
                atomic_fetch_add(&pt->failed_sends, 1);
        } else {
            pair_recv *pr = malloc(sizeof *pr);
            *pr = (pair_recv){pt, pair};
            tide__rendezvous_recv(pt->r, &k, on_pair, pr);
        }
    }
    return NULL;
}

static void test_threads_random_order(void)
{
    pair_test pt = {.r = tide__rendezvous_new()};
    pt.values = malloc(sizeof *pt.values * PAIRS);
    pt.received = calloc(PAIRS, sizeof *pt.received);
    pt.ops = malloc(sizeof *pt.ops * 2 * PAIRS);
    CU_ASSERT_FATAL(pt.r && pt.values && pt.received && pt.ops);
    for (int i = 0; i < PAIRS; i++) {
        float v = (float)i;
        pt.values[i] = th_f32(0, NULL, &v);
    }
    for (int i = 0; i < 2 * PAIRS; i++)
        pt.ops[i] = i;
    for (int i = 2 * PAIRS - 1; i > 0; i--) { /* Fisher-Yates with the harness's fixed sequence */
        int j = (int)th_rand(0, i + 1);
        int x = pt.ops[i];
        pt.ops[i] = pt.ops[j];
        pt.ops[j] = x;
    }
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){&pt, i * 2 * PAIRS_PER_THREAD, (i + 1) * 2 * PAIRS_PER_THREAD};
        pthread_create(&t[i], NULL, pair_worker, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int once = 0, refs_back = 0;
    for (int i = 0; i < PAIRS; i++)
        once += atomic_load(&pt.received[i]) == 1;
    CU_ASSERT_EQUAL(once, PAIRS);
    CU_ASSERT_EQUAL(atomic_load(&pt.wrong), 0);
    CU_ASSERT_EQUAL(atomic_load(&pt.failed_sends), 0);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(pt.r), 0);
    for (int s = 0; s < STEPS; s++)
        tide__rendezvous_end_step(pt.r, 100 + (uint64_t)s);
    for (int i = 0; i < PAIRS; i++) {
        refs_back += refs(pt.values[i]) == 1;
        tide_tensor_release(pt.values[i]);
    }
    CU_ASSERT_EQUAL(refs_back, PAIRS);
    tide__rendezvous_free(pt.r);
    free(pt.values);
    free(pt.received);
    free(pt.ops);
}

/* Sends and Recvs of one step race with its abort: every Recv completes exactly once (with its value
 * or the abort's status), and nothing leaks (ASan) or races (TSan). */
#define RACE_PAIRS 4000
#define RACE_STEP 200

typedef struct race {
    tide_rendezvous *r;
    tide_tensor *values[RACE_PAIRS];
    atomic_int calls[RACE_PAIRS];
    atomic_int ok, aborted, wrong, recvs_issued;
    atomic_bool abort_done;
} race;

typedef struct race_recv {
    race *rc;
    int pair;
} race_recv;

static tide_rendezvous_key race_key(int pair, char *name, size_t size)
{
    snprintf(name, size, "r%d:0", pair);
    return key_of(name, RACE_STEP);
}

static void on_race(void *arg, tide_status status, tide_tensor *value, const char *message)
{
    race_recv *rr = arg;
    race *rc = rr->rc;
    if (status == TIDE_OK && value == rc->values[rr->pair])
        atomic_fetch_add(&rc->ok, 1);
    else if (status == TIDE_ABORTED && !value && strcmp(message, "raced") == 0)
        atomic_fetch_add(&rc->aborted, 1);
    else
        atomic_fetch_add(&rc->wrong, 1);
    atomic_fetch_add(&rc->calls[rr->pair], 1);
    tide_tensor_release(value);
    free(rr);
}

static void *race_sender(void *arg)
{
    race *rc = arg;
    for (int i = 0; i < RACE_PAIRS; i++) {
        char name[32];
        tide_rendezvous_key k = race_key(i, name, sizeof name);
        tide__rendezvous_send(rc->r, &k, rc->values[i], NULL); /* fails once aborted */
    }
    return NULL;
}

static void *race_receiver(void *arg)
{
    race *rc = arg;
    for (int i = 0; i < RACE_PAIRS; i++) {
        char name[32];
        tide_rendezvous_key k = race_key(i, name, sizeof name);
        race_recv *rr = malloc(sizeof *rr);
        *rr = (race_recv){rc, i};
        tide__rendezvous_recv(rc->r, &k, on_race, rr);
        if (atomic_fetch_add(&rc->recvs_issued, 1) + 1 == RACE_PAIRS / 2)
            while (!atomic_load(&rc->abort_done)) /* the second half surely comes after the abort */
                sched_yield();
    }
    return NULL;
}

static void *race_aborter(void *arg)
{
    race *rc = arg;
    while (atomic_load(&rc->recvs_issued) < RACE_PAIRS / 2)
        sched_yield();
    tide__rendezvous_abort(rc->r, RACE_STEP, TIDE_ABORTED, "raced");
    atomic_store(&rc->abort_done, true);
    return NULL;
}

static void test_abort_races(void)
{
    race *rc = calloc(1, sizeof *rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
    rc->r = tide__rendezvous_new();
    for (int i = 0; i < RACE_PAIRS; i++) {
        float v = (float)i;
        rc->values[i] = th_f32(0, NULL, &v);
    }
    pthread_t t[3];
    void *(*fns[3])(void *) = {race_sender, race_receiver, race_aborter};
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, fns[i], rc);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    int once = 0, refs_back = 0;
    for (int i = 0; i < RACE_PAIRS; i++)
        once += atomic_load(&rc->calls[i]) == 1;
    CU_ASSERT_EQUAL(once, RACE_PAIRS);
    CU_ASSERT_EQUAL(atomic_load(&rc->wrong), 0);
    CU_ASSERT_EQUAL(atomic_load(&rc->ok) + atomic_load(&rc->aborted), RACE_PAIRS);
    CU_ASSERT(atomic_load(&rc->aborted) >= RACE_PAIRS / 2); /* at least the Recvs issued after it */
    CU_ASSERT_EQUAL(tide__rendezvous_pending(rc->r), 0);         /* the abort released what was left */
    for (int i = 0; i < RACE_PAIRS; i++)
        refs_back += refs(rc->values[i]) == 1;
    CU_ASSERT_EQUAL(refs_back, RACE_PAIRS);
    tide__rendezvous_end_step(rc->r, RACE_STEP);
    for (int i = 0; i < RACE_PAIRS; i++)
        tide_tensor_release(rc->values[i]);
    tide__rendezvous_free(rc->r);
    free(rc);
}

/* ---------------------------------------------------------------- the kernels in one run */

static tide_node *transfer_node(tide_graph *g, const char *op, const char *name, tide_node *input,
                                const char *tensor)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    tide_attrs *a = tide_node_builder_attrs(b);
    if (input)
        tide_node_builder_add_input(b, (tide_output){input, 0});
    else
        tide_attrs_set_type(a, "T", TIDE_FLOAT32);
    tide_attrs_set_string(a, "tensor_name", tensor);
    tide_attrs_set_string(a, "send_device", DEV0);
    tide_attrs_set_string(a, "recv_device", DEV0);
    return gu_finish(b);
}

static void test_kernels_pair_in_one_run(void)
{
    tide_error *err = tide_error_new();
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.num_cpu_devices = 1;
    tide_engine *e = tide_engine_new(&o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    tide_graph *g = tide_graph_new();
    float v[3] = {1, 2, 3};
    tide_tensor *value = th_f32(1, TH_DIMS(3), v);
    tide_node *c = gu_const(g, "c", tide_tensor_retain(value));
    tide_node *send = transfer_node(g, "_Send", "send", c, "c:0");
    tide_node *recv = transfer_node(g, "_Recv", "recv", NULL, "c:0");
    tide_node *after = gu_op(g, "Identity", "after", 1, &recv);
    tide_session *s = tide_session_new(e, g, NULL, err);
    for (int run = 0; run < 20; run++) { /* a fresh run id each time: no ALREADY_EXISTS */
        tide_output o1 = {after, 0};
        tide_tensor *out = NULL;
        CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &o1, 1, &out, &send, 1, NULL, err), TIDE_OK);
        CU_ASSERT_PTR_EQUAL(out, value); /* Const -> _Send -> _Recv -> Identity: the very tensor */
        tide_tensor_release(out);
    }
    /* Two _Sends of one key in one run: the second fails and names itself. */
    tide_node *send2 = transfer_node(g, "_Send", "send2", c, "c:0");
    tide_node *targets[2] = {send, send2};
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, targets, 2, NULL, err),
                    TIDE_ALREADY_EXISTS);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "(_Send): tensor 'c:0' from " DEV0));
    /* A _Recv whose value is not what the plan expected fails (a partitioning bug, not a crash). */
    tide_node_builder *nb = tide_node_builder_new(g, "_Recv", "recv_wrong_shape");
    tide_attrs_set_type(tide_node_builder_attrs(nb), "T", TIDE_FLOAT32);
    tide_attrs_set_string(tide_node_builder_attrs(nb), "tensor_name", "c:0");
    tide_attrs_set_string(tide_node_builder_attrs(nb), "send_device", DEV0);
    tide_attrs_set_string(tide_node_builder_attrs(nb), "recv_device", DEV0);
    tide_shape two = tide_shape_make(1, TH_DIMS(2));
    tide_attrs_set_shape(tide_node_builder_attrs(nb), "shape", &two);
    tide_node *wrong = gu_finish(nb);
    tide_output ow = {wrong, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &ow, 1, &out, &send, 1, NULL, err), TIDE_INTERNAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'recv_wrong_shape' (_Recv): received a "
                                  "float32 tensor of shape [3] where float32 [2] was expected"));
    CU_ASSERT_PTR_NULL(out);
    /* Eagerly they fail with a message, not a crash. */
    tide_tensor *outs[1] = {NULL};
    int got = 0;
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "T", TIDE_FLOAT32);
    tide_attrs_set_string(a, "tensor_name", "c:0");
    tide_attrs_set_string(a, "send_device", DEV0);
    tide_attrs_set_string(a, "recv_device", DEV0);
    CU_ASSERT_EQUAL(tide_engine_run_op(e, "_Recv", NULL, 0, a, outs, 1, &got, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "not eagerly"));
    CU_ASSERT_EQUAL(tide_engine_run_op(e, "_Send", &value, 1, a, outs, 1, &got, err),
                    TIDE_FAILED_PRECONDITION);
    tide_attrs_free(a);
    tide_session_free(s);
    tide_graph_free(g);
    tide_tensor_release(value);
    tide_engine_free(e);
    tide_error_free(err);
}

/* Through the plan's partition pass: two CPU devices, a tensor made on cpu:0 and used on cpu:1
 * arrives by reference; a kernel failing on cpu:0 wakes the _Recv waiting on cpu:1 (no hang). */
static tide_node *on_device(tide_graph *g, const char *op, const char *name, const char *device,
                            tide_node *in)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    if (in)
        tide_node_builder_add_input(b, (tide_output){in, 0});
    if (strcmp(op, "Placeholder") == 0)
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
    tide_node_builder_set_device(b, device);
    return gu_finish(b);
}

static void test_across_devices(void)
{
    tide_error *err = tide_error_new();
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.num_cpu_devices = 2;
    tide_engine *e = tide_engine_new(&o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    tide_graph *g = tide_graph_new();
    float v[2] = {7, 8};
    tide_tensor *value = th_f32(1, TH_DIMS(2), v);
    tide_graph_push_device(g, "/cpu:0");
    tide_node *c = gu_const(g, "c", tide_tensor_retain(value));
    tide_graph_pop_device(g);
    tide_node *far = on_device(g, "Identity", "far", "/cpu:1", c);
    tide_node *p = on_device(g, "Placeholder", "p", "/cpu:0", NULL);
    tide_node *uses_p = on_device(g, "Neg", "uses_p", "/cpu:1", p);
    tide_session *s = tide_session_new(e, g, NULL, err);
    for (int run = 0; run < 50; run++) {
        tide_tensor *out = gu_fetch(s, far);
        CU_ASSERT_PTR_EQUAL(out, value); /* cpu:0 -> cpu:1 without a copy */
        tide_tensor_release(out);
    }
    tide_output o1 = {uses_p, 0};
    tide_tensor *out = NULL;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &o1, 1, &out, NULL, 0, NULL, err),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "node 'p' (Placeholder): you must feed"));
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(tide__rendezvous_pending(e->rendezvous), 0); /* every step was ended */
    tide_session_free(s);
    tide_graph_free(g);
    tide_tensor_release(value);
    tide_engine_free(e);
    tide_error_free(err);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_send_then_recv), TH_TEST(test_recv_then_send), TH_TEST(test_keys_differ),
        TH_TEST(test_duplicates), TH_TEST(test_abort), TH_TEST(test_abort_from_another_thread),
        TH_TEST(test_end_step_and_free_release), TH_TEST(test_threads_random_order),
        TH_TEST(test_abort_races), TH_TEST(test_kernels_pair_in_one_run),
        TH_TEST(test_across_devices), TH_END};
    return th_main("rendezvous", tests);
}
