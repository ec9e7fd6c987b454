/* engine.c — the engine: its options, its devices (enumerated by device_registry.c), its thread pool,
 * its containers of variables and the observers that watch its runs. Sessions run over an engine;
 * several may run at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "internal.h"
#include "placement.h"
#include "rendezvous.h"

void tide__engine_free_containers(tide_engine *e);

void tide_engine_options_init(tide_engine_options *opts)
{
    memset(opts, 0, sizeof *opts);
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 1 || x > 1024 ? fallback : (int)x;
}

/* A 0/1 switch from the environment: *on is left alone when the variable is unset or empty. */
static bool env_switch(const char *name, bool *on, tide_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return true;
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s='%s': expected 0 or 1", name, v);
        return false;
    }
    *on = v[0] == '1';
    return true;
}

/* A count 0..64 from the environment (*n left alone when unset or empty); false with err when malformed. */
static bool env_count(const char *name, int *n, tide_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return true;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 64) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s='%s': expected a count from 0 to 64", name, v);
        return false;
    }
    *n = (int)x;
    return true;
}

/* Bytes from the environment: a number with an optional K, M or G suffix (powers of 1024). */
static bool env_bytes(const char *name, int64_t *bytes, tide_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return true;
    char *end;
    double x = strtod(v, &end);
    double unit = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' || *end == 'm' ? 1048576.0
                : *end == 'G' || *end == 'g' ? 1073741824.0 : 1.0;
    if (unit > 1)
        end++;
    if (*end || end == v || !(x >= 0) || x * unit > 9e18) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s='%s': expected bytes, e.g. 1048576, 512M or 2G", name, v);
        return false;
    }
    *bytes = (int64_t)(x * unit);
    return true;
}

