/* linalg_ops.c — definitions of the matrix ops: MatMul, BatchMatMulV2 (batch dimensions broadcast),
 * BatchMatMul (TensorFlow 1.x's first version: equal batch dimensions), MatrixInverse and MatrixDeterminant. Their shape functions work on
 * partial shapes: a known rank or dimension is checked (a mismatch fails with both shapes named),
 * an unknown one stays unknown in the output. Kernels: kernels/cpu/matmul.c, kernels/cpu/linalg.c. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../tide_op.h"
#include "linalg_ops.h"
#include "op_util.h"

static bool attr_flag(tide_shape_ctx *ctx, const char *name)
{
    bool v = false;
    tide_attrs_get_bool(tide_shape_attrs(ctx), name, &v);
    return v;
}

static const char *yes_no(bool v) { return v ? "true" : "false"; }

/* The known one of two dims that must agree, or -1 when both are unknown. */
static int64_t merge_dim(int64_t a, int64_t b) { return a >= 0 ? a : b; }

static tide_status matmul_shape(tide_shape_ctx *ctx)
{
    tide_shape a = tide_shape_input(ctx, 0), b = tide_shape_input(ctx, 1);
    bool ta = attr_flag(ctx, "transpose_a"), tb = attr_flag(ctx, "transpose_b");
    char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
    tide_shape_format(&a, sa, sizeof sa);
    tide_shape_format(&b, sb, sizeof sb);
    if ((a.rank >= 0 && a.rank != 2) || (b.rank >= 0 && b.rank != 2))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "inputs must be matrices (rank 2): a has shape %s, b has shape %s "
                                "(use BatchMatMulV2 for batches)", sa, sb);
    int64_t m = a.rank == 2 ? a.dims[ta ? 1 : 0] : -1, ka = a.rank == 2 ? a.dims[ta ? 0 : 1] : -1;
    int64_t kb = b.rank == 2 ? b.dims[tb ? 1 : 0] : -1, n = b.rank == 2 ? b.dims[tb ? 0 : 1] : -1;
    if (ka >= 0 && kb >= 0 && ka != kb)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "inner dimensions differ: a %s (transpose_a=%s) gives %lld columns, "
                                "b %s (transpose_b=%s) gives %lld rows", sa, yes_no(ta),
                                (long long)ka, sb, yes_no(tb), (long long)kb);
    tide_shape out = tide_shape_matrix(m, n);
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

/* BatchMatMulV2 (batch dimensions broadcast) and BatchMatMul (equal_batches: they must agree). */
static tide_status batch_matmul_shape_of(tide_shape_ctx *ctx, bool equal_batches)
{
    tide_shape x = tide_shape_input(ctx, 0), y = tide_shape_input(ctx, 1);
    bool ax = attr_flag(ctx, "adj_x"), ay = attr_flag(ctx, "adj_y");
    char sx[TIDE_SHAPE_STR_MAX], sy[TIDE_SHAPE_STR_MAX];
    tide_shape_format(&x, sx, sizeof sx);
    tide_shape_format(&y, sy, sizeof sy);
    if ((x.rank >= 0 && x.rank < 2) || (y.rank >= 0 && y.rank < 2))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "inputs must have rank >= 2: x has shape %s, y has shape %s", sx, sy);
    if (x.rank < 0 || y.rank < 0) {
        tide_shape unknown = tide_shape_unknown();
        tide_shape_set_output(ctx, 0, &unknown);
        return TIDE_OK;
    }
    int64_t m = x.dims[x.rank - (ax ? 1 : 2)], kx = x.dims[x.rank - (ax ? 2 : 1)];
    int64_t ky = y.dims[y.rank - (ay ? 1 : 2)], n = y.dims[y.rank - (ay ? 2 : 1)];
    if (kx >= 0 && ky >= 0 && kx != ky)
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "inner dimensions differ: x %s (adj_x=%s) gives %lld columns, "
                                "y %s (adj_y=%s) gives %lld rows", sx, yes_no(ax), (long long)kx,
                                sy, yes_no(ay), (long long)ky);
    tide_shape bx = tide_shape_make(x.rank - 2, x.dims), by = tide_shape_make(y.rank - 2, y.dims);
    tide_shape out;
    if (equal_batches && !tide_linalg_same_batches(&bx, &by, &out))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "batch dimensions differ: x %s, y %s (BatchMatMul "
                                "does not broadcast them; BatchMatMulV2 does)", sx, sy);
    if (!equal_batches && !tide_shape_broadcast(&bx, &by, &out))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT,
                                "batch dimensions do not broadcast: x %s, y %s", sx, sy);
    out.dims[out.rank] = m;
    out.dims[out.rank + 1] = n;
    out.rank += 2;
    tide_shape_set_output(ctx, 0, &out);
    return TIDE_OK;
}

