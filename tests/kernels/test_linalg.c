/* test_linalg.c — CUnit suite of the matrix ops: MatMul, BatchMatMulV2, BatchMatMul, MatrixInverse,
 * MatrixDeterminant. Every result is checked against reference code written here in double (or
 * double complex): a naive triple loop for products, Gauss-Jordan elimination for inverses (plus
 * A * inv(A) ~ I), a cofactor expansion and a pivoting elimination for determinants. Shape
 * functions are checked on partial shapes by building graph nodes.
 *
 * Tolerances: products of K terms in [-1, 1] get |err| <= 1e-6 * K + 1e-5 * |want| in float32 and
 * 1e-14 * K + 1e-12 * |want| in float64 (complex: |err| <= 1e-5 * K * (1 + |want|), 1e-13 in
 * complex128); small-integer data is exact in every dtype. Inverses of n x n diagonally dominant
 * (well-conditioned) matrices: (1 + |want|) * 2e-5 * (n + 1) in single and 1e-13 * (n + 1) in double
 * precision, and |A inv(A) - I| <= n times that. Determinants of entries in [-2, 2): relative
 * 1e-5 * (n + 1) (1e-12 in double) plus the same times 2^n absolute, as terms cancel. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/cpu/cpu_util.h"
#include "../../kernels/cpu/gemm.h"
#include "harness.h"

/* ---------------------------------------------------------------- helpers */

static const tide_dtype real_types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64};

static int64_t count(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

/* A tensor of dtype dt holding v (converted; v must be integral for the integer dtypes). */
static tide_tensor *make(tide_dtype dt, int rank, const int64_t *dims, const double *v)
{
    return th_from_doubles(dt, rank, dims, v, 0);
}

static tide_tensor *make_c(tide_dtype dt, int rank, const int64_t *dims, const double complex *v)
{
    int64_t n = count(rank, dims);
    void *buf = malloc((size_t)(n ? n : 1) * tide_dtype_size(dt));
    for (int64_t i = 0; i < n; i++) {
        if (dt == TIDE_COMPLEX64) {
            ((float *)buf)[2 * i] = (float)creal(v[i]);
            ((float *)buf)[2 * i + 1] = (float)cimag(v[i]);
        } else {
            ((double *)buf)[2 * i] = creal(v[i]);
            ((double *)buf)[2 * i + 1] = cimag(v[i]);
        }
    }
    tide_tensor *t = th_tensor(dt, rank, dims, buf);
    free(buf);
    return t;
}

/* Element i of a complex tensor. */
static double complex get_c(const tide_tensor *t, int64_t i)
{
    if (tide_tensor_dtype(t) == TIDE_COMPLEX64) {
        const float *p = tide_tensor_data(t);
        return CMPLX(p[2 * i], p[2 * i + 1]);
    }
    const double *p = tide_tensor_data(t);
    return CMPLX(p[2 * i], p[2 * i + 1]);
}

/* n random values in [lo, hi), rounded to integers when integral. */
static double *rand_vals(int64_t n, double lo, double hi, bool integral)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = integral ? floor(th_rand(lo, hi)) : th_rand(lo, hi);
    return v;
}

static double complex *rand_cvals(int64_t n)
{
    double complex *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = CMPLX(th_rand(-1, 1), th_rand(-1, 1));
    return v;
}

static tide_attrs *flags(const char *a, bool va, const char *b, bool vb)
{
    tide_attrs *at = tide_attrs_new();
    tide_attrs_set_bool(at, a, va);
    tide_attrs_set_bool(at, b, vb);
    return at;
}

static tide_tensor *run2(const char *op, tide_tensor *a, tide_tensor *b, const tide_attrs *at)
{
    tide_tensor *in[2] = {a, b};
    return th_run1(op, in, 2, at);
}

/* Asserts a real result against want (double) with the tolerances of the file comment. */
static void check_real(tide_tensor *got, tide_dtype dt, int rank, const int64_t *dims, const double *want,
                       int64_t k)
{
    tide_tensor *w = make(dt, rank, dims, want);
    if (dt == TIDE_FLOAT32)
        TH_ASSERT_CLOSE(got, w, 1e-5, 1e-6 * (double)k + 1e-6);
    else if (dt == TIDE_FLOAT64)
        TH_ASSERT_CLOSE(got, w, 1e-12, 1e-14 * (double)k + 1e-14);
    else
        TH_ASSERT_CLOSE(got, w, 0, 0);
    tide_tensor_release(w);
}

static void check_complex(tide_tensor *got, tide_dtype dt, int rank, const int64_t *dims,
                          const double complex *want, double tol)
{
    TH_ASSERT_SHAPE(got, rank, dims);
    CU_ASSERT_EQUAL(tide_tensor_dtype(got), dt);
    if (!got)
        return;
    int64_t n = count(rank, dims), bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (cabs(get_c(got, i) - want[i]) > tol * (1.0 + cabs(want[i])))
            bad = i;
    if (bad >= 0)
        fprintf(stderr, "complex element %lld: got %g%+gi, expected %g%+gi\n", (long long)bad,
                creal(get_c(got, bad)), cimag(get_c(got, bad)), creal(want[bad]), cimag(want[bad]));
    CU_ASSERT(bad < 0);
}

/* Reference: c[m, n] = op(a) op(b) in double; op transposes when t* is set. */
static void ref_mm(const double *a, const double *b, double *c, int64_t m, int64_t n, int64_t k, bool ta,
                   bool tb)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
            c[i * n + j] = s;
        }
}

/* Complex reference; h* conjugates the transposed operand (an adjoint). */
static void ref_mm_c(const double complex *a, const double complex *b, double complex *c, int64_t m,
                     int64_t n, int64_t k, bool ta, bool tb, bool conj_t)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double complex s = 0;
            for (int64_t p = 0; p < k; p++) {
                double complex x = ta ? a[p * m + i] : a[i * k + p];
                double complex y = tb ? b[j * k + p] : b[p * n + j];
                if (ta && conj_t)
                    x = conj(x);
                if (tb && conj_t)
                    y = conj(y);
                s += x * y;
            }
            c[i * n + j] = s;
        }
}

/* One MatMul of random data (integral when ints) against the reference. */
static void matmul_case(tide_dtype dt, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool ints)
{
    int64_t da[2] = {ta ? k : m, ta ? m : k}, db[2] = {tb ? n : k, tb ? k : n}, dc[2] = {m, n};
    double *a = rand_vals(m * k, ints ? -9 : -1, ints ? 10 : 1, ints);
    double *b = rand_vals(k * n, ints ? -9 : -1, ints ? 10 : 1, ints);
    double *c = malloc((size_t)(m * n + 1) * sizeof *c);
    ref_mm(a, b, c, m, n, k, ta, tb);
    tide_tensor *ta_t = make(dt, 2, da, a), *tb_t = make(dt, 2, db, b);
    tide_attrs *at = flags("transpose_a", ta, "transpose_b", tb);
    tide_tensor *got = run2("MatMul", ta_t, tb_t, at);
    TH_ASSERT_SHAPE(got, 2, dc);
    check_real(got, dt, 2, dc, c, k);
    tide_tensor_release(got);
    tide_tensor_release(ta_t);
    tide_tensor_release(tb_t);
    tide_attrs_free(at);
    free(a);
    free(b);
    free(c);
}

/* A graph node op(inputs) over Placeholders of the given (partial) shapes; rank -1 = unknown. */
static tide_node *graph_node(tide_graph *g, const char *op, int n, const tide_shape *shapes,
                             const tide_attrs *attrs, tide_error *err)
{
    tide_output ins[2];
    for (int i = 0; i < n; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
        tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &shapes[i]);
        ins[i] = (tide_output){tide_node_builder_finish(b, NULL), 0};
        CU_ASSERT_PTR_NOT_NULL_FATAL(ins[i].node);
    }
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, ins[i]);
    if (attrs)
        for (int i = 0; i < tide_attrs_count(attrs); i++) {
            bool v = false;
            tide_attrs_get_bool(attrs, tide_attrs_name_at(attrs, i), &v);
            tide_attrs_set_bool(tide_node_builder_attrs(b), tide_attrs_name_at(attrs, i), v);
        }
    return tide_node_builder_finish(b, err);
}

/* Asserts the shape inferred for op over inputs of these shapes (want NULL: building must fail with
 * a message containing needle). */
static void infer(const char *op, int n, const tide_shape *in, const tide_attrs *attrs,
                  const tide_shape *want, const char *needle)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_node *node = graph_node(g, op, n, in, attrs, err);
    if (want) {
        if (!node)
            fprintf(stderr, "infer %s: %s\n", op, tide_error_message(err));
        CU_ASSERT_PTR_NOT_NULL(node);
        if (node) {
            tide_shape got = tide_node_output_shape(node, 0);
            bool same = tide_shape_equal(&got, want);
            if (!same) {
                char x[TIDE_SHAPE_STR_MAX], y[TIDE_SHAPE_STR_MAX];
                fprintf(stderr, "infer %s: got %s, expected %s\n", op, tide_shape_format(&got, x, sizeof x),
                        tide_shape_format(want, y, sizeof y));
            }
            CU_ASSERT(same);
        }
    } else {
        CU_ASSERT_PTR_NULL(node);
        bool has = strstr(tide_error_message(err), needle) != NULL;
        if (!has)
            fprintf(stderr, "infer %s: message \"%s\" lacks \"%s\"\n", op, tide_error_message(err), needle);
        CU_ASSERT(has);
    }
    tide_error_free(err);
    tide_graph_free(g);
}

