/* bench_util.h — timing helpers for the benchmarks: a monotonic clock, medians, and the one-line JSON
 * results every benchmark prints ({"name": ..., "value": ..., "unit": ..., ...}). Header-only. */
#ifndef TIDE_BENCH_UTIL_H
#define TIDE_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts xs in place and returns the median. */
static inline double bench_median(double *xs, int n)
{
    qsort(xs, (size_t)n, sizeof *xs, bench_cmp);
    return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

static inline void bench_emit(const char *name, double value, const char *unit, const char *extra)
{
    printf("{\"name\": \"%s\", \"value\": %.4g, \"unit\": \"%s\"%s%s}\n", name, value, unit,
           extra && *extra ? ", " : "", extra ? extra : "");
    fflush(stdout);
}

#endif
