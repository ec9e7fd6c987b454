/* test_shape.c — CUnit suite of the shape, index and fill ops: Gather, GatherV2, Fill, ZerosLike,
 * OnesLike, Shape, Rank, Size, ExpandDims, Squeeze, OneHot and Range.
 *
 * Expected values come from reference code written here: Gather and OneHot walk every output
 * element's multi-index and map it back to the inputs (the kernels copy rows instead); Range counts
 * by hand-checked cases and computes elements in double. Eager runs always know input values, so
 * the ops' graph-time side is tested separately: shape inference over Placeholders of partial shape
 * and Consts, and kernel-side errors through a session whose Placeholders hide the values. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Every dtype the byte-moving ops (Gather, Fill, OneHot, ZerosLike, OnesLike) must handle. */
static const tide_dtype NUMERIC[] = {
    TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32,    TIDE_INT64, TIDE_INT8,      TIDE_UINT8,     TIDE_INT16,
    TIDE_UINT16,  TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_BOOL,  TIDE_COMPLEX64, TIDE_COMPLEX128};

/* ---------------------------------------------------------------- tensor helpers */

/* A tensor of dtype dt holding vals converted (bool: != 0; complex: vals[i] - vals[i] i, so both
 * parts are checked). vals may be NULL for an empty tensor. */
static tide_tensor *tensor_of(tide_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    return th_from_doubles(dt, rank, dims, vals, -1);
}

static tide_tensor *scalar_of(tide_dtype dt, double v) { return tensor_of(dt, 0, NULL, &v); }

static tide_tensor *strings_of(int rank, const int64_t *dims, const char *const *s)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    tide_tstring *ts = calloc((size_t)n + 1, sizeof *ts);
    for (int64_t i = 0; i < n; i++)
        ts[i] = (tide_tstring){(char *)s[i], strlen(s[i])};
    tide_tensor *t = th_tensor(TIDE_STRING, rank, dims, ts);
    free(ts);
    return t;
}

static tide_tensor *index_tensor(tide_dtype dt, int rank, const int64_t *dims, const int64_t *v)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        if (dt == TIDE_INT64)
            ((int64_t *)tide_tensor_data(t))[i] = v[i];
        else if (dt == TIDE_INT32)
            ((int32_t *)tide_tensor_data(t))[i] = (int32_t)v[i];
        else
            ((uint8_t *)tide_tensor_data(t))[i] = (uint8_t)v[i];
    }
    return t;
}

static tide_attrs *attr_int(const char *name, int64_t v)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, name, v);
    return a;
}

static tide_attrs *attr_type(const char *name, tide_dtype v)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, name, v);
    return a;
}

static void release(tide_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(t[i]);
}

/* Unravels flat index f over shape s into idx. */
static void unravel(const tide_shape *s, int64_t f, int64_t *idx)
{
    for (int d = s->rank - 1; d >= 0; d--) {
        idx[d] = f % s->dims[d];
        f /= s->dims[d];
    }
}

/* ---------------------------------------------------------------- graph helpers */

/* One input of a test graph: a Placeholder of dtype dt and shape (rank -1: unknown), or a Const. */
typedef struct gin {
    tide_dtype dt;
    tide_shape shape;
    tide_tensor *value; /* non-NULL: a Const of this value */
} gin;

static gin ph(tide_dtype dt, int rank, const int64_t *dims)
{
    gin g = {dt, rank < 0 ? tide_shape_unknown() : tide_shape_make(rank, dims), NULL};
    return g;
}

static gin cst(tide_tensor *v) { return (gin){tide_tensor_dtype(v), tide_shape_unknown(), v}; }

static void copy_attrs(tide_attrs *dst, const tide_attrs *src)
{
    for (int i = 0; src && i < tide_attrs_count(src); i++) {
        const char *name = tide_attrs_name_at(src, i);
        int64_t v;
        tide_dtype t;
        const int64_t *list;
        int n;
        if (tide_attrs_get_int(src, name, &v))
            tide_attrs_set_int(dst, name, v);
        else if (tide_attrs_get_type(src, name, &t))
            tide_attrs_set_type(dst, name, t);
        else if (tide_attrs_get_int_list(src, name, &list, &n))
            tide_attrs_set_int_list(dst, name, list, n);
    }
}

/* Adds op over the inputs to g; NULL with err set on failure. */
static tide_node *build_node(tide_graph *g, const char *op, const gin *ins, int n, const tide_attrs *attrs,
                             tide_node **inputs, tide_error *err)
{
    for (int i = 0; i < n; i++) {
        tide_node_builder *b = tide_node_builder_new(g, ins[i].value ? "Const" : "Placeholder", NULL);
        tide_attrs *a = tide_node_builder_attrs(b);
        tide_attrs_set_type(a, "dtype", ins[i].dt);
        if (ins[i].value)
            tide_attrs_set_tensor(a, "value", ins[i].value);
        else
            tide_attrs_set_shape(a, "shape", &ins[i].shape);
        inputs[i] = tide_node_builder_finish(b, err);
        if (!inputs[i])
            return NULL;
    }
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_output outs[8];
    for (int i = 0; i < n; i++)
        outs[i] = (tide_output){inputs[i], 0};
    tide_node_builder_add_inputs_flat(b, outs, n); /* grouped by the op's signature */
    copy_attrs(tide_node_builder_attrs(b), attrs);
    return tide_node_builder_finish(b, err);
}

/* The shape inferred at graph time for op's output 0; rank -2 when building failed (err says why). */
static tide_shape infer(const char *op, const gin *ins, int n, const tide_attrs *attrs, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_node *inputs[8];
    tide_node *node = build_node(g, op, ins, n, attrs, inputs, err);
    tide_shape s = node ? tide_node_output_shape(node, 0) : (tide_shape){.rank = -2};
    tide_graph_free(g);
    return s;
}

static void assert_infer_impl(const char *op, const gin *ins, int n, const tide_attrs *attrs, int rank,
                              const int64_t *dims, int line)
{
    tide_error *err = tide_error_new();
    tide_shape got = infer(op, ins, n, attrs, err);
    tide_shape want = rank < 0 ? tide_shape_unknown() : tide_shape_make(rank, dims);
    bool ok = tide_shape_equal(&got, &want);
    if (!ok) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        fprintf(stderr, "line %d: %s inferred %s, expected %s %s\n", line, op,
                got.rank == -2 ? "an error" : tide_shape_format(&got, a, sizeof a),
                tide_shape_format(&want, b, sizeof b), tide_error_message(err));
    }
    CU_assertImplementation(ok, (unsigned)line, "inferred shape", __FILE__, "", CU_FALSE);
    tide_error_free(err);
}
#define ASSERT_INFER(op, ins, attrs, rank, dims) \
    assert_infer_impl(op, ins, NELEM(ins), attrs, rank, dims, __LINE__)

static void assert_infer_fails_impl(const char *op, const gin *ins, int n, const tide_attrs *attrs,
                                    const char *needle, int line)
{
    tide_error *err = tide_error_new();
    tide_shape got = infer(op, ins, n, attrs, err);
    bool ok = got.rank == -2 && tide_error_code(err) == TIDE_INVALID_ARGUMENT &&
              strstr(tide_error_message(err), needle);
    if (!ok)
        fprintf(stderr, "line %d: building %s: expected INVALID_ARGUMENT with \"%s\", got %s: %s\n", line, op,
                needle, tide_status_name(tide_error_code(err)), tide_error_message(err));
    CU_assertImplementation(ok, (unsigned)line, "shape inference fails", __FILE__, "", CU_FALSE);
    tide_error_free(err);
}
#define ASSERT_INFER_FAILS(op, ins, attrs, needle) \
    assert_infer_fails_impl(op, ins, NELEM(ins), attrs, needle, __LINE__)

/* Runs op in a session with every input fed through a Placeholder of unknown shape, so only the
 * kernel sees the values; asserts it fails with INVALID_ARGUMENT and a message containing needle. */
static void assert_kernel_fails_impl(const char *op, tide_tensor *const *inputs, int n,
                                     const tide_attrs *attrs, const char *needle, int line)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    gin ins[8];
    tide_node *nodes[8];
    tide_feed feeds[8];
    for (int i = 0; i < n; i++)
        ins[i] = ph(tide_tensor_dtype(inputs[i]), -1, NULL);
    tide_node *node = build_node(g, op, ins, n, attrs, nodes, err);
    tide_status st = node ? TIDE_OK : tide_error_code(err);
    tide_tensor *out = NULL;
    if (node) {
        for (int i = 0; i < n; i++)
            feeds[i] = (tide_feed){{nodes[i], 0}, inputs[i]};
        tide_session *s = tide_session_new(th_engine(), g, NULL, err);
        tide_output fetch = {node, 0};
        st = s ? tide_session_run(s, NULL, feeds, n, &fetch, 1, &out, NULL, 0, NULL, err) : TIDE_INTERNAL;
        tide_session_free(s);
    }
    bool ok = node && st == TIDE_INVALID_ARGUMENT && strstr(tide_error_message(err), needle);
    if (!ok)
        fprintf(stderr, "line %d: %s in a session: expected INVALID_ARGUMENT with \"%s\", got %s: %s\n", line,
                op, needle, tide_status_name(st), tide_error_message(err));
    CU_assertImplementation(ok, (unsigned)line, "kernel fails in a session", __FILE__, "", CU_FALSE);
    tide_tensor_release(out);
    tide_error_free(err);
    tide_graph_free(g);
}
#define ASSERT_KERNEL_FAILS(op, inputs, n, attrs, needle) \
    assert_kernel_fails_impl(op, inputs, n, attrs, needle, __LINE__)

/* ---------------------------------------------------------------- Gather */

/* Reference GatherV2 with bd batch dims: each output element's multi-index [params dims before
 * the axis, indices dims from bd on, params dims after the axis] is mapped back to its params
 * element; the batch coordinates (the first bd) also pick the indices' batch. */
static tide_shape ref_gather(const double *p, const tide_shape *ps, int axis, int bd, const int64_t *idx,
                             const tide_shape *is, double *out)
{
    int ir = is->rank - bd; /* the indices' dims that enter the result */
    tide_shape os = {.rank = ps->rank - 1 + ir};
    for (int d = 0; d < os.rank; d++)
        os.dims[d] = d < axis ? ps->dims[d] : d < axis + ir ? is->dims[bd + d - axis] : ps->dims[d - ir + 1];
    for (int64_t f = 0; f < tide_shape_num_elements(&os); f++) {
        int64_t oi[TIDE_MAX_RANK], k = 0, src = 0;
        unravel(&os, f, oi);
        for (int d = 0; d < is->rank; d++)
            k = k * is->dims[d] + (d < bd ? oi[d] : oi[axis + d - bd]);
        for (int d = 0; d < ps->rank; d++)
            src = src * ps->dims[d] + (d < axis ? oi[d] : d == axis ? idx[k] : oi[d + ir - 1]);
        out[f] = p[src];
    }
    return os;
}