static tide_status batch_matmul_v2_shape(tide_shape_ctx *ctx) { return batch_matmul_shape_of(ctx, false); }
static tide_status batch_matmul_shape(tide_shape_ctx *ctx) { return batch_matmul_shape_of(ctx, true); }

/* Shared with the kernel (kernels/cpu/matmul.c); see linalg_ops.h. */
bool tide_linalg_same_batches(const tide_shape *bx, const tide_shape *by, tide_shape *merged)
{
    if (bx->rank != by->rank)
        return false;
    *merged = *bx;
    for (int i = 0; i < bx->rank; i++) {
        if (bx->dims[i] >= 0 && by->dims[i] >= 0 && bx->dims[i] != by->dims[i])
            return false;
        merged->dims[i] = bx->dims[i] >= 0 ? bx->dims[i] : by->dims[i];
    }
    return true;
}

/* Shared with the kernels (kernels/cpu/linalg.c), which check their input with it; see
 * linalg_ops.h. */
bool tide_linalg_check_square(const tide_shape *s, char *msg, size_t size)
{
    if (s->rank < 0)
        return true;
    char buf[TIDE_SHAPE_STR_MAX];
    if (s->rank < 2)
        return snprintf(msg, size,
                        "input must have rank >= 2 (a batch of square matrices), got shape %s",
                        tide_shape_format(s, buf, sizeof buf)), false;
    int64_t r = s->dims[s->rank - 2], c = s->dims[s->rank - 1];
    if (r >= 0 && c >= 0 && r != c)
        return snprintf(msg, size, "input must be square matrices, got shape %s (%lld x %lld)",
                        tide_shape_format(s, buf, sizeof buf), (long long)r, (long long)c), false;
    return true;
}

/* Checks that input 0 is a batch of square matrices as far as known; *rows gets their size. */
static tide_status square_input(tide_shape_ctx *ctx, tide_shape *s, int64_t *rows)
{
    *s = tide_shape_input(ctx, 0);
    *rows = -1;
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_linalg_check_square(s, msg, sizeof msg))
        return tide_shape_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    if (s->rank >= 2)
        *rows = merge_dim(s->dims[s->rank - 2], s->dims[s->rank - 1]);
    return TIDE_OK;
}