#define SHP(...) tide_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* ---------------------------------------------------------------- MatMul */

static void test_matmul_literal(void)
{
    /* [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]], in every dtype */
    const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12}, want[] = {58, 64, 139, 154};
    for (size_t d = 0; d < sizeof real_types / sizeof *real_types; d++) {
        tide_dtype dt = real_types[d];
        tide_tensor *x = make(dt, 2, TH_DIMS(2, 3), a), *y = make(dt, 2, TH_DIMS(3, 2), b);
        tide_tensor *got = run2("MatMul", x, y, NULL);
        CU_ASSERT_EQUAL(got ? tide_tensor_dtype(got) : TIDE_INVALID_DTYPE, dt);
        check_real(got, dt, 2, TH_DIMS(2, 2), want, 3);
        tide_tensor_release(got);
        tide_tensor_release(x);
        tide_tensor_release(y);
    }
}

static void test_matmul_transposes_all_dtypes(void)
{
    for (size_t d = 0; d < sizeof real_types / sizeof *real_types; d++)
        for (int t = 0; t < 4; t++) {
            matmul_case(real_types[d], 5, 3, 7, t & 1, t & 2, true);  /* non-square, exact */
            matmul_case(real_types[d], 1, 1, 1, t & 1, t & 2, true);  /* scalar-like */
            matmul_case(real_types[d], 1, 6, 4, t & 1, t & 2, true);  /* row vector */
            matmul_case(real_types[d], 6, 1, 4, t & 1, t & 2, true);  /* column vector */
        }
}

static void test_matmul_float_sizes(void)
{
    /* around the small-product threshold (loops below, BLAS above) and big enough to thread */
    const int64_t sizes[][3] = {{4, 8, 8}, {4, 8, 9}, {33, 65, 31}, {128, 96, 200}, {300, 257, 190}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int t = 0; t < 4; t++) {
            matmul_case(TIDE_FLOAT32, sizes[s][0], sizes[s][1], sizes[s][2], t & 1, t & 2, false);
            matmul_case(TIDE_FLOAT64, sizes[s][0], sizes[s][1], sizes[s][2], t & 1, t & 2, false);
        }
}

/* float32 products at the edges of every blocking of the own GEMM (gemm_avx512.c: tiles of 14 x 32,
 * k in blocks of <= 256, 512 columns and 168 rows per block) and of the thread split (work over
 * 4e6 and 3e7), all four transposes, through MatMul and BatchMatMulV2 (broadcast batches). The ISA
 * cap is whatever the caller set: OpenBLAS below AVX-512, the own GEMM at AVX-512 for outputs it
 * suits (tide_gemm_f32_suits; OpenBLAS for the smaller ones). */
static void bmm_case(tide_dtype dt, int rx, const int64_t *dx, int ry, const int64_t *dy, bool ax, bool ay);

static void float32_products(void)
{
    const int64_t dims[] = {1, 2, 13, 14, 15, 16, 17, 31, 32, 33, 97, 127};
    const int64_t big[][3] = {{300, 260, 400}, {5, 1100, 300}, {400, 40, 1000}, {169, 513, 257}};
    for (int t = 0; t < 4; t++) {
        for (int c = 0; c < 12; c++) /* random triples of edge sizes */
            matmul_case(TIDE_FLOAT32, dims[(int)th_rand(0, 12)], dims[(int)th_rand(0, 12)],
                        dims[(int)th_rand(0, 12)], t & 1, t & 2, false);
        for (size_t b = 0; b < sizeof big / sizeof *big; b++)
            matmul_case(TIDE_FLOAT32, big[b][0], big[b][1], big[b][2], t & 1, t & 2, false);
        bool ax = t & 1, ay = t & 2;
        bmm_case(TIDE_FLOAT32, 4, TH_DIMS(3, 1, ax ? 45 : 30, ax ? 30 : 45), 3, TH_DIMS(2, ay ? 33 : 45, ay ? 45 : 33),
                 ax, ay);
    }
}

static void test_matmul_float32_openblas(void)
{
    tide_cpu_isa before = tide_cpu_isa_limit(TIDE_ISA_AVX2);
    CU_ASSERT_FALSE(tide_gemm_f32_available());
    float32_products();
    tide_cpu_isa_limit(before);
}

static void test_matmul_float32_own_gemm(void)
{
    tide_cpu_isa before = tide_cpu_isa_limit(TIDE_ISA_AVX512);
    if (!tide_gemm_f32_available()) {
        th_skip("the own float32 GEMM needs AVX-512 (this CPU or $TIDE_CPU_ISA has %s)",
                tide_cpu_isa_name(tide_cpu_isa_active()));
        tide_cpu_isa_limit(before);
        return;
    }
    float32_products();
    tide_cpu_isa_limit(before);
}

/* One direct call of tide_gemm_f32 on operands whose rows are `pad` elements longer than their widths
 * (blocks of larger matrices, as MatMul's thread split passes them): C's padding stays untouched. */
static void own_gemm_case(int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t pad)
{
    const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    const int64_t arows = ta ? k : m, brows = tb ? n : k;
    float *a = malloc((size_t)(arows * lda + 1) * sizeof *a), *b = malloc((size_t)(brows * ldb + 1) * sizeof *b);
    float *c = malloc((size_t)(m * ldc) * sizeof *c);
    for (int64_t i = 0; i < arows * lda; i++)
        a[i] = (float)th_rand(-1, 1);
    for (int64_t i = 0; i < brows * ldb; i++)
        b[i] = (float)th_rand(-1, 1);
    for (int64_t i = 0; i < m * ldc; i++)
        c[i] = 1234.5f;
    CU_ASSERT_TRUE(tide_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, c, ldc));
    int64_t bad = -1;
    for (int64_t i = 0; i < m && bad < 0; i++)
        for (int64_t j = 0; j < ldc && bad < 0; j++) {
            double want = 1234.5;
            if (j < n) {
                want = 0;
                for (int64_t p = 0; p < k; p++)
                    want += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
            }
            if (fabs(c[i * ldc + j] - want) > 1e-5 * fabs(want) + 1e-6 * (double)k + 1e-6)
                bad = i * ldc + j;
        }
    if (bad >= 0)
        fprintf(stderr, "gemm %lldx%lldx%lld ta=%d tb=%d pad %lld: element %lld wrong (%g)\n", (long long)m,
                (long long)n, (long long)k, ta, tb, (long long)pad, (long long)bad, c[bad]);
    CU_ASSERT(bad < 0);
    free(a);
    free(b);
    free(c);
}

/* tide_gemm_f32 itself, also on the small products MatMul leaves to OpenBLAS (tide_gemm_f32_suits):
 * every ragged tile (rows 1..14, columns 1..32), k from 0 (zeros) past one block, strided operands. */
static void test_own_gemm_direct(void)
{
    tide_cpu_isa before = tide_cpu_isa_limit(TIDE_ISA_AVX512);
    if (!tide_gemm_f32_available()) {
        th_skip("the own float32 GEMM needs AVX-512");
        tide_cpu_isa_limit(before);
        return;
    }
    const int64_t shapes[][3] = {{29, 45, 300}, {14, 32, 16}, {3, 70, 5}, {50, 17, 0}, {1, 1, 1}, {200, 530, 600}};
    const int64_t dims[] = {1, 2, 5, 13, 14, 15, 16, 17, 31, 32, 33, 97};
    for (int t = 0; t < 4; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            own_gemm_case(shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t & 2, 7);
        for (int c = 0; c < 20; c++)
            own_gemm_case(dims[(int)th_rand(0, 12)], dims[(int)th_rand(0, 12)], dims[(int)th_rand(0, 12)], t & 1, t & 2,
                          c % 2 ? 3 : 0);
    }
    tide_cpu_isa_limit(before);
}

static void test_matmul_int_large(void)
{
    /* tiles of 64 x 128 are crossed in k and n, and the rows are split over threads */
    for (int t = 0; t < 4; t++) {
        matmul_case(TIDE_INT32, 150, 300, 140, t & 1, t & 2, true);
        matmul_case(TIDE_INT64, 97, 131, 65, t & 1, t & 2, true);
    }
}

