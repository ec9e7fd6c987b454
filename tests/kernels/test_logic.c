/* test_logic.c — CUnit suite of the comparisons (Equal, NotEqual, Less, LessEqual, Greater,
 * GreaterEqual), the logical ops (LogicalAnd, LogicalOr, LogicalNot), IsNan, IsInf, IsFinite, Select
 * and SelectV2.
 *
 * Expected values come from reference code written here: inputs are built from doubles, every output
 * element's multi-index is mapped back to each broadcast operand, and comparisons are evaluated in
 * double (where NaN, -0 and inf follow IEEE rules). The kernels instead walk collapsed rows, compare
 * float16/bfloat16 on their bits and integers in their own type, so a mistake on either side shows.
 * The graph-time side (shape inference over partially known shapes) and kernel-side errors that only
 * a session with unknown shapes reaches are tested through graphs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tide_dtype REAL[] = {TIDE_INT8,    TIDE_INT16,    TIDE_INT32,   TIDE_INT64,  TIDE_UINT8,
                                  TIDE_UINT16,  TIDE_FLOAT16,  TIDE_BFLOAT16, TIDE_FLOAT32, TIDE_FLOAT64};
static const tide_dtype ALL[] = {TIDE_BOOL,    TIDE_INT8,      TIDE_INT16,      TIDE_INT32,   TIDE_INT64,
                                 TIDE_UINT8,   TIDE_UINT16,    TIDE_FLOAT16,    TIDE_BFLOAT16, TIDE_FLOAT32,
                                 TIDE_FLOAT64, TIDE_COMPLEX64, TIDE_COMPLEX128, TIDE_STRING};

static bool is_unsigned(tide_dtype dt) { return dt == TIDE_UINT8 || dt == TIDE_UINT16 || dt == TIDE_BOOL; }
static bool is_floating(tide_dtype dt) { return tide_dtype_is_float(dt) || tide_dtype_is_complex(dt); }

/* ---------------------------------------------------------------- tensors from doubles */

/* A tensor of dtype dt holding vals (exactly representable ones): bool v != 0; complex (v, -v) so both
 * parts matter; string the "%g" text of v. */
static tide_tensor *tensor_of(tide_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    return th_from_doubles(dt, rank, dims, vals, -1);
}

static tide_tensor *bools_of(int rank, const int64_t *dims, const uint8_t *v)
{
    return th_tensor(TIDE_BOOL, rank, dims, v);
}

static tide_tensor *strings_of(int rank, const int64_t *dims, const char *const *s)
{
    tide_tensor *t = th_tensor(TIDE_STRING, rank, dims, NULL);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++)
        tide_tensor_string_set(t, i, s[i], strlen(s[i]), NULL);
    return t;
}

/* Small random integers (>= 0 for unsigned and bool dtypes): many ties, exact in every dtype. */
static void random_small(tide_dtype dt, double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = floor(is_unsigned(dt) ? th_rand(0, 4) : th_rand(-2, 3));
}

static int64_t count(const tide_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

/* The flat index in operand `in` of output element `flat` under NumPy broadcasting. */
static int64_t ref_index(const tide_shape *out, const tide_shape *in, int64_t flat)
{
    int64_t idx = 0, stride = 1;
    for (int i = out->rank - 1, j = in->rank - 1; i >= 0; i--, j--) {
        int64_t c = flat % out->dims[i];
        flat /= out->dims[i];
        if (j >= 0) {
            if (in->dims[j] != 1)
                idx += c * stride;
            stride *= in->dims[j];
        }
    }
    return idx;
}

/* ---------------------------------------------------------------- reference comparisons */

typedef struct cmp_op {
    const char *name;
    int code;
} cmp_op;
enum { EQ, NE, LT, LE, GT, GE };
static const cmp_op CMPS[] = {{"Equal", EQ}, {"NotEqual", NE}, {"Less", LT},
                              {"LessEqual", LE}, {"Greater", GT}, {"GreaterEqual", GE}};

/* What an element built from v holds, as the reference compares it (bool: its truth value). */
static double ref_value(tide_dtype dt, double v) { return dt == TIDE_BOOL ? (double)(v != 0) : v; }

static bool ref_cmp(int code, double x, double y)
{
    switch (code) {
    case EQ: return x == y;
    case NE: return x != y;
    case LT: return x < y;
    case LE: return x <= y;
    case GT: return x > y;
    default: return x >= y;
    }
}

/* Runs op on (dt, sa, va) and (dt, sb, vb), checks shape `out` and every element against ref_cmp. */
static void check_compare(const cmp_op *op, tide_dtype dt, const tide_shape *sa, const double *va,
                          const tide_shape *sb, const double *vb, const tide_shape *out)
{
    tide_tensor *in[2] = {tensor_of(dt, sa->rank, sa->dims, va), tensor_of(dt, sb->rank, sb->dims, vb)};
    int64_t n = count(out);
    uint8_t *want = malloc((size_t)n + 1);
    for (int64_t i = 0; i < n; i++)
        want[i] = ref_cmp(op->code, ref_value(dt, va[ref_index(out, sa, i)]), ref_value(dt, vb[ref_index(out, sb, i)]));
    tide_tensor *expected = bools_of(out->rank, out->dims, want);
    tide_tensor *got = th_run1(op->name, in, 2, NULL);
    TH_ASSERT_CLOSE(got, expected, 0, 0);
    if (got && !tide_tensor_equal(got, expected, false))
        fprintf(stderr, "  (%s on %s)\n", op->name, tide_dtype_name(dt));
    tide_tensor_release(got);
    tide_tensor_release(expected);
    tide_tensor_release(in[0]);
    tide_tensor_release(in[1]);
    free(want);
}

/* Random small values in shapes a and b, broadcast to out. */
static void check_compare_random(const cmp_op *op, tide_dtype dt, tide_shape sa, tide_shape sb,
                                 tide_shape out)
{
    int64_t na = count(&sa), nb = count(&sb);
    double *va = malloc(sizeof(double) * (size_t)(na + 1)), *vb = malloc(sizeof(double) * (size_t)(nb + 1));
    random_small(dt, va, na);
    random_small(dt, vb, nb);
    check_compare(op, dt, &sa, va, &sb, vb, &out);
    free(va);
    free(vb);
}

#define SHAPE(...) tide_shape_make(NELEM(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define SCALAR tide_shape_scalar()

/* ---------------------------------------------------------------- comparisons */

/* Every ordering comparison on every real dtype, same shapes and scalar against vector, with the IEEE
 * cases (NaN, -0, inf) for the floating dtypes. */
static void test_compare_real_dtypes(void)
{
    static const double sa[] = {-3, -1, 0, 2, 5, 7, -100, 100}, sb[] = {-1, -1, 3, 2, -4, 7, 100, -100};
    static const double ua[] = {0, 1, 2, 5, 200, 7, 255, 3}, ub[] = {1, 1, 2, 4, 255, 7, 0, 3};
    const double fa[] = {-3, -0.5, 0, 2.5, NAN, INFINITY, -0.0, -INFINITY};
    const double fb[] = {-1, -0.5, -0.0, 2, 1, INFINITY, 0, NAN};
    tide_shape v8 = SHAPE(8), s = SCALAR;
    for (int d = 0; d < NELEM(REAL); d++) {
        tide_dtype dt = REAL[d];
        const double *a = is_unsigned(dt) ? ua : is_floating(dt) ? fa : sa;
        const double *b = is_unsigned(dt) ? ub : is_floating(dt) ? fb : sb;
        for (int o = 0; o < NELEM(CMPS); o++) {
            check_compare(&CMPS[o], dt, &v8, a, &v8, b, &v8);
            for (int k = 0; k < 8; k += 3) { /* scalar against vector, both ways */
                check_compare(&CMPS[o], dt, &s, &a[k], &v8, b, &v8);
                check_compare(&CMPS[o], dt, &v8, a, &s, &b[k], &v8);
            }
        }
    }
}

/* Equal and NotEqual on bool, complex and string; complex values differ in either part. */
static void test_equality_other_dtypes(void)
{
    tide_shape v6 = SHAPE(6), m = SHAPE(2, 3), col = SHAPE(2, 1);
    static const double a[] = {0, 1, 2, -3, 4, 1}, b[] = {0, 0, 2, 3, 4, 5}, c[] = {1, 4};
    const tide_dtype dts[] = {TIDE_BOOL, TIDE_COMPLEX64, TIDE_COMPLEX128, TIDE_STRING};
    for (int d = 0; d < NELEM(dts); d++)
        for (int o = 0; o < 2; o++) {
            check_compare(&CMPS[o], dts[d], &v6, a, &v6, b, &v6);
            check_compare(&CMPS[o], dts[d], &m, a, &col, c, &m);
        }
    /* complex: equal real parts, different imaginary parts */
    float x[] = {1, 2, 1, 3}, y[] = {1, 2, 1, -3};
    tide_tensor *in[2] = {th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(2), x), th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(2), y)};
    tide_tensor *eq = th_run1("Equal", in, 2, NULL), *want = bools_of(1, TH_DIMS(2), (uint8_t[]){1, 0});
    TH_ASSERT_CLOSE(eq, want, 0, 0);
    tide_tensor_release(eq);
    tide_tensor_release(want);
    tide_tensor_release(in[0]);
    tide_tensor_release(in[1]);
    /* strings: bytes and lengths, including empty strings and shared prefixes */
    const char *s1[] = {"", "abc", "abc", "ab", "x\xff", "same"}, *s2[] = {"", "abd", "ab", "abc", "x\xff", "same"};
    tide_tensor *sa = strings_of(1, TH_DIMS(6), s1), *sb = strings_of(1, TH_DIMS(6), s2);
    tide_tensor *sin[2] = {sa, sb};
    tide_tensor *se = th_run1("Equal", sin, 2, NULL), *sne = th_run1("NotEqual", sin, 2, NULL);
    tide_tensor *we = bools_of(1, TH_DIMS(6), (uint8_t[]){1, 0, 0, 0, 1, 1});
    tide_tensor *wne = bools_of(1, TH_DIMS(6), (uint8_t[]){0, 1, 1, 1, 0, 0});
    TH_ASSERT_CLOSE(se, we, 0, 0);
    TH_ASSERT_CLOSE(sne, wne, 0, 0);
    tide_tensor_release(se);
    tide_tensor_release(sne);
    tide_tensor_release(we);
    tide_tensor_release(wne);
    tide_tensor_release(sa);
    tide_tensor_release(sb);
}

