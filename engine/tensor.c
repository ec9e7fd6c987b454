/* tensor.c — dense tensors: a small reference-counted header (dtype, shape, offset) over a
 * reference-counted buffer that views share. Small tensors live in one allocation with their buffer,
 * which keeps the executor's per-node cost low. Large buffers (64 KiB and up) are sized in classes
 * (at most 1/8 above the request) and, when released, kept in a small cache (up to 64 buffers,
 * 256 MiB) for the next tensor of the same class: a training step allocates the same large outputs
 * every time, and fresh memory from the system costs a page fault per 4 KiB (about 5% of a CNN
 * step, measured). Buffers from 4 KiB to 64 KiB (multiples of 64 bytes) have free lists of their own,
 * one per size, up to 16 MiB in all: the system allocator otherwise gives back and takes again the
 * top of its per-thread heaps as such buffers move between the executor's threads, a burst of page
 * faults every few steps (tests/engine/test_memory.c). Builds with AddressSanitizer skip both caches
 * so that it keeps finding uses after free. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "step_memory.h"

#define INLINE_BYTES 64   /* data up to this size lives in the tensor's own block */
#define DATA_ALIGN 64

/* One block: the tensor header, its buffer, then (small tensors) the data. */
typedef struct tensor_block {
    struct tide_tensor t;
    tide_buffer b;
    _Alignas(16) unsigned char data[];
} tensor_block;

/* ---------------------------------------------------------------- the cache of large buffers */

#define CACHE_MIN_BYTES ((size_t)64 << 10)
#define CACHE_MAX_ITEMS 64
#define CACHE_MAX_BYTES ((size_t)256 << 20)
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ENABLED 1
#else
#define CACHE_ENABLED 1
#endif