static void test_matmul_int_wraparound(void)
{
    /* int32: INT32_MAX * 2 + 3 wraps to 1 (mod 2^32); -2^31 * -1 + 0 stays -2^31 */
    const int32_t a32[] = {INT32_MAX, 1, INT32_MIN, 0}, b32[] = {2, 3};
    tide_tensor *a = th_i32(2, TH_DIMS(2, 2), a32), *b = th_i32(2, TH_DIMS(2, 1), b32);
    tide_tensor *got = run2("MatMul", a, b, NULL);
    const int32_t w32[] = {(int32_t)((uint32_t)INT32_MAX * 2u + 3u), (int32_t)((uint32_t)INT32_MIN * 2u)};
    CU_ASSERT_EQUAL(w32[0], 1);
    CU_ASSERT_EQUAL(w32[1], 0);
    tide_tensor *want = th_i32(2, TH_DIMS(2, 1), w32);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(a);
    tide_tensor_release(b);
    /* int64: INT64_MAX * INT64_MAX = 1 (mod 2^64), INT64_MIN * -1 = INT64_MIN */
    const int64_t a64[] = {INT64_MAX, INT64_MIN}, b64[] = {INT64_MAX, -1};
    a = th_i64(2, TH_DIMS(2, 1), a64);
    b = th_i64(2, TH_DIMS(1, 2), b64);
    got = run2("MatMul", a, b, NULL);
    const int64_t w64[] = {1, -INT64_MAX, INT64_MIN, INT64_MIN};
    want = th_i64(2, TH_DIMS(2, 2), w64);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(a);
    tide_tensor_release(b);
}

static void test_matmul_complex(void)
{
    const tide_dtype types[] = {TIDE_COMPLEX64, TIDE_COMPLEX128};
    const int64_t sizes[][3] = {{2, 3, 4}, {40, 30, 50}};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 2; s++)
            for (int t = 0; t < 4; t++) {
                bool ta = t & 1, tb = t & 2;
                int64_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
                double complex *a = rand_cvals(m * k), *b = rand_cvals(k * n), *c = rand_cvals(m * n);
                ref_mm_c(a, b, c, m, n, k, ta, tb, false); /* MatMul transposes without conjugating */
                tide_tensor *x = make_c(types[d], 2, TH_DIMS(ta ? k : m, ta ? m : k), a);
                tide_tensor *y = make_c(types[d], 2, TH_DIMS(tb ? n : k, tb ? k : n), b);
                tide_attrs *at = flags("transpose_a", ta, "transpose_b", tb);
                tide_tensor *got = run2("MatMul", x, y, at);
                check_complex(got, types[d], 2, TH_DIMS(m, n), c, d == 0 ? 1e-5 * (double)k : 1e-13 * (double)k);
                tide_tensor_release(got);
                tide_tensor_release(x);
                tide_tensor_release(y);
                tide_attrs_free(at);
                free(a);
                free(b);
                free(c);
            }
}

static void test_matmul_empty(void)
{
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64, TIDE_COMPLEX64,
                                TIDE_COMPLEX128};
    for (int d = 0; d < 6; d++) {
        tide_dtype dt = types[d];
        /* inner dimension 0: a 2 x 3 matrix of zeros */
        tide_tensor *a = th_tensor(dt, 2, TH_DIMS(2, 0), NULL), *b = th_tensor(dt, 2, TH_DIMS(0, 3), NULL);
        tide_tensor *got = run2("MatMul", a, b, NULL);
        tide_tensor *zeros = th_tensor(dt, 2, TH_DIMS(2, 3), NULL);
        TH_ASSERT_CLOSE(got, zeros, 0, 0);
        tide_tensor_release(got);
        tide_tensor_release(zeros);
        tide_tensor_release(a);
        tide_tensor_release(b);
        /* zero rows, zero columns (transposed too) */
        a = th_tensor(dt, 2, TH_DIMS(0, 4), NULL);
        b = th_tensor(dt, 2, TH_DIMS(4, 5), NULL);
        got = run2("MatMul", a, b, NULL);
        TH_ASSERT_SHAPE(got, 2, TH_DIMS(0, 5));
        tide_tensor_release(got);
        tide_attrs *at = flags("transpose_a", true, "transpose_b", true);
        tide_tensor *c = th_tensor(dt, 2, TH_DIMS(0, 4), NULL);
        got = run2("MatMul", b, c, at); /* b^T [5, 4] @ c^T [4, 0] */
        TH_ASSERT_SHAPE(got, 2, TH_DIMS(5, 0));
        tide_tensor_release(got);
        tide_tensor_release(c);
        tide_attrs_free(at);
        tide_tensor_release(a);
        tide_tensor_release(b);
    }
}

static void test_matmul_special_values(void)
{
    /* IEEE semantics survive: inf * 0 is NaN, NaN propagates, inf stays inf (loops and BLAS) */
    const float a[] = {INFINITY, 1, NAN, 1}, b[] = {0, 2, 1, 0};
    tide_tensor *x = th_f32(2, TH_DIMS(2, 2), a), *y = th_f32(2, TH_DIMS(2, 2), b);
    tide_tensor *got = run2("MatMul", x, y, NULL);
    const float w[] = {NAN, INFINITY, NAN, NAN};
    tide_tensor *want = th_f32(2, TH_DIMS(2, 2), w);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(x);
    tide_tensor_release(y);
}