/* Broadcasting corner cases: size-1 dims on either side, rank differences, scalars of rank > 0,
 * empty dims, for a signed, an unsigned, a half and a float dtype and every comparison. */
static void test_compare_broadcast_shapes(void)
{
    struct {
        tide_shape a, b, out;
    } cases[] = {
        {SHAPE(2, 1), SHAPE(1, 3), SHAPE(2, 3)},
        {SHAPE(3), SHAPE(2, 3), SHAPE(2, 3)},
        {SHAPE(2, 3), SHAPE(3), SHAPE(2, 3)},
        {SHAPE(2, 1, 3), SHAPE(4, 1), SHAPE(2, 4, 3)},
        {SHAPE(4, 1), SHAPE(2, 1, 3), SHAPE(2, 4, 3)},
        {SHAPE(1), SCALAR, SHAPE(1)},
        {SHAPE(1, 1), SHAPE(5), SHAPE(1, 5)},
        {SHAPE(5), SHAPE(1, 1), SHAPE(1, 5)},
        {SHAPE(3, 1, 2, 1), SHAPE(1, 4, 1, 5), SHAPE(3, 4, 2, 5)},
        {SHAPE(2, 3, 4), SHAPE(2, 1, 4), SHAPE(2, 3, 4)},
        {SHAPE(1, 3, 1), SHAPE(2, 3, 4), SHAPE(2, 3, 4)},
        {SHAPE(0, 3), SHAPE(1, 3), SHAPE(0, 3)},
        {SHAPE(0), SCALAR, SHAPE(0)},
        {SCALAR, SHAPE(2, 0), SHAPE(2, 0)},
        {SHAPE(2, 0), SHAPE(2, 1), SHAPE(2, 0)},
        {SHAPE(1, 1, 1), SCALAR, SHAPE(1, 1, 1)},
    };
    const tide_dtype dts[] = {TIDE_INT16, TIDE_UINT8, TIDE_BFLOAT16, TIDE_FLOAT64};
    for (int c = 0; c < NELEM(cases); c++)
        for (int d = 0; d < NELEM(dts); d++)
            for (int o = 0; o < NELEM(CMPS); o++)
                check_compare_random(&CMPS[o], dts[d], cases[c].a, cases[c].b, cases[c].out);
    /* and the remaining dtypes on one awkward case */
    for (int d = 0; d < NELEM(ALL); d++)
        check_compare_random(&CMPS[EQ], ALL[d], SHAPE(3, 1, 2), SHAPE(4, 1), SHAPE(3, 4, 2));
}

/* Large inputs take the threaded paths (same shape, scalar, rows with either side fixed). */
static void test_compare_large(void)
{
    check_compare_random(&CMPS[LT], TIDE_FLOAT32, SHAPE(300, 1000), SHAPE(1000), SHAPE(300, 1000));
    check_compare_random(&CMPS[GE], TIDE_FLOAT64, SHAPE(400000), SHAPE(400000), SHAPE(400000));
    check_compare_random(&CMPS[EQ], TIDE_INT64, SCALAR, SHAPE(250000), SHAPE(250000));
    check_compare_random(&CMPS[NE], TIDE_INT32, SHAPE(250000), SHAPE(1), SHAPE(250000));
    check_compare_random(&CMPS[GT], TIDE_INT8, SHAPE(1000, 1), SHAPE(1, 500), SHAPE(1000, 500));
    check_compare_random(&CMPS[LE], TIDE_FLOAT16, SHAPE(600, 1, 400), SHAPE(600, 3, 1), SHAPE(600, 3, 400));
    /* random floats with fractions (few ties) */
    int64_t n = 300000;
    double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)th_rand(-1e3, 1e3);
        b[i] = i % 7 ? (float)th_rand(-1e3, 1e3) : a[i];
    }
    tide_shape s = SHAPE(n);
    for (int o = 0; o < NELEM(CMPS); o++)
        check_compare(&CMPS[o], TIDE_FLOAT32, &s, a, &s, b, &s);
    free(a);
    free(b);
}

