/* device_alloc.c — the caching allocator of one accelerator device's memory (tide_device.h). Raw
 * memory comes from the device's buffer type (malloc for the simulated device, cudaMalloc for a GPU),
 * which is slow and, on a GPU, synchronising; so freed blocks are kept by size class and handed to
 * the next allocation of the same class, as PyTorch's CUDA caching allocator does. Sizes are rounded
 * to classes: multiples of 256 bytes, and from 64 KiB up multiples of 1/8 of the largest power of
 * two not above the request (at most 1/8 wasted), so that a training step's tensors find the blocks
 * the previous step freed.
 *
 * Stream-ordered reuse. Kernels return once their work is queued on the device's compute stream, and
 * the executor releases their inputs then, so a block may be freed while queued work still reads it.
 * Every free is therefore taken as ordered on the compute stream: the block is reusable AT ONCE by
 * work launched later on that same stream (kernel outputs and temporaries: launch order makes it
 * safe), and by anything else (a copy stream writing a copy's destination, the host) only once the
 * compute stream has passed the point of the free. Frees are grouped in epochs: a cached block
 * carries the epoch of its free; an allocation for another stream that finds only blocks of epochs
 * not yet known complete closes the open epoch by recording an event on the compute stream (one
 * event for every free since the last one, not one per free), takes fresh memory meanwhile, and later
 * allocations poll those events; a synchronisation of the device (tide__allocator_synchronized) makes
 * every earlier epoch safe at once. Work on other streams holds its tensors until it ran (copies keep
 * their source and destination), so a free never races with another stream's queued work. Out of
 * memory with unsafe blocks cached waits for the compute stream before giving the cache back.
 *
 * Accounting: `reserved` is every byte taken from the device (blocks in use plus cached ones), and
 * `cached` the free blocks kept. The tensors' own bytes (what tide_engine_device_memory reports) are
 * accounted by the device (tensor.c). A limit (tide_engine_options.device_memory_limit) caps
 * `reserved`: an allocation that would pass it first gives the cache back to the device, then fails
 * with RESOURCE_EXHAUSTED naming the device, the request and the figures.
 *
 * Invariants (under the lock): 0 <= cached <= reserved <= peak_reserved; cached is the sum of the
 * free lists' class sizes; reserved <= limit when there is one; safe_epoch < epoch; the recorded
 * epochs in the ring are increasing and above safe_epoch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SMALL_ALIGN 256
#define CLASS_STEP_FROM ((size_t)64 << 10)
#define EPOCH_EVENTS 8          /* closed epochs awaiting their event at once */

typedef struct cached_block {
    void *p;
    uint64_t epoch;             /* of its free: reusable off the compute stream once epoch <= safe_epoch */
} cached_block;

