/* test_array.c — CUnit suite of the array manipulation ops (part A): Reshape, Transpose, Concat,
 * Split, Slice, StridedSlice, Pack, Unpack, Tile, Pad, PadV2.
 *
 * Every expected result is built here by reference index arithmetic: for each output element the
 * test computes which input element it must be (unravel the output index, map it as the op's
 * definition says, ravel it in the input), then copies that element. The ops only move elements,
 * so results must match exactly, for every dtype (strings compared byte for byte). StridedSlice is
 * checked against Python's slicing rules (CPython's slice.indices algorithm) on specs written as
 * Python would, x[1:, ::-1, None], converted to begin/end/strides/masks as TensorFlow's
 * tensor.__getitem__ does. Shape functions are checked on graphs with partly known shapes, and the
 * kernels' own checks by running graphs whose inputs are placeholders of unknown shape. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const tide_dtype DTYPES[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64,
                                    TIDE_BOOL, TIDE_INT8, TIDE_UINT8, TIDE_INT16, TIDE_UINT16,
                                    TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_COMPLEX64, TIDE_COMPLEX128,
                                    TIDE_STRING};
#define NUM_DTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))
#define MAXR TIDE_MAX_RANK

/* ---------------------------------------------------------------- tensors */

/* Writes a value derived from v into element i (distinct for distinct v where the dtype allows). */
static void put(tide_tensor *t, int64_t i, int64_t v)
{
    void *p = (char *)tide_tensor_data(t) + (size_t)i * tide_dtype_size(tide_tensor_dtype(t));
    switch (tide_tensor_dtype(t)) {
    case TIDE_BOOL: *(uint8_t *)p = v % 3 == 1; break;
    case TIDE_INT8: *(int8_t *)p = (int8_t)(v % 127 - 60); break;
    case TIDE_UINT8: *(uint8_t *)p = (uint8_t)(v % 251); break;
    case TIDE_INT16: *(int16_t *)p = (int16_t)(v % 32000 - 1000); break;
    case TIDE_UINT16: *(uint16_t *)p = (uint16_t)(v % 65000); break;
    case TIDE_INT32: *(int32_t *)p = (int32_t)(v * 3 - 7); break;
    case TIDE_INT64: *(int64_t *)p = v * 1000000007LL; break;
    case TIDE_FLOAT16: *(uint16_t *)p = tide_f32_to_f16((float)(v % 2000)); break;
    case TIDE_BFLOAT16: *(uint16_t *)p = tide_f32_to_bf16((float)(v % 250)); break;
    case TIDE_FLOAT32: *(float *)p = (float)v + 0.5f; break;
    case TIDE_FLOAT64: *(double *)p = (double)v * 1.25 - 3.0; break;
    case TIDE_COMPLEX64: ((float *)p)[0] = (float)v, ((float *)p)[1] = -(float)v - 0.5f; break;
    case TIDE_COMPLEX128: ((double *)p)[0] = (double)v + 0.5, ((double *)p)[1] = -(double)v; break;
    case TIDE_STRING: {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "e%lld%.*s", (long long)v, (int)(v % 7), "xxxxxxx");
        CU_ASSERT_FATAL(tide_tensor_string_set(t, i, buf, (size_t)n, NULL) == TIDE_OK);
        break;
    }
    default: CU_FAIL("dtype not handled by the test");
    }
}

/* Element i is put(i + 1): no element equals the zero fill of Pad. */
static tide_tensor *seq(tide_dtype dt, int rank, const int64_t *dims)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++)
        put(t, i, i + 1);
    return t;
}

static tide_tensor *scalar_of(tide_dtype dt, int64_t v)
{
    tide_tensor *t = th_tensor(dt, 0, NULL, NULL);
    put(t, 0, v);
    return t;
}

static void copy_elem(tide_tensor *dst, int64_t di, const tide_tensor *src, int64_t si)
{
    if (tide_tensor_dtype(src) == TIDE_STRING) {
        size_t len;
        const char *s = tide_tensor_string_get(src, si, &len);
        CU_ASSERT_FATAL(tide_tensor_string_set(dst, di, s, len, NULL) == TIDE_OK);
        return;
    }
    size_t es = tide_dtype_size(tide_tensor_dtype(src));
    memcpy((char *)tide_tensor_data(dst) + (size_t)di * es,
           (const char *)tide_tensor_data(src) + (size_t)si * es, es);
}

/* The expected result: element k is element idx[k] of srcs[which ? which[k] : 0], or, where
 * idx[k] is -1, the element of `fill` (a scalar; NULL: zero). */
static tide_tensor *expect(int rank, const int64_t *dims, tide_tensor *const *srcs,
                           const int *which, const int64_t *idx, const tide_tensor *fill)
{
    tide_tensor *t = th_tensor(tide_tensor_dtype(srcs[0]), rank, dims, NULL);
    for (int64_t k = 0; k < tide_tensor_num_elements(t); k++) {
        if (idx[k] >= 0)
            copy_elem(t, k, srcs[which ? which[k] : 0], idx[k]);
        else if (fill)
            copy_elem(t, k, fill, 0);
    }
    return t;
}

static int64_t numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

static void unravel(int64_t k, int rank, const int64_t *dims, int64_t *idx)
{
    for (int i = rank - 1; i >= 0; i--) {
        idx[i] = k % dims[i];
        k /= dims[i];
    }
}

static int64_t ravel(const int64_t *idx, int rank, const int64_t *dims)
{
    int64_t k = 0;
    for (int i = 0; i < rank; i++)
        k = k * dims[i] + idx[i];
    return k;
}

static int64_t *alloc_idx(int64_t n)
{
    int64_t *p = calloc((size_t)n + 1, sizeof *p);
    CU_ASSERT_FATAL(p != NULL);
    return p;
}

/* An index vector of dtype dt (int32 or int64). */
static tide_tensor *ivec(tide_dtype dt, int n, const int64_t *v)
{
    tide_tensor *t = th_tensor(dt, 1, (int64_t[]){n}, NULL);
    for (int i = 0; i < n; i++) {
        if (dt == TIDE_INT32)
            ((int32_t *)tide_tensor_data(t))[i] = (int32_t)v[i];
        else
            ((int64_t *)tide_tensor_data(t))[i] = v[i];
    }
    return t;
}

static tide_tensor *iscalar(tide_dtype dt, int64_t v)
{
    if (dt == TIDE_INT32) {
        int32_t x = (int32_t)v;
        return th_tensor(dt, 0, NULL, &x);
    }
    return th_tensor(dt, 0, NULL, &v);
}

static tide_dtype idx_dtype(int i)
{
    return i % 2 ? TIDE_INT64 : TIDE_INT32;
}

static tide_attrs *int_attrs(int n, const char *const *names, const int64_t *values)
{
    tide_attrs *a = tide_attrs_new();
    for (int i = 0; i < n; i++)
        tide_attrs_set_int(a, names[i], values[i]);
    return a;
}

static tide_attrs *attr1(const char *name, int64_t v)
{
    return int_attrs(1, &name, &v);
}

/* out shares in's buffer, starting at element off. */
static bool is_view_of(const tide_tensor *out, const tide_tensor *in, int64_t off)
{
    size_t es = tide_dtype_size(tide_tensor_dtype(in));
    return out && tide_tensor_data(out) == (char *)tide_tensor_data(in) + (size_t)off * es;
}

static void release_all(tide_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(t[i]);
}

/* ---------------------------------------------------------------- graphs (shape functions and
 * the kernels' own checks) */

static tide_node *placeholder(tide_graph *g, tide_dtype dt, const tide_shape *shape)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    if (shape)
        tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", shape);
    tide_node *n = tide_node_builder_finish(b, NULL);
    CU_ASSERT_FATAL(n != NULL);
    return n;
}

/* A Const node; takes over the reference to value. */
static tide_node *constant(tide_graph *g, tide_tensor *value)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_tensor_release(value);
    tide_node *n = tide_node_builder_finish(b, NULL);
    CU_ASSERT_FATAL(n != NULL);
    return n;
}

/* Adds op with inputs ins[0..n); inputs [list_from, list_from + list_len) form its list input. */
static tide_node *add_op(tide_graph *g, const char *op, tide_node *const *ins, int n, int list_from,
                         int list_len, const tide_attrs *attrs, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    for (int i = 0; i < n;) {
        if (i == list_from && list_len > 0) {
            tide_output outs[64];
            for (int k = 0; k < list_len; k++)
                outs[k] = (tide_output){ins[i + k], 0};
            tide_node_builder_add_input_list(b, outs, list_len);
            i += list_len;
        } else {
            tide_node_builder_add_input(b, (tide_output){ins[i++], 0});
        }
    }
    for (int i = 0; attrs && i < tide_attrs_count(attrs); i++) {
        int64_t v = 0;
        tide_attrs_get_int(attrs, tide_attrs_name_at(attrs, i), &v);
        tide_attrs_set_int(tide_node_builder_attrs(b), tide_attrs_name_at(attrs, i), v);
    }
    return tide_node_builder_finish(b, err);
}

static void assert_node_shape(const tide_node *n, int out, int rank, const int64_t *dims, int line)
{
    if (!n) {
        CU_assertImplementation(CU_FALSE, (unsigned)line, "node built", __FILE__, "", CU_FALSE);
        return;
    }
    tide_shape got = tide_node_output_shape(n, out), want = tide_shape_make(rank, dims);
    if (rank < 0)
        want = tide_shape_unknown();
    bool ok = tide_shape_equal(&got, &want);
    if (!ok) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        fprintf(stderr, "%s:%d: inferred %s, expected %s\n", __FILE__, line,
                tide_shape_format(&got, a, sizeof a), tide_shape_format(&want, b, sizeof b));
    }
    CU_assertImplementation(ok, (unsigned)line, "inferred shape", __FILE__, "", CU_FALSE);
}
#define NODE_SHAPE(n, out, rank, ...) assert_node_shape(n, out, rank, (const int64_t[]){__VA_ARGS__}, __LINE__)
#define NODE_UNKNOWN(n, out) assert_node_shape(n, out, -1, (const int64_t[]){0}, __LINE__)

/* Runs op in a session with every input fed to a Placeholder of unknown shape, so that only the
 * kernel can find what is wrong; asserts the run fails with code and a message containing needle. */
static void graph_fails_impl(const char *op, tide_tensor *const *in, int n, int list_from,
                             int list_len, const tide_attrs *attrs, tide_status code,
                             const char *needle, int line)
{
    tide_graph *g = tide_graph_new();
    tide_node *ph[16];
    tide_feed feeds[16];
    for (int i = 0; i < n; i++) {
        ph[i] = placeholder(g, tide_tensor_dtype(in[i]), NULL);
        feeds[i] = (tide_feed){{ph[i], 0}, in[i]};
    }
    tide_error *err = tide_error_new();
    tide_node *node = add_op(g, op, ph, n, list_from, list_len, attrs, err);
    tide_status st = node ? TIDE_OK : tide_error_code(err);
    if (node) {
        tide_session *s = tide_session_new(th_engine(), g, NULL, err);
        tide_tensor *outs[16] = {0};
        tide_output fetches[16];
        int nf = tide_node_num_outputs(node) < 16 ? tide_node_num_outputs(node) : 16;
        for (int i = 0; i < nf; i++)
            fetches[i] = (tide_output){node, i};
        st = s ? tide_session_run(s, NULL, feeds, n, fetches, nf, outs, NULL, 0, NULL, err)
               : tide_error_code(err);
        release_all(outs, nf);
        tide_session_free(s);
    }
    bool ok = st == code && strstr(tide_error_message(err), needle);
    if (!ok)
        fprintf(stderr, "%s:%d: %s through a graph: expected %s containing \"%s\", got %s: %s\n",
                __FILE__, line, op, tide_status_name(code), needle, tide_status_name(st),
                tide_error_message(err));
    CU_assertImplementation(ok, (unsigned)line, "graph run fails as expected", __FILE__, "", CU_FALSE);
    tide_error_free(err);
    tide_graph_free(g);
}
#define GRAPH_FAILS(op, in, n, lf, ll, attrs, code, needle) \
    graph_fails_impl(op, in, n, lf, ll, attrs, code, needle, __LINE__)
/* Fails eagerly (where the shape function sees every value) and through a graph (the kernel). */
#define FAILS_BOTH(op, in, n, lf, ll, attrs, code, needle)   \
    do {                                                     \
        TH_ASSERT_FAILS(op, in, n, attrs, code, needle);     \
        GRAPH_FAILS(op, in, n, lf, ll, attrs, code, needle); \
    } while (0)

/* ---------------------------------------------------------------- Reshape */

