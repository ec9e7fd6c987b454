/* graph_util.h — small helpers for engine tests that build graphs node by node. Header-only. */
#ifndef TIDE_TEST_GRAPH_UTIL_H
#define TIDE_TEST_GRAPH_UTIL_H

#include "harness.h"

static inline tide_node *gu_finish(tide_node_builder *b)
{
    tide_error *err = tide_error_new();
    tide_node *n = tide_node_builder_finish(b, err);
    if (!n)
        fprintf(stderr, "building a node failed: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(n);
    tide_error_free(err);
    return n;
}

static inline tide_node *gu_const(tide_graph *g, const char *name, tide_tensor *value)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", name);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_tensor_release(value);
    return gu_finish(b);
}

static inline tide_node *gu_scalar_f32(tide_graph *g, const char *name, float v)
{
    return gu_const(g, name, th_f32(0, NULL, &v));
}

static inline tide_node *gu_placeholder(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    if (rank >= 0) {
        tide_shape s = tide_shape_make(rank, dims);
        tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    }
    return gu_finish(b);
}

/* op with the given inputs (output 0 of each), no attrs. */
static inline tide_node *gu_op(tide_graph *g, const char *op, const char *name, int n, tide_node *const *ins)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){ins[i], 0});
    return gu_finish(b);
}

static inline tide_node *gu_variable(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims,
                                     const char *container)
{
    tide_node_builder *b = tide_node_builder_new(g, "Variable", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_shape s = tide_shape_make(rank, dims);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    if (container)
        tide_attrs_set_string(tide_node_builder_attrs(b), "container", container);
    return gu_finish(b);
}

/* Fetches output 0 of n (no feeds); NULL (and a CUnit failure) on error. */
static inline tide_tensor *gu_fetch(tide_session *s, tide_node *n)
{
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    tide_output o = {n, 0};
    if (tide_session_run(s, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, err) != TIDE_OK)
        fprintf(stderr, "run failed: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL(out);
    tide_error_free(err);
    return out;
}

static inline tide_status gu_target(tide_session *s, tide_node *n, tide_error *err)
{
    return tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &n, 1, NULL, err);
}

#endif