typedef struct bin {
    size_t size;                /* the class */
    int count, cap;
    cached_block *blocks;       /* a stack: the most recently freed last */
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
    /* Stream order (above). epoch: the open one, which frees are tagged with; safe_epoch: every epoch
     * up to it is complete on the compute stream; ring: closed epochs and their events, oldest first. */
    uint64_t epoch, safe_epoch;
    bool epoch_has_frees;
    tide_event *events[EPOCH_EVENTS];
    uint64_t event_epoch[EPOCH_EVENTS];
    int ring_head, ring_count;
    int64_t stream_reuses, fresh_for_other_streams;
    bool closed;                /* the device is gone (tensors outliving the engine): no stream to order on */
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
    a->epoch = 1;
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

/* Gives the cached blocks back to the device: those whose free the compute stream has passed (all of
 * them after wait_for_stream). Lock held. */
static void release_cache(struct tide_caching_allocator *a)
{
    for (int i = 0; i < a->num_bins; i++) {
        bin *b = &a->bins[i];
        int kept = 0;
        for (int k = 0; k < b->count; k++) {
            if (b->blocks[k].epoch > a->safe_epoch) {
                b->blocks[kept++] = b->blocks[k];
                continue;
            }
            a->type->free(a->device, b->blocks[k].p, b->size);
            a->reserved -= (int64_t)b->size;
            a->cached -= (int64_t)b->size;
        }
        b->count = kept;
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

/* ---------------------------------------------------------------- stream order */

/* The device's compute stream, which every free is ordered on (NULL: a device without streams). */
static tide_stream *compute_stream(const struct tide_caching_allocator *a)
{
    return a->closed ? NULL : a->device->streams[TIDE_STREAM_COMPUTE];
}

/* Advances safe_epoch past the closed epochs whose events completed. Lock held. */
static void poll_epochs(struct tide_caching_allocator *a)
{
    while (a->ring_count > 0) {
        int at = a->ring_head;
        if (a->event_epoch[at] > a->safe_epoch && !tide_event_query(a->events[at]))
            return;
        if (a->event_epoch[at] > a->safe_epoch)
            a->safe_epoch = a->event_epoch[at];
        a->ring_head = (at + 1) % EPOCH_EVENTS;
        a->ring_count--;
    }
}

/* Closes the open epoch with an event recorded on the compute stream, so that its blocks become safe
 * once the stream passed it. Nothing when it had no frees or the ring is full (the next
 * synchronisation makes them safe). Lock held. */
static void close_epoch(struct tide_caching_allocator *a)
{
    tide_stream *s = compute_stream(a);
    if (!a->epoch_has_frees || !s || a->ring_count == EPOCH_EVENTS)
        return;
    int at = (a->ring_head + a->ring_count) % EPOCH_EVENTS;
    tide_error *err = tide_error_new();
    if (!a->events[at])
        a->events[at] = tide_event_new(a->device, err);
    bool recorded = a->events[at] && tide_event_record(a->events[at], s, err) == TIDE_OK;
    tide_error_free(err);
    if (!recorded)
        return;
    a->event_epoch[at] = a->epoch++;
    a->ring_count++;
    a->epoch_has_frees = false;
}

/* A cached block of b for the caller: any (the most recently freed) for work on the compute stream,
 * else one whose free the compute stream has passed; -1 when none. Lock held. */
static int pick_block(struct tide_caching_allocator *a, bin *b, bool compute_ordered)
{
    if (!b || b->count == 0)
        return -1;
    if (compute_ordered)
        return b->count - 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < b->count; k++)
            if (b->blocks[k].epoch <= a->safe_epoch)
                return k;
        if (pass == 0)
            poll_epochs(a);
    }
    return -1;
}

/* The last epoch that frees were tagged with. Lock held. */
static uint64_t last_tagged(const struct tide_caching_allocator *a)
{
    return a->epoch_has_frees ? a->epoch : a->epoch - 1;
}

/* Closes the open epoch for a synchronisation starting now: the frees made until here are covered by
 * it; returns the last of their epochs. Lock held. */
static uint64_t epoch_for_sync(struct tide_caching_allocator *a)
{
    uint64_t upto = last_tagged(a);
    if (a->epoch_has_frees) {
        a->epoch++;
        a->epoch_has_frees = false;
    }
    return upto;
}

uint64_t tide__allocator_begin_sync(struct tide_caching_allocator *a)
{
    if (!a)
        return 0;
    pthread_mutex_lock(&a->lock);
    uint64_t upto = epoch_for_sync(a);
    pthread_mutex_unlock(&a->lock);
    return upto;
}

void tide__allocator_synchronized(struct tide_caching_allocator *a, uint64_t upto)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    if (upto > a->safe_epoch)
        a->safe_epoch = upto;
    poll_epochs(a);
    pthread_mutex_unlock(&a->lock);
}

/* Before blocks go back to the device (out of memory, emptying the cache): waits for the compute
 * stream when some freed block may still be read there. Lock held (dropped while waiting). */
