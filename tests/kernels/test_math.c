/* test_math.c — the element-wise math family: Add, AddV2, Sub, Mul, Div, RealDiv, FloorDiv,
 * TruncateDiv, Mod, TruncateMod, FloorMod, Pow, Maximum, SquaredDifference, DivNoNan, the gradient
 * ops SqrtGrad, RsqrtGrad, ReciprocalGrad, InvGrad,
 * Minimum, the unary ops and AddN. Expected values are computed here, independently of the kernels:
 * floats by reference loops in double (NumPy broadcasting written out index by index), integers in
 * 128-bit arithmetic reduced to the dtype's width, plus literal tables for the documented integer
 * behaviour (rounding of division, sign of the modulo, wrapping) and the errors a user can cause.
 * th_run also runs every op through a graph session and checks it agrees; the last tests build
 * graphs themselves: shape inference on partial shapes, kernel errors, outputs written in place. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef __int128 i128;

/* ---------------------------------------------------------------- tensor helpers */

static bool is_half(tide_dtype dt) { return dt == TIDE_FLOAT16 || dt == TIDE_BFLOAT16; }

static int64_t count(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

/* A tensor of a float dtype (float16/bfloat16/float32/float64) holding v rounded to it. */
static tide_tensor *make_f(tide_dtype dt, int rank, const int64_t *dims, const double *v)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    void *d = tide_tensor_data(t);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        switch (dt) {
        case TIDE_FLOAT32: ((float *)d)[i] = (float)v[i]; break;
        case TIDE_FLOAT64: ((double *)d)[i] = v[i]; break;
        case TIDE_FLOAT16: ((uint16_t *)d)[i] = tide_f32_to_f16((float)v[i]); break;
        case TIDE_BFLOAT16: ((uint16_t *)d)[i] = tide_f32_to_bf16((float)v[i]); break;
        default: CU_FAIL("make_f: not a float dtype"); break;
        }
    }
    return t;
}

/* A tensor of an integer dtype holding v (each must fit). */
static tide_tensor *make_i(tide_dtype dt, int rank, const int64_t *dims, const int64_t *v)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    void *d = tide_tensor_data(t);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        switch (dt) {
        case TIDE_INT8: ((int8_t *)d)[i] = (int8_t)v[i]; break;
        case TIDE_INT16: ((int16_t *)d)[i] = (int16_t)v[i]; break;
        case TIDE_INT32: ((int32_t *)d)[i] = (int32_t)v[i]; break;
        case TIDE_INT64: ((int64_t *)d)[i] = v[i]; break;
        case TIDE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v[i]; break;
        case TIDE_UINT16: ((uint16_t *)d)[i] = (uint16_t)v[i]; break;
        default: CU_FAIL("make_i: not an integer dtype"); break;
        }
    }
    return t;
}

static int64_t get_i(const tide_tensor *t, int64_t i)
{
    const void *d = tide_tensor_data(t);
    switch (tide_tensor_dtype(t)) {
    case TIDE_INT8: return ((const int8_t *)d)[i];
    case TIDE_INT16: return ((const int16_t *)d)[i];
    case TIDE_INT32: return ((const int32_t *)d)[i];
    case TIDE_INT64: return ((const int64_t *)d)[i];
    case TIDE_UINT8: return ((const uint8_t *)d)[i];
    case TIDE_UINT16: return ((const uint16_t *)d)[i];
    default: return 0;
    }
}

static bool is_signed(tide_dtype dt) { return dt != TIDE_UINT8 && dt != TIDE_UINT16; }

/* v reduced to the dtype's width (two's complement): the defined result of wrapping arithmetic. */
static int64_t wrap(i128 v, tide_dtype dt)
{
    int bits = (int)tide_dtype_size(dt) * 8;
    unsigned __int128 m = ((unsigned __int128)1 << bits) - 1, u = (unsigned __int128)v & m;
    if (is_signed(dt) && (u >> (bits - 1)))
        return (int64_t)((i128)u - ((i128)1 << bits));
    return (int64_t)u;
}

/* A random integer of the dtype: a third small, the rest over the whole range. */
static int64_t rand_int(tide_dtype dt)
{
    if (th_rand(0, 1) < 0.33)
        return wrap((i128)floor(th_rand(-20, 20)), dt);
    uint64_t bits = ((uint64_t)th_rand(0, 4294967296.0) << 32) ^ (uint64_t)th_rand(0, 4294967296.0);
    return wrap((i128)bits, dt);
}

static tide_tensor *rand_f(tide_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    int64_t n = count(rank, dims);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = th_rand(lo, hi);
    tide_tensor *t = make_f(dt, rank, dims, v);
    free(v);
    return t;
}

/* The same test as TH_ASSERT_CLOSE for real dtypes, without asserting: to print context. */
static bool close_enough(const tide_tensor *got, const tide_tensor *want, double rtol, double atol)
{
    if (!got || !tide_shape_equal(tide_tensor_shape(got), tide_tensor_shape(want)))
        return false;
    for (int64_t i = 0; i < tide_tensor_num_elements(got); i++) {
        double x = tide_tensor_get_f64(got, i), y = tide_tensor_get_f64(want, i);
        if (!(x == y || (isnan(x) && isnan(y)) || fabs(x - y) <= atol + rtol * fabs(y)))
            return false;
    }
    return true;
}

/* Asserts exact equality (integers, including int64 values a double cannot hold). */
#define ASSERT_EXACT(got, want)                                                             \
    do {                                                                                    \
        TH_ASSERT_CLOSE(got, want, 0, 0);                                                   \
        CU_ASSERT(got && tide_tensor_equal(got, want, true));                               \
    } while (0)

static tide_tensor *run2(const char *op, tide_tensor *x, tide_tensor *y)
{
    tide_tensor *in[2] = {x, y};
    return th_run1(op, in, 2, NULL);
}

static tide_tensor *run1(const char *op, tide_tensor *x) { return th_run1(op, &x, 1, NULL); }

static void release_all(tide_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        tide_tensor_release(ts[i]);
}

/* ---------------------------------------------------------------- broadcasting reference */

/* NumPy's rule written out: the output shape and, for output element i, the x and y elements. */
typedef struct bshape {
    int rank;
    int64_t dims[TIDE_MAX_RANK];
    int64_t xstride[TIDE_MAX_RANK], ystride[TIDE_MAX_RANK]; /* 0 along broadcast dims */
} bshape;

static bshape broadcast(const tide_shape *x, const tide_shape *y)
{
    bshape b = {0};
    b.rank = x->rank > y->rank ? x->rank : y->rank;
    int64_t sx = 1, sy = 1;
    for (int i = b.rank - 1; i >= 0; i--) {
        int ix = i - (b.rank - x->rank), iy = i - (b.rank - y->rank);
        int64_t dx = ix >= 0 ? x->dims[ix] : 1, dy = iy >= 0 ? y->dims[iy] : 1;
        b.dims[i] = dx == 1 ? dy : dx;
        b.xstride[i] = dx == 1 ? 0 : sx;
        b.ystride[i] = dy == 1 ? 0 : sy;
        sx *= dx;
        sy *= dy;
    }
    return b;
}

static void element_of(const bshape *b, int64_t i, int64_t *ix, int64_t *iy)
{
    *ix = *iy = 0;
    for (int d = b->rank - 1; d >= 0; d--) {
        int64_t c = i % b->dims[d];
        i /= b->dims[d];
        *ix += c * b->xstride[d];
        *iy += c * b->ystride[d];
    }
}