static void check_reshape(tide_tensor *x, int n, const int64_t *shape, int rank, const int64_t *dims,
                          tide_dtype idt)
{
    tide_tensor *in[2] = {x, ivec(idt, n, shape)};
    tide_tensor *got = th_run1("Reshape", in, 2, NULL);
    TH_ASSERT_SHAPE(got, rank, dims);
    int64_t total = tide_tensor_num_elements(x), *idx = alloc_idx(total);
    for (int64_t k = 0; k < total; k++)
        idx[k] = k; /* row-major order is kept */
    tide_tensor *want = expect(rank, dims, &x, NULL, idx, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    CU_ASSERT(is_view_of(got, x, 0)); /* no copy */
    free(idx);
    release_all((tide_tensor *[]){in[1], want, got}, 3);
}

static void test_reshape(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 2, TH_DIMS(2, 3));
        check_reshape(x, 2, TH_DIMS(3, 2), 2, TH_DIMS(3, 2), idx_dtype(d));
        check_reshape(x, 1, TH_DIMS(-1), 1, TH_DIMS(6), idx_dtype(d + 1));
        check_reshape(x, 3, TH_DIMS(1, -1, 2), 3, TH_DIMS(1, 3, 2), idx_dtype(d));
        check_reshape(x, 4, TH_DIMS(3, 1, 2, 1), 4, TH_DIMS(3, 1, 2, 1), idx_dtype(d));
        tide_tensor_release(x);
    }
    tide_tensor *one = seq(TIDE_FLOAT32, 2, TH_DIMS(1, 1));
    check_reshape(one, 0, NULL, 0, NULL, TIDE_INT32); /* to a scalar */
    tide_tensor *s = seq(TIDE_INT64, 0, NULL);
    check_reshape(s, 3, TH_DIMS(1, -1, 1), 3, TH_DIMS(1, 1, 1), TIDE_INT64);
    tide_tensor *big = seq(TIDE_FLOAT64, 3, TH_DIMS(2, 4, 16));
    check_reshape(big, 8, TH_DIMS(2, 2, 2, 2, 2, 2, 2, -1), 8, TH_DIMS(2, 2, 2, 2, 2, 2, 2, 1),
                  TIDE_INT32);
    release_all((tide_tensor *[]){one, s, big}, 3);
}

static void test_reshape_empty(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(0, 3));
    check_reshape(x, 2, TH_DIMS(3, 0), 2, TH_DIMS(3, 0), TIDE_INT32);
    check_reshape(x, 2, TH_DIMS(-1, 3), 2, TH_DIMS(0, 3), TIDE_INT64);
    check_reshape(x, 3, TH_DIMS(5, 0, 7), 3, TH_DIMS(5, 0, 7), TIDE_INT32);
    tide_tensor *in[2] = {x, ivec(TIDE_INT32, 2, TH_DIMS(0, -1))};
    TH_ASSERT_FAILS("Reshape", in, 2, NULL, TIDE_INVALID_ARGUMENT, "multiply to 0");
    tide_tensor_release(in[1]);
    tide_tensor_release(x);
}

static void test_reshape_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    struct {
        int n;
        int64_t v[9];
        const char *needle;
    } cases[] = {
        {1, {4}, "(6 elements) into shape [4] (4 elements)"},
        {2, {-1, -1}, "at most one -1"},
        {2, {-2, -3}, "sizes must be >= 0"},
        {2, {4, -1}, "6 is not a multiple of 4"},
        {9, {1, 1, 1, 1, 1, 1, 1, 1, 6}, "at most 8"},
        {2, {INT64_MAX / 2, 4}, "too many elements"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_tensor *in[2] = {x, ivec(TIDE_INT64, cases[i].n, cases[i].v)};
        FAILS_BOTH("Reshape", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT, cases[i].needle);
        tide_tensor_release(in[1]);
    }
    tide_tensor *in[2] = {x, th_tensor(TIDE_INT32, 2, TH_DIMS(1, 2), (int32_t[]){3, 2})};
    FAILS_BOTH("Reshape", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT, "shape must be a vector");
    tide_tensor_release(in[1]);
    in[1] = th_f32(1, TH_DIMS(2), (float[]){3, 2});
    TH_ASSERT_FAILS("Reshape", in, 2, NULL, TIDE_INVALID_ARGUMENT, "Tshape must be one of");
    tide_tensor_release(in[1]);
    tide_tensor_release(x);
}

/* ---------------------------------------------------------------- Transpose */

static void check_transpose(tide_tensor *x, const int64_t *perm, tide_dtype pdt)
{
    int rank = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t od[MAXR], oi[MAXR], ii[MAXR];
    for (int i = 0; i < rank; i++)
        od[i] = xd[perm[i]];
    int64_t n = numel(rank, od), *idx = alloc_idx(n);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, rank, od, oi);
        for (int i = 0; i < rank; i++)
            ii[perm[i]] = oi[i];
        idx[k] = ravel(ii, rank, xd);
    }
    tide_tensor *want = expect(rank, od, &x, NULL, idx, NULL);
    tide_tensor *in[2] = {x, ivec(pdt, rank, perm)};
    tide_tensor *got = th_run1("Transpose", in, 2, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    free(idx);
    release_all((tide_tensor *[]){in[1], want, got}, 3);
}

static void test_transpose_2d(void)
{
    static const int64_t shapes[][2] = {{1, 1}, {3, 5}, {8, 8}, {37, 53}, {64, 64}, {100, 33}};
    for (int d = 0; d < NUM_DTYPES; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            tide_tensor *x = seq(DTYPES[d], 2, shapes[s]);
            check_transpose(x, TH_DIMS(1, 0), idx_dtype((int)s));
            check_transpose(x, TH_DIMS(0, 1), idx_dtype(d));
            tide_tensor_release(x);
        }
}

/* Every permutation of rank 3 and 4 tensors; a few of rank 5 and 8. */
static void test_transpose_nd(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 3, TH_DIMS(3, 4, 5));
        for (int p = 0; p < 6; p++) {
            int64_t a = p / 2, rest[2], k = 0;
            for (int64_t i = 0; i < 3; i++)
                if (i != a)
                    rest[k++] = i;
            check_transpose(x, TH_DIMS(a, rest[p % 2], rest[1 - p % 2]), idx_dtype(p));
        }
        tide_tensor_release(x);
    }
    static const tide_dtype four[] = {TIDE_FLOAT32, TIDE_STRING, TIDE_COMPLEX128, TIDE_INT8};
    for (int d = 0; d < 4; d++) {
        tide_tensor *x = seq(four[d], 4, TH_DIMS(2, 3, 4, 5));
        for (int64_t p = 0; p < 24; p++) { /* the p-th permutation, by the factorial system */
            int64_t perm[4], used[4] = {0}, f = p;
            for (int i = 0; i < 4; i++) {
                int64_t pick = f % (4 - i), c = -1;
                f /= 4 - i;
                while (pick >= 0)
                    pick -= !used[++c];
                used[c] = 1;
                perm[i] = c;
            }
            check_transpose(x, perm, idx_dtype((int)p));
        }
        tide_tensor_release(x);
    }
    tide_tensor *x5 = seq(TIDE_INT64, 5, TH_DIMS(2, 3, 1, 4, 3));
    check_transpose(x5, TH_DIMS(4, 2, 0, 3, 1), TIDE_INT32);
    check_transpose(x5, TH_DIMS(0, 1, 2, 4, 3), TIDE_INT64);
    check_transpose(x5, TH_DIMS(2, 0, 1, 3, 4), TIDE_INT32); /* only a size-1 dim moves */
    tide_tensor *x8 = seq(TIDE_FLOAT32, 8, TH_DIMS(2, 3, 2, 2, 1, 2, 3, 2));
    check_transpose(x8, TH_DIMS(7, 6, 5, 4, 3, 2, 1, 0), TIDE_INT64);
    check_transpose(x8, TH_DIMS(1, 0, 3, 2, 5, 4, 7, 6), TIDE_INT32);
    tide_tensor_release(x5);
    tide_tensor_release(x8);
}

/* Sizes that take the blocked and multi-threaded paths. */
static void test_transpose_large(void)
{
    tide_tensor *a = seq(TIDE_FLOAT32, 2, TH_DIMS(517, 771));
    check_transpose(a, TH_DIMS(1, 0), TIDE_INT32);
    tide_tensor *b = seq(TIDE_FLOAT64, 3, TH_DIMS(64, 90, 70));
    check_transpose(b, TH_DIMS(2, 1, 0), TIDE_INT32);
    check_transpose(b, TH_DIMS(0, 2, 1), TIDE_INT64);
    check_transpose(b, TH_DIMS(1, 0, 2), TIDE_INT32);
    tide_tensor *c = seq(TIDE_COMPLEX128, 2, TH_DIMS(300, 200));
    check_transpose(c, TH_DIMS(1, 0), TIDE_INT64);
    tide_tensor *d = seq(TIDE_UINT8, 3, TH_DIMS(50, 60, 70));
    check_transpose(d, TH_DIMS(1, 2, 0), TIDE_INT32);
    tide_tensor *e = seq(TIDE_STRING, 2, TH_DIMS(130, 90));
    check_transpose(e, TH_DIMS(1, 0), TIDE_INT32);
    release_all((tide_tensor *[]){a, b, c, d, e}, 5);
}

static void test_transpose_views_and_empty(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 3, TH_DIMS(1, 5, 1));
    tide_tensor *in[2] = {x, ivec(TIDE_INT32, 3, TH_DIMS(2, 1, 0))};
    tide_tensor *got = th_run1("Transpose", in, 2, NULL);
    TH_ASSERT_SHAPE(got, 3, TH_DIMS(1, 5, 1));
    CU_ASSERT(is_view_of(got, x, 0)); /* only size-1 dims move: no copy */
    release_all((tide_tensor *[]){got, in[1], x}, 3);
    tide_tensor *e = seq(TIDE_STRING, 3, TH_DIMS(2, 0, 3));
    check_transpose(e, TH_DIMS(2, 0, 1), TIDE_INT64);
    tide_tensor *s = seq(TIDE_INT32, 0, NULL);
    check_transpose(s, NULL, TIDE_INT32);
    tide_tensor_release(e);
    tide_tensor_release(s);
}

static void test_transpose_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 3, TH_DIMS(2, 3, 4));
    static const int64_t bad[][3] = {{0, 0, 1}, {0, 1, 3}, {-1, 0, 1}};
    for (int i = 0; i < 3; i++) {
        tide_tensor *in[2] = {x, ivec(idx_dtype(i), 3, bad[i])};
        FAILS_BOTH("Transpose", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
                   "is not a permutation of 0..2");
        tide_tensor_release(in[1]);
    }
    tide_tensor *in[2] = {x, ivec(TIDE_INT32, 2, TH_DIMS(1, 0))};
    FAILS_BOTH("Transpose", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "perm has 2 entries but x has rank 3");
    tide_tensor_release(in[1]);
    in[1] = iscalar(TIDE_INT32, 0);
    TH_ASSERT_FAILS("Transpose", in, 2, NULL, TIDE_INVALID_ARGUMENT, "perm must be a vector");
    tide_tensor_release(in[1]);
    tide_tensor_release(x);
}

/* ---------------------------------------------------------------- Concat */