static void test_matmul_errors(void)
{
    tide_tensor *m23 = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(2, 3), NULL);
    tide_tensor *m45 = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(4, 5), NULL);
    tide_tensor *v3 = th_tensor(TIDE_FLOAT32, 1, TH_DIMS(3), NULL);
    tide_tensor *b233 = th_tensor(TIDE_FLOAT32, 3, TH_DIMS(2, 3, 3), NULL);
    tide_tensor *d32 = th_tensor(TIDE_FLOAT64, 2, TH_DIMS(3, 2), NULL);
    tide_tensor *i8 = th_tensor(TIDE_INT8, 2, TH_DIMS(2, 2), NULL);
    tide_tensor *in[2] = {m23, m45};
    TH_ASSERT_FAILS("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "a [2, 3] (transpose_a=false) gives 3 columns");
    TH_ASSERT_FAILS("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "b [4, 5] (transpose_b=false) gives 4 rows");
    tide_attrs *at = flags("transpose_a", true, "transpose_b", false);
    in[1] = m23;
    tide_tensor *ok = th_run1("MatMul", in, 2, at); /* not an error: a^T [3, 2] @ [2, 3] */
    TH_ASSERT_SHAPE(ok, 2, TH_DIMS(3, 3));
    tide_tensor_release(ok);
    in[1] = m45;
    TH_ASSERT_FAILS("MatMul", in, 2, at, TIDE_INVALID_ARGUMENT, "(transpose_a=true) gives 2 columns");
    tide_attrs_free(at);
    in[1] = v3;
    TH_ASSERT_FAILS("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "b has shape [3]");
    in[0] = b233;
    in[1] = m23;
    TH_ASSERT_FAILS("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "a has shape [2, 3, 3]");
    in[0] = m23;
    in[1] = d32;
    TH_ASSERT_FAILS("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype float64, expected float32");
    in[0] = in[1] = i8;
    TH_ASSERT_FAILS("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype int8");
    in[0] = m23;
    tide_attrs *bad = tide_attrs_new();
    tide_attrs_set_int(bad, "transpose_a", 1);
    in[1] = m23;
    TH_ASSERT_FAILS("MatMul", in, 2, bad, TIDE_INVALID_ARGUMENT, "'transpose_a' must be a bool");
    tide_attrs_free(bad);
    bad = tide_attrs_new();
    tide_attrs_set_bool(bad, "adj_x", true);
    TH_ASSERT_FAILS("MatMul", in, 2, bad, TIDE_INVALID_ARGUMENT, "unknown attr 'adj_x'");
    tide_attrs_free(bad);
    TH_ASSERT_FAILS("MatMul", in, 1, NULL, TIDE_INVALID_ARGUMENT, NULL);
    tide_tensor *all[] = {m23, m45, v3, b233, d32, i8};
    for (int i = 0; i < 6; i++)
        tide_tensor_release(all[i]);
}

static void test_matmul_shape_inference(void)
{
    tide_attrs *tt = flags("transpose_a", true, "transpose_b", true);
    tide_shape in[2] = {SHP(-1, 3), SHP(3, -1)}, want = SHP(-1, -1);
    infer("MatMul", 2, in, NULL, &want, NULL);
    in[0] = tide_shape_unknown();
    in[1] = SHP(3, 4);
    want = SHP(-1, 4);
    infer("MatMul", 2, in, NULL, &want, NULL);
    in[0] = SHP(3, -1);
    in[1] = SHP(4, 3);
    want = SHP(-1, 4); /* a^T [?, 3] @ b^T [3, 4] */
    infer("MatMul", 2, in, tt, &want, NULL);
    in[0] = SHP(2, 3);
    in[1] = SHP(4, -1);
    infer("MatMul", 2, in, NULL, NULL, "a [2, 3] (transpose_a=false) gives 3 columns, b [4, ?]");
    in[1] = SHP(-1, 4);
    infer("MatMul", 2, in, tt, NULL, "(transpose_a=true) gives 2 columns");
    in[1] = SHP(-1, 2, 4);
    infer("MatMul", 2, in, NULL, NULL, "b has shape [?, 2, 4]");
    tide_attrs_free(tt);
}

/* ---------------------------------------------------------------- BatchMatMul */

/* Reference BatchMatMul over broadcast batch dims, written independently of the kernel's broadcasting:
 * each output batch coordinate maps to x's and y's by dropping leading dims and zeroing size-1 ones. */
static double complex *ref_bmm(const double complex *x, const int64_t *dx, int rx, const double complex *y,
                               const int64_t *dy, int ry, bool ax, bool ay, int64_t *dout, int *rout)
{
    int rb = (rx > ry ? rx : ry) - 2, bx = rx - 2, by = ry - 2;
    int64_t m = dx[rx - (ax ? 1 : 2)], k = dx[rx - (ax ? 2 : 1)], n = dy[ry - (ay ? 2 : 1)];
    int64_t nb = 1;
    for (int i = 0; i < rb; i++) {
        int64_t ex = i - (rb - bx) >= 0 ? dx[i - (rb - bx)] : 1, ey = i - (rb - by) >= 0 ? dy[i - (rb - by)] : 1;
        dout[i] = ex == 1 ? ey : ex;
        nb *= dout[i];
    }
    dout[rb] = m;
    dout[rb + 1] = n;
    *rout = rb + 2;
    double complex *out = calloc((size_t)(nb * m * n + 1), sizeof *out);
    for (int64_t b = 0; b < nb; b++) {
        int64_t rem = b, ix = 0, iy = 0, sx = 1, sy = 1;
        for (int i = rb - 1; i >= 0; i--) {
            int64_t c = rem % dout[i];
            rem /= dout[i];
            int jx = i - (rb - bx), jy = i - (rb - by);
            if (jx >= 0) {
                ix += (dx[jx] == 1 ? 0 : c) * sx;
                sx *= dx[jx];
            }
            if (jy >= 0) {
                iy += (dy[jy] == 1 ? 0 : c) * sy;
                sy *= dy[jy];
            }
        }
        ref_mm_c(x + ix * m * k, y + iy * k * n, out + b * m * n, m, n, k, ax, ay, true);
    }
    return out;
}

/* One BatchMatMulV2 (and BatchMatMul) of random data in dtype dt against ref_bmm. */
static void bmm_case(tide_dtype dt, int rx, const int64_t *dx, int ry, const int64_t *dy, bool ax, bool ay)
{
    bool cplx = dt == TIDE_COMPLEX64 || dt == TIDE_COMPLEX128;
    bool ints = dt == TIDE_INT32 || dt == TIDE_INT64;
    int64_t nx = count(rx, dx), ny = count(ry, dy);
    double complex *x = rand_cvals(nx), *y = rand_cvals(ny);
    for (int64_t i = 0; !cplx && i < nx; i++)
        x[i] = ints ? floor(th_rand(-9, 10)) : th_rand(-1, 1);
    for (int64_t i = 0; !cplx && i < ny; i++)
        y[i] = ints ? floor(th_rand(-9, 10)) : th_rand(-1, 1);
    int64_t dout[TIDE_MAX_RANK];
    int rout = 0;
    double complex *want = ref_bmm(x, dx, rx, y, dy, ry, ax, ay, dout, &rout);
    tide_tensor *tx, *ty;
    double *rx_v = NULL, *ry_v = NULL, *rw = NULL;
    if (cplx) {
        tx = make_c(dt, rx, dx, x);
        ty = make_c(dt, ry, dy, y);
    } else {
        rx_v = malloc((size_t)(nx + 1) * sizeof *rx_v);
        ry_v = malloc((size_t)(ny + 1) * sizeof *ry_v);
        for (int64_t i = 0; i < nx; i++)
            rx_v[i] = creal(x[i]);
        for (int64_t i = 0; i < ny; i++)
            ry_v[i] = creal(y[i]);
        tx = make(dt, rx, dx, rx_v);
        ty = make(dt, ry, dy, ry_v);
    }
    tide_attrs *at = flags("adj_x", ax, "adj_y", ay);
    int64_t k = dx[rx - (ax ? 2 : 1)], nout = count(rout, dout);
    if (!cplx) {
        rw = malloc((size_t)(nout + 1) * sizeof *rw);
        for (int64_t i = 0; i < nout; i++)
            rw[i] = creal(want[i]);
    }
    /* BatchMatMulV2 always; BatchMatMul (no broadcasting) gives the same where x and y have the same
     * batch dimensions and refuses them otherwise */
    bool same_batches = rx == ry && memcmp(dx, dy, (size_t)(rx - 2) * sizeof *dx) == 0;
    for (int v1 = 0; v1 < 2; v1++) {
        const char *op = v1 ? "BatchMatMul" : "BatchMatMulV2";
        if (v1 && !same_batches) {
            tide_tensor *in[2] = {tx, ty};
            TH_ASSERT_FAILS(op, in, 2, at, TIDE_INVALID_ARGUMENT,
                            "(BatchMatMul does not broadcast them; BatchMatMulV2 does)");
            continue;
        }
        tide_tensor *got = run2(op, tx, ty, at);
        TH_ASSERT_SHAPE(got, rout, dout);
        if (cplx)
            check_complex(got, dt, rout, dout, want,
                          dt == TIDE_COMPLEX64 ? 1e-5 * (double)(k + 1) : 1e-13 * (double)(k + 1));
        else
            check_real(got, dt, rout, dout, rw, k);
        tide_tensor_release(got);
    }
    tide_tensor_release(tx);
    tide_tensor_release(ty);
    tide_attrs_free(at);
    free(x);
    free(y);
    free(want);
    free(rx_v);
    free(ry_v);
    free(rw);
}

static void test_batch_matmul_same_batch(void)
{
    for (size_t d = 0; d < sizeof real_types / sizeof *real_types; d++)
        for (int t = 0; t < 4; t++) {
            bool ax = t & 1, ay = t & 2;
            bmm_case(real_types[d], 3, TH_DIMS(2, ax ? 3 : 4, ax ? 4 : 3), 3, TH_DIMS(2, ay ? 5 : 3, ay ? 3 : 5),
                     ax, ay);
            bmm_case(real_types[d], 2, TH_DIMS(ax ? 3 : 4, ax ? 4 : 3), 2, TH_DIMS(ay ? 5 : 3, ay ? 3 : 5), ax,
                     ay); /* plain matrices */
        }
}

static void test_batch_matmul_broadcast(void)
{
    for (size_t d = 0; d < sizeof real_types / sizeof *real_types; d++) {
        tide_dtype dt = real_types[d];
        bmm_case(dt, 4, TH_DIMS(2, 1, 3, 4), 3, TH_DIMS(5, 4, 2), false, false); /* -> [2, 5, 3, 2] */
        bmm_case(dt, 2, TH_DIMS(3, 4), 4, TH_DIMS(2, 3, 4, 5), false, false);    /* rank 2 with rank 4 */
        bmm_case(dt, 4, TH_DIMS(2, 3, 4, 5), 2, TH_DIMS(2, 5), false, true);
        bmm_case(dt, 3, TH_DIMS(1, 4, 3), 3, TH_DIMS(6, 4, 2), true, false);     /* size-1 batch */
        bmm_case(dt, 5, TH_DIMS(2, 1, 3, 2, 2), 4, TH_DIMS(4, 1, 2, 2), true, true);
    }
}

static void test_batch_matmul_large(void)
{
    bmm_case(TIDE_FLOAT32, 3, TH_DIMS(3000, 4, 4), 3, TH_DIMS(3000, 4, 4), false, true);  /* loops, threads */
    bmm_case(TIDE_FLOAT64, 3, TH_DIMS(600, 8, 8), 3, TH_DIMS(600, 8, 8), false, false);   /* BLAS, threads */
    bmm_case(TIDE_FLOAT32, 3, TH_DIMS(40, 48, 32), 3, TH_DIMS(40, 48, 24), true, false);  /* parallel BLAS */
    bmm_case(TIDE_FLOAT64, 4, TH_DIMS(3, 1, 40, 30), 3, TH_DIMS(8, 36, 30), false, true); /* broadcast */
    bmm_case(TIDE_FLOAT32, 3, TH_DIMS(2, 90, 80), 3, TH_DIMS(2, 80, 100), false, false);  /* serial BLAS */
    bmm_case(TIDE_INT32, 3, TH_DIMS(300, 7, 9), 2, TH_DIMS(9, 5), false, false);          /* many int rows */
    bmm_case(TIDE_INT64, 3, TH_DIMS(3, 70, 90), 3, TH_DIMS(1, 130, 90), false, true);
}

static void test_batch_matmul_complex_adjoint(void)
{
    const tide_dtype types[] = {TIDE_COMPLEX64, TIDE_COMPLEX128};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 4; t++) {
            bool ax = t & 1, ay = t & 2;
            bmm_case(types[d], 3, TH_DIMS(3, ax ? 4 : 2, ax ? 2 : 4), 3, TH_DIMS(1, ay ? 5 : 4, ay ? 4 : 5), ax,
                     ay);
            bmm_case(types[d], 3, TH_DIMS(2, ax ? 40 : 30, ax ? 30 : 40), 2, TH_DIMS(ay ? 20 : 40, ay ? 40 : 20),
                     ax, ay);
        }
}

static void test_batch_matmul_empty(void)
{
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_INT32, TIDE_INT64, TIDE_COMPLEX64};
    for (int d = 0; d < 5; d++) {
        tide_dtype dt = types[d];
        tide_tensor *x = th_tensor(dt, 3, TH_DIMS(0, 2, 3), NULL), *y = th_tensor(dt, 3, TH_DIMS(1, 3, 4), NULL);
        tide_tensor *got = run2("BatchMatMulV2", x, y, NULL);
        TH_ASSERT_SHAPE(got, 3, TH_DIMS(0, 2, 4)); /* 0 broadcasts against 1 */
        tide_tensor_release(got);
        tide_tensor_release(x);
        tide_tensor_release(y);
        x = th_tensor(dt, 3, TH_DIMS(2, 3, 0), NULL);
        y = th_tensor(dt, 3, TH_DIMS(2, 0, 4), NULL);
        got = run2("BatchMatMulV2", x, y, NULL);
        tide_tensor *zeros = th_tensor(dt, 3, TH_DIMS(2, 3, 4), NULL);
        TH_ASSERT_CLOSE(got, zeros, 0, 0); /* inner dimension 0 */
        tide_tensor_release(zeros);
        tide_tensor_release(got);
        tide_tensor_release(x);
        tide_tensor_release(y);
        x = th_tensor(dt, 3, TH_DIMS(2, 0, 3), NULL);
        y = th_tensor(dt, 3, TH_DIMS(2, 3, 4), NULL);
        got = run2("BatchMatMulV2", x, y, NULL);
        TH_ASSERT_SHAPE(got, 3, TH_DIMS(2, 0, 4));
        tide_tensor_release(got);
        tide_tensor_release(x);
        tide_tensor_release(y);
    }
}

static void test_batch_matmul_errors(void)
{
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 3, TH_DIMS(2, 3, 4), NULL);
    tide_tensor *y = th_tensor(TIDE_FLOAT32, 3, TH_DIMS(3, 4, 5), NULL);
    tide_tensor *v = th_tensor(TIDE_FLOAT32, 1, TH_DIMS(4), NULL);
    tide_tensor *w = th_tensor(TIDE_FLOAT32, 3, TH_DIMS(2, 5, 6), NULL);
    tide_tensor *bl = th_tensor(TIDE_BOOL, 2, TH_DIMS(2, 2), NULL);
    tide_tensor *in[2] = {x, y};
    TH_ASSERT_FAILS("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "batch dimensions do not broadcast: x [2, 3, 4], y [3, 4, 5]");
    in[1] = w;
    TH_ASSERT_FAILS("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                    "x [2, 3, 4] (adj_x=false) gives 4 columns, y [2, 5, 6] (adj_y=false) gives 5 rows");
    tide_attrs *at = flags("adj_x", false, "adj_y", true);
    TH_ASSERT_FAILS("BatchMatMulV2", in, 2, at, TIDE_INVALID_ARGUMENT, "(adj_y=true) gives 6 rows");
    tide_attrs_free(at);
    in[1] = v;
    TH_ASSERT_FAILS("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT, "y has shape [4]");
    in[0] = in[1] = bl;
    TH_ASSERT_FAILS("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype bool");
    tide_tensor *all[] = {x, y, v, w, bl};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(all[i]);
}

static void test_batch_matmul_shape_inference(void)
{
    tide_shape in[2] = {SHP(-1, 2, 3), SHP(5, 3, 4)}, want = SHP(5, 2, 4);
    infer("BatchMatMulV2", 2, in, NULL, &want, NULL); /* unknown batch dim against 5 */
    in[0] = SHP(1, -1, 3);
    in[1] = SHP(4, 3, -1);
    want = SHP(4, -1, -1);
    infer("BatchMatMulV2", 2, in, NULL, &want, NULL);
    in[0] = tide_shape_unknown();
    want = tide_shape_unknown();
    infer("BatchMatMulV2", 2, in, NULL, &want, NULL);
    tide_attrs *at = flags("adj_x", true, "adj_y", false);
    in[0] = SHP(7, 3, 2);
    in[1] = SHP(2, 1, 3, 6);
    want = SHP(2, 7, 2, 6);
    infer("BatchMatMulV2", 2, in, at, &want, NULL);
    tide_attrs_free(at);
    in[1] = SHP(3, -1, -1);
    infer("BatchMatMulV2", 2, in, NULL, NULL, "batch dimensions do not broadcast: x [7, 3, 2], y [3, ?, ?]");
    in[1] = SHP(3);
    infer("BatchMatMulV2", 2, in, NULL, NULL, "y has shape [3]");
    in[1] = SHP(4, 5);
    infer("BatchMatMulV2", 2, in, NULL, NULL, "gives 2 columns");
}

/* BatchMatMul (the first version): batch dimensions must agree, as far as known. */
static void test_batch_matmul_v1_shape_inference(void)
{
    tide_shape in[2] = {SHP(-1, 2, 3), SHP(5, 3, 4)}, want = SHP(5, 2, 4);
    infer("BatchMatMul", 2, in, NULL, &want, NULL);
    in[0] = SHP(2, -1, 2, 3);
    in[1] = SHP(-1, 7, 3, 4);
    want = SHP(2, 7, 2, 4);
    infer("BatchMatMul", 2, in, NULL, &want, NULL);
    in[0] = SHP(1, 2, 3);
    in[1] = SHP(5, 3, 4);
    infer("BatchMatMul", 2, in, NULL, NULL, "batch dimensions differ: x [1, 2, 3], y [5, 3, 4] "
          "(BatchMatMul does not broadcast them; BatchMatMulV2 does)");
    in[0] = SHP(2, 3);
    infer("BatchMatMul", 2, in, NULL, NULL, "batch dimensions differ: x [2, 3], y [5, 3, 4]");
}

/* ---------------------------------------------------------------- MatrixInverse */

/* Reference inverse by Gauss-Jordan elimination with partial pivoting in double complex (real data
 * has zero imaginary parts). Returns false if a pivot is exactly zero. */
static bool ref_inverse(const double complex *a, double complex *inv, int n)
{
    double complex *w = malloc((size_t)(n * n + 1) * sizeof *w);
    memcpy(w, a, (size_t)(n * n) * sizeof *w);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            inv[i * n + j] = i == j;
    bool ok = true;
    for (int c = 0; c < n && ok; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (cabs(w[r * n + c]) > cabs(w[p * n + c]))
                p = r;
        if (w[p * n + c] == 0) {
            ok = false;
            break;
        }
        for (int j = 0; j < n; j++) {
            double complex t = w[c * n + j];
            w[c * n + j] = w[p * n + j];
            w[p * n + j] = t;
            t = inv[c * n + j];
            inv[c * n + j] = inv[p * n + j];
            inv[p * n + j] = t;
        }
        double complex d = w[c * n + c];
        for (int j = 0; j < n; j++) {
            w[c * n + j] /= d;
            inv[c * n + j] /= d;
        }
        for (int r = 0; r < n; r++) {
            if (r == c)
                continue;
            double complex f = w[r * n + c];
            for (int j = 0; j < n; j++) {
                w[r * n + j] -= f * w[c * n + j];
                inv[r * n + j] -= f * inv[c * n + j];
            }
        }
    }
    free(w);
    return ok;
}

/* A random matrix with a dominant diagonal (well conditioned). */
static void well_conditioned(double complex *a, int n, bool cplx)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            a[i * n + j] = cplx ? CMPLX(th_rand(-1, 1), th_rand(-1, 1)) : th_rand(-1, 1);
            if (i == j)
                a[i * n + j] += (th_rand(0, 1) < 0.5 ? -1 : 1) * (double)n;
        }
}

/* Inverts a random batch (shape dims, rank) in dtype dt and checks against ref_inverse of each
 * (adjoint: of its conjugate transpose) and that A * result ~ I, all in double. */
static void inverse_case(tide_dtype dt, int rank, const int64_t *dims, bool adjoint)
{
    bool cplx = dt == TIDE_COMPLEX64 || dt == TIDE_COMPLEX128, f32 = dt == TIDE_FLOAT32 || dt == TIDE_COMPLEX64;
    int n = (int)dims[rank - 1];
    int64_t total = count(rank, dims), nb = n ? total / ((int64_t)n * n) : 0;
    double complex *a = malloc((size_t)(total + 1) * sizeof *a), *want = malloc((size_t)(total + 1) * sizeof *a);
    double complex *adj = malloc((size_t)(n * n + 1) * sizeof *adj);
    for (int64_t b = 0; b < nb; b++) {
        double complex *m = a + b * n * n;
        well_conditioned(m, n, cplx);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                adj[i * n + j] = adjoint ? conj(m[j * n + i]) : m[i * n + j];
        CU_ASSERT(ref_inverse(adj, want + b * n * n, n));
    }
    tide_tensor *t;
    if (cplx) {
        t = make_c(dt, rank, dims, a);
    } else {
        double *r = malloc((size_t)(total + 1) * sizeof *r);
        for (int64_t i = 0; i < total; i++)
            r[i] = creal(a[i]);
        t = make(dt, rank, dims, r);
        free(r);
    }
    tide_attrs *at = tide_attrs_new();
    tide_attrs_set_bool(at, "adjoint", adjoint);
    tide_tensor *got = th_run1("MatrixInverse", &t, 1, at);
    double tol = f32 ? 2e-5 * (n + 1) : 1e-13 * (n + 1);
    if (cplx) {
        check_complex(got, dt, rank, dims, want, tol);
    } else {
        double *r = malloc((size_t)(total + 1) * sizeof *r);
        for (int64_t i = 0; i < total; i++)
            r[i] = creal(want[i]);
        tide_tensor *w = make(dt, rank, dims, r);
        TH_ASSERT_CLOSE(got, w, tol, tol);
        tide_tensor_release(w);
        free(r);
    }
    /* op(A) * result ~ I, with the result read back in double (op: adjoint or identity) */
    double worst = 0;
    for (int64_t b = 0; got && b < nb; b++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double complex s = 0;
                for (int p = 0; p < n; p++) {
                    double complex x = adjoint ? conj(a[b * n * n + p * n + i]) : a[b * n * n + i * n + p];
                    double complex y = cplx ? get_c(got, b * n * n + p * n + j)
                                            : tide_tensor_get_f64(got, b * n * n + p * n + j);
                    s += x * y;
                }
                worst = fmax(worst, cabs(s - (i == j)));
            }
    if (worst > tol * n)
        fprintf(stderr, "inverse %s n=%d: |A inv(A) - I| = %g\n", tide_dtype_name(dt), n, worst);
    CU_ASSERT(worst <= tol * n);
    tide_tensor_release(got);
    tide_tensor_release(t);
    tide_attrs_free(at);
    free(a);
    free(want);
    free(adj);
}

static void test_inverse_literal(void)
{
    /* inv([[4, 7], [2, 6]]) = [[0.6, -0.7], [-0.2, 0.4]]; its adjoint version is the transpose */
    const double a[] = {4, 7, 2, 6}, w[] = {0.6, -0.7, -0.2, 0.4}, wt[] = {0.6, -0.2, -0.7, 0.4};
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int d = 0; d < 2; d++) {
        tide_tensor *t = make(types[d], 2, TH_DIMS(2, 2), a);
        tide_tensor *got = th_run1("MatrixInverse", &t, 1, NULL);
        tide_tensor *want = make(types[d], 2, TH_DIMS(2, 2), w);
        TH_ASSERT_CLOSE(got, want, 1e-6, 1e-6);
        tide_tensor_release(got);
        tide_tensor_release(want);
        tide_attrs *at = tide_attrs_new();
        tide_attrs_set_bool(at, "adjoint", true);
        got = th_run1("MatrixInverse", &t, 1, at);
        want = make(types[d], 2, TH_DIMS(2, 2), wt);
        TH_ASSERT_CLOSE(got, want, 1e-6, 1e-6);
        tide_tensor_release(got);
        tide_tensor_release(want);
        tide_attrs_free(at);
        tide_tensor_release(t);
    }
}

