/* cpu_util.c — NumPy broadcasting, kernel-table registration and output allocation for the CPU
 * kernels (see cpu_util.h). */
#include "cpu_util.h"

#include <stdlib.h>
#include <string.h>

bool tide_bcast_init(tide_bcast *bc, const tide_shape *a, const tide_shape *b)
{
    memset(bc, 0, sizeof *bc);
    if (!tide_shape_broadcast(a, b, &bc->out))
        return false;
    bc->out_n = tide_shape_num_elements(&bc->out);
    bc->same = tide_shape_equal(a, b);
    bc->a_scalar = tide_shape_num_elements(a) == 1;
    bc->b_scalar = tide_shape_num_elements(b) == 1;
    int r = bc->out.rank;
    /* Align both to the output's rank, then merge adjacent dims with the same broadcast pattern. */
    int64_t ad[TIDE_MAX_RANK], bd[TIDE_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        ad[i] = ia >= 0 ? a->dims[ia] : 1;
        bd[i] = ib >= 0 ? b->dims[ib] : 1;
    }
    int64_t dims[TIDE_MAX_RANK];
    bool abc[TIDE_MAX_RANK], bbc[TIDE_MAX_RANK]; /* broadcast along this dim? */
    int n = 0;
    for (int i = 0; i < r; i++) {
        int64_t d = bc->out.dims[i];
        if (d == 1)
            continue; /* size-1 output dims change nothing */
        bool ab = ad[i] == 1, bb = bd[i] == 1;
        if (n > 0 && abc[n - 1] == ab && bbc[n - 1] == bb) {
            dims[n - 1] = tide_dim_mul(dims[n - 1], d);
        } else {
            dims[n] = d;
            abc[n] = ab;
            bbc[n] = bb;
            n++;
        }
    }
    if (n == 0) { /* scalar or all ones */
        dims[0] = 1;
        abc[0] = bbc[0] = false;
        n = 1;
    }
    bc->rank = n;
    int64_t as = 1, bs = 1;
    for (int i = n - 1; i >= 0; i--) {
        bc->dims[i] = dims[i];
        bc->a_strides[i] = abc[i] ? 0 : as;
        bc->b_strides[i] = bbc[i] ? 0 : bs;
        if (!abc[i])
            as *= dims[i];
        if (!bbc[i])
            bs *= dims[i];
    }
    bc->inner = bc->dims[n - 1];
    bc->rows = bc->inner ? bc->out_n / bc->inner : 0;
    bc->a_inner = bc->a_strides[n - 1] ? 1 : 0;
    bc->b_inner = bc->b_strides[n - 1] ? 1 : 0;
    return true;
}

void tide_bcast_row(const tide_bcast *bc, int64_t row, int64_t *a_off, int64_t *b_off)
{
    int64_t ia = 0, ib = 0;
    for (int i = bc->rank - 2; i >= 0; i--) {
        int64_t c = row % bc->dims[i];
        row /= bc->dims[i];
        ia += c * bc->a_strides[i];
        ib += c * bc->b_strides[i];
    }
    *a_off = ia;
    *b_off = ib;
}

void tide_cpu_register_kernels(const tide_cpu_kernel *table, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tide_kernel_register(&(tide_kernel_spec){
            .op = table[i].op,
            .device_type = "cpu",
            .flags = table[i].flags,
            .init = table[i].init,
            .destroy = table[i].init ? free : NULL,
            .compute = table[i].compute,
        });
}

tide_tensor *tide_cpu_alloc_result(tide_kernel_ctx *ctx, const tide_shape *shape, bool no_terms,
                                   tide_status *st)
{
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, shape, no_terms);
    *st = out ? TIDE_OK : tide_kernel_status(ctx);
    return out && !no_terms && tide_shape_num_elements(shape) > 0 ? out : NULL;
}
