/* logic.c — CPU kernels of the comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual),
 * the logical ops (LogicalAnd, LogicalOr, LogicalNot), the float classifications (IsNan, IsInf,
 * IsFinite), Select and SelectV2.
 *
 * Binary ops share one driver: it broadcasts the operands (cpu_util.h) and calls a per-(op, dtype)
 * segment function on runs of contiguous output elements, where both operands advance or one of them
 * stays on one element; the switch on dtype happens once per call (a table lookup), never per
 * element. Large outputs are split across the engine's threads. SelectV2 broadcasts its three
 * operands with a three-way variant of the same walk and copies elements bit for bit by size; Select
 * (1.x) checks its stricter shapes and runs the same walk, a vector condition viewed as [n, 1, ...]. */
#include <string.h>

#include "../../engine/ops/logic_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised (cpu_util.h: before including it). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
#include "cpu_util.h"

#define COST_PER_ELEMENT 0.5 /* ns, a compare or a select of one element */
#define COST_PER_ROW 10.0    /* ns, locating a broadcast row */

/* ---------------------------------------------------------------- segment functions */

enum { SEG_BOTH, SEG_A_FIXED, SEG_B_FIXED };

/* out[0..n) = a OP b over one run: both operands advance, or one stays on its element 0. out may be
 * the buffer of an operand that advances (in-place forwarding): element i is read before written. */
typedef void (*seg_fn)(const void *a, const void *b, uint8_t *out, int64_t n, int mode);

#define DEFINE_SEG(name, T, OP)                                                                    \
    static void name(const void *av, const void *bv, uint8_t *out, int64_t n, int mode)            \
    {                                                                                              \
        const T *a = av, *b = bv;                                                                  \
        if (mode == SEG_BOTH) {                                                                    \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                out[i] = OP(a[i], b[i]);                                                           \
        } else if (mode == SEG_A_FIXED) {                                                          \
            const T x = a[0];                                                                      \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                out[i] = OP(x, b[i]);                                                              \
        } else {                                                                                   \
            const T y = b[0];                                                                      \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                out[i] = OP(a[i], y);                                                              \
        }                                                                                          \
    }

/* Native numbers: C's operators (exact for integers; IEEE for floats: NaN unordered, -0 == +0). */
#define EQ(x, y) ((x) == (y))
#define NE(x, y) ((x) != (y))
#define LT(x, y) ((x) < (y))
#define LE(x, y) ((x) <= (y))
#define GT(x, y) ((x) > (y))
#define GE(x, y) ((x) >= (y))

/* float16/bfloat16 compared on their bits: NaN is unordered; otherwise sign-magnitude mapped to a
 * signed key orders the values, with -0 and +0 both at key 0. */
static inline int half_key(uint16_t h)
{
    return h & 0x8000u ? -(int)(h & 0x7fffu) : (int)(h & 0x7fffu);
}
#define F16_NAN(h) (((h) & 0x7fffu) > 0x7c00u)
#define BF16_NAN(h) (((h) & 0x7fffu) > 0x7f80u)
#define HALF_CMP(ISNAN, x, y, OP) (!ISNAN(x) & !ISNAN(y) & (half_key(x) OP half_key(y)))
#define F16_EQ(x, y) HALF_CMP(F16_NAN, x, y, ==)
#define F16_NE(x, y) (!F16_EQ(x, y))
#define F16_LT(x, y) HALF_CMP(F16_NAN, x, y, <)
#define F16_LE(x, y) HALF_CMP(F16_NAN, x, y, <=)
#define F16_GT(x, y) HALF_CMP(F16_NAN, x, y, >)
#define F16_GE(x, y) HALF_CMP(F16_NAN, x, y, >=)
#define BF16_EQ(x, y) HALF_CMP(BF16_NAN, x, y, ==)
#define BF16_NE(x, y) (!BF16_EQ(x, y))
#define BF16_LT(x, y) HALF_CMP(BF16_NAN, x, y, <)
#define BF16_LE(x, y) HALF_CMP(BF16_NAN, x, y, <=)
#define BF16_GT(x, y) HALF_CMP(BF16_NAN, x, y, >)
#define BF16_GE(x, y) HALF_CMP(BF16_NAN, x, y, >=)

