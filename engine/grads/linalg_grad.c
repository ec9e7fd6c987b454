/* linalg_grad.c — gradient functions of MatMul (every transpose combination), BatchMatMulV2 (batch
 * dimensions broadcast, so each gradient is summed back over the batch dimensions its operand was
 * stretched along), BatchMatMul (equal batch dimensions: products of the same op), MatrixInverse
 * and MatrixDeterminant, with TensorFlow's formulas:
 *   C = A B:         dA = dC B^T, dB = A^T dC (transposes folded into the MatMul attrs)
 *   Y = A^-1:        dA = -Y^T dY Y^T        (with adjoint: Y = A^-T, dA = -Y dY^T Y)
 *   d = det(A):      dA = dd * d * A^-T
 * Real dtypes only: the gradient of a complex op fails with UNIMPLEMENTED (it would need
 * conjugates). */
#include "grad_util.h"

/* Names of the transpose attrs of MatMul and the batch products. */
typedef struct product_op {
    const char *op, *ta, *tb;
} product_op;

static const product_op MATMUL = {"MatMul", "transpose_a", "transpose_b"};
static const product_op BATCH_MATMUL = {"BatchMatMulV2", "adj_x", "adj_y"};
static const product_op BATCH_MATMUL_V1 = {"BatchMatMul", "adj_x", "adj_y"};

static tide_output product(tide_grad_ctx *ctx, const product_op *p, tide_output a, bool ta, tide_output b,
                           bool tb)
{
    tide_attrs *attrs = tide_attrs_new();
    tide_attrs_set_bool(attrs, p->ta, ta);
    tide_attrs_set_bool(attrs, p->tb, tb);
    tide_output out = tide_grad_op(ctx, p->op, (tide_output[]){a, b}, 2, attrs);
    tide_attrs_free(attrs);
    return out;
}

/* The gradients of C = op(A) op(B) for the four transpose combinations; only those wanted. */
static void product_grads(tide_grad_ctx *ctx, const product_op *p, tide_output *da, tide_output *db)
{
    tide_output a = X(0), b = X(1), g = DY(0);
    bool ta = attr_bool(ctx, p->ta, false), tb = attr_bool(ctx, p->tb, false);
    bool want_a = tide_grad_wants(ctx, 0), want_b = tide_grad_wants(ctx, 1);
    if (!ta && !tb) {
        *da = want_a ? product(ctx, p, g, false, b, true) : *da;
        *db = want_b ? product(ctx, p, a, true, g, false) : *db;
    } else if (!ta && tb) {
        *da = want_a ? product(ctx, p, g, false, b, false) : *da;
        *db = want_b ? product(ctx, p, g, true, a, false) : *db;
    } else if (ta && !tb) {
        *da = want_a ? product(ctx, p, b, false, g, true) : *da;
        *db = want_b ? product(ctx, p, a, false, g, false) : *db;
    } else {
        *da = want_a ? product(ctx, p, b, true, g, true) : *da;
        *db = want_b ? product(ctx, p, g, true, a, true) : *db;
    }
}

/* MatMul, and BatchMatMul (x, y and the output have the same batch dimensions, so the gradients
 * are batch products of the same op, TensorFlow's gradient, with nothing to sum). */
static tide_status same_op_product_grad(tide_grad_ctx *ctx, const product_op *p)
{
    tide_output da = {0}, db = {0};
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    product_grads(ctx, p, &da, &db);
    if (da.node)
        tide_grad_set_dx(ctx, 0, da);
    if (db.node)
        tide_grad_set_dx(ctx, 1, db);
    return tide_grad_status(ctx);
}

static tide_status matmul_grad(tide_grad_ctx *ctx) { return same_op_product_grad(ctx, &MATMUL); }
static tide_status batch_matmul_grad(tide_grad_ctx *ctx)
{
    return same_op_product_grad(ctx, &BATCH_MATMUL_V1);
}

/* As MatMul, then each gradient (of the broadcast batch shape) is summed back to its operand's
 * batch shape: the full gradient has the operand's last two dims, so unbroadcasting the operand
 * against the gradient itself picks exactly the stretched batch axes. */
static tide_status batch_matmul_v2_grad(tide_grad_ctx *ctx)
{
    tide_output da = {0}, db = {0};
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    product_grads(ctx, &BATCH_MATMUL, &da, &db);
    if (da.node)
        tide_grad_set_dx(ctx, 0, tide_grad_unbroadcast(ctx, da, X(0), da));
    if (db.node)
        tide_grad_set_dx(ctx, 1, tide_grad_unbroadcast(ctx, db, X(1), db));
    return tide_grad_status(ctx);
}

static tide_status matrix_inverse_grad(tide_grad_ctx *ctx)
{
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    bool adjoint = attr_bool(ctx, "adjoint", false);
    tide_output inv = Y(0);
    tide_output right = product(ctx, &BATCH_MATMUL, DY(0), adjoint, inv, !adjoint);
    tide_output both = product(ctx, &BATCH_MATMUL, inv, !adjoint, right, false);
    tide_grad_set_dx(ctx, 0, tide_grad_op1(ctx, "Neg", both));
    return tide_grad_status(ctx);
}

static tide_status matrix_determinant_grad(tide_grad_ctx *ctx)
{
    if (!real_only(ctx))
        return tide_grad_status(ctx);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_bool(a, "adjoint", true);
    tide_output inv_t = tide_grad_op(ctx, "MatrixInverse", (tide_output[]){X(0)}, 1, a);
    tide_attrs_free(a);
    tide_output last = tide_grad_scalar(ctx, TIDE_INT32, -1);
    tide_output scale = tide_grad_op2(ctx, "Mul", DY(0), Y(0));
    scale = tide_grad_op2(ctx, "ExpandDims", tide_grad_op2(ctx, "ExpandDims", scale, last), last);
    tide_grad_set_dx(ctx, 0, tide_grad_op2(ctx, "Mul", scale, inv_t));
    return tide_grad_status(ctx);
}

static void register_linalg_gradients(void)
{
    tide_gradient_register("MatMul", matmul_grad);
    tide_gradient_register("BatchMatMulV2", batch_matmul_v2_grad);
    tide_gradient_register("BatchMatMul", batch_matmul_grad);
    tide_gradient_register("MatrixInverse", matrix_inverse_grad);
    tide_gradient_register("MatrixDeterminant", matrix_determinant_grad);
}
TIDE_REGISTER(register_linalg_gradients)