/* Integers compare in their own type: int64 values a double cannot tell apart, and the extremes. */
static void test_compare_integers_exact(void)
{
    int64_t a[] = {(INT64_C(1) << 53) + 1, INT64_MIN, INT64_MAX, -1, INT64_MAX - 1};
    int64_t b[] = {INT64_C(1) << 53, INT64_MAX, INT64_MAX - 1, 0, INT64_MAX};
    tide_tensor *in[2] = {th_i64(1, TH_DIMS(5), a), th_i64(1, TH_DIMS(5), b)};
    tide_tensor *eq = th_run1("Equal", in, 2, NULL), *lt = th_run1("Less", in, 2, NULL);
    tide_tensor *weq = bools_of(1, TH_DIMS(5), (uint8_t[]){0, 0, 0, 0, 0});
    tide_tensor *wlt = bools_of(1, TH_DIMS(5), (uint8_t[]){0, 1, 0, 1, 1});
    TH_ASSERT_CLOSE(eq, weq, 0, 0);
    TH_ASSERT_CLOSE(lt, wlt, 0, 0);
    tide_tensor_release(eq);
    tide_tensor_release(lt);
    tide_tensor_release(weq);
    tide_tensor_release(wlt);
    tide_tensor_release(in[0]);
    tide_tensor_release(in[1]);
    int32_t c[] = {INT32_MIN, INT32_MAX, 16777217}, d[] = {INT32_MAX, INT32_MIN, 16777216};
    tide_tensor *in32[2] = {th_i32(1, TH_DIMS(3), c), th_i32(1, TH_DIMS(3), d)};
    tide_tensor *gt = th_run1("Greater", in32, 2, NULL), *wgt = bools_of(1, TH_DIMS(3), (uint8_t[]){0, 1, 1});
    TH_ASSERT_CLOSE(gt, wgt, 0, 0);
    tide_tensor_release(gt);
    tide_tensor_release(wgt);
    tide_tensor_release(in32[0]);
    tide_tensor_release(in32[1]);
    /* uint16: 65535 is the largest, never negative */
    uint16_t u[] = {65535, 0}, w[] = {0, 65535};
    tide_tensor *inu[2] = {th_tensor(TIDE_UINT16, 1, TH_DIMS(2), u), th_tensor(TIDE_UINT16, 1, TH_DIMS(2), w)};
    tide_tensor *ug = th_run1("Greater", inu, 2, NULL), *wug = bools_of(1, TH_DIMS(2), (uint8_t[]){1, 0});
    TH_ASSERT_CLOSE(ug, wug, 0, 0);
    tide_tensor_release(ug);
    tide_tensor_release(wug);
    tide_tensor_release(inu[0]);
    tide_tensor_release(inu[1]);
}

/* float16/bfloat16 compare as values: every finite bit pattern against a few pivots, checked in
 * double, covering subnormals, both zeros, infinities and NaNs. */
static void test_compare_half_all_values(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT16, TIDE_BFLOAT16};
    for (int d = 0; d < 2; d++) {
        tide_tensor *all = th_tensor(dts[d], 1, TH_DIMS(65536), NULL);
        uint16_t *bits = tide_tensor_data(all);
        for (int i = 0; i < 65536; i++)
            bits[i] = (uint16_t)i;
        const uint16_t pivots[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x0001, 0x7c00, 0x7f80, 0xfe00};
        for (int p = 0; p < NELEM(pivots); p++) {
            tide_tensor *pv = th_tensor(dts[d], 0, NULL, &pivots[p]);
            double y = tide_tensor_get_f64(pv, 0);
            for (int o = 0; o < NELEM(CMPS); o++) {
                tide_tensor *in[2] = {all, pv};
                tide_tensor *got = th_run1(CMPS[o].name, in, 2, NULL);
                int bad = -1;
                for (int i = 0; got && i < 65536 && bad < 0; i++)
                    if (((uint8_t *)tide_tensor_data(got))[i] != ref_cmp(CMPS[o].code, tide_tensor_get_f64(all, i), y))
                        bad = i;
                if (bad >= 0)
                    fprintf(stderr, "%s %s: bits 0x%04x against 0x%04x wrong\n", tide_dtype_name(dts[d]),
                            CMPS[o].name, bad, pivots[p]);
                CU_ASSERT(got && bad < 0);
                tide_tensor_release(got);
            }
            tide_tensor_release(pv);
        }
        tide_tensor_release(all);
    }
}

/* IsNan, IsInf, IsFinite against C's isnan/isinf/isfinite of the value in double: every bit pattern
 * of float16 and bfloat16, and for float32 and float64 random bit patterns (every exponent, so nans
 * with any payload, infinities, subnormals) plus the special values of either sign. */
static void test_float_classifications(void)
{
    static const char *const ops[] = {"IsNan", "IsInf", "IsFinite"};
    const tide_dtype dts[] = {TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_FLOAT32, TIDE_FLOAT64};
    for (int d = 0; d < 4; d++) {
        int64_t n = d < 2 ? 65536 : 100000;
        tide_tensor *x = th_tensor(dts[d], 1, TH_DIMS(n), NULL);
        void *data = tide_tensor_data(x);
        for (int64_t i = 0; i < n; i++) {
            if (d < 2) {
                ((uint16_t *)data)[i] = (uint16_t)i;
            } else if (d == 2) {
                uint32_t b = (uint32_t)th_rand(0, 4294967296.0);
                if (i % 4 == 0) /* an all-ones exponent in a quarter of them */
                    b |= 0x7f800000u;
                ((uint32_t *)data)[i] = i < 8 ? (uint32_t[]){0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                                             0, 0x80000000u, 1, 0x7f7fffffu}[i] : b;
            } else {
                uint64_t b = (uint64_t)th_rand(0, 4294967296.0) << 32 | (uint64_t)th_rand(0, 4294967296.0);
                if (i % 4 == 0)
                    b |= 0x7ff0000000000000ull;
                ((uint64_t *)data)[i] = i < 4 ? (uint64_t[]){0x7ff0000000000000ull, 0xfff0000000000000ull,
                                                             0x7ff8000000000000ull, 0xfff0000000000001ull}[i] : b;
            }
        }
        for (int o = 0; o < 3; o++) {
            tide_tensor *got = th_run1(ops[o], &x, 1, NULL);
            int64_t bad = -1;
            for (int64_t i = 0; got && i < n && bad < 0; i++) {
                double v = tide_tensor_get_f64(x, i);
                bool want = o == 0 ? isnan(v) : o == 1 ? isinf(v) : isfinite(v);
                if (((uint8_t *)tide_tensor_data(got))[i] != want)
                    bad = i;
            }
            if (bad >= 0)
                fprintf(stderr, "%s %s: element %lld (%g) wrong\n", ops[o], tide_dtype_name(dts[d]),
                        (long long)bad, tide_tensor_get_f64(x, bad));
            CU_ASSERT(got && tide_tensor_dtype(got) == TIDE_BOOL && bad < 0);
            tide_tensor_release(got);
        }
        tide_tensor_release(x);
    }
    /* floats only, at graph time; shapes pass through */
    tide_tensor *i = th_tensor(TIDE_INT32, 1, TH_DIMS(2), NULL);
    TH_ASSERT_FAILS("IsFinite", &i, 1, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    tide_tensor_release(i);
    tide_tensor *e = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(0, 3), NULL), *got = th_run1("IsNan", &e, 1, NULL);
    TH_ASSERT_SHAPE(got, 2, TH_DIMS(0, 3));
    tide_tensor_release(got);
    tide_tensor_release(e);
}