/* bool: truth values (any non-zero byte is true); complex: part by part; strings: bytes. */
typedef struct c64 {
    float re, im;
} c64;
typedef struct c128 {
    double re, im;
} c128;

static inline bool str_eq(const tide_tstring *x, const tide_tstring *y)
{
    return x->len == y->len && (x->len == 0 || memcmp(x->data, y->data, x->len) == 0);
}
#define B_EQ(x, y) (((x) != 0) == ((y) != 0))
#define B_NE(x, y) (((x) != 0) != ((y) != 0))
#define C_EQ(x, y) ((x).re == (y).re && (x).im == (y).im)
#define C_NE(x, y) (!C_EQ(x, y))
#define S_EQ(x, y) str_eq(&(x), &(y))
#define S_NE(x, y) (!str_eq(&(x), &(y)))
#define AND(x, y) (((x) != 0) & ((y) != 0))
#define OR(x, y) (((x) != 0) | ((y) != 0))

#define DEFINE_ORDERED(sfx, T, P)                                                                  \
    DEFINE_SEG(eq_##sfx, T, P##EQ)                                                                 \
    DEFINE_SEG(ne_##sfx, T, P##NE)                                                                 \
    DEFINE_SEG(lt_##sfx, T, P##LT)                                                                 \
    DEFINE_SEG(le_##sfx, T, P##LE)                                                                 \
    DEFINE_SEG(gt_##sfx, T, P##GT)                                                                 \
    DEFINE_SEG(ge_##sfx, T, P##GE)
DEFINE_ORDERED(i8, int8_t, )
DEFINE_ORDERED(i16, int16_t, )
DEFINE_ORDERED(i32, int32_t, )
DEFINE_ORDERED(i64, int64_t, )
DEFINE_ORDERED(u8, uint8_t, )
DEFINE_ORDERED(u16, uint16_t, )
DEFINE_ORDERED(f32, float, )
DEFINE_ORDERED(f64, double, )
DEFINE_ORDERED(f16, uint16_t, F16_)
DEFINE_ORDERED(bf16, uint16_t, BF16_)
DEFINE_SEG(eq_b, uint8_t, B_EQ)
DEFINE_SEG(ne_b, uint8_t, B_NE)
DEFINE_SEG(eq_c64, c64, C_EQ)
DEFINE_SEG(ne_c64, c64, C_NE)
DEFINE_SEG(eq_c128, c128, C_EQ)
DEFINE_SEG(ne_c128, c128, C_NE)
DEFINE_SEG(eq_str, tide_tstring, S_EQ)
DEFINE_SEG(ne_str, tide_tstring, S_NE)
DEFINE_SEG(logical_and, uint8_t, AND)
DEFINE_SEG(logical_or, uint8_t, OR)

enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, NUM_CMP };

#define REAL_ROW(op)                                                                               \
    [TIDE_INT8] = op##_i8, [TIDE_INT16] = op##_i16, [TIDE_INT32] = op##_i32,                       \
    [TIDE_INT64] = op##_i64, [TIDE_UINT8] = op##_u8, [TIDE_UINT16] = op##_u16,                     \
    [TIDE_FLOAT16] = op##_f16, [TIDE_BFLOAT16] = op##_bf16, [TIDE_FLOAT32] = op##_f32,             \
    [TIDE_FLOAT64] = op##_f64
#define ALL_ROW(op)                                                                                \
    REAL_ROW(op), [TIDE_BOOL] = op##_b, [TIDE_COMPLEX64] = op##_c64,                               \
                  [TIDE_COMPLEX128] = op##_c128, [TIDE_STRING] = op##_str

/* The segment function of each comparison per dtype; NULL where the op does not take the dtype. */
static const seg_fn cmp_table[NUM_CMP][TIDE_NUM_DTYPES] = {
    [CMP_EQ] = {ALL_ROW(eq)},  [CMP_NE] = {ALL_ROW(ne)},  [CMP_LT] = {REAL_ROW(lt)},
    [CMP_LE] = {REAL_ROW(le)}, [CMP_GT] = {REAL_ROW(gt)}, [CMP_GE] = {REAL_ROW(ge)},
};

/* ---------------------------------------------------------------- the binary driver */

typedef struct binary_job {
    seg_fn fn;
    const char *a, *b;
    uint8_t *out;
    size_t esize;         /* bytes per operand element */
    int mode;             /* flat walks: SEG_* */
    const tide_bcast *bc; /* row walks */
} binary_job;

static void binary_flat(int64_t begin, int64_t end, void *arg)
{
    const binary_job *j = arg;
    size_t off = (size_t)begin * j->esize;
    j->fn(j->a + (j->mode == SEG_A_FIXED ? 0 : off), j->b + (j->mode == SEG_B_FIXED ? 0 : off),
          j->out + begin, end - begin, j->mode);
}

static void binary_rows(int64_t begin, int64_t end, void *arg)
{
    const binary_job *j = arg;
    const tide_bcast *bc = j->bc;
    /* Collapsing leaves no dim where both operands broadcast, so at least one advances. */
    int mode = bc->a_inner && bc->b_inner ? SEG_BOTH : bc->a_inner ? SEG_B_FIXED : SEG_A_FIXED;
    for (int64_t r = begin; r < end; r++) {
        int64_t ia, ib;
        tide_bcast_row(bc, r, &ia, &ib);
        j->fn(j->a + (size_t)ia * j->esize, j->b + (size_t)ib * j->esize, j->out + r * bc->inner,
              bc->inner, mode);
    }
}

static tide_status incompatible(tide_kernel_ctx *ctx, const tide_shape *a, const tide_shape *b)
{
    char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
    return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "incompatible shapes %s and %s",
                             tide_shape_format(a, sa, sizeof sa), tide_shape_format(b, sb, sizeof sb));
}

/* Output 0 = fn(input 0, input 1) broadcast. lenient: when not NULL, shapes that cannot broadcast give
 * the scalar *lenient instead of an error. */
static tide_status binary_compute(tide_kernel_ctx *ctx, seg_fn fn, const uint8_t *lenient)
{
    const tide_tensor *a = tide_kernel_input(ctx, 0), *b = tide_kernel_input(ctx, 1);
    const tide_shape *sa = tide_tensor_shape(a), *sb = tide_tensor_shape(b);
    if (!fn)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(tide_tensor_dtype(a)));
    binary_job j = {.fn = fn, .a = tide_tensor_data(a), .b = tide_tensor_data(b),
                    .esize = tide_dtype_size(tide_tensor_dtype(a)), .mode = SEG_BOTH};
    if (tide_shape_equal(sa, sb)) { /* the common case: no broadcasting */
        tide_tensor *out = tide_kernel_forward_or_alloc(ctx, 0, 0, sa);
        if (!out)
            return tide_kernel_status(ctx);
        j.out = tide_tensor_data(out);
        tide_kernel_parallel_for(ctx, tide_tensor_num_elements(a), COST_PER_ELEMENT, binary_flat, &j);
        return TIDE_OK;
    }
    tide_bcast bc;
    if (!tide_bcast_init(&bc, sa, sb)) {
        if (!lenient)
            return incompatible(ctx, sa, sb);
        tide_shape scalar = tide_shape_scalar();
        tide_tensor *out = tide_kernel_alloc_output(ctx, 0, &scalar, false);
        if (out)
            *(uint8_t *)tide_tensor_data(out) = *lenient;
        return tide_kernel_status(ctx);
    }
    int fwd = tide_shape_equal(&bc.out, sa) ? 0 : tide_shape_equal(&bc.out, sb) ? 1 : -1;
    tide_tensor *out = fwd >= 0 ? tide_kernel_forward_or_alloc(ctx, fwd, 0, &bc.out)
                                : tide_kernel_alloc_output(ctx, 0, &bc.out, false);
    if (!out)
        return tide_kernel_status(ctx);
    j.out = tide_tensor_data(out);
    if (bc.out_n == 0)
        return TIDE_OK;
    if (bc.a_scalar || bc.b_scalar) {
        j.mode = bc.a_scalar ? SEG_A_FIXED : SEG_B_FIXED;
        tide_kernel_parallel_for(ctx, bc.out_n, COST_PER_ELEMENT, binary_flat, &j);
    } else {
        j.bc = &bc;
        tide_kernel_parallel_for(ctx, bc.rows, COST_PER_ELEMENT * (double)bc.inner + COST_PER_ROW,
                                 binary_rows, &j);
    }
    return TIDE_OK;
}

static const uint8_t lenient_false = 0, lenient_true = 1;

/* Equal/NotEqual: incompatible_shape_error is read once per node; the state is the scalar to give
 * for shapes that cannot broadcast, or NULL (an error). */
static tide_status equality_init(tide_kernel_ctx *ctx, void **state, const uint8_t *lenient)
{
    bool strict = true;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "incompatible_shape_error", &strict);
    *state = strict ? NULL : (void *)(uintptr_t)lenient;
    return TIDE_OK;
}

static tide_status equal_init(tide_kernel_ctx *ctx, void **state)
{
    return equality_init(ctx, state, &lenient_false);
}

static tide_status not_equal_init(tide_kernel_ctx *ctx, void **state)
{
    return equality_init(ctx, state, &lenient_true);
}

static seg_fn cmp_fn(const tide_kernel_ctx *ctx, int op)
{
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    return (unsigned)dt < TIDE_NUM_DTYPES ? cmp_table[op][dt] : NULL;
}

static tide_status equal_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, cmp_fn(ctx, CMP_EQ), tide_kernel_state(ctx));
}

