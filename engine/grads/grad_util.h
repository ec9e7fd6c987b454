/* grad_util.h — helpers shared by the gradient functions of engine/grads (private to them): the
 * forward node's tensors, their static dtype and shape, integer constants and shape vectors, the
 * complex-number refusal, and registering a table of gradient functions. Header-only (static
 * inline): each file uses a few. */
#ifndef TIDE_GRAD_UTIL_H
#define TIDE_GRAD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* In a gradient function (its context named ctx): the forward node's input i, its output i, and
 * the gradient flowing into output i. */
#define X(i) tide_grad_x(ctx, i)
#define Y(i) tide_grad_y(ctx, i)
#define DY(i) tide_grad_dy(ctx, i)

#define MAX_INDEX_CONST (4 * TIDE_MAX_RANK) /* values of an int_const */
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const tide_output NONE = {0}; /* no tensor: an input that gets no gradient */

/* t's dtype and shape as known at graph time. */
static inline tide_dtype dtype_of(tide_output t) { return tide_node_output_dtype(t.node, t.index); }
static inline tide_shape shape_of(tide_output t)
{
    return t.node ? tide_node_output_shape(t.node, t.index) : tide_shape_unknown();
}

/* The forward node's bool attr `name`, or `absent` when it has none. */
static inline bool attr_bool(tide_grad_ctx *ctx, const char *name, bool absent)
{
    bool v = absent;
    tide_attrs_get_bool(tide_grad_attrs(ctx), name, &v);
    return v;
}

/* A scalar Const of x's dtype holding v. */
static inline tide_output scalar_like(tide_grad_ctx *ctx, tide_output x, double v)
{
    return tide_grad_scalar(ctx, dtype_of(x), v);
}

/* True for an op on real numbers; on complex ones fails the gradient (it would need conjugates,
 * which these functions do not build). */
static inline bool real_only(tide_grad_ctx *ctx)
{
    tide_dtype dt = dtype_of(X(0));
    if (!tide_dtype_is_complex(dt))
        return true;
    tide_grad_error(ctx, TIDE_UNIMPLEMENTED, "gradients of %s on %s (complex) tensors are not "
                    "supported", tide_node_op(tide_grad_node(ctx)), tide_dtype_name(dt));
    return false;
}

/* An int32 or int64 Const of shape s holding v[0..n) (n <= MAX_INDEX_CONST). */
static inline tide_output int_const(tide_grad_ctx *ctx, tide_dtype dt, const int64_t *v, int n,
                                    const tide_shape *s)
{
    int32_t v32[MAX_INDEX_CONST];
    for (int i = 0; i < n && dt == TIDE_INT32; i++)
        v32[i] = (int32_t)v[i];
    const void *data = dt == TIDE_INT32 ? (const void *)v32 : (const void *)v;
    tide_tensor *t = tide_tensor_new_copy(dt, s, data, (size_t)n * tide_dtype_size(dt), NULL);
    if (!t) {
        tide_grad_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NONE;
    }
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_tensor(a, "value", t);
    tide_attrs_set_type(a, "dtype", dt);
    tide_tensor_release(t);
    tide_output out = tide_grad_op(ctx, "Const", NULL, 0, a);
    tide_attrs_free(a);
    return out;
}

/* An int32 or int64 Const vector holding v[0..n). */
static inline tide_output index_const(tide_grad_ctx *ctx, tide_dtype dt, const int64_t *v, int n)
{
    tide_shape s = tide_shape_vector(n);
    return int_const(ctx, dt, v, n, &s);
}

/* The shape of t as a vector of dtype dt (int32/int64): a Const when known at graph time, else a
 * Shape node. */
static inline tide_output shape_tensor(tide_grad_ctx *ctx, tide_output t, tide_dtype dt)
{
    tide_shape s = shape_of(t);
    if (tide_shape_is_fully_defined(&s))
        return index_const(ctx, dt, s.dims, s.rank);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "out_type", dt);
    tide_output out = tide_grad_op(ctx, "Shape", &t, 1, a);
    tide_attrs_free(a);
    return out;
}

/* A file's gradient functions, registered by register_gradients; register_no_gradients declares
 * ops through which no gradient flows. */
typedef struct grad_entry {
    const char *op;
    tide_grad_fn fn;
} grad_entry;

static inline void register_gradients(const grad_entry *table, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tide_gradient_register(table[i].op, table[i].fn);
}

static inline void register_no_gradients(const char *const *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tide_gradient_register(ops[i], NULL);
}

#endif