static void check_concat(tide_tensor *const *xs, int n, int64_t axis, tide_dtype adt)
{
    int rank = tide_tensor_rank(xs[0]);
    int64_t ax = axis < 0 ? axis + rank : axis, od[MAXR], oi[MAXR];
    memcpy(od, tide_tensor_shape(xs[0])->dims, sizeof od);
    od[ax] = 0;
    for (int j = 0; j < n; j++)
        od[ax] += tide_tensor_dim(xs[j], (int)ax);
    int64_t total = numel(rank, od), *idx = alloc_idx(total);
    int *which = malloc(((size_t)total + 1) * sizeof *which);
    for (int64_t k = 0; k < total; k++) {
        unravel(k, rank, od, oi);
        int j = 0;
        while (oi[ax] >= tide_tensor_dim(xs[j], (int)ax))
            oi[ax] -= tide_tensor_dim(xs[j++], (int)ax);
        which[k] = j;
        idx[k] = ravel(oi, rank, tide_tensor_shape(xs[j])->dims);
    }
    tide_tensor *want = expect(rank, od, xs, which, idx, NULL);
    tide_tensor *in[17];
    memcpy(in, xs, (size_t)n * sizeof *in);
    in[n] = iscalar(adt, axis);
    tide_tensor *got = th_run1("ConcatV2", in, n + 1, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    /* the legacy Concat: the same values with an int32 axis first */
    tide_tensor *legacy[17] = {iscalar(TIDE_INT32, axis)};
    memcpy(legacy + 1, xs, (size_t)n * sizeof *in);
    got = th_run1("Concat", legacy, n + 1, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    free(idx);
    free(which);
    release_all((tide_tensor *[]){in[n], legacy[0], want, got}, 4);
}

static void test_concat(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_dtype dt = DTYPES[d];
        tide_tensor *a[3] = {seq(dt, 2, TH_DIMS(2, 3)), seq(dt, 2, TH_DIMS(2, 4)),
                             seq(dt, 2, TH_DIMS(2, 1))};
        check_concat(a, 3, 1, idx_dtype(d));
        check_concat(a, 2, -1, idx_dtype(d + 1));
        tide_tensor *b[3] = {seq(dt, 2, TH_DIMS(2, 3)), seq(dt, 2, TH_DIMS(5, 3)),
                             seq(dt, 2, TH_DIMS(1, 3))};
        check_concat(b, 3, 0, idx_dtype(d));
        check_concat(b, 3, -2, idx_dtype(d));
        tide_tensor *c[3] = {seq(dt, 3, TH_DIMS(2, 1, 3)), seq(dt, 3, TH_DIMS(2, 4, 3)),
                             seq(dt, 3, TH_DIMS(2, 0, 3))};
        check_concat(c, 3, 1, idx_dtype(d + 1));
        tide_tensor *v[2] = {seq(dt, 1, TH_DIMS(4)), seq(dt, 1, TH_DIMS(3))};
        check_concat(v, 2, 0, idx_dtype(d));
        release_all(a, 3);
        release_all(b, 3);
        release_all(c, 3);
        release_all(v, 2);
    }
}

static void test_concat_special(void)
{
    /* N = 1: the input itself */
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    tide_tensor *in[2] = {x, iscalar(TIDE_INT32, 1)};
    tide_tensor *got = th_run1("ConcatV2", in, 2, NULL);
    CU_ASSERT(got == x);
    release_all((tide_tensor *[]){got, in[1], x}, 3);
    /* empty pieces and an empty result */
    tide_tensor *e[3] = {seq(TIDE_INT32, 2, TH_DIMS(0, 3)), seq(TIDE_INT32, 2, TH_DIMS(2, 3)),
                         seq(TIDE_INT32, 2, TH_DIMS(0, 3))};
    check_concat(e, 3, 0, TIDE_INT32);
    tide_tensor *z[2] = {seq(TIDE_STRING, 2, TH_DIMS(0, 3)), seq(TIDE_STRING, 2, TH_DIMS(0, 2))};
    check_concat(z, 2, 1, TIDE_INT64);
    /* many inputs (beyond the kernel's on-stack arrays) */
    tide_tensor *m[20];
    for (int i = 0; i < 20; i++)
        m[i] = seq(TIDE_FLOAT64, 2, TH_DIMS(3, i % 4 + 1));
    check_concat(m, 16, 1, TIDE_INT32);
    release_all(e, 3);
    release_all(z, 2);
    release_all(m, 20);
}

static void test_concat_large(void)
{
    tide_tensor *a[3] = {seq(TIDE_FLOAT32, 2, TH_DIMS(20000, 7)), seq(TIDE_FLOAT32, 2, TH_DIMS(20000, 9)),
                         seq(TIDE_FLOAT32, 2, TH_DIMS(20000, 1))};
    check_concat(a, 3, 1, TIDE_INT32);
    tide_tensor *b[2] = {seq(TIDE_INT64, 2, TH_DIMS(300, 1000)), seq(TIDE_INT64, 2, TH_DIMS(200, 1000))};
    check_concat(b, 2, 0, TIDE_INT64);
    tide_tensor *c[2] = {seq(TIDE_STRING, 2, TH_DIMS(3000, 5)), seq(TIDE_STRING, 2, TH_DIMS(3000, 4))};
    check_concat(c, 2, 1, TIDE_INT32);
    release_all(a, 3);
    release_all(b, 2);
    release_all(c, 2);
}

static void test_concat_errors(void)
{
    tide_tensor *in[3] = {seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3)), seq(TIDE_FLOAT32, 2, TH_DIMS(2, 4)),
                          iscalar(TIDE_INT32, 0)};
    FAILS_BOTH("ConcatV2", in, 3, 0, 2, NULL, TIDE_INVALID_ARGUMENT,
               "input 1 has shape [2, 4], which does not match input 0's shape [2, 3] in dimension 1");
    tide_tensor_release(in[2]);
    in[2] = iscalar(TIDE_INT64, 2);
    FAILS_BOTH("ConcatV2", in, 3, 0, 2, NULL, TIDE_OUT_OF_RANGE, "axis 2 is out of range [-2, 2)");
    tide_tensor_release(in[2]);
    in[2] = iscalar(TIDE_INT32, -3);
    TH_ASSERT_FAILS("ConcatV2", in, 3, NULL, TIDE_OUT_OF_RANGE, "axis -3 is out of range");
    tide_tensor_release(in[2]);
    in[2] = ivec(TIDE_INT32, 1, TH_DIMS(1));
    FAILS_BOTH("ConcatV2", in, 3, 0, 2, NULL, TIDE_INVALID_ARGUMENT, "axis must be a scalar");
    tide_tensor_release(in[2]);
    tide_tensor_release(in[1]);
    in[1] = seq(TIDE_FLOAT32, 3, TH_DIMS(2, 3, 1));
    in[2] = iscalar(TIDE_INT32, 0);
    FAILS_BOTH("ConcatV2", in, 3, 0, 2, NULL, TIDE_INVALID_ARGUMENT,
               "input 1 has shape [2, 3, 1], of rank 3, but input 0 has shape [2, 3], of rank 2");
    tide_tensor_release(in[1]);
    in[1] = seq(TIDE_INT32, 2, TH_DIMS(2, 3));
    TH_ASSERT_FAILS("ConcatV2", in, 3, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    release_all(in, 3);
    tide_tensor *s[3] = {scalar_of(TIDE_FLOAT32, 1), scalar_of(TIDE_FLOAT32, 2), iscalar(TIDE_INT32, 0)};
    FAILS_BOTH("ConcatV2", s, 3, 0, 2, NULL, TIDE_INVALID_ARGUMENT, "cannot concatenate scalars");
    release_all(s, 3);
}

/* The legacy Concat reads its axis from input 0, which must be an int32 scalar; its messages name
 * the inputs by their place in the node (the values from 1 on). */
static void test_concat_legacy_errors(void)
{
    tide_tensor *in[3] = {iscalar(TIDE_INT32, 0), seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3)),
                          seq(TIDE_FLOAT32, 2, TH_DIMS(2, 4))};
    FAILS_BOTH("Concat", in, 3, 1, 2, NULL, TIDE_INVALID_ARGUMENT,
               "input 2 has shape [2, 4], which does not match input 1's shape [2, 3] in dimension 1");
    tide_tensor_release(in[0]);
    in[0] = iscalar(TIDE_INT32, 2);
    FAILS_BOTH("Concat", in, 3, 1, 2, NULL, TIDE_OUT_OF_RANGE, "axis 2 is out of range [-2, 2)");
    tide_tensor_release(in[0]);
    in[0] = ivec(TIDE_INT32, 1, TH_DIMS(1));
    FAILS_BOTH("Concat", in, 3, 1, 2, NULL, TIDE_INVALID_ARGUMENT, "concat_dim must be a scalar");
    tide_tensor_release(in[0]);
    in[0] = iscalar(TIDE_INT64, 1); /* int32 only, as TensorFlow's */
    TH_ASSERT_FAILS("Concat", in, 3, NULL, TIDE_INVALID_ARGUMENT, "int64");
    tide_tensor_release(in[0]);
    /* the ConcatV2 order given to the legacy op is refused, not misread */
    tide_tensor *v2_order[3] = {in[1], in[2], iscalar(TIDE_INT32, 1)};
    TH_ASSERT_FAILS("Concat", v2_order, 3, NULL, TIDE_INVALID_ARGUMENT, "float32");
    release_all((tide_tensor *[]){in[1], in[2], v2_order[2]}, 3);
}

/* ---------------------------------------------------------------- Split */

/* Splits x along axis into num pieces and checks each; if views, that each is a view of x. */
static void check_split(tide_tensor *x, int64_t axis, int num, bool views)
{
    int rank = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t ax = axis < 0 ? axis + rank : axis, pd[MAXR] = {0}, pi[MAXR] = {0};
    memcpy(pd, xd, sizeof pd);
    pd[ax] /= num;
    tide_tensor *in[2] = {iscalar(TIDE_INT32, axis), x}, **out = calloc((size_t)num, sizeof *out);
    tide_attrs *a = attr1("num_split", num);
    CU_ASSERT_FATAL(th_run("Split", in, 2, a, out, num, NULL) == TIDE_OK);
    int64_t n = numel(rank, pd), *idx = alloc_idx(n);
    for (int j = 0; j < num; j++) {
        for (int64_t k = 0; k < n; k++) {
            unravel(k, rank, pd, pi);
            pi[ax] += j * pd[ax];
            idx[k] = ravel(pi, rank, xd);
        }
        tide_tensor *want = expect(rank, pd, &x, NULL, idx, NULL);
        TH_ASSERT_CLOSE(out[j], want, 0, 0);
        if (views && n > 0)
            CU_ASSERT(is_view_of(out[j], x, idx[0]));
        tide_tensor_release(want);
    }
    free(idx);
    release_all(out, num);
    free(out);
    tide_attrs_free(a);
    tide_tensor_release(in[0]);
}

static void test_split(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 2, TH_DIMS(6, 4));
        check_split(x, 0, 3, true);
        check_split(x, 1, 2, false);
        check_split(x, -1, 4, false);
        check_split(x, -2, 1, true);
        tide_tensor *y = seq(DTYPES[d], 3, TH_DIMS(2, 6, 3));
        check_split(y, 1, 3, false);
        check_split(y, 2, 3, false);
        tide_tensor *z = seq(DTYPES[d], 3, TH_DIMS(1, 6, 2));
        check_split(z, 1, 2, true); /* leading size-1 dims: still contiguous */
        release_all((tide_tensor *[]){x, y, z}, 3);
    }
    tide_tensor *e = seq(TIDE_FLOAT32, 2, TH_DIMS(0, 4));
    check_split(e, 1, 2, false);
    tide_tensor *f = seq(TIDE_STRING, 2, TH_DIMS(4, 0));
    check_split(f, 0, 2, false);
    tide_tensor *big = seq(TIDE_FLOAT32, 2, TH_DIMS(1000, 300));
    check_split(big, 1, 3, false);
    check_split(big, 1, 300, false); /* one element per row: the interleaving path */
    tide_tensor *s = seq(TIDE_STRING, 2, TH_DIMS(500, 40));
    check_split(s, 1, 20, false);
    release_all((tide_tensor *[]){e, f, big, s}, 4);
}

static void test_split_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(5, 4));
    tide_tensor *in[2] = {iscalar(TIDE_INT32, 0), x};
    tide_attrs *a = attr1("num_split", 2);
    FAILS_BOTH("Split", in, 2, -1, 0, a, TIDE_INVALID_ARGUMENT,
               "dimension 0 of value (shape [5, 4]) has size 5, which does not split evenly into 2");
    tide_tensor_release(in[0]);
    in[0] = iscalar(TIDE_INT32, 2);
    FAILS_BOTH("Split", in, 2, -1, 0, a, TIDE_OUT_OF_RANGE,
               "axis 2 is out of range [-2, 2) for value of shape [5, 4]");
    tide_tensor_release(in[0]);
    in[0] = ivec(TIDE_INT32, 1, TH_DIMS(1));
    FAILS_BOTH("Split", in, 2, -1, 0, a, TIDE_INVALID_ARGUMENT, "axis must be a scalar");
    tide_tensor_release(in[0]);
    in[0] = iscalar(TIDE_INT64, 1);
    TH_ASSERT_FAILS("Split", in, 2, a, TIDE_INVALID_ARGUMENT, "has dtype int64, expected int32");
    tide_tensor_release(in[0]);
    tide_attrs_free(a);
    in[0] = iscalar(TIDE_INT32, 1);
    a = attr1("num_split", 0);
    TH_ASSERT_FAILS("Split", in, 2, a, TIDE_INVALID_ARGUMENT, "num_split=0 must be >= 1");
    tide_attrs_free(a);
    tide_tensor_release(in[0]);
    tide_tensor_release(x);
}

/* SplitV of x along axis by size_splits given (dtype sdt; one may be -1), checked against the
 * sizes resolved here (`sizes`); if views, that each non-empty piece is a view of x. */
