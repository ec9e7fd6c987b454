/* test_cast.c — CUnit suite of Cast and tide_tensor_cast: every pair of the 14 dtypes, the edge values
 * of each rule (saturation, wrapping, NaN, infinities, -0, float16/bfloat16 rounding), text in both
 * directions with its errors, round trips, large inputs, and graph-time shape inference.
 *
 * Expected values are computed here independently of the engine: integer wrapping by masking in
 * uint64, saturation by comparing truncated long doubles with the limits, float16/bfloat16 rounding by
 * scaling to the target's ulp and rounding half to even in long double, and texts are literals
 * (worked out with Python's correctly rounded formatting). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tide_dtype ALL[] = {TIDE_BOOL,    TIDE_INT8,      TIDE_INT16,      TIDE_INT32,   TIDE_INT64,
                                 TIDE_UINT8,   TIDE_UINT16,    TIDE_FLOAT16,    TIDE_BFLOAT16, TIDE_FLOAT32,
                                 TIDE_FLOAT64, TIDE_COMPLEX64, TIDE_COMPLEX128, TIDE_STRING};

/* ---------------------------------------------------------------- running Cast */

static tide_attrs *cast_attrs(tide_dtype to)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_type(a, "DstT", to);
    return a;
}

/* Cast x to dtype `to` through the op (eager and graph, compared by the harness). */
static tide_tensor *cast(tide_tensor *x, tide_dtype to)
{
    tide_attrs *a = cast_attrs(to);
    tide_tensor *y = th_run1("Cast", &x, 1, a);
    tide_attrs_free(a);
    return y;
}

static void assert_cast_fails_impl(tide_tensor *x, tide_dtype to, const char *needle, int line)
{
    tide_attrs *a = cast_attrs(to);
    th_assert_fails_impl("Cast", &x, 1, a, TIDE_INVALID_ARGUMENT, needle, __FILE__, line);
    tide_attrs_free(a);
}
#define ASSERT_CAST_FAILS(x, to, needle) assert_cast_fails_impl(x, to, needle, __LINE__)

/* ---------------------------------------------------------------- reference conversions */

/* A source value: re holds integers exactly (long double has 64 bits of mantissa); text is what the
 * value prints as in its own dtype. */
typedef struct val {
    long double re;
    double im;
    const char *text;
} val;

static int bits_of(tide_dtype dt)
{
    switch (dt) {
    case TIDE_INT8: case TIDE_UINT8: return 8;
    case TIDE_INT16: case TIDE_UINT16: return 16;
    case TIDE_INT32: return 32;
    default: return 64;
    }
}

static bool is_signed_int(tide_dtype dt)
{
    return dt == TIDE_INT8 || dt == TIDE_INT16 || dt == TIDE_INT32 || dt == TIDE_INT64;
}

/* Integer -> integer: the value modulo 2^bits, read back as two's complement when signed. */
static int64_t ref_wrap(int64_t v, tide_dtype to)
{
    int bits = bits_of(to);
    uint64_t u = (uint64_t)v;
    if (bits < 64)
        u &= (UINT64_C(1) << bits) - 1;
    if (is_signed_int(to) && bits < 64 && u >= (UINT64_C(1) << (bits - 1)))
        return (int64_t)u - (INT64_C(1) << bits);
    return (int64_t)u;
}

/* Float -> integer: NaN 0, truncation toward zero, clamped to the target's limits. */
static int64_t ref_saturate(long double v, tide_dtype to)
{
    if (isnan(v))
        return 0;
    int bits = bits_of(to);
    long double lo = is_signed_int(to) ? -ldexpl(1, bits - 1) : 0;
    long double hi = is_signed_int(to) ? ldexpl(1, bits - 1) - 1 : ldexpl(1, bits) - 1;
    long double t = truncl(v);
    return t <= lo ? (int64_t)lo : t >= hi ? (int64_t)hi : (int64_t)t;
}

/* Rounds x to a binary float with `mant` fraction bits, smallest normal exponent emin and largest
 * finite value max, to nearest with ties to even; beyond the rounding range: inf. */