static tide_status inverse_shape(tide_shape_ctx *ctx)
{
    tide_shape s;
    int64_t n;
    tide_status st = square_input(ctx, &s, &n);
    if (st != TIDE_OK)
        return st;
    if (s.rank >= 2)
        s.dims[s.rank - 2] = s.dims[s.rank - 1] = n; /* one known side gives the other */
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static tide_status determinant_shape(tide_shape_ctx *ctx)
{
    tide_shape s;
    int64_t n;
    tide_status st = square_input(ctx, &s, &n);
    if (st != TIDE_OK)
        return st;
    if (s.rank >= 2)
        s.rank -= 2;
    tide_shape_set_output(ctx, 0, &s);
    return TIDE_OK;
}

static void register_linalg_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "MatMul",
        .inputs = {"a: T", "b: T"},
        .outputs = {"product: T"},
        .attrs = {"transpose_a: bool = false", "transpose_b: bool = false",
                  "T: {float16, bfloat16, float32, float64, int32, int64, complex64, complex128}"},
        .shape_fn = matmul_shape,
        .doc = "Multiplies matrix a by matrix b: product[i, j] = sum_k a[i, k] * b[k, j], with a "
               "(or b) transposed first when transpose_a (transpose_b) is set; complex inputs are "
               "transposed without conjugation. Both inputs must have rank 2 and agreeing inner "
               "dimensions, else INVALID_ARGUMENT naming both shapes; an inner dimension of 0 gives "
               "zeros. Floating point and complex use BLAS; int32 and int64 sums wrap around modulo "
               "2^32 or 2^64 on overflow (two's complement), without error. float16 and bfloat16 "
               "are computed in float32 and rounded once (float32 products and sums).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "BatchMatMulV2",
        .alias = "batch_matmul",
        .inputs = {"x: T", "y: T"},
        .outputs = {"output: T"},
        .attrs = {"adj_x: bool = false", "adj_y: bool = false",
                  "T: {float16, bfloat16, float32, float64, int32, int64, complex64, complex128}"},
        .shape_fn = batch_matmul_v2_shape,
        .doc = "Multiplies batches of matrices: output[..., :, :] = x[..., :, :] @ y[..., :, :] over "
               "the last two dimensions, with the leading (batch) dimensions broadcast NumPy-style "
               "(what tf.matmul emits for batches in TensorFlow 1.15): x [..., M, K] and y [..., K, N] "
               "give [..., M, N]. adj_x (adj_y) uses the adjoint of each x (y) matrix: its transpose, "
               "conjugated for complex dtypes. Inputs of rank < 2, differing inner dimensions or "
               "batch dimensions that do not broadcast are INVALID_ARGUMENT. int32 and int64 sums "
               "wrap around on overflow; float16 and bfloat16 are computed in float32 and rounded once.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "BatchMatMul",
        .inputs = {"x: T", "y: T"},
        .outputs = {"output: T"},
        .attrs = {"adj_x: bool = false", "adj_y: bool = false",
                  "T: {float16, bfloat16, float32, float64, int32, int64, complex64, complex128}"},
        .shape_fn = batch_matmul_shape,
        .doc = "Multiplies batches of matrices as BatchMatMulV2, but x and y must have the same rank "
               "and the same batch dimensions (TensorFlow 1.x's first version, which does not "
               "broadcast them): x [..., M, K] and y [..., K, N] give [..., M, N]. Differing batch "
               "dimensions are INVALID_ARGUMENT naming both shapes.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "MatrixInverse",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"adjoint: bool = false", "T: {float32, float64, complex64, complex128}"},
        .shape_fn = inverse_shape,
        .doc = "Inverts each square matrix in the last two dimensions of input (shape [..., M, M]); "
               "with adjoint, inverts its adjoint (conjugate transpose) instead. Uses an LU "
               "factorisation with partial pivoting (LAPACK getrf/getri). A matrix whose LU has an "
               "exactly zero pivot is INVALID_ARGUMENT \"matrix is not invertible\" naming the batch "
               "element; a nearly singular one gives an inaccurate result, as in TensorFlow. Rank < 2 "
               "or non-square input is INVALID_ARGUMENT; no integer dtypes.",
    });
    tide_op_register(&(tide_op_spec){
        .name = "MatrixDeterminant",
        .inputs = {"input: T"},
        .outputs = {"output: T"},
        .attrs = {"T: {float32, float64, complex64, complex128}"},
        .shape_fn = determinant_shape,
        .doc = "The determinant of each square matrix in the last two dimensions of input: shape "
               "[..., M, M] gives [...]. Computed from an LU factorisation with partial pivoting "
               "(LAPACK getrf) as the signed product of the pivots, scaled so that only a determinant "
               "outside the dtype's range overflows (to inf) or underflows (to 0). A singular matrix "
               "gives 0 and a 0 x 0 matrix gives 1. Rank < 2 or non-square input is "
               "INVALID_ARGUMENT; no integer dtypes.",
    });
}
TIDE_REGISTER(register_linalg_ops)