static void wait_for_stream(struct tide_caching_allocator *a)
{
    tide_stream *s = compute_stream(a);
    if (!s || a->safe_epoch >= last_tagged(a))
        return;
    if (tide_device_current() == a->device) /* a stream thread of the device cannot wait for it */
        return;
    uint64_t upto = epoch_for_sync(a);
    pthread_mutex_unlock(&a->lock);
    tide_error *err = tide_error_new();
    bool ok = tide_stream_synchronize(s, err) == TIDE_OK;
    tide_error_free(err);
    pthread_mutex_lock(&a->lock);
    if (ok && upto > a->safe_epoch)
        a->safe_epoch = upto;
}

/* ---------------------------------------------------------------- allocation */

void *tide__allocator_alloc(struct tide_caching_allocator *a, size_t bytes, bool compute_ordered, tide_error *err)
{
    size_t size = size_class(bytes);
    pthread_mutex_lock(&a->lock);
    a->allocations++;
    bin *b = bin_of(a, size, false);
    int k = pick_block(a, b, compute_ordered);
    if (k >= 0) {
        void *p = b->blocks[k].p;
        if (b->blocks[k].epoch > a->safe_epoch)
            a->stream_reuses++;
        b->blocks[k] = b->blocks[--b->count];
        a->cached -= (int64_t)size;
        a->cache_hits++;
        pthread_mutex_unlock(&a->lock);
        return p;
    }
    if (!compute_ordered && b && b->count > 0) { /* blocks of this class wait for the compute stream */
        close_epoch(a);
        a->fresh_for_other_streams++;
    }
    bool over = a->limit > 0 && a->reserved + (int64_t)size > a->limit;
    if (over) {
        wait_for_stream(a);
        release_cache(a);
        over = a->reserved + (int64_t)size > a->limit;
    }
    void *p = over ? NULL : a->type->alloc(a->device, size);
    if (!p && !over && a->cached > 0) { /* the device is full: give the cache back and try once more */
        wait_for_stream(a);
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
        cached_block *grown = realloc(b->blocks, sizeof *grown * (size_t)cap);
        if (grown) {
            b->blocks = grown;
            b->cap = cap;
        }
    }
    if (b && b->count < b->cap) {
        b->blocks[b->count++] = (cached_block){p, a->closed ? 0 : a->epoch};
        a->epoch_has_frees = true;
        a->cached += (int64_t)size;
    } else if (tide_device_current() != a->device) { /* no room to cache it: back to the device once */
        wait_for_stream(a);                          /* the compute stream is done with it */
        a->type->free(a->device, p, size);
        a->reserved -= (int64_t)size;
    } /* else (out of memory for the list, on a stream thread): the block is lost rather than unsafe */
    pthread_mutex_unlock(&a->lock);
}

void tide__allocator_empty_cache(struct tide_caching_allocator *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    wait_for_stream(a);
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
    out->stream_reuses = a->stream_reuses;
    out->fresh_for_other_streams = a->fresh_for_other_streams;
    pthread_mutex_unlock(&a->lock);
}

void tide__allocator_close(struct tide_caching_allocator *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->safe_epoch = a->epoch; /* the device's streams ran everything: synchronised before they stopped */
    release_cache(a);
    for (int i = 0; i < EPOCH_EVENTS; i++) {
        tide_event_free(a->events[i]);
        a->events[i] = NULL;
    }
    a->ring_count = 0;
    a->closed = true;
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

tide_tensor *tide__device_tensor_alloc_for(tide_device *d, tide_dtype dt, const tide_shape *shape,
                                          bool compute_ordered, tide_error *err)
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
    void *data = tide__allocator_alloc(d->allocator, bytes, compute_ordered, err);
    if (!data) {
        char s[TIDE_SHAPE_STR_MAX];
        tide__error_prefix(err, "a %s tensor %s", tide_dtype_name(dt), tide_shape_format(shape, s, sizeof s));
        return NULL;
    }
    return tide__tensor_over_device_memory(d, d->ops->buffer_types[0], data, bytes, dt, shape, err);
}

tide_tensor *tide_device_tensor_alloc(tide_device *d, tide_dtype dt, const tide_shape *shape, tide_error *err)
{
    return tide__device_tensor_alloc_for(d, dt, shape, true, err);
}