/* Float references: f32 says the op runs in float32 (only FloorDiv's rounding depends on it). */
typedef double (*fref2)(double x, double y, bool f32);
static double r_add(double x, double y, bool f) { (void)f; return x + y; }
static double r_sub(double x, double y, bool f) { (void)f; return x - y; }
static double r_mul(double x, double y, bool f) { (void)f; return x * y; }
static double r_div(double x, double y, bool f) { (void)f; return x / y; }
static double r_max(double x, double y, bool f) { (void)f; return x > y ? x : y; }
static double r_min(double x, double y, bool f) { (void)f; return x < y ? x : y; }
static double r_pow(double x, double y, bool f) { (void)f; return pow(x, y); }
static double r_floordiv(double x, double y, bool f) { return floor(f ? (double)(float)(x / y) : x / y); }
static double r_floormod(double x, double y, bool f)
{
    (void)f;
    double r = fmod(x, y); /* exact */
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
static double r_truncmod(double x, double y, bool f) { (void)f; return fmod(x, y); }
static double r_truncdiv(double x, double y, bool f) { return trunc(f ? (double)(float)(x / y) : x / y); }
static double r_sqdiff(double x, double y, bool f)
{
    if (!f)
        return (x - y) * (x - y);
    float d = (float)x - (float)y; /* float32 rounds the difference, then the square */
    return (double)(d * d);
}

static tide_tensor *ref_binary_f(fref2 f, const tide_tensor *x, const tide_tensor *y)
{
    bshape b = broadcast(tide_tensor_shape(x), tide_tensor_shape(y));
    int64_t n = count(b.rank, b.dims);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    bool f32 = tide_tensor_dtype(x) == TIDE_FLOAT32 || is_half(tide_tensor_dtype(x));
    for (int64_t i = 0; i < n; i++) {
        int64_t ix, iy;
        element_of(&b, i, &ix, &iy);
        v[i] = f(tide_tensor_get_f64(x, ix), tide_tensor_get_f64(y, iy), f32);
    }
    tide_tensor *t = make_f(tide_tensor_dtype(x), b.rank, b.dims, v);
    free(v);
    return t;
}

/* Integer references, in 128 bits (no overflow), wrapped to the dtype afterwards. */
typedef i128 (*iref2)(i128 x, i128 y);
static i128 q_add(i128 x, i128 y) { return x + y; }
static i128 q_sub(i128 x, i128 y) { return x - y; }
static i128 q_mul(i128 x, i128 y) { return x * y; }
static i128 q_div(i128 x, i128 y) { return x / y; }
static i128 q_max(i128 x, i128 y) { return x > y ? x : y; }
static i128 q_min(i128 x, i128 y) { return x < y ? x : y; }
static i128 q_floordiv(i128 x, i128 y)
{
    i128 q = x / y;
    return q * y != x && ((x < 0) != (y < 0)) ? q - 1 : q;
}
static i128 q_mod(i128 x, i128 y) { return x - q_floordiv(x, y) * y; }
static i128 q_truncmod(i128 x, i128 y) { return x - (x / y) * y; } /* C's %, in 128 bits */
static i128 q_sqdiff(i128 x, i128 y) /* mod 2^128 (the square of an int64 difference may not fit) */
{
    unsigned __int128 d = (unsigned __int128)(x - y);
    return (i128)(d * d);
}
static i128 q_pow(i128 x, i128 y) /* x^y by repeated multiplication, kept to 64 bits */
{
    i128 r = 1;
    for (i128 k = 0; k < y; k++)
        r = (i128)wrap(r * x, TIDE_INT64);
    return r;
}

static tide_tensor *ref_binary_i(iref2 f, const tide_tensor *x, const tide_tensor *y)
{
    bshape b = broadcast(tide_tensor_shape(x), tide_tensor_shape(y));
    int64_t n = count(b.rank, b.dims);
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    tide_dtype dt = tide_tensor_dtype(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t ix, iy;
        element_of(&b, i, &ix, &iy);
        v[i] = wrap(f(get_i(x, ix), get_i(y, iy)), dt);
    }
    tide_tensor *t = make_i(dt, b.rank, b.dims, v);
    free(v);
    return t;
}

/* ---------------------------------------------------------------- binary ops: floats */

typedef struct shape_pair {
    int rx;
    int64_t dx[4];
    int ry;
    int64_t dy[4];
} shape_pair;

/* Scalars, same shapes, scalar with tensor, size-1 dims, rank differences, empty tensors. */
static const shape_pair PAIRS[] = {
    {0, {0}, 0, {0}},          {1, {7}, 0, {0}},          {0, {0}, 1, {7}},
    {2, {3, 5}, 2, {3, 5}},    {2, {3, 5}, 1, {5}},       {1, {5}, 2, {3, 5}},
    {2, {3, 1}, 2, {1, 4}},    {3, {2, 1, 3}, 2, {4, 1}}, {2, {1, 1}, 0, {0}},
    {1, {1}, 3, {2, 1, 3}},    {3, {2, 3, 4}, 3, {2, 1, 4}}, {4, {2, 1, 3, 1}, 3, {4, 1, 2}},
    {3, {2, 3, 4}, 3, {1, 3, 1}}, {2, {4, 1}, 2, {4, 1}}, {3, {2, 0, 3}, 1, {3}},
    {1, {0}, 0, {0}},          {2, {1, 0}, 2, {5, 1}},    {2, {1, 6}, 2, {6, 1}},
};
#define NUM_PAIRS ((int)(sizeof PAIRS / sizeof PAIRS[0]))

typedef struct fcase {
    const char *op;
    fref2 ref;
    double lo, hi;   /* operand range */
    bool y_away;     /* y is +-[0.5, hi]: no division by (nearly) zero */
    double rtol32;   /* tolerance in float32 (float64 uses 1e-14) */
} fcase;

static const fcase FCASES[] = {
    {"Add", r_add, -100, 100, false, 2e-7},        {"Sub", r_sub, -100, 100, false, 2e-7},
    {"Mul", r_mul, -100, 100, false, 2e-7},        {"Div", r_div, -100, 100, true, 2e-7},
    {"Maximum", r_max, -100, 100, false, 0},       {"Minimum", r_min, -100, 100, false, 0},
    {"Pow", r_pow, 0.1, 3, false, 1e-6},           {"FloorDiv", r_floordiv, -100, 100, true, 0},
    {"FloorMod", r_floormod, -100, 100, true, 2e-7}, {"Mod", r_truncmod, -100, 100, true, 0},
    {"TruncateMod", r_truncmod, -100, 100, true, 0}, {"TruncateDiv", r_truncdiv, -100, 100, true, 0},
    {"RealDiv", r_div, -100, 100, true, 2e-7},     {"AddV2", r_add, -100, 100, false, 2e-7},
    {"SquaredDifference", r_sqdiff, -100, 100, false, 2e-7},
    {"DivNoNan", r_div, -100, 100, true, 2e-7}, /* y away from 0: a division; zeros below */
};

static tide_tensor *rand_y(tide_dtype dt, int rank, const int64_t *dims, const fcase *c)
{
    tide_tensor *y = rand_f(dt, rank, dims, c->lo, c->hi);
    if (!c->y_away)
        return y;
    int64_t n = tide_tensor_num_elements(y);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (th_rand(0, 1) < 0.5 ? -1 : 1) * th_rand(0.5, 9);
    tide_tensor_release(y);
    y = make_f(dt, rank, dims, v);
    free(v);
    return y;
}

static void check_float_case(const fcase *c, tide_dtype dt, const shape_pair *p)
{
    tide_tensor *x = rand_f(dt, p->rx, p->dx, c->lo, c->hi), *y = rand_y(dt, p->ry, p->dy, c);
    tide_tensor *want = ref_binary_f(c->ref, x, y), *got = run2(c->op, x, y);
    double rtol = dt == TIDE_FLOAT64   ? 1e-14
                  : dt == TIDE_FLOAT32 ? c->rtol32
                  : dt == TIDE_FLOAT16 ? 2e-3
                                       : 1.6e-2;
    TH_ASSERT_CLOSE(got, want, rtol, 0);
    if (!close_enough(got, want, rtol, 0))
        fprintf(stderr, "  (%s %s, x rank %d, y rank %d)\n", c->op, tide_dtype_name(dt), p->rx, p->ry);
    tide_tensor *all[] = {x, y, want, got};
    release_all(all, 4);
}

static void test_binary_float_broadcast(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (size_t c = 0; c < sizeof FCASES / sizeof FCASES[0]; c++)
        for (int d = 0; d < 2; d++)
            for (int p = 0; p < NUM_PAIRS; p++)
                check_float_case(&FCASES[c], dts[d], &PAIRS[p]);
}

static void test_binary_half(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT16, TIDE_BFLOAT16};
    for (size_t c = 0; c < sizeof FCASES / sizeof FCASES[0]; c++)
        for (int d = 0; d < 2; d++)
            for (int p = 0; p < NUM_PAIRS; p += 3)
                check_float_case(&FCASES[c], dts[d], &PAIRS[p]);
    /* Exact in both formats: 1.5 + 2.25 = 3.75, 3 * -0.5 = -1.5, 1 / 0 = inf; and a chunk boundary. */
    for (int d = 0; d < 2; d++) {
        double xs[] = {1.5, 3, 1, -2}, ys[] = {2.25, -0.5, 0, 0.25};
        tide_tensor *x = make_f(dts[d], 1, TH_DIMS(4), xs), *y = make_f(dts[d], 1, TH_DIMS(4), ys);
        double w_add[] = {3.75, 2.5, 1, -1.75}, w_mul[] = {3.375, -1.5, 0, -0.5},
               w_div[] = {1.5 / 2.25, -6, INFINITY, -8};
        tide_tensor *wa = make_f(dts[d], 1, TH_DIMS(4), w_add), *wm = make_f(dts[d], 1, TH_DIMS(4), w_mul);
        tide_tensor *wd = make_f(dts[d], 1, TH_DIMS(4), w_div);
        tide_tensor *ga = run2("Add", x, y), *gm = run2("Mul", x, y), *gd = run2("Div", x, y);
        TH_ASSERT_CLOSE(ga, wa, 0, 0);
        TH_ASSERT_CLOSE(gm, wm, 0, 0);
        TH_ASSERT_CLOSE(gd, wd, 0, 0);
        tide_tensor *all[] = {x, y, wa, wm, wd, ga, gm, gd};
        release_all(all, 8);
        tide_tensor *big = rand_f(dts[d], 2, TH_DIMS(3, 300), -4, 4),
                    *s = make_f(dts[d], 0, NULL, (double[]){0.5});
        tide_tensor *w = ref_binary_f(r_sub, s, big), *g = run2("Sub", s, big);
        TH_ASSERT_CLOSE(g, w, 0, 0); /* 0.5 - x: exact in float32, one rounding back */
        tide_tensor *more[] = {big, s, w, g};
        release_all(more, 4);
    }
}

/* Large inputs take the parallel and vectorised paths: same shapes, scalar with tensor, a row
 * broadcast ([R, C] with [C]), an outer product ([R, 1] with [1, C]) and a middle broadcast. */
static void test_binary_large(void)
{
    const shape_pair big[] = {
        {2, {512, 1024}, 2, {512, 1024}}, {0, {0}, 2, {700, 999}}, {2, {700, 999}, 0, {0}},
        {2, {512, 1023}, 1, {1023}},      {2, {777, 1}, 2, {1, 1001}}, {3, {64, 1, 2000}, 3, {64, 9, 2000}},
        {3, {1, 300, 1}, 3, {5, 300, 70}},
    };
    const fcase *cases[] = {&FCASES[0], &FCASES[2], &FCASES[3], &FCASES[4], &FCASES[6], &FCASES[8]};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            check_float_case(cases[c], (i + c) % 2 ? TIDE_FLOAT64 : TIDE_FLOAT32, &big[i]);
    /* integers, large: the same paths with wrapping arithmetic */
    tide_tensor *x = make_i(TIDE_INT32, 0, NULL, (int64_t[]){INT32_MAX}),
                *y = th_tensor(TIDE_INT32, 1, TH_DIMS(300000), NULL);
    for (int64_t i = 0; i < 300000; i++)
        ((int32_t *)tide_tensor_data(y))[i] = (int32_t)(i * 7919);
    tide_tensor *w = ref_binary_i(q_add, x, y), *g = run2("Add", x, y);
    ASSERT_EXACT(g, w);
    tide_tensor *all[] = {x, y, w, g};
    release_all(all, 4);
}

/* Literal values with the documented float semantics. */
static void test_binary_float_special(void)
{
    double xs[] = {1, -1, 0, -7.5, 7.5, -7.5, NAN, 3, 5};
    double ys[] = {0, 0, 0, 2, -2, -2, 1, NAN, INFINITY};
    tide_tensor *x = th_f64(1, TH_DIMS(9), xs), *y = th_f64(1, TH_DIMS(9), ys);
    tide_tensor *div = run2("Div", x, y), *fdiv = run2("FloorDiv", x, y), *mod = run2("FloorMod", x, y);
    tide_tensor *mx = run2("Maximum", x, y), *mn = run2("Minimum", x, y), *mx2 = run2("Maximum", y, x);
    tide_tensor *tmod = run2("Mod", x, y), *tmod2 = run2("TruncateMod", x, y), *tdiv = run2("TruncateDiv", x, y);
    tide_tensor *rdiv = run2("RealDiv", x, y);
    double w_div[] = {INFINITY, -INFINITY, NAN, -3.75, -3.75, 3.75, NAN, NAN, 0};
    double w_fdiv[] = {INFINITY, -INFINITY, NAN, -4, -4, 3, NAN, NAN, 0};
    double w_mod[] = {NAN, NAN, NAN, 0.5, -0.5, -1.5, NAN, NAN, 5}; /* Python: -7.5 % 2 == 0.5 */
    double w_max[] = {1, 0, 0, 2, 7.5, -2, NAN, NAN, INFINITY};
    double w_min[] = {0, -1, 0, -7.5, -2, -7.5, NAN, NAN, 5};
    double w_tmod[] = {NAN, NAN, NAN, -1.5, 1.5, -1.5, NAN, NAN, 5}; /* C: fmod(-7.5, 2) == -1.5 */
    double w_tdiv[] = {INFINITY, -INFINITY, NAN, -3, -3, 3, NAN, NAN, 0};
    tide_tensor *want[] = {th_f64(1, TH_DIMS(9), w_div), th_f64(1, TH_DIMS(9), w_fdiv),
                           th_f64(1, TH_DIMS(9), w_mod), th_f64(1, TH_DIMS(9), w_max),
                           th_f64(1, TH_DIMS(9), w_min), th_f64(1, TH_DIMS(9), w_max),
                           th_f64(1, TH_DIMS(9), w_tmod), th_f64(1, TH_DIMS(9), w_tmod),
                           th_f64(1, TH_DIMS(9), w_tdiv), th_f64(1, TH_DIMS(9), w_div)};
    tide_tensor *got[] = {div, fdiv, mod, mx, mn, mx2, tmod, tmod2, tdiv, rdiv};
    for (int i = 0; i < 10; i++)
        TH_ASSERT_CLOSE(got[i], want[i], 0, 0);
    /* float32: Mod with a negative zero remainder, Pow edge cases */
    float px[] = {0, -8, 0, 2, -2, 4, 1}, py[] = {0, 1.0f / 3, -1, 0.5f, 3, -0.5f, NAN};
    float w_pow[] = {1, NAN, INFINITY, 1.41421356f, -8, 0.5f, 1};
    tide_tensor *fx = th_f32(1, TH_DIMS(7), px), *fy = th_f32(1, TH_DIMS(7), py),
                *fw = th_f32(1, TH_DIMS(7), w_pow);
    tide_tensor *fp = run2("Pow", fx, fy);
    TH_ASSERT_CLOSE(fp, fw, 1e-7, 0);
    tide_tensor *more[] = {x, y, fx, fy, fw, fp};
    release_all(more, 6);
    release_all(want, 10);
    release_all(got, 10);
}