static tide_status not_equal_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, cmp_fn(ctx, CMP_NE), tide_kernel_state(ctx));
}

static tide_status less_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, cmp_fn(ctx, CMP_LT), NULL);
}

static tide_status less_equal_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, cmp_fn(ctx, CMP_LE), NULL);
}

static tide_status greater_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, cmp_fn(ctx, CMP_GT), NULL);
}

static tide_status greater_equal_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, cmp_fn(ctx, CMP_GE), NULL);
}

static tide_status logical_and_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, logical_and, NULL);
}

static tide_status logical_or_compute(tide_kernel_ctx *ctx)
{
    return binary_compute(ctx, logical_or, NULL);
}

/* ---------------------------------------------------------------- LogicalNot */

typedef struct not_job {
    const uint8_t *in;
    uint8_t *out;
} not_job;

static void logical_not_range(int64_t begin, int64_t end, void *arg)
{
    const not_job *j = arg;
    const uint8_t *in = j->in; /* locals: a byte store could alias *j and force reloads */
    uint8_t *out = j->out;
    IVDEP for (int64_t i = begin; i < end; i++)
        out[i] = in[i] == 0;
}

static tide_status logical_not_compute(tide_kernel_ctx *ctx)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_tensor *out = tide_kernel_forward_or_alloc(ctx, 0, 0, tide_tensor_shape(x));
    if (!out)
        return tide_kernel_status(ctx);
    not_job j = {tide_tensor_data(x), tide_tensor_data(out)};
    tide_kernel_parallel_for(ctx, tide_tensor_num_elements(x), COST_PER_ELEMENT, logical_not_range, &j);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- IsNan, IsInf, IsFinite */