static void check_split_v(tide_tensor *x, int64_t axis, int num, const int64_t *given, const int64_t *sizes,
                          tide_dtype sdt, bool views)
{
    int rank = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t ax = axis < 0 ? axis + rank : axis, pd[MAXR] = {0}, pi[MAXR] = {0}, at = 0;
    tide_tensor *in[3] = {x, ivec(sdt, num, given), iscalar(TIDE_INT32, axis)};
    tide_tensor **out = calloc((size_t)num, sizeof *out);
    tide_attrs *a = attr1("num_split", num);
    CU_ASSERT_FATAL(th_run("SplitV", in, 3, a, out, num, NULL) == TIDE_OK);
    for (int j = 0; j < num; at += sizes[j], j++) {
        memcpy(pd, xd, sizeof pd);
        pd[ax] = sizes[j];
        int64_t n = numel(rank, pd), *idx = alloc_idx(n);
        for (int64_t k = 0; k < n; k++) {
            unravel(k, rank, pd, pi);
            pi[ax] += at;
            idx[k] = ravel(pi, rank, xd);
        }
        tide_tensor *want = expect(rank, pd, &x, NULL, idx, NULL);
        TH_ASSERT_CLOSE(out[j], want, 0, 0);
        if (views && n > 0)
            CU_ASSERT(is_view_of(out[j], x, idx[0]));
        tide_tensor_release(want);
        free(idx);
    }
    release_all(out, num);
    free(out);
    tide_attrs_free(a);
    release_all((tide_tensor *[]){in[1], in[2]}, 2);
}

static void test_split_v(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 2, TH_DIMS(6, 5));
        check_split_v(x, 0, 3, TH_DIMS(1, 2, 3), TH_DIMS(1, 2, 3), TIDE_INT64, true);
        check_split_v(x, 1, 3, TH_DIMS(2, -1, 1), TH_DIMS(2, 2, 1), TIDE_INT32, false);
        check_split_v(x, -1, 2, TH_DIMS(-1, 5), TH_DIMS(0, 5), idx_dtype(d), false); /* an empty piece */
        check_split_v(x, 0, 1, TH_DIMS(-1), TH_DIMS(6), TIDE_INT64, true);
        release_all((tide_tensor *[]){x}, 1);
    }
    tide_tensor *big = seq(TIDE_FLOAT64, 3, TH_DIMS(2, 700, 9));
    check_split_v(big, 1, 4, TH_DIMS(100, 300, -1, 1), TH_DIMS(100, 300, 299, 1), TIDE_INT32, false);
    check_split_v(big, 2, 3, TH_DIMS(1, 7, 1), TH_DIMS(1, 7, 1), TIDE_INT64, false);
    release_all((tide_tensor *[]){big}, 1);
}

static void test_split_v_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(5, 4));
    tide_attrs *a = attr1("num_split", 2);
    const struct {
        int64_t sizes[2];
        const char *needle;
    } cases[] = {
        {{2, 2}, "size_splits [2, 2] do not add up to the split dimension's size 5 (value [5, 4], split along "
                 "dimension 0)"},
        {{-1, -1}, "size_splits [-1, -1] may hold one -1 (a size inferred from the others) and sizes >= 0"},
        {{-2, 7}, "may hold one -1"},
        {{-1, 6}, "size_splits [-1, 6] leave nothing to infer from the split dimension's size 5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_tensor *in[3] = {x, ivec(TIDE_INT64, 2, cases[i].sizes), iscalar(TIDE_INT32, 0)};
        FAILS_BOTH("SplitV", in, 3, -1, 0, a, TIDE_INVALID_ARGUMENT, cases[i].needle);
        release_all((tide_tensor *[]){in[1], in[2]}, 2);
    }
    tide_tensor *in[3] = {x, ivec(TIDE_INT32, 3, TH_DIMS(1, 1, 3)), iscalar(TIDE_INT32, 0)};
    FAILS_BOTH("SplitV", in, 3, -1, 0, a, TIDE_INVALID_ARGUMENT, "size_splits");
    release_all((tide_tensor *[]){in[1], in[2]}, 2);
    in[1] = ivec(TIDE_INT32, 2, TH_DIMS(1, -1));
    in[2] = iscalar(TIDE_INT32, -3);
    FAILS_BOTH("SplitV", in, 3, -1, 0, a, TIDE_OUT_OF_RANGE, "axis -3 is out of range [-2, 2)");
    release_all((tide_tensor *[]){in[1], in[2], x}, 3);
    tide_attrs_free(a);
}

/* ---------------------------------------------------------------- Slice */

/* view_off >= 0: the result must be a view of x from that element. */
static void check_slice(tide_tensor *x, const int64_t *begin, const int64_t *size, tide_dtype idt,
                        int64_t view_off)
{
    int rank = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t od[MAXR], oi[MAXR];
    for (int i = 0; i < rank; i++)
        od[i] = size[i] == -1 ? xd[i] - begin[i] : size[i];
    int64_t n = numel(rank, od), *idx = alloc_idx(n);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, rank, od, oi);
        for (int i = 0; i < rank; i++)
            oi[i] += begin[i];
        idx[k] = ravel(oi, rank, xd);
    }
    tide_tensor *want = expect(rank, od, &x, NULL, idx, NULL);
    tide_tensor *in[3] = {x, ivec(idt, rank, begin), ivec(idt, rank, size)};
    tide_tensor *got = th_run1("Slice", in, 3, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    if (view_off >= 0)
        CU_ASSERT(is_view_of(got, x, view_off));
    free(idx);
    release_all((tide_tensor *[]){in[1], in[2], want, got}, 4);
}

static void test_slice(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_dtype dt = DTYPES[d], it = idx_dtype(d);
        tide_tensor *x = seq(dt, 3, TH_DIMS(4, 5, 6));
        check_slice(x, TH_DIMS(1, 2, 3), TH_DIMS(2, -1, 2), it, -1);
        check_slice(x, TH_DIMS(0, 0, 5), TH_DIMS(4, 5, 1), it, -1);
        check_slice(x, TH_DIMS(1, 0, 0), TH_DIMS(2, 5, 6), it, 30);   /* rows of dim 0: a view */
        check_slice(x, TH_DIMS(2, 1, 0), TH_DIMS(1, 3, -1), it, 66);  /* leading size 1: a view */
        check_slice(x, TH_DIMS(3, 4, 2), TH_DIMS(1, 1, 3), it, 116);
        check_slice(x, TH_DIMS(0, 0, 0), TH_DIMS(-1, -1, -1), it, 0); /* the whole */
        check_slice(x, TH_DIMS(4, 0, 0), TH_DIMS(0, -1, -1), it, -1); /* empty, begin at the end */
        check_slice(x, TH_DIMS(1, 2, 6), TH_DIMS(2, 2, -1), it, -1);
        tide_tensor *v = seq(dt, 1, TH_DIMS(9));
        check_slice(v, TH_DIMS(3), TH_DIMS(4), it, 3);
        tide_tensor *s = seq(dt, 0, NULL);
        check_slice(s, NULL, NULL, it, 0);
        release_all((tide_tensor *[]){x, v, s}, 3);
    }
    /* random slices of a rank-4 tensor */
    tide_tensor *x = seq(TIDE_FLOAT64, 4, TH_DIMS(7, 6, 5, 4));
    const int64_t *xd = tide_tensor_shape(x)->dims;
    for (int t = 0; t < 40; t++) {
        int64_t b[4], s[4];
        for (int i = 0; i < 4; i++) {
            b[i] = (int64_t)th_rand(0, (double)xd[i] + 1);
            s[i] = (int64_t)th_rand(-1, (double)(xd[i] - b[i]) + 1);
        }
        check_slice(x, b, s, idx_dtype(t), -1);
    }
    tide_tensor *big = seq(TIDE_FLOAT32, 2, TH_DIMS(1000, 500));
    check_slice(big, TH_DIMS(10, 7), TH_DIMS(900, 400), TIDE_INT32, -1);
    tide_tensor_release(x);
    tide_tensor_release(big);
}

static void test_slice_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(4, 3));
    struct {
        int64_t b[2], s[2];
        tide_status code;
        const char *needle;
    } cases[] = {
        {{-1, 0}, {1, 1}, TIDE_OUT_OF_RANGE, "begin[0] = -1 is out of range for dimension 0 of input shape [4, 3]"},
        {{0, 4}, {1, 0}, TIDE_OUT_OF_RANGE, "begin[1] = 4 is out of range"},
        {{1, 1}, {2, 3}, TIDE_OUT_OF_RANGE, "size[1] = 3 goes past the end of dimension 1: begin 1 + size 3 > 3"},
        {{1, 1}, {INT64_MAX, 1}, TIDE_OUT_OF_RANGE, "goes past the end of dimension 0"},
        {{0, 0}, {-2, 1}, TIDE_INVALID_ARGUMENT, "size[0] = -2 is negative"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_tensor *in[3] = {x, ivec(TIDE_INT64, 2, cases[i].b), ivec(TIDE_INT64, 2, cases[i].s)};
        FAILS_BOTH("Slice", in, 3, -1, 0, NULL, cases[i].code, cases[i].needle);
        tide_tensor_release(in[1]);
        tide_tensor_release(in[2]);
    }
    tide_tensor *in[3] = {x, ivec(TIDE_INT32, 1, TH_DIMS(0)), ivec(TIDE_INT32, 1, TH_DIMS(1))};
    FAILS_BOTH("Slice", in, 3, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "begin has 1 entries and size 1, but the input has rank 2");
    tide_tensor_release(in[2]);
    in[2] = ivec(TIDE_INT64, 1, TH_DIMS(1));
    TH_ASSERT_FAILS("Slice", in, 3, NULL, TIDE_INVALID_ARGUMENT, "has dtype int64, expected int32");
    release_all((tide_tensor *[]){in[1], in[2], x}, 3);
}

/* ---------------------------------------------------------------- StridedSlice */

#define NONE INT64_MIN /* Python's None in a slice */
typedef struct py_item {
    char kind; /* 's' slice start:stop:step, 'i' index, 'n' newaxis, 'e' ellipsis */
    int64_t start, stop, step;
} py_item;
#define SL(a, b, c) {'s', a, b, c}
#define IX(i) {'i', i, 0, 0}
#define NEWAXIS {'n', 0, 0, 0}
#define ELLIPSIS {'e', 0, 0, 0}

/* CPython's PySlice_Unpack + PySlice_AdjustIndices: the first index, the step and the length. */
static int64_t py_slice(int64_t start, int64_t stop, int64_t step, int64_t length, int64_t *first,
                        int64_t *step_out)
{
    step = step == NONE ? 1 : step;
    bool none_start = start == NONE, none_stop = stop == NONE;
    if (none_start)
        start = step < 0 ? INT64_MAX : 0;
    if (none_stop)
        stop = step < 0 ? INT64_MIN : INT64_MAX;
    if (start < 0) {
        start += length;
        if (start < 0)
            start = step < 0 ? -1 : 0;
    } else if (start >= length) {
        start = step < 0 ? length - 1 : length;
    }
    if (stop < 0) {
        stop += length;
        if (stop < 0)
            stop = step < 0 ? -1 : 0;
    } else if (stop >= length) {
        stop = step < 0 ? length - 1 : length;
    }
    *first = start;
    *step_out = step;
    if (step < 0)
        return stop < start ? (start - stop - 1) / (-step) + 1 : 0;
    return start < stop ? (stop - start - 1) / step + 1 : 0;
}

/* The result of x[items] by Python's rules: its shape and, per element, the input element. */
static int py_getitem(const tide_tensor *x, const py_item *items, int n, int64_t *od,
                      int64_t **idx_out)
{
    int rank = tide_tensor_rank(x), consumed = 0, out_rank = 0, d = 0, ellipsis = 0;
    const int64_t *xd = tide_tensor_shape(x)->dims;
    for (int i = 0; i < n; i++) {
        consumed += items[i].kind == 's' || items[i].kind == 'i';
        ellipsis += items[i].kind == 'e';
    }
    int64_t first[MAXR], step[MAXR];
    int src[2 * MAXR + 8]; /* the input dimension of each output dimension, -1 for a new axis */
    for (int i = 0; i <= n; i++) {
        py_item it = i < n ? items[i] : (py_item)ELLIPSIS;
        if (i == n && ellipsis)
            break;
        if (it.kind == 'e') {
            for (int k = rank - consumed; k > 0; k--, d++) {
                first[d] = 0, step[d] = 1;
                src[out_rank] = d;
                od[out_rank++] = xd[d];
            }
        } else if (it.kind == 'n') {
            src[out_rank] = -1;
            od[out_rank++] = 1;
        } else if (it.kind == 'i') {
            first[d] = it.start < 0 ? it.start + xd[d] : it.start;
            step[d] = 0;
            d++;
        } else {
            src[out_rank] = d;
            od[out_rank++] = py_slice(it.start, it.stop, it.step, xd[d], &first[d], &step[d]);
            d++;
        }
    }
    CU_ASSERT_FATAL(d == rank);
    int64_t total = numel(out_rank, od), *idx = alloc_idx(total), oi[2 * MAXR + 8], ii[MAXR];
    for (int64_t k = 0; k < total; k++) {
        unravel(k, out_rank, od, oi);
        memcpy(ii, first, sizeof ii);
        for (int o = 0; o < out_rank; o++)
            if (src[o] >= 0)
                ii[src[o]] = first[src[o]] + oi[o] * step[src[o]];
        idx[k] = ravel(ii, rank, xd);
    }
    *idx_out = idx;
    return out_rank;
}