/* Gathers random params of dtype dt with the given indices through GatherV2 (the axis an input of
 * dtype it, batch_dims bd) and, along axis 0 without batch dims, through the legacy Gather, and
 * compares both with the reference. */
static void check_gather_batched(tide_dtype dt, tide_dtype it, tide_shape ps, int64_t axis, int64_t bd,
                                 tide_shape is, const int64_t *idx, bool integers)
{
    int ax = (int)(axis < 0 ? axis + ps.rank : axis), b = (int)(bd < 0 ? bd + is.rank : bd);
    int64_t np = tide_shape_num_elements(&ps), no = tide_shape_num_elements(&is);
    for (int d = b; d < ps.rank; d++)
        no *= d == ax ? 1 : ps.dims[d];
    double *p = calloc((size_t)(np + 1), sizeof *p), *want = calloc((size_t)(no + 1), sizeof *want);
    for (int64_t i = 0; i < np; i++)
        p[i] = integers ? floor(th_rand(0, 100)) : th_rand(-10, 10);
    tide_shape os = ref_gather(p, &ps, ax, b, idx, &is, want);
    tide_tensor *in[3] = {tensor_of(dt, ps.rank, ps.dims, p), index_tensor(it, is.rank, is.dims, idx),
                          index_tensor(it, 0, NULL, &axis)};
    tide_tensor *expected = tensor_of(dt, os.rank, os.dims, want);
    tide_attrs *a = bd ? attr_int("batch_dims", bd) : NULL;
    tide_tensor *got = th_run1("GatherV2", in, 3, a);
    TH_ASSERT_CLOSE(got, expected, 0, 0);
    tide_tensor_release(got);
    if (axis == 0 && bd == 0) {
        got = th_run1("Gather", in, 2, NULL);
        TH_ASSERT_CLOSE(got, expected, 0, 0);
        tide_tensor_release(got);
    }
    tide_tensor_release(expected);
    release(in, 3);
    tide_attrs_free(a);
    free(p);
    free(want);
}

static void check_gather(tide_dtype dt, tide_dtype it, tide_shape ps, int64_t axis, tide_shape is,
                         const int64_t *idx, bool integers)
{
    check_gather_batched(dt, it, ps, axis, 0, is, idx, integers);
}

static void test_gather_dtypes(void)
{
    const int64_t idx[] = {3, 0, 1, 3};
    for (int i = 0; i < NELEM(NUMERIC); i++) {
        check_gather(NUMERIC[i], TIDE_INT32, tide_shape_matrix(4, 3), 0, tide_shape_matrix(2, 2), idx, true);
        check_gather(NUMERIC[i], TIDE_INT64, tide_shape_matrix(3, 4), 1, tide_shape_vector(4), idx, true);
    }
}

static void test_gather_axes(void)
{
    const int64_t pd[] = {2, 3, 4}, idx[] = {1, 0, 1, 1, 0, 1};
    tide_shape ps = tide_shape_make(3, pd), scalar = tide_shape_scalar();
    for (int64_t axis = -3; axis < 3; axis++) {
        check_gather(TIDE_FLOAT32, TIDE_INT64, ps, axis, tide_shape_matrix(2, 3), idx, false);
        check_gather(TIDE_FLOAT64, TIDE_INT32, ps, axis, scalar, idx, false); /* drops the axis */
        check_gather(TIDE_INT64, TIDE_INT32, ps, axis, tide_shape_vector(1), idx + 1, true);
    }
    /* rank 1 params, rank 7 indices: a result of rank 7 */
    const int64_t id7[] = {1, 2, 1, 1, 2, 1, 2}, idx7[8] = {2, 0, 1, 2, 2, 1, 0, 0};
    check_gather(TIDE_INT32, TIDE_INT64, tide_shape_vector(3), 0, tide_shape_make(7, id7), idx7, true);
}

static void test_gather_empty(void)
{
    const int64_t idx[] = {0, 1};
    check_gather(TIDE_FLOAT32, TIDE_INT32, tide_shape_matrix(3, 2), 0, tide_shape_vector(0), idx, false);
    check_gather(TIDE_FLOAT32, TIDE_INT64, tide_shape_matrix(3, 2), 1, tide_shape_matrix(2, 0), idx, false);
    check_gather(TIDE_INT32, TIDE_INT32, tide_shape_matrix(0, 2), 1, tide_shape_vector(2), idx, true);
    check_gather(TIDE_INT64, TIDE_INT32, tide_shape_matrix(0, 4), 0, tide_shape_vector(0), idx, true);
    check_gather(TIDE_FLOAT64, TIDE_INT32, tide_shape_matrix(3, 0), 0, tide_shape_vector(2), idx, true);
}

static void test_gather_large(void)
{
    /* Many rows of every special size (4, 8, 16 bytes) and a generic one, enough to run in parallel. */
    int64_t n = 200000;
    int64_t *idx = calloc((size_t)n, sizeof *idx);
    for (int64_t i = 0; i < n; i++)
        idx[i] = (int64_t)th_rand(0, 1000);
    check_gather(TIDE_FLOAT32, TIDE_INT32, tide_shape_vector(1000), 0, tide_shape_vector(n), idx, false);
    check_gather(TIDE_FLOAT64, TIDE_INT64, tide_shape_vector(1000), 0, tide_shape_vector(n), idx, false);
    check_gather(TIDE_COMPLEX128, TIDE_INT64, tide_shape_vector(1000), 0, tide_shape_vector(n), idx, false);
    check_gather(TIDE_FLOAT32, TIDE_INT64, tide_shape_matrix(1000, 37), 0, tide_shape_vector(20000), idx,
                 false);
    check_gather(TIDE_FLOAT32, TIDE_INT32, tide_shape_matrix(30, 1000), 1, tide_shape_vector(5000), idx,
                 false);
    free(idx);
}