/* A float classification of every element: out[i] = CLASS(x[i]), by dtype (halves by their bits:
 * an all-ones exponent is inf with a zero mantissa, nan with any other). */
typedef void (*classify_fn)(const void *x, uint8_t *out, int64_t begin, int64_t end);

#define F16_INF(h) (((h) & 0x7fffu) == 0x7c00u)
#define BF16_INF(h) (((h) & 0x7fffu) == 0x7f80u)
#define F16_FINITE(h) (((h) & 0x7c00u) != 0x7c00u)
#define BF16_FINITE(h) (((h) & 0x7f80u) != 0x7f80u)
#define FLT_NAN(v) ((v) != (v))
#define FLT_INF(v) ((v) - (v) != (v) - (v) && (v) == (v))
#define FLT_FINITE(v) ((v) - (v) == (v) - (v))

#define DEFINE_CLASSIFY(name, T, CLASS)                                                            \
    static void name(const void *xv, uint8_t *out, int64_t begin, int64_t end)                    \
    {                                                                                              \
        const T *x = xv;                                                                           \
        for (int64_t i = begin; i < end; i++)                                                      \
            out[i] = (uint8_t)(CLASS(x[i]) != 0);                                                  \
    }
DEFINE_CLASSIFY(isnan_f32, float, FLT_NAN)
DEFINE_CLASSIFY(isnan_f64, double, FLT_NAN)
DEFINE_CLASSIFY(isnan_f16, uint16_t, F16_NAN)
DEFINE_CLASSIFY(isnan_bf16, uint16_t, BF16_NAN)
DEFINE_CLASSIFY(isinf_f32, float, FLT_INF)
DEFINE_CLASSIFY(isinf_f64, double, FLT_INF)
DEFINE_CLASSIFY(isinf_f16, uint16_t, F16_INF)
DEFINE_CLASSIFY(isinf_bf16, uint16_t, BF16_INF)
DEFINE_CLASSIFY(isfinite_f32, float, FLT_FINITE)
DEFINE_CLASSIFY(isfinite_f64, double, FLT_FINITE)
DEFINE_CLASSIFY(isfinite_f16, uint16_t, F16_FINITE)
DEFINE_CLASSIFY(isfinite_bf16, uint16_t, BF16_FINITE)