static tide_tensor *run_graph_text(const char *text, const char *const *feed_names, tide_tensor **feed_values,
                                   int num_feeds, const char *fetch, tide_error *err);

/* DivNoNan: 0 wherever y is 0 (x zero, nan or inf too), else x / y; in every float dtype. */
static void test_div_no_nan(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_BFLOAT16};
    double xs[] = {1, -1, 0, NAN, INFINITY, 6, NAN, -0.0, 3};
    double ys[] = {0, -0.0, 0, 0, 0, -4, 2, 0, INFINITY};
    double want[] = {0, 0, 0, 0, 0, -1.5, NAN, 0, 0};
    for (int d = 0; d < 4; d++) {
        tide_tensor *x = make_f(dts[d], 1, TH_DIMS(9), xs), *y = make_f(dts[d], 1, TH_DIMS(9), ys);
        tide_tensor *w = make_f(dts[d], 1, TH_DIMS(9), want), *got = run2("DivNoNan", x, y);
        TH_ASSERT_CLOSE(got, w, 0, 0);
        tide_tensor *all[] = {x, y, w, got};
        release_all(all, 4);
    }
    /* broadcast: a zero in a scalar y zeroes everything */
    tide_tensor *x = th_f64(2, TH_DIMS(2, 2), (double[]){1, NAN, -INFINITY, 4});
    tide_tensor *zero = th_f64(0, NULL, (double[]){0}), *zeros = th_f64(2, TH_DIMS(2, 2), NULL);
    tide_tensor *got = run2("DivNoNan", x, zero);
    TH_ASSERT_CLOSE(got, zeros, 0, 0);
    tide_tensor *all[] = {x, zero, zeros, got};
    release_all(all, 4);
}

/* The gradient ops of Sqrt, Rsqrt, Reciprocal and Inv from their output y and incoming dy, against
 * the formulas in double; y and dy must have one shape. */
typedef double (*grad_ref)(double y, double dy);
static double g_sqrt(double y, double dy) { return 0.5 * dy / y; }
static double g_rsqrt(double y, double dy) { return -0.5 * dy * y * y * y; }
static double g_reciprocal(double y, double dy) { return -y * y * dy; }

static void test_gradient_ops(void)
{
    static const struct {
        const char *op;
        grad_ref ref;
        bool positive; /* y > 0 (outputs of Sqrt and Rsqrt) */
    } ops[] = {{"SqrtGrad", g_sqrt, true}, {"RsqrtGrad", g_rsqrt, true},
               {"ReciprocalGrad", g_reciprocal, false}, {"InvGrad", g_reciprocal, false}};
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_BFLOAT16};
    const double rtols[] = {1e-6, 1e-15, 4e-3, 3e-2};
    for (int o = 0; o < 4; o++)
        for (int d = 0; d < 4; d++) {
            double yv[35], dyv[35], wv[35];
            for (int i = 0; i < 35; i++) {
                yv[i] = (ops[o].positive || th_rand(0, 1) < 0.5 ? 1 : -1) * th_rand(0.5, 3);
                dyv[i] = th_rand(-2, 2);
            }
            tide_tensor *y = make_f(dts[d], 2, TH_DIMS(5, 7), yv), *dy = make_f(dts[d], 2, TH_DIMS(5, 7), dyv);
            for (int i = 0; i < 35; i++) /* from the values as stored in the dtype */
                wv[i] = ops[o].ref(tide_tensor_get_f64(y, i), tide_tensor_get_f64(dy, i));
            tide_tensor *w = make_f(dts[d], 2, TH_DIMS(5, 7), wv), *got = run2(ops[o].op, y, dy);
            TH_ASSERT_CLOSE(got, w, rtols[d], 0);
            tide_tensor *all[] = {y, dy, w, got};
            release_all(all, 4);
        }
    /* one shape: refused at graph time with both shapes, and at run time when only then known */
    tide_tensor *a = th_f32(2, TH_DIMS(2, 3), NULL), *b = th_f32(1, TH_DIMS(3), NULL);
    TH_ASSERT_FAILS("SqrtGrad", ((tide_tensor *[]){a, b}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "y and dy must have the same shape: y is [2, 3], dy is [3]");
    tide_error *err = tide_error_new();
    const char *text = "p = Placeholder(dtype=float32)\n q = Placeholder(dtype=float32)\n r = RsqrtGrad(p, q)\n";
    tide_tensor *out = run_graph_text(text, (const char *[]){"p", "q"}, (tide_tensor *[]){a, b}, 2, "r", err);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "y and dy must have the same shape: y is [2, 3], "
                                                         "dy is [3]"));
    tide_error_free(err);
    tide_tensor *all[] = {a, b};
    release_all(all, 2);
}

/* ---------------------------------------------------------------- binary ops: integers */

static const tide_dtype INT_DTS[] = {TIDE_INT8, TIDE_INT16, TIDE_INT32, TIDE_INT64, TIDE_UINT8, TIDE_UINT16};

typedef struct icase {
    const char *op;
    iref2 ref;
    int y_kind; /* 0: any, 1: nonzero, 2: in [0, 12] */
} icase;

static const icase ICASES[] = {
    {"Add", q_add, 0},     {"Sub", q_sub, 0},          {"Mul", q_mul, 0},
    {"Div", q_div, 1},     {"FloorDiv", q_floordiv, 1}, {"FloorMod", q_mod, 1},
    {"Pow", q_pow, 2},     {"Maximum", q_max, 0},      {"Minimum", q_min, 0},
    {"Mod", q_truncmod, 1}, {"TruncateMod", q_truncmod, 1}, {"TruncateDiv", q_div, 1},
    {"AddV2", q_add, 0},   {"SquaredDifference", q_sqdiff, 0},
};

static tide_tensor *rand_ints(tide_dtype dt, int rank, const int64_t *dims, int kind)
{
    int64_t n = count(rank, dims);
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = kind == 2 ? (int64_t)th_rand(0, 13) : rand_int(dt);
        if (kind == 1 && v[i] == 0)
            v[i] = 1;
    }
    /* the extremes appear: MIN, MAX, -1 (MIN / -1) */
    if (n >= 3 && kind != 2) {
        v[0] = is_signed(dt) ? wrap((i128)1 << (tide_dtype_size(dt) * 8 - 1), dt) : 0;
        v[1] = wrap(((i128)1 << (tide_dtype_size(dt) * 8 - (is_signed(dt) ? 1 : 0))) - 1, dt);
        v[2] = is_signed(dt) ? -1 : 1;
        if (kind == 1 && v[0] == 0)
            v[0] = 3;
    }
    tide_tensor *t = make_i(dt, rank, dims, v);
    free(v);
    return t;
}

static void test_binary_int_random(void)
{
    const shape_pair pairs[] = {
        {0, {0}, 0, {0}},       {1, {40}, 0, {0}},      {0, {0}, 1, {40}},  {2, {6, 7}, 2, {6, 7}},
        {2, {6, 7}, 1, {7}},    {2, {6, 1}, 2, {1, 7}}, {2, {2, 0}, 2, {2, 1}}, {3, {2, 3, 3}, 3, {1, 3, 3}},
    };
    for (size_t c = 0; c < sizeof ICASES / sizeof ICASES[0]; c++)
        for (size_t d = 0; d < sizeof INT_DTS / sizeof INT_DTS[0]; d++)
            for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
                const shape_pair *sp = &pairs[p];
                tide_tensor *x = rand_ints(INT_DTS[d], sp->rx, sp->dx, 0);
                tide_tensor *y = rand_ints(INT_DTS[d], sp->ry, sp->dy, ICASES[c].y_kind);
                tide_tensor *want = ref_binary_i(ICASES[c].ref, x, y), *got = run2(ICASES[c].op, x, y);
                ASSERT_EXACT(got, want);
                if (got && !tide_tensor_equal(got, want, true))
                    fprintf(stderr, "  (%s %s pair %zu)\n", ICASES[c].op, tide_dtype_name(INT_DTS[d]), p);
                tide_tensor *all[] = {x, y, want, got};
                release_all(all, 4);
            }
}

/* One op on int32 and int64 vectors, compared with literal expectations. */
static void check_int_table(const char *op, tide_dtype dt, int n, const int64_t *x, const int64_t *y,
                            const int64_t *want)
{
    tide_tensor *tx = make_i(dt, 1, TH_DIMS(n), x), *ty = make_i(dt, 1, TH_DIMS(n), y);
    tide_tensor *tw = make_i(dt, 1, TH_DIMS(n), want), *got = run2(op, tx, ty);
    ASSERT_EXACT(got, tw);
    tide_tensor *all[] = {tx, ty, tw, got};
    release_all(all, 4);
}

/* TensorFlow's rounding: Div and TruncateDiv truncate, FloorDiv floors; Mod and TruncateMod take
 * the sign of the dividend (C's %: Mod(-7, 2) == -1), FloorMod the sign of the divisor (Python's %:
 * FloorMod(-7, 2) == 1); MIN / -1 wraps to MIN and MIN % -1 is 0. */
static void test_int_division_semantics(void)
{
    int64_t x[] = {7, -7, 7, -7, 0, 6, -6, INT32_MIN, INT32_MIN, INT32_MAX, INT32_MIN, 1};
    int64_t y[] = {2, 2, -2, -2, 3, 3, -3, -1, 1, -1, 2, INT32_MIN};
    int64_t div[] = {3, -3, -3, 3, 0, 2, 2, INT32_MIN, INT32_MIN, -INT32_MAX, INT32_MIN / 2, 0};
    int64_t fdiv[] = {3, -4, -4, 3, 0, 2, 2, INT32_MIN, INT32_MIN, -INT32_MAX, INT32_MIN / 2, -1};
    int64_t fmod_[] = {1, 1, -1, -1, 0, 0, 0, 0, 0, 0, 0, (int64_t)INT32_MIN + 1};
    int64_t tmod[] = {1, -1, 1, -1, 0, 0, 0, 0, 0, 0, 0, 1};
    check_int_table("Div", TIDE_INT32, 12, x, y, div);
    check_int_table("TruncateDiv", TIDE_INT32, 12, x, y, div);
    check_int_table("FloorDiv", TIDE_INT32, 12, x, y, fdiv);
    check_int_table("FloorMod", TIDE_INT32, 12, x, y, fmod_);
    check_int_table("Mod", TIDE_INT32, 12, x, y, tmod);
    check_int_table("TruncateMod", TIDE_INT32, 12, x, y, tmod);
    int64_t x64[] = {INT64_MIN, INT64_MIN, INT64_MAX, -9, 9, INT64_MIN + 1};
    int64_t y64[] = {-1, 7, -1, 4, -4, INT64_MIN};
    int64_t div64[] = {INT64_MIN, INT64_MIN / 7, -INT64_MAX, -2, -2, 0};
    int64_t fdiv64[] = {INT64_MIN, INT64_MIN / 7 - 1, -INT64_MAX, -3, -3, 0};
    int64_t fmod64[] = {0, 6, 0, 3, -3, INT64_MIN + 1}; /* INT64_MIN == 7 * (INT64_MIN / 7 - 1) + 6 */
    int64_t tmod64[] = {0, -1, 0, -1, 1, INT64_MIN + 1}; /* 2^63 == 1 (mod 7) */
    check_int_table("Div", TIDE_INT64, 6, x64, y64, div64);
    check_int_table("TruncateDiv", TIDE_INT64, 6, x64, y64, div64);
    check_int_table("FloorDiv", TIDE_INT64, 6, x64, y64, fdiv64);
    check_int_table("FloorMod", TIDE_INT64, 6, x64, y64, fmod64);
    check_int_table("Mod", TIDE_INT64, 6, x64, y64, tmod64);
    check_int_table("TruncateMod", TIDE_INT64, 6, x64, y64, tmod64);
    int64_t x8[] = {-128, -128, 127, -7}, y8[] = {-1, 3, -128, 2};
    int64_t div8[] = {-128, -42, 0, -3}, fdiv8[] = {-128, -43, -1, -4}, fmod8[] = {0, 1, -1, 1};
    int64_t tmod8[] = {0, -2, 127, -1};
    check_int_table("Div", TIDE_INT8, 4, x8, y8, div8);
    check_int_table("FloorDiv", TIDE_INT8, 4, x8, y8, fdiv8);
    check_int_table("FloorMod", TIDE_INT8, 4, x8, y8, fmod8);
    check_int_table("Mod", TIDE_INT8, 4, x8, y8, tmod8);
    int64_t xu[] = {255, 7, 0}, yu[] = {2, 255, 9}, divu[] = {127, 0, 0}, modu[] = {1, 7, 0};
    check_int_table("FloorDiv", TIDE_UINT8, 3, xu, yu, divu);
    check_int_table("FloorMod", TIDE_UINT8, 3, xu, yu, modu);
    check_int_table("Mod", TIDE_UINT8, 3, xu, yu, modu);
    /* the case: Mod(-7, 2) is -1 in TensorFlow (tf.math.floormod, Python's %, gives 1) */
    int64_t m7[] = {-7}, two[] = {2}, minus_one[] = {-1}, one[] = {1};
    check_int_table("Mod", TIDE_INT32, 1, m7, two, minus_one);
    check_int_table("FloorMod", TIDE_INT32, 1, m7, two, one);
}

