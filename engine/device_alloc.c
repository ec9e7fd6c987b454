/* device_alloc.c — the caching allocator of one accelerator device's memory (tide_device.h). Raw
 * memory comes from the device's buffer type (malloc for the simulated device, cudaMalloc for a GPU),
 * which is slow and, on a GPU, synchronising; so freed blocks are kept by size class and handed to
 * the next allocation of the same class, as PyTorch's CUDA caching allocator does. Sizes are rounded
 * to classes: multiples of 256 bytes, and from 64 KiB up multiples of 1/8 of the largest power of
 * two not above the request (at most 1/8 wasted), so that a training step's tensors find the blocks
 * the previous step freed.
 *
 * Accounting: `reserved` is every byte taken from the device (blocks in use plus cached ones), and
 * `cached` the free blocks kept. The tensors' own bytes (what tide_engine_device_memory reports) are
 * accounted by the device (tensor.c). A limit (tide_engine_options.device_memory_limit) caps
 * `reserved`: an allocation that would pass it first gives the cache back to the device, then fails
 * with RESOURCE_EXHAUSTED naming the device, the request and the figures.
 *
 * Blocks freed while work queued on another stream may still read them would be a hazard on a GPU;
 * tide frees a block only when the last tensor over it is released, which the executor does after
 * the kernels that read it completed, and copies hold their source until they ran.
 *
 * Invariants (under the lock): 0 <= cached <= reserved <= peak_reserved; cached is the sum of the
 * free lists' class sizes; reserved <= limit when there is one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SMALL_ALIGN 256
#define CLASS_STEP_FROM ((size_t)64 << 10)

typedef struct bin {
    size_t size;                /* the class */
    int count, cap;
    void **blocks;
} bin;

struct tide_caching_allocator {
    pthread_mutex_t lock;
    tide_device *device;
    const tide_buffer_type *type;
    int64_t limit;
    bin *bins;                  /* sorted by size */
    int num_bins, cap_bins;
    int64_t reserved, peak_reserved, cached;
    int64_t allocations, cache_hits, failures;
};

/* The class of a request: what is really taken from the device and cached. */
static size_t size_class(size_t bytes)
{
    size_t rounded = (bytes + SMALL_ALIGN - 1) / SMALL_ALIGN * SMALL_ALIGN;
    if (rounded == 0)
        rounded = SMALL_ALIGN;
    if (rounded < CLASS_STEP_FROM)
        return rounded;
    size_t p = (size_t)1 << (63 - __builtin_clzll((unsigned long long)rounded));
    size_t step = p / 8;
    return (rounded + step - 1) / step * step;
}

struct tide_caching_allocator *tide__allocator_new(tide_device *d, const tide_buffer_type *bt, int64_t limit)
{
    struct tide_caching_allocator *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    pthread_mutex_init(&a->lock, NULL);
    a->device = d;
    a->type = bt;
    a->limit = limit > 0 ? limit : 0;
    return a;
}

/* The bin of class `size`, made when missing (NULL when out of memory). Lock held. */
static bin *bin_of(struct tide_caching_allocator *a, size_t size, bool make)
{
    int lo = 0, hi = a->num_bins;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a->bins[mid].size < size)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < a->num_bins && a->bins[lo].size == size)
        return &a->bins[lo];
    if (!make)
        return NULL;
    if (a->num_bins == a->cap_bins) {
        int cap = a->cap_bins ? 2 * a->cap_bins : 16;
        bin *grown = realloc(a->bins, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        a->bins = grown;
        a->cap_bins = cap;
    }
    memmove(a->bins + lo + 1, a->bins + lo, sizeof *a->bins * (size_t)(a->num_bins - lo));
    a->bins[lo] = (bin){.size = size};
    a->num_bins++;
    return &a->bins[lo];
}

/* Gives every cached block back to the device. Lock held. */
static void release_cache(struct tide_caching_allocator *a)
{
    for (int i = 0; i < a->num_bins; i++) {
        bin *b = &a->bins[i];
        for (int k = 0; k < b->count; k++)
            a->type->free(a->device, b->blocks[k], b->size);
        a->reserved -= (int64_t)b->size * b->count;
        a->cached -= (int64_t)b->size * b->count;
        b->count = 0;
    }
}

static void format_bytes(char *buf, size_t size, int64_t bytes)
{
    if (bytes >= (int64_t)1 << 30)
        snprintf(buf, size, "%.2f GiB", (double)bytes / (double)((int64_t)1 << 30));
    else if (bytes >= (int64_t)1 << 20)
        snprintf(buf, size, "%.2f MiB", (double)bytes / (double)(1 << 20));
    else if (bytes >= 1 << 10)
        snprintf(buf, size, "%.1f KiB", (double)bytes / 1024.0);
    else
        snprintf(buf, size, "%lld bytes", (long long)bytes);
}