static struct {
    pthread_mutex_t lock;
    int count;
    size_t bytes;
    size_t sizes[CACHE_MAX_ITEMS];
    void *items[CACHE_MAX_ITEMS];
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The bytes actually allocated for a buffer of `bytes`: a multiple of 64; for large buffers rounded up
 * to a multiple of 1/8 of the largest power of two not above it, so that similar sizes share a class. */
static size_t data_class(size_t bytes)
{
    size_t rounded = (bytes + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
    if (rounded < CACHE_MIN_BYTES)
        return rounded;
    size_t p = (size_t)1 << (63 - __builtin_clzll((unsigned long long)rounded));
    size_t step = p / 8;
    return (rounded + step - 1) / step * step;
}

/* ---------------------------------------------------------------- the free lists of middle-sized buffers */

#define MID_MIN_BYTES ((size_t)4 << 10)
#define MID_CLASSES ((CACHE_MIN_BYTES - MID_MIN_BYTES) / DATA_ALIGN)
#define MID_MAX_BYTES ((size_t)16 << 20)

/* One list per size (a multiple of DATA_ALIGN in [MID_MIN_BYTES, CACHE_MIN_BYTES)), linked through
 * the first bytes of each free buffer. */
static struct {
    pthread_mutex_t lock;
    size_t bytes;
    void *heads[MID_CLASSES];
} mid = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool is_mid(size_t size) { return CACHE_ENABLED && size >= MID_MIN_BYTES && size < CACHE_MIN_BYTES; }

static void *mid_take(size_t size)
{
    size_t k = (size - MID_MIN_BYTES) / DATA_ALIGN;
    pthread_mutex_lock(&mid.lock);
    void *p = mid.heads[k];
    if (p) {
        memcpy(&mid.heads[k], p, sizeof(void *));
        mid.bytes -= size;
    }
    pthread_mutex_unlock(&mid.lock);
    return p;
}

/* False when the lists are full: the caller frees p. */
static bool mid_give(void *p, size_t size)
{
    size_t k = (size - MID_MIN_BYTES) / DATA_ALIGN;
    pthread_mutex_lock(&mid.lock);
    bool kept = mid.bytes + size <= MID_MAX_BYTES;
    if (kept) {
        memcpy(p, &mid.heads[k], sizeof(void *));
        mid.heads[k] = p;
        mid.bytes += size;
    }
    pthread_mutex_unlock(&mid.lock);
    return kept;
}

static void *data_alloc(size_t bytes)
{
    size_t size = data_class(bytes);
    void *p = is_mid(size) ? mid_take(size) : NULL;
    if (p)
        return p;
    if (CACHE_ENABLED && size >= CACHE_MIN_BYTES) {
        pthread_mutex_lock(&cache.lock);
        for (int i = cache.count - 1; i >= 0; i--)
            if (cache.sizes[i] == size) {
                void *p = cache.items[i];
                cache.bytes -= size;
                cache.count--;
                cache.items[i] = cache.items[cache.count];
                cache.sizes[i] = cache.sizes[cache.count];
                pthread_mutex_unlock(&cache.lock);
                return p;
            }
        pthread_mutex_unlock(&cache.lock);
    }
    return aligned_alloc(DATA_ALIGN, size);
}

static void data_free(void *p, size_t bytes)
{
    size_t size = data_class(bytes);
    if (p && is_mid(size) && mid_give(p, size))
        return;
    if (CACHE_ENABLED && p && size >= CACHE_MIN_BYTES && size <= CACHE_MAX_BYTES / 4) {
        pthread_mutex_lock(&cache.lock);
        if (cache.count == CACHE_MAX_ITEMS || cache.bytes + size > CACHE_MAX_BYTES) { /* evict the oldest */
            cache.bytes -= cache.sizes[0];
            free(cache.items[0]);
            cache.count--;
            memmove(cache.items, cache.items + 1, sizeof cache.items[0] * (size_t)cache.count);
            memmove(cache.sizes, cache.sizes + 1, sizeof cache.sizes[0] * (size_t)cache.count);
        }
        if (cache.bytes + size <= CACHE_MAX_BYTES) {
            cache.items[cache.count] = p;
            cache.sizes[cache.count++] = size;
            cache.bytes += size;
            p = NULL;
        }
        pthread_mutex_unlock(&cache.lock);
    }
    free(p);
}

/* ---------------------------------------------------------------- buffers */

static void buffer_free_contents(tide_buffer *b)
{
    if (b->type) { /* device memory: back to its device's caching allocator (a borrowed view: nothing) */
        if (!b->dealloc)
            tide__allocator_free(b->device->allocator, b->data, b->size);
        return;
    }
    if (b->dtype == TIDE_STRING && !b->dealloc) {
        tide_tstring *s = b->data;
        for (int64_t i = 0; i < b->num_strings; i++)
            free(s[i].data);
    }
    if (b->dealloc)
        b->dealloc(b->data, b->size, b->dealloc_arg);
    else if (!b->block || (unsigned char *)b->data != ((tensor_block *)b->block)->data)
        data_free(b->data, b->size);
}

static void buffer_release(tide_buffer *b)
{
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (b->device && !(b->type && b->dealloc))
        tide__device_account(b->device, -(int64_t)b->size);
    if (b->step_memory)
        tide__step_memory_uncharge(b);
    buffer_free_contents(b);
    if (b->block)
        free(b->block); /* the block also held the (dead) tensor header that created it */
    else
        free(b);
}

static bool shape_ok(const tide_shape *shape, int64_t *n, tide_error *err)
{
    if (!shape || shape->rank < 0 || shape->rank > TIDE_MAX_RANK) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a tensor needs a known rank between 0 and %d",
                       TIDE_MAX_RANK);
        return false;
    }
    int64_t count = 1;
    bool empty = false;
    for (int i = 0; i < shape->rank; i++)
        empty |= shape->dims[i] == 0;
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] < 0) {
            char buf[TIDE_SHAPE_STR_MAX];
            tide_error_set(err, TIDE_INVALID_ARGUMENT,
                           "a tensor needs a fully defined shape, got %s",
                           tide_shape_format(shape, buf, sizeof buf));
            return false;
        }
        if (!empty && count > INT64_MAX / 16 / shape->dims[i]) {
            char buf[TIDE_SHAPE_STR_MAX];
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "tensor shape %s is too large",
                           tide_shape_format(shape, buf, sizeof buf));
            return false;
        }
        count = empty ? 0 : count * shape->dims[i];
    }
    *n = count;
    return true;
}

/* The tensor header of blk over its buffer (set already): n elements of shape. */
static inline tide_tensor *block_tensor(tensor_block *blk, tide_dtype dt, const tide_shape *shape, int64_t n)
{
    tide_tensor *t = &blk->t;
    atomic_init(&t->refs, 1);
    t->dtype = dt;
    t->shape = *shape;
    for (int i = shape->rank; i < TIDE_MAX_RANK; i++)
        t->shape.dims[i] = 0;
    t->num_elements = n;
    t->buf = &blk->b;
    t->offset = 0;
    return t;
}

