/* batcher.c — mini-batches over a data set held as tensors that share their first dimension (images
 * [N, 28, 28, 1] and labels [N], say): batch i of an epoch is rows [i*B, (i+1)*B) of every tensor.
 *
 * Without shuffling a batch is a view (tide_tensor_slice): no copy at all. With shuffling the rows
 * are visited in a permutation drawn afresh each epoch — Fisher-Yates over SplitMix64 seeded by the
 * caller, with Lemire's unbiased bounded draws — so one seed always gives the same sequence of
 * epochs; a batch then gathers its rows (one memcpy per row, a string copy per string element) into
 * new tensors. The data set itself is never copied.
 *
 * The epoch state machine: next() hands out batches until the rows of the epoch are used up (the
 * last, partial batch too unless drop_remainder), then returns false once, counting the epoch and
 * drawing the next permutation; the call after that starts the new epoch. */
#include <stdlib.h>
#include <string.h>

#include "tide_data.h"

struct tide_batcher {
    int num;
    tide_tensor **tensors;  /* retained */
    size_t *row_bytes;      /* per tensor: bytes of one row (elements for strings) */
    int64_t rows, batch_size;
    bool shuffle, drop_remainder;
    uint64_t rng;           /* SplitMix64 state */
    int64_t *order;         /* shuffle: this epoch's permutation of the rows */
    tide_tensor **batch;    /* scratch: the batch being built */
    int64_t next_row;       /* position in the epoch */
    int64_t epoch;          /* epochs completed */
};

/* ---------------------------------------------------------------- random permutations */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias (Lemire, "Fast random integer generation in an interval"). */
static uint64_t uniform_below(uint64_t *state, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)splitmix64(state) * n;
    if ((uint64_t)m < n) {
        uint64_t threshold = -n % n;
        while ((uint64_t)m < threshold)
            m = (unsigned __int128)splitmix64(state) * n;
    }
    return (uint64_t)(m >> 64);
}

static void shuffle_rows(tide_batcher *b)
{
    for (int64_t i = b->rows - 1; i > 0; i--) {
        int64_t j = (int64_t)uniform_below(&b->rng, (uint64_t)i + 1);
        int64_t tmp = b->order[i];
        b->order[i] = b->order[j];
        b->order[j] = tmp;
    }
}

/* ---------------------------------------------------------------- construction */

static tide_status check_tensors(tide_tensor *const *tensors, int num, int64_t batch_size,
                                 bool drop_remainder, tide_error *err)
{
    if (!tensors || num < 1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_batcher_new: %d tensors given, need >= 1",
                              tensors ? num : 0);
    if (batch_size < 1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_batcher_new: batch_size %lld, need >= 1",
                              (long long)batch_size);
    for (int i = 0; i < num; i++) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        if (!tensors[i])
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_batcher_new: tensor %d is NULL", i);
        if (tide_tensor_rank(tensors[i]) < 1)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "tide_batcher_new: tensor %d is a scalar; batching needs a first "
                                  "dimension", i);
        if (tide_tensor_dim(tensors[i], 0) != tide_tensor_dim(tensors[0], 0))
            return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                  "tide_batcher_new: tensors must share their first dimension: tensor 0 "
                                  "is %s, tensor %d is %s",
                                  tide_shape_format(tide_tensor_shape(tensors[0]), a, sizeof a), i,
                                  tide_shape_format(tide_tensor_shape(tensors[i]), b, sizeof b));
    }
    int64_t rows = tide_tensor_dim(tensors[0], 0);
    if (rows == 0 || (drop_remainder && rows < batch_size))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "tide_batcher_new: %lld rows make no batch of %lld%s", (long long)rows,
                              (long long)batch_size, rows ? " with drop_remainder" : "");
    return TIDE_OK;
}

