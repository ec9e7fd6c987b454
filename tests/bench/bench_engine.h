/* bench_engine.h — the engine a benchmark measures with, made one way everywhere: num_threads executor
 * threads (0: one per core), num_cpu_devices virtual CPUs (0: one) and num_sim_devices simulated
 * accelerators. When it cannot be made, the engine's message is printed and the benchmark exits 1 (a
 * figure measured without its engine would be no figure). Header-only. */
#ifndef TIDE_BENCH_ENGINE_H
#define TIDE_BENCH_ENGINE_H

#include <stdio.h>
#include <stdlib.h>

#include "tide.h"

static inline tide_engine *bench_engine_new(int num_threads, int num_cpu_devices, int num_sim_devices)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = num_threads;
    o.num_cpu_devices = num_cpu_devices;
    o.num_sim_devices = num_sim_devices;
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(&o, err);
    if (!e) {
        fprintf(stderr, "the benchmark's engine: %s\n", err ? tide_error_message(err) : "out of memory");
        exit(1);
    }
    tide_error_free(err);
    return e;
}

#endif