#define CLASSIFY_TABLE(op)                                                                         \
    {[TIDE_FLOAT32] = op##_f32, [TIDE_FLOAT64] = op##_f64, [TIDE_FLOAT16] = op##_f16,              \
     [TIDE_BFLOAT16] = op##_bf16}
static const classify_fn isnan_table[TIDE_NUM_DTYPES] = CLASSIFY_TABLE(isnan);
static const classify_fn isinf_table[TIDE_NUM_DTYPES] = CLASSIFY_TABLE(isinf);
static const classify_fn isfinite_table[TIDE_NUM_DTYPES] = CLASSIFY_TABLE(isfinite);

typedef struct classify_job {
    classify_fn fn;
    const void *x;
    uint8_t *out;
} classify_job;

static void classify_range(int64_t begin, int64_t end, void *arg)
{
    const classify_job *j = arg;
    j->fn(j->x, j->out, begin, end);
}

static tide_status classify(tide_kernel_ctx *ctx, const classify_fn *table)
{
    const tide_tensor *x = tide_kernel_input(ctx, 0);
    tide_dtype dt = tide_tensor_dtype(x);
    classify_fn fn = dt > TIDE_INVALID_DTYPE && dt < TIDE_NUM_DTYPES ? table[dt] : NULL;
    if (!fn)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, tide_tensor_shape(x), false);
    if (!out)
        return tide_kernel_status(ctx);
    classify_job j = {fn, tide_tensor_data(x), tide_tensor_data(out)};
    tide_kernel_parallel_for(ctx, tide_tensor_num_elements(x), COST_PER_ELEMENT, classify_range, &j);
    return TIDE_OK;
}

static tide_status is_nan_compute(tide_kernel_ctx *ctx) { return classify(ctx, isnan_table); }
static tide_status is_inf_compute(tide_kernel_ctx *ctx) { return classify(ctx, isinf_table); }
static tide_status is_finite_compute(tide_kernel_ctx *ctx) { return classify(ctx, isfinite_table); }

/* ---------------------------------------------------------------- Select */

/* Three operands broadcast to one output, collapsed like tide_bcast: adjacent output dims where the
 * same operands broadcast are merged; the walk is `rows` rows of `inner` elements, and within a row
 * operand k advances by step[k] (0 or 1). */
typedef struct bcast3 {
    tide_shape out;
    int64_t out_n;
    int rank;
    int64_t dims[TIDE_MAX_RANK];
    int64_t strides[3][TIDE_MAX_RANK]; /* 0 where operand k broadcasts */
    int64_t inner, rows, step[3];
} bcast3;