/* Add, Sub, Mul and Pow wrap around (two's complement) without undefined behaviour. */
static void test_int_overflow_wraps(void)
{
    int64_t x[] = {INT32_MAX, INT32_MIN, INT32_MIN, 65536, INT32_MAX}, y[] = {1, 1, -1, 65536, INT32_MAX};
    int64_t add[] = {INT32_MIN, (int64_t)INT32_MIN + 1, INT32_MAX, 131072, -2};
    int64_t sub[] = {INT32_MAX - 1, INT32_MAX, (int64_t)INT32_MIN + 1, 0, 0};
    int64_t mul[] = {INT32_MAX, INT32_MIN, INT32_MIN, 0, 1};
    check_int_table("Add", TIDE_INT32, 5, x, y, add);
    check_int_table("Sub", TIDE_INT32, 5, x, y, sub);
    check_int_table("Mul", TIDE_INT32, 5, x, y, mul);
    int64_t x64[] = {INT64_MAX, INT64_MIN, INT64_MIN, INT64_MAX}, y64[] = {1, 1, -1, INT64_MAX};
    int64_t add64[] = {INT64_MIN, INT64_MIN + 1, INT64_MAX, -2},
            sub64[] = {INT64_MAX - 1, INT64_MAX, INT64_MIN + 1, 0};
    int64_t mul64[] = {INT64_MAX, INT64_MIN, INT64_MIN, 1};
    check_int_table("Add", TIDE_INT64, 4, x64, y64, add64);
    check_int_table("Sub", TIDE_INT64, 4, x64, y64, sub64);
    check_int_table("Mul", TIDE_INT64, 4, x64, y64, mul64);
    int64_t x8[] = {127, -128, 100}, y8[] = {1, -1, 3}, add8[] = {-128, 127, 103}, mul8[] = {127, -128, 44};
    check_int_table("Add", TIDE_INT8, 3, x8, y8, add8);
    check_int_table("Mul", TIDE_INT8, 3, x8, y8, mul8);
    int64_t xu[] = {65535, 65535, 0}, yu[] = {65535, 1, 1}, mulu[] = {1, 65535, 0}, addu[] = {65534, 0, 1},
            subu[] = {0, 65534, 65535};
    check_int_table("Mul", TIDE_UINT16, 3, xu, yu, mulu);
    check_int_table("Add", TIDE_UINT16, 3, xu, yu, addu);
    check_int_table("Sub", TIDE_UINT16, 3, xu, yu, subu);
    int64_t xb[] = {255, 0, 16}, yb[] = {1, 1, 16}, addb[] = {0, 1, 32}, subb[] = {254, 255, 0},
            mulb[] = {255, 0, 0};
    check_int_table("Add", TIDE_UINT8, 3, xb, yb, addb);
    check_int_table("Sub", TIDE_UINT8, 3, xb, yb, subb);
    check_int_table("Mul", TIDE_UINT8, 3, xb, yb, mulb);
}

/* Pow on integers: exact modulo 2^bits, x^0 == 1, large exponents, negative exponents refused. */
static void test_int_pow(void)
{
    int64_t x[] = {2, 2, 3, 0, 0, -1, -1, -2, 7, 1},
            y[] = {31, 32, 40, 0, 5, INT32_MAX, 1000000, 3, 0, INT32_MAX};
    int64_t w[] = {INT32_MIN, 0, wrap(q_pow(3, 40), TIDE_INT32), 1, 0, -1, 1, -8, 1, 1};
    check_int_table("Pow", TIDE_INT32, 10, x, y, w);
    int64_t x64[] = {2, 2, 3, -3, 10}, y64[] = {62, 64, 39, INT64_MAX, 18};
    int64_t w64[] = {(int64_t)1 << 62, 0, 4052555153018976267LL, 0 /* below */, 1000000000000000000LL};
    /* (-3)^INT64_MAX: too many factors for the reference loop; it must be -(3^INT64_MAX), and 3^odd
     * is 3 modulo 8 */
    tide_tensor *tx = make_i(TIDE_INT64, 1, TH_DIMS(5), x64), *ty = make_i(TIDE_INT64, 1, TH_DIMS(5), y64);
    tide_tensor *got = run2("Pow", tx, ty);
    int64_t x3[] = {3}, y3[] = {INT64_MAX};
    tide_tensor *t3 = make_i(TIDE_INT64, 1, TH_DIMS(1), x3), *e3 = make_i(TIDE_INT64, 1, TH_DIMS(1), y3);
    tide_tensor *p3 = run2("Pow", t3, e3);
    if (got && p3) {
        for (int i = 0; i < 3; i++)
            CU_ASSERT_EQUAL(get_i(got, i), w64[i]);
        CU_ASSERT_EQUAL(get_i(got, 4), w64[4]);
        CU_ASSERT_EQUAL((uint64_t)get_i(got, 3), 0 - (uint64_t)get_i(p3, 0)); /* (-3)^odd == -(3^odd) */
        CU_ASSERT_EQUAL(get_i(p3, 0) & 7, 3); /* 3^odd == 3 mod 8 */
    }
    int64_t xu[] = {2, 255, 3}, yu[] = {8, 2, 5}, wu[] = {0, 1, 243};
    check_int_table("Pow", TIDE_UINT8, 3, xu, yu, wu);
    /* negative exponents */
    tide_tensor *neg = make_i(TIDE_INT32, 1, TH_DIMS(3), (int64_t[]){1, -1, 2});
    tide_tensor *base = make_i(TIDE_INT32, 0, NULL, (int64_t[]){2});
    TH_ASSERT_FAILS("Pow", ((tide_tensor *[]){base, neg}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "negative integer powers");
    TH_ASSERT_FAILS("Pow", ((tide_tensor *[]){base, neg}), 2, NULL, TIDE_INVALID_ARGUMENT, "element 1 of y");
    tide_tensor *all[] = {tx, ty, got, t3, e3, p3, neg, base};
    release_all(all, 8);
}

/* Integer division and modulo by zero are errors; float division follows IEEE. */
static void test_division_by_zero(void)
{
    const char *ops[] = {"Div", "FloorDiv", "TruncateDiv", "Mod", "FloorMod", "TruncateMod"};
    for (int o = 0; o < 6; o++)
        for (size_t d = 0; d < sizeof INT_DTS / sizeof INT_DTS[0]; d++) {
            tide_tensor *x = make_i(INT_DTS[d], 2, TH_DIMS(2, 3), (int64_t[]){1, 2, 3, 4, 5, 6});
            tide_tensor *y = make_i(INT_DTS[d], 1, TH_DIMS(3), (int64_t[]){1, 0, 2});
            tide_tensor *z = make_i(INT_DTS[d], 0, NULL, (int64_t[]){0});
            const char *what = o >= 3 ? "integer modulo by zero" : "integer division by zero";
            TH_ASSERT_FAILS(ops[o], ((tide_tensor *[]){x, y}), 2, NULL, TIDE_INVALID_ARGUMENT, what);
            TH_ASSERT_FAILS(ops[o], ((tide_tensor *[]){x, y}), 2, NULL, TIDE_INVALID_ARGUMENT,
                            "element 1 of y");
            TH_ASSERT_FAILS(ops[o], ((tide_tensor *[]){x, z}), 2, NULL, TIDE_INVALID_ARGUMENT, what);
            TH_ASSERT_FAILS(ops[o], ((tide_tensor *[]){z, z}), 2, NULL, TIDE_INVALID_ARGUMENT, what);
            /* nothing is divided when the output is empty */
            tide_tensor *e = th_tensor(INT_DTS[d], 2, TH_DIMS(0, 3), NULL), *got = run2(ops[o], e, y);
            TH_ASSERT_SHAPE(got, 2, TH_DIMS(0, 3));
            tide_tensor *all[] = {x, y, z, e, got};
            release_all(all, 5);
        }
}

/* ---------------------------------------------------------------- complex */

typedef struct cplx {
    double re, im;
} cplx;

static cplx c_ref(const char *op, cplx a, cplx b)
{
    if (!strcmp(op, "Add"))
        return (cplx){a.re + b.re, a.im + b.im};
    if (!strcmp(op, "Sub"))
        return (cplx){a.re - b.re, a.im - b.im};
    if (!strcmp(op, "Mul"))
        return (cplx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    double d = b.re * b.re + b.im * b.im; /* Div */
    return (cplx){(a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d};
}

static tide_tensor *make_c(tide_dtype dt, int rank, const int64_t *dims, const cplx *v)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        if (dt == TIDE_COMPLEX64) {
            ((float *)tide_tensor_data(t))[2 * i] = (float)v[i].re;
            ((float *)tide_tensor_data(t))[2 * i + 1] = (float)v[i].im;
        } else {
            ((double *)tide_tensor_data(t))[2 * i] = v[i].re;
            ((double *)tide_tensor_data(t))[2 * i + 1] = v[i].im;
        }
    }
    return t;
}

static cplx get_c(const tide_tensor *t, int64_t i)
{
    if (tide_tensor_dtype(t) == TIDE_COMPLEX64)
        return (cplx){((const float *)tide_tensor_data(t))[2 * i],
                      ((const float *)tide_tensor_data(t))[2 * i + 1]};
    return (cplx){((const double *)tide_tensor_data(t))[2 * i],
                  ((const double *)tide_tensor_data(t))[2 * i + 1]};
}

static void test_complex(void)
{
    const char *ops[] = {"Add", "Sub", "Mul", "Div"};
    const tide_dtype dts[] = {TIDE_COMPLEX64, TIDE_COMPLEX128};
    const shape_pair pairs[] = {
        {1, {6}, 1, {6}}, {0, {0}, 1, {6}}, {2, {2, 3}, 1, {3}}, {2, {2, 1}, 2, {1, 3}}, {1, {0}, 0, {0}}};
    for (int o = 0; o < 4; o++)
        for (int d = 0; d < 2; d++)
            for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
                const shape_pair *sp = &pairs[p];
                cplx xv[6], yv[6];
                for (int i = 0; i < 6; i++) {
                    xv[i] = (cplx){th_rand(-5, 5), th_rand(-5, 5)};
                    yv[i] = (cplx){th_rand(0.5, 5), th_rand(-5, 5)};
                }
                tide_tensor *x = make_c(dts[d], sp->rx, sp->dx, xv), *y = make_c(dts[d], sp->ry, sp->dy, yv);
                bshape b = broadcast(tide_tensor_shape(x), tide_tensor_shape(y));
                cplx wv[6];
                for (int64_t i = 0; i < count(b.rank, b.dims); i++) {
                    int64_t ix, iy;
                    element_of(&b, i, &ix, &iy);
                    wv[i] = c_ref(ops[o], get_c(x, ix), get_c(y, iy));
                }
                tide_tensor *want = make_c(dts[d], b.rank, b.dims, wv), *got = run2(ops[o], x, y);
                TH_ASSERT_CLOSE(got, want, d ? 1e-14 : 1e-6, d ? 1e-13 : 1e-5);
                tide_tensor *all[] = {x, y, want, got};
                release_all(all, 4);
            }
    /* Neg, Square, AddN */
    for (int d = 0; d < 2; d++) {
        cplx v[3] = {{1, 2}, {-3, 0.5}, {0, -4}};
        cplx neg[3] = {{-1, -2}, {3, -0.5}, {0, 4}}, sq[3] = {{-3, 4}, {8.75, -3}, {-16, 0}},
             sum[3] = {{3, 6}, {-9, 1.5}, {0, -12}};
        tide_tensor *x = make_c(dts[d], 1, TH_DIMS(3), v);
        tide_tensor *wn = make_c(dts[d], 1, TH_DIMS(3), neg), *ws = make_c(dts[d], 1, TH_DIMS(3), sq),
                    *wa = make_c(dts[d], 1, TH_DIMS(3), sum);
        tide_tensor *gn = run1("Neg", x), *gs = run1("Square", x),
                    *ga = th_run1("AddN", (tide_tensor *[]){x, x, x}, 3, NULL);
        TH_ASSERT_CLOSE(gn, wn, 0, 0);
        TH_ASSERT_CLOSE(gs, ws, 1e-6, 1e-6);
        TH_ASSERT_CLOSE(ga, wa, 0, 0);
        tide_tensor *all[] = {x, wn, ws, wa, gn, gs, ga};
        release_all(all, 7);
    }
}