static void test_inverse_random(void)
{
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_COMPLEX64, TIDE_COMPLEX128};
    for (int d = 0; d < 4; d++)
        for (int adj = 0; adj < 2; adj++) {
            inverse_case(types[d], 2, TH_DIMS(1, 1), adj);
            inverse_case(types[d], 2, TH_DIMS(5, 5), adj);
            inverse_case(types[d], 4, TH_DIMS(3, 2, 6, 6), adj);
        }
}

static void test_inverse_large(void)
{
    inverse_case(TIDE_FLOAT32, 3, TH_DIMS(300, 8, 8), false);  /* many small: parallel batches */
    inverse_case(TIDE_FLOAT64, 3, TH_DIMS(2, 140, 140), true); /* big: one at a time */
    inverse_case(TIDE_FLOAT32, 2, TH_DIMS(200, 200), false);
}

static void test_inverse_singular(void)
{
    const double sing[] = {1, 2, 2, 4};
    tide_tensor *t = make(TIDE_FLOAT32, 2, TH_DIMS(2, 2), sing);
    TH_ASSERT_FAILS("MatrixInverse", &t, 1, NULL, TIDE_INVALID_ARGUMENT, "matrix is not invertible");
    TH_ASSERT_FAILS("MatrixInverse", &t, 1, NULL, TIDE_INVALID_ARGUMENT, "[2, 2] input");
    tide_tensor_release(t);
    t = th_tensor(TIDE_FLOAT64, 2, TH_DIMS(3, 3), NULL); /* zeros */
    TH_ASSERT_FAILS("MatrixInverse", &t, 1, NULL, TIDE_INVALID_ARGUMENT, "matrix is not invertible");
    tide_tensor_release(t);
    /* batch [2, 3] of 2 x 2 matrices, elements [1, 0] and [1, 2] singular: the first is named */
    double v[24];
    for (int b = 0; b < 6; b++) {
        const double ok[] = {2, 1, 1, 3};
        memcpy(v + 4 * b, b == 3 || b == 5 ? sing : ok, sizeof ok);
    }
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int d = 0; d < 2; d++) {
        t = make(types[d], 4, TH_DIMS(2, 3, 2, 2), v);
        TH_ASSERT_FAILS("MatrixInverse", &t, 1, NULL, TIDE_INVALID_ARGUMENT,
                        "matrix is not invertible: batch element [1, 0] (flat index 3)");
        tide_tensor_release(t);
    }
    double complex c[4] = {1, I, I, -1}; /* rows (1, i) and i * (1, i) */
    t = make_c(TIDE_COMPLEX64, 2, TH_DIMS(2, 2), c);
    TH_ASSERT_FAILS("MatrixInverse", &t, 1, NULL, TIDE_INVALID_ARGUMENT, "matrix is not invertible");
    tide_tensor_release(t);
}

