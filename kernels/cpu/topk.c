/* topk.c — CPU kernels of TopKV2, InTopK and InTopKV2 (engine/ops/topk_ops.c).
 *
 * TopKV2 sorts each row's (value, index) pairs with one comparator (larger first, nan above every
 * number, the lower index first among equals), which makes the result a total order, then copies
 * the first k values bit for bit. Integer rows compare as int64 (exact), float rows as double.
 * Rows are split over the engine's threads. InTopK counts, per row, the classes predicted higher
 * than the target. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/op_util.h"
#include "cpu_util.h"

typedef struct ranked {
    union {
        double f;
        int64_t i;
    } key;
    int32_t index;
} ranked;

static int by_float(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    bool na = isnan(a->key.f), nb = isnan(b->key.f);
    if (na != nb)
        return na ? -1 : 1;
    if (!na && a->key.f != b->key.f)
        return a->key.f > b->key.f ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int by_int(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->key.i != b->key.i)
        return a->key.i > b->key.i ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

typedef struct top_k_job {
    const tide_tensor *in;
    tide_tensor *values, *indices;
    int64_t n, k;
    bool failed; /* out of memory for a row's scratch */
} top_k_job;

/* Element i of an integer tensor, exactly. */
static int64_t int_key(const tide_tensor *t, int64_t i)
{
    const void *d = tide_tensor_data(t);
    switch (tide_tensor_dtype(t)) {
    case TIDE_INT8: return ((const int8_t *)d)[i];
    case TIDE_INT16: return ((const int16_t *)d)[i];
    case TIDE_INT32: return ((const int32_t *)d)[i];
    case TIDE_UINT8: return ((const uint8_t *)d)[i];
    case TIDE_UINT16: return ((const uint16_t *)d)[i];
    default: return ((const int64_t *)d)[i];
    }
}

static void top_k_rows(int64_t begin, int64_t end, void *arg)
{
    top_k_job *j = arg;
    ranked *row = malloc((size_t)(j->n ? j->n : 1) * sizeof *row);
    if (!row) {
        j->failed = true;
        return;
    }
    tide_dtype dt = tide_tensor_dtype(j->in);
    bool flt = tide_dtype_is_float(dt);
    size_t es = tide_dtype_size(dt);
    for (int64_t r = begin; r < end; r++) {
        for (int64_t c = 0; c < j->n; c++) {
            int64_t at = r * j->n + c;
            if (flt)
                row[c].key.f = tide_tensor_get_f64(j->in, at);
            else
                row[c].key.i = int_key(j->in, at);
            row[c].index = (int32_t)c;
        }
        qsort(row, (size_t)j->n, sizeof *row, flt ? by_float : by_int);
        for (int64_t c = 0; c < j->k; c++) {
            memcpy((char *)tide_tensor_data(j->values) + (size_t)(r * j->k + c) * es,
                   (const char *)tide_tensor_data(j->in) + (size_t)(r * j->n + row[c].index) * es, es);
            ((int32_t *)tide_tensor_data(j->indices))[r * j->k + c] = row[c].index;
        }
    }
    free(row);
}

static tide_status top_k_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *in = tide_kernel_input(ctx, 0), *kt = tide_kernel_input(ctx, 1);
    const tide_shape *s = tide_tensor_shape(in);
    char a[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(kt) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "k must be a scalar, got shape %s",
                                 tide_shape_format(tide_tensor_shape(kt), a, sizeof a));
    if (s->rank == 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "input must have rank >= 1, got a scalar");
    int64_t k = tide_op_int_at(kt, 0), n = s->dims[s->rank - 1];
    if (k < 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "k must be >= 0, got %lld", (long long)k);
    if (n < k)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "input of shape %s has fewer than k = %lld entries "
                                 "in its last dimension", tide_shape_format(s, a, sizeof a), (long long)k);
    if (n > INT32_MAX)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "the last dimension of input %s does not fit the "
                                 "int32 indices", tide_shape_format(s, a, sizeof a));
    tide_shape out = *s;
    out.dims[s->rank - 1] = k;
    top_k_job j = {.in = in, .n = n, .k = k};
    j.values = tide_kernel_alloc_output(ctx, 0, &out, false);
    j.indices = j.values ? tide_kernel_alloc_output(ctx, 1, &out, false) : NULL;
    if (!j.indices)
        return tide_kernel_status(ctx);
    int64_t rows = n ? tide_tensor_num_elements(in) / n : 0;
    if (k == 0 || rows == 0)
        return TIDE_OK;
    tide_kernel_parallel_for(ctx, rows, 20.0 * (double)n, top_k_rows, &j);
    if (j.failed)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory sorting rows of %lld entries",
                                 (long long)n);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- InTopK, InTopKV2 */

static tide_status in_top_k_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *p = tide_kernel_input(ctx, 0), *t = tide_kernel_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    int64_t k = 0;
    if (tide_kernel_num_inputs(ctx) > 2) {
        const tide_tensor *kt = tide_kernel_input(ctx, 2);
        if (tide_tensor_rank(kt) != 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "k must be a scalar, got shape %s",
                                     tide_shape_format(tide_tensor_shape(kt), a, sizeof a));
        k = tide_op_int_at(kt, 0);
    } else {
        tide_attrs_get_int(tide_kernel_attrs(ctx), "k", &k);
    }
    if (tide_tensor_rank(p) != 2 || tide_tensor_rank(t) != 1 || tide_tensor_dim(p, 0) != tide_tensor_dim(t, 0))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "predictions must be a matrix [batch, classes] and "
                                 "targets a vector [batch], got %s and %s",
                                 tide_shape_format(tide_tensor_shape(p), a, sizeof a),
                                 tide_shape_format(tide_tensor_shape(t), b, sizeof b));
    int64_t batch = tide_tensor_dim(p, 0), classes = tide_tensor_dim(p, 1);
    tide_shape os = tide_shape_vector(batch);
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &os, false);
    if (!out)
        return tide_kernel_status(ctx);
    const float *pv = tide_tensor_data(p);
    uint8_t *o = tide_tensor_data(out);
    for (int64_t r = 0; r < batch; r++) {
        int64_t target = tide_op_int_at(t, r);
        if (target < 0 || target >= classes || !isfinite(pv[r * classes + target])) {
            o[r] = 0;
            continue;
        }
        float mine = pv[r * classes + target];
        int64_t above = 0;
        for (int64_t c = 0; c < classes; c++)
            above += pv[r * classes + c] > mine;
        o[r] = above < k;
    }
    return TIDE_OK;
}

static void register_topk_kernels(void)
{
    static const tide_cpu_kernel table[] = {
        {"TopKV2", top_k_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"InTopK", in_top_k_compute, NULL, 0},
        {"InTopKV2", in_top_k_compute, NULL, 0},
    };
    tide_cpu_register_kernels(table, sizeof table / sizeof table[0]);
}
TIDE_REGISTER(register_topk_kernels)