/* The out-of-memory message (lock held). */
static void out_of_memory(struct tide_caching_allocator *a, size_t bytes, bool over_limit, tide_error *err)
{
    char want[32], reserved[32], limit[32], in_use[32], name[64];
    format_bytes(want, sizeof want, (int64_t)bytes);
    format_bytes(reserved, sizeof reserved, a->reserved);
    format_bytes(limit, sizeof limit, a->limit);
    format_bytes(in_use, sizeof in_use, atomic_load(&a->device->bytes_in_use));
    tide_device_short_name(a->device->name, name, sizeof name);
    if (over_limit)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,
                       "out of memory on %s: allocating %s would pass its limit of %s (%s held by tensors, %s "
                       "reserved; tide_engine_options.device_memory_limit, $TIDE_DEVICE_MEMORY_LIMIT)",
                       name, want, limit, in_use, reserved);
    else
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,
                       "out of memory on %s: the device has no %s free (%s held by tensors, %s reserved)", name,
                       want, in_use, reserved);
}

void *tide__allocator_alloc(struct tide_caching_allocator *a, size_t bytes, tide_error *err)
{
    size_t size = size_class(bytes);
    pthread_mutex_lock(&a->lock);
    a->allocations++;
    bin *b = bin_of(a, size, false);
    if (b && b->count > 0) {
        void *p = b->blocks[--b->count];
        a->cached -= (int64_t)size;
        a->cache_hits++;
        pthread_mutex_unlock(&a->lock);
        return p;
    }
    bool over = a->limit > 0 && a->reserved + (int64_t)size > a->limit;
    if (over) {
        release_cache(a);
        over = a->reserved + (int64_t)size > a->limit;
    }
    void *p = over ? NULL : a->type->alloc(a->device, size);
    if (!p && !over && a->cached > 0) { /* the device is full: give the cache back and try once more */
        release_cache(a);
        p = a->type->alloc(a->device, size);
    }
    if (!p) {
        a->failures++;
        out_of_memory(a, bytes, over, err);
        pthread_mutex_unlock(&a->lock);
        return NULL;
    }
    a->reserved += (int64_t)size;
    if (a->reserved > a->peak_reserved)
        a->peak_reserved = a->reserved;
    pthread_mutex_unlock(&a->lock);
    return p;
}

void tide__allocator_free(struct tide_caching_allocator *a, void *p, size_t bytes)
{
    if (!p)
        return;
    size_t size = size_class(bytes);
    pthread_mutex_lock(&a->lock);
    bin *b = bin_of(a, size, true);
    if (b && b->count == b->cap) {
        int cap = b->cap ? 2 * b->cap : 4;
        void **grown = realloc(b->blocks, sizeof *grown * (size_t)cap);
        if (grown) {
            b->blocks = grown;
            b->cap = cap;
        }
    }
    if (b && b->count < b->cap) {
        b->blocks[b->count++] = p;
        a->cached += (int64_t)size;
    } else { /* no room to cache it: back to the device */
        a->type->free(a->device, p, size);
        a->reserved -= (int64_t)size;
    }
    pthread_mutex_unlock(&a->lock);
}

void tide__allocator_empty_cache(struct tide_caching_allocator *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    release_cache(a);
    pthread_mutex_unlock(&a->lock);
}

void tide__allocator_stats(struct tide_caching_allocator *a, tide_device_memory_stats *out)
{
    pthread_mutex_lock(&a->lock);
    out->reserved = a->reserved;
    out->peak_reserved = a->peak_reserved;
    out->cached = a->cached;
    out->limit = a->limit;
    out->allocations = a->allocations;
    out->cache_hits = a->cache_hits;
    out->failures = a->failures;
    pthread_mutex_unlock(&a->lock);
}

void tide__allocator_close(struct tide_caching_allocator *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    release_cache(a);
    bool in_use = a->reserved > 0;
    pthread_mutex_unlock(&a->lock);
    if (in_use) /* tensors of this device outlive the engine (a misuse, docs/devices.md): keep the allocator */
        return;
    for (int i = 0; i < a->num_bins; i++)
        free(a->bins[i].blocks);
    free(a->bins);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* ---------------------------------------------------------------- tensors in device memory */

tide_tensor *tide_device_tensor_alloc(tide_device *d, tide_dtype dt, const tide_shape *shape, tide_error *err)
{
    size_t esize = tide_dtype_size(dt);
    int64_t n = tide_shape_num_elements(shape);
    if (!esize || !d->allocator || n < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a tensor in the memory of %s needs a dtype and a fully defined "
                       "shape", d->name);
        return NULL;
    }
    if (n > 0 && (uint64_t)n > SIZE_MAX / 2 / esize) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "a %s tensor of %lld elements is too large", tide_dtype_name(dt),
                       (long long)n);
        return NULL;
    }
    size_t bytes = (size_t)n * esize;
    void *data = tide__allocator_alloc(d->allocator, bytes, err);
    if (!data) {
        char s[TIDE_SHAPE_STR_MAX];
        tide__error_prefix(err, "a %s tensor %s", tide_dtype_name(dt), tide_shape_format(shape, s, sizeof s));
        return NULL;
    }
    return tide__tensor_over_device_memory(d, d->ops->buffer_types[0], data, bytes, dt, shape, err);
}
