/* bench_fma_peak.c — the CPU's float32 FMA peak, the ceiling every convolution figure is read
 * against. A loop of 12 independent vfmadd231ps chains (FMA latency 4 x 2 pipes needs >= 8 in flight)
 * with 256-bit (AVX2) and 512-bit (AVX-512) registers, on one thread and on two at once, and the clock
 * the core runs at meanwhile, measured as a chain of dependent integer adds (1 cycle each; perf's
 * cycle counter is not available in this VM). Every run is timed by its threads' own CPU time
 * (CLOCK_THREAD_CPUTIME_ID; with two threads the slower one's), so time spent descheduled on a shared
 * machine does not count, and each figure is the best of several short runs, in GFLOP/s with a
 * multiply-add counted as 2. Prints fma_peak.{avx2,avx512}.{1,2}threads.gflops, fma_peak.clock_ghz and
 * fma_peak.{avx2,avx512}.flop_per_cycle (per core: 32 means two 256-bit FMA pipes, 64 two 512-bit
 * ones). On a CPU without AVX2 or AVX-512 those lines say skipped. x86-64 only. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bench_util.h"

#define ITERS 2000000L /* per run: 24M (ymm) / 24M (zmm) FMAs, ~10-20 ms */
#define RUNS 25

#if defined(__x86_64__) && defined(__GNUC__)
#define FMA12(R)                                                                                 \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "0\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "1\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "2\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "3\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "4\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "5\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "6\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "7\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "8\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "9\n\t"                                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "10\n\t"                                            \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "11\n\t"

__attribute__((target("avx2,fma"))) static void fma_loop_ymm(long iters)
{
    __asm__ volatile("vxorps %%ymm12, %%ymm12, %%ymm12\n\t"
                     "vxorps %%ymm13, %%ymm13, %%ymm13\n\t"
                     "1:\n\t" FMA12("ymm") "dec %0\n\t"
                     "jnz 1b\n\t"
                     "vzeroupper\n\t"
                     : "+r"(iters)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "cc");
}

__attribute__((target("avx512f"))) static void fma_loop_zmm(long iters)
{
    __asm__ volatile("vxorps %%zmm12, %%zmm12, %%zmm12\n\t"
                     "vxorps %%zmm13, %%zmm13, %%zmm13\n\t"
                     "1:\n\t" FMA12("zmm") "dec %0\n\t"
                     "jnz 1b\n\t"
                     "vzeroupper\n\t"
                     : "+r"(iters)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "cc");
}

/* 32 dependent adds per iteration: 32 cycles (the loop's own dec/jnz run beside them; with only 8
 * adds per iteration this Zen 5 ran the chain at half the rate, so the body is long). */
#define ADD8 "add $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\t" \
             "add $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\t"
static void add_chain(long iters)
{
    uint64_t x = 0;
    __asm__ volatile("1:\n\t" ADD8 ADD8 ADD8 ADD8 "dec %0\n\tjnz 1b\n\t" : "+r"(iters), "+r"(x) : : "cc");
}

typedef struct worker {
    void (*loop)(long);
    long iters;
    pthread_barrier_t *barrier;
    double seconds; /* the thread's CPU time for the loop */
} worker;

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->barrier);
    double t0 = thread_cpu_now();
    w->loop(w->iters);
    w->seconds = thread_cpu_now() - t0;
    return NULL;
}

/* Best CPU seconds of RUNS runs of loop(iters) on `threads` threads at once (the slower thread's). */
static double best_seconds(void (*loop)(long), long iters, int threads)
{
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, (unsigned)threads);
        pthread_t other;
        worker w[2] = {{loop, iters, &barrier, 0}, {loop, iters, &barrier, 0}};
        if (threads == 2)
            pthread_create(&other, NULL, worker_main, &w[1]);
        worker_main(&w[0]);
        if (threads == 2)
            pthread_join(other, NULL);
        double t = threads == 2 && w[1].seconds > w[0].seconds ? w[1].seconds : w[0].seconds;
        pthread_barrier_destroy(&barrier);
        if (t < best)
            best = t;
    }
    return best;
}

int main(void)
{
    __builtin_cpu_init();
    const double ghz = 32.0 * (double)(ITERS / 8) / best_seconds(add_chain, ITERS / 8, 1) * 1e-9;
    char extra[200];
    snprintf(extra, sizeof extra, "\"method\": \"dependent integer adds, thread CPU time, best of %d\"", RUNS);
    bench_emit("fma_peak.clock_ghz", ghz, "GHz", extra);
    const struct {
        const char *isa;
        bool supported;
        void (*loop)(long);
        int lanes;
    } isas[] = {{"avx2", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), fma_loop_ymm, 8},
                {"avx512", __builtin_cpu_supports("avx512f"), fma_loop_zmm, 16}};
    for (int i = 0; i < 2; i++) {
        char name[80];
        if (!isas[i].supported) {
            snprintf(name, sizeof name, "fma_peak.%s.1threads.gflops", isas[i].isa);
            bench_emit(name, 0, "GFLOP/s", "\"skipped\": \"the CPU lacks it\"");
            continue;
        }
        const double flops = 2.0 * 12 * isas[i].lanes * (double)ITERS;
        double per_core = 0;
        for (int threads = 1; threads <= 2; threads++) {
            double gflops = flops * threads / best_seconds(isas[i].loop, ITERS, threads) * 1e-9;
            snprintf(name, sizeof name, "fma_peak.%s.%dthreads.gflops", isas[i].isa, threads);
            snprintf(extra, sizeof extra, "\"accumulators\": 12, \"best_of\": %d", RUNS);
            bench_emit(name, gflops, "GFLOP/s", extra);
            if (threads == 1)
                per_core = gflops;
        }
        snprintf(name, sizeof name, "fma_peak.%s.flop_per_cycle", isas[i].isa);
        snprintf(extra, sizeof extra, "\"clock_ghz\": %.2f", ghz);
        bench_emit(name, per_core / ghz, "FLOP/cycle/core", extra);
    }
    return 0;
}
#else
int main(void)
{
    bench_emit("fma_peak.avx2.1threads.gflops", 0, "GFLOP/s", "\"skipped\": \"x86-64 only\"");
    return 0;
}
#endif