static bool bcast3_init(bcast3 *bc, const tide_shape *const s[3])
{
    tide_shape ct;
    memset(bc, 0, sizeof *bc);
    if (!tide_shape_broadcast(s[0], s[1], &ct) || !tide_shape_broadcast(&ct, s[2], &bc->out))
        return false;
    bc->out_n = tide_shape_num_elements(&bc->out);
    int r = bc->out.rank, n = 0;
    int64_t dims[TIDE_MAX_RANK];
    unsigned pattern[TIDE_MAX_RANK]; /* bit k: operand k is 1 along this dim */
    for (int i = 0; i < r; i++) {
        int64_t d = bc->out.dims[i];
        if (d == 1)
            continue;
        unsigned p = 0;
        for (int k = 0; k < 3; k++) {
            int ik = i - (r - s[k]->rank);
            if (ik < 0 || s[k]->dims[ik] == 1)
                p |= 1u << k;
        }
        if (n > 0 && pattern[n - 1] == p) {
            dims[n - 1] *= d;
        } else {
            dims[n] = d;
            pattern[n++] = p;
        }
    }
    if (n == 0) {
        dims[0] = 1;
        pattern[n++] = 0;
    }
    bc->rank = n;
    for (int k = 0; k < 3; k++) {
        int64_t stride = 1;
        for (int i = n - 1; i >= 0; i--) {
            bool broadcast = pattern[i] >> k & 1u;
            bc->strides[k][i] = broadcast ? 0 : stride;
            if (!broadcast)
                stride *= dims[i];
        }
    }
    memcpy(bc->dims, dims, sizeof(int64_t) * (size_t)n);
    bc->inner = dims[n - 1];
    bc->rows = bc->inner ? bc->out_n / bc->inner : 0;
    for (int k = 0; k < 3; k++)
        bc->step[k] = bc->strides[k][n - 1] ? 1 : 0;
    return true;
}

/* Element offsets of row `row`'s first element in each operand. */
static void bcast3_row(const bcast3 *bc, int64_t row, int64_t off[3])
{
    off[0] = off[1] = off[2] = 0;
    for (int i = bc->rank - 2; i >= 0; i--) {
        int64_t c = row % bc->dims[i];
        row /= bc->dims[i];
        for (int k = 0; k < 3; k++)
            off[k] += c * bc->strides[k][i];
    }
}

/* One run of n output elements: o[i] = c[i*sc] ? t[i*st] : e[i*se], steps 0 or 1. o may be t's or e's
 * buffer at the same position (in-place forwarding). Elements are copied as unsigned integers of
 * their size, blended with a mask so that random conditions cost no mispredicted branches. */
typedef void (*select_fn)(const uint8_t *c, const void *t, const void *e, void *o, int64_t n,
                          const int64_t step[3]);

#define MASK(UT, c) ((UT)(0 - (UT)((c) != 0))) /* all ones when c, else 0 */
#define BLEND(UT, c, x, y) ((UT)(((x) & MASK(UT, c)) | ((y) & (UT)~MASK(UT, c))))

#define DEFINE_SELECT(name, UT)                                                                    \
    static void name(const uint8_t *c, const void *tv, const void *ev, void *ov, int64_t n,        \
                     const int64_t step[3])                                                        \
    {                                                                                              \
        const UT *t = tv, *e = ev;                                                                 \
        UT *o = ov;                                                                                \
        if (!step[0]) { /* one condition for the run: a copy or a fill */                          \
            const UT *src = c[0] ? t : e;                                                          \
            if (step[c[0] ? 1 : 2]) {                                                              \
                if (src != o)                                                                      \
                    memmove(o, src, (size_t)n * sizeof(UT));                                       \
            } else {                                                                               \
                const UT v = src[0];                                                               \
                IVDEP for (int64_t i = 0; i < n; i++)                                              \
                    o[i] = v;                                                                      \
            }                                                                                      \
        } else if (step[1] && step[2]) {                                                           \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                o[i] = BLEND(UT, c[i], t[i], e[i]);                                                \
        } else if (step[1]) {                                                                      \
            const UT y = e[0];                                                                     \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                o[i] = BLEND(UT, c[i], t[i], y);                                                   \
        } else if (step[2]) {                                                                      \
            const UT x = t[0];                                                                     \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                o[i] = BLEND(UT, c[i], x, e[i]);                                                   \
        } else {                                                                                   \
            const UT x = t[0], y = e[0];                                                           \
            IVDEP for (int64_t i = 0; i < n; i++)                                                  \
                o[i] = BLEND(UT, c[i], x, y);                                                      \
        }                                                                                          \
    }

DEFINE_SELECT(select_1, uint8_t)
DEFINE_SELECT(select_2, uint16_t)
DEFINE_SELECT(select_4, uint32_t)
DEFINE_SELECT(select_8, uint64_t)

/* 16-byte elements (complex128) as two 8-byte halves: the 8-byte select over twice the elements
 * needs a condition per half, so this one spells the loops out. */