/* incompatible_shape_error=false: shapes that cannot broadcast give a scalar (false for Equal, true
 * for NotEqual); compatible shapes behave as usual. */
static void test_equal_incompatible_shapes_attr(void)
{
    tide_attrs *attrs = tide_attrs_new();
    tide_attrs_set_bool(attrs, "incompatible_shape_error", false);
    tide_tensor *in[2] = {th_i32(1, TH_DIMS(2), (int32_t[]){1, 2}), th_i32(1, TH_DIMS(3), (int32_t[]){1, 2, 3})};
    tide_tensor *eq = th_run1("Equal", in, 2, attrs), *ne = th_run1("NotEqual", in, 2, attrs);
    tide_tensor *f = bools_of(0, NULL, (uint8_t[]){0}), *t = bools_of(0, NULL, (uint8_t[]){1});
    TH_ASSERT_CLOSE(eq, f, 0, 0);
    TH_ASSERT_CLOSE(ne, t, 0, 0);
    tide_tensor_release(eq);
    tide_tensor_release(ne);
    tide_tensor *ok[2] = {in[0], th_i32(1, TH_DIMS(2), (int32_t[]){1, 3})};
    tide_tensor *eq2 = th_run1("Equal", ok, 2, attrs), *w2 = bools_of(1, TH_DIMS(2), (uint8_t[]){1, 0});
    TH_ASSERT_CLOSE(eq2, w2, 0, 0);
    tide_tensor_release(eq2);
    tide_tensor_release(w2);
    tide_tensor_release(ok[1]);
    TH_ASSERT_FAILS("Equal", in, 2, NULL, TIDE_INVALID_ARGUMENT, "incompatible shapes [2] and [3]");
    tide_tensor_release(f);
    tide_tensor_release(t);
    tide_tensor_release(in[0]);
    tide_tensor_release(in[1]);
    tide_attrs_free(attrs);
}

/* ---------------------------------------------------------------- logical ops */

static void check_logical(const char *op, tide_shape sa, const uint8_t *a, tide_shape sb, const uint8_t *b,
                          tide_shape out)
{
    int64_t n = count(&out);
    uint8_t *want = malloc((size_t)n + 1);
    for (int64_t i = 0; i < n; i++) {
        bool x = a[ref_index(&out, &sa, i)] != 0, y = b[ref_index(&out, &sb, i)] != 0;
        want[i] = strcmp(op, "LogicalAnd") == 0 ? (x && y) : (x || y);
    }
    tide_tensor *in[2] = {bools_of(sa.rank, sa.dims, a), bools_of(sb.rank, sb.dims, b)};
    tide_tensor *got = th_run1(op, in, 2, NULL), *expected = bools_of(out.rank, out.dims, want);
    TH_ASSERT_CLOSE(got, expected, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(expected);
    tide_tensor_release(in[0]);
    tide_tensor_release(in[1]);
    free(want);
}

static uint8_t *random_bools(int64_t n)
{
    uint8_t *v = malloc((size_t)n + 1);
    for (int64_t i = 0; i < n; i++)
        v[i] = th_rand(0, 1) < 0.5;
    return v;
}

/* Truth tables, broadcasting, large inputs; a non-canonical true byte (2) counts as true. */
static void test_logical_and_or(void)
{
    static const uint8_t a[] = {0, 0, 1, 1, 2, 2}, b[] = {0, 1, 0, 1, 0, 2}, one = 1, zero = 0;
    const char *ops[] = {"LogicalAnd", "LogicalOr"};
    for (int o = 0; o < 2; o++) {
        check_logical(ops[o], SHAPE(6), a, SHAPE(6), b, SHAPE(6));
        check_logical(ops[o], SCALAR, &one, SHAPE(6), b, SHAPE(6));
        check_logical(ops[o], SHAPE(2, 3), a, SCALAR, &zero, SHAPE(2, 3));
        check_logical(ops[o], SHAPE(3, 1), a, SHAPE(1, 2), b, SHAPE(3, 2));
        check_logical(ops[o], SHAPE(0, 2), a, SHAPE(2), b, SHAPE(0, 2));
        uint8_t *x = random_bools(200000), *y = random_bools(200000);
        check_logical(ops[o], SHAPE(200000), x, SHAPE(200000), y, SHAPE(200000));
        check_logical(ops[o], SHAPE(400, 500), x, SHAPE(400, 1), y, SHAPE(400, 500));
        free(x);
        free(y);
    }
}

static void test_logical_not(void)
{
    static const uint8_t a[] = {0, 1, 2, 0, 255, 1};
    tide_tensor *x = bools_of(2, TH_DIMS(2, 3), a), *want = bools_of(2, TH_DIMS(2, 3), (uint8_t[]){1, 0, 0, 1, 0, 0});
    tide_tensor *got = th_run1("LogicalNot", &x, 1, NULL);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_tensor_release(x);
    uint8_t *big = random_bools(300000), *neg = malloc(300000);
    for (int i = 0; i < 300000; i++)
        neg[i] = !big[i];
    tide_tensor *bx = bools_of(1, TH_DIMS(300000), big), *bw = bools_of(1, TH_DIMS(300000), neg);
    tide_tensor *bg = th_run1("LogicalNot", &bx, 1, NULL);
    TH_ASSERT_CLOSE(bg, bw, 0, 0);
    tide_tensor_release(bg);
    tide_tensor_release(bw);
    tide_tensor_release(bx);
    tide_tensor *e = bools_of(2, TH_DIMS(0, 4), NULL), *s = bools_of(0, NULL, &big[0]);
    tide_tensor *eg = th_run1("LogicalNot", &e, 1, NULL), *sg = th_run1("LogicalNot", &s, 1, NULL);
    TH_ASSERT_SHAPE(eg, 2, TH_DIMS(0, 4));
    CU_ASSERT(sg && ((uint8_t *)tide_tensor_data(sg))[0] == !big[0]);
    tide_tensor_release(eg);
    tide_tensor_release(sg);
    tide_tensor_release(e);
    tide_tensor_release(s);
    free(big);
    free(neg);
}

/* ---------------------------------------------------------------- Select */

static void release_all(tide_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(ts[i]);
}

/* Runs op (Select or SelectV2) on random operands of shapes sc, st, se (dtype dt) and checks every
 * element against the broadcasting reference (for Select: a vector condition viewed as [n, 1..]). */
static void check_select_op(const char *op, tide_dtype dt, tide_shape sc, tide_shape st, tide_shape se,
                            tide_shape out)
{
    int64_t nc = count(&sc), nt = count(&st), ne = count(&se), n = count(&out);
    uint8_t *c = random_bools(nc);
    double *t = malloc(sizeof(double) * (size_t)(nt + 1)), *e = malloc(sizeof(double) * (size_t)(ne + 1));
    double *w = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < nt; i++)
        t[i] = floor(th_rand(1, 100));
    for (int64_t i = 0; i < ne; i++)
        e[i] = dt == TIDE_BOOL ? 0 : -floor(th_rand(1, 100)) * !is_unsigned(dt) + 100 * is_unsigned(dt);
    tide_shape rows = sc; /* Select's row-picking vector, aligned with the first dimension */
    if (strcmp(op, "Select") == 0 && sc.rank == 1 && out.rank > 1)
        for (rows.rank = 1; rows.rank < out.rank; rows.rank++)
            rows.dims[rows.rank] = 1;
    for (int64_t i = 0; i < n; i++)
        w[i] = c[ref_index(&out, &rows, i)] ? t[ref_index(&out, &st, i)] : e[ref_index(&out, &se, i)];
    tide_tensor *in[3] = {bools_of(sc.rank, sc.dims, c), tensor_of(dt, st.rank, st.dims, t),
                          tensor_of(dt, se.rank, se.dims, e)};
    tide_tensor *got = th_run1(op, in, 3, NULL), *want = tensor_of(dt, out.rank, out.dims, w);
    TH_ASSERT_CLOSE(got, want, 0, 0);
    if (got && !tide_tensor_equal(got, want, true))
        fprintf(stderr, "  (%s on %s)\n", op, tide_dtype_name(dt));
    tide_tensor_release(got);
    tide_tensor_release(want);
    for (int i = 0; i < 3; i++)
        tide_tensor_release(in[i]);
    free(c);
    free(t);
    free(e);
    free(w);
}