tide_engine *tide_engine_new(const tide_engine_options *opts, tide_error *err)
{
    if (tide__registry_ready(err) != TIDE_OK)
        return NULL;
    tide_engine_options o;
    tide_engine_options_init(&o);
    if (opts)
        o = *opts;
    if (o.num_threads < 0 || o.num_threads > 1024 || o.num_cpu_devices < 0 || o.num_cpu_devices > 64 ||
        o.num_sim_devices < 0 || o.num_sim_devices > 64 || o.device_memory_limit < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "engine options out of range: num_threads=%d (0..1024), num_cpu_devices=%d (0..64), "
                       "num_sim_devices=%d (0..64), device_memory_limit=%lld (>= 0)", o.num_threads,
                       o.num_cpu_devices, o.num_sim_devices, (long long)o.device_memory_limit);
        return NULL;
    }
    if (o.num_threads == 0)
        o.num_threads = env_int("TIDE_THREADS", (int)sysconf(_SC_NPROCESSORS_ONLN));
    if (o.num_cpu_devices == 0)
        o.num_cpu_devices = env_int("TIDE_CPU_DEVICES", 1);
    if (o.num_sim_devices == 0 && !env_count("TIDE_SIM_DEVICES", &o.num_sim_devices, err))
        return NULL;
    if (o.device_memory_limit == 0 && !env_bytes("TIDE_DEVICE_MEMORY_LIMIT", &o.device_memory_limit, err))
        return NULL;
    const char *strategy = getenv("TIDE_PLACEMENT");
    if (o.placement == TIDE_PLACEMENT_GREEDY && strategy && strategy[0]) {
        static const char *const names[] = {"greedy", "naive", "round_robin"};
        int found = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(strategy, names[i]) == 0)
                found = i;
        if (found < 0) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT,
                           "TIDE_PLACEMENT='%s': expected greedy, naive or round_robin", strategy);
            return NULL;
        }
        o.placement = (tide_placement_kind)found;
    }
    if ((int)o.placement < 0 || o.placement > TIDE_PLACEMENT_ROUND_ROBIN) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "engine option placement=%d: expected 0 (greedy), 1 (naive) "
                       "or 2 (round robin)", (int)o.placement);
        return NULL;
    }
    bool cse = !o.no_cse, alap = !o.no_alap, compress = o.compress_transfers, fusion = !o.no_fusion;
    bool capture = !o.no_capture; /* on unless no_capture or $TIDE_CAPTURE=0 */
    if ((cse && !env_switch("TIDE_CSE", &cse, err)) || (alap && !env_switch("TIDE_ALAP", &alap, err)) ||
        (fusion && !env_switch("TIDE_FUSION", &fusion, err)) || (capture && !env_switch("TIDE_CAPTURE", &capture, err)) ||
        (!compress && !env_switch("TIDE_COMPRESS_TRANSFERS", &compress, err)))
        return NULL;
    tide_engine *e = calloc(1, sizeof *e);
    if (!e) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&e->containers_lock, NULL);
    pthread_mutex_init(&e->observers_lock, NULL);
    e->next_observer_id = 1;
    e->pool = tide__pool_new(o.num_threads > 0 ? o.num_threads : 1);
    e->rendezvous = tide__rendezvous_new();
    e->cost_table = tide__cost_table_new();
    e->placement = o.placement;
    e->cse = cse;
    e->alap = alap;
    e->fusion = fusion;
    e->capture = capture;
    e->compress_transfers = compress;
    if (!e->pool || !e->rendezvous || !e->cost_table) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot start %d executor threads", o.num_threads);
        tide_engine_free(e);
        return NULL;
    }
    if (tide__devices_open(e, &o, err) != TIDE_OK) {
        tide_engine_free(e);
        return NULL;
    }
    int ncpu = e->num_cpu_devices;
    for (int i = 0; ncpu > 1 && i < ncpu; i++) {
        /* Several CPU devices: each gets its own share of the threads (at least one), so that a step's
         * time per device means something and placement matters. (Accelerators run their kernels on
         * their own stream threads; the executor's side of their work runs on the engine's pool.) */
        int share = o.num_threads / ncpu + (i < o.num_threads % ncpu);
        e->devices[i].pool = tide__pool_new(share > 0 ? share : 1);
        if (!e->devices[i].pool) {
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot start the threads of device %d", i);
            tide_engine_free(e);
            return NULL;
        }
    }
    return e;
}

void tide_engine_free(tide_engine *e)
{
    if (!e)
        return;
    tide__watcher_free(e);
    tide__pool_free(e->pool);
    for (int i = 0; e->devices && i < e->num_devices; i++)
        tide__pool_free(e->devices[i].pool);
    tide__rendezvous_free(e->rendezvous);
    tide__cost_table_free(e->cost_table);
    tide__engine_free_containers(e); /* the variables' tensors, before their devices close */
    tide__devices_close(e);
    tide__observers_free(e);
    pthread_mutex_destroy(&e->containers_lock);
    pthread_mutex_destroy(&e->observers_lock);
    free(e);
}

bool tide_engine_device_memory(const tide_engine *e, int i, int64_t *in_use, int64_t *peak)
{
    if (!e || i < 0 || i >= e->num_devices)
        return false;
    if (in_use)
        *in_use = atomic_load(&e->devices[i].bytes_in_use);
    if (peak)
        *peak = atomic_load(&e->devices[i].peak_bytes);
    return true;
}

void tide_engine_reset_peak_memory(tide_engine *e)
{
    for (int i = 0; e && i < e->num_devices; i++)
        atomic_store(&e->devices[i].peak_bytes, atomic_load(&e->devices[i].bytes_in_use));
}

int tide_engine_num_threads(const tide_engine *e) { return tide__pool_size(e->pool); }
int tide_engine_num_devices(const tide_engine *e) { return e->num_devices; }

const char *tide_engine_device_name(const tide_engine *e, int i)
{
    return i >= 0 && i < e->num_devices ? e->devices[i].name : NULL;
}