tide_tensor *tide__tensor_alloc(tide_dtype dt, const tide_shape *shape, bool zero, tide_error *err)
{
    size_t esize = tide_dtype_size(dt);
    if (!esize) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "invalid dtype %d", (int)dt);
        return NULL;
    }
    int64_t n;
    if (!shape_ok(shape, &n, err))
        return NULL;
    size_t bytes = (size_t)n * esize;
    bool inline_data = bytes <= INLINE_BYTES;
    tensor_block *blk = malloc(sizeof(tensor_block) + (inline_data ? bytes : 0));
    void *data = NULL;
    if (blk && !inline_data)
        data = data_alloc(bytes);
    if (!blk || (!inline_data && !data)) {
        free(blk);
        data_free(data, bytes);
        char buf[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory allocating %s tensor %s (%zu bytes)",
                       tide_dtype_name(dt), tide_shape_format(shape, buf, sizeof buf), bytes);
        return NULL;
    }
    if (inline_data)
        data = blk->data;
    if (zero || dt == TIDE_STRING)
        memset(data, 0, bytes);
    tide_buffer *b = &blk->b;
    atomic_init(&b->refs, 1);
    b->data = data;
    b->size = bytes;
    b->dtype = dt;
    b->num_strings = dt == TIDE_STRING ? n : 0;
    b->dealloc = NULL;
    b->dealloc_arg = NULL;
    b->block = blk;
    b->device = NULL;
    b->type = NULL;
    b->step_memory = NULL;
    return block_tensor(blk, dt, shape, n);
}

tide_tensor *tide__tensor_view(tide_buffer *buf, size_t offset, tide_dtype dt,
                               const tide_shape *shape, tide_error *err)
{
    int64_t n;
    if (!shape_ok(shape, &n, err))
        return NULL;
    tide_tensor *t = malloc(sizeof *t);
    if (!t) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    atomic_init(&t->refs, 1);
    t->dtype = dt;
    t->shape = *shape;
    t->num_elements = n;
    t->buf = buf;
    t->offset = offset;
    atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
    return t;
}

tide_tensor *tide_tensor_new(tide_dtype dt, const tide_shape *shape, tide_error *err)
{
    return tide__tensor_alloc(dt, shape, true, err);
}

tide_tensor *tide_tensor_new_uninitialized(tide_dtype dt, const tide_shape *shape, tide_error *err)
{
    return tide__tensor_alloc(dt, shape, false, err);
}

tide_tensor *tide_tensor_new_copy(tide_dtype dt, const tide_shape *shape, const void *data,
                                  size_t bytes, tide_error *err)
{
    tide_tensor *t = tide__tensor_alloc(dt, shape, false, err);
    if (!t)
        return NULL;
    if (bytes != t->buf->size) {
        char buf[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "%zu bytes given for a %s tensor of shape %s, which needs %zu",
                       bytes, tide_dtype_name(dt), tide_shape_format(shape, buf, sizeof buf),
                       t->buf->size);
        tide_tensor_release(t);
        return NULL;
    }
    if (dt == TIDE_STRING) {
        const tide_tstring *src = data;
        for (int64_t i = 0; i < t->num_elements; i++)
            if (tide_tensor_string_set(t, i, src[i].data, src[i].len, err) != TIDE_OK) {
                tide_tensor_release(t);
                return NULL;
            }
    } else if (bytes) {
        memcpy(t->buf->data, data, bytes);
    }
    return t;
}

tide_tensor *tide_tensor_new_scalar(tide_dtype dt, const void *value, tide_error *err)
{
    tide_shape s = tide_shape_scalar();
    return tide_tensor_new_copy(dt, &s, value, tide_dtype_size(dt), err);
}

static void borrowed_memory(void *data, size_t bytes, void *arg)
{
    TIDE_UNUSED(data), TIDE_UNUSED(bytes), TIDE_UNUSED(arg); /* the caller keeps ownership */
}

tide_tensor *tide_tensor_wrap(tide_dtype dt, const tide_shape *shape, void *data, size_t bytes,
                              tide_deallocator dealloc, void *arg, tide_error *err)
{
    int64_t n;
    if (dt == TIDE_STRING || !tide_dtype_size(dt)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot wrap foreign memory as a %s tensor",
                       tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
        return NULL;
    }
    if (!shape_ok(shape, &n, err))
        return NULL;
    if ((size_t)n * tide_dtype_size(dt) != bytes) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%zu bytes wrapped for %lld %s elements", bytes,
                       (long long)n, tide_dtype_name(dt));
        return NULL;
    }
    tide_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    atomic_init(&b->refs, 0);
    b->data = data;
    b->size = bytes;
    b->dtype = dt;
    b->dealloc = dealloc ? dealloc : borrowed_memory;
    b->dealloc_arg = arg;
    tide_tensor *t = tide__tensor_view(b, 0, dt, shape, err);
    if (!t)
        free(b);
    return t;
}