/* ---------------------------------------------------------------- unary ops */

typedef double (*fref1)(double);
static double u_neg(double x) { return -x; }
static double u_abs(double x) { return x < 0 ? -x : x; }
static double u_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }
static double u_square(double x) { return x * x; }
static double u_rsqrt(double x) { return 1 / sqrt(x); }
static double u_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double u_reciprocal(double x) { return 1 / x; }
/* Round half to even, written out: the nearest integer, and of two equally near the even one. */
static double u_round_even(double x)
{
    double f = floor(x), d = x - f;
    if (d != 0.5)
        return d < 0.5 ? f : f + 1;
    return fmod(f, 2) == 0 ? f : f + 1;
}

typedef struct ucase {
    const char *op;
    fref1 ref;
    double lo, hi;
    double rtol32, rtol64;
} ucase;

static const ucase UCASES[] = {
    {"Neg", u_neg, -100, 100, 0, 0},         {"Abs", u_abs, -100, 100, 0, 0},
    {"Sign", u_sign, -2, 2, 0, 0},           {"Square", u_square, -100, 100, 2e-7, 1e-15},
    {"Sqrt", sqrt, 0, 100, 2e-7, 1e-15},     {"Rsqrt", u_rsqrt, 0.01, 100, 4e-7, 1e-15},
    {"Exp", exp, -50, 50, 1e-6, 1e-14},      {"Log", log, 0.001, 1000, 1e-6, 1e-14},
    {"Log1p", log1p, -0.999, 10, 1e-6, 1e-14}, {"Sin", sin, -20, 20, 1e-6, 1e-14},
    {"Cos", cos, -20, 20, 1e-6, 1e-14},      {"Tanh", tanh, -10, 10, 1e-6, 1e-14},
    {"Sigmoid", u_sigmoid, -30, 30, 1e-6, 1e-14},
    {"Reciprocal", u_reciprocal, -100, 100, 2e-7, 1e-15}, {"Inv", u_reciprocal, -100, 100, 2e-7, 1e-15},
    {"Floor", floor, -100, 100, 0, 0},       {"Ceil", ceil, -100, 100, 0, 0},
    {"Rint", u_round_even, -100, 100, 0, 0}, {"Round", u_round_even, -100, 100, 0, 0},
    {"Expm1", expm1, -20, 20, 1e-6, 1e-14},  {"Erf", erf, -4, 4, 1e-6, 1e-14},
    {"Erfc", erfc, -4, 9, 1e-6, 1e-14},      {"Tan", tan, -1.5, 1.5, 1e-6, 1e-14},
    {"Asin", asin, -1, 1, 1e-6, 1e-14},      {"Acos", acos, -1, 1, 1e-6, 1e-14},
    {"Atan", atan, -50, 50, 1e-6, 1e-14},    {"Sinh", sinh, -20, 20, 1e-6, 1e-14},
    {"Cosh", cosh, -20, 20, 1e-6, 1e-14},    {"Asinh", asinh, -100, 100, 1e-6, 1e-14},
    {"Acosh", acosh, 1, 100, 1e-6, 1e-14},   {"Atanh", atanh, -0.99, 0.99, 1e-6, 1e-14},
};
#define NUM_UCASES ((int)(sizeof UCASES / sizeof UCASES[0]))

static tide_tensor *ref_unary_f(fref1 f, const tide_tensor *x)
{
    int64_t n = tide_tensor_num_elements(x);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = f(tide_tensor_get_f64(x, i));
    const tide_shape *s = tide_tensor_shape(x);
    tide_tensor *t = make_f(tide_tensor_dtype(x), s->rank, s->dims, v);
    free(v);
    return t;
}

static void check_unary(const ucase *c, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_tensor *x = rand_f(dt, rank, dims, c->lo, c->hi), *want = ref_unary_f(c->ref, x);
    tide_tensor *got = run1(c->op, x);
    double rtol = dt == TIDE_FLOAT32   ? c->rtol32
                  : dt == TIDE_FLOAT64 ? c->rtol64
                  : dt == TIDE_FLOAT16 ? 2e-3
                                       : 1.6e-2;
    double atol = dt == TIDE_FLOAT32 ? 1e-7 : dt == TIDE_FLOAT64 ? 1e-15 : 1e-3; /* sin, cos near 0 */
    if (c->rtol32 == 0 && !is_half(dt))
        atol = 0;
    TH_ASSERT_CLOSE(got, want, rtol, atol);
    if (!close_enough(got, want, rtol, atol))
        fprintf(stderr, "  (%s %s)\n", c->op, tide_dtype_name(dt));
    tide_tensor *all[] = {x, want, got};
    release_all(all, 3);
}

static void test_unary_float(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_BFLOAT16};
    for (int c = 0; c < NUM_UCASES; c++)
        for (int d = 0; d < 4; d++) {
            check_unary(&UCASES[c], dts[d], 0, NULL);
            check_unary(&UCASES[c], dts[d], 2, TH_DIMS(7, 13));
            check_unary(&UCASES[c], dts[d], 3, TH_DIMS(2, 0, 5));
        }
}

/* tf.math's functions at points whose values follow from exp, log and sqrt (not from the functions
 * under test), in float64, and their domain edges. */
static void test_unary_closed_forms(void)
{
    const double e = exp(1), pi = acos(-1);
    const struct {
        const char *op;
        double x, want;
    } cases[] = {
        {"Atan", 1, pi / 4},   {"Asin", 0.5, pi / 6},  {"Acos", 0.5, pi / 3},   {"Tan", pi / 4, 1},
        {"Sinh", 1, (e - 1 / e) / 2}, {"Cosh", 1, (e + 1 / e) / 2}, {"Asinh", 2, log(2 + sqrt(5))},
        {"Acosh", 2, log(2 + sqrt(3))}, {"Atanh", 0.5, log(3) / 2}, {"Expm1", 1, e - 1},
        {"Erf", 0, 0},         {"Erfc", 0, 1},         {"Erf", INFINITY, 1},    {"Erfc", -INFINITY, 2},
        {"Atanh", 1, INFINITY}, {"Acosh", 0.5, NAN},   {"Asin", 1.5, NAN},      {"Acos", -1, pi},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_tensor *x = th_f64(0, NULL, &cases[i].x), *w = th_f64(0, NULL, &cases[i].want);
        tide_tensor *got = run1(cases[i].op, x);
        TH_ASSERT_CLOSE(got, w, 1e-15, 0);
        if (!close_enough(got, w, 1e-15, 0))
            fprintf(stderr, "  (%s(%g))\n", cases[i].op, cases[i].x);
        tide_tensor *all[] = {x, w, got};
        release_all(all, 3);
    }
}

/* Large tensors: the parallel path, and half types across several conversion chunks. */
static void test_unary_large(void)
{
    for (int c = 0; c < NUM_UCASES; c++) {
        check_unary(&UCASES[c], c % 2 ? TIDE_FLOAT64 : TIDE_FLOAT32, 2, TH_DIMS(300, 1001));
        check_unary(&UCASES[c], TIDE_FLOAT16, 1, TH_DIMS(1000));
    }
}

static void test_unary_special(void)
{
    float x[] = {0.0f, -0.0f, -1, INFINITY, -INFINITY, NAN, 1e-30f, -1000, 1000};
    const struct {
        const char *op;
        float want[9];
    } cases[] = {
        {"Sqrt", {0, -0.0f, NAN, INFINITY, NAN, NAN, 1e-15f, NAN, 31.6227766f}},
        {"Rsqrt", {INFINITY, -INFINITY, NAN, 0, NAN, NAN, 1e15f, NAN, 0.0316227766f}},
        {"Exp", {1, 1, 0.36787944f, INFINITY, 0, NAN, 1, 0, INFINITY}},
        {"Log", {-INFINITY, -INFINITY, NAN, INFINITY, NAN, NAN, -69.0775528f, NAN, 6.90775528f}},
        {"Log1p", {0, -0.0f, -INFINITY, INFINITY, NAN, NAN, 1e-30f, NAN, 6.90875478f}},
        {"Tanh", {0, -0.0f, -0.76159416f, 1, -1, NAN, 1e-30f, -1, 1}},
        {"Sigmoid", {0.5f, 0.5f, 0.26894142f, 1, 0, NAN, 0.5f, 0, 1}},
        {"Sign", {0, -0.0f, -1, 1, -1, NAN, 1, -1, 1}},
        {"Abs", {0, 0, 1, INFINITY, INFINITY, NAN, 1e-30f, 1000, 1000}},
        {"Neg", {-0.0f, 0, 1, -INFINITY, INFINITY, NAN, -1e-30f, 1000, -1000}},
        {"Square", {0, 0, 1, INFINITY, INFINITY, NAN, 0, 1e6f, 1e6f}},
        {"Sin", {0, -0.0f, -0.84147098f, NAN, NAN, NAN, 1e-30f, -0.82687954f, 0.82687954f}},
        {"Cos", {1, 1, 0.54030231f, NAN, NAN, NAN, 1, 0.56237907f, 0.56237907f}},
    };
    tide_tensor *tx = th_f32(1, TH_DIMS(9), x);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tide_tensor *want = th_f32(1, TH_DIMS(9), cases[c].want), *got = run1(cases[c].op, tx);
        TH_ASSERT_CLOSE(got, want, 1e-6, 0);
        /* the sign of zero is part of the answer */
        for (int i = 0; got && i < 9; i++)
            if (cases[c].want[i] == 0 &&
                signbit(cases[c].want[i]) != signbit(((float *)tide_tensor_data(got))[i])) {
                fprintf(stderr, "%s(%g): wrong sign of zero\n", cases[c].op, (double)x[i]);
                CU_FAIL("sign of zero");
            }
        tide_tensor *all[] = {want, got};
        release_all(all, 2);
    }
    /* Sigmoid stays finite and exact at the extremes in float64 too */
    tide_tensor *d = th_f64(1, TH_DIMS(3), (double[]){-800, 800, -40}), *g = run1("Sigmoid", d);
    tide_tensor *w = th_f64(1, TH_DIMS(3), (double[]){exp(-800.0), 1, 1 / (1 + exp(40.0))});
    TH_ASSERT_CLOSE(g, w, 1e-15, 0);
    tide_tensor *all[] = {tx, d, g, w};
    release_all(all, 4);
}

