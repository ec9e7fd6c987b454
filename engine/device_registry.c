/* device_registry.c — the device types a process knows and the devices an engine gets (ggml's
 * backend registry is the model). The CPU and the simulated accelerator are built in; other types
 * (the CUDA device, kernels/cuda/) register themselves from load-time constructors. When an engine
 * starts it asks each type how many devices it has (the CPU: tide_engine_options.num_cpu_devices; the
 * simulated device: num_sim_devices; a GPU type: the GPUs present, 0 on a machine without one, which
 * is not an error) and opens them in a fixed order: the CPU's first (/cpu:0 is the host, where feeds
 * come from and fetches go), then the other types by name, each numbered from 0 (/gpu:0, /sim:0).
 * Opening a device makes its caching allocator (types whose memory the host cannot read), its four
 * streams and the event copies wait on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_TYPES 8

static struct {
    pthread_mutex_t lock;
    const tide_device_ops *types[MAX_TYPES];
    int count;
    char error[160];
} registry = {.lock = PTHREAD_MUTEX_INITIALIZER};

void tide_device_type_register(const tide_device_ops *ops)
{
    pthread_mutex_lock(&registry.lock);
    bool duplicate = false;
    for (int i = 0; i < registry.count; i++)
        duplicate |= strcmp(registry.types[i]->type, ops->type) == 0;
    if (duplicate || registry.count == MAX_TYPES || !ops->allocate || !ops->count) {
        if (!registry.error[0])
            snprintf(registry.error, sizeof registry.error, "device type '%s' %s", ops->type,
                     duplicate ? "registered twice" : registry.count == MAX_TYPES ? "is one too many"
                                                                                : "lacks allocate or count");
    } else {
        registry.types[registry.count++] = ops;
    }
    pthread_mutex_unlock(&registry.lock);
}

static int cmp_types(const void *a, const void *b)
{
    const tide_device_ops *x = *(const tide_device_ops *const *)a, *y = *(const tide_device_ops *const *)b;
    bool xc = strcmp(x->type, "cpu") == 0, yc = strcmp(y->type, "cpu") == 0;
    return xc != yc ? (xc ? -1 : 1) : strcmp(x->type, y->type);
}

/* The known types in enumeration order (the CPU first, then by name); n of them. */
static tide_status known_types(const tide_device_ops **out, int *n, tide_error *err)
{
    pthread_mutex_lock(&registry.lock);
    out[0] = &tide__cpu_device_ops;
    out[1] = &tide__sim_device_ops;
    *n = 2;
    for (int i = 0; i < registry.count && *n < MAX_TYPES + 2; i++)
        out[(*n)++] = registry.types[i];
    tide_status st = TIDE_OK;
    for (int i = 2; i < *n; i++)
        if (strcmp(out[i]->type, "cpu") == 0 || strcmp(out[i]->type, "sim") == 0)
            snprintf(registry.error, sizeof registry.error, "device type '%s' is built in", out[i]->type);
    if (registry.error[0])
        st = tide_error_set(err, TIDE_INTERNAL, "device registry: %s", registry.error);
    pthread_mutex_unlock(&registry.lock);
    qsort(out, (size_t)*n, sizeof *out, cmp_types);
    return st;
}

/* Streams, the copies' event and the allocator of device d; its type's open first. */
static tide_status open_device(tide_device *d, const tide_engine_options *opts, tide_error *err)
{
    const tide_buffer_type *memory = d->ops->buffer_types[0];
    d->host_visible = memory->host_visible;
    d->memory_limit = d->host_visible ? 0 : opts->device_memory_limit;
    pthread_mutex_init(&d->event_lock, NULL);
    if (!d->host_visible && !(d->allocator = tide__allocator_new(d, memory, d->memory_limit)))
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory opening %s", d->name);
    if (d->ops->open) {
        tide_status st = d->ops->open(d, err);
        if (st != TIDE_OK)
            return st;
    }
    d->opened = true;
    for (int r = 0; d->ops->stream_new && r < 4; r++)
        if (!(d->streams[r] = tide_stream_new(d, err)))
            return tide_error_code(err);
    if (d->ops->event_new && !(d->compute_done = tide_event_new(d, err)))
        return tide_error_code(err);
    return TIDE_OK;
}

static void close_device(tide_device *d)
{
    if (d->ops->synchronize && d->opened)
        d->ops->synchronize(d, NULL);
    tide_event_free(d->compute_done);
    for (int r = 0; r < 4; r++)
        tide_stream_free(d->streams[r]);
    tide__allocator_close(d->allocator);
    if (d->ops->close && d->opened)
        d->ops->close(d);
    pthread_mutex_destroy(&d->event_lock);
}

tide_status tide__devices_open(tide_engine *e, const tide_engine_options *opts, tide_error *err)
{
    const tide_device_ops *types[MAX_TYPES + 2];
    int num_types, counts[MAX_TYPES + 2], total = 0;
    tide_status st = known_types(types, &num_types, err);
    for (int t = 0; st == TIDE_OK && t < num_types; t++) {
        counts[t] = types[t]->count(opts);
        if (counts[t] < 0 || counts[t] > 64)
            counts[t] = 0;
        total += counts[t];
    }
    if (st != TIDE_OK)
        return st;
    e->devices = calloc((size_t)total, sizeof *e->devices);
    if (!e->devices)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int t = 0; t < num_types && st == TIDE_OK; t++)
        for (int k = 0; k < counts[t] && st == TIDE_OK; k++) {
            tide_device *d = &e->devices[e->num_devices];
            d->ops = types[t];
            d->index = e->num_devices++;
            d->ordinal = k;
            snprintf(d->type, sizeof d->type, "%s", types[t]->type);
            snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:%s:%d", d->type, k);
            tide_device_spec_parse(d->name, &d->spec, NULL);
            st = open_device(d, opts, err);
            if (st != TIDE_OK)
                tide__error_prefix(err, "opening %s", d->name);
        }
    e->num_cpu_devices = counts[0];
    return st;
}

void tide__devices_close(tide_engine *e)
{
    for (int i = e->num_devices - 1; e->devices && i >= 0; i--)
        close_device(&e->devices[i]);
    free(e->devices);
    e->devices = NULL;
    e->num_devices = 0;
}

/* ---------------------------------------------------------------- the engine's devices */

bool tide_engine_device_memory_stats(const tide_engine *e, int i, tide_device_memory_stats *out)
{
    if (!e || !out || i < 0 || i >= e->num_devices)
        return false;
    memset(out, 0, sizeof *out);
    const tide_device *d = &e->devices[i];
    if (d->allocator)
        tide__allocator_stats(d->allocator, out);
    out->in_use = atomic_load(&d->bytes_in_use);
    out->peak = atomic_load(&d->peak_bytes);
    return true;
}

int64_t tide_engine_device_host_waits(const tide_engine *e, int i)
{
    return e && i >= 0 && i < e->num_devices ? tide_device_host_waits(&e->devices[i]) : 0;
}

void tide_engine_empty_cache(tide_engine *e)
{
    for (int i = 0; e && i < e->num_devices; i++)
        tide__allocator_empty_cache(e->devices[i].allocator);
}

const char *tide_engine_device_type(const tide_engine *e, int i)
{
    return e && i >= 0 && i < e->num_devices ? e->devices[i].type : NULL;
}

bool tide_engine_device_host_visible(const tide_engine *e, int i)
{
    return e && i >= 0 && i < e->num_devices && e->devices[i].host_visible;
}