/* The value of a dead edge (control flow: what a Switch's untaken output and everything computed from
 * it carry). Immortal: its count starts so high that retain and release never free it, so the
 * executor stores and hands it around like any tensor without a branch. Never seen by users. */
static tide_buffer dead_buffer = {.refs = 1 << 30, .dtype = TIDE_INVALID_DTYPE};
static struct tide_tensor dead_tensor = {.refs = 1 << 30, .dtype = TIDE_INVALID_DTYPE, .buf = &dead_buffer};
tide_tensor *const tide__dead = &dead_tensor;

tide_tensor *tide_tensor_retain(tide_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void tide_tensor_release(tide_tensor *t)
{
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    tide_buffer *b = t->buf;
    bool header_in_block = b->block && &((tensor_block *)b->block)->t == t;
    if (!header_in_block)
        free(t);
    buffer_release(b); /* frees the block (and so the header in it) when the last view goes */
}

tide_dtype tide_tensor_dtype(const tide_tensor *t) { return t->dtype; }
int tide_tensor_rank(const tide_tensor *t) { return t->shape.rank; }
const tide_shape *tide_tensor_shape(const tide_tensor *t) { return &t->shape; }
int64_t tide_tensor_num_elements(const tide_tensor *t) { return t->num_elements; }

int64_t tide_tensor_dim(const tide_tensor *t, int i)
{
    if (i < 0)
        i += t->shape.rank;
    return i >= 0 && i < t->shape.rank ? t->shape.dims[i] : -1;
}

size_t tide_tensor_byte_size(const tide_tensor *t)
{
    return (size_t)t->num_elements * tide_dtype_size(t->dtype);
}

bool tide__buffer_accessible(const tide_buffer *b)
{
    return !b->type || b->type->host_visible || b->device == tide_device_current();
}

/* Device memory: readable only where tide__buffer_accessible says so. Out of line, so that the
 * common case below stays a load and an add (the executor's fast path calls it for every node). */
__attribute__((noinline, cold)) static void *device_data(const tide_tensor *t)
{
    return tide__buffer_accessible(t->buf) ? (char *)t->buf->data + t->offset : NULL;
}

void *tide_tensor_data(const tide_tensor *t)
{
    const tide_buffer *b = t->buf;
    if (__builtin_expect(b->type != NULL, 0))
        return device_data(t);
    return (char *)b->data + t->offset;
}

tide_status tide__refuse_host_access(const tide_tensor *t, tide_error *err)
{
    char shape[TIDE_SHAPE_STR_MAX], device[128];
    tide_device_short_name(t->buf->device ? t->buf->device->name : "?", device, sizeof device);
    return tide_error_set(err, TIDE_FAILED_PRECONDITION,
                          "the %s tensor %s lives in the memory of %s, which the host cannot read: copy it to "
                          "the host first (tide_tensor_to_host; a run's fetches and observers get host copies)",
                          tide_dtype_name(t->dtype), tide_shape_format(&t->shape, shape, sizeof shape), device);
}

void *tide_tensor_host_data(const tide_tensor *t, tide_error *err)
{
    if (!t) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "no tensor (NULL)");
        return NULL;
    }
    void *p = tide_tensor_data(t);
    if (!p)
        tide__refuse_host_access(t, err);
    return p;
}

const char *tide_tensor_device_name(const tide_tensor *t)
{
    return t && t->buf->device ? t->buf->device->name : NULL;
}

bool tide_tensor_is_host_visible(const tide_tensor *t)
{
    return t && (!t->buf->type || t->buf->type->host_visible);
}

tide_device *tide_tensor_get_device(const tide_tensor *t)
{
    return t ? t->buf->device : NULL;
}

void *tide_tensor_device_pointer(const tide_tensor *t)
{
    return t && t->buf->type ? (char *)t->buf->data + t->offset : NULL;
}