/* Runs StridedSlice with the spec TensorFlow's __getitem__ builds from items. */
static tide_tensor *run_getitem(tide_tensor *x, const py_item *items, int n, tide_dtype idt)
{
    int64_t b[40], e[40], s[40], masks[5] = {0};
    for (int i = 0; i < n; i++) {
        py_item it = items[i];
        b[i] = e[i] = 0;
        s[i] = 1;
        if (it.kind == 's') {
            b[i] = it.start == NONE ? 0 : it.start;
            e[i] = it.stop == NONE ? 0 : it.stop;
            s[i] = it.step == NONE ? 1 : it.step;
            masks[0] |= (int64_t)(it.start == NONE) << i;
            masks[1] |= (int64_t)(it.stop == NONE) << i;
        } else if (it.kind == 'i') {
            b[i] = it.start;
            e[i] = it.start + 1; /* x[-1] gives end 0: the kernel must not use it */
            masks[4] |= 1LL << i;
        } else {
            masks[it.kind == 'e' ? 2 : 3] |= 1LL << i;
        }
    }
    static const char *const names[5] = {"begin_mask", "end_mask", "ellipsis_mask",
                                         "new_axis_mask", "shrink_axis_mask"};
    tide_attrs *a = int_attrs(5, names, masks);
    tide_tensor *in[4] = {x, ivec(idt, n, b), ivec(idt, n, e), ivec(idt, n, s)};
    tide_tensor *got = th_run1("StridedSlice", in, 4, a);
    tide_attrs_free(a);
    release_all(in + 1, 3);
    return got;
}

/* view_off >= 0: the result must be a view of x from that element. */
static void check_getitem(tide_tensor *x, const py_item *items, int n, tide_dtype idt, int64_t view_off)
{
    int64_t od[2 * MAXR + 8], *idx;
    int out_rank = py_getitem(x, items, n, od, &idx);
    tide_tensor *want = expect(out_rank, od, &x, NULL, idx, NULL);
    tide_tensor *got = run_getitem(x, items, n, idt);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    if (view_off >= 0)
        CU_ASSERT(is_view_of(got, x, view_off));
    free(idx);
    tide_tensor_release(want);
    tide_tensor_release(got);
}

#define GETITEM(x, idt, view, ...)                                                   \
    do {                                                                             \
        const py_item items_[] = {__VA_ARGS__};                                      \
        check_getitem(x, items_, (int)(sizeof items_ / sizeof items_[0]), idt, view); \
    } while (0)

static void getitem_cases(tide_tensor *x, tide_dtype it) /* x has shape [4, 5, 6] */
{
    GETITEM(x, it, -1, SL(1, NONE, NONE), SL(NONE, NONE, -1), NEWAXIS); /* x[1:, ::-1, None] */
    GETITEM(x, it, -1, ELLIPSIS, IX(0));                                /* x[..., 0] */
    GETITEM(x, it, 90, IX(-1));                                         /* x[-1] */
    GETITEM(x, it, -1, SL(NONE, NONE, 2), SL(1, 4, 2));                 /* x[::2, 1:4:2] */
    GETITEM(x, it, 0, NEWAXIS, ELLIPSIS, NEWAXIS);                      /* x[None, ..., None] */
    GETITEM(x, it, -1, SL(NONE, NONE, NONE), SL(-2, NONE, NONE), SL(NONE, NONE, -3));
    GETITEM(x, it, -1, SL(10, 20, NONE));                               /* clamped: empty */
    GETITEM(x, it, 0, SL(-100, 100, NONE));
    GETITEM(x, it, -1, SL(3, 1, -1));
    GETITEM(x, it, 45, IX(1), IX(2), IX(3));                            /* a scalar */
    GETITEM(x, it, -1, ELLIPSIS, SL(1, 2, NONE), NEWAXIS, IX(3));
    GETITEM(x, it, 0, NEWAXIS, IX(0), NEWAXIS);
    GETITEM(x, it, 0, SL(NONE, NONE, NONE), NEWAXIS, SL(NONE, NONE, NONE), ELLIPSIS);
    GETITEM(x, it, -1, SL(NONE, NONE, -1), SL(NONE, NONE, -1), SL(NONE, NONE, -1));
    GETITEM(x, it, -1, SL(2, 2, NONE));
    GETITEM(x, it, -1, SL(5, -5, -1));
    GETITEM(x, it, -1, SL(NONE, NONE, NONE), IX(-5));
    GETITEM(x, it, 0, ELLIPSIS);
    GETITEM(x, it, -1, SL(-1, NONE, -2), ELLIPSIS, SL(NONE, -7, -1));
    GETITEM(x, it, 30, SL(1, 3, NONE));                                 /* rows: a view */
    GETITEM(x, it, 79, IX(2), IX(3), SL(1, 4, NONE));                   /* one run: a view */
    GETITEM(x, it, 36, SL(1, 2, NONE), SL(1, 3, 1), ELLIPSIS);
    GETITEM(x, it, -1, SL(NONE, NONE, 3), IX(4), SL(5, NONE, -4));
    GETITEM(x, it, -1, SL(-3, -1, NONE), ELLIPSIS, SL(1, NONE, 2), NEWAXIS);
}

static void test_strided_slice(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 3, TH_DIMS(4, 5, 6));
        getitem_cases(x, idx_dtype(d));
        getitem_cases(x, idx_dtype(d + 1));
        tide_tensor_release(x);
    }
    tide_tensor *x = seq(TIDE_FLOAT32, 3, TH_DIMS(4, 5, 6));
    GETITEM(x, TIDE_INT32, -1, NEWAXIS, NEWAXIS, NEWAXIS, NEWAXIS, NEWAXIS); /* rank 8 */
    const py_item none[1] = {ELLIPSIS};
    check_getitem(x, none, 0, TIDE_INT32, 0); /* an empty spec: the whole */
    /* values beyond int32: clamping, and strides bigger than any dimension */
    GETITEM(x, TIDE_INT64, -1, SL(NONE, NONE, INT64_MAX), SL(NONE, NONE, INT64_MIN + 1));
    GETITEM(x, TIDE_INT64, 0, SL(INT64_MIN + 1, INT64_MAX, NONE), SL(-INT64_MAX, NONE, 1));
    GETITEM(x, TIDE_INT64, -1, SL(INT64_MAX, INT64_MIN + 1, -1), SL(INT64_MAX, NONE, -INT64_MAX));
    tide_tensor *s = seq(TIDE_STRING, 0, NULL);
    check_getitem(s, none, 0, TIDE_INT32, 0);
    GETITEM(s, TIDE_INT32, 0, NEWAXIS, ELLIPSIS);
    tide_tensor *e = seq(TIDE_INT32, 3, TH_DIMS(3, 0, 2));
    GETITEM(e, TIDE_INT32, -1, SL(1, NONE, NONE), SL(NONE, NONE, -1), IX(1));
    release_all((tide_tensor *[]){x, s, e}, 3);
}

/* Masks that ignore the begin/end given, set by hand. */
static void test_strided_slice_masks(void)
{
    tide_tensor *x = seq(TIDE_INT64, 3, TH_DIMS(4, 5, 6));
    static const char *const names[2] = {"begin_mask", "end_mask"};
    tide_attrs *a = int_attrs(2, names, TH_DIMS(2, 3));
    tide_tensor *in[4] = {x, ivec(TIDE_INT32, 3, TH_DIMS(3, 100, 0)),
                          ivec(TIDE_INT32, 3, TH_DIMS(0, -100, 6)), ivec(TIDE_INT32, 3, TH_DIMS(1, 1, 2))};
    tide_tensor *got = th_run1("StridedSlice", in, 4, a);
    int64_t od[3] = {1, 5, 3}, oi[3], idx[15];
    for (int64_t k = 0; k < 15; k++) {
        unravel(k, 3, od, oi);
        idx[k] = ravel((int64_t[]){3, oi[1], 2 * oi[2]}, 3, TH_DIMS(4, 5, 6));
    }
    tide_tensor *want = expect(3, od, &x, NULL, idx, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    release_all(in, 4);
    tide_attrs_free(a);
}

static void test_strided_slice_large(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(300, 400));
    GETITEM(x, TIDE_INT32, -1, SL(NONE, NONE, -1), SL(1, NONE, 3));
    GETITEM(x, TIDE_INT32, -1, SL(NONE, NONE, NONE), SL(NONE, NONE, -1));
    GETITEM(x, TIDE_INT64, -1, SL(5, 290, 7), SL(399, 0, -2));
    GETITEM(x, TIDE_INT32, -1, SL(NONE, NONE, NONE), SL(10, 390, NONE));
    GETITEM(x, TIDE_INT32, -1, SL(NONE, NONE, NONE), IX(7)); /* a column */
    tide_tensor *y = seq(TIDE_FLOAT64, 3, TH_DIMS(40, 50, 60));
    GETITEM(y, TIDE_INT32, -1, ELLIPSIS, SL(NONE, NONE, -2), NEWAXIS, SL(3, -3, NONE));
    tide_tensor *s = seq(TIDE_STRING, 2, TH_DIMS(100, 80));
    GETITEM(s, TIDE_INT32, -1, SL(NONE, NONE, -3), SL(1, NONE, 2));
    release_all((tide_tensor *[]){x, y, s}, 3);
}

static void ss_fails(tide_tensor *x, int n, const int64_t *b, const int64_t *e, const int64_t *s,
                     const int64_t *masks, tide_status code, const char *needle)
{
    static const char *const names[5] = {"begin_mask", "end_mask", "ellipsis_mask",
                                         "new_axis_mask", "shrink_axis_mask"};
    tide_attrs *a = int_attrs(5, names, masks);
    tide_tensor *in[4] = {x, ivec(TIDE_INT64, n, b), ivec(TIDE_INT64, n, e), ivec(TIDE_INT64, n, s)};
    FAILS_BOTH("StridedSlice", in, 4, -1, 0, a, code, needle);
    release_all(in + 1, 3);
    tide_attrs_free(a);
}

static void test_strided_slice_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 3, TH_DIMS(4, 5, 6));
    int64_t z[40] = {0}, ones[40], none[5] = {0};
    for (int i = 0; i < 40; i++)
        ones[i] = 1;
    ss_fails(x, 2, z, z, TH_DIMS(1, 0), none, TIDE_INVALID_ARGUMENT, "strides[1] must be non-zero");
    ss_fails(x, 1, TH_DIMS(4), TH_DIMS(5), ones, TH_DIMS(0, 0, 0, 0, 1), TIDE_OUT_OF_RANGE,
             "index 4 is out of bounds for dimension 0 of size 4 (input shape [4, 5, 6])");
    ss_fails(x, 2, TH_DIMS(0, -6), TH_DIMS(0, -5), ones, TH_DIMS(0, 0, 0, 0, 2), TIDE_OUT_OF_RANGE,
             "index -6 is out of bounds for dimension 1 of size 5");
    ss_fails(x, 2, z, z, ones, TH_DIMS(0, 0, 3, 0, 0), TIDE_INVALID_ARGUMENT, "more than one ellipsis");
    ss_fails(x, 4, z, z, ones, none, TIDE_INVALID_ARGUMENT, "more entries than the input has dimensions (3)");
    ss_fails(x, 1, TH_DIMS(1), TH_DIMS(2), TH_DIMS(-1), TH_DIMS(0, 0, 0, 0, 1), TIDE_INVALID_ARGUMENT,
             "needs a positive stride");
    ss_fails(x, 33, z, z, ones, TH_DIMS(0, 0, 0, ~0LL, 0), TIDE_INVALID_ARGUMENT, "at most 32");
    ss_fails(x, 6, z, z, ones, TH_DIMS(0, 0, 0, 63, 0), TIDE_INVALID_ARGUMENT, "more than 8 dimensions");
    tide_tensor *in[4] = {x, ivec(TIDE_INT32, 2, z), ivec(TIDE_INT32, 1, z), ivec(TIDE_INT32, 2, ones)};
    FAILS_BOTH("StridedSlice", in, 4, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "begin, end and strides must have the same length, got 2, 1 and 2");
    tide_tensor_release(in[2]);
    in[2] = iscalar(TIDE_INT32, 0);
    FAILS_BOTH("StridedSlice", in, 4, -1, 0, NULL, TIDE_INVALID_ARGUMENT, "end must be a vector");
    release_all(in, 4);
}

/* ---------------------------------------------------------------- Pack and Unpack */