static float ref_round(long double x, int mant, int emin, long double max)
{
    if (isnan(x) || isinf(x) || x == 0)
        return (float)x;
    long double a = fabsl(x);
    int e;
    frexpl(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    if (e < emin)
        e = emin;
    long double ulp = ldexpl(1, e - mant);
    long double r = nearbyintl(a / ulp) * ulp;
    if (r > max)
        r = INFINITY;
    return (float)(x < 0 ? -r : r);
}

static const long double F16_MAX = 65504, BF16_MAX = 0x1.fep127L;
static uint16_t ref_f16(long double x) { return tide_f32_to_f16(ref_round(x, 10, -14, F16_MAX)); }
static uint16_t ref_bf16(long double x) { return tide_f32_to_bf16(ref_round(x, 7, -126, BF16_MAX)); }

/* Writes element i of a tensor of dtype dt holding the value (re, im) as Cast defines it from a
 * source of dtype from. */
static void ref_store(tide_tensor *t, int64_t i, tide_dtype from, const val *v)
{
    tide_dtype to = tide_tensor_dtype(t);
    void *d = tide_tensor_data(t);
    bool from_int = from == TIDE_BOOL || tide_dtype_is_integer(from);
    long double re = v->re;
    double im = tide_dtype_is_complex(from) ? v->im : 0;
    int64_t iv = 0; /* integer and bool destinations */
    if (to == TIDE_BOOL)
        iv = re != 0 || im != 0;
    else if (tide_dtype_is_integer(to))
        iv = from_int ? ref_wrap((int64_t)re, to) : ref_saturate(re, to);
    switch (to) {
    case TIDE_BOOL: ((uint8_t *)d)[i] = (uint8_t)iv; break;
    case TIDE_INT8: ((int8_t *)d)[i] = (int8_t)iv; break;
    case TIDE_INT16: ((int16_t *)d)[i] = (int16_t)iv; break;
    case TIDE_INT32: ((int32_t *)d)[i] = (int32_t)iv; break;
    case TIDE_INT64: ((int64_t *)d)[i] = iv; break;
    case TIDE_UINT8: ((uint8_t *)d)[i] = (uint8_t)iv; break;
    case TIDE_UINT16: ((uint16_t *)d)[i] = (uint16_t)iv; break;
    case TIDE_FLOAT16: ((uint16_t *)d)[i] = ref_f16(re); break;
    case TIDE_BFLOAT16: ((uint16_t *)d)[i] = ref_bf16(re); break;
    case TIDE_FLOAT32: ((float *)d)[i] = (float)re; break;
    case TIDE_FLOAT64: ((double *)d)[i] = (double)re; break;
    case TIDE_COMPLEX64: ((float *)d)[2 * i] = (float)re, ((float *)d)[2 * i + 1] = (float)im; break;
    case TIDE_COMPLEX128: ((double *)d)[2 * i] = (double)re, ((double *)d)[2 * i + 1] = im; break;
    case TIDE_STRING: tide_tensor_string_set(t, i, v->text, strlen(v->text), NULL); break;
    default: CU_FAIL("ref_store: bad dtype");
    }
}

/* A source tensor of dtype dt holding vals (each exactly representable in dt). */
static tide_tensor *source_of(tide_dtype dt, const val *vals, int n)
{
    tide_tensor *t = th_tensor(dt, 1, TH_DIMS(n), NULL);
    void *d = tide_tensor_data(t);
    for (int i = 0; i < n; i++) {
        long double re = vals[i].re;
        switch (dt) {
        case TIDE_BOOL: ((uint8_t *)d)[i] = re != 0; break;
        case TIDE_INT8: ((int8_t *)d)[i] = (int8_t)re; break;
        case TIDE_INT16: ((int16_t *)d)[i] = (int16_t)re; break;
        case TIDE_INT32: ((int32_t *)d)[i] = (int32_t)re; break;
        case TIDE_INT64: ((int64_t *)d)[i] = (int64_t)re; break;
        case TIDE_UINT8: ((uint8_t *)d)[i] = (uint8_t)re; break;
        case TIDE_UINT16: ((uint16_t *)d)[i] = (uint16_t)re; break;
        case TIDE_FLOAT16: ((uint16_t *)d)[i] = tide_f32_to_f16((float)re); break;
        case TIDE_BFLOAT16: ((uint16_t *)d)[i] = tide_f32_to_bf16((float)re); break;
        case TIDE_FLOAT32: ((float *)d)[i] = (float)re; break;
        case TIDE_FLOAT64: ((double *)d)[i] = (double)re; break;
        case TIDE_COMPLEX64: ((float *)d)[2 * i] = (float)re, ((float *)d)[2 * i + 1] = (float)vals[i].im; break;
        case TIDE_COMPLEX128: ((double *)d)[2 * i] = (double)re, ((double *)d)[2 * i + 1] = vals[i].im; break;
        default: CU_FAIL("source_of: bad dtype");
        }
    }
    return t;
}

/* Element i's real part is a zero of the same sign in both (TH_ASSERT_CLOSE takes -0 == +0). */
static void assert_zero_signs(const tide_tensor *got, const tide_tensor *want, tide_dtype from, tide_dtype to)
{
    if (!got || !(tide_dtype_is_float(to) || tide_dtype_is_complex(to)))
        return;
    for (int64_t i = 0; i < tide_tensor_num_elements(want); i++) {
        double g = tide_tensor_get_f64(got, i), w = tide_tensor_get_f64(want, i);
        if (w == 0 && g == 0 && signbit(g) != signbit(w)) {
            fprintf(stderr, "%s -> %s: element %lld is %s0, expected %s0\n", tide_dtype_name(from),
                    tide_dtype_name(to), (long long)i, signbit(g) ? "-" : "+", signbit(w) ? "-" : "+");
            CU_FAIL("sign of zero");
        }
    }
}

/* ---------------------------------------------------------------- the values of each dtype */

#define V(x, text) {(x), 0, text}
#define C(x, y, text) {(x), (y), text}

static const val BOOLS[] = {V(0, "false"), V(1, "true")};
static const val I8S[] = {V(0, "0"), V(1, "1"), V(-1, "-1"), V(127, "127"), V(-128, "-128"), V(100, "100"),
                          V(-7, "-7")};
static const val I16S[] = {V(0, "0"), V(-1, "-1"), V(32767, "32767"), V(-32768, "-32768"), V(300, "300"),
                           V(-129, "-129"), V(1000, "1000")};
static const val I32S[] = {V(0, "0"), V(-1, "-1"), V(INT32_MAX, "2147483647"), V(INT32_MIN, "-2147483648"),
                           V(70000, "70000"), V(-129, "-129"), V(65541, "65541"), V(16777217, "16777217")};
static const val I64S[] = {V(0, "0"),
                           V(-1, "-1"),
                           V(INT64_MAX, "9223372036854775807"),
                           V(INT64_MIN, "-9223372036854775808"),
                           V(4294967301LL, "4294967301"),
                           V(-1099511627776LL, "-1099511627776"),
                           V(123456789012LL, "123456789012"),
                           V(9007199254740993LL, "9007199254740993"),
                           V(4611721202799476735LL, "4611721202799476735")}; /* 2^62+2^55+2^54-1 */
static const val U8S[] = {V(0, "0"), V(1, "1"), V(255, "255"), V(128, "128"), V(200, "200")};
static const val U16S[] = {V(0, "0"), V(65535, "65535"), V(32768, "32768"), V(300, "300"), V(1, "1")};
static const val F16S[] = {V(0, "0"),         V(-0.0, "-0"),         V(1.5, "1.5"),
                           V(-2.75, "-2.75"), V(65504, "65504"),     V(-65504, "-65504"),
                           V(INFINITY, "inf"), V(-INFINITY, "-inf"), V(NAN, "nan"),
                           V(0x1p-24, "6e-08"), V(0.0999755859375, "0.1"), V(300.5, "300.5"),
                           V(-200.25, "-200.2"), V(2048, "2048"),  V(0.5, "0.5")};
static const val BF16S[] = {V(0, "0"),          V(-0.0, "-0"),           V(1.5, "1.5"),
                            V(-2.75, "-2.75"),  V(3.140625, "3.14"),     V(0x1p100, "1.27e+30"),
                            V(INFINITY, "inf"), V(NAN, "nan"),           V(256, "256"),
                            V(-0x1p-10, "-0.00098"), V(0x1.fep127, "3.39e+38"), V(0.10009765625, "0.1")};
static const val F32S[] = {V(0, "0"),
                           V(-0.0, "-0"),
                           V(0.1f, "0.1"),
                           V(1.0f / 3, "0.33333334"),
                           V(3e9, "3e+09"),
                           V(-3e9, "-3e+09"),
                           V(0x1p-149, "1e-45"),
                           V(FLT_MAX, "3.4028235e+38"),
                           V(INFINITY, "inf"),
                           V(-INFINITY, "-inf"),
                           V(NAN, "nan"),
                           V(2.7f, "2.7"),
                           V(-2.7f, "-2.7"),
                           V(65520, "65520"),
                           V(65519, "65519"),
                           V(16777216, "16777216"),
                           V(100000, "100000"),
                           V(0.99f, "0.99")};
static const val F64S[] = {V(0, "0"),
                           V(-0.0, "-0"),
                           V(0.1, "0.1"),
                           V(1.0 / 3, "0.3333333333333333"),
                           V(1e300, "1e+300"),
                           V(-1e300, "-1e+300"),
                           V(0x1p63, "9.223372036854776e+18"),
                           V(9223372036854774784.0, "9.223372036854775e+18"),
                           V(-0x1p63, "-9.223372036854776e+18"),
                           V(1e-320, "1e-320"),
                           V(INFINITY, "inf"),
                           V(NAN, "nan"),
                           V(2.5, "2.5"),
                           V(-2.5, "-2.5"),
                           V(1e20, "1e+20"),
                           V(4294967296.5, "4294967296.5"),
                           V(100000, "100000"),
                           V(-0.75, "-0.75")};
static const val C64S[] = {C(1.5, -2, "(1.5-2j)"), C(0, 0, "(0+0j)"), C(-0.0, 1, "(-0+1j)"), C(NAN, 0, "(nan+0j)"),
                           C(3e9, 7, "(3e+09+7j)"), C(-2.7f, 0.5, "(-2.7+0.5j)"),
                           C(0, -0.0, "(0-0j)")};
static const val C128S[] = {C(0.1, 0.1, "(0.1+0.1j)"),
                            C(1e20, -0.0, "(1e+20-0j)"),
                            C(INFINITY, -INFINITY, "(inf-infj)"),
                            C(-2.5, 2.5, "(-2.5+2.5j)"),
                            C(0, 0, "(0+0j)"),
                            C(-1e300, 3, "(-1e+300+3j)")};

typedef struct vals {
    tide_dtype dt;
    const val *v;
    int n;
} vals;
#define VALS(dt, a) {dt, a, NELEM(a)}
static const vals SOURCES[] = {
    VALS(TIDE_BOOL, BOOLS),     VALS(TIDE_INT8, I8S),       VALS(TIDE_INT16, I16S),    VALS(TIDE_INT32, I32S),
    VALS(TIDE_INT64, I64S),     VALS(TIDE_UINT8, U8S),      VALS(TIDE_UINT16, U16S),   VALS(TIDE_FLOAT16, F16S),
    VALS(TIDE_BFLOAT16, BF16S), VALS(TIDE_FLOAT32, F32S),   VALS(TIDE_FLOAT64, F64S),  VALS(TIDE_COMPLEX64, C64S),
    VALS(TIDE_COMPLEX128, C128S),
};

/* ---------------------------------------------------------------- every pair */

/* Every numeric source dtype to every dtype (string included), on its edge values. */
static void test_cast_all_pairs(void)
{
    for (int s = 0; s < NELEM(SOURCES); s++) {
        const vals *src = &SOURCES[s];
        tide_tensor *x = source_of(src->dt, src->v, src->n);
        for (int d = 0; d < NELEM(ALL); d++) {
            tide_dtype to = ALL[d];
            tide_tensor *want = th_tensor(to, 1, TH_DIMS(src->n), NULL);
            for (int i = 0; i < src->n; i++)
                ref_store(want, i, src->dt, &src->v[i]);
            tide_tensor *got = cast(x, to);
            TH_ASSERT_CLOSE(got, want, 0, 0);
            if (got && !tide_tensor_equal(got, want, true)) {
                char *g = tide_tensor_format(got, 0, 0), *w = tide_tensor_format(want, 0, 0);
                fprintf(stderr, "  %s -> %s: got %s\n  expected %s\n", tide_dtype_name(src->dt),
                        tide_dtype_name(to), g, w);
                free(g);
                free(w);
            }
            assert_zero_signs(got, want, src->dt, to);
            tide_tensor_release(got);
            tide_tensor_release(want);
        }
        tide_tensor_release(x);
    }
}

/* Casting to the input's own dtype hands the input on, for every dtype; so does tide_tensor_cast. */
static void test_cast_same_dtype_is_no_copy(void)
{
    for (int d = 0; d < NELEM(ALL); d++) {
        tide_tensor *x = th_tensor(ALL[d], 2, TH_DIMS(2, 2), NULL);
        tide_tensor *y = cast(x, ALL[d]);
        CU_ASSERT_PTR_EQUAL(y, x);
        tide_tensor_release(y);
        tide_tensor *z = tide_tensor_cast(x, ALL[d], NULL);
        CU_ASSERT_PTR_EQUAL(z, x);
        tide_tensor_release(z);
        tide_tensor_release(x);
    }
}

/* ---------------------------------------------------------------- rules stated one by one */

static void test_float_to_int_truncates_and_saturates(void)
{
    float f[] = {2.7f, -2.7f, NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 0.99f, -0.99f, 2147483520.0f, -2147483648.0f};
    int32_t want[] = {2, -2, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, 0, 2147483520, INT32_MIN};
    tide_tensor *x = th_f32(1, TH_DIMS(NELEM(f)), f), *w = th_i32(1, TH_DIMS(NELEM(want)), want);
    tide_tensor *y = cast(x, TIDE_INT32);
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(w);
    tide_tensor_release(x);
    double g[] = {9.3e18, -9.3e18, 0x1p63, 9223372036854774784.0, -0x1p63, NAN, -0.5};
    int64_t w64[] = {INT64_MAX, INT64_MIN, INT64_MAX, 9223372036854774784LL, INT64_MIN, 0, 0};
    x = th_f64(1, TH_DIMS(NELEM(g)), g);
    w = th_i64(1, TH_DIMS(NELEM(w64)), w64);
    y = cast(x, TIDE_INT64);
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(w);
    tide_tensor_release(x);
    double h[] = {-1, 255.9, 256, NAN, -0.9, 1e10};
    uint8_t w8[] = {0, 255, 255, 0, 0, 255};
    x = th_f64(1, TH_DIMS(NELEM(h)), h);
    w = th_tensor(TIDE_UINT8, 1, TH_DIMS(NELEM(w8)), w8);
    y = cast(x, TIDE_UINT8);
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(w);
    tide_tensor_release(x);
}

static void test_int_to_int_wraps(void)
{
    int32_t a[] = {300, -129, 128, -1, 65536 + 7, INT32_MIN};
    int8_t w8[] = {44, 127, -128, -1, 7, 0};
    uint16_t w16[] = {300, 65407, 128, 65535, 7, 0};
    tide_tensor *x = th_i32(1, TH_DIMS(6), a);
    tide_tensor *y8 = cast(x, TIDE_INT8), *y16 = cast(x, TIDE_UINT16);
    tide_tensor *e8 = th_tensor(TIDE_INT8, 1, TH_DIMS(6), w8), *e16 = th_tensor(TIDE_UINT16, 1, TH_DIMS(6), w16);
    TH_ASSERT_CLOSE(y8, e8, 0, 0);
    TH_ASSERT_CLOSE(y16, e16, 0, 0);
    tide_tensor_release(y8);
    tide_tensor_release(y16);
    tide_tensor_release(e8);
    tide_tensor_release(e16);
    tide_tensor_release(x);
    int64_t b[] = {(INT64_C(1) << 32) + 5, INT64_MIN, INT64_MAX, -(INT64_C(1) << 31) - 1};
    int32_t w32[] = {5, 0, -1, INT32_MAX};
    x = th_i64(1, TH_DIMS(4), b);
    tide_tensor *y = cast(x, TIDE_INT32), *e = th_i32(1, TH_DIMS(4), w32);
    TH_ASSERT_CLOSE(y, e, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(e);
    tide_tensor_release(x);
    uint16_t u[] = {65535, 32768, 200};
    int16_t wi[] = {-1, -32768, 200};
    x = th_tensor(TIDE_UINT16, 1, TH_DIMS(3), u);
    y = cast(x, TIDE_INT16);
    e = th_tensor(TIDE_INT16, 1, TH_DIMS(3), wi);
    TH_ASSERT_CLOSE(y, e, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(e);
    tide_tensor_release(x);
}

/* float16/bfloat16: limits, subnormals, ties to even, and no double rounding from float64 or int64. */
static void test_half_rounding(void)
{
    struct {
        tide_dtype from, to;
        double x;
        int64_t xi;
        uint16_t want;
    } cases[] = {
        {TIDE_FLOAT32, TIDE_FLOAT16, 65504, 0, 0x7bff},
        {TIDE_FLOAT32, TIDE_FLOAT16, 65519.99609375, 0, 0x7bff},
        {TIDE_FLOAT32, TIDE_FLOAT16, 65520, 0, 0x7c00},
        {TIDE_FLOAT32, TIDE_FLOAT16, -65520, 0, 0xfc00},
        {TIDE_FLOAT64, TIDE_FLOAT16, 0x1p-24, 0, 0x0001},
        {TIDE_FLOAT64, TIDE_FLOAT16, 0x1p-25, 0, 0x0000},            /* tie: to even (zero) */
        {TIDE_FLOAT64, TIDE_FLOAT16, 0x1p-25 + 0x1p-60, 0, 0x0001},  /* just above the tie */
        {TIDE_FLOAT64, TIDE_FLOAT16, -0x1.8p-24, 0, 0x8002},          /* tie: to even (2) */
        {TIDE_FLOAT64, TIDE_FLOAT16, 1 + 0x1p-11 + 0x1p-40, 0, 0x3c01}, /* float32 would make a tie */
        {TIDE_FLOAT64, TIDE_FLOAT16, 1 + 0x3p-11 - 0x1p-40, 0, 0x3c01},
        {TIDE_FLOAT64, TIDE_FLOAT16, 0.1, 0, 0x2e66},
        {TIDE_FLOAT32, TIDE_BFLOAT16, 1.00390625, 0, 0x3f80},        /* tie: to even */
        {TIDE_FLOAT32, TIDE_BFLOAT16, 1.01171875, 0, 0x3f82},        /* tie: to even */
        {TIDE_FLOAT64, TIDE_BFLOAT16, 1 + 0x1p-8 + 0x1p-40, 0, 0x3f81},
        {TIDE_FLOAT64, TIDE_BFLOAT16, 3.141592653589793, 0, 0x4049},
        {TIDE_FLOAT64, TIDE_BFLOAT16, 1e39, 0, 0x7f80},
        {TIDE_FLOAT64, TIDE_BFLOAT16, 0x1.fep127, 0, 0x7f7f},
        {TIDE_INT64, TIDE_BFLOAT16, 0, (INT64_C(1) << 62) + (INT64_C(1) << 55) + (INT64_C(1) << 54) - 1, 0x5e81},
        {TIDE_INT64, TIDE_BFLOAT16, 0, -(INT64_C(1) << 62) - (INT64_C(1) << 55) - (INT64_C(1) << 54), 0xde82},
        {TIDE_INT64, TIDE_FLOAT16, 0, 65519, 0x7bff},
        {TIDE_INT64, TIDE_FLOAT16, 0, 65520, 0x7c00},
        {TIDE_INT32, TIDE_FLOAT16, 0, 2049, 0x6800},                  /* tie: to even (2048) */
        {TIDE_INT32, TIDE_FLOAT16, 0, 2051, 0x6802},                  /* tie: to even (2052) */
    };
    for (int c = 0; c < NELEM(cases); c++) {
        tide_tensor *x = th_tensor(cases[c].from, 0, NULL, NULL);
        void *d = tide_tensor_data(x);
        if (cases[c].from == TIDE_FLOAT32)
            *(float *)d = (float)cases[c].x;
        else if (cases[c].from == TIDE_FLOAT64)
            *(double *)d = cases[c].x;
        else if (cases[c].from == TIDE_INT32)
            *(int32_t *)d = (int32_t)cases[c].xi;
        else
            *(int64_t *)d = cases[c].xi;
        tide_tensor *y = cast(x, cases[c].to);
        uint16_t got = y ? *(uint16_t *)tide_tensor_data(y) : 0xdead;
        if (got != cases[c].want)
            fprintf(stderr, "case %d: %s -> %s gave 0x%04x, expected 0x%04x\n", c, tide_dtype_name(cases[c].from),
                    tide_dtype_name(cases[c].to), got, cases[c].want);
        CU_ASSERT_EQUAL(got, cases[c].want);
        tide_tensor_release(y);
        tide_tensor_release(x);
    }
}

/* ---------------------------------------------------------------- text */

static tide_tensor *text_of(int n, const char *const *s)
{
    tide_tensor *t = th_tensor(TIDE_STRING, 1, TH_DIMS(n), NULL);
    for (int i = 0; i < n; i++)
        tide_tensor_string_set(t, i, s[i], strlen(s[i]), NULL);
    return t;
}

/* Parses every text to dtype `to` and compares with the expected values (as doubles, via a tensor
 * built by the caller). */
static void check_parse(tide_dtype to, int n, const char *const *text, tide_tensor *want)
{
    tide_tensor *x = text_of(n, text);
    tide_tensor *y = cast(x, to);
    TH_ASSERT_CLOSE(y, want, 0, 0);
    assert_zero_signs(y, want, TIDE_STRING, to);
    tide_tensor_release(y);
    tide_tensor_release(want);
    tide_tensor_release(x);
}

static void test_string_to_numbers(void)
{
    const char *ints[] = {"42", "  -7\t", "+5", "2147483647", "-2147483648", "0", "-0", "007"};
    check_parse(TIDE_INT32, 8, ints, th_i32(1, TH_DIMS(8), (int32_t[]){42, -7, 5, INT32_MAX, INT32_MIN, 0, 0, 7}));
    const char *i64[] = {"9223372036854775807", "-9223372036854775808", "9007199254740993"};
    check_parse(TIDE_INT64, 3, i64, th_i64(1, TH_DIMS(3), (int64_t[]){INT64_MAX, INT64_MIN, 9007199254740993LL}));
    const char *i8[] = {"-128", "127", "-0"};
    check_parse(TIDE_INT8, 3, i8, th_tensor(TIDE_INT8, 1, TH_DIMS(3), (int8_t[]){-128, 127, 0}));
    const char *u8[] = {"255", "0", "+1"};
    check_parse(TIDE_UINT8, 3, u8, th_tensor(TIDE_UINT8, 1, TH_DIMS(3), (uint8_t[]){255, 0, 1}));
    const char *u16[] = {"65535", "1000"};
    check_parse(TIDE_UINT16, 2, u16, th_tensor(TIDE_UINT16, 1, TH_DIMS(2), (uint16_t[]){65535, 1000}));
    const char *i16[] = {"-32768", "32767"};
    check_parse(TIDE_INT16, 2, i16, th_tensor(TIDE_INT16, 1, TH_DIMS(2), (int16_t[]){-32768, 32767}));
    const char *f32[] = {"0.1", "1e39", "-inf", "nan", "1e-50", " 2.5 ", "0x1p-2", "-0", "INF", "3.4028235e38"};
    check_parse(TIDE_FLOAT32, 10, f32,
                th_f32(1, TH_DIMS(10), (float[]){0.1f, INFINITY, -INFINITY, NAN, 0, 2.5f, 0.25f, -0.0f, INFINITY, FLT_MAX}));
    const char *f64[] = {"0.1", "1e308", "1e309", "4.9e-324", "-0", "1E5", ".5", "5."};
    check_parse(TIDE_FLOAT64, 8, f64,
                th_f64(1, TH_DIMS(8), (double[]){0.1, 1e308, INFINITY, 4.9e-324, -0.0, 1e5, 0.5, 5}));
    const char *f16[] = {"65504", "65519", "65520", "0.1", "1e-8", "-0", "6e-08", "1e10"};
    tide_tensor *w16 = th_tensor(TIDE_FLOAT16, 1, TH_DIMS(8),
                                 (uint16_t[]){0x7bff, 0x7bff, 0x7c00, 0x2e66, 0x0000, 0x8000, 0x0001, 0x7c00});
    check_parse(TIDE_FLOAT16, 8, f16, w16);
    const char *bf[] = {"1.00390625", "1.01171875", "3.14159", "-1e39"};
    check_parse(TIDE_BFLOAT16, 4, bf, th_tensor(TIDE_BFLOAT16, 1, TH_DIMS(4), (uint16_t[]){0x3f80, 0x3f82, 0x4049, 0xff80}));
    const char *bools[] = {"true", "FALSE", "True", "1", "0", " true ", "false"};
    check_parse(TIDE_BOOL, 7, bools, th_tensor(TIDE_BOOL, 1, TH_DIMS(7), (uint8_t[]){1, 0, 1, 1, 0, 1, 0}));
    const char *c64[] = {"(1.5-2j)", "3", "-2.5j", "(1+0j)", "1+2j", "(nan+infj)", "(4)", " (0.1-0.1j) "};
    check_parse(TIDE_COMPLEX64, 8, c64,
                th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(8),
                          (float[]){1.5f, -2, 3, 0, 0, -2.5f, 1, 0, 1, 2, NAN, INFINITY, 4, 0, 0.1f, -0.1f}));
    const char *c128[] = {"(0.1+0.3333333333333333j)", "-1e300-1e-300j"};
    check_parse(TIDE_COMPLEX128, 2, c128,
                th_tensor(TIDE_COMPLEX128, 1, TH_DIMS(2), (double[]){0.1, 0.3333333333333333, -1e300, -1e-300}));
}

/* Bad text: INVALID_ARGUMENT naming the element's index, its text, the dtype and the reason. */
static void test_string_errors(void)
{
    struct {
        const char *text;
        tide_dtype to;
        const char *needle;
    } cases[] = {
        {"abc", TIDE_INT32, "cannot cast string element 1 (\"abc\") to int32: not an integer"},
        {"", TIDE_FLOAT32, "element 1 (\"\") to float32: not a number"},
        {"   ", TIDE_FLOAT64, "to float64: not a number"},
        {"12abc", TIDE_INT64, "(\"12abc\") to int64: not an integer"},
        {"1.5", TIDE_INT32, "to int32: not an integer"},
        {"0x10", TIDE_INT32, "not an integer"},
        {"1 2", TIDE_INT16, "not an integer"},
        {"2147483648", TIDE_INT32, "to int32: out of range"},
        {"128", TIDE_INT8, "to int8: out of range"},
        {"-1", TIDE_UINT8, "to uint8: out of range"},
        {"65536", TIDE_UINT16, "to uint16: out of range"},
        {"9223372036854775808", TIDE_INT64, "out of range"},
        {"-9223372036854775809", TIDE_INT64, "out of range"},
        {"1.5.2", TIDE_FLOAT32, "not a number"},
        {"e5", TIDE_FLOAT64, "not a number"},
        {"--1", TIDE_FLOAT64, "not a number"},
        {"1e5x", TIDE_FLOAT16, "to float16: not a number"},
        {"pi", TIDE_BFLOAT16, "to bfloat16: not a number"},
        {"yes", TIDE_BOOL, "to bool: expected true, false, 1 or 0"},
        {"2", TIDE_BOOL, "expected true, false, 1 or 0"},
        {"", TIDE_BOOL, "expected true, false, 1 or 0"},
        {"1+2", TIDE_COMPLEX64, "to complex64: not a complex number"},
        {"(1+2j", TIDE_COMPLEX128, "not a complex number"},
        {"j", TIDE_COMPLEX64, "not a complex number"},
        {"1+2jj", TIDE_COMPLEX128, "not a complex number"},
    };
    for (int c = 0; c < NELEM(cases); c++) {
        const char *text[] = {"1", cases[c].text, "2"};
        tide_tensor *x = text_of(3, text);
        ASSERT_CAST_FAILS(x, cases[c].to, cases[c].needle);
        tide_tensor_release(x);
    }
    /* an embedded NUL ends the number early: the whole string is not a number */
    tide_tensor *x = th_tensor(TIDE_STRING, 0, NULL, NULL);
    tide_tensor_string_set(x, 0, "1\0" "5", 3, NULL);
    ASSERT_CAST_FAILS(x, TIDE_FLOAT64, "element 0");
    ASSERT_CAST_FAILS(x, TIDE_INT32, "(\"1\") to int32: contains a NUL byte");
    tide_tensor_release(x);
    /* long text is cut in the message */
    char longtext[201];
    memset(longtext, 'z', 200);
    longtext[200] = 0;
    const char *lt[] = {longtext};
    x = text_of(1, lt);
    ASSERT_CAST_FAILS(x, TIDE_FLOAT32, "zzzz...\") to float32");
    tide_tensor_release(x);
    /* long but valid numbers (more than a small buffer) still parse */
    char digits[301];
    memset(digits, '0', 300);
    digits[299] = '7';
    digits[300] = 0;
    const char *ld[] = {digits};
    x = text_of(1, ld);
    tide_tensor *y = cast(x, TIDE_INT32), *w = th_i32(0, NULL, (int32_t[]){7});
    TH_ASSERT_SHAPE(y, 1, TH_DIMS(1));
    CU_ASSERT(y && *(int32_t *)tide_tensor_data(y) == 7);
    tide_tensor_release(y);
    tide_tensor_release(w);
    tide_tensor_release(x);
}

/* Random bit patterns of every float format print and parse back to the same bits; every float16 and
 * bfloat16 value does; integers print exactly. */
static void test_string_round_trips(void)
{
    int n = 20000;
    tide_tensor *f = th_tensor(TIDE_FLOAT32, 1, TH_DIMS(n), NULL), *d = th_tensor(TIDE_FLOAT64, 1, TH_DIMS(n), NULL);
    for (int i = 0; i < n; i++) {
        uint32_t b = (uint32_t)th_rand(0, 4294967296.0);
        if ((b & 0x7f800000u) == 0x7f800000u)
            b &= 0xff7fffffu; /* no NaN: compared bit for bit below */
        memcpy((char *)tide_tensor_data(f) + 4 * i, &b, 4);
        uint64_t c = (uint64_t)th_rand(0, 4294967296.0) << 32 | (uint64_t)th_rand(0, 4294967296.0);
        if ((c & 0x7ff0000000000000u) == 0x7ff0000000000000u)
            c &= 0xffefffffffffffffu;
        memcpy((char *)tide_tensor_data(d) + 8 * i, &c, 8);
    }
    tide_tensor *h = th_tensor(TIDE_FLOAT16, 1, TH_DIMS(65536), NULL), *bh = th_tensor(TIDE_BFLOAT16, 1, TH_DIMS(65536), NULL);
    for (int i = 0; i < 65536; i++) {
        bool nan16 = (i & 0x7c00) == 0x7c00 && (i & 0x3ff), nanb = (i & 0x7f80) == 0x7f80 && (i & 0x7f);
        ((uint16_t *)tide_tensor_data(h))[i] = nan16 ? 0x7c00 : (uint16_t)i;
        ((uint16_t *)tide_tensor_data(bh))[i] = nanb ? 0x7f80 : (uint16_t)i;
    }
    tide_tensor *ints = th_i64(1, TH_DIMS(6), (int64_t[]){INT64_MIN, INT64_MAX, 0, -1, 1234567890123456789LL, -42});
    tide_tensor *all[] = {f, d, h, bh, ints};
    for (int k = 0; k < NELEM(all); k++) {
        tide_tensor *s = cast(all[k], TIDE_STRING);
        tide_tensor *back = s ? cast(s, tide_tensor_dtype(all[k])) : NULL;
        bool same = back && memcmp(tide_tensor_data(back), tide_tensor_data(all[k]), tide_tensor_byte_size(all[k])) == 0;
        if (!same)
            fprintf(stderr, "%s does not survive a round trip through text\n", tide_dtype_name(tide_tensor_dtype(all[k])));
        CU_ASSERT(same);
        /* no text is longer than the most digits the format needs */
        size_t longest = 0, len;
        for (int64_t i = 0; s && i < tide_tensor_num_elements(s); i++)
            if (tide_tensor_string_get(s, i, &len) && len > longest)
                longest = len;
        CU_ASSERT(longest <= 24);
        tide_tensor_release(back);
        tide_tensor_release(s);
        tide_tensor_release(all[k]);
    }
    /* NaN prints as "nan" whatever its sign or payload */
    tide_tensor *nans = th_tensor(TIDE_FLOAT16, 1, TH_DIMS(3), (uint16_t[]){0x7e00, 0xfe00, 0x7c01});
    tide_tensor *ns = cast(nans, TIDE_STRING), *nw = text_of(3, (const char *[]){"nan", "nan", "nan"});
    TH_ASSERT_CLOSE(ns, nw, 0, 0);
    tide_tensor_release(ns);
    tide_tensor_release(nw);
    tide_tensor_release(nans);
}

/* ---------------------------------------------------------------- sizes and the C API */

/* Large inputs against reference loops; values span the int32 range and beyond. */
static void test_cast_large(void)
{
    int64_t n = 300000;
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 2, TH_DIMS(1000, 300), NULL);
    float *xf = tide_tensor_data(x);
    for (int64_t i = 0; i < n; i++)
        xf[i] = (float)(i % 3 ? th_rand(-3e9, 3e9) : th_rand(-70000, 70000));
    tide_tensor *yi = cast(x, TIDE_INT32), *yd = cast(x, TIDE_FLOAT64), *yh = cast(x, TIDE_FLOAT16);
    tide_tensor *yu = cast(x, TIDE_UINT16);
    bool ok = yi && yd && yh && yu;
    for (int64_t i = 0; ok && i < n; i++) {
        ok = ((int32_t *)tide_tensor_data(yi))[i] == ref_saturate(xf[i], TIDE_INT32) &&
             ((double *)tide_tensor_data(yd))[i] == (double)xf[i] &&
             ((uint16_t *)tide_tensor_data(yh))[i] == ref_f16(xf[i]) &&
             ((uint16_t *)tide_tensor_data(yu))[i] == ref_saturate(xf[i], TIDE_UINT16);
        if (!ok)
            fprintf(stderr, "large cast: element %lld (%.9g) wrong\n", (long long)i, (double)xf[i]);
    }
    CU_ASSERT(ok);
    TH_ASSERT_SHAPE(yi, 2, TH_DIMS(1000, 300));
    tide_tensor *back = yi ? cast(yi, TIDE_FLOAT32) : NULL;
    for (int64_t i = 0; back && ok && i < n; i++)
        ok = ((float *)tide_tensor_data(back))[i] == (float)((int32_t *)tide_tensor_data(yi))[i];
    CU_ASSERT(ok);
    tide_tensor_release(back);
    tide_tensor_release(yi);
    tide_tensor_release(yd);
    tide_tensor_release(yh);
    tide_tensor_release(yu);
    tide_tensor_release(x);
}

/* Empty tensors of every pair keep their shape; rank-3 shapes are kept. */
static void test_cast_empty_and_shapes(void)
{
    for (int s = 0; s < NELEM(ALL); s++) {
        tide_tensor *x = th_tensor(ALL[s], 2, TH_DIMS(0, 3), NULL);
        for (int d = 0; d < NELEM(ALL); d++) {
            tide_tensor *y = cast(x, ALL[d]);
            TH_ASSERT_SHAPE(y, 2, TH_DIMS(0, 3));
            CU_ASSERT(y && tide_tensor_dtype(y) == ALL[d]);
            tide_tensor_release(y);
        }
        tide_tensor_release(x);
    }
    tide_tensor *x = th_i32(3, TH_DIMS(2, 1, 3), (int32_t[]){1, 2, 3, 4, 5, 6});
    tide_tensor *y = cast(x, TIDE_STRING);
    TH_ASSERT_SHAPE(y, 3, TH_DIMS(2, 1, 3));
    tide_tensor_release(y);
    tide_tensor_release(x);
}

static void test_tensor_cast_api(void)
{
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_tensor_cast(NULL, TIDE_FLOAT32, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    tide_tensor *x = th_f32(1, TH_DIMS(2), (float[]){1.5f, -2});
    CU_ASSERT_PTR_NULL(tide_tensor_cast(x, TIDE_INVALID_DTYPE, err));
    CU_ASSERT(strstr(tide_error_message(err), "cannot cast a float32 tensor to invalid dtype 0") != NULL);
    CU_ASSERT_PTR_NULL(tide_tensor_cast(x, (tide_dtype)99, err));
    CU_ASSERT(strstr(tide_error_message(err), "invalid dtype 99") != NULL);
    /* a new tensor, exclusively the caller's */
    tide_tensor *y = tide_tensor_cast(x, TIDE_INT8, err);
    CU_ASSERT(y && tide_tensor_is_exclusive(y) && ((int8_t *)tide_tensor_data(y))[1] == -2);
    tide_tensor_release(y);
    /* errors come with the message, and no tensor */
    tide_tensor *s = text_of(2, (const char *[]){"1", "x"});
    tide_error_clear(err);
    CU_ASSERT_PTR_NULL(tide_tensor_cast(s, TIDE_INT32, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tide_error_message(err), "element 1 (\"x\")") != NULL);
    CU_ASSERT_PTR_NULL(tide_tensor_cast(s, TIDE_INT32, NULL));
    tide_tensor_release(s);
    tide_tensor_release(x);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- the op: attrs, errors, graphs */

static void test_cast_op_errors(void)
{
    tide_tensor *x = th_i32(1, TH_DIMS(2), (int32_t[]){1, 2});
    TH_ASSERT_FAILS("Cast", &x, 1, NULL, TIDE_INVALID_ARGUMENT, "missing attr 'DstT'");
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "DstT", 3);
    TH_ASSERT_FAILS("Cast", &x, 1, a, TIDE_INVALID_ARGUMENT, "attr 'DstT' must be a type");
    tide_attrs_set_type(a, "DstT", TIDE_FLOAT32);
    tide_attrs_set_int(a, "Truncate", 1);
    TH_ASSERT_FAILS("Cast", &x, 1, a, TIDE_INVALID_ARGUMENT, "attr 'Truncate' must be a bool");
    tide_attrs_set_bool(a, "Truncate", true); /* accepted and ignored */
    tide_tensor *y = th_run1("Cast", &x, 1, a), *w = th_f32(1, TH_DIMS(2), (float[]){1, 2});
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(w);
    tide_attrs_set_type(a, "SrcT", TIDE_FLOAT64);
    TH_ASSERT_FAILS("Cast", &x, 1, a, TIDE_INVALID_ARGUMENT, "has dtype int32, expected float64");
    tide_attrs_free(a);
    a = cast_attrs(TIDE_FLOAT32);
    TH_ASSERT_FAILS("Cast", ((tide_tensor *[]){x, x}), 2, a, TIDE_INVALID_ARGUMENT, "expects 1 input");
    tide_attrs_free(a);
    tide_tensor_release(x);
}

/* Builds Placeholder(dtype, shape) -> Cast(DstT) in g; NULL with err set on failure. */
static tide_node *build_cast(tide_graph *g, tide_dtype from, tide_shape shape, tide_dtype to, tide_node **ph,
                             tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", from);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &shape);
    *ph = tide_node_builder_finish(b, err);
    if (!*ph)
        return NULL;
    b = tide_node_builder_new(g, "Cast", "cast");
    tide_node_builder_add_input(b, (tide_output){*ph, 0});
    tide_attrs_set_type(tide_node_builder_attrs(b), "DstT", to);
    return tide_node_builder_finish(b, err);
}

static void test_cast_in_graphs(void)
{
    tide_error *err = tide_error_new();
    int64_t dims[] = {-1, 3};
    tide_shape shapes[] = {tide_shape_make(2, dims), tide_shape_unknown(), tide_shape_scalar()};
    for (int i = 0; i < NELEM(shapes); i++) {
        tide_graph *g = tide_graph_new();
        tide_node *ph;
        tide_node *n = build_cast(g, TIDE_FLOAT32, shapes[i], TIDE_STRING, &ph, err);
        CU_ASSERT_PTR_NOT_NULL(n);
        if (n) {
            tide_shape got = tide_node_output_shape(n, 0);
            CU_ASSERT(tide_shape_equal(&got, &shapes[i]));
            CU_ASSERT_EQUAL(tide_node_output_dtype(n, 0), TIDE_STRING);
        }
        tide_graph_free(g);
    }
    /* a parse error in a session names the node */
    tide_graph *g = tide_graph_new();
    tide_node *ph;
    tide_node *n = build_cast(g, TIDE_STRING, tide_shape_unknown(), TIDE_INT32, &ph, err);
    tide_tensor *x = text_of(2, (const char *[]){"7", "seven"}), *out = NULL;
    tide_session *s = n ? tide_session_new(th_engine(), g, NULL, err) : NULL;
    tide_feed feed = {{ph, 0}, x};
    tide_output fetch = {n, 0};
    tide_status st = s ? tide_session_run(s, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, err) : TIDE_INTERNAL;
    CU_ASSERT_EQUAL(st, TIDE_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tide_error_message(err), "node 'cast' (Cast)") != NULL);
    CU_ASSERT(strstr(tide_error_message(err), "element 1 (\"seven\") to int32") != NULL);
    if (st == TIDE_INVALID_ARGUMENT && !strstr(tide_error_message(err), "seven"))
        fprintf(stderr, "message: %s\n", tide_error_message(err));
    tide_tensor_release(out);
    tide_session_free(s);
    tide_graph_free(g);
    tide_tensor_release(x);
    tide_error_free(err);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_cast_all_pairs),
        TH_TEST(test_cast_same_dtype_is_no_copy),
        TH_TEST(test_float_to_int_truncates_and_saturates),
        TH_TEST(test_int_to_int_wraps),
        TH_TEST(test_half_rounding),
        TH_TEST(test_string_to_numbers),
        TH_TEST(test_string_errors),
        TH_TEST(test_string_round_trips),
        TH_TEST(test_cast_large),
        TH_TEST(test_cast_empty_and_shapes),
        TH_TEST(test_tensor_cast_api),
        TH_TEST(test_cast_op_errors),
        TH_TEST(test_cast_in_graphs),
        TH_END,
    };
    return th_main("cast", tests);
}