tide_tensor *tide__tensor_over_device_memory(tide_device *d, const tide_buffer_type *bt, void *data, size_t bytes,
                                             tide_dtype dt, const tide_shape *shape, tide_error *err)
{
    tensor_block *blk = malloc(sizeof(tensor_block));
    int64_t n;
    if (!blk || !shape_ok(shape, &n, err)) {
        if (!blk)
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        free(blk);
        tide__allocator_free(d->allocator, data, bytes);
        return NULL;
    }
    tide_buffer *b = &blk->b;
    *b = (tide_buffer){.data = data, .size = bytes, .dtype = dt, .block = blk, .device = d, .type = bt};
    atomic_init(&b->refs, 1);
    tide__device_account(d, (int64_t)bytes);
    return block_tensor(blk, dt, shape, n);
}

static void borrowed_nothing(void *data, size_t size, void *arg)
{
    TIDE_UNUSED(data), TIDE_UNUSED(size), TIDE_UNUSED(arg);
}

tide_tensor *tide__tensor_borrowed_view(const tide_tensor *t)
{
    tensor_block *blk = malloc(sizeof(tensor_block));
    if (!blk)
        return NULL;
    tide_buffer *b = &blk->b;
    *b = (tide_buffer){.data = (char *)t->buf->data + t->offset, .size = tide_tensor_byte_size(t), .dtype = t->dtype,
                       .dealloc = borrowed_nothing, .block = blk, .device = t->buf->device, .type = t->buf->type};
    atomic_init(&b->refs, 1);
    return block_tensor(blk, t->dtype, &t->shape, t->num_elements);
}

bool tide_tensor_is_exclusive(const tide_tensor *t)
{
    return atomic_load_explicit(&t->refs, memory_order_acquire) == 1 &&
           atomic_load_explicit(&t->buf->refs, memory_order_acquire) == 1 && !t->buf->dealloc;
}

tide_tensor *tide_tensor_reshape(tide_tensor *t, const tide_shape *shape, tide_error *err)
{
    tide_shape s = *shape;
    if (s.rank < 0 || s.rank > TIDE_MAX_RANK) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "reshape needs a rank between 0 and %d", TIDE_MAX_RANK);
        return NULL;
    }
    int unknown = -1;
    int64_t known = 1;
    for (int i = 0; i < s.rank; i++) {
        if (s.dims[i] < 0) {
            if (unknown >= 0) {
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "reshape: only one dimension may be -1");
                return NULL;
            }
            unknown = i;
        } else if (__builtin_mul_overflow(known, s.dims[i], &known)) {
            char b2[TIDE_SHAPE_STR_MAX];
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot reshape to %s: too many elements",
                           tide_shape_format(shape, b2, sizeof b2));
            return NULL;
        }
    }
    if (unknown >= 0) {
        if (known == 0 || t->num_elements % known) {
            char b1[TIDE_SHAPE_STR_MAX], b2[TIDE_SHAPE_STR_MAX];
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot reshape %s (%lld elements) to %s",
                           tide_shape_format(&t->shape, b1, sizeof b1), (long long)t->num_elements,
                           tide_shape_format(shape, b2, sizeof b2));
            return NULL;
        }
        s.dims[unknown] = t->num_elements / known;
        known = t->num_elements;
    }
    if (known != t->num_elements) {
        char b1[TIDE_SHAPE_STR_MAX], b2[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                       tide_shape_format(&t->shape, b1, sizeof b1), (long long)t->num_elements,
                       tide_shape_format(&s, b2, sizeof b2), (long long)known);
        return NULL;
    }
    return tide__tensor_view(t->buf, t->offset, t->dtype, &s, err);
}

tide_tensor *tide_tensor_slice(tide_tensor *t, int64_t begin, int64_t end, tide_error *err)
{
    if (t->shape.rank < 1) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot slice a scalar");
        return NULL;
    }
    int64_t rows = t->shape.dims[0];
    if (begin < 0 || end < begin || end > rows) {
        tide_error_set(err, TIDE_OUT_OF_RANGE, "slice [%lld, %lld) is outside the first dimension (%lld)",
                       (long long)begin, (long long)end, (long long)rows);
        return NULL;
    }
    int64_t row_elems = rows ? t->num_elements / rows : 0;
    tide_shape s = t->shape;
    s.dims[0] = end - begin;
    size_t off = t->offset + (size_t)(begin * row_elems) * tide_dtype_size(t->dtype);
    return tide__tensor_view(t->buf, off, t->dtype, &s, err);
}

tide_tensor *tide_tensor_copy(const tide_tensor *t, tide_error *err)
{
    const void *data = tide_tensor_host_data(t, err);
    return data ? tide_tensor_new_copy(t->dtype, &t->shape, data, tide_tensor_byte_size(t), err) : NULL;
}