static void check_pack(tide_tensor *const *xs, int n, int64_t axis, int64_t view_off)
{
    int r = tide_tensor_rank(xs[0]);
    const int64_t *xd = tide_tensor_shape(xs[0])->dims;
    int64_t ax = axis < 0 ? axis + r + 1 : axis, od[MAXR] = {0}, oi[MAXR] = {0}, ii[MAXR] = {0};
    for (int i = 0, k = 0; i <= r; i++)
        od[i] = i == ax ? n : xd[k++];
    int64_t total = numel(r + 1, od), *idx = alloc_idx(total);
    int *which = malloc(((size_t)total + 1) * sizeof *which);
    for (int64_t k = 0; k < total; k++) {
        unravel(k, r + 1, od, oi);
        for (int i = 0, m = 0; i <= r; i++)
            if (i != ax)
                ii[m++] = oi[i];
        which[k] = (int)oi[ax];
        idx[k] = ravel(ii, r, xd);
    }
    tide_tensor *want = expect(r + 1, od, xs, which, idx, NULL);
    tide_attrs *a = attr1("axis", axis);
    tide_tensor *got = th_run1("Pack", (tide_tensor **)xs, n, a);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    if (view_off >= 0)
        CU_ASSERT(is_view_of(got, xs[0], view_off));
    tide_attrs_free(a);
    free(idx);
    free(which);
    tide_tensor_release(want);
    tide_tensor_release(got);
}

static void test_pack(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_dtype dt = DTYPES[d];
        tide_tensor *x[3] = {seq(dt, 2, TH_DIMS(2, 3)), seq(dt, 2, TH_DIMS(2, 3)), seq(dt, 2, TH_DIMS(2, 3))};
        put(x[1], 0, 77); /* the inputs differ */
        put(x[2], 5, 78);
        for (int64_t axis = -3; axis < 3; axis++)
            check_pack(x, 3, axis, -1);
        check_pack(x, 1, 1, 0); /* one value: a view */
        tide_tensor *s[4] = {scalar_of(dt, 1), scalar_of(dt, 2), scalar_of(dt, 3), scalar_of(dt, 4)};
        check_pack(s, 4, 0, -1);
        check_pack(s, 4, -1, -1);
        release_all(x, 3);
        release_all(s, 4);
    }
    tide_tensor *e[2] = {seq(TIDE_FLOAT32, 2, TH_DIMS(0, 3)), seq(TIDE_FLOAT32, 2, TH_DIMS(0, 3))};
    check_pack(e, 2, 1, -1);
    tide_tensor *big[3] = {seq(TIDE_FLOAT32, 1, TH_DIMS(100000)), seq(TIDE_FLOAT32, 1, TH_DIMS(100000)),
                           seq(TIDE_FLOAT32, 1, TH_DIMS(100000))};
    put(big[1], 3, 5);
    check_pack(big, 3, 1, -1); /* one element per row: the interleaving path */
    check_pack(big, 3, 0, -1);
    tide_tensor *strs[2] = {seq(TIDE_STRING, 2, TH_DIMS(300, 20)), seq(TIDE_STRING, 2, TH_DIMS(300, 20))};
    check_pack(strs, 2, 2, -1);
    tide_tensor *many[18];
    for (int i = 0; i < 18; i++) {
        many[i] = seq(TIDE_INT64, 1, TH_DIMS(5));
        put(many[i], i % 5, 100 + i);
    }
    check_pack(many, 18, 1, -1);
    release_all(e, 2);
    release_all(big, 3);
    release_all(strs, 2);
    release_all(many, 18);
}

static void test_pack_errors(void)
{
    tide_tensor *x[2] = {seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3)), seq(TIDE_FLOAT32, 2, TH_DIMS(2, 4))};
    FAILS_BOTH("Pack", x, 2, 0, 2, NULL, TIDE_INVALID_ARGUMENT,
               "input 1 has shape [2, 4], which does not match input 0's shape [2, 3] in dimension 1");
    tide_tensor_release(x[1]);
    x[1] = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    tide_attrs *a = attr1("axis", 3);
    FAILS_BOTH("Pack", x, 2, 0, 2, a, TIDE_OUT_OF_RANGE, "axis 3 is out of range [-3, 3)");
    tide_attrs_free(a);
    a = attr1("axis", -4);
    TH_ASSERT_FAILS("Pack", x, 2, a, TIDE_OUT_OF_RANGE, "axis -4 is out of range");
    tide_attrs_free(a);
    tide_tensor_release(x[1]);
    x[1] = seq(TIDE_FLOAT32, 1, TH_DIMS(6));
    FAILS_BOTH("Pack", x, 2, 0, 2, NULL, TIDE_INVALID_ARGUMENT, "input 1 has shape [6], of rank 1");
    release_all(x, 2);
    tide_tensor *r8[2] = {seq(TIDE_FLOAT32, 8, TH_DIMS(1, 1, 1, 1, 1, 1, 1, 2)),
                          seq(TIDE_FLOAT32, 8, TH_DIMS(1, 1, 1, 1, 1, 1, 1, 2))};
    TH_ASSERT_FAILS("Pack", r8, 2, NULL, TIDE_INVALID_ARGUMENT, "at most 8");
    release_all(r8, 2);
}

static void check_unpack(tide_tensor *x, int64_t axis, bool views)
{
    int r = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t ax = axis < 0 ? axis + r : axis, num = xd[ax], pd[MAXR] = {0}, pi[MAXR] = {0}, ii[MAXR] = {0};
    for (int i = 0, k = 0; i < r; i++)
        if (i != ax)
            pd[k++] = xd[i];
    tide_tensor *out[64] = {0};
    static const char *const names[2] = {"num", "axis"};
    tide_attrs *a = int_attrs(2, names, (int64_t[]){num, axis});
    CU_ASSERT_FATAL(th_run("Unpack", &x, 1, a, out, 64, NULL) == TIDE_OK);
    int64_t n = numel(r - 1, pd), *idx = alloc_idx(n);
    for (int j = 0; j < num; j++) {
        for (int64_t k = 0; k < n; k++) {
            unravel(k, r - 1, pd, pi);
            for (int i = 0, m = 0; i < r; i++)
                ii[i] = i == ax ? j : pi[m++];
            idx[k] = ravel(ii, r, xd);
        }
        tide_tensor *want = expect(r - 1, pd, &x, NULL, idx, NULL);
        TH_ASSERT_CLOSE(out[j], want, 0, 0);
        if (views && n > 0)
            CU_ASSERT(is_view_of(out[j], x, idx[0]));
        tide_tensor_release(want);
    }
    CU_ASSERT(num == 64 || out[num] == NULL);
    free(idx);
    release_all(out, 64);
    tide_attrs_free(a);
}

static void test_unpack(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *x = seq(DTYPES[d], 3, TH_DIMS(3, 4, 2));
        check_unpack(x, 0, true);
        check_unpack(x, 1, false);
        check_unpack(x, -1, false);
        check_unpack(x, -3, true);
        tide_tensor *v = seq(DTYPES[d], 1, TH_DIMS(5));
        check_unpack(v, 0, true); /* into scalars */
        tide_tensor *l = seq(DTYPES[d], 3, TH_DIMS(1, 4, 2));
        check_unpack(l, 1, true);
        release_all((tide_tensor *[]){x, v, l}, 3);
    }
    tide_tensor *e = seq(TIDE_FLOAT32, 2, TH_DIMS(0, 3));
    check_unpack(e, 0, false); /* num = 0: no outputs */
    check_unpack(e, 1, false); /* three empty outputs */
    tide_tensor *big = seq(TIDE_FLOAT64, 2, TH_DIMS(100000, 3));
    check_unpack(big, 1, false); /* the interleaving path */
    tide_tensor *s = seq(TIDE_STRING, 2, TH_DIMS(200, 30));
    check_unpack(s, 1, false);
    release_all((tide_tensor *[]){e, big, s}, 3);
}

static void test_unpack_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    static const char *const names[2] = {"num", "axis"};
    tide_attrs *a = int_attrs(2, names, TH_DIMS(3, 0));
    FAILS_BOTH("Unpack", &x, 1, -1, 0, a, TIDE_INVALID_ARGUMENT,
               "num=3 but dimension 0 of value (shape [2, 3]) has size 2");
    tide_attrs_free(a);
    a = int_attrs(2, names, TH_DIMS(3, 2));
    FAILS_BOTH("Unpack", &x, 1, -1, 0, a, TIDE_OUT_OF_RANGE, "axis 2 is out of range [-2, 2)");
    tide_attrs_free(a);
    a = int_attrs(2, names, TH_DIMS(-1, 0));
    TH_ASSERT_FAILS("Unpack", &x, 1, a, TIDE_INVALID_ARGUMENT, "num=-1 must be >= 0");
    tide_attrs_free(a);
    tide_tensor *s = scalar_of(TIDE_INT32, 3);
    a = int_attrs(2, names, TH_DIMS(1, 0));
    FAILS_BOTH("Unpack", &s, 1, -1, 0, a, TIDE_INVALID_ARGUMENT, "cannot unpack a scalar");
    tide_attrs_free(a);
    tide_tensor_release(s);
    tide_tensor_release(x);
}

/* ---------------------------------------------------------------- Tile */

static void check_tile(tide_tensor *x, const int64_t *mult, tide_dtype idt)
{
    int r = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t od[MAXR], oi[MAXR];
    for (int i = 0; i < r; i++)
        od[i] = xd[i] * mult[i];
    int64_t n = numel(r, od), *idx = alloc_idx(n);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, r, od, oi);
        for (int i = 0; i < r; i++)
            oi[i] %= xd[i];
        idx[k] = ravel(oi, r, xd);
    }
    tide_tensor *want = expect(r, od, &x, NULL, idx, NULL);
    tide_tensor *in[2] = {x, ivec(idt, r, mult)};
    tide_tensor *got = th_run1("Tile", in, 2, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    free(idx);
    release_all((tide_tensor *[]){in[1], want, got}, 3);
}

static void test_tile(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_dtype dt = DTYPES[d], it = idx_dtype(d);
        tide_tensor *x = seq(dt, 2, TH_DIMS(2, 3));
        check_tile(x, TH_DIMS(2, 1), it);
        check_tile(x, TH_DIMS(1, 3), it);
        check_tile(x, TH_DIMS(3, 2), it);
        check_tile(x, TH_DIMS(0, 2), it);
        check_tile(x, TH_DIMS(1, 1), it);
        tide_tensor *v = seq(dt, 1, TH_DIMS(3));
        check_tile(v, TH_DIMS(4), it);
        tide_tensor *col = seq(dt, 2, TH_DIMS(5, 1));
        check_tile(col, TH_DIMS(2, 7), it); /* a column repeated: fills */
        tide_tensor_release(col);
        tide_tensor *s = seq(dt, 0, NULL);
        check_tile(s, NULL, it);
        tide_tensor *h = seq(dt, 4, TH_DIMS(2, 1, 3, 2));
        check_tile(h, TH_DIMS(1, 3, 2, 2), it);
        check_tile(h, TH_DIMS(2, 1, 1, 3), it);
        release_all((tide_tensor *[]){x, v, s, h}, 4);
    }
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3)), *in[2] = {x, ivec(TIDE_INT32, 2, TH_DIMS(1, 1))};
    tide_tensor *got = th_run1("Tile", in, 2, NULL);
    CU_ASSERT(got == x); /* nothing repeated: the input itself */
    release_all((tide_tensor *[]){got, in[1], x}, 3);
    tide_tensor *e = seq(TIDE_INT32, 2, TH_DIMS(0, 3));
    check_tile(e, TH_DIMS(4, 2), TIDE_INT64);
    tide_tensor *one = seq(TIDE_FLOAT64, 1, TH_DIMS(1));
    check_tile(one, TH_DIMS(100000), TIDE_INT32);
    tide_tensor *big = seq(TIDE_FLOAT32, 2, TH_DIMS(300, 200));
    check_tile(big, TH_DIMS(3, 2), TIDE_INT64);
    tide_tensor *col = seq(TIDE_INT64, 3, TH_DIMS(2000, 1, 1));
    check_tile(col, TH_DIMS(1, 3, 50), TIDE_INT32);
    tide_tensor_release(col);
    tide_tensor *s = seq(TIDE_STRING, 2, TH_DIMS(20, 30));
    check_tile(s, TH_DIMS(2, 3), TIDE_INT32);
    release_all((tide_tensor *[]){e, one, big, s}, 4);
}

static void test_tile_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    tide_tensor *in[2] = {x, ivec(TIDE_INT32, 2, TH_DIMS(2, -1))};
    FAILS_BOTH("Tile", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "multiples [2, -1] has a negative entry (input shape [2, 3])");
    tide_tensor_release(in[1]);
    in[1] = ivec(TIDE_INT32, 1, TH_DIMS(2));
    FAILS_BOTH("Tile", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "multiples has 1 entries but the input has rank 2");
    tide_tensor_release(in[1]);
    in[1] = ivec(TIDE_INT64, 2, TH_DIMS(INT64_MAX / 2 + 1, 1));
    FAILS_BOTH("Tile", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT, "overflows");
    tide_tensor_release(in[1]);
    in[1] = th_tensor(TIDE_INT32, 2, TH_DIMS(1, 2), (int32_t[]){1, 1});
    TH_ASSERT_FAILS("Tile", in, 2, NULL, TIDE_INVALID_ARGUMENT, "multiples must be a vector");
    release_all(in, 2);
}