static void check_select(tide_dtype dt, tide_shape sc, tide_shape st, tide_shape se, tide_shape out)
{
    check_select_op("SelectV2", dt, sc, st, se, out);
}

/* Every dtype (element sizes 1, 2, 4, 8, 16 and strings) on same shapes and a broadcast; Select
 * (1.x) on the shapes it takes: equal ones, a scalar condition, a vector condition picking rows. */
static void test_select_dtypes(void)
{
    for (int d = 0; d < NELEM(ALL); d++) {
        check_select(ALL[d], SHAPE(7), SHAPE(7), SHAPE(7), SHAPE(7));
        check_select(ALL[d], SHAPE(2, 1), SHAPE(3), SHAPE(2, 3), SHAPE(2, 3));
        check_select(ALL[d], SHAPE(2, 3), SCALAR, SHAPE(1, 3), SHAPE(2, 3));
        check_select_op("Select", ALL[d], SHAPE(2, 3), SHAPE(2, 3), SHAPE(2, 3), SHAPE(2, 3));
        check_select_op("Select", ALL[d], SHAPE(4), SHAPE(4, 3), SHAPE(4, 3), SHAPE(4, 3));
        check_select_op("Select", ALL[d], SCALAR, SHAPE(2, 2), SHAPE(2, 2), SHAPE(2, 2));
    }
}

/* TensorFlow 1.x's Select: a rank-1 condition with matrix operands picks whole ROWS (SelectV2 would
 * broadcast it along the last dimension and pick columns). */