const char *tide_tensor_string_get(const tide_tensor *t, int64_t i, size_t *len)
{
    if (t->dtype != TIDE_STRING || i < 0 || i >= t->num_elements || !tide_tensor_data(t)) {
        if (len)
            *len = 0;
        return NULL;
    }
    const tide_tstring *s = (const tide_tstring *)tide_tensor_data(t) + i;
    if (len)
        *len = s->len;
    return s->data ? s->data : "";
}

tide_status tide_tensor_string_set(tide_tensor *t, int64_t i, const char *data, size_t len,
                                   tide_error *err)
{
    if (t->dtype != TIDE_STRING)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "string_set on a %s tensor",
                              tide_dtype_name(t->dtype));
    if (i < 0 || i >= t->num_elements)
        return tide_error_set(err, TIDE_OUT_OF_RANGE, "string index %lld outside [0, %lld)",
                              (long long)i, (long long)t->num_elements);
    char *copy = malloc(len + 1);
    if (!copy)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (len)
        memcpy(copy, data, len);
    copy[len] = 0;
    tide_tstring *s = (tide_tstring *)tide_tensor_data(t) + i;
    free(s->data);
    s->data = copy;
    s->len = len;
    return TIDE_OK;
}

double tide_tensor_get_f64(const tide_tensor *t, int64_t i)
{
    if (i < 0 || i >= t->num_elements || !tide_tensor_data(t))
        return NAN;
    const void *p = (const char *)tide_tensor_data(t) + (size_t)i * tide_dtype_size(t->dtype);
    switch (t->dtype) {
    case TIDE_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case TIDE_INT8: return *(const int8_t *)p;
    case TIDE_INT16: return *(const int16_t *)p;
    case TIDE_INT32: return *(const int32_t *)p;
    case TIDE_INT64: return (double)*(const int64_t *)p;
    case TIDE_UINT8: return *(const uint8_t *)p;
    case TIDE_UINT16: return *(const uint16_t *)p;
    case TIDE_FLOAT16: return tide_f16_to_f32(*(const uint16_t *)p);
    case TIDE_BFLOAT16: return tide_bf16_to_f32(*(const uint16_t *)p);
    case TIDE_FLOAT32: return *(const float *)p;
    case TIDE_FLOAT64: return *(const double *)p;
    case TIDE_COMPLEX64: return ((const float *)p)[0];
    case TIDE_COMPLEX128: return ((const double *)p)[0];
    case TIDE_STRING: {
        const tide_tstring *s = p;
        char *end = NULL;
        double v = s->data ? strtod(s->data, &end) : NAN;
        return s->data && end != s->data && *end == 0 ? v : NAN;
    }
    default: return NAN;
    }
}

bool tide_tensor_equal(const tide_tensor *a, const tide_tensor *b, bool nan_equal)
{
    if (a->dtype != b->dtype || !tide_shape_equal(&a->shape, &b->shape) || !tide_tensor_data(a) ||
        !tide_tensor_data(b))
        return false;
    if (a->dtype == TIDE_STRING) {
        for (int64_t i = 0; i < a->num_elements; i++) {
            size_t la, lb;
            const char *sa = tide_tensor_string_get(a, i, &la), *sb = tide_tensor_string_get(b, i, &lb);
            if (la != lb || memcmp(sa, sb, la) != 0)
                return false;
        }
        return true;
    }
    if (tide_dtype_is_float(a->dtype) || tide_dtype_is_complex(a->dtype)) {
        int parts = tide_dtype_is_complex(a->dtype) ? 2 : 1;
        for (int64_t i = 0; i < a->num_elements; i++) {
            for (int p = 0; p < parts; p++) {
                double x, y;
                if (parts == 2) {
                    size_t half = tide_dtype_size(a->dtype) / 2;
                    const char *pa = (const char *)tide_tensor_data(a) + (size_t)(2 * i + p) * half;
                    const char *pb = (const char *)tide_tensor_data(b) + (size_t)(2 * i + p) * half;
                    x = half == 4 ? *(const float *)pa : *(const double *)pa;
                    y = half == 4 ? *(const float *)pb : *(const double *)pb;
                } else {
                    x = tide_tensor_get_f64(a, i);
                    y = tide_tensor_get_f64(b, i);
                }
                if (isnan(x) && isnan(y) && nan_equal)
                    continue;
                if (x != y)
                    return false;
            }
        }
        return true;
    }
    return memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}