/* ---------------------------------------------------------------- Pad and PadV2 */

/* fill NULL: Pad (zeros); else PadV2 with that scalar. */
static void check_pad(tide_tensor *x, const int64_t *pads, const tide_tensor *fill, tide_dtype idt)
{
    int r = tide_tensor_rank(x);
    const int64_t *xd = tide_tensor_shape(x)->dims;
    int64_t od[MAXR], oi[MAXR];
    for (int i = 0; i < r; i++)
        od[i] = pads[2 * i] + xd[i] + pads[2 * i + 1];
    int64_t n = numel(r, od), *idx = alloc_idx(n);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, r, od, oi);
        bool inside = true;
        for (int i = 0; i < r; i++) {
            oi[i] -= pads[2 * i];
            inside &= oi[i] >= 0 && oi[i] < xd[i];
        }
        idx[k] = inside ? ravel(oi, r, xd) : -1;
    }
    tide_tensor *want = expect(r, od, &x, NULL, idx, fill);
    tide_tensor *p = th_tensor(idt, 2, TH_DIMS(r, 2), NULL);
    for (int i = 0; i < 2 * r; i++) {
        if (idt == TIDE_INT32)
            ((int32_t *)tide_tensor_data(p))[i] = (int32_t)pads[i];
        else
            ((int64_t *)tide_tensor_data(p))[i] = pads[i];
    }
    tide_tensor *in[3] = {x, p, (tide_tensor *)fill};
    tide_tensor *got = th_run1(fill ? "PadV2" : "Pad", in, fill ? 3 : 2, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    free(idx);
    release_all((tide_tensor *[]){p, want, got}, 3);
}

static void pad_cases(tide_dtype dt, const tide_tensor *fill, tide_dtype it)
{
    tide_tensor *x = seq(dt, 2, TH_DIMS(2, 3));
    check_pad(x, TH_DIMS(1, 2, 0, 1), fill, it);
    check_pad(x, TH_DIMS(0, 0, 3, 0), fill, it);
    check_pad(x, TH_DIMS(2, 0, 0, 0), fill, it);
    tide_tensor *v = seq(dt, 1, TH_DIMS(3));
    check_pad(v, TH_DIMS(2, 0), fill, it);
    tide_tensor *c = seq(dt, 3, TH_DIMS(2, 3, 4));
    check_pad(c, TH_DIMS(0, 0, 1, 1, 0, 0), fill, it);
    check_pad(c, TH_DIMS(1, 0, 0, 0, 0, 3), fill, it);
    check_pad(c, TH_DIMS(1, 1, 1, 1, 1, 1), fill, it);
    tide_tensor *e = seq(dt, 2, TH_DIMS(0, 3));
    check_pad(e, TH_DIMS(1, 1, 1, 0), fill, it); /* all fill */
    check_pad(e, TH_DIMS(0, 0, 1, 0), fill, it); /* still empty */
    tide_tensor *h = seq(dt, 4, TH_DIMS(2, 1, 2, 3));
    check_pad(h, TH_DIMS(0, 1, 2, 0, 0, 0, 1, 1), fill, it);
    release_all((tide_tensor *[]){x, v, c, e, h}, 5);
}

static void test_pad(void)
{
    for (int d = 0; d < NUM_DTYPES; d++)
        pad_cases(DTYPES[d], NULL, idx_dtype(d));
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3)), *in[2] = {x, th_i32(2, TH_DIMS(2, 2), (int32_t[]){0, 0, 0, 0})};
    tide_tensor *got = th_run1("Pad", in, 2, NULL);
    CU_ASSERT(got == x); /* no padding: the input itself */
    release_all((tide_tensor *[]){got, in[1], x}, 3);
    tide_tensor *s = seq(TIDE_INT32, 0, NULL);
    check_pad(s, NULL, NULL, TIDE_INT32);
    tide_tensor *big = seq(TIDE_FLOAT32, 2, TH_DIMS(500, 600));
    check_pad(big, TH_DIMS(3, 4, 5, 6), NULL, TIDE_INT64);
    tide_tensor *strs = seq(TIDE_STRING, 2, TH_DIMS(200, 50));
    check_pad(strs, TH_DIMS(1, 2, 3, 4), NULL, TIDE_INT32);
    release_all((tide_tensor *[]){s, big, strs}, 3);
}

static void test_padv2(void)
{
    for (int d = 0; d < NUM_DTYPES; d++) {
        tide_tensor *fill = scalar_of(DTYPES[d], 999);
        pad_cases(DTYPES[d], fill, idx_dtype(d + 1));
        tide_tensor_release(fill);
    }
    tide_tensor *fill = scalar_of(TIDE_FLOAT64, -7);
    tide_tensor *big = seq(TIDE_FLOAT64, 3, TH_DIMS(50, 60, 70));
    check_pad(big, TH_DIMS(1, 0, 2, 3, 4, 5), fill, TIDE_INT32);
    tide_tensor_release(fill);
    tide_tensor_release(big);
}

static void test_pad_errors(void)
{
    tide_tensor *x = seq(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    tide_tensor *in[3] = {x, th_i32(2, TH_DIMS(2, 2), (int32_t[]){1, -1, 0, 0}), scalar_of(TIDE_FLOAT32, 1)};
    FAILS_BOTH("Pad", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "paddings [1, -1, 0, 0] has a negative entry");
    tide_tensor_release(in[1]);
    in[1] = th_i32(2, TH_DIMS(2, 3), (int32_t[]){1, 1, 1, 1, 1, 1});
    FAILS_BOTH("Pad", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "paddings must have shape [rank, 2]; got [2, 3]");
    tide_tensor_release(in[1]);
    in[1] = th_i32(2, TH_DIMS(1, 2), (int32_t[]){1, 1});
    FAILS_BOTH("PadV2", in, 3, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "got [1, 2] for an input of shape [2, 3]");
    tide_tensor_release(in[1]);
    in[1] = th_i64(2, TH_DIMS(2, 2), (int64_t[]){INT64_MAX, 1, 0, 0});
    FAILS_BOTH("Pad", in, 2, -1, 0, NULL, TIDE_INVALID_ARGUMENT, "overflows");
    tide_tensor_release(in[1]);
    tide_tensor_release(in[2]);
    in[1] = th_i32(2, TH_DIMS(2, 2), (int32_t[]){1, 1, 1, 1});
    in[2] = seq(TIDE_FLOAT32, 1, TH_DIMS(1));
    FAILS_BOTH("PadV2", in, 3, -1, 0, NULL, TIDE_INVALID_ARGUMENT,
               "constant_values must be a scalar");
    tide_tensor_release(in[2]);
    in[2] = scalar_of(TIDE_INT32, 1);
    TH_ASSERT_FAILS("PadV2", in, 3, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    release_all(in, 3);
}

/* ---------------------------------------------------------------- inputs that are views */

/* Inputs that are themselves views (at an offset into a shared buffer), as chained ops give. */
static void test_view_inputs(void)
{
    for (int d = 0; d < 2; d++) {
        tide_tensor *base = seq(d ? TIDE_STRING : TIDE_INT32, 3, TH_DIMS(4, 5, 6));
        tide_tensor *v = tide_tensor_slice(base, 1, 3, NULL); /* [2, 5, 6] from element 30 */
        CU_ASSERT_FATAL(v != NULL);
        check_slice(v, TH_DIMS(1, 2, 0), TH_DIMS(1, 2, -1), TIDE_INT32, 42);
        check_slice(v, TH_DIMS(0, 1, 1), TH_DIMS(2, 3, 4), TIDE_INT64, -1);
        check_transpose(v, TH_DIMS(2, 0, 1), TIDE_INT32);
        GETITEM(v, TIDE_INT32, -1, SL(NONE, NONE, -1), IX(3), SL(1, NONE, 2));
        GETITEM(v, TIDE_INT32, 36, IX(1), IX(1));
        tide_tensor *two[2] = {v, v};
        check_concat(two, 2, 1, TIDE_INT32);
        check_pack(two, 2, -1, -1);
        check_split(v, 2, 3, false);
        check_split(v, 0, 2, true);
        check_unpack(v, 1, false);
        check_tile(v, TH_DIMS(2, 1, 2), TIDE_INT32);
        check_pad(v, TH_DIMS(1, 0, 0, 2, 1, 1), NULL, TIDE_INT32);
        tide_tensor_release(v);
        tide_tensor_release(base);
    }
}

/* ---------------------------------------------------------------- empty tensors with huge dims */

static void run_shape(const char *op, tide_tensor **in, int n, const tide_attrs *a, int rank,
                      const int64_t *dims)
{
    tide_tensor *got = th_run1(op, in, n, a);
    TH_ASSERT_SHAPE(got, rank, dims);
    tide_tensor_release(got);
}

/* An empty tensor's other dimensions may multiply past int64: nothing may overflow on them. */
static void test_empty_huge_dims(void)
{
    const int64_t H = (int64_t)1 << 62;
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(0, H), NULL);
    tide_tensor *in[4] = {x, ivec(TIDE_INT32, 2, TH_DIMS(1, 0))};
    run_shape("Transpose", in, 2, NULL, 2, TH_DIMS(H, 0));
    tide_tensor_release(in[1]);
    in[1] = ivec(TIDE_INT64, 2, TH_DIMS(0, 5));
    in[2] = ivec(TIDE_INT64, 2, TH_DIMS(-1, 10));
    run_shape("Slice", in, 3, NULL, 2, TH_DIMS(0, 10));
    release_all(in + 1, 2);
    static const char *const masks[2] = {"begin_mask", "end_mask"};
    tide_attrs *a = int_attrs(2, masks, TH_DIMS(3, 3));
    in[1] = ivec(TIDE_INT64, 2, TH_DIMS(0, 0));
    in[2] = ivec(TIDE_INT64, 2, TH_DIMS(0, 0));
    in[3] = ivec(TIDE_INT64, 2, TH_DIMS(1, -2));
    run_shape("StridedSlice", in, 4, a, 2, TH_DIMS(0, H / 2));
    release_all(in + 1, 3);
    tide_attrs_free(a);
    tide_tensor *c[3] = {x, x, iscalar(TIDE_INT32, 0)};
    run_shape("ConcatV2", c, 3, NULL, 2, TH_DIMS(0, H));
    tide_tensor_release(c[2]);
    c[2] = iscalar(TIDE_INT32, 1); /* [0, 2^63]: too big */
    FAILS_BOTH("ConcatV2", c, 3, 0, 2, NULL, TIDE_INVALID_ARGUMENT, "overflows");
    tide_tensor_release(c[2]);
    tide_tensor *big[3] = {x, x, x};
    a = attr1("axis", 2);
    run_shape("Pack", big, 3, a, 3, TH_DIMS(0, H, 3));
    tide_attrs_free(a);
    a = attr1("num_split", 2);
    tide_tensor *sp[2] = {iscalar(TIDE_INT32, 1), x}, *outs[2] = {NULL, NULL};
    CU_ASSERT(th_run("Split", sp, 2, a, outs, 2, NULL) == TIDE_OK);
    TH_ASSERT_SHAPE(outs[1], 2, TH_DIMS(0, H / 2));
    release_all(outs, 2);
    tide_tensor_release(sp[0]);
    tide_attrs_free(a);
    in[1] = ivec(TIDE_INT32, 2, TH_DIMS(3, 1));
    run_shape("Tile", in, 2, NULL, 2, TH_DIMS(0, H));
    tide_tensor_release(in[1]);
    in[1] = ivec(TIDE_INT64, 3, TH_DIMS(H, 0, 1));
    run_shape("Reshape", in, 2, NULL, 3, TH_DIMS(H, 0, 1));
    tide_tensor_release(in[1]);
    in[1] = th_i64(2, TH_DIMS(2, 2), (int64_t[]){0, 0, 1, 1});
    run_shape("Pad", in, 2, NULL, 2, TH_DIMS(0, H + 2));
    tide_tensor_release(in[1]);
    tide_tensor_release(x);
}

/* ---------------------------------------------------------------- shape functions on graphs */

static tide_shape shp(int rank, const int64_t *dims)
{
    return tide_shape_make(rank, dims);
}

static tide_node *op_node(tide_graph *g, const char *op, tide_node *const *ins, int n, int lf, int ll,
                          const tide_attrs *a)
{
    tide_error *err = tide_error_new();
    tide_node *node = add_op(g, op, ins, n, lf, ll, a, err);
    if (!node)
        fprintf(stderr, "building %s: %s\n", op, tide_error_message(err));
    tide_error_free(err);
    return node;
}

static void test_shape_inference(void)
{
    tide_graph *g = tide_graph_new();
    tide_shape q3 = shp(2, TH_DIMS(-1, 3)), q34 = shp(3, TH_DIMS(-1, 3, 4)), k23 = shp(2, TH_DIMS(2, 3));
    tide_node *p = placeholder(g, TIDE_FLOAT32, &q3), *p3 = placeholder(g, TIDE_FLOAT32, &q34);
    tide_node *k = placeholder(g, TIDE_FLOAT32, &k23), *u = placeholder(g, TIDE_FLOAT32, NULL);
    tide_node *vi = placeholder(g, TIDE_INT32, NULL);
    tide_node *n;
    /* Reshape */
    n = op_node(g, "Reshape", (tide_node *[]){k, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(-1, 2)))}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, 3, 2);
    n = op_node(g, "Reshape", (tide_node *[]){p, constant(g, ivec(TIDE_INT64, 2, TH_DIMS(3, -1)))}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, 3, -1);
    n = op_node(g, "Reshape", (tide_node *[]){p, vi}, 2, -1, 0, NULL);
    NODE_UNKNOWN(n, 0);
    /* Transpose */
    n = op_node(g, "Transpose", (tide_node *[]){p3, constant(g, ivec(TIDE_INT32, 3, TH_DIMS(2, 0, 1)))}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 3, 4, -1, 3);
    n = op_node(g, "Transpose", (tide_node *[]){p3, vi}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 3, -1, -1, -1);
    n = op_node(g, "Transpose", (tide_node *[]){u, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(1, 0)))}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, -1, -1);
    /* Concat */
    tide_shape a2q = shp(2, TH_DIMS(2, -1));
    tide_node *pa = placeholder(g, TIDE_FLOAT32, &a2q);
    n = op_node(g, "ConcatV2", (tide_node *[]){p, pa, constant(g, iscalar(TIDE_INT32, 0))}, 3, 0, 2, NULL);
    NODE_SHAPE(n, 0, 2, -1, 3);
    n = op_node(g, "ConcatV2", (tide_node *[]){k, pa, constant(g, iscalar(TIDE_INT64, -1))}, 3, 0, 2, NULL);
    NODE_SHAPE(n, 0, 2, 2, -1);
    n = op_node(g, "ConcatV2", (tide_node *[]){k, k, constant(g, iscalar(TIDE_INT32, 1))}, 3, 0, 2, NULL);
    NODE_SHAPE(n, 0, 2, 2, 6);
    n = op_node(g, "ConcatV2", (tide_node *[]){k, u, vi}, 3, 0, 2, NULL);
    NODE_SHAPE(n, 0, 2, -1, -1);
    /* Split */
    tide_shape q6 = shp(2, TH_DIMS(-1, 6));
    tide_node *p6 = placeholder(g, TIDE_FLOAT32, &q6);
    tide_attrs *a = attr1("num_split", 3);
    n = op_node(g, "Split", (tide_node *[]){constant(g, iscalar(TIDE_INT32, 1)), p6}, 2, -1, 0, a);
    NODE_SHAPE(n, 0, 2, -1, 2);
    NODE_SHAPE(n, 2, 2, -1, 2);
    n = op_node(g, "Split", (tide_node *[]){vi, p6}, 2, -1, 0, a);
    NODE_SHAPE(n, 1, 2, -1, -1);
    /* SplitV: known sizes, one inferred from a known dimension; unknown dimension, unknown sizes */
    tide_node *sizes = constant(g, ivec(TIDE_INT64, 3, TH_DIMS(1, -1, 2)));
    n = op_node(g, "SplitV", (tide_node *[]){p6, sizes, constant(g, iscalar(TIDE_INT32, -1))}, 3, -1, 0, a);
    NODE_SHAPE(n, 0, 2, -1, 1);
    NODE_SHAPE(n, 1, 2, -1, 3);
    NODE_SHAPE(n, 2, 2, -1, 2);
    n = op_node(g, "SplitV", (tide_node *[]){p6, sizes, constant(g, iscalar(TIDE_INT32, 0))}, 3, -1, 0, a);
    NODE_SHAPE(n, 0, 2, 1, 6);
    NODE_SHAPE(n, 1, 2, -1, 6);
    tide_node *vs = placeholder(g, TIDE_INT32, NULL);
    n = op_node(g, "SplitV", (tide_node *[]){p6, vs, constant(g, iscalar(TIDE_INT32, 1))}, 3, -1, 0, a);
    NODE_SHAPE(n, 2, 2, -1, -1);
    tide_attrs_free(a);
    tide_graph_free(g);
}