static void test_inverse_empty(void)
{
    const int64_t shapes[][3] = {{0, 0, 0}, {3, 0, 0}, {0, 2, 2}};
    const int ranks[] = {2, 3, 3};
    for (int s = 0; s < 3; s++) {
        const int64_t *dims = ranks[s] == 2 ? shapes[s] + 1 : shapes[s];
        tide_tensor *t = th_tensor(TIDE_FLOAT32, ranks[s], dims, NULL);
        tide_tensor *got = th_run1("MatrixInverse", &t, 1, NULL);
        TH_ASSERT_SHAPE(got, ranks[s], dims);
        tide_tensor_release(got);
        tide_tensor_release(t);
    }
}

static void test_inverse_errors(void)
{
    tide_tensor *v = th_tensor(TIDE_FLOAT32, 1, TH_DIMS(4), NULL);
    tide_tensor *r = th_tensor(TIDE_FLOAT32, 3, TH_DIMS(5, 2, 3), NULL);
    tide_tensor *i = th_tensor(TIDE_INT32, 2, TH_DIMS(2, 2), NULL);
    TH_ASSERT_FAILS("MatrixInverse", &v, 1, NULL, TIDE_INVALID_ARGUMENT, "rank >= 2");
    TH_ASSERT_FAILS("MatrixInverse", &v, 1, NULL, TIDE_INVALID_ARGUMENT, "got shape [4]");
    TH_ASSERT_FAILS("MatrixInverse", &r, 1, NULL, TIDE_INVALID_ARGUMENT, "square matrices, got shape [5, 2, 3] (2 x 3)");
    TH_ASSERT_FAILS("MatrixInverse", &i, 1, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    tide_attrs *bad = tide_attrs_new();
    tide_attrs_set_string(bad, "adjoint", "yes");
    TH_ASSERT_FAILS("MatrixInverse", &r, 1, bad, TIDE_INVALID_ARGUMENT, "'adjoint' must be a bool");
    tide_attrs_free(bad);
    tide_tensor_release(v);
    tide_tensor_release(r);
    tide_tensor_release(i);
}

static void test_inverse_shape_inference(void)
{
    tide_shape in = SHP(-1, 3), want = SHP(3, 3);
    infer("MatrixInverse", 1, &in, NULL, &want, NULL); /* one known side gives the other */
    in = SHP(5, -1, -1);
    want = SHP(5, -1, -1);
    infer("MatrixInverse", 1, &in, NULL, &want, NULL);
    in = tide_shape_unknown();
    want = tide_shape_unknown();
    infer("MatrixInverse", 1, &in, NULL, &want, NULL);
    in = SHP(-1, 2, 3);
    infer("MatrixInverse", 1, &in, NULL, NULL, "square matrices, got shape [?, 2, 3]");
    in = SHP(-1);
    infer("MatrixInverse", 1, &in, NULL, NULL, "rank >= 2");
}

/* ---------------------------------------------------------------- MatrixDeterminant */

/* Reference determinant by cofactor expansion along the first row (n <= 7). */
static double complex ref_det_cofactor(const double complex *a, int n)
{
    if (n == 0)
        return 1;
    if (n == 1)
        return a[0];
    double complex s = 0, *minor = malloc((size_t)((n - 1) * (n - 1)) * sizeof *minor);
    for (int c = 0; c < n; c++) {
        for (int i = 1; i < n; i++)
            for (int j = 0, k = 0; j < n; j++)
                if (j != c)
                    minor[(i - 1) * (n - 1) + k++] = a[i * n + j];
        s += (c % 2 ? -1.0 : 1.0) * a[c] * ref_det_cofactor(minor, n - 1);
    }
    free(minor);
    return s;
}

/* Reference determinant by elimination with partial pivoting (for larger n). */
static double complex ref_det_elim(const double complex *a, int n)
{
    double complex *w = malloc((size_t)(n * n + 1) * sizeof *w), det = 1;
    memcpy(w, a, (size_t)(n * n) * sizeof *w);
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (cabs(w[r * n + c]) > cabs(w[p * n + c]))
                p = r;
        if (w[p * n + c] == 0) {
            det = 0;
            break;
        }
        if (p != c) {
            det = -det;
            for (int j = 0; j < n; j++) {
                double complex t = w[c * n + j];
                w[c * n + j] = w[p * n + j];
                w[p * n + j] = t;
            }
        }
        det *= w[c * n + c];
        for (int r = c + 1; r < n; r++) {
            double complex f = w[r * n + c] / w[c * n + c];
            for (int j = c; j < n; j++)
                w[r * n + j] -= f * w[c * n + j];
        }
    }
    free(w);
    return det;
}

