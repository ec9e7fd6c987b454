/* bench_sendrecv.c — the in-process rendezvous's cost per tensor: 1 MiB float32 tensors handed from
 * /cpu:0 to /cpu:1 through tide__rendezvous_send/recv by a sender thread and a receiver thread;
 * 100,000 transfers per repeat in 1,000 steps of 100 (each step ended with end_step once its values
 * arrived, as the executor does), median of 5 repeats. Nothing is copied (checked: every Recv gets
 * the very tensor sent), so the size does not matter; what is measured is the lock, the hash of the
 * key, the entry, the callback and end_step. Three orders within a step:
 *   sendrecv.inprocess_us_per_tensor    both threads at once, racing (either side may come first)
 *   sendrecv.recv_first_us_per_tensor   the step's Recvs wait first, then the Sends complete them
 *   sendrecv.send_first_us_per_tensor   the step's values wait first, then the Recvs pick them up
 * The goal (multi-device issue): under 5 us per tensor. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "bench_util.h"
#include "rendezvous.h"

#define STEPS 1000
#define PER_STEP 100
#define TRANSFERS (STEPS * PER_STEP)
#define REPEATS 5
#define TENSORS 16                      /* distinct 1 MiB tensors, sent round robin */
#define ELEMENTS (1024 * 1024 / 4)

static const char *const SRC = "/job:localhost/replica:0/task:0/device:cpu:0";
static const char *const DST = "/job:localhost/replica:0/task:0/device:cpu:1";

typedef enum order { RACING = 0, RECV_FIRST = 1, SEND_FIRST = 2 } order;

typedef struct bench {
    tide_rendezvous *r;
    tide_tensor *tensors[TENSORS];
    char (*names)[24];                  /* "layer<i>:0" per transfer within a step */
    int *slot;                          /* per transfer: its index (the Recv callback's arg) */
    uint64_t first_step;
    order mode;
    atomic_int received, wrong, send_failures;
    atomic_int ready;                   /* steps whose first side is done (RECV_FIRST, SEND_FIRST) */
    atomic_int go;
} bench;

static bench the_bench; /* the callbacks' arg is only the transfer's index */

static void on_value(void *arg, tide_status status, tide_tensor *value, const char *message)
{
    (void)message;
    bench *b = &the_bench;
    int i = *(int *)arg;
    if (status != TIDE_OK || value != b->tensors[i % TENSORS])
        atomic_fetch_add(&b->wrong, 1);
    tide_tensor_release(value);
    atomic_fetch_add_explicit(&b->received, 1, memory_order_release);
}

static tide_rendezvous_key key(const bench *b, int step, int i)
{
    return (tide_rendezvous_key){SRC, DST, b->names[i], b->first_step + (uint64_t)step, NULL, 0};
}

static void wait_for(atomic_int *counter, int value)
{
    while (atomic_load_explicit(counter, memory_order_acquire) < value)
        sched_yield();
}

static void *sender(void *arg)
{
    bench *b = arg;
    wait_for(&b->go, 1);
    for (int s = 0; s < STEPS; s++) {
        if (b->mode == RECV_FIRST)
            wait_for(&b->ready, s + 1);
        for (int i = 0; i < PER_STEP; i++) {
            tide_rendezvous_key k = key(b, s, i);
            int t = s * PER_STEP + i;
            if (tide__rendezvous_send(b->r, &k, b->tensors[t % TENSORS], NULL) != TIDE_OK)
                atomic_fetch_add(&b->send_failures, 1);
        }
        if (b->mode == SEND_FIRST)
            atomic_fetch_add_explicit(&b->ready, 1, memory_order_release);
    }
    return NULL;
}

/* Asks for every value of each step, then ends the step once its values arrived (the last callbacks
 * may run on the sender's thread); a step is ended while the next one is under way. */
static void *receiver(void *arg)
{
    bench *b = arg;
    wait_for(&b->go, 1);
    for (int s = 0; s < STEPS; s++) {
        if (b->mode == SEND_FIRST)
            wait_for(&b->ready, s + 1);
        for (int i = 0; i < PER_STEP; i++) {
            tide_rendezvous_key k = key(b, s, i);
            tide__rendezvous_recv(b->r, &k, on_value, &b->slot[s * PER_STEP + i]);
        }
        if (b->mode == RECV_FIRST)
            atomic_fetch_add_explicit(&b->ready, 1, memory_order_release);
        if (s > 0) {
            wait_for(&b->received, s * PER_STEP);
            tide__rendezvous_end_step(b->r, b->first_step + (uint64_t)s - 1);
        }
    }
    wait_for(&b->received, TRANSFERS);
    tide__rendezvous_end_step(b->r, b->first_step + STEPS - 1);
    return NULL;
}

/* Seconds for TRANSFERS transfers in STEPS fresh steps. */
static double one_repeat(bench *b, order mode)
{
    b->mode = mode;
    atomic_store(&b->received, 0);
    atomic_store(&b->ready, 0);
    atomic_store(&b->go, 0);
    pthread_t s, r;
    pthread_create(&s, NULL, sender, b);
    pthread_create(&r, NULL, receiver, b);
    double t0 = bench_now();
    atomic_store_explicit(&b->go, 1, memory_order_release);
    pthread_join(s, NULL);
    pthread_join(r, NULL);
    double dt = bench_now() - t0;
    b->first_step += STEPS;
    return dt;
}

int main(void)
{
    bench *b = &the_bench;
    b->r = tide__rendezvous_new();
    b->names = malloc(sizeof *b->names * PER_STEP);
    b->slot = malloc(sizeof *b->slot * TRANSFERS);
    tide_shape shape = tide_shape_make(1, (const int64_t[]){ELEMENTS});
    bool ok = b->r && b->names && b->slot;
    for (int i = 0; i < TENSORS; i++)
        ok = (b->tensors[i] = tide_tensor_new(TIDE_FLOAT32, &shape, NULL)) && ok;
    if (!ok) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int i = 0; i < PER_STEP; i++)
        snprintf(b->names[i], sizeof b->names[i], "layer%d:0", i);
    for (int i = 0; i < TRANSFERS; i++)
        b->slot[i] = i;
    b->first_step = 1;
    static const char *const metric[3] = {"sendrecv.inprocess_us_per_tensor",
                                          "sendrecv.recv_first_us_per_tensor",
                                          "sendrecv.send_first_us_per_tensor"};
    for (int m = 0; m < 3; m++) {
        double t[REPEATS];
        one_repeat(b, (order)m); /* warm-up: the allocator's pools */
        for (int rep = 0; rep < REPEATS; rep++)
            t[rep] = one_repeat(b, (order)m);
        if (atomic_load(&b->wrong) || atomic_load(&b->send_failures) || tide__rendezvous_pending(b->r)) {
            fprintf(stderr, "%s: %d wrong values, %d failed sends, %d left pending\n", metric[m],
                    atomic_load(&b->wrong), atomic_load(&b->send_failures), tide__rendezvous_pending(b->r));
            return 1;
        }
        char extra[200];
        snprintf(extra, sizeof extra,
                 "\"tensor_bytes\": %d, \"transfers\": %d, \"per_step\": %d, \"repeats\": %d, "
                 "\"threads\": 2, \"copied\": false",
                 ELEMENTS * 4, TRANSFERS, PER_STEP, REPEATS);
        bench_emit(metric[m], bench_median(t, REPEATS) / TRANSFERS * 1e6, "us", extra);
    }
    for (int i = 0; i < TENSORS; i++)
        tide_tensor_release(b->tensors[i]);
    tide__rendezvous_free(b->r);
    free(b->names);
    free(b->slot);
    return 0;
}