static void test_select_v1_rows(void)
{
    tide_tensor *c = bools_of(1, TH_DIMS(3), (uint8_t[]){1, 0, 1});
    tide_tensor *ones = th_f32(2, TH_DIMS(3, 3), (float[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    tide_tensor *zeros = th_f32(2, TH_DIMS(3, 3), NULL);
    tide_tensor *in[3] = {c, ones, zeros};
    tide_tensor *rows = th_run1("Select", in, 3, NULL);
    tide_tensor *want_rows = th_f32(2, TH_DIMS(3, 3), (float[]){1, 1, 1, 0, 0, 0, 1, 1, 1});
    TH_ASSERT_CLOSE(rows, want_rows, 0, 0);
    tide_tensor *cols = th_run1("SelectV2", in, 3, NULL);
    tide_tensor *want_cols = th_f32(2, TH_DIMS(3, 3), (float[]){1, 0, 1, 1, 0, 1, 1, 0, 1});
    TH_ASSERT_CLOSE(cols, want_cols, 0, 0);
    release_all((tide_tensor *[]){c, ones, zeros, rows, want_rows, cols, want_cols}, 7);
    /* rank 3 operands: whole [3, 4] slices; rank 1 operands: element by element */
    const tide_dtype dts[] = {TIDE_FLOAT64, TIDE_INT8, TIDE_COMPLEX128, TIDE_STRING};
    for (int d = 0; d < NELEM(dts); d++) {
        check_select_op("Select", dts[d], SHAPE(2), SHAPE(2, 3, 4), SHAPE(2, 3, 4), SHAPE(2, 3, 4));
        check_select_op("Select", dts[d], SHAPE(5), SHAPE(5), SHAPE(5), SHAPE(5));
        check_select_op("Select", dts[d], SHAPE(0), SHAPE(0, 3), SHAPE(0, 3), SHAPE(0, 3));
    }
    check_select_op("Select", TIDE_FLOAT32, SHAPE(3000), SHAPE(3000, 200), SHAPE(3000, 200), SHAPE(3000, 200));
}


/* Three-way broadcasting: the condition, t or e may each be the one that sets a dimension. */
static void test_select_broadcast(void)
{
    struct {
        tide_shape c, t, e, out;
    } cases[] = {
        {SCALAR, SHAPE(2, 3), SHAPE(2, 3), SHAPE(2, 3)},
        {SCALAR, SCALAR, SHAPE(4), SHAPE(4)},
        {SCALAR, SHAPE(4), SCALAR, SHAPE(4)},
        {SHAPE(4), SCALAR, SCALAR, SHAPE(4)},
        {SHAPE(3, 1), SHAPE(1, 4), SCALAR, SHAPE(3, 4)},
        {SHAPE(2, 1, 1), SHAPE(3, 1), SHAPE(1, 4), SHAPE(2, 3, 4)},
        {SHAPE(1, 4), SHAPE(3, 4), SHAPE(3, 1), SHAPE(3, 4)},
        {SHAPE(3, 1), SHAPE(3, 4), SHAPE(3, 4), SHAPE(3, 4)},
        {SHAPE(2, 3, 4), SHAPE(4), SHAPE(3, 1), SHAPE(2, 3, 4)},
        {SHAPE(1, 1), SHAPE(5), SHAPE(5), SHAPE(1, 5)},
        {SHAPE(1), SHAPE(2, 2), SHAPE(1, 1), SHAPE(2, 2)},
        {SHAPE(0, 3), SHAPE(3), SCALAR, SHAPE(0, 3)},
        {SCALAR, SHAPE(0), SCALAR, SHAPE(0)},
        {SHAPE(2, 1, 3, 1), SHAPE(1, 2, 1, 2), SHAPE(2, 2, 3, 2), SHAPE(2, 2, 3, 2)},
    };
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_INT8, TIDE_FLOAT16, TIDE_COMPLEX128, TIDE_STRING};
    for (int c = 0; c < NELEM(cases); c++)
        for (int d = 0; d < NELEM(dts); d++)
            check_select(dts[d], cases[c].c, cases[c].t, cases[c].e, cases[c].out);
}

/* A single condition hands the chosen tensor on when it already has the output's shape. */
static void test_select_scalar_condition(void)
{
    tide_tensor *t = th_f32(1, TH_DIMS(3), (float[]){1, 2, 3}), *e = th_f32(1, TH_DIMS(3), (float[]){4, 5, 6});
    tide_tensor *yes = bools_of(0, NULL, (uint8_t[]){1}), *no = bools_of(1, TH_DIMS(1), (uint8_t[]){0});
    tide_tensor *a[3] = {yes, t, e}, *b[3] = {no, t, e};
    for (int v = 0; v < 2; v++) {
        const char *op = v ? "Select" : "SelectV2";
        tide_tensor *ga = th_run1(op, a, v ? 3 : 3, NULL), *gb = v ? NULL : th_run1(op, b, 3, NULL);
        CU_ASSERT_PTR_EQUAL(ga, t);
        CU_ASSERT(v || gb == e);
        tide_tensor_release(ga);
        tide_tensor_release(gb);
    }
    /* the chosen operand is broadcast when it is smaller than the output */
    tide_tensor *small = th_f32(0, NULL, (float[]){7});
    tide_tensor *c[3] = {yes, small, e};
    tide_tensor *gc = th_run1("SelectV2", c, 3, NULL), *wc = th_f32(1, TH_DIMS(3), (float[]){7, 7, 7});
    TH_ASSERT_CLOSE(gc, wc, 0, 0);
    tide_tensor_release(gc);
    tide_tensor_release(wc);
    tide_tensor_release(small);
    tide_tensor_release(yes);
    tide_tensor_release(no);
    tide_tensor_release(t);
    tide_tensor_release(e);
}

static void test_select_large(void)
{
    check_select(TIDE_FLOAT32, SHAPE(300000), SHAPE(300000), SHAPE(300000), SHAPE(300000));
    check_select(TIDE_FLOAT64, SHAPE(300000), SCALAR, SCALAR, SHAPE(300000));
    check_select(TIDE_INT32, SHAPE(500, 1), SHAPE(500, 600), SHAPE(600), SHAPE(500, 600));
    check_select(TIDE_INT16, SHAPE(400, 700), SHAPE(400, 1), SHAPE(1, 700), SHAPE(400, 700));
    check_select(TIDE_COMPLEX64, SHAPE(1, 800), SHAPE(300, 800), SHAPE(300, 800), SHAPE(300, 800));
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void)
{
    tide_tensor *f2 = th_f32(1, TH_DIMS(2), (float[]){1, 2}), *f3 = th_f32(1, TH_DIMS(3), (float[]){1, 2, 3});
    tide_tensor *i2 = th_i32(1, TH_DIMS(2), (int32_t[]){1, 2}), *b2 = bools_of(1, TH_DIMS(2), (uint8_t[]){1, 0});
    tide_tensor *s2 = strings_of(1, TH_DIMS(2), (const char *[]){"a", "b"});
    tide_tensor *c2 = th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(2), NULL);
    /* shapes */
    for (int o = 0; o < NELEM(CMPS); o++)
        TH_ASSERT_FAILS(CMPS[o].name, ((tide_tensor *[]){f2, f3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                        "incompatible shapes [2] and [3]");
    tide_tensor *b3 = bools_of(1, TH_DIMS(3), (uint8_t[]){1, 1, 1});
    TH_ASSERT_FAILS("LogicalAnd", ((tide_tensor *[]){b2, b3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "incompatible shapes [2] and [3]");
    tide_tensor_release(b3);
    TH_ASSERT_FAILS("SelectV2", ((tide_tensor *[]){b2, f3, f3}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "condition [2], t [3] and e [3] do not broadcast");
    TH_ASSERT_FAILS("SelectV2", ((tide_tensor *[]){b2, f2, f3}), 3, NULL, TIDE_INVALID_ARGUMENT, "do not broadcast");
    /* dtypes */
    TH_ASSERT_FAILS("Less", ((tide_tensor *[]){s2, s2}), 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype string");
    TH_ASSERT_FAILS("Greater", ((tide_tensor *[]){b2, b2}), 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype bool");
    TH_ASSERT_FAILS("LessEqual", ((tide_tensor *[]){c2, c2}), 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype complex64");
    TH_ASSERT_FAILS("Equal", ((tide_tensor *[]){i2, f2}), 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype float32");
    TH_ASSERT_FAILS("LogicalOr", ((tide_tensor *[]){b2, i2}), 2, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    TH_ASSERT_FAILS("LogicalNot", &f2, 1, NULL, TIDE_INVALID_ARGUMENT, "has dtype float32");
    TH_ASSERT_FAILS("Select", ((tide_tensor *[]){i2, f2, f2}), 3, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    TH_ASSERT_FAILS("Select", ((tide_tensor *[]){b2, f2, i2}), 3, NULL, TIDE_INVALID_ARGUMENT, "has dtype int32");
    /* arity and attrs */
    TH_ASSERT_FAILS("Less", &f2, 1, NULL, TIDE_INVALID_ARGUMENT, "expects 2 inputs");
    TH_ASSERT_FAILS("Select", ((tide_tensor *[]){b2, f2}), 2, NULL, TIDE_INVALID_ARGUMENT, "expects 3 inputs");
    tide_attrs *bad = tide_attrs_new();
    tide_attrs_set_int(bad, "incompatible_shape_error", 0);
    TH_ASSERT_FAILS("Equal", ((tide_tensor *[]){f2, f2}), 2, bad, TIDE_INVALID_ARGUMENT,
                    "attr 'incompatible_shape_error' must be a bool");
    TH_ASSERT_FAILS("Less", ((tide_tensor *[]){f2, f2}), 2, bad, TIDE_INVALID_ARGUMENT,
                    "unknown attr 'incompatible_shape_error'");
    tide_attrs_free(bad);
    tide_tensor_release(f2);
    tide_tensor_release(f3);
    tide_tensor_release(i2);
    tide_tensor_release(b2);
    tide_tensor_release(s2);
    tide_tensor_release(c2);
}

/* ---------------------------------------------------------------- graphs */

/* One input of a test graph: a Placeholder of dtype dt and shape (rank -1: unknown). */
typedef struct gin {
    tide_dtype dt;
    tide_shape shape;
} gin;

static gin ph(tide_dtype dt, tide_shape s) { return (gin){dt, s}; }

/* Adds op over Placeholders for ins to g (attrs copied: bools only are used here). */
static tide_node *build(tide_graph *g, const char *op, const gin *ins, int n, const tide_attrs *attrs,
                        tide_node **inputs, tide_error *err)
{
    for (int i = 0; i < n; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", ins[i].dt);
        tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &ins[i].shape);
        inputs[i] = tide_node_builder_finish(b, err);
        if (!inputs[i])
            return NULL;
    }
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){inputs[i], 0});
    for (int i = 0; attrs && i < tide_attrs_count(attrs); i++) {
        bool v;
        if (tide_attrs_get_bool(attrs, tide_attrs_name_at(attrs, i), &v))
            tide_attrs_set_bool(tide_node_builder_attrs(b), tide_attrs_name_at(attrs, i), v);
    }
    return tide_node_builder_finish(b, err);
}

/* Asserts the shape inferred for op's output 0 (rank -1: unknown), or with needle that building fails
 * with INVALID_ARGUMENT and a message containing it. */
static void assert_infer_impl(const char *op, const gin *ins, int n, const tide_attrs *attrs, tide_shape want,
                              const char *needle, int line)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    tide_node *inputs[4];
    tide_node *node = build(g, op, ins, n, attrs, inputs, err);
    bool ok;
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (needle) {
        ok = !node && tide_error_code(err) == TIDE_INVALID_ARGUMENT && strstr(tide_error_message(err), needle);
    } else {
        tide_shape got = node ? tide_node_output_shape(node, 0) : tide_shape_unknown();
        ok = node && tide_shape_equal(&got, &want);
        if (!ok)
            fprintf(stderr, "line %d: %s inferred %s, expected %s\n", line, op,
                    node ? tide_shape_format(&got, a, sizeof a) : "an error", tide_shape_format(&want, b, sizeof b));
    }
    if (!ok)
        fprintf(stderr, "line %d: %s: %s\n", line, op, tide_error_message(err));
    CU_assertImplementation(ok, (unsigned)line, "shape inference", __FILE__, "", CU_FALSE);
    tide_error_free(err);
    tide_graph_free(g);
}
#define ASSERT_INFER(op, ins, attrs, want) assert_infer_impl(op, ins, NELEM(ins), attrs, want, NULL, __LINE__)
#define ASSERT_INFER_FAILS(op, ins, attrs, needle) \
    assert_infer_impl(op, ins, NELEM(ins), attrs, SCALAR, needle, __LINE__)

#define UNKNOWN tide_shape_unknown()

static void test_shape_inference(void)
{
    ASSERT_INFER("Less", ((gin[]){ph(TIDE_FLOAT32, SHAPE(-1, 3)), ph(TIDE_FLOAT32, SHAPE(2, 1))}), NULL, SHAPE(2, 3));
    ASSERT_INFER("Greater", ((gin[]){ph(TIDE_INT32, SHAPE(-1)), ph(TIDE_INT32, SHAPE(4, 1))}), NULL, SHAPE(4, -1));
    ASSERT_INFER("Equal", ((gin[]){ph(TIDE_INT32, UNKNOWN), ph(TIDE_INT32, SHAPE(3))}), NULL, UNKNOWN);
    ASSERT_INFER("LogicalAnd", ((gin[]){ph(TIDE_BOOL, SCALAR), ph(TIDE_BOOL, SHAPE(-1, 5))}), NULL, SHAPE(-1, 5));
    ASSERT_INFER("LogicalNot", ((gin[]){ph(TIDE_BOOL, SHAPE(-1, 2))}), NULL, SHAPE(-1, 2));
    ASSERT_INFER_FAILS("Less", ((gin[]){ph(TIDE_FLOAT32, SHAPE(2, -1)), ph(TIDE_FLOAT32, SHAPE(3, 1))}), NULL,
                       "incompatible shapes [2, ?] and [3, 1]");
    ASSERT_INFER("SelectV2", ((gin[]){ph(TIDE_BOOL, SHAPE(-1)), ph(TIDE_FLOAT32, SHAPE(-1, 4)), ph(TIDE_FLOAT32, SCALAR)}),
                 NULL, SHAPE(-1, 4));
    ASSERT_INFER("SelectV2", ((gin[]){ph(TIDE_BOOL, SHAPE(2, 1, 1)), ph(TIDE_INT8, SHAPE(3, 1)), ph(TIDE_INT8, SHAPE(4))}),
                 NULL, SHAPE(2, 3, 4));
    ASSERT_INFER("SelectV2", ((gin[]){ph(TIDE_BOOL, UNKNOWN), ph(TIDE_INT8, SHAPE(3)), ph(TIDE_INT8, SHAPE(3))}), NULL,
                 UNKNOWN);
    ASSERT_INFER_FAILS("SelectV2",
                       ((gin[]){ph(TIDE_BOOL, SHAPE(2)), ph(TIDE_FLOAT32, SHAPE(-1, 3)), ph(TIDE_FLOAT32, SCALAR)}),
                       NULL, "condition [2], t [?, 3] and e [] do not broadcast");
    tide_attrs *lenient = tide_attrs_new();
    tide_attrs_set_bool(lenient, "incompatible_shape_error", false);
    ASSERT_INFER("Equal", ((gin[]){ph(TIDE_INT32, SHAPE(2)), ph(TIDE_INT32, SHAPE(3))}), lenient, SCALAR);
    ASSERT_INFER("NotEqual", ((gin[]){ph(TIDE_INT32, SHAPE(-1)), ph(TIDE_INT32, SHAPE(3))}), lenient, UNKNOWN);
    ASSERT_INFER("Equal", ((gin[]){ph(TIDE_INT32, SHAPE(2, 1)), ph(TIDE_INT32, SHAPE(3))}), lenient, SHAPE(2, 3));
    tide_attrs_free(lenient);
}

/* Fed through Placeholders of unknown shape, only the kernel sees the shapes: it must reject them. */
static void assert_kernel_fails_impl(const char *op, tide_tensor *const *inputs, int n, const char *needle,
                                     int line)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    gin ins[4];
    tide_node *nodes[4];
    tide_feed feeds[4];
    for (int i = 0; i < n; i++)
        ins[i] = ph(tide_tensor_dtype(inputs[i]), UNKNOWN);
    tide_node *node = build(g, op, ins, n, NULL, nodes, err);
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
        fprintf(stderr, "line %d: %s in a session: expected INVALID_ARGUMENT with \"%s\", got %s: %s\n", line, op,
                needle, tide_status_name(st), tide_error_message(err));
    CU_assertImplementation(ok, (unsigned)line, "kernel fails in a session", __FILE__, "", CU_FALSE);
    tide_tensor_release(out);
    tide_error_free(err);
    tide_graph_free(g);
}
#define ASSERT_KERNEL_FAILS(op, inputs, n, needle) assert_kernel_fails_impl(op, inputs, n, needle, __LINE__)

static void test_kernel_errors_in_session(void)
{
    tide_tensor *f2 = th_f32(1, TH_DIMS(2), (float[]){1, 2}), *f3 = th_f32(2, TH_DIMS(1, 3), (float[]){1, 2, 3});
    tide_tensor *f23 = th_f32(2, TH_DIMS(2, 3), NULL), *b3 = bools_of(1, TH_DIMS(3), (uint8_t[]){1, 0, 1});
    ASSERT_KERNEL_FAILS("Less", ((tide_tensor *[]){f2, f3}), 2, "incompatible shapes [2] and [1, 3]");
    ASSERT_KERNEL_FAILS("Equal", ((tide_tensor *[]){f23, f2}), 2, "incompatible shapes [2, 3] and [2]");
    ASSERT_KERNEL_FAILS("SelectV2", ((tide_tensor *[]){b3, f2, f2}), 3, "condition [3], t [2] and e [2]");
    tide_tensor_release(f2);
    tide_tensor_release(f3);
    tide_tensor_release(f23);
    tide_tensor_release(b3);
}

static void test_select_v1_errors(void)
{
    tide_tensor *f23 = th_f32(2, TH_DIMS(2, 3), NULL), *f3 = th_f32(1, TH_DIMS(3), NULL);
    tide_tensor *b3 = bools_of(1, TH_DIMS(3), (uint8_t[]){1, 0, 1}), *b21 = bools_of(2, TH_DIMS(2, 1), NULL);
    tide_tensor *b = bools_of(0, NULL, (uint8_t[]){1});
    TH_ASSERT_FAILS("Select", ((tide_tensor *[]){b, f23, f3}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "t [2, 3] and e [3] must have the same shape (Select does not broadcast; SelectV2 does)");
    TH_ASSERT_FAILS("Select", ((tide_tensor *[]){b3, f23, f23}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "condition [3] must be a scalar, have the shape of t [2, 3], or be a vector as long "
                    "as t's first dimension");
    TH_ASSERT_FAILS("Select", ((tide_tensor *[]){b21, f23, f23}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "condition [2, 1] must be a scalar");
    ASSERT_KERNEL_FAILS("Select", ((tide_tensor *[]){b3, f23, f23}), 3, "condition [3] must be a scalar");
    ASSERT_KERNEL_FAILS("Select", ((tide_tensor *[]){b, f23, f3}), 3, "must have the same shape");
    ASSERT_INFER_FAILS("Select", ((gin[]){ph(TIDE_BOOL, SHAPE(2)), ph(TIDE_FLOAT32, SHAPE(3, -1)),
                                          ph(TIDE_FLOAT32, SHAPE(-1, 4))}), NULL,
                       "condition [2] must be a scalar, have the shape of t [3, ?]");
    ASSERT_INFER_FAILS("Select", ((gin[]){ph(TIDE_BOOL, SCALAR), ph(TIDE_FLOAT32, SHAPE(3)),
                                          ph(TIDE_FLOAT32, SHAPE(4))}), NULL, "must have the same shape");
    /* what inference knows: t's and e's dims merged, the rows from a vector condition */
    ASSERT_INFER("Select", ((gin[]){ph(TIDE_BOOL, SHAPE(5)), ph(TIDE_FLOAT32, SHAPE(-1, 4)),
                                    ph(TIDE_FLOAT32, SHAPE(-1, -1))}), NULL, SHAPE(5, 4));
    ASSERT_INFER("Select", ((gin[]){ph(TIDE_BOOL, SHAPE(-1, 2)), ph(TIDE_FLOAT32, SHAPE(3, -1)),
                                    ph(TIDE_FLOAT32, UNKNOWN)}), NULL, SHAPE(3, 2));
    ASSERT_INFER("Select", ((gin[]){ph(TIDE_BOOL, UNKNOWN), ph(TIDE_INT8, UNKNOWN), ph(TIDE_INT8, SHAPE(-1))}),
                 NULL, SHAPE(-1));
    release_all((tide_tensor *[]){f23, f3, b3, b21, b}, 5);
}

/* Inside a graph, inputs that only this node holds are overwritten in place (bool outputs over bool
 * inputs, Select's output over t or e); the results must not change. The chain:
 *   a = LogicalNot(p)         a owns a fresh buffer
 *   b = LogicalOr(q, a)       q is a scalar: b may reuse a's buffer (input 1)
 *   c = Equal(b, r)           may reuse b's buffer
 *   t = Cast(k -> float32)    a fresh buffer
 *   s = Select(c, t, f)       may reuse t's buffer */
static tide_node *add_node(tide_graph *g, const char *op, const tide_node *const *ins, int n, tide_dtype dst)
{
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){(tide_node *)ins[i], 0});
    if (dst)
        tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", dst);
    tide_error *err = tide_error_new();
    tide_node *node = tide_node_builder_finish(b, err);
    if (!node)
        fprintf(stderr, "add_node(%s): %s\n", op, tide_error_message(err));
    tide_error_free(err);
    return node;
}

static tide_node *add_placeholder(tide_graph *g, tide_dtype dt)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    return tide_node_builder_finish(b, NULL);
}

static void test_in_place_chain(void)
{
    enum { N = 6 };
    static const uint8_t pv[N] = {1, 0, 1, 0, 0, 1}, rv[N] = {1, 1, 0, 0, 1, 0}, qv = 0;
    static const int32_t kv[N] = {10, 20, 30, 40, 50, 60};
    static const float fv[N] = {-1, -2, -3, -4, -5, -6};
    float want[N];
    for (int i = 0; i < N; i++) {
        bool b = qv || !pv[i];
        want[i] = b == (rv[i] != 0) ? (float)kv[i] : fv[i];
    }
    tide_graph *g = tide_graph_new();
    tide_node *p = add_placeholder(g, TIDE_BOOL), *q = add_placeholder(g, TIDE_BOOL), *r = add_placeholder(g, TIDE_BOOL);
    tide_node *k = add_placeholder(g, TIDE_INT32), *f = add_placeholder(g, TIDE_FLOAT32);
    tide_node *a = add_node(g, "LogicalNot", (const tide_node *[]){p}, 1, 0);
    tide_node *b = add_node(g, "LogicalOr", (const tide_node *[]){q, a}, 2, 0);
    tide_node *c = add_node(g, "Equal", (const tide_node *[]){b, r}, 2, 0);
    tide_node *t = add_node(g, "Cast", (const tide_node *[]){k}, 1, TIDE_FLOAT32);
    tide_node *s = add_node(g, "Select", (const tide_node *[]){c, t, f}, 3, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    tide_tensor *in[5] = {bools_of(1, TH_DIMS(N), pv), bools_of(0, NULL, &qv), bools_of(1, TH_DIMS(N), rv),
                          th_i32(1, TH_DIMS(N), kv), th_f32(1, TH_DIMS(N), fv)};
    tide_node *ph[5] = {p, q, r, k, f};
    tide_feed feeds[5];
    for (int i = 0; i < 5; i++)
        feeds[i] = (tide_feed){{ph[i], 0}, in[i]};
    tide_error *err = tide_error_new();
    tide_session *sess = tide_session_new(th_engine(), g, NULL, err);
    tide_output fetch = {s, 0};
    tide_tensor *out = NULL, *expected = th_f32(1, TH_DIMS(N), want);
    for (int run = 0; run < 3; run++) { /* the plan is cached after the first run */
        tide_status st = sess ? tide_session_run(sess, NULL, feeds, 5, &fetch, 1, &out, NULL, 0, NULL, err)
                              : TIDE_INTERNAL;
        CU_ASSERT_EQUAL(st, TIDE_OK);
        TH_ASSERT_CLOSE(out, expected, 0, 0);
        tide_tensor_release(out);
    }
    /* the fed tensors are the caller's: never written */
    CU_ASSERT(memcmp(tide_tensor_data(in[0]), pv, N) == 0 && memcmp(tide_tensor_data(in[2]), rv, N) == 0);
    tide_tensor_release(expected);
    for (int i = 0; i < 5; i++)
        tide_tensor_release(in[i]);
    tide_session_free(sess);
    tide_error_free(err);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_compare_real_dtypes),
        TH_TEST(test_equality_other_dtypes),
        TH_TEST(test_compare_broadcast_shapes),
        TH_TEST(test_compare_large),
        TH_TEST(test_compare_integers_exact),
        TH_TEST(test_compare_half_all_values),
        TH_TEST(test_equal_incompatible_shapes_attr),
        TH_TEST(test_logical_and_or),
        TH_TEST(test_logical_not),
        TH_TEST(test_float_classifications),
        TH_TEST(test_select_dtypes),
        TH_TEST(test_select_broadcast),
        TH_TEST(test_select_scalar_condition),
        TH_TEST(test_select_large),
        TH_TEST(test_select_v1_rows),
        TH_TEST(test_select_v1_errors),
        TH_TEST(test_errors),
        TH_TEST(test_shape_inference),
        TH_TEST(test_kernel_errors_in_session),
        TH_TEST(test_in_place_chain),
        TH_END,
    };
    return th_main("logic", tests);
}