static void test_gather_strings(void)
{
    const char *words[] = {"zero", "one", "", "three, a longer string than sixteen bytes", "four", "five"};
    tide_tensor *in[2] = {strings_of(2, TH_DIMS(3, 2), words), th_i64(1, TH_DIMS(3), (int64_t[]){2, 0, 2})};
    const char *want_rows[] = {"four", "five", "zero", "one", "four", "five"};
    tide_tensor *want = strings_of(2, TH_DIMS(3, 2), want_rows);
    tide_tensor *got = th_run1("Gather", in, 2, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor *v2[3] = {in[0], th_i32(0, NULL, (int32_t[]){1}), th_i64(0, NULL, (int64_t[]){-1})};
    const char *col[] = {"one", "three, a longer string than sixteen bytes", "five"};
    want = strings_of(1, TH_DIMS(3), col);
    got = th_run1("GatherV2", v2, 3, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    /* batch_dims 1: row r of params picks its own columns */
    tide_tensor *bi[3] = {in[0], th_i32(2, TH_DIMS(3, 2), (int32_t[]){1, 1, 0, 1, 1, 0}), v2[2]};
    tide_attrs *a = attr_int("batch_dims", 1);
    const char *per_row[] = {"one", "one", "", "three, a longer string than sixteen bytes", "five", "four"};
    want = strings_of(2, TH_DIMS(3, 2), per_row);
    got = th_run1("GatherV2", bi, 3, a);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release((tide_tensor *[]){got, want, bi[1], v2[1], v2[2]}, 5);
    release(in, 2);
    tide_attrs_free(a);
}

/* batch_dims: the first b dims of params and indices are batch dims, each batch gathering from its
 * own slice of params, along any axis at or after them; negative batch_dims count from the indices'
 * rank. */
static void test_gather_batch_dims(void)
{
    const int64_t pd[] = {2, 3, 4}, idx23[] = {2, 0, 1, 1, 0, 2}, idx2[] = {3, 1};
    const int64_t idx234[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 2, 1, 0, 2, 1, 0, 2, 1, 0, 2, 1, 0};
    tide_shape ps = tide_shape_make(3, pd);
    const int64_t i23[] = {2, 3}, i234[] = {2, 3, 4};
    /* batch 1 along axis 1 and 2 */
    check_gather_batched(TIDE_FLOAT32, TIDE_INT32, ps, 1, 1, tide_shape_make(2, i23), idx23, false);
    check_gather_batched(TIDE_INT64, TIDE_INT64, ps, 2, 1, tide_shape_make(2, i23), idx23, true);
    check_gather_batched(TIDE_FLOAT64, TIDE_INT32, ps, -1, -1, tide_shape_vector(2), idx2, false);
    /* batch 2 along axis 2, indices of rank 3 */
    check_gather_batched(TIDE_FLOAT64, TIDE_INT64, ps, 2, 2, tide_shape_make(3, i234), idx234, false);
    check_gather_batched(TIDE_FLOAT32, TIDE_INT32, ps, 2, -1, tide_shape_make(3, i234), idx234, false);
    /* empty batches */
    const int64_t pe[] = {0, 3};
    check_gather_batched(TIDE_FLOAT32, TIDE_INT32, tide_shape_make(2, pe), 1, 1, tide_shape_matrix(0, 5),
                         idx23, false);
}

static void test_gather_batch_dims_errors(void)
{
    tide_tensor *p = th_f32(2, TH_DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    tide_tensor *in[3] = {p, th_i32(2, TH_DIMS(2, 1), (int32_t[]){0, 1}), th_i32(0, NULL, (int32_t[]){1})};
    tide_attrs *a = attr_int("batch_dims", 1);
    TH_ASSERT_FAILS("GatherV2", in, 3, a, TIDE_INVALID_ARGUMENT, "differ in batch dimension 0");
    ASSERT_KERNEL_FAILS("GatherV2", in, 3, a, "params [3, 2] and indices [2, 1] differ in batch dimension 0");
    tide_attrs_free(a);
    a = attr_int("batch_dims", 2);
    TH_ASSERT_FAILS("GatherV2", in, 3, a, TIDE_INVALID_ARGUMENT, "batch_dims 2 is out of range for indices "
                    "of rank 2: expected one in [-2, 2)");
    tide_attrs_free(a);
    a = attr_int("batch_dims", 1);
    tide_tensor_release(in[2]);
    in[2] = th_i32(0, NULL, (int32_t[]){0});
    TH_ASSERT_FAILS("GatherV2", in, 3, a, TIDE_INVALID_ARGUMENT, "batch_dims 1 must not be greater than axis 0");
    tide_tensor_release(in[2]);
    in[2] = th_i32(1, TH_DIMS(1), (int32_t[]){0});
    TH_ASSERT_FAILS("GatherV2", in, 3, NULL, TIDE_INVALID_ARGUMENT, "axis must be a scalar");
    ASSERT_KERNEL_FAILS("GatherV2", in, 3, NULL, "axis must be a scalar");
    tide_attrs_free(a);
    release(in, 3);
}

static void test_gather_errors(void)
{
    tide_tensor *p = th_f32(2, TH_DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    tide_tensor *bad[] = {th_i32(2, TH_DIMS(2, 2), (int32_t[]){0, 1, 3, 2}),
                          th_i64(1, TH_DIMS(3), (int64_t[]){0, -1, 1}), th_i32(0, NULL, (int32_t[]){7}),
                          th_i64(1, TH_DIMS(1), (int64_t[]){INT64_MIN})};
    const char *needle[] = {"indices[1, 0] = 3 is out of range", "indices[1] = -1 is out of range",
                            "indices = 7 is out of range", "indices[0] = -9223372036854775808"};
    for (int i = 0; i < NELEM(bad); i++) {
        tide_tensor *in[2] = {p, bad[i]};
        TH_ASSERT_FAILS("Gather", in, 2, NULL, TIDE_INVALID_ARGUMENT, needle[i]);
        TH_ASSERT_FAILS("Gather", in, 2, NULL, TIDE_INVALID_ARGUMENT, "must be in [0, 3)");
        ASSERT_KERNEL_FAILS("Gather", in, 2, NULL, needle[i]);
    }
    tide_tensor *in[2] = {p, th_i32(1, TH_DIMS(1), (int32_t[]){0})};
    for (int64_t axis = -4; axis < 5; axis += 6) {
        tide_tensor *v2[3] = {p, in[1], th_i64(0, NULL, &axis)};
        TH_ASSERT_FAILS("GatherV2", v2, 3, NULL, TIDE_INVALID_ARGUMENT,
                        "out of range for params of rank 2: expected one in [-2, 2) (params [3, 2]");
        ASSERT_KERNEL_FAILS("GatherV2", v2, 3, NULL, "expected one in [-2, 2)");
        tide_tensor_release(v2[2]);
    }
    tide_tensor *scalar[2] = {th_f32(0, NULL, (float[]){1}), in[1]};
    TH_ASSERT_FAILS("Gather", scalar, 2, NULL, TIDE_INVALID_ARGUMENT, "at least 1-dimensional");
    ASSERT_KERNEL_FAILS("Gather", scalar, 2, NULL, "at least 1-dimensional");
    tide_tensor *empty[2] = {th_f32(2, TH_DIMS(0, 2), NULL), in[1]};
    TH_ASSERT_FAILS("Gather", empty, 2, NULL, TIDE_INVALID_ARGUMENT, "indices[0] = 0 is out of range");
    tide_tensor *fidx[2] = {p, th_f32(1, TH_DIMS(1), (float[]){0})};
    TH_ASSERT_FAILS("Gather", fidx, 2, NULL, TIDE_INVALID_ARGUMENT, "Tindices");
    release(bad, NELEM(bad));
    tide_tensor *rest[] = {p, in[1], scalar[0], empty[0], fidx[1]};
    release(rest, NELEM(rest));
}

static void test_gather_infer(void)
{
    tide_tensor *one = th_i32(0, NULL, (int32_t[]){1}), *three = th_i64(0, NULL, (int64_t[]){3});
    tide_tensor *minus_one = th_i32(0, NULL, (int32_t[]){-1});
    gin ins[3] = {ph(TIDE_FLOAT32, 3, TH_DIMS(-1, 3, 4)), ph(TIDE_INT32, 2, TH_DIMS(2, -1)), cst(one)};
    ASSERT_INFER("GatherV2", ins, NULL, 4, TH_DIMS(-1, 2, -1, 4));
    gin legacy[2] = {ins[0], ins[1]};
    ASSERT_INFER("Gather", legacy, NULL, 4, TH_DIMS(2, -1, 3, 4));
    ins[2] = cst(three);
    ASSERT_INFER_FAILS("GatherV2", ins, NULL, "axis 3 is out of range for params of rank 3");
    ins[2] = ph(TIDE_INT32, 0, NULL); /* the axis known at run time only: the rank is known */
    ASSERT_INFER("GatherV2", ins, NULL, 4, TH_DIMS(-1, -1, -1, -1));
    gin unknown[3] = {ph(TIDE_FLOAT32, -1, NULL), ph(TIDE_INT32, 1, TH_DIMS(5)), cst(one)};
    ASSERT_INFER("GatherV2", unknown, NULL, -1, NULL);
    gin scalar[2] = {ph(TIDE_FLOAT32, 0, NULL), ph(TIDE_INT32, -1, NULL)};
    ASSERT_INFER_FAILS("Gather", scalar, NULL, "at least 1-dimensional");
    gin big[2] = {ph(TIDE_FLOAT32, 5, TH_DIMS(1, 1, 1, 1, 1)), ph(TIDE_INT32, 5, TH_DIMS(1, 1, 1, 1, 1))};
    ASSERT_INFER_FAILS("Gather", big, NULL, "rank 9, more than 8");
    /* batch dims: the batch sizes merge from both sides, and must agree */
    tide_attrs *a = attr_int("batch_dims", 1);
    gin batched[3] = {ph(TIDE_FLOAT32, 3, TH_DIMS(-1, 3, 4)), ph(TIDE_INT32, 2, TH_DIMS(5, 2)), cst(minus_one)};
    ASSERT_INFER("GatherV2", batched, a, 3, TH_DIMS(5, 3, 2));
    batched[0] = ph(TIDE_FLOAT32, 3, TH_DIMS(4, 3, 4));
    ASSERT_INFER_FAILS("GatherV2", batched, a, "differ in batch dimension 0");
    tide_attrs_free(a);
    release((tide_tensor *[]){one, three, minus_one}, 3);
}

/* ---------------------------------------------------------------- Fill */

static void test_fill_dtypes(void)
{
    const double value = 3;
    for (int i = 0; i < NELEM(NUMERIC); i++) {
        for (int k = 0; k < 2; k++) {
            tide_dtype it = k ? TIDE_INT64 : TIDE_INT32;
            tide_tensor *in[2] = {index_tensor(it, 1, TH_DIMS(3), (int64_t[]){2, 1, 3}),
                                  scalar_of(NUMERIC[i], value)};
            double vals[6] = {value, value, value, value, value, value};
            tide_tensor *want = tensor_of(NUMERIC[i], 3, TH_DIMS(2, 1, 3), vals);
            tide_attrs *a = k ? attr_type("index_type", TIDE_INT64) : NULL;
            tide_tensor *got = th_run1("Fill", in, 2, a);
            TH_ASSERT_CLOSE(got, want, 0, 0);
            tide_tensor_release(got);
            tide_tensor_release(want);
            release(in, 2);
            tide_attrs_free(a);
        }
    }
}

static void test_fill_shapes(void)
{
    /* dims [] gives a scalar; a zero dim an empty tensor; strings are copied into every element. */
    tide_tensor *in[2] = {th_i32(1, TH_DIMS(0), NULL), th_f64(0, NULL, (double[]){-2.5})};
    tide_tensor *got = th_run1("Fill", in, 2, NULL);
    TH_ASSERT_CLOSE(got, in[1], 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(in[0]);
    in[0] = th_i32(1, TH_DIMS(3), (int32_t[]){4, 0, 2});
    got = th_run1("Fill", in, 2, NULL);
    TH_ASSERT_SHAPE(got, 3, TH_DIMS(4, 0, 2));
    tide_tensor_release(got);
    tide_tensor_release(in[1]);
    const char *s[] = {"a string of more than sixteen bytes"}, *six[6] = {s[0], s[0], s[0], s[0], s[0], s[0]};
    in[1] = strings_of(0, NULL, s);
    tide_tensor_release(in[0]);
    in[0] = th_i32(1, TH_DIMS(2), (int32_t[]){3, 2});
    tide_tensor *want = strings_of(2, TH_DIMS(3, 2), six);
    got = th_run1("Fill", in, 2, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    release(in, 2);
}

static void test_fill_large(void)
{
    tide_tensor *in[2] = {th_i64(1, TH_DIMS(2), (int64_t[]){1000, 1001}), th_i32(0, NULL, (int32_t[]){-7})};
    tide_tensor *got = th_run1("Fill", in, 2, NULL);
    TH_ASSERT_SHAPE(got, 2, TH_DIMS(1000, 1001));
    int64_t wrong = 0;
    for (int64_t i = 0; got && i < 1000 * 1001; i++)
        wrong += ((const int32_t *)tide_tensor_data(got))[i] != -7;
    CU_ASSERT_EQUAL(wrong, 0);
    tide_tensor_release(got);
    tide_tensor_release(in[1]);
    in[1] = tensor_of(TIDE_COMPLEX128, 0, NULL, (double[]){1.5});
    got = th_run1("Fill", in, 2, NULL);
    for (int64_t i = 0; got && i < 1000 * 1001; i++)
        wrong += ((const double *)tide_tensor_data(got))[2 * i] != 1.5 ||
                 ((const double *)tide_tensor_data(got))[2 * i + 1] != -1.5;
    CU_ASSERT_EQUAL(wrong, 0);
    tide_tensor_release(got);
    release(in, 2);
}

static void test_fill_errors(void)
{
    tide_tensor *v = th_f32(0, NULL, (float[]){1}), *vec = th_f32(1, TH_DIMS(2), (float[]){1, 2});
    tide_tensor *dims[] = {th_i32(1, TH_DIMS(2), (int32_t[]){2, -3}),
                           th_i64(1, TH_DIMS(3), (int64_t[]){0, 1LL << 40, 1LL << 40}),
                           th_i64(1, TH_DIMS(3), (int64_t[]){1LL << 40, 1LL << 40, 2}),
                           th_i32(2, TH_DIMS(1, 2), (int32_t[]){2, 2}),
                           th_i32(1, TH_DIMS(9), (int32_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1})};
    const char *needle[] = {"dims[1] = -3 must be non-negative", NULL, "have too many elements",
                            "dims must be a vector, got shape [1, 2]",
                            "dims has 9 elements, more than the maximum rank 8"};
    for (int i = 0; i < NELEM(dims); i++) {
        tide_tensor *in[2] = {dims[i], v};
        if (!needle[i]) { /* [0, 2^40, 2^40] is an empty tensor, no overflow */
            tide_tensor *got = th_run1("Fill", in, 2, NULL);
            TH_ASSERT_SHAPE(got, 3, TH_DIMS(0, 1LL << 40, 1LL << 40));
            tide_tensor_release(got);
            continue;
        }
        TH_ASSERT_FAILS("Fill", in, 2, NULL, TIDE_INVALID_ARGUMENT, needle[i]);
        ASSERT_KERNEL_FAILS("Fill", in, 2, NULL, needle[i]);
    }
    tide_tensor *in[2] = {dims[0], vec};
    TH_ASSERT_FAILS("Fill", in, 2, NULL, TIDE_INVALID_ARGUMENT, "value must be a scalar, got shape [2]");
    ASSERT_KERNEL_FAILS("Fill", in, 2, NULL, "value must be a scalar, got shape [2]");
    in[0] = vec;
    TH_ASSERT_FAILS("Fill", in, 2, NULL, TIDE_INVALID_ARGUMENT, "index_type");
    release(dims, NELEM(dims));
    tide_tensor_release(v);
    tide_tensor_release(vec);
}

static void test_fill_infer(void)
{
    tide_tensor *dims = th_i32(1, TH_DIMS(2), (int32_t[]){2, 3}),
                *neg = th_i64(1, TH_DIMS(1), (int64_t[]){-1});
    gin known[2] = {cst(dims), ph(TIDE_FLOAT32, 0, NULL)};
    ASSERT_INFER("Fill", known, NULL, 2, TH_DIMS(2, 3));
    gin ranked[2] = {ph(TIDE_INT32, 1, TH_DIMS(3)), ph(TIDE_FLOAT32, -1, NULL)};
    ASSERT_INFER("Fill", ranked, NULL, 3, TH_DIMS(-1, -1, -1));
    gin unknown[2] = {ph(TIDE_INT32, 1, TH_DIMS(-1)), ph(TIDE_FLOAT32, -1, NULL)};
    ASSERT_INFER("Fill", unknown, NULL, -1, NULL);
    gin negative[2] = {cst(neg), ph(TIDE_FLOAT32, -1, NULL)};
    ASSERT_INFER_FAILS("Fill", negative, NULL, "dims[0] = -1 must be non-negative");
    gin vector_value[2] = {ph(TIDE_INT32, -1, NULL), ph(TIDE_FLOAT32, 1, TH_DIMS(-1))};
    ASSERT_INFER_FAILS("Fill", vector_value, NULL, "value must be a scalar, got shape [?]");
    gin matrix_dims[2] = {ph(TIDE_INT32, 2, TH_DIMS(-1, 2)), ph(TIDE_FLOAT32, -1, NULL)};
    ASSERT_INFER_FAILS("Fill", matrix_dims, NULL, "dims must be a vector, got shape [?, 2]");
    gin too_long[2] = {ph(TIDE_INT32, 1, TH_DIMS(9)), ph(TIDE_FLOAT32, -1, NULL)};
    ASSERT_INFER_FAILS("Fill", too_long, NULL, "dims has 9 elements");
    tide_tensor_release(dims);
    tide_tensor_release(neg);
}

/* ---------------------------------------------------------------- ZerosLike, OnesLike */

static void check_like(const char *op, tide_dtype dt, int rank, const int64_t *dims, double value)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    double *x = calloc((size_t)(n + 1), sizeof *x), *want = calloc((size_t)(n + 1), sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        x[i] = floor(th_rand(2, 100));
        want[i] = value;
    }
    tide_tensor *in = tensor_of(dt, rank, dims, x), *expected = tensor_of(dt, rank, dims, want);
    if (dt == TIDE_COMPLEX64 || dt == TIDE_COMPLEX128) /* ones are 1 + 0i, zeros 0 + 0i */
        for (int64_t i = 0; i < n; i++) {
            if (dt == TIDE_COMPLEX64)
                ((float *)tide_tensor_data(expected))[2 * i + 1] = 0;
            else
                ((double *)tide_tensor_data(expected))[2 * i + 1] = 0;
        }
    tide_tensor *got = th_run1(op, &in, 1, NULL);
    TH_ASSERT_CLOSE(got, expected, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(in);
    tide_tensor_release(expected);
    free(x);
    free(want);
}

static void test_zeros_ones_like(void)
{
    for (int i = 0; i < NELEM(NUMERIC); i++) {
        check_like("ZerosLike", NUMERIC[i], 2, TH_DIMS(3, 5), 0);
        check_like("OnesLike", NUMERIC[i], 2, TH_DIMS(3, 5), 1);
        check_like("ZerosLike", NUMERIC[i], 0, NULL, 0);
        check_like("OnesLike", NUMERIC[i], 0, NULL, 1);
        check_like("OnesLike", NUMERIC[i], 3, TH_DIMS(2, 0, 3), 1);
    }
    check_like("ZerosLike", TIDE_FLOAT32, 2, TH_DIMS(700, 1000), 0);
    check_like("OnesLike", TIDE_FLOAT64, 2, TH_DIMS(700, 1000), 1);
    check_like("OnesLike", TIDE_FLOAT16, 1, TH_DIMS(300001), 1);
    const char *s[] = {"x", "a string longer than sixteen bytes"}, *empty[] = {"", ""};
    tide_tensor *in = strings_of(1, TH_DIMS(2), s), *want = strings_of(1, TH_DIMS(2), empty);
    tide_tensor *got = th_run1("ZerosLike", &in, 1, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    TH_ASSERT_FAILS("OnesLike", &in, 1, NULL, TIDE_INVALID_ARGUMENT, "input 'x' has dtype string");
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(in);
}

/* ---------------------------------------------------------------- Shape, Rank, Size */

static void check_shape_ops(tide_tensor *x)
{
    const tide_shape *s = tide_tensor_shape(x);
    int64_t n = 1;
    double dims[TIDE_MAX_RANK];
    for (int i = 0; i < s->rank; i++) {
        dims[i] = (double)s->dims[i];
        n *= s->dims[i];
    }
    for (int k = 0; k < 2; k++) {
        tide_dtype t = k ? TIDE_INT64 : TIDE_INT32;
        tide_attrs *a = k ? attr_type("out_type", TIDE_INT64) : NULL;
        tide_tensor *want_shape = tensor_of(t, 1, TH_DIMS(s->rank), dims),
                    *want_size = scalar_of(t, (double)n);
        tide_tensor *got = th_run1("Shape", &x, 1, a);
        TH_ASSERT_CLOSE(got, want_shape, 0, 0);
        tide_tensor_release(got);
        got = th_run1("Size", &x, 1, a);
        TH_ASSERT_CLOSE(got, want_size, 0, 0);
        tide_tensor_release(got);
        tide_tensor_release(want_shape);
        tide_tensor_release(want_size);
        tide_attrs_free(a);
    }
    tide_tensor *want_rank = scalar_of(TIDE_INT32, s->rank), *got = th_run1("Rank", &x, 1, NULL);
    TH_ASSERT_CLOSE(got, want_rank, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want_rank);
}

static void test_shape_rank_size(void)
{
    const char *s[] = {"a", "b", "c"};
    tide_tensor *xs[] = {th_f32(0, NULL, (float[]){1}),
                         th_i64(1, TH_DIMS(3), NULL),
                         th_f64(3, TH_DIMS(2, 0, 4), NULL),
                         th_tensor(TIDE_BOOL, 8, TH_DIMS(1, 2, 1, 2, 1, 2, 1, 3), NULL),
                         th_tensor(TIDE_UINT8, 2, TH_DIMS(70000, 3), NULL),
                         strings_of(2, TH_DIMS(3, 1), s),
                         th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(0), NULL)};
    for (int i = 0; i < NELEM(xs); i++)
        check_shape_ops(xs[i]);
    release(xs, NELEM(xs));
}

/* ShapeN: the shapes of N tensors of one dtype, each as Shape gives it. */
static void test_shape_n(void)
{
    tide_tensor *xs[3] = {th_f64(2, TH_DIMS(2, 3), NULL), th_f64(0, NULL, (double[]){1}), th_f64(3, TH_DIMS(4, 0, 1), NULL)};
    for (int k = 0; k < 2; k++) {
        tide_attrs *a = k ? attr_type("out_type", TIDE_INT64) : NULL;
        tide_tensor *out[3] = {0};
        CU_ASSERT_EQUAL_FATAL(th_run("ShapeN", xs, 3, a, out, 3, NULL), TIDE_OK);
        const int64_t want[3][3] = {{2, 3}, {0}, {4, 0, 1}};
        const int ranks[3] = {2, 0, 3};
        for (int i = 0; i < 3; i++) {
            tide_tensor *w = index_tensor(k ? TIDE_INT64 : TIDE_INT32, 1, (int64_t[]){ranks[i]}, want[i]);
            TH_ASSERT_CLOSE(out[i], w, 0, 0);
            tide_tensor_release(w);
        }
        release(out, 3);
        tide_attrs_free(a);
    }
    release(xs, 3);
}

/* DynamicStitch: each data row goes where its index says, later ones winning; the result has
 * max index + 1 rows, zeros where no index points. */
static void test_dynamic_stitch(void)
{
    /* TensorFlow's documented example: indices [6], [4, 1], [[5, 2], [0, 3]] */
    tide_tensor *in[6] = {th_i32(0, NULL, (int32_t[]){6}), th_i32(1, TH_DIMS(2), (int32_t[]){4, 1}),
                          th_i32(2, TH_DIMS(2, 2), (int32_t[]){5, 2, 0, 3}),
                          th_f32(1, TH_DIMS(2), (float[]){61, 62}), th_f32(2, TH_DIMS(2, 2), (float[]){41, 42, 11, 12}),
                          th_f32(3, TH_DIMS(2, 2, 2), (float[]){51, 52, 21, 22, 1, 2, 31, 32})};
    tide_tensor *got = th_run1("DynamicStitch", in, 6, NULL);
    tide_tensor *want = th_f32(2, TH_DIMS(7, 2), (float[]){1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release((tide_tensor *[]){got, want}, 2);
    release(in, 6);
    /* a repeated index: the later value wins; a gap (row 1) is zero; strings deep-copied */
    const char *w1[] = {"a", "b", "c"}, *w2[] = {"d"};
    tide_tensor *s_in[4] = {th_i32(1, TH_DIMS(3), (int32_t[]){0, 2, 3}), th_i32(1, TH_DIMS(1), (int32_t[]){2}),
                            strings_of(1, TH_DIMS(3), w1), strings_of(1, TH_DIMS(1), w2)};
    const char *ws[] = {"a", "", "d", "c"};
    tide_tensor *sw = strings_of(1, TH_DIMS(4), ws), *sg = th_run1("DynamicStitch", s_in, 4, NULL);
    TH_ASSERT_CLOSE(sg, sw, 0, 0);
    release((tide_tensor *[]){sw, sg}, 2);
    release(s_in, 4);
    /* errors: a negative index, data that does not start with the indices' shape, slices that differ */
    tide_tensor *e_in[4] = {th_i32(1, TH_DIMS(2), (int32_t[]){0, -1}), th_i32(1, TH_DIMS(1), (int32_t[]){1}),
                            th_f32(2, TH_DIMS(2, 3), NULL), th_f32(2, TH_DIMS(1, 3), NULL)};
    TH_ASSERT_FAILS("DynamicStitch", e_in, 4, NULL, TIDE_INVALID_ARGUMENT,
                    "indices[0] holds -1 at position 1: indices must not be negative");
    tide_tensor_release(e_in[0]);
    e_in[0] = th_i32(1, TH_DIMS(3), (int32_t[]){0, 1, 2});
    TH_ASSERT_FAILS("DynamicStitch", e_in, 4, NULL, TIDE_INVALID_ARGUMENT,
                    "data[0] of shape [2, 3] must start with the shape of indices[0], [3]");
    tide_tensor_release(e_in[0]);
    e_in[0] = th_i32(1, TH_DIMS(2), (int32_t[]){0, 1});
    tide_tensor_release(e_in[3]);
    e_in[3] = th_f32(2, TH_DIMS(1, 4), NULL);
    TH_ASSERT_FAILS("DynamicStitch", e_in, 4, NULL, TIDE_INVALID_ARGUMENT,
                    "data[1] of shape [1, 4] holds slices of shape [4], but data[0]'s are [3]");
    /* given flat, the inputs split evenly between the two lists; an odd count cannot */
    TH_ASSERT_FAILS("DynamicStitch", e_in, 3, NULL, TIDE_INVALID_ARGUMENT,
                    "has several list inputs: give the inputs grouped");
    release(e_in, 4);
    /* inference: the rows known from Const indices, the slices from the data */
    tide_tensor *idx = th_i32(1, TH_DIMS(2), (int32_t[]){3, 1});
    gin g[4] = {cst(idx), ph(TIDE_INT32, 1, TH_DIMS(-1)), ph(TIDE_FLOAT32, 2, TH_DIMS(2, -1)),
                ph(TIDE_FLOAT32, 2, TH_DIMS(-1, 5))};
    ASSERT_INFER("DynamicStitch", g, NULL, 2, TH_DIMS(-1, 5));
    gin c[2] = {cst(idx), ph(TIDE_FLOAT32, 3, TH_DIMS(2, 4, 1))};
    ASSERT_INFER("DynamicStitch", c, NULL, 3, TH_DIMS(4, 4, 1));
    tide_tensor_release(idx);
}

static void noop_free(void *data, size_t bytes, void *arg) { (void)data, (void)bytes, (void)arg; }

static void test_shape_size_int32_overflow(void)
{
    /* A dimension of 2^31 with no elements, and 2^32 bytes that are never read (wrapped memory). */
    tide_tensor *wide = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(1LL << 31, 0), NULL);
    TH_ASSERT_FAILS("Shape", &wide, 1, NULL, TIDE_INVALID_ARGUMENT,
                    "dimension 0 of shape [2147483648, 0] does not fit");
    tide_attrs *a = attr_type("out_type", TIDE_INT64);
    tide_tensor *got = th_run1("Shape", &wide, 1, a);
    tide_tensor *want = th_i64(1, TH_DIMS(2), (int64_t[]){1LL << 31, 0});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    static char never_read;
    tide_shape s = tide_shape_matrix(1LL << 16, 1LL << 16);
    tide_tensor *big = tide_tensor_wrap(TIDE_UINT8, &s, &never_read, 1ULL << 32, noop_free, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    TH_ASSERT_FAILS("Size", &big, 1, NULL, TIDE_INVALID_ARGUMENT,
                    "4294967296 elements (shape [65536, 65536])");
    tide_tensor *out = NULL;
    int n = 0;
    CU_ASSERT_EQUAL(tide_engine_run_op(th_engine(), "Size", &big, 1, a, &out, 1, &n, NULL), TIDE_OK);
    CU_ASSERT(out && *(const int64_t *)tide_tensor_data(out) == 1LL << 32);
    tide_tensor_release(out);
    tide_tensor_release(big);
    tide_tensor_release(wide);
    tide_attrs_free(a);
}

static void test_shape_infer(void)
{
    gin partial[1] = {ph(TIDE_FLOAT32, 3, TH_DIMS(-1, 3, -1))}, unknown[1] = {ph(TIDE_STRING, -1, NULL)};
    ASSERT_INFER("Shape", partial, NULL, 1, TH_DIMS(3));
    ASSERT_INFER("Shape", unknown, NULL, 1, TH_DIMS(-1));
    ASSERT_INFER("Rank", unknown, NULL, 0, NULL);
    ASSERT_INFER("Size", partial, NULL, 0, NULL);
}

/* ---------------------------------------------------------------- Where */

/* Where(x) against the coordinates of x's non-zero elements computed here from the flat index by
 * division (the kernel counts them up), for one dtype: values drawn from zeros and non-zeros, the
 * float ones including -0.0 (zero) and nan (not), complex ones with a single non-zero part. */
static void check_where(tide_dtype dt, int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    bool *truth = malloc((size_t)n + 1);
    double *vals = calloc((size_t)n + 1, sizeof *vals);
    int *picks = calloc((size_t)n + 1, sizeof *picks);
    for (int64_t i = 0; i < n; i++) {
        /* 0: zero, 1: -0.0 (zero), 2: a value, 3: nan (floats) or another value */
        picks[i] = (int)th_rand(0, 4);
        truth[i] = picks[i] >= 2;
        double other = tide_dtype_is_float(dt) ? NAN : 100;
        vals[i] = picks[i] == 1 ? -0.0 : picks[i] == 2 ? 1 : picks[i] == 3 ? other : 0;
    }
    tide_tensor *x = dt == TIDE_COMPLEX64 ? th_tensor(dt, rank, dims, NULL)
                                          : th_from_doubles(dt, rank, dims, vals, -1);
    for (int64_t i = 0; dt == TIDE_COMPLEX64 && i < n; i++) { /* one part non-zero, or -0.0 in both */
        float *c = (float *)tide_tensor_data(x) + 2 * i;
        c[0] = picks[i] == 1 ? -0.0f : picks[i] == 2 ? 1.5f : 0;
        c[1] = picks[i] == 1 ? -0.0f : picks[i] == 3 ? -2.0f : 0;
    }
    free(vals);
    free(picks);
    int64_t count = 0, *want = malloc((size_t)(n * (rank ? rank : 1) + 1) * sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        if (!truth[i])
            continue;
        for (int64_t d = rank - 1, rest = i; d >= 0; d--) {
            want[count * rank + d] = rest % dims[d];
            rest /= dims[d];
        }
        count++;
    }
    tide_tensor *got = th_run1("Where", &x, 1, NULL);
    TH_ASSERT_SHAPE(got, 2, TH_DIMS(count, rank));
    CU_ASSERT(got && tide_tensor_dtype(got) == TIDE_INT64);
    CU_ASSERT(got && memcmp(tide_tensor_data(got), want, (size_t)(count * rank) * sizeof *want) == 0);
    tide_tensor_release(got);
    tide_tensor_release(x);
    free(truth);
    free(want);
}

static void test_where(void)
{
    const tide_dtype dts[] = {TIDE_BOOL,    TIDE_INT8,    TIDE_UINT8,   TIDE_INT16,   TIDE_INT32,
                              TIDE_INT64,   TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_FLOAT32, TIDE_FLOAT64,
                              TIDE_COMPLEX64};
    for (size_t d = 0; d < NELEM(dts); d++) {
        check_where(dts[d], 0, NULL);
        check_where(dts[d], 1, TH_DIMS(9));
        check_where(dts[d], 3, TH_DIMS(2, 3, 4));
        check_where(dts[d], 2, TH_DIMS(3, 0));
    }
    check_where(TIDE_BOOL, 5, TH_DIMS(2, 1, 3, 2, 5));
    check_where(TIDE_FLOAT32, 2, TH_DIMS(300, 700)); /* large */
    /* a literal: [[true, false], [false, true]] gives [[0, 0], [1, 1]] */
    tide_tensor *x = th_tensor(TIDE_BOOL, 2, TH_DIMS(2, 2), (uint8_t[]){1, 0, 0, 1});
    tide_tensor *got = th_run1("Where", &x, 1, NULL);
    TH_ASSERT_SHAPE(got, 2, TH_DIMS(2, 2));
    CU_ASSERT(got && memcmp(tide_tensor_data(got), (int64_t[]){0, 0, 1, 1}, 4 * sizeof(int64_t)) == 0);
    tide_tensor_release(got);
    tide_tensor_release(x);
    gin partial[1] = {ph(TIDE_FLOAT32, 3, TH_DIMS(-1, 3, -1))}, unknown[1] = {ph(TIDE_BOOL, -1, NULL)};
    ASSERT_INFER("Where", partial, NULL, 2, TH_DIMS(-1, 3));
    ASSERT_INFER("Where", unknown, NULL, 2, TH_DIMS(-1, -1));
}

/* ---------------------------------------------------------------- ExpandDims, Squeeze */

/* ExpandDims(x, dim) has shape want and shares x's buffer. */
static void check_expand(tide_tensor *x, tide_tensor *dim, int rank, const int64_t *want)
{
    tide_tensor *in[2] = {x, dim};
    tide_tensor *got = th_run1("ExpandDims", in, 2, NULL);
    TH_ASSERT_SHAPE(got, rank, want);
    CU_ASSERT(got && tide_tensor_data(got) == tide_tensor_data(x)); /* a view */
    tide_tensor_release(got);
    tide_tensor_release(dim);
}

static void test_expand_dims(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    check_expand(x, th_i32(0, NULL, (int32_t[]){0}), 3, TH_DIMS(1, 2, 3));
    check_expand(x, th_i64(0, NULL, (int64_t[]){1}), 3, TH_DIMS(2, 1, 3));
    check_expand(x, th_i32(0, NULL, (int32_t[]){2}), 3, TH_DIMS(2, 3, 1));
    check_expand(x, th_i32(0, NULL, (int32_t[]){-1}), 3, TH_DIMS(2, 3, 1));
    check_expand(x, th_i64(0, NULL, (int64_t[]){-3}), 3, TH_DIMS(1, 2, 3));
    check_expand(x, th_i32(1, TH_DIMS(1), (int32_t[]){-2}), 3, TH_DIMS(2, 1, 3)); /* a 1-element vector */
    tide_tensor *in[2] = {x, th_i32(0, NULL, (int32_t[]){1})};
    tide_tensor *got = th_run1("ExpandDims", in, 2, NULL),
                *want = th_f32(3, TH_DIMS(2, 1, 3), (float[]){1, 2, 3, 4, 5, 6});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release((tide_tensor *[]){got, want, in[1], x}, 4);
    tide_tensor *s = th_i64(0, NULL, (int64_t[]){5});
    check_expand(s, th_i32(0, NULL, (int32_t[]){0}), 1, TH_DIMS(1));
    check_expand(s, th_i32(0, NULL, (int32_t[]){-1}), 1, TH_DIMS(1));
    tide_tensor_release(s);
    const char *str[] = {"a", "b"};
    tide_tensor *e = th_f64(2, TH_DIMS(0, 4), NULL), *t = strings_of(1, TH_DIMS(2), str);
    check_expand(e, th_i32(0, NULL, (int32_t[]){1}), 3, TH_DIMS(0, 1, 4));
    check_expand(t, th_i32(0, NULL, (int32_t[]){0}), 2, TH_DIMS(1, 2));
    release((tide_tensor *[]){e, t}, 2);
}

static void test_expand_dims_errors(void)
{
    tide_tensor *x = th_f32(2, TH_DIMS(2, 3), NULL), *r7 = th_f32(7, TH_DIMS(1, 1, 1, 1, 1, 1, 1), NULL);
    tide_tensor *r8 = th_f32(8, TH_DIMS(1, 1, 1, 1, 1, 1, 1, 1), NULL);
    tide_tensor *dims[] = {th_i32(0, NULL, (int32_t[]){3}), th_i64(0, NULL, (int64_t[]){-4}),
                           th_i32(1, TH_DIMS(2), (int32_t[]){0, 1}), th_i32(1, TH_DIMS(0), NULL)};
    const char *needle[] = {"dim 3 is out of range for input of shape [2, 3]: expected one in [-3, 2]",
                            "dim -4 is out of range", "dim must hold exactly one value, got shape [2]",
                            "dim must hold exactly one value, got shape [0]"};
    for (int i = 0; i < NELEM(dims); i++) {
        tide_tensor *in[2] = {x, dims[i]};
        TH_ASSERT_FAILS("ExpandDims", in, 2, NULL, TIDE_INVALID_ARGUMENT, needle[i]);
        ASSERT_KERNEL_FAILS("ExpandDims", in, 2, NULL, needle[i]);
    }
    tide_tensor *in[2] = {r8, th_i32(0, NULL, (int32_t[]){0})};
    TH_ASSERT_FAILS("ExpandDims", in, 2, NULL, TIDE_INVALID_ARGUMENT, "rank 9, more than 8");
    ASSERT_KERNEL_FAILS("ExpandDims", in, 2, NULL, "rank 9, more than 8");
    in[0] = r7; /* rank 8 is fine */
    tide_tensor *got = th_run1("ExpandDims", in, 2, NULL);
    TH_ASSERT_SHAPE(got, 8, TH_DIMS(1, 1, 1, 1, 1, 1, 1, 1));
    tide_tensor *fdim[2] = {x, th_f32(0, NULL, (float[]){0})};
    TH_ASSERT_FAILS("ExpandDims", fdim, 2, NULL, TIDE_INVALID_ARGUMENT, "Tdim");
    release(dims, NELEM(dims));
    release((tide_tensor *[]){x, r7, r8, in[1], got, fdim[1]}, 6);
}

static void test_expand_dims_infer(void)
{
    tide_tensor *d = th_i32(0, NULL, (int32_t[]){-1}), *bad = th_i64(0, NULL, (int64_t[]){5});
    gin known[2] = {ph(TIDE_FLOAT32, 2, TH_DIMS(2, -1)), cst(d)};
    ASSERT_INFER("ExpandDims", known, NULL, 3, TH_DIMS(2, -1, 1));
    gin fed[2] = {ph(TIDE_FLOAT32, 2, TH_DIMS(2, -1)), ph(TIDE_INT32, 0, NULL)};
    ASSERT_INFER("ExpandDims", fed, NULL, 3, TH_DIMS(-1, -1, -1));
    gin unknown[2] = {ph(TIDE_FLOAT32, -1, NULL), cst(d)};
    ASSERT_INFER("ExpandDims", unknown, NULL, -1, NULL);
    gin out_of_range[2] = {ph(TIDE_FLOAT32, 2, TH_DIMS(2, -1)), cst(bad)};
    ASSERT_INFER_FAILS("ExpandDims", out_of_range, NULL, "dim 5 is out of range for input of shape [2, ?]");
    gin vector_dim[2] = {ph(TIDE_FLOAT32, -1, NULL), ph(TIDE_INT32, 1, TH_DIMS(3))};
    ASSERT_INFER_FAILS("ExpandDims", vector_dim, NULL, "dim must hold exactly one value, got shape [3]");
    release((tide_tensor *[]){d, bad}, 2);
}

/* Squeeze(x, squeeze_dims) has shape want and shares x's buffer. */
static void check_squeeze(tide_tensor *x, int n, const int64_t *sq, int rank, const int64_t *want)
{
    tide_attrs *a = tide_attrs_new();
    if (n >= 0)
        tide_attrs_set_int_list(a, "squeeze_dims", sq, n);
    tide_tensor *got = th_run1("Squeeze", &x, 1, a);
    TH_ASSERT_SHAPE(got, rank, want);
    CU_ASSERT(got && tide_tensor_data(got) == tide_tensor_data(x));
    tide_tensor_release(got);
    tide_attrs_free(a);
}

static void test_squeeze(void)
{
    tide_tensor *x = th_i32(4, TH_DIMS(1, 3, 1, 2), (int32_t[]){1, 2, 3, 4, 5, 6});
    check_squeeze(x, -1, NULL, 2, TH_DIMS(3, 2));
    check_squeeze(x, 0, NULL, 2, TH_DIMS(3, 2));
    check_squeeze(x, 1, (int64_t[]){0}, 3, TH_DIMS(3, 1, 2));
    check_squeeze(x, 1, (int64_t[]){-2}, 3, TH_DIMS(1, 3, 2));
    check_squeeze(x, 2, (int64_t[]){2, -4}, 2, TH_DIMS(3, 2));
    check_squeeze(x, 2, (int64_t[]){0, 0}, 3, TH_DIMS(3, 1, 2));
    tide_tensor *got = th_run1("Squeeze", &x, 1, NULL),
                *want = th_i32(2, TH_DIMS(3, 2), (int32_t[]){1, 2, 3, 4, 5, 6});
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release((tide_tensor *[]){got, want, x}, 3);
    const char *s[] = {"only"};
    tide_tensor *one = strings_of(3, TH_DIMS(1, 1, 1), s), *none = th_f64(2, TH_DIMS(2, 3), NULL);
    tide_tensor *empty = th_f32(3, TH_DIMS(0, 1, 5), NULL);
    check_squeeze(one, -1, NULL, 0, NULL);
    check_squeeze(none, -1, NULL, 2, TH_DIMS(2, 3));
    check_squeeze(empty, -1, NULL, 2, TH_DIMS(0, 5));
    check_squeeze(empty, 1, (int64_t[]){1}, 2, TH_DIMS(0, 5));
    release((tide_tensor *[]){one, none, empty}, 3);
}

static void test_squeeze_errors(void)
{
    tide_tensor *x = th_f32(3, TH_DIMS(1, 3, 1), NULL);
    const int64_t sq[][1] = {{1}, {3}, {-4}};
    const char *needle[] = {
        "cannot squeeze dim 1 of input of shape [1, 3, 1]: its size is 3, not 1",
        "squeeze_dims[0] = 3 is out of range for input of shape [1, 3, 1]: expected one in [-3, 3)",
        "squeeze_dims[0] = -4 is out of range"};
    for (int i = 0; i < NELEM(sq); i++) {
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_int_list(a, "squeeze_dims", sq[i], 1);
        TH_ASSERT_FAILS("Squeeze", &x, 1, a, TIDE_INVALID_ARGUMENT, needle[i]);
        ASSERT_KERNEL_FAILS("Squeeze", &x, 1, a, needle[i]);
        tide_attrs_free(a);
    }
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "squeeze_dims", 1);
    TH_ASSERT_FAILS("Squeeze", &x, 1, a, TIDE_INVALID_ARGUMENT, "squeeze_dims");
    tide_attrs_free(a);
    tide_tensor_release(x);
}

static void test_squeeze_infer(void)
{
    gin x[1] = {ph(TIDE_FLOAT32, 4, TH_DIMS(1, -1, 3, 1))}, unknown[1] = {ph(TIDE_FLOAT32, -1, NULL)};
    gin known[1] = {ph(TIDE_FLOAT32, 3, TH_DIMS(1, 2, 1))};
    tide_attrs *ends = tide_attrs_new(), *mid = tide_attrs_new(), *bad = tide_attrs_new();
    tide_attrs_set_int_list(ends, "squeeze_dims", (int64_t[]){0, -1}, 2);
    tide_attrs_set_int_list(mid, "squeeze_dims", (int64_t[]){1}, 1);
    tide_attrs_set_int_list(bad, "squeeze_dims", (int64_t[]){2}, 1);
    ASSERT_INFER("Squeeze", x, NULL, -1, NULL); /* is the ? a 1? unknown rank */
    ASSERT_INFER("Squeeze", known, NULL, 1, TH_DIMS(2));
    ASSERT_INFER("Squeeze", x, ends, 2, TH_DIMS(-1, 3));
    ASSERT_INFER("Squeeze", x, mid, 3, TH_DIMS(1, 3, 1)); /* the ? must be 1 */
    ASSERT_INFER("Squeeze", unknown, ends, -1, NULL);
    ASSERT_INFER_FAILS("Squeeze", x, bad,
                       "cannot squeeze dim 2 of input of shape [1, ?, 3, 1]: its size is 3");
    tide_attrs_free(ends);
    tide_attrs_free(mid);
    tide_attrs_free(bad);
}

/* ---------------------------------------------------------------- OneHot */

/* Reference OneHot: output element (.., d at axis, ..) is on where indices(..) == d, else off. */
static void ref_one_hot(const int64_t *ind, const tide_shape *is, int64_t depth, int axis, double on,
                        double off, tide_shape *os, double *out)
{
    int at = axis < 0 ? is->rank : axis;
    os->rank = is->rank + 1;
    for (int d = 0, k = 0; d < os->rank; d++)
        os->dims[d] = d == at ? depth : is->dims[k++];
    for (int64_t f = 0; f < tide_shape_num_elements(os); f++) {
        int64_t oi[TIDE_MAX_RANK], src = 0;
        unravel(os, f, oi);
        for (int d = 0; d < os->rank; d++)
            if (d != at)
                src = src * os->dims[d] + oi[d];
        out[f] = ind[src] == oi[at] ? on : off;
    }
}

static void check_one_hot(tide_dtype dt, tide_dtype it, const tide_shape *is, const int64_t *ind,
                          int64_t depth, int64_t axis)
{
    double on = dt == TIDE_BOOL ? 1 : 7, off = dt == TIDE_BOOL ? 0 : 3;
    tide_shape os;
    int64_t n = tide_shape_num_elements(is) * depth;
    double *want = calloc((size_t)(n + 1), sizeof *want);
    ref_one_hot(ind, is, depth, (int)axis, on, off, &os, want);
    tide_tensor *in[4] = {index_tensor(it, is->rank, is->dims, ind),
                          th_i32(0, NULL, (int32_t[]){(int32_t)depth}), scalar_of(dt, on),
                          scalar_of(dt, off)};
    tide_tensor *expected = tensor_of(dt, os.rank, os.dims, want);
    tide_attrs *a = attr_int("axis", axis);
    tide_tensor *got = th_run1("OneHot", in, 4, a);
    TH_ASSERT_CLOSE(got, expected, 0, 0);
    release((tide_tensor *[]){got, expected}, 2);
    release(in, 4);
    tide_attrs_free(a);
    free(want);
}

static void test_one_hot(void)
{
    /* -1 and 4 are outside [0, 4): all-off rows */
    const int64_t ind[] = {0, 3, -1, 2, 4, 1};
    tide_shape is = tide_shape_matrix(2, 3), scalar = tide_shape_scalar(), empty = tide_shape_matrix(0, 3);
    for (int64_t axis = -1; axis <= 2; axis++) {
        check_one_hot(TIDE_FLOAT32, TIDE_INT64, &is, ind, 4, axis);
        check_one_hot(TIDE_INT64, TIDE_INT32, &is, ind, 4, axis);
        check_one_hot(TIDE_FLOAT64, TIDE_INT64, &empty, ind, 4, axis);
        check_one_hot(TIDE_INT32, TIDE_INT32, &is, ind, 0, axis);
    }
    for (int i = 0; i < NELEM(NUMERIC); i++)
        check_one_hot(NUMERIC[i], TIDE_INT32, &is, ind, 5, 1);
    const int64_t u8[] = {0, 3, 255, 2, 4, 1};
    check_one_hot(TIDE_FLOAT32, TIDE_UINT8, &is, u8, 4, -1);
    check_one_hot(TIDE_INT32, TIDE_INT64, &scalar, ind + 1, 5, -1);
    check_one_hot(TIDE_INT32, TIDE_INT64, &scalar, ind + 1, 5, 0);
    check_one_hot(TIDE_FLOAT32, TIDE_INT64, &is, (int64_t[]){INT64_MIN, INT64_MAX, 3, 0, 0, 0}, 4, -1);
}

static void test_one_hot_large(void)
{
    int64_t n = 20000;
    int64_t *ind = calloc((size_t)n, sizeof *ind);
    for (int64_t i = 0; i < n; i++)
        ind[i] = (int64_t)floor(th_rand(-3, 110));
    tide_shape is = tide_shape_vector(n), is2 = tide_shape_matrix(100, n / 100);
    check_one_hot(TIDE_FLOAT32, TIDE_INT32, &is, ind, 100, -1);
    check_one_hot(TIDE_FLOAT64, TIDE_INT64, &is, ind, 100, 0);
    check_one_hot(TIDE_INT8, TIDE_INT64, &is2, ind, 100, 1);
    check_one_hot(TIDE_COMPLEX128, TIDE_INT64, &is2, ind, 30, 2);
    free(ind);
}

static void test_one_hot_strings(void)
{
    const char *on[] = {"hot"}, *off[] = {"a cold string of more than 16 bytes"};
    tide_tensor *in[4] = {th_i64(1, TH_DIMS(3), (int64_t[]){1, -1, 0}), th_i32(0, NULL, (int32_t[]){2}),
                          strings_of(0, NULL, on), strings_of(0, NULL, off)};
    const char *w[] = {off[0], on[0], off[0], off[0], on[0], off[0]};
    tide_tensor *want = strings_of(2, TH_DIMS(3, 2), w), *got = th_run1("OneHot", in, 4, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release((tide_tensor *[]){got, want}, 2);
    release(in, 4);
}

static void test_one_hot_errors(void)
{
    tide_tensor *ind = th_i64(1, TH_DIMS(2), (int64_t[]){0, 1}), *depth = th_i32(0, NULL, (int32_t[]){3});
    tide_tensor *on = th_f32(0, NULL, (float[]){1}), *off = th_f32(0, NULL, (float[]){0});
    tide_tensor *neg = th_i32(0, NULL, (int32_t[]){-2}), *vec = th_i32(1, TH_DIMS(1), (int32_t[]){3});
    tide_tensor *von = th_f32(1, TH_DIMS(2), (float[]){1, 1}),
                *i8 = th_tensor(TIDE_INT8, 1, TH_DIMS(1), NULL);
    tide_tensor *don = th_f64(0, NULL, (double[]){1});
    tide_tensor *cases[][4] = {
        {ind, neg, on, off}, {ind, vec, on, off}, {ind, depth, von, off}, {ind, depth, on, von}};
    const char *needle[] = {"depth must be non-negative, got -2", "depth must be a scalar, got shape [1]",
                            "on_value must be a scalar, got shape [2]", "off_value must be a scalar"};
    for (int i = 0; i < NELEM(cases); i++) {
        TH_ASSERT_FAILS("OneHot", cases[i], 4, NULL, TIDE_INVALID_ARGUMENT, needle[i]);
        ASSERT_KERNEL_FAILS("OneHot", cases[i], 4, NULL, needle[i]);
    }
    tide_tensor *ok[4] = {ind, depth, on, off};
    for (int64_t axis = -2; axis <= 2; axis += 4) {
        tide_attrs *a = attr_int("axis", axis);
        TH_ASSERT_FAILS("OneHot", ok, 4, a, TIDE_INVALID_ARGUMENT,
                        "axis must be -1 or in [0, 1] for indices of shape [2]");
        if (axis > 0) /* -2 is wrong whatever the rank: the graph rejects it (test_one_hot_infer) */
            ASSERT_KERNEL_FAILS("OneHot", ok, 4, a,
                                "axis must be -1 or in [0, 1] for indices of shape [2], got 2");
        tide_attrs_free(a);
    }
    tide_tensor *wrong_ti[4] = {i8, depth, on, off}, *mixed[4] = {ind, depth, on, don};
    TH_ASSERT_FAILS("OneHot", wrong_ti, 4, NULL, TIDE_INVALID_ARGUMENT,
                    "TI must be one of {int32, int64, uint8}");
    TH_ASSERT_FAILS("OneHot", mixed, 4, NULL, TIDE_INVALID_ARGUMENT, "input 'off_value' has dtype float64");
    release((tide_tensor *[]){ind, depth, on, off, neg, vec, von, i8, don}, 9);
}

static void test_one_hot_infer(void)
{
    tide_tensor *depth = th_i32(0, NULL, (int32_t[]){7}), *neg = th_i32(0, NULL, (int32_t[]){-1});
    gin known[4] = {ph(TIDE_INT64, 2, TH_DIMS(-1, 5)), cst(depth), ph(TIDE_FLOAT32, 0, NULL),
                    ph(TIDE_FLOAT32, -1, NULL)};
    gin fed[4] = {ph(TIDE_INT64, 2, TH_DIMS(-1, 5)), ph(TIDE_INT32, -1, NULL), ph(TIDE_FLOAT32, -1, NULL),
                  ph(TIDE_FLOAT32, -1, NULL)};
    gin bad[4] = {ph(TIDE_INT64, -1, NULL), cst(neg), ph(TIDE_FLOAT32, -1, NULL), ph(TIDE_FLOAT32, -1, NULL)};
    gin vec_on[4] = {ph(TIDE_INT64, -1, NULL), cst(depth), ph(TIDE_FLOAT32, 1, TH_DIMS(2)),
                     ph(TIDE_FLOAT32, -1, NULL)};
    tide_attrs *a1 = attr_int("axis", 1), *a3 = attr_int("axis", 3);
    ASSERT_INFER("OneHot", known, NULL, 3, TH_DIMS(-1, 5, 7));
    ASSERT_INFER("OneHot", known, a1, 3, TH_DIMS(-1, 7, 5));
    ASSERT_INFER("OneHot", fed, a1, 3, TH_DIMS(-1, -1, 5));
    ASSERT_INFER("OneHot", fed, NULL, 3, TH_DIMS(-1, 5, -1));
    ASSERT_INFER_FAILS("OneHot", known, a3,
                       "axis must be -1 or in [0, 2] for indices of shape [?, 5], got 3");
    tide_attrs *m2 = attr_int("axis", -2);
    ASSERT_INFER_FAILS("OneHot", fed, m2, "axis must be -1 or in [0, 2] for indices of shape [?, 5], got -2");
    gin unknown[4] = {ph(TIDE_UINT8, -1, NULL), ph(TIDE_INT32, -1, NULL), ph(TIDE_BOOL, -1, NULL),
                      ph(TIDE_BOOL, -1, NULL)};
    ASSERT_INFER("OneHot", unknown, a3, -1, NULL);
    ASSERT_INFER_FAILS("OneHot", unknown, m2, "axis must be -1 or non-negative, got -2");
    tide_attrs_free(m2);
    ASSERT_INFER_FAILS("OneHot", bad, NULL, "depth must be non-negative, got -1");
    ASSERT_INFER_FAILS("OneHot", vec_on, NULL, "on_value must be a scalar, got shape [2]");
    tide_attrs_free(a1);
    tide_attrs_free(a3);
    release((tide_tensor *[]){depth, neg}, 2);
}

/* ---------------------------------------------------------------- Range */

/* Range(start, limit, delta) of dtype dt must give want[0..n). */
static void check_range(tide_dtype dt, double start, double limit, double delta, int64_t n,
                        const double *want, double rtol)
{
    tide_tensor *in[3] = {scalar_of(dt, start), scalar_of(dt, limit), scalar_of(dt, delta)};
    tide_tensor *expected = tensor_of(dt, 1, TH_DIMS(n), want), *got = th_run1("Range", in, 3, NULL);
    TH_ASSERT_CLOSE(got, expected, rtol, 0);
    release((tide_tensor *[]){got, expected}, 2);
    release(in, 3);
}

static void test_range_int(void)
{
    const tide_dtype types[] = {TIDE_INT32, TIDE_INT64, TIDE_FLOAT32, TIDE_FLOAT64};
    for (int i = 0; i < NELEM(types); i++) {
        check_range(types[i], 0, 10, 3, 4, (double[]){0, 3, 6, 9}, 0);
        check_range(types[i], 10, 0, -3, 4, (double[]){10, 7, 4, 1}, 0);
        check_range(types[i], -2, 2, 1, 4, (double[]){-2, -1, 0, 1}, 0);
        check_range(types[i], 5, 5, 1, 0, NULL, 0);
        check_range(types[i], 5, 5, -2, 0, NULL, 0);
        check_range(types[i], 1, 2, 100, 1, (double[]){1}, 0);
    }
    /* The extremes: spans of nearly 2^32 and 2^64 counted without overflow. */
    tide_tensor *in[3] = {th_i32(0, NULL, (int32_t[]){INT32_MIN}), th_i32(0, NULL, (int32_t[]){INT32_MAX}),
                          th_i32(0, NULL, (int32_t[]){1 << 30})};
    tide_tensor *want = th_i32(1, TH_DIMS(4), (int32_t[]){INT32_MIN, -(1 << 30), 0, 1 << 30});
    tide_tensor *got = th_run1("Range", in, 3, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    release((tide_tensor *[]){got, want}, 2);
    release(in, 3);
    const int64_t cases[][3] = {{INT64_MIN, INT64_MAX, 1LL << 62},
                                {INT64_MAX, INT64_MIN, INT64_MIN},
                                {INT64_MAX - 1, INT64_MAX, INT64_MAX},
                                {INT64_MIN, INT64_MIN + 1, INT64_MAX}};
    const int64_t want64[][4] = {
        {INT64_MIN, -(1LL << 62), 0, 1LL << 62}, {INT64_MAX, -1}, {INT64_MAX - 1}, {INT64_MIN}};
    const int64_t count[] = {4, 2, 1, 1};
    for (int i = 0; i < NELEM(cases); i++) {
        tide_tensor *r[3] = {th_i64(0, NULL, &cases[i][0]), th_i64(0, NULL, &cases[i][1]),
                             th_i64(0, NULL, &cases[i][2])};
        tide_tensor *w = th_i64(1, TH_DIMS(count[i]), want64[i]), *g = th_run1("Range", r, 3, NULL);
        TH_ASSERT_CLOSE(g, w, 0, 0);
        release((tide_tensor *[]){g, w}, 2);
        release(r, 3);
    }
}

static void test_range_float(void)
{
    double w[2000];
    for (int i = 0; i < 14; i++)
        w[i] = 1.5 - 0.25 * i;
    check_range(TIDE_FLOAT64, 1.5, -2, -0.25, 14, w, 1e-15);
    check_range(TIDE_FLOAT32, 1.5, -2, -0.25, 14, w, 1e-7);
    for (int i = 0; i < 10; i++)
        w[i] = i * (double)0.1f;
    check_range(TIDE_FLOAT32, 0, 1, 0.1f, 10, w, 1e-7);
    /* TensorFlow's counts: float64 divides in double ((1.3 - 1) / 0.1 = 3.0000000000000004, so 4
     * elements, as in NumPy), float32 in float (0.3f / 0.1f rounds to 3.0f, so 3 elements, where
     * dividing the same values in double gives 3.0000000745 and would make 4). */
    for (int i = 0; i < 4; i++)
        w[i] = 1 + i * 0.1;
    check_range(TIDE_FLOAT64, 1, 1.3, 0.1, 4, w, 1e-15);
    for (int i = 0; i < 3; i++)
        w[i] = i * (double)0.1f;
    check_range(TIDE_FLOAT32, 0, 0.3f, 0.1f, 3, w, 1e-7);
    for (int i = 0; i < 2000; i++)
        w[i] = -1e3 + i * 1e-3;
    check_range(TIDE_FLOAT64, -1e3, -1e3 + 1.9995, 1e-3, 2000, w, 1e-14);
}

static void test_range_large(void)
{
    int64_t n = 3000000;
    double *w = calloc((size_t)n, sizeof *w);
    for (int64_t i = 0; i < n; i++)
        w[i] = -1e6 + 0.75 * (double)i;
    check_range(TIDE_FLOAT64, -1e6, -1e6 + 0.75 * (double)n - 0.5, 0.75, n, w, 1e-15);
    for (int64_t i = 0; i < n; i++)
        w[i] = 7 - 3 * (double)i;
    check_range(TIDE_INT64, 7, 7 - 3 * (double)n + 1, -3, n, w, 0);
    check_range(TIDE_INT32, 7, 7 - 3 * (double)n + 2, -3, n, w, 0);
    free(w);
}

static void test_range_errors(void)
{
    const double cases[][3] = {{0, 10, 0},
                               {5, 1, 1},
                               {1, 5, -1},
                               {NAN, 1, 1},
                               {0, INFINITY, 1},
                               {0, 1, -INFINITY},
                               {-1e308, 1e308, 1e-300}};
    const char *needle[] = {"delta must not be 0 (start 0, limit 10)",
                            "start 5 must be <= limit 1 when delta is 1",
                            "start 1 must be >= limit 5 when delta is -1",
                            "must be finite",
                            "must be finite",
                            "must be finite",
                            "has too many elements"};
    for (int i = 0; i < NELEM(cases); i++) {
        tide_tensor *in[3] = {scalar_of(TIDE_FLOAT64, cases[i][0]), scalar_of(TIDE_FLOAT64, cases[i][1]),
                              scalar_of(TIDE_FLOAT64, cases[i][2])};
        TH_ASSERT_FAILS("Range", in, 3, NULL, TIDE_INVALID_ARGUMENT, needle[i]);
        ASSERT_KERNEL_FAILS("Range", in, 3, NULL, needle[i]);
        release(in, 3);
    }
    tide_tensor *z[3] = {th_i64(0, NULL, (int64_t[]){3}), th_i64(0, NULL, (int64_t[]){9}),
                         th_i64(0, NULL, (int64_t[]){0})};
    TH_ASSERT_FAILS("Range", z, 3, NULL, TIDE_INVALID_ARGUMENT, "delta must not be 0 (start 3, limit 9)");
    ASSERT_KERNEL_FAILS("Range", z, 3, NULL, "delta must not be 0");
    tide_tensor *v[3] = {z[0], th_i64(1, TH_DIMS(2), (int64_t[]){1, 2}), z[1]};
    TH_ASSERT_FAILS("Range", v, 3, NULL, TIDE_INVALID_ARGUMENT, "limit must be a scalar, got shape [2]");
    ASSERT_KERNEL_FAILS("Range", v, 3, NULL, "limit must be a scalar, got shape [2]");
    tide_tensor *mixed[3] = {z[0], th_i32(0, NULL, (int32_t[]){9}), z[1]};
    TH_ASSERT_FAILS("Range", mixed, 3, NULL, TIDE_INVALID_ARGUMENT,
                    "input 'limit' has dtype int32, expected int64");
    tide_tensor *u8[3] = {th_tensor(TIDE_UINT8, 0, NULL, NULL), z[1], z[1]};
    TH_ASSERT_FAILS("Range", u8, 3, NULL, TIDE_INVALID_ARGUMENT, "Tidx must be one of");
    release(z, 3);
    release((tide_tensor *[]){v[1], mixed[1], u8[0]}, 3);
}

static void test_range_infer(void)
{
    tide_tensor *s = th_i32(0, NULL, (int32_t[]){0}), *l = th_i32(0, NULL, (int32_t[]){10});
    tide_tensor *d = th_i32(0, NULL, (int32_t[]){3}), *z = th_i32(0, NULL, (int32_t[]){0});
    gin known[3] = {cst(s), cst(l), cst(d)}, fed[3] = {cst(s), ph(TIDE_INT32, -1, NULL), cst(d)};
    gin zero[3] = {cst(s), cst(l), cst(z)}, vec[3] = {cst(s), cst(l), ph(TIDE_INT32, 1, TH_DIMS(-1))};
    ASSERT_INFER("Range", known, NULL, 1, TH_DIMS(4));
    ASSERT_INFER("Range", fed, NULL, 1, TH_DIMS(-1));
    ASSERT_INFER_FAILS("Range", zero, NULL, "delta must not be 0");
    ASSERT_INFER_FAILS("Range", vec, NULL, "delta must be a scalar, got shape [?]");
    release((tide_tensor *[]){s, l, d, z}, 4);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_gather_dtypes),
        TH_TEST(test_gather_axes),
        TH_TEST(test_gather_empty),
        TH_TEST(test_gather_large),
        TH_TEST(test_gather_strings),
        TH_TEST(test_gather_batch_dims),
        TH_TEST(test_gather_batch_dims_errors),
        TH_TEST(test_gather_errors),
        TH_TEST(test_gather_infer),
        TH_TEST(test_shape_n),
        TH_TEST(test_dynamic_stitch),
        TH_TEST(test_fill_dtypes),
        TH_TEST(test_fill_shapes),
        TH_TEST(test_fill_large),
        TH_TEST(test_fill_errors),
        TH_TEST(test_fill_infer),
        TH_TEST(test_zeros_ones_like),
        TH_TEST(test_shape_rank_size),
        TH_TEST(test_shape_size_int32_overflow),
        TH_TEST(test_shape_infer),
        TH_TEST(test_where),
        TH_TEST(test_expand_dims),
        TH_TEST(test_expand_dims_errors),
        TH_TEST(test_expand_dims_infer),
        TH_TEST(test_squeeze),
        TH_TEST(test_squeeze_errors),
        TH_TEST(test_squeeze_infer),
        TH_TEST(test_one_hot),
        TH_TEST(test_one_hot_large),
        TH_TEST(test_one_hot_strings),
        TH_TEST(test_one_hot_errors),
        TH_TEST(test_one_hot_infer),
        TH_TEST(test_range_int),
        TH_TEST(test_range_float),
        TH_TEST(test_range_large),
        TH_TEST(test_range_errors),
        TH_TEST(test_range_infer),
        TH_END,
    };
    return th_main("shape", tests);
}