tide_batcher *tide_batcher_new(tide_tensor *const *tensors, int num, int64_t batch_size, bool shuffle,
                               uint64_t seed, bool drop_remainder, tide_error *err)
{
    if (check_tensors(tensors, num, batch_size, drop_remainder, err) != TIDE_OK)
        return NULL;
    tide_batcher *b = calloc(1, sizeof *b);
    int64_t rows = tide_tensor_dim(tensors[0], 0);
    if (b) {
        b->tensors = calloc((size_t)num, sizeof *b->tensors);
        b->row_bytes = calloc((size_t)num, sizeof *b->row_bytes);
        b->batch = calloc((size_t)num, sizeof *b->batch);
        b->order = shuffle ? malloc((size_t)rows * sizeof *b->order) : NULL;
    }
    if (!b || !b->tensors || !b->row_bytes || !b->batch || (shuffle && !b->order)) {
        tide_batcher_free(b);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "tide_batcher_new: out of memory");
        return NULL;
    }
    b->num = num;
    b->rows = rows;
    b->batch_size = batch_size;
    b->shuffle = shuffle;
    b->drop_remainder = drop_remainder;
    b->rng = seed;
    for (int i = 0; i < num; i++) {
        b->tensors[i] = tide_tensor_retain(tensors[i]);
        b->row_bytes[i] = tide_tensor_byte_size(tensors[i]) / (size_t)rows;
    }
    if (shuffle) {
        for (int64_t r = 0; r < rows; r++)
            b->order[r] = r;
        shuffle_rows(b);
    }
    return b;
}

void tide_batcher_free(tide_batcher *b)
{
    if (!b)
        return;
    for (int i = 0; b->tensors && i < b->num; i++)
        tide_tensor_release(b->tensors[i]);
    free(b->tensors);
    free(b->row_bytes);
    free(b->order);
    free(b->batch);
    free(b);
}

/* ---------------------------------------------------------------- batches */

/* Rows order[first .. first+count) of t, gathered into a new tensor. */
static tide_tensor *gather_rows(const tide_batcher *b, int k, int64_t first, int64_t count)
{
    tide_tensor *src = b->tensors[k];
    tide_shape shape = *tide_tensor_shape(src);
    shape.dims[0] = count;
    tide_tensor *dst = tide_tensor_new_uninitialized(tide_tensor_dtype(src), &shape, NULL);
    if (!dst)
        return NULL;
    if (tide_tensor_dtype(src) == TIDE_STRING) {
        int64_t per_row = tide_tensor_num_elements(src) / b->rows;
        for (int64_t r = 0; r < count; r++)
            for (int64_t e = 0; e < per_row; e++) {
                size_t len;
                const char *s = tide_tensor_string_get(src, b->order[first + r] * per_row + e, &len);
                if (tide_tensor_string_set(dst, r * per_row + e, s, len, NULL) != TIDE_OK) {
                    tide_tensor_release(dst);
                    return NULL;
                }
            }
        return dst;
    }
    const unsigned char *from = tide_tensor_data(src);
    unsigned char *to = tide_tensor_data(dst);
    size_t row = b->row_bytes[k];
    for (int64_t r = 0; r < count; r++)
        memcpy(to + (size_t)r * row, from + (size_t)b->order[first + r] * row, row);
    return dst;
}

bool tide_batcher_next(tide_batcher *b, tide_tensor **out, tide_error *err)
{
    if (!b || !out) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "batcher: NULL %s", b ? "output array" : "batcher");
        return false;
    }
    int64_t epoch_rows = b->drop_remainder ? b->rows - b->rows % b->batch_size : b->rows;
    if (b->next_row >= epoch_rows) {
        b->epoch++;
        b->next_row = 0;
        if (b->shuffle)
            shuffle_rows(b);
        return false;
    }
    int64_t count = epoch_rows - b->next_row < b->batch_size ? epoch_rows - b->next_row : b->batch_size;
    tide_tensor **batch = b->batch;
    for (int k = 0; k < b->num; k++) {
        batch[k] = b->shuffle ? gather_rows(b, k, b->next_row, count)
                              : tide_tensor_slice(b->tensors[k], b->next_row, b->next_row + count, NULL);
        if (!batch[k]) { /* out of memory: nothing handed out, the position is kept */
            while (k--)
                tide_tensor_release(batch[k]);
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "batcher: out of memory gathering a batch of %lld "
                           "rows", (long long)count);
            return false;
        }
    }
    memcpy(out, batch, (size_t)b->num * sizeof *batch);
    b->next_row += count;
    return true;
}

int64_t tide_batcher_epoch(const tide_batcher *b)
{
    return b ? b->epoch : 0;
}

int64_t tide_batcher_batches_per_epoch(const tide_batcher *b)
{
    if (!b)
        return 0;
    return b->drop_remainder ? b->rows / b->batch_size : (b->rows + b->batch_size - 1) / b->batch_size;
}