/* Determinants of a random batch [nb, n, n] in dtype dt against the references. */
static void det_case(tide_dtype dt, int64_t nb, int n)
{
    bool cplx = dt == TIDE_COMPLEX64 || dt == TIDE_COMPLEX128, f32 = dt == TIDE_FLOAT32 || dt == TIDE_COMPLEX64;
    int64_t total = nb * n * n;
    double complex *a = rand_cvals(total), *want = malloc((size_t)(nb + 1) * sizeof *want);
    double *r = malloc((size_t)(total + 1) * sizeof *r);
    for (int64_t i = 0; i < total; i++) {
        if (!cplx)
            a[i] = creal(a[i]) * 2; /* real entries in [-2, 2) */
        r[i] = creal(a[i]);
    }
    for (int64_t b = 0; b < nb; b++)
        want[b] = n <= 7 ? ref_det_cofactor(a + b * n * n, n) : ref_det_elim(a + b * n * n, n);
    tide_tensor *t = cplx ? make_c(dt, 3, TH_DIMS(nb, n, n), a) : make(dt, 3, TH_DIMS(nb, n, n), r);
    tide_tensor *got = th_run1("MatrixDeterminant", &t, 1, NULL);
    double tol = f32 ? 1e-5 * (n + 1) : 1e-12 * (n + 1);
    if (cplx) {
        check_complex(got, dt, 1, TH_DIMS(nb), want, tol);
    } else {
        double *w = malloc((size_t)(nb + 1) * sizeof *w);
        for (int64_t b = 0; b < nb; b++)
            w[b] = creal(want[b]);
        tide_tensor *wt = make(dt, 1, TH_DIMS(nb), w);
        /* the determinant is a sum of products of up to n! terms: relative to their scale, 2^n */
        TH_ASSERT_CLOSE(got, wt, tol, tol * pow(2.0, n));
        tide_tensor_release(wt);
        free(w);
    }
    tide_tensor_release(got);
    tide_tensor_release(t);
    free(a);
    free(want);
    free(r);
}

static void test_determinant_literal(void)
{
    /* 2 x 2: [[1,2],[3,4]] = -2, [[0,1],[1,0]] = -1 (one row swap), [[4,0],[0,1]] = 4, [[2,2],[4,4]] = 0
     * (an exactly zero pivot); 3 x 3: [[2,0,1],[1,3,2],[1,1,1]] = 2(3-2) - 0 + 1(1-3) = 0, I = 1, the
     * anti-diagonal permutation = -1 */
    const double m[] = {1, 2, 3, 4, 0, 1, 1, 0, 4, 0, 0, 1, 2, 2, 4, 4};
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int d = 0; d < 2; d++) {
        tide_tensor *t = make(types[d], 3, TH_DIMS(4, 2, 2), m);
        tide_tensor *got = th_run1("MatrixDeterminant", &t, 1, NULL);
        const double w[] = {-2, -1, 4, 0};
        tide_tensor *wt = make(types[d], 1, TH_DIMS(4), w);
        TH_ASSERT_CLOSE(got, wt, 1e-6, 1e-6);
        tide_tensor_release(got);
        tide_tensor_release(wt);
        tide_tensor_release(t);
        const double m3[] = {2, 0, 1, 1, 3, 2, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0};
        t = make(types[d], 3, TH_DIMS(3, 3, 3), m3);
        got = th_run1("MatrixDeterminant", &t, 1, NULL);
        const double w3[] = {0, 1, -1};
        wt = make(types[d], 1, TH_DIMS(3), w3);
        TH_ASSERT_CLOSE(got, wt, 1e-6, 1e-6);
        tide_tensor_release(got);
        tide_tensor_release(wt);
        tide_tensor_release(t);
        /* a plain matrix gives a scalar */
        t = make(types[d], 2, TH_DIMS(2, 2), m);
        got = th_run1("MatrixDeterminant", &t, 1, NULL);
        TH_ASSERT_SHAPE(got, 0, NULL);
        CU_ASSERT_DOUBLE_EQUAL(got ? tide_tensor_get_f64(got, 0) : 0, -2, 1e-6);
        tide_tensor_release(got);
        tide_tensor_release(t);
    }
}

static void test_determinant_random(void)
{
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_COMPLEX64, TIDE_COMPLEX128};
    for (int d = 0; d < 4; d++)
        for (int n = 1; n <= 7; n++)
            det_case(types[d], 5, n);
    det_case(TIDE_FLOAT64, 2000, 4);  /* many small: parallel batches */
    det_case(TIDE_FLOAT32, 500, 6);
    det_case(TIDE_FLOAT64, 3, 40);    /* by elimination */
    det_case(TIDE_COMPLEX128, 2, 30);
}

static void test_determinant_scaling(void)
{
    /* the product of pivots overflows or underflows part way, the determinant does not */
    const double d32[] = {1e30, 0, 0, 0, 1e30, 0, 0, 0, 1e-30};
    tide_tensor *t = make(TIDE_FLOAT32, 2, TH_DIMS(3, 3), d32);
    tide_tensor *got = th_run1("MatrixDeterminant", &t, 1, NULL);
    CU_ASSERT_DOUBLE_EQUAL(got ? tide_tensor_get_f64(got, 0) / 1e30 : 0, 1.0, 1e-6);
    tide_tensor_release(got);
    tide_tensor_release(t);
    const double big[] = {1e30, 0, 0, 1e30}; /* 1e60: beyond float32 -> inf, fine in float64 */
    t = make(TIDE_FLOAT32, 2, TH_DIMS(2, 2), big);
    got = th_run1("MatrixDeterminant", &t, 1, NULL);
    CU_ASSERT(got && isinf(tide_tensor_get_f64(got, 0)) && tide_tensor_get_f64(got, 0) > 0);
    tide_tensor_release(got);
    tide_tensor_release(t);
    const double negbig[] = {0, 1e30, 1e30, 0}; /* -1e60 -> -inf */
    t = make(TIDE_FLOAT32, 2, TH_DIMS(2, 2), negbig);
    got = th_run1("MatrixDeterminant", &t, 1, NULL);
    CU_ASSERT(got && isinf(tide_tensor_get_f64(got, 0)) && tide_tensor_get_f64(got, 0) < 0);
    tide_tensor_release(got);
    tide_tensor_release(t);
    const double d64[] = {1e200, 0, 0, 0, 1e200, 0, 0, 0, 1e-300};
    t = make(TIDE_FLOAT64, 2, TH_DIMS(3, 3), d64);
    got = th_run1("MatrixDeterminant", &t, 1, NULL);
    CU_ASSERT_DOUBLE_EQUAL(got ? tide_tensor_get_f64(got, 0) / 1e100 : 0, 1.0, 1e-12);
    tide_tensor_release(got);
    tide_tensor_release(t);
    const double tiny[] = {1e-30, 0, 0, 1e-30}; /* 1e-60 underflows float32 to 0 */
    t = make(TIDE_FLOAT32, 2, TH_DIMS(2, 2), tiny);
    got = th_run1("MatrixDeterminant", &t, 1, NULL);
    CU_ASSERT(got && tide_tensor_get_f64(got, 0) == 0);
    tide_tensor_release(got);
    tide_tensor_release(t);
}