/* The roundings at halves (to even), signed zeros, infinities and nan; Round on integers is the
 * identity. */
static void test_rounding(void)
{
    double x[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.7, -0.0, INFINITY, -INFINITY, NAN,
                  0.49999999999999994, 4503599627370497.0}; /* below a half; an odd integer of 2^52 */
    const struct {
        const char *op;
        double want[14];
    } cases[] = {
        {"Round", {0, 2, 2, -0.0, -2, -2, 4, -4, -0.0, INFINITY, -INFINITY, NAN, 0, 4503599627370497.0}},
        {"Rint", {0, 2, 2, -0.0, -2, -2, 4, -4, -0.0, INFINITY, -INFINITY, NAN, 0, 4503599627370497.0}},
        {"Floor", {0, 1, 2, -1, -2, -3, 3, -4, -0.0, INFINITY, -INFINITY, NAN, 0, 4503599627370497.0}},
        {"Ceil", {1, 2, 3, -0.0, -1, -2, 4, -3, -0.0, INFINITY, -INFINITY, NAN, 1, 4503599627370497.0}},
    };
    tide_tensor *tx = th_f64(1, TH_DIMS(14), x);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tide_tensor *want = th_f64(1, TH_DIMS(14), cases[c].want), *got = run1(cases[c].op, tx);
        TH_ASSERT_CLOSE(got, want, 0, 0);
        for (int i = 0; got && i < 14; i++)
            if (cases[c].want[i] == 0 && signbit(cases[c].want[i]) != signbit(((double *)tide_tensor_data(got))[i])) {
                fprintf(stderr, "%s(%g): wrong sign of zero\n", cases[c].op, x[i]);
                CU_FAIL("sign of zero");
            }
        tide_tensor *all[] = {want, got};
        release_all(all, 2);
    }
    /* float16, computed in float32 and rounded back */
    tide_tensor *h = make_f(TIDE_FLOAT16, 1, TH_DIMS(3), (double[]){2.5, -3.5, 0.25});
    tide_tensor *hw = make_f(TIDE_FLOAT16, 1, TH_DIMS(3), (double[]){2, -4, 0}), *hg = run1("Round", h);
    TH_ASSERT_CLOSE(hg, hw, 0, 0);
    for (size_t d = 0; d < 4; d++) {
        tide_tensor *xi = rand_ints(INT_DTS[d], 1, TH_DIMS(20), 0), *gi = run1("Round", xi);
        ASSERT_EXACT(gi, xi);
        tide_tensor *all[] = {xi, gi};
        release_all(all, 2);
    }
    tide_tensor *all[] = {tx, h, hw, hg};
    release_all(all, 4);
}

/* float32 Exp, Tanh and Sigmoid are vectorised approximations: sweep their whole useful range,
 * including results in the denormals, against double precision (a few float ulps allowed). */
static void test_unary_f32_sweep(void)
{
    const struct {
        const char *op;
        fref1 ref;
        double lo, hi, rtol;
    } sweeps[] = {
        {"Exp", exp, -104, 88.72, 2.5e-7},   {"Exp", exp, -1e-3, 1e-3, 1.2e-7},
        {"Tanh", tanh, -12, 12, 5e-7},       {"Tanh", tanh, -1e-3, 1e-3, 5e-7},
        {"Sigmoid", u_sigmoid, -104, 30, 5e-7},
    };
    for (size_t c = 0; c < sizeof sweeps / sizeof sweeps[0]; c++) {
        int64_t n = 200001;
        double *v = malloc((size_t)n * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = sweeps[c].lo + (sweeps[c].hi - sweeps[c].lo) * (double)i / (double)(n - 1);
        tide_tensor *x = make_f(TIDE_FLOAT32, 1, &n, v), *want = ref_unary_f(sweeps[c].ref, x);
        tide_tensor *got = run1(sweeps[c].op, x);
        TH_ASSERT_CLOSE(got, want, sweeps[c].rtol, 3e-45); /* 2 ulps of the smallest denormal */
        if (!close_enough(got, want, sweeps[c].rtol, 3e-45))
            fprintf(stderr, "  (%s over [%g, %g])\n", sweeps[c].op, sweeps[c].lo, sweeps[c].hi);
        free(v);
        tide_tensor *all[] = {x, want, got};
        release_all(all, 3);
    }
}

/* Neg, Abs, Sign, Square on integers; the most negative value wraps. */
static void test_unary_int(void)
{
    const char *ops[] = {"Neg", "Abs", "Sign", "Square"};
    for (int o = 0; o < 4; o++)
        for (size_t d = 0; d < sizeof INT_DTS / sizeof INT_DTS[0]; d++) {
            tide_dtype dt = INT_DTS[d];
            if (!is_signed(dt) && o != 3)
                continue;
            tide_tensor *x = rand_ints(dt, 2, TH_DIMS(5, 9), 0);
            int64_t v[45];
            for (int i = 0; i < 45; i++) {
                i128 a = get_i(x, i);
                v[i] = wrap(o == 0 ? -a : o == 1 ? (a < 0 ? -a : a) : o == 2 ? (a > 0) - (a < 0) : a * a, dt);
            }
            tide_tensor *want = make_i(dt, 2, TH_DIMS(5, 9), v), *got = run1(ops[o], x);
            ASSERT_EXACT(got, want);
            tide_tensor *all[] = {x, want, got};
            release_all(all, 3);
        }
    int64_t x[] = {INT32_MIN, INT32_MAX, -5, 0, 46341};
    int64_t neg[] = {INT32_MIN, -INT32_MAX, 5, 0, -46341}, abs_[] = {INT32_MIN, INT32_MAX, 5, 0, 46341};
    int64_t sign[] = {-1, 1, -1, 0, 1}, sq[] = {0, 1, 25, 0, wrap((i128)46341 * 46341, TIDE_INT32)};
    const char *ops2[] = {"Neg", "Abs", "Sign", "Square"};
    const int64_t *wants[] = {neg, abs_, sign, sq};
    tide_tensor *tx = make_i(TIDE_INT32, 1, TH_DIMS(5), x);
    for (int o = 0; o < 4; o++) {
        tide_tensor *want = make_i(TIDE_INT32, 1, TH_DIMS(5), wants[o]), *got = run1(ops2[o], tx);
        ASSERT_EXACT(got, want);
        tide_tensor *all[] = {want, got};
        release_all(all, 2);
    }
    tide_tensor_release(tx);
    tide_tensor *m = make_i(TIDE_INT64, 1, TH_DIMS(2), (int64_t[]){INT64_MIN, INT64_MIN + 1});
    tide_tensor *wm = make_i(TIDE_INT64, 1, TH_DIMS(2), (int64_t[]){INT64_MIN, INT64_MAX}),
                *gm = run1("Abs", m);
    ASSERT_EXACT(gm, wm);
    tide_tensor *all[] = {m, wm, gm};
    release_all(all, 3);
}

/* ---------------------------------------------------------------- ClipByValue */

/* TensorFlow's order, written out: min with the upper bound first, then max with the lower one. */
static double clip_ref(double t, double lo, double hi)
{
    double v = isnan(t) ? t : t > hi ? hi : t;
    return isnan(v) ? v : v < lo ? lo : v;
}

static void test_clip_by_value(void)
{
    const tide_dtype dts[] = {TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_INT32, TIDE_INT64, TIDE_UINT8};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        tide_dtype dt = dts[d];
        bool flt = tide_dtype_is_float(dt);
        double tv[12], lov[12], hiv[12], w1[12], w2[12];
        for (int i = 0; i < 12; i++) {
            tv[i] = flt ? th_rand(-10, 10) : floor(th_rand(0, 100));
            lov[i] = flt ? th_rand(-5, 0) : floor(th_rand(0, 40));
            hiv[i] = i == 3 ? lov[i] - 2 : lov[i] + (flt ? th_rand(0, 6) : floor(th_rand(0, 40)));
            if (!flt && hiv[i] < 0)
                hiv[i] = 0; /* uint8 */
        }
        if (flt)
            tv[0] = NAN;
        tide_tensor *t = th_from_doubles(dt, 2, TH_DIMS(3, 4), tv, 0);
        tide_tensor *lo = th_from_doubles(dt, 2, TH_DIMS(3, 4), lov, 0);
        tide_tensor *hi = th_from_doubles(dt, 2, TH_DIMS(3, 4), hiv, 0);
        tide_tensor *lo_s = th_from_doubles(dt, 0, NULL, &lov[1], 0), *hi_s = th_from_doubles(dt, 0, NULL, &hiv[1], 0);
        for (int i = 0; i < 12; i++) { /* the values as the dtype holds them */
            double ti = tide_tensor_get_f64(t, i);
            w1[i] = clip_ref(ti, tide_tensor_get_f64(lo, i), tide_tensor_get_f64(hi, i));
            w2[i] = clip_ref(ti, tide_tensor_get_f64(lo_s, 0), tide_tensor_get_f64(hi, i));
        }
        tide_tensor *want1 = th_from_doubles(dt, 2, TH_DIMS(3, 4), w1, 0);
        tide_tensor *want2 = th_from_doubles(dt, 2, TH_DIMS(3, 4), w2, 0);
        tide_tensor *got1 = th_run1("ClipByValue", (tide_tensor *[]){t, lo, hi}, 3, NULL);
        tide_tensor *got2 = th_run1("ClipByValue", (tide_tensor *[]){t, lo_s, hi}, 3, NULL);
        TH_ASSERT_CLOSE(got1, want1, 0, 0);
        TH_ASSERT_CLOSE(got2, want2, 0, 0);
        if (flt)
            CU_ASSERT(got1 && isnan(tide_tensor_get_f64(got1, 0)));
        /* element 3's bounds are crossed (lo > hi): the result is lo */
        CU_ASSERT(got1 && tide_tensor_get_f64(got1, 3) == tide_tensor_get_f64(lo, 3));
        tide_tensor *all[] = {t, lo, hi, lo_s, hi_s, want1, want2, got1, got2};
        release_all(all, 9);
    }
    /* bounds of another shape are refused, at graph time and by the kernel */
    tide_tensor *t = th_f32(2, TH_DIMS(2, 3), NULL), *b3 = th_f32(1, TH_DIMS(3), NULL), *s0 = th_f32(0, NULL, NULL);
    TH_ASSERT_FAILS("ClipByValue", ((tide_tensor *[]){t, b3, s0}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "clip_value_min of shape [3] must be a scalar or have t's shape [2, 3]");
    TH_ASSERT_FAILS("ClipByValue", ((tide_tensor *[]){t, s0, b3}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "clip_value_max of shape [3] must be a scalar");
    tide_error *err = tide_error_new();
    const char *text = "t = Placeholder(dtype=float32)\n l = Placeholder(dtype=float32)\n"
                       "h = Placeholder(dtype=float32)\n c = ClipByValue(t, l, h)\n";
    tide_tensor *out = run_graph_text(text, (const char *[]){"t", "l", "h"}, (tide_tensor *[]){t, s0, b3}, 3,
                                      "c", err);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "clip_value_max of shape [3] must be a scalar or "
                                                           "have t's shape [2, 3]"));
    tide_error_free(err);
    tide_tensor *c = th_tensor(TIDE_COMPLEX64, 0, NULL, NULL);
    TH_ASSERT_FAILS("ClipByValue", ((tide_tensor *[]){c, c, c}), 3, NULL, TIDE_INVALID_ARGUMENT, "complex64");
    tide_tensor *all[] = {t, b3, s0, c};
    release_all(all, 4);
}