static void test_shape_inference_slicing(void)
{
    tide_graph *g = tide_graph_new();
    tide_shape q3 = shp(2, TH_DIMS(-1, 3)), q34 = shp(3, TH_DIMS(-1, 3, 4)), k23 = shp(2, TH_DIMS(2, 3));
    tide_node *p = placeholder(g, TIDE_FLOAT32, &q3), *p3 = placeholder(g, TIDE_FLOAT32, &q34);
    tide_node *k = placeholder(g, TIDE_FLOAT32, &k23), *u = placeholder(g, TIDE_FLOAT32, NULL);
    tide_node *vi = placeholder(g, TIDE_INT32, NULL);
    tide_node *n;
    tide_attrs *a;
    /* Slice */
    n = op_node(g, "Slice", (tide_node *[]){p, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(0, 1))),
                                           constant(g, ivec(TIDE_INT32, 2, TH_DIMS(-1, -1)))}, 3, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, -1, 2);
    n = op_node(g, "Slice", (tide_node *[]){u, vi, constant(g, ivec(TIDE_INT32, 3, TH_DIMS(4, -1, 0)))}, 3, -1, 0, NULL);
    NODE_SHAPE(n, 0, 3, 4, -1, 0);
    /* StridedSlice: x[:, 1:4:2] and x[..., 2] on [?, 3, 4]; unknown strides: unknown */
    static const char *const masks[5] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                         "shrink_axis_mask"};
    a = int_attrs(5, masks, TH_DIMS(1, 1, 0, 0, 0));
    n = op_node(g, "StridedSlice", (tide_node *[]){p3, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(0, 1))),
                                                  constant(g, ivec(TIDE_INT32, 2, TH_DIMS(0, 4))),
                                                  constant(g, ivec(TIDE_INT32, 2, TH_DIMS(1, 2)))}, 4, -1, 0, a);
    NODE_SHAPE(n, 0, 3, -1, 1, 4);
    n = op_node(g, "StridedSlice", (tide_node *[]){p3, vi, vi, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(1, 2)))}, 4, -1, 0, a);
    NODE_SHAPE(n, 0, 3, -1, -1, 4); /* begin/end unknown: only the masked and untouched dims */
    n = op_node(g, "StridedSlice", (tide_node *[]){p3, vi, vi, vi}, 4, -1, 0, a);
    NODE_UNKNOWN(n, 0);
    tide_attrs_free(a);
    a = int_attrs(5, masks, TH_DIMS(0, 0, 1, 4, 2));
    n = op_node(g, "StridedSlice", (tide_node *[]){p3, constant(g, ivec(TIDE_INT32, 3, TH_DIMS(0, 2, 0))),
                                                  constant(g, ivec(TIDE_INT32, 3, TH_DIMS(0, 3, 0))),
                                                  constant(g, ivec(TIDE_INT32, 3, TH_DIMS(1, 1, 1)))}, 4, -1, 0, a);
    NODE_SHAPE(n, 0, 3, -1, 3, 1); /* x[..., 2, None] */
    tide_attrs_free(a);
    /* Pack, Unpack */
    a = attr1("axis", 1);
    n = op_node(g, "Pack", (tide_node *[]){p, k}, 2, 0, 2, a);
    NODE_SHAPE(n, 0, 3, 2, 2, 3);
    tide_attrs_free(a);
    static const char *const un[2] = {"num", "axis"};
    a = int_attrs(2, un, TH_DIMS(3, -1));
    n = op_node(g, "Unpack", (tide_node *[]){p}, 1, -1, 0, a);
    NODE_SHAPE(n, 2, 1, -1);
    tide_attrs_free(a);
    /* Tile, Pad */
    n = op_node(g, "Tile", (tide_node *[]){p, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(0, 2)))}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, 0, 6);
    n = op_node(g, "Tile", (tide_node *[]){p, vi}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, -1, -1);
    n = op_node(g, "Pad", (tide_node *[]){p, constant(g, th_i64(2, TH_DIMS(2, 2), (int64_t[]){1, 1, 2, 0}))}, 2, -1, 0, NULL);
    NODE_SHAPE(n, 0, 2, -1, 5);
    n = op_node(g, "PadV2", (tide_node *[]){u, constant(g, th_i32(2, TH_DIMS(1, 2), (int32_t[]){1, 1})),
                                           constant(g, scalar_of(TIDE_FLOAT32, 0))}, 3, -1, 0, NULL);
    NODE_SHAPE(n, 0, 1, -1);
    tide_graph_free(g);
}

/* Errors a shape function finds at graph time, before anything runs. */
static void test_shape_inference_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_shape k23 = shp(2, TH_DIMS(2, 3)), k24 = shp(2, TH_DIMS(-1, 4));
    tide_node *k = placeholder(g, TIDE_FLOAT32, &k23), *q = placeholder(g, TIDE_FLOAT32, &k24);
    struct {
        const char *op;
        tide_node *ins[4];
        int n, lf, ll;
        const char *needle;
    } cases[] = {
        {"ConcatV2", {k, q, constant(g, iscalar(TIDE_INT32, 0))}, 3, 0, 2, "input 1 has shape [?, 4], which does not match input 0's shape [2, 3] in dimension 1"},
        {"Reshape", {k, constant(g, ivec(TIDE_INT32, 1, TH_DIMS(4)))}, 2, -1, 0, "(6 elements) into shape [4]"},
        {"Transpose", {k, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(0, 0)))}, 2, -1, 0, "is not a permutation"},
        {"Slice", {k, constant(g, ivec(TIDE_INT32, 2, TH_DIMS(1, 0))), constant(g, ivec(TIDE_INT32, 2, TH_DIMS(2, 1)))}, 3, -1, 0, "goes past the end"},
        {"Pack", {k, q}, 2, 0, 2, "does not match input 0's shape"},
        {"Tile", {q, constant(g, ivec(TIDE_INT32, 3, TH_DIMS(1, 1, 1)))}, 2, -1, 0, "multiples has 3 entries"},
        {"Pad", {q, constant(g, th_i32(2, TH_DIMS(2, 2), (int32_t[]){0, -1, 0, 0}))}, 2, -1, 0, "negative entry"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_error *err = tide_error_new();
        tide_node *n = add_op(g, cases[i].op, cases[i].ins, cases[i].n, cases[i].lf, cases[i].ll, NULL, err);
        CU_ASSERT(n == NULL);
        if (!strstr(tide_error_message(err), cases[i].needle)) {
            fprintf(stderr, "%s: expected \"%s\" in \"%s\"\n", cases[i].op, cases[i].needle, tide_error_message(err));
            CU_FAIL("shape function message");
        }
        tide_error_free(err);
    }
    tide_attrs *a = attr1("num_split", 4);
    tide_error *err = tide_error_new();
    CU_ASSERT(add_op(g, "Split", (tide_node *[]){constant(g, iscalar(TIDE_INT32, 1)), k}, 2, -1, 0, a, err) == NULL);
    CU_ASSERT(strstr(tide_error_message(err), "does not split evenly into 4") != NULL);
    tide_error_free(err);
    tide_attrs_free(a);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- main */

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_reshape),
        TH_TEST(test_reshape_empty),
        TH_TEST(test_reshape_errors),
        TH_TEST(test_transpose_2d),
        TH_TEST(test_transpose_nd),
        TH_TEST(test_transpose_large),
        TH_TEST(test_transpose_views_and_empty),
        TH_TEST(test_transpose_errors),
        TH_TEST(test_concat),
        TH_TEST(test_concat_special),
        TH_TEST(test_concat_large),
        TH_TEST(test_concat_errors),
        TH_TEST(test_concat_legacy_errors),
        TH_TEST(test_split_v),
        TH_TEST(test_split_v_errors),
        TH_TEST(test_split),
        TH_TEST(test_split_errors),
        TH_TEST(test_slice),
        TH_TEST(test_slice_errors),
        TH_TEST(test_strided_slice),
        TH_TEST(test_strided_slice_masks),
        TH_TEST(test_strided_slice_large),
        TH_TEST(test_strided_slice_errors),
        TH_TEST(test_pack),
        TH_TEST(test_pack_errors),
        TH_TEST(test_unpack),
        TH_TEST(test_unpack_errors),
        TH_TEST(test_tile),
        TH_TEST(test_tile_errors),
        TH_TEST(test_pad),
        TH_TEST(test_padv2),
        TH_TEST(test_pad_errors),
        TH_TEST(test_view_inputs),
        TH_TEST(test_empty_huge_dims),
        TH_TEST(test_shape_inference),
        TH_TEST(test_shape_inference_slicing),
        TH_TEST(test_shape_inference_errors),
        TH_END,
    };
    return th_main("array", tests);
}