static void select_16(const uint8_t *c, const void *tv, const void *ev, void *ov, int64_t n,
                      const int64_t step[3])
{
    const uint64_t *t = tv, *e = ev;
    uint64_t *o = ov;
    const int64_t sc = step[0], st = 2 * step[1], se = 2 * step[2];
    IVDEP for (int64_t i = 0; i < n; i++) {
        uint64_t m = MASK(uint64_t, c[i * sc]);
        uint64_t lo = (t[i * st] & m) | (e[i * se] & ~m);
        uint64_t hi = (t[i * st + 1] & m) | (e[i * se + 1] & ~m);
        o[2 * i] = lo;
        o[2 * i + 1] = hi;
    }
}

static select_fn select_for_size(size_t size)
{
    switch (size) {
    case 1: return select_1;
    case 2: return select_2;
    case 4: return select_4;
    case 8: return select_8;
    case 16: return select_16;
    default: return NULL;
    }
}

typedef struct select_job {
    select_fn fn;
    const uint8_t *c;
    const char *t, *e;
    char *out;
    size_t esize;
    const bcast3 *bc;
} select_job;

/* Rank-1 walks (no broadcasting, or broadcasting along the whole output): split by element. */
static void select_flat(int64_t begin, int64_t end, void *arg)
{
    const select_job *j = arg;
    const int64_t *s = j->bc->step;
    j->fn(j->c + begin * s[0], j->t + (size_t)(begin * s[1]) * j->esize,
          j->e + (size_t)(begin * s[2]) * j->esize, j->out + (size_t)begin * j->esize, end - begin, s);
}

static void select_rows(int64_t begin, int64_t end, void *arg)
{
    const select_job *j = arg;
    const bcast3 *bc = j->bc;
    for (int64_t r = begin; r < end; r++) {
        int64_t off[3];
        bcast3_row(bc, r, off);
        j->fn(j->c + off[0], j->t + (size_t)off[1] * j->esize, j->e + (size_t)off[2] * j->esize,
              j->out + (size_t)(r * bc->inner) * j->esize, bc->inner, bc->step);
    }
}

/* Strings: each output element is a copy of the chosen one. */
static tide_status select_strings(tide_kernel_ctx *ctx, const select_job *j, tide_tensor *out)
{
    const bcast3 *bc = j->bc;
    const tide_tstring *t = (const tide_tstring *)j->t, *e = (const tide_tstring *)j->e;
    for (int64_t r = 0; r < bc->rows; r++) {
        int64_t off[3];
        bcast3_row(bc, r, off);
        for (int64_t i = 0; i < bc->inner; i++) {
            const tide_tstring *s = j->c[off[0] + i * bc->step[0]] ? &t[off[1] + i * bc->step[1]]
                                                                   : &e[off[2] + i * bc->step[2]];
            if (tide_tensor_string_set(out, r * bc->inner + i, s->data, s->len, NULL) != TIDE_OK)
                return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED,
                                         "out of memory copying a string of %zu bytes", s->len);
        }
    }
    return TIDE_OK;
}

/* Select with the operands broadcast from shapes s (the condition's may be a view of its own: a
 * [n] vector as [n, 1, ...] to pick rows). */