/* ---------------------------------------------------------------- AddN */

static void check_addn_f(tide_dtype dt, int n, int rank, const int64_t *dims)
{
    tide_tensor *in[8];
    for (int k = 0; k < n; k++)
        in[k] = rand_f(dt, rank, dims, -10, 10);
    int64_t m = count(rank, dims);
    double *v = malloc((size_t)(m ? m : 1) * sizeof *v);
    for (int64_t i = 0; i < m; i++) { /* in input order, rounded to the dtype after each add */
        double s = tide_tensor_get_f64(in[0], i);
        for (int k = 1; k < n; k++)
            s = dt == TIDE_FLOAT32 ? (double)(float)(s + tide_tensor_get_f64(in[k], i))
                                   : s + tide_tensor_get_f64(in[k], i);
        v[i] = s;
    }
    tide_tensor *want = make_f(dt, rank, dims, v), *got = th_run1("AddN", in, n, NULL);
    TH_ASSERT_CLOSE(got, want, dt == TIDE_FLOAT32 ? 1e-7 : 1e-15, 0);
    free(v);
    release_all(in, n);
    tide_tensor *all[] = {want, got};
    release_all(all, 2);
}

static void test_addn(void)
{
    for (int n = 1; n <= 7; n += 2) {
        check_addn_f(TIDE_FLOAT32, n, 2, TH_DIMS(3, 4));
        check_addn_f(TIDE_FLOAT64, n, 0, NULL);
        check_addn_f(TIDE_FLOAT32, n, 2, TH_DIMS(0, 4));
    }
    check_addn_f(TIDE_FLOAT32, 2, 1, TH_DIMS(1000)); /* several blocks */
    check_addn_f(TIDE_FLOAT64, 4, 2, TH_DIMS(300, 1000)); /* parallel */
    check_addn_f(TIDE_FLOAT32, 8, 3, TH_DIMS(7, 11, 13));
    /* N == 1 returns the input's values */
    tide_tensor *one = th_f32(1, TH_DIMS(2), (float[]){1.5f, -2}), *g1 = th_run1("AddN", &one, 1, NULL);
    TH_ASSERT_CLOSE(g1, one, 0, 0);
    /* integers wrap */
    for (size_t d = 0; d < sizeof INT_DTS / sizeof INT_DTS[0]; d++) {
        tide_dtype dt = INT_DTS[d];
        tide_tensor *in[3];
        for (int k = 0; k < 3; k++)
            in[k] = rand_ints(dt, 1, TH_DIMS(50), 0);
        int64_t v[50];
        for (int i = 0; i < 50; i++)
            v[i] = wrap((i128)get_i(in[0], i) + get_i(in[1], i) + get_i(in[2], i), dt);
        tide_tensor *want = make_i(dt, 1, TH_DIMS(50), v), *got = th_run1("AddN", in, 3, NULL);
        ASSERT_EXACT(got, want);
        release_all(in, 3);
        tide_tensor *all[] = {want, got};
        release_all(all, 2);
    }
    /* half: 0.25 + 0.5 + 1 = 1.75 exactly */
    double a[] = {0.25, -1}, b[] = {0.5, 2}, c[] = {1, 4}, w[] = {1.75, 5};
    for (tide_dtype dt = TIDE_FLOAT16; dt <= TIDE_BFLOAT16; dt++) {
        tide_tensor *in[3] = {make_f(dt, 1, TH_DIMS(2), a), make_f(dt, 1, TH_DIMS(2), b),
                              make_f(dt, 1, TH_DIMS(2), c)};
        tide_tensor *want = make_f(dt, 1, TH_DIMS(2), w), *got = th_run1("AddN", in, 3, NULL);
        TH_ASSERT_CLOSE(got, want, 0, 0);
        release_all(in, 3);
        tide_tensor *all[] = {want, got};
        release_all(all, 2);
    }
    tide_tensor *all[] = {one, g1};
    release_all(all, 2);
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void)
{
    tide_tensor *f23 = th_f32(2, TH_DIMS(2, 3), NULL), *f4 = th_f32(1, TH_DIMS(4), NULL);
    tide_tensor *i3 = th_i32(1, TH_DIMS(3), NULL), *f3 = th_f32(1, TH_DIMS(3), NULL);
    tide_tensor *b3 = th_tensor(TIDE_BOOL, 1, TH_DIMS(3), NULL),
                *u3 = th_tensor(TIDE_UINT8, 1, TH_DIMS(3), NULL);
    tide_tensor *c3 = th_tensor(TIDE_COMPLEX64, 1, TH_DIMS(3), NULL),
                *s3 = th_tensor(TIDE_STRING, 1, TH_DIMS(3), NULL);
    /* shapes that do not broadcast: both named */
    TH_ASSERT_FAILS("Add", ((tide_tensor *[]){f23, f4}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "x is [2, 3], y is [4]");
    TH_ASSERT_FAILS("Maximum", ((tide_tensor *[]){f4, f3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "incompatible shapes");
    /* dtypes: x and y differ; not in the op's set */
    TH_ASSERT_FAILS("Mul", ((tide_tensor *[]){f3, i3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "has dtype int32, expected float32");
    TH_ASSERT_FAILS("Add", ((tide_tensor *[]){b3, b3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype bool");
    TH_ASSERT_FAILS("Add", ((tide_tensor *[]){s3, s3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype string");
    TH_ASSERT_FAILS("Sqrt", &i3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype int32");
    TH_ASSERT_FAILS("Exp", &c3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype complex64");
    TH_ASSERT_FAILS("Neg", &u3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype uint8");
    TH_ASSERT_FAILS("Abs", &c3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype complex64");
    TH_ASSERT_FAILS("Mod", ((tide_tensor *[]){c3, c3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype complex64");
    TH_ASSERT_FAILS("FloorMod", ((tide_tensor *[]){c3, c3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype complex64");
    TH_ASSERT_FAILS("RealDiv", ((tide_tensor *[]){i3, i3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype int32");
    TH_ASSERT_FAILS("Reciprocal", &i3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype int32");
    TH_ASSERT_FAILS("Floor", &i3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype int32");
    TH_ASSERT_FAILS("Round", &c3, 1, NULL, TIDE_INVALID_ARGUMENT, "dtype complex64");
    TH_ASSERT_FAILS("SquaredDifference", ((tide_tensor *[]){c3, c3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "dtype complex64");
    TH_ASSERT_FAILS("Maximum", ((tide_tensor *[]){c3, c3}), 2, NULL, TIDE_INVALID_ARGUMENT,
                    "dtype complex64");
    TH_ASSERT_FAILS("Pow", ((tide_tensor *[]){b3, b3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype bool");
    /* input counts, attrs */
    TH_ASSERT_FAILS("Add", &f3, 1, NULL, TIDE_INVALID_ARGUMENT, "expects 2 inputs");
    TH_ASSERT_FAILS("Tanh", ((tide_tensor *[]){f3, f3}), 2, NULL, TIDE_INVALID_ARGUMENT, "expects 1 input");
    tide_attrs *bad = tide_attrs_new();
    tide_attrs_set_int(bad, "axis", 1);
    TH_ASSERT_FAILS("Sub", ((tide_tensor *[]){f3, f3}), 2, bad, TIDE_INVALID_ARGUMENT, "unknown attr 'axis'");
    tide_attrs *t64 = tide_attrs_new();
    tide_attrs_set_type(t64, "T", TIDE_FLOAT64);
    TH_ASSERT_FAILS("Div", ((tide_tensor *[]){f3, f3}), 2, t64, TIDE_INVALID_ARGUMENT, "float32");
    tide_attrs *tb = tide_attrs_new();
    tide_attrs_set_type(tb, "T", TIDE_BOOL);
    TH_ASSERT_FAILS("Sin", &f3, 1, tb, TIDE_INVALID_ARGUMENT, "bool");
    /* AddN */
    TH_ASSERT_FAILS("AddN", ((tide_tensor *[]){f3, f3, f4}), 3, NULL, TIDE_INVALID_ARGUMENT,
                    "input 0 is [3] but input 2 is [4]");
    TH_ASSERT_FAILS("AddN", ((tide_tensor *[]){f3, i3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype int32");
    TH_ASSERT_FAILS("AddN", ((tide_tensor *[]){b3, b3}), 2, NULL, TIDE_INVALID_ARGUMENT, "dtype bool");
    TH_ASSERT_FAILS("AddN", NULL, 0, NULL, TIDE_INVALID_ARGUMENT, "N=0 must be >= 1");
    tide_attrs *n3 = tide_attrs_new();
    tide_attrs_set_int(n3, "N", 3);
    TH_ASSERT_FAILS("AddN", ((tide_tensor *[]){f3, f3}), 2, n3, TIDE_INVALID_ARGUMENT, "N=3");
    tide_tensor *all[] = {f23, f4, i3, f3, b3, u3, c3, s3};
    release_all(all, 8);
    tide_attrs_free(bad);
    tide_attrs_free(t64);
    tide_attrs_free(tb);
    tide_attrs_free(n3);
}

/* Output shapes of broadcasting, including empty and size-1 dims, and the scalar fast path. */
static void test_shapes(void)
{
    const struct {
        shape_pair p;
        int rz;
        int64_t dz[4];
    } cases[] = {
        {{0, {0}, 0, {0}}, 0, {0}},            {{2, {1, 1}, 0, {0}}, 2, {1, 1}},
        {{0, {0}, 3, {1, 1, 1}}, 3, {1, 1, 1}}, {{2, {1, 0}, 2, {5, 1}}, 2, {5, 0}},
        {{3, {2, 0, 3}, 1, {3}}, 3, {2, 0, 3}}, {{1, {0}, 0, {0}}, 1, {0}},
        {{1, {0}, 1, {1}}, 1, {0}},            {{1, {3}, 4, {2, 1, 1, 3}}, 4, {2, 1, 1, 3}},
        {{4, {2, 1, 3, 1}, 3, {4, 1, 2}}, 4, {2, 4, 3, 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const shape_pair *p = &cases[i].p;
        tide_tensor *x = th_f32(p->rx, p->dx, NULL), *y = th_f32(p->ry, p->dy, NULL);
        tide_tensor *z = run2("Add", x, y), *z2 = run2("Pow", y, x);
        TH_ASSERT_SHAPE(z, cases[i].rz, cases[i].dz);
        TH_ASSERT_SHAPE(z2, cases[i].rz, cases[i].dz);
        tide_tensor *all[] = {x, y, z, z2};
        release_all(all, 4);
    }
    /* scalar with scalar for every binary op and the core dtypes */
    const char *ops[] = {"Add", "Sub", "Mul", "Div", "FloorDiv", "Mod", "Pow", "Maximum", "Minimum",
                         "FloorMod", "TruncateMod", "TruncateDiv", "AddV2", "SquaredDifference"};
    const double fw[] = {9, 5, 14, 3.5, 3, 1, 49, 7, 2, 1, 1, 3, 9, 25};
    const int64_t iw[] = {9, 5, 14, 3, 3, 1, 49, 7, 2, 1, 1, 3, 9, 25};
    for (int o = 0; o < 14; o++) {
        tide_tensor *in[] = {th_f32(0, NULL, (float[]){7}), th_f32(0, NULL, (float[]){2}),
                             th_f64(0, NULL, (double[]){7}), th_f64(0, NULL, (double[]){2}),
                             th_i32(0, NULL, (int32_t[]){7}), th_i32(0, NULL, (int32_t[]){2}),
                             th_i64(0, NULL, (int64_t[]){7}), th_i64(0, NULL, (int64_t[]){2})};
        for (int k = 0; k < 8; k += 2) {
            tide_tensor *got = run2(ops[o], in[k], in[k + 1]);
            tide_dtype dt = tide_tensor_dtype(in[k]);
            tide_tensor *want = k < 4 ? make_f(dt, 0, NULL, &fw[o]) : make_i(dt, 0, NULL, &iw[o]);
            ASSERT_EXACT(got, want);
            tide_tensor *all[] = {got, want};
            release_all(all, 2);
        }
        release_all(in, 8);
    }
}

/* ---------------------------------------------------------------- graphs */

/* Shape functions at graph time: partial shapes (? dims, unknown rank) are tolerated and refined,
 * known conflicts are refused naming both shapes. */
static void test_shape_inference(void)
{
    const char *base = "a = Placeholder(dtype=float32, shape=[?, 3])\n"
                       "b = Placeholder(dtype=float32, shape=[2, 1])\n"
                       "c = Placeholder(dtype=float32, shape=[?, 1])\n"
                       "d = Placeholder(dtype=float32, shape=*)\n"
                       "e = Placeholder(dtype=float32, shape=[0])\n"
                       "f = Placeholder(dtype=float32, shape=[?])\n"
                       "g = Placeholder(dtype=float32, shape=[2, ?])\n"
                       "h = Placeholder(dtype=float32, shape=[4])\n"
                       "i = Placeholder(dtype=float32, shape=[3, 2])\n"
                       "k = Placeholder(dtype=float32, shape=[])\n";
    char text[2048];
    snprintf(text, sizeof text, "%s%s", base,
             "ab = Add(a, b)\n ac = Mul(a, c)\n ad = Sub(a, d)\n fe = Maximum(f, e)\n ak = Pow(k, a)\n"
             "sa = Sqrt(a)\n sd = Neg(d)\n n1 = AddN([a, g, a])\n n2 = AddN([d, d])\n n3 = AddN([d, g])\n"
             "fh = FloorDiv(f, h)\n sg = SqrtGrad(a, g)\n rg = ReciprocalGrad(d, f)\n");
    tide_graph *g = th_graph_of(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    th_assert_output_shape(g, "ab", 0, 2, TH_DIMS(2, 3));
    th_assert_output_shape(g, "ac", 0, 2, TH_DIMS(-1, 3));
    th_assert_output_shape(g, "ad", 0, -1, NULL);
    th_assert_output_shape(g, "fe", 0, 1, TH_DIMS(0)); /* ? against 0 must be 0 (or 1): 0 */
    th_assert_output_shape(g, "ak", 0, 2, TH_DIMS(-1, 3));
    th_assert_output_shape(g, "sa", 0, 2, TH_DIMS(-1, 3));
    th_assert_output_shape(g, "sd", 0, -1, NULL);
    th_assert_output_shape(g, "n1", 0, 2, TH_DIMS(2, 3));
    th_assert_output_shape(g, "n2", 0, -1, NULL);
    th_assert_output_shape(g, "n3", 0, 2, TH_DIMS(2, -1));
    th_assert_output_shape(g, "fh", 0, 1, TH_DIMS(4));
    th_assert_output_shape(g, "sg", 0, 2, TH_DIMS(2, 3)); /* [?, 3] and [2, ?] merge */
    th_assert_output_shape(g, "rg", 0, 1, TH_DIMS(-1));
    tide_graph_free(g);
    th_assert_graph_fails(base, "bad = Add(a, h)", "x is [?, 3], y is [4]");
    th_assert_graph_fails(base, "bad = Div(b, i)", "x is [2, 1], y is [3, 2]");
    th_assert_graph_fails(base, "bad = AddN([a, b])", "input 0 is [?, 3] but input 1 is [2, 1]");
    th_assert_graph_fails(base, "bad = InvGrad(a, c)", "y and dy must have the same shape: y is [?, 3], dy is [?, 1]");
    th_assert_graph_fails(base, "bad = AddN([d, a, h])", "input 1 is [?, 3] but input 2 is [4]");
}

/* Through a session: errors only the kernel can see (shapes unknown at graph time) and outputs
 * written over intermediate tensors (the executor lets a kernel reuse a buffer nobody else holds). */
static tide_tensor *run_graph_text(const char *text, const char *const *feed_names, tide_tensor **feed_values,
                                   int num_feeds, const char *fetch, tide_error *err)
{
    tide_graph *g = th_graph_of(text);
    tide_tensor *out = NULL;
    tide_session *s = g ? tide_session_new(th_engine(), g, NULL, err) : NULL;
    tide_feed feeds[8];
    for (int i = 0; i < num_feeds; i++)
        feeds[i] = (tide_feed){{tide_graph_node(g, feed_names[i]), 0}, feed_values[i]};
    tide_output o = {g ? tide_graph_node(g, fetch) : NULL, 0};
    if (s && tide_session_run(s, NULL, feeds, num_feeds, &o, 1, &out, NULL, 0, NULL, err) != TIDE_OK)
        out = NULL;
    tide_session_free(s);
    tide_graph_free(g);
    return out;
}

static void test_graph_errors(void)
{
    tide_error *err = tide_error_new();
    const char *text = "p = Placeholder(dtype=float32)\n q = Placeholder(dtype=float32)\n r = Add(p, q)\n";
    tide_tensor *in[2] = {th_f32(2, TH_DIMS(2, 3), NULL), th_f32(1, TH_DIMS(4), NULL)};
    tide_tensor *out = run_graph_text(text, (const char *[]){"p", "q"}, in, 2, "r", err);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "x is [2, 3], y is [4]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'r'"));
    release_all(in, 2);
    const char *idiv = "p = Placeholder(dtype=int64)\n q = Placeholder(dtype=int64)\n m = Mod(p, q)\n";
    tide_tensor *iin[2] = {make_i(TIDE_INT64, 1, TH_DIMS(2), (int64_t[]){5, 6}),
                           make_i(TIDE_INT64, 0, NULL, (int64_t[]){0})};
    out = run_graph_text(idiv, (const char *[]){"p", "q"}, iin, 2, "m", err);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "integer modulo by zero"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "'m'"));
    release_all(iin, 2);
    tide_error_free(err);
}

static void test_graph_in_place(void)
{
    const char *text = "x = Placeholder(dtype=float32)\n w = Placeholder(dtype=float32)\n"
                       "r = Placeholder(dtype=float32)\n"
                       "n = Neg(x)\n m = Mul(w, n)\n b = Add(m, r)\n s = Square(b)\n q = Neg(w)\n"
                       "t = AddN([x, w, s, q])\n"; /* s, q are the executor's own: one is written over */
    float xv[6], wv[6], rv[3], want[6];
    for (int i = 0; i < 6; i++) {
        xv[i] = (float)th_rand(-3, 3);
        wv[i] = (float)th_rand(-3, 3);
    }
    for (int i = 0; i < 3; i++)
        rv[i] = (float)th_rand(-3, 3);
    for (int i = 0; i < 6; i++) {
        float m = wv[i] * -xv[i], b = m + rv[i % 3], s = b * b;
        want[i] = ((xv[i] + wv[i]) + s) + -wv[i]; /* AddN adds in input order */
    }
    tide_tensor *in[3] = {th_f32(2, TH_DIMS(2, 3), xv), th_f32(2, TH_DIMS(2, 3), wv),
                          th_f32(1, TH_DIMS(3), rv)};
    tide_error *err = tide_error_new();
    tide_tensor *got = run_graph_text(text, (const char *[]){"x", "w", "r"}, in, 3, "t", err);
    tide_tensor *tw = th_f32(2, TH_DIMS(2, 3), want);
    if (!got)
        fprintf(stderr, "%s\n", tide_error_message(err));
    TH_ASSERT_CLOSE(got, tw, 0, 0);
    /* integers, with a broadcast divisor and the input that may be overwritten on the right */
    const char *itext = "a = Placeholder(dtype=int32)\n d = Placeholder(dtype=int32)\n"
                        "na = Neg(a)\n q = FloorDiv(d, na)\n m = FloorMod(q, d)\n";
    tide_tensor *iin[2] = {make_i(TIDE_INT32, 2, TH_DIMS(2, 2), (int64_t[]){3, -4, 5, 7}),
                           make_i(TIDE_INT32, 1, TH_DIMS(2), (int64_t[]){7, -9})};
    /* na = [[-3, 4], [-5, -7]]; q = d // na = [[-3, -3], [-2, 1]]; m = q mod d = [[4, -3], [5, -8]] */
    tide_tensor *iw = make_i(TIDE_INT32, 2, TH_DIMS(2, 2), (int64_t[]){4, -3, 5, -8});
    tide_tensor *ig = run_graph_text(itext, (const char *[]){"a", "d"}, iin, 2, "m", err);
    ASSERT_EXACT(ig, iw);
    tide_error_free(err);
    release_all(in, 3);
    release_all(iin, 2);
    tide_tensor *all[] = {got, tw, iw, ig};
    release_all(all, 4);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_binary_float_broadcast),
        TH_TEST(test_binary_float_special),
        TH_TEST(test_binary_half),
        TH_TEST(test_div_no_nan),
        TH_TEST(test_gradient_ops),
        TH_TEST(test_binary_large),
        TH_TEST(test_binary_int_random),
        TH_TEST(test_int_division_semantics),
        TH_TEST(test_int_overflow_wraps),
        TH_TEST(test_int_pow),
        TH_TEST(test_division_by_zero),
        TH_TEST(test_complex),
        TH_TEST(test_unary_float),
        TH_TEST(test_unary_closed_forms),
        TH_TEST(test_unary_large),
        TH_TEST(test_unary_special),
        TH_TEST(test_rounding),
        TH_TEST(test_clip_by_value),
        TH_TEST(test_unary_f32_sweep),
        TH_TEST(test_unary_int),
        TH_TEST(test_addn),
        TH_TEST(test_errors),
        TH_TEST(test_shapes),
        TH_TEST(test_shape_inference),
        TH_TEST(test_graph_errors),
        TH_TEST(test_graph_in_place),
        TH_END,
    };
    return th_main("math", tests);
}