static void test_determinant_empty(void)
{
    tide_tensor *t = th_tensor(TIDE_FLOAT64, 2, TH_DIMS(0, 0), NULL);
    tide_tensor *got = th_run1("MatrixDeterminant", &t, 1, NULL);
    TH_ASSERT_SHAPE(got, 0, NULL);
    CU_ASSERT(got && tide_tensor_get_f64(got, 0) == 1.0); /* the empty product */
    tide_tensor_release(got);
    tide_tensor_release(t);
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_COMPLEX64, TIDE_COMPLEX128};
    for (int d = 0; d < 4; d++) {
        t = th_tensor(types[d], 3, TH_DIMS(2, 0, 0), NULL);
        got = th_run1("MatrixDeterminant", &t, 1, NULL);
        TH_ASSERT_SHAPE(got, 1, TH_DIMS(2));
        for (int i = 0; got && i < 2; i++)
            CU_ASSERT(tide_tensor_get_f64(got, i) == 1.0);
        tide_tensor_release(got);
        tide_tensor_release(t);
        t = th_tensor(types[d], 4, TH_DIMS(3, 0, 2, 2), NULL);
        got = th_run1("MatrixDeterminant", &t, 1, NULL);
        TH_ASSERT_SHAPE(got, 2, TH_DIMS(3, 0));
        tide_tensor_release(got);
        tide_tensor_release(t);
    }
}

static void test_determinant_errors_and_shapes(void)
{
    tide_tensor *v = th_tensor(TIDE_FLOAT64, 0, NULL, NULL);
    tide_tensor *r = th_tensor(TIDE_FLOAT64, 2, TH_DIMS(3, 4), NULL);
    tide_tensor *i = th_tensor(TIDE_INT64, 2, TH_DIMS(2, 2), NULL);
    TH_ASSERT_FAILS("MatrixDeterminant", &v, 1, NULL, TIDE_INVALID_ARGUMENT, "rank >= 2 (a batch of square matrices), got shape []");
    TH_ASSERT_FAILS("MatrixDeterminant", &r, 1, NULL, TIDE_INVALID_ARGUMENT, "got shape [3, 4] (3 x 4)");
    TH_ASSERT_FAILS("MatrixDeterminant", &i, 1, NULL, TIDE_INVALID_ARGUMENT, "has dtype int64");
    tide_tensor_release(v);
    tide_tensor_release(r);
    tide_tensor_release(i);
    tide_shape in = SHP(4, -1, 3), want = SHP(4);
    infer("MatrixDeterminant", 1, &in, NULL, &want, NULL);
    in = SHP(-1, 2, 2);
    want = SHP(-1);
    infer("MatrixDeterminant", 1, &in, NULL, &want, NULL);
    in = SHP(-1, -1);
    want = tide_shape_scalar();
    infer("MatrixDeterminant", 1, &in, NULL, &want, NULL);
    in = tide_shape_unknown();
    want = tide_shape_unknown();
    infer("MatrixDeterminant", 1, &in, NULL, &want, NULL);
    in = SHP(2, 3);
    infer("MatrixDeterminant", 1, &in, NULL, NULL, "square matrices, got shape [2, 3]");
}

/* ---------------------------------------------------------------- errors found at run time */

/* Runs op in a session over Placeholders of unknown shape, so that only the kernel can see the
 * problem, and asserts the run fails with code and a message containing needle. */
static void graph_fails(const char *op, tide_tensor *const *inputs, int n, const tide_attrs *attrs,
                        tide_status code, const char *needle)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_output ins[2];
    tide_feed feeds[2];
    for (int i = 0; i < n; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(inputs[i]));
        ins[i] = (tide_output){tide_node_builder_finish(b, NULL), 0};
        CU_ASSERT_PTR_NOT_NULL_FATAL(ins[i].node);
        feeds[i] = (tide_feed){ins[i], inputs[i]};
    }
    tide_node_builder *b = tide_node_builder_new(g, op, "subject");
    tide_node_builder_add_inputs_flat(b, ins, n);
    if (attrs)
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
    tide_node *node = tide_node_builder_finish(b, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(node);
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    tide_output fetch = {node, 0};
    tide_tensor *out = NULL;
    tide_status st = tide_session_run(s, NULL, feeds, n, &fetch, 1, &out, NULL, 0, NULL, err);
    bool ok = st == code && strstr(tide_error_message(err), needle) &&
              strstr(tide_error_message(err), "subject");
    if (!ok)
        fprintf(stderr, "graph run of %s: expected %s containing \"%s\", got %s: %s\n", op,
                tide_status_name(code), needle, tide_status_name(st), tide_error_message(err));
    CU_ASSERT(ok);
    tide_tensor_release(out);
    tide_session_free(s);
    tide_error_free(err);
    tide_graph_free(g);
}

static void test_kernel_errors_at_run_time(void)
{
    tide_tensor *m23 = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(2, 3), NULL);
    tide_tensor *m45 = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(4, 5), NULL);
    tide_tensor *i23 = th_tensor(TIDE_INT32, 2, TH_DIMS(2, 3), NULL);
    tide_tensor *i45 = th_tensor(TIDE_INT32, 2, TH_DIMS(4, 5), NULL);
    tide_tensor *v3 = th_tensor(TIDE_FLOAT32, 1, TH_DIMS(3), NULL);
    tide_tensor *x = th_tensor(TIDE_FLOAT64, 3, TH_DIMS(2, 3, 4), NULL);
    tide_tensor *y = th_tensor(TIDE_FLOAT64, 3, TH_DIMS(3, 4, 5), NULL);
    tide_tensor *in[2] = {m23, m45};
    graph_fails("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                "inner dimensions differ: a [2, 3] (transpose_a=false) gives 3 columns, b [4, 5]");
    in[0] = i23;
    in[1] = i45;
    tide_attrs *at = flags("transpose_a", true, "transpose_b", true);
    graph_fails("MatMul", in, 2, at, TIDE_INVALID_ARGUMENT, "(transpose_b=true) gives 5 rows");
    tide_attrs_free(at);
    in[0] = m23;
    in[1] = v3;
    graph_fails("MatMul", in, 2, NULL, TIDE_INVALID_ARGUMENT, "b has shape [3]");
    in[0] = x;
    in[1] = y;
    graph_fails("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT,
                "batch dimensions do not broadcast: x [2, 3, 4], y [3, 4, 5]");
    in[1] = x;
    graph_fails("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT, "gives 4 columns");
    in[0] = v3;
    in[1] = m23;
    graph_fails("BatchMatMulV2", in, 2, NULL, TIDE_INVALID_ARGUMENT, "x has shape [3]");
    graph_fails("MatrixInverse", &x, 1, NULL, TIDE_INVALID_ARGUMENT, "got shape [2, 3, 4] (3 x 4)");
    graph_fails("MatrixDeterminant", &v3, 1, NULL, TIDE_INVALID_ARGUMENT, "got shape [3]");
    const double sing[] = {1, 2, 2, 4};
    tide_tensor *s = make(TIDE_FLOAT64, 2, TH_DIMS(2, 2), sing);
    graph_fails("MatrixInverse", &s, 1, NULL, TIDE_INVALID_ARGUMENT, "matrix is not invertible");
    tide_tensor *all[] = {m23, m45, i23, i45, v3, x, y, s};
    for (int i = 0; i < 8; i++)
        tide_tensor_release(all[i]);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_matmul_literal),
        TH_TEST(test_matmul_transposes_all_dtypes),
        TH_TEST(test_matmul_float_sizes),
        TH_TEST(test_matmul_int_large),
        TH_TEST(test_matmul_float32_openblas),
        TH_TEST(test_matmul_float32_own_gemm),
        TH_TEST(test_own_gemm_direct),
        TH_TEST(test_matmul_int_wraparound),
        TH_TEST(test_matmul_complex),
        TH_TEST(test_matmul_empty),
        TH_TEST(test_matmul_special_values),
        TH_TEST(test_matmul_errors),
        TH_TEST(test_matmul_shape_inference),
        TH_TEST(test_batch_matmul_same_batch),
        TH_TEST(test_batch_matmul_broadcast),
        TH_TEST(test_batch_matmul_large),
        TH_TEST(test_batch_matmul_complex_adjoint),
        TH_TEST(test_batch_matmul_empty),
        TH_TEST(test_batch_matmul_errors),
        TH_TEST(test_batch_matmul_shape_inference),
        TH_TEST(test_batch_matmul_v1_shape_inference),
        TH_TEST(test_inverse_literal),
        TH_TEST(test_inverse_random),
        TH_TEST(test_inverse_large),
        TH_TEST(test_inverse_singular),
        TH_TEST(test_inverse_empty),
        TH_TEST(test_inverse_errors),
        TH_TEST(test_inverse_shape_inference),
        TH_TEST(test_determinant_literal),
        TH_TEST(test_determinant_random),
        TH_TEST(test_determinant_scaling),
        TH_TEST(test_determinant_empty),
        TH_TEST(test_determinant_errors_and_shapes),
        TH_TEST(test_kernel_errors_at_run_time),
        TH_END,
    };
    return th_main("linalg", tests);
}