static tide_status select_broadcast(tide_kernel_ctx *ctx, const tide_shape *const s[3])
{
    const tide_tensor *in[3] = {tide_kernel_input(ctx, 0), tide_kernel_input(ctx, 1),
                                tide_kernel_input(ctx, 2)};
    const uint8_t *c = tide_tensor_data(in[0]);
    /* One condition over equal t and e (no wider than them): the chosen one is the output. */
    if (tide_tensor_num_elements(in[0]) == 1 && tide_shape_equal(s[1], s[2]) &&
        s[0]->rank <= s[1]->rank) {
        tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, c[0] ? 1 : 2));
        return tide_kernel_status(ctx);
    }
    bcast3 bc;
    if (!bcast3_init(&bc, s)) {
        char sc[TIDE_SHAPE_STR_MAX], st[TIDE_SHAPE_STR_MAX], se[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "condition %s, t %s and e %s do not broadcast to one shape",
                                 tide_shape_format(s[0], sc, sizeof sc),
                                 tide_shape_format(s[1], st, sizeof st),
                                 tide_shape_format(s[2], se, sizeof se));
    }
    if (tide_tensor_num_elements(in[0]) == 1) { /* one choice: hand the chosen tensor on */
        tide_tensor *pick = tide_kernel_input(ctx, c[0] ? 1 : 2);
        if (tide_shape_equal(tide_tensor_shape(pick), &bc.out)) {
            tide_kernel_set_output(ctx, 0, pick);
            return tide_kernel_status(ctx);
        }
    }
    tide_dtype dt = tide_tensor_dtype(in[1]);
    int fwd = tide_shape_equal(s[1], &bc.out) ? 1 : tide_shape_equal(s[2], &bc.out) ? 2 : -1;
    tide_tensor *out = fwd > 0 ? tide_kernel_forward_or_alloc(ctx, fwd, 0, &bc.out)
                               : tide_kernel_alloc_output(ctx, 0, &bc.out, false);
    if (!out)
        return tide_kernel_status(ctx);
    select_job j = {.fn = select_for_size(tide_dtype_size(dt)), .c = c, .t = tide_tensor_data(in[1]),
                    .e = tide_tensor_data(in[2]), .out = tide_tensor_data(out),
                    .esize = tide_dtype_size(dt), .bc = &bc};
    if (bc.out_n == 0)
        return TIDE_OK;
    if (dt == TIDE_STRING)
        return select_strings(ctx, &j, out);
    if (!j.fn)
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt));
    if (bc.rank == 1)
        tide_kernel_parallel_for(ctx, bc.out_n, COST_PER_ELEMENT, select_flat, &j);
    else
        tide_kernel_parallel_for(ctx, bc.rows, COST_PER_ELEMENT * (double)bc.inner + COST_PER_ROW,
                                 select_rows, &j);
    return TIDE_OK;
}

/* SelectV2: the three operands broadcast. */
static tide_status select_v2_compute(tide_kernel_ctx *ctx)
{
    const tide_shape *s[3] = {tide_tensor_shape(tide_kernel_input(ctx, 0)),
                              tide_tensor_shape(tide_kernel_input(ctx, 1)),
                              tide_tensor_shape(tide_kernel_input(ctx, 2))};
    return select_broadcast(ctx, s);
}

/* Select (TensorFlow 1.x): t and e of one shape; the condition a scalar, of that shape, or a vector
 * along the first dimension picking whole rows (slices) of t or e. */
static tide_status select_compute(tide_kernel_ctx *ctx)
{
    const tide_shape *c = tide_tensor_shape(tide_kernel_input(ctx, 0));
    const tide_shape *t = tide_tensor_shape(tide_kernel_input(ctx, 1));
    const tide_shape *e = tide_tensor_shape(tide_kernel_input(ctx, 2));
    char msg[TIDE_OP_MSG_MAX];
    if (!tide_logic_select_shapes_fit(c, t, e, msg, sizeof msg))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s", msg);
    tide_shape rows = *t; /* a vector condition as [n, 1, ..., 1] */
    for (int d = 1; d < rows.rank; d++)
        rows.dims[d] = 1;
    const tide_shape *s[3] = {c->rank == 1 && t->rank > 1 ? &rows : c, t, e};
    return select_broadcast(ctx, s);
}

/* ---------------------------------------------------------------- registration */

static void register_logic_kernels(void)
{
    static const struct {
        const char *op;
        tide_status (*init)(tide_kernel_ctx *, void **);
        tide_status (*compute)(tide_kernel_ctx *);
    } kernels[] = {
        {"Equal", equal_init, equal_compute},
        {"NotEqual", not_equal_init, not_equal_compute},
        {"Less", NULL, less_compute},
        {"LessEqual", NULL, less_equal_compute},
        {"Greater", NULL, greater_compute},
        {"GreaterEqual", NULL, greater_equal_compute},
        {"LogicalAnd", NULL, logical_and_compute},
        {"LogicalOr", NULL, logical_or_compute},
        {"LogicalNot", NULL, logical_not_compute},
        {"IsNan", NULL, is_nan_compute},
        {"IsInf", NULL, is_inf_compute},
        {"IsFinite", NULL, is_finite_compute},
        {"Select", NULL, select_compute},
        {"SelectV2", NULL, select_v2_compute},
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = kernels[i].op, .device_type = "cpu",
                                                  .init = kernels[i].init,
                                                  .compute = kernels[i].compute});
}
TIDE_REGISTER(register_logic_kernels)
