/* tensor_cast.c — converting a tensor to another dtype: tide_tensor_cast, the one implementation
 * behind the Cast op. The rules, for every pair of the 14 dtypes:
 *   - same dtype: the input itself (a new reference, no copy);
 *   - float -> integer: truncates toward zero and saturates at the target's limits; NaN -> 0;
 *   - integer -> integer of another width or signedness: wraps (two's complement, modulo 2^bits);
 *   - anything -> bool: x != 0 (NaN is true; complex: either part non-zero); bool -> number: 0 or 1;
 *   - to float16/bfloat16: rounded to nearest even once, also from float64 and int64 (no double
 *     rounding through float32); too large -> inf;
 *   - complex -> real: the real part; real -> complex: imaginary part 0;
 *   - number -> string: integers exactly, bool "true"/"false", floats as the shortest "%.<p>g" text
 *     that reads back to the same value (p from 6 to 9 for float32, 15 to 17 for float64, 3 to 5 for
 *     float16, 2 to 4 for bfloat16; from 1 for zero and subnormals; the smaller p on a tie, so
 *     float16 65504 is "65504", not "6.55e+04"), "nan", "inf", "-inf"; complex as "(re+imj)";
 *   - string -> number: the whole string, less surrounding white space, must be one number: C strtod
 *     syntax for floats (also "inf", "nan", hex floats; overflow gives inf), decimal integers within
 *     the target's range, true/false (any case)/1/0 for bool, "(re+imj)", "re+imj", "imj" or "re"
 *     for complex; anything else is INVALID_ARGUMENT naming the element's index and text.
 * Text is always read and written in the C locale ('.' as decimal point), whatever the process's.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "half_convert.h"
#include "internal.h"

/* GCC 12 at -O2 (the default build) vectorises only with its "very cheap" cost model, which leaves
 * the conversion loops (of unknown length) scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#define IVDEP _Pragma("GCC ivdep")
#elif defined(__clang__)
#define IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define IVDEP
#endif

typedef struct c64 {
    float re, im;
} c64;
typedef struct c128 {
    double re, im;
} c128;

/* ---------------------------------------------------------------- rounding helpers */

/* Narrowing to float16 and bfloat16 rounds once through half_convert.h's round-to-odd steps
 * (tide_half_f64_to_f32_odd, tide_half_i64_to_f64_odd), shared with the GPU kernels. */

/* Saturating float -> integer, F being float or double: NaN -> 0, truncation toward zero, clamped
 * to [LO, HI]. x is first clamped into [LO, SAFE_HI] (SAFE_HI: the largest F not above HI), where
 * the conversion is defined, then HI and NaN are patched in: no branches, so the loops vectorise. */
#define SATURATE(name, F, T, LO, HI, SAFE_HI)                                                      \
    static inline T name(F x)                                                                      \
    {                                                                                              \
        F c = x > (F)(LO) ? x : (F)(LO);                                                           \
        c = c < (F)(SAFE_HI) ? c : (F)(SAFE_HI);                                                   \
        T r = (T)c;                                                                                \
        r = x >= (F)(HI) ? (T)(HI) : r;                                                            \
        return x == x ? r : (T)0;                                                                  \
    }
#define SATURATE_BOTH(name, T, LO, HI, SAFE_HI_F, SAFE_HI_D)                                       \
    SATURATE(name##_f, float, T, LO, HI, SAFE_HI_F)                                                \
    SATURATE(name##_d, double, T, LO, HI, SAFE_HI_D)
SATURATE_BOTH(sat_i8, int8_t, INT8_MIN, INT8_MAX, 127.0f, 127.0)
SATURATE_BOTH(sat_i16, int16_t, INT16_MIN, INT16_MAX, 32767.0f, 32767.0)
SATURATE_BOTH(sat_i32, int32_t, INT32_MIN, INT32_MAX, 2147483520.0f, 2147483647.0)
SATURATE_BOTH(sat_i64, int64_t, INT64_MIN, INT64_MAX, 9223371487098961920.0f, 9223372036854774784.0)
SATURATE_BOTH(sat_u8, uint8_t, 0, UINT8_MAX, 255.0f, 255.0)
SATURATE_BOTH(sat_u16, uint16_t, 0, UINT16_MAX, 65535.0f, 65535.0)

/* A float argument stays float (the vectorisable width); anything else goes through double. */
#define BY_WIDTH(name, x) _Generic((x), float: name##_f, default: name##_d)(x)

/* ---------------------------------------------------------------- numbers to numbers */

/* Readers give a source element as an integer (int64_t, kind I) or a floating value (kind F). */
#define RD(x) (x)
#define RD_BOOL(x) ((int64_t)((x) != 0))
#define RD_F16(x) tide_f16_to_f32(x)
#define RD_BF16(x) tide_bf16_to_f32(x)
#define RD_RE(x) ((x).re)

/* Writers, I_<dst> from an integer, F_<dst> from a floating value. */
#define I_BOOL(x) ((uint8_t)((x) != 0))
#define I_I8(x) ((int8_t)(x))
#define I_I16(x) ((int16_t)(x))
#define I_I32(x) ((int32_t)(x))
#define I_I64(x) ((int64_t)(x))
#define I_U8(x) ((uint8_t)(x))
#define I_U16(x) ((uint16_t)(x))
#define I_F16(x) tide_f32_to_f16(tide_half_f64_to_f32_odd(tide_half_i64_to_f64_odd(x)))
#define I_BF16(x) tide_f32_to_bf16(tide_half_f64_to_f32_odd(tide_half_i64_to_f64_odd(x)))
#define I_F32(x) ((float)(x))
#define I_F64(x) ((double)(x))
#define I_C64(x) ((c64){(float)(x), 0.0f})
#define I_C128(x) ((c128){(double)(x), 0.0})
#define F_BOOL(x) ((uint8_t)((x) != 0))
#define F_I8(x) BY_WIDTH(sat_i8, x)
#define F_I16(x) BY_WIDTH(sat_i16, x)
#define F_I32(x) BY_WIDTH(sat_i32, x)
#define F_I64(x) BY_WIDTH(sat_i64, x)
#define F_U8(x) BY_WIDTH(sat_u8, x)
#define F_U16(x) BY_WIDTH(sat_u16, x)
#define F_F16(x) tide_f32_to_f16(tide_half_f64_to_f32_odd(x))
#define F_BF16(x) tide_f32_to_bf16(tide_half_f64_to_f32_odd(x))
#define F_F32(x) ((float)(x))
#define F_F64(x) ((double)(x))
#define F_C64(x) ((c64){(float)(x), 0.0f})
#define F_C128(x) ((c128){(double)(x), 0.0})

#define LOOP(ST, READ, DT, WRITE)                                                                  \
    do {                                                                                           \
        const ST *s_ = src;                                                                        \
        DT *d_ = dst;                                                                              \
        IVDEP for (int64_t i = 0; i < n; i++)                                                      \
            d_[i] = WRITE(READ(s_[i]));                                                            \
    } while (0)

/* One tight loop per (source, destination) pair: the switches run once per tensor. */
#define TO_NUMBER(ST, READ, K)                                                                     \
    switch (to) {                                                                                  \
    case TIDE_BOOL: LOOP(ST, READ, uint8_t, K##_BOOL); break;                                      \
    case TIDE_INT8: LOOP(ST, READ, int8_t, K##_I8); break;                                         \
    case TIDE_INT16: LOOP(ST, READ, int16_t, K##_I16); break;                                      \
    case TIDE_INT32: LOOP(ST, READ, int32_t, K##_I32); break;                                      \
    case TIDE_INT64: LOOP(ST, READ, int64_t, K##_I64); break;                                      \
    case TIDE_UINT8: LOOP(ST, READ, uint8_t, K##_U8); break;                                       \
    case TIDE_UINT16: LOOP(ST, READ, uint16_t, K##_U16); break;                                    \
    case TIDE_FLOAT16: LOOP(ST, READ, uint16_t, K##_F16); break;                                   \
    case TIDE_BFLOAT16: LOOP(ST, READ, uint16_t, K##_BF16); break;                                 \
    case TIDE_FLOAT32: LOOP(ST, READ, float, K##_F32); break;                                      \
    case TIDE_FLOAT64: LOOP(ST, READ, double, K##_F64); break;                                     \
    case TIDE_COMPLEX64: LOOP(ST, READ, c64, K##_C64); break;                                      \
    case TIDE_COMPLEX128: LOOP(ST, READ, c128, K##_C128); break;                                   \
    default: break;                                                                                \
    }

#define C_NONZERO(x) ((uint8_t)((x).re != 0 || (x).im != 0))
#define C_TO_C64(x) ((c64){(float)(x).re, (float)(x).im})
#define C_TO_C128(x) ((c128){(double)(x).re, (double)(x).im})

/* Complex sources: bool and complex destinations look at both parts, the rest at the real part. */
#define FROM_COMPLEX(ST)                                                                           \
    do {                                                                                           \
        if (to == TIDE_BOOL)                                                                       \
            LOOP(ST, RD, uint8_t, C_NONZERO);                                                      \
        else if (to == TIDE_COMPLEX64)                                                             \
            LOOP(ST, RD, c64, C_TO_C64);                                                           \
        else if (to == TIDE_COMPLEX128)                                                            \
            LOOP(ST, RD, c128, C_TO_C128);                                                         \
        else                                                                                       \
            TO_NUMBER(ST, RD_RE, F);                                                               \
    } while (0)

/* Converts n elements between two numeric (non-string) dtypes. */
static void cast_numbers(tide_dtype from, const void *src, tide_dtype to, void *dst, int64_t n)
{
    switch (from) {
    case TIDE_BOOL: TO_NUMBER(uint8_t, RD_BOOL, I); break;
    case TIDE_INT8: TO_NUMBER(int8_t, RD, I); break;
    case TIDE_INT16: TO_NUMBER(int16_t, RD, I); break;
    case TIDE_INT32: TO_NUMBER(int32_t, RD, I); break;
    case TIDE_INT64: TO_NUMBER(int64_t, RD, I); break;
    case TIDE_UINT8: TO_NUMBER(uint8_t, RD, I); break;
    case TIDE_UINT16: TO_NUMBER(uint16_t, RD, I); break;
    case TIDE_FLOAT16: TO_NUMBER(uint16_t, RD_F16, F); break;
    case TIDE_BFLOAT16: TO_NUMBER(uint16_t, RD_BF16, F); break;
    case TIDE_FLOAT32: TO_NUMBER(float, RD, F); break;
    case TIDE_FLOAT64: TO_NUMBER(double, RD, F); break;
    case TIDE_COMPLEX64: FROM_COMPLEX(c64); break;
    case TIDE_COMPLEX128: FROM_COMPLEX(c128); break;
    default: break;
    }
}

/* ---------------------------------------------------------------- the C locale for text */

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* Switches this thread to the C locale; returns what to restore (0: nothing). */
static locale_t enter_c_locale(void)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void leave_c_locale(locale_t old)
{
    if (old)
        uselocale(old);
}

/* ---------------------------------------------------------------- numbers to text */

#define TEXT_MAX 96

static int fmt_bool(char *buf, uint8_t v)
{
    return snprintf(buf, TEXT_MAX, "%s", v ? "true" : "false");
}

static int fmt_int(char *buf, int64_t v)
{
    return snprintf(buf, TEXT_MAX, "%" PRId64, v);
}

static int fmt_special(char *buf, double v)
{
    return snprintf(buf, TEXT_MAX, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
}

/* Whether text reads back (parsed and rounded as string -> dtype does) to the value v. */
static bool back_f64(const char *text, double v) { return strtod(text, NULL) == v; }
static bool back_f32(const char *text, double v) { return strtof(text, NULL) == (float)v; }
static bool back_f16(const char *text, double v) { return F_F16(strtod(text, NULL)) == F_F16(v); }
static bool back_bf16(const char *text, double v) { return F_BF16(strtod(text, NULL)) == F_BF16(v); }

/* The shortest "%.<p>g" text of v, p in [p0, pmax] (p0 = 1 for zero and subnormals, below `tiny`),
 * that reads back as v; the smaller p on a tie. pmax digits always read back, and if p digits read
 * back so do p + 1 (the nearest (p+1)-digit decimal is at least as near as the p-digit one), so the
 * search runs down from pmax and stops at the first p that does not: random data (most values need
 * all digits) costs two or three conversions. Returns the length. */
static int fmt_shortest(char *buf, double v, int p0, int pmax, double tiny,
                        bool (*reads_back)(const char *, double))
{
    if (!isfinite(v))
        return fmt_special(buf, v);
    if (v == 0)
        return snprintf(buf, TEXT_MAX, "%s", signbit(v) ? "-0" : "0");
    char tmp[TEXT_MAX];
    int best = -1;
    for (int p = pmax, lo = fabs(v) < tiny ? 1 : p0; p >= lo; p--) {
        int len = snprintf(tmp, TEXT_MAX, "%.*g", p, v);
        if (p < pmax && !reads_back(tmp, v))
            break;
        if (best < 0 || len <= best) {
            memcpy(buf, tmp, (size_t)len + 1);
            best = len;
        }
    }
    return best;
}

static int fmt_f64(char *buf, double v) { return fmt_shortest(buf, v, DBL_DIG, 17, DBL_MIN, back_f64); }
static int fmt_f32(char *buf, float v) { return fmt_shortest(buf, v, FLT_DIG, 9, FLT_MIN, back_f32); }

static int fmt_f16(char *buf, uint16_t h)
{
    return fmt_shortest(buf, tide_f16_to_f32(h), 3, 5, 0x1p-14, back_f16);
}

static int fmt_bf16(char *buf, uint16_t b)
{
    return fmt_shortest(buf, tide_bf16_to_f32(b), 2, 4, FLT_MIN, back_bf16);
}

/* "(re+imj)" / "(re-imj)"; the imaginary part's sign (also of -0 and -nan) goes in front of it. */
static int fmt_complex(char *buf, int (*part)(char *, double), double re, double im)
{
    char r[TEXT_MAX], i[TEXT_MAX];
    part(r, re);
    part(i, fabs(im));
    return snprintf(buf, TEXT_MAX, "(%s%c%sj)", r, signbit(im) ? '-' : '+', i);
}

static int fmt_f32_part(char *buf, double v) { return fmt_f32(buf, (float)v); }
static int fmt_c64(char *buf, c64 v) { return fmt_complex(buf, fmt_f32_part, v.re, v.im); }
static int fmt_c128(char *buf, c128 v) { return fmt_complex(buf, fmt_f64, v.re, v.im); }

#define FORMAT_LOOP(ST, FMT)                                                                       \
    do {                                                                                           \
        const ST *s_ = src;                                                                        \
        for (int64_t i = 0; i < n && st == TIDE_OK; i++) {                                         \
            int len = FMT(buf, s_[i]);                                                             \
            st = tide_tensor_string_set(out, i, buf, (size_t)len, err);                            \
        }                                                                                          \
    } while (0)

static tide_status format_strings(const tide_tensor *t, tide_tensor *out, tide_error *err)
{
    const void *src = tide_tensor_data(t);
    int64_t n = t->num_elements;
    char buf[TEXT_MAX];
    tide_status st = TIDE_OK;
    locale_t old = enter_c_locale();
    switch (t->dtype) {
    case TIDE_BOOL: FORMAT_LOOP(uint8_t, fmt_bool); break;
    case TIDE_INT8: FORMAT_LOOP(int8_t, fmt_int); break;
    case TIDE_INT16: FORMAT_LOOP(int16_t, fmt_int); break;
    case TIDE_INT32: FORMAT_LOOP(int32_t, fmt_int); break;
    case TIDE_INT64: FORMAT_LOOP(int64_t, fmt_int); break;
    case TIDE_UINT8: FORMAT_LOOP(uint8_t, fmt_int); break;
    case TIDE_UINT16: FORMAT_LOOP(uint16_t, fmt_int); break;
    case TIDE_FLOAT16: FORMAT_LOOP(uint16_t, fmt_f16); break;
    case TIDE_BFLOAT16: FORMAT_LOOP(uint16_t, fmt_bf16); break;
    case TIDE_FLOAT32: FORMAT_LOOP(float, fmt_f32); break;
    case TIDE_FLOAT64: FORMAT_LOOP(double, fmt_f64); break;
    case TIDE_COMPLEX64: FORMAT_LOOP(c64, fmt_c64); break;
    case TIDE_COMPLEX128: FORMAT_LOOP(c128, fmt_c128); break;
    default: break;
    }
    leave_c_locale(old);
    return st;
}

/* ---------------------------------------------------------------- text to numbers */

/* Each parser reads a whole NUL-terminated, trimmed text into *out; NULL on success, else why not. */

static const char *parse_bool(const char *s, uint8_t *out)
{
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = 1;
    else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = 0;
    else
        return "expected true, false, 1 or 0";
    return NULL;
}

static const char *parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    const char *digits = s + (*s == '+' || *s == '-');
    if (!isdigit((unsigned char)*digits))
        return "not an integer";
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return "not an integer";
    if (errno == ERANGE || v < lo || v > hi)
        return "out of range";
    *out = v;
    return NULL;
}

#define PARSE_INT(name, T, LO, HI)                                                                 \
    static const char *name(const char *s, T *out)                                                 \
    {                                                                                              \
        int64_t v = 0;                                                                             \
        const char *why = parse_int(s, LO, HI, &v);                                                \
        if (!why)                                                                                  \
            *out = (T)v;                                                                           \
        return why;                                                                                \
    }
PARSE_INT(parse_i8, int8_t, INT8_MIN, INT8_MAX)
PARSE_INT(parse_i16, int16_t, INT16_MIN, INT16_MAX)
PARSE_INT(parse_i32, int32_t, INT32_MIN, INT32_MAX)
PARSE_INT(parse_i64, int64_t, INT64_MIN, INT64_MAX)
PARSE_INT(parse_u8, uint8_t, 0, UINT8_MAX)
PARSE_INT(parse_u16, uint16_t, 0, UINT16_MAX)

/* One floating value at s (double, or float when single, each correctly rounded); *end after it. */
static double parse_real(const char *s, bool single, char **end)
{
    return single ? (double)strtof(s, end) : strtod(s, end);
}

static const char *parse_f64(const char *s, double *out)
{
    char *end;
    double v = parse_real(s, false, &end);
    if (end == s || *end)
        return "not a number";
    *out = v;
    return NULL;
}

static const char *parse_f32(const char *s, float *out)
{
    char *end;
    double v = parse_real(s, true, &end);
    if (end == s || *end)
        return "not a number";
    *out = (float)v;
    return NULL;
}

static const char *parse_f16(const char *s, uint16_t *out)
{
    double v = 0;
    const char *why = parse_f64(s, &v);
    if (!why)
        *out = F_F16(v);
    return why;
}

static const char *parse_bf16(const char *s, uint16_t *out)
{
    double v = 0;
    const char *why = parse_f64(s, &v);
    if (!why)
        *out = F_BF16(v);
    return why;
}

/* "(re+imj)", "re+imj", "re-imj", "imj", "re", with or without the parentheses. */
static const char *parse_complex(const char *s, bool single, double *re, double *im)
{
    const char *bad = "not a complex number";
    bool paren = *s == '(';
    const char *p = s + paren;
    char *end;
    double a = parse_real(p, single, &end);
    if (end == p)
        return bad;
    p = end;
    *re = a;
    *im = 0;
    if (*p == 'j') {
        *re = 0;
        *im = a;
        p++;
    } else if (*p == '+' || *p == '-') {
        double b = parse_real(p, single, &end);
        if (end == p || *end != 'j')
            return bad;
        *im = b;
        p = end + 1;
    }
    if (paren && *p++ != ')')
        return bad;
    return *p ? bad : NULL;
}

static const char *parse_c64(const char *s, c64 *out)
{
    double re, im;
    const char *why = parse_complex(s, true, &re, &im);
    if (!why)
        *out = (c64){(float)re, (float)im};
    return why;
}

static const char *parse_c128(const char *s, c128 *out)
{
    double re, im;
    const char *why = parse_complex(s, false, &re, &im);
    if (!why)
        *out = (c128){re, im};
    return why;
}

/* The text of s without surrounding white space, NUL-terminated in buf or (long) in *heap; *len
 * its length (a NUL byte inside makes strlen shorter). */
static const char *trimmed(const tide_tstring *s, char *buf, size_t size, char **heap, size_t *out_len)
{
    const char *p = s->data ? s->data : "";
    size_t len = s->len;
    while (len && isspace((unsigned char)*p))
        p++, len--;
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    char *dst = buf;
    if (len >= size) {
        dst = *heap = malloc(len + 1);
        if (!dst)
            return NULL;
    }
    memcpy(dst, p, len);
    dst[len] = 0;
    *out_len = len;
    return dst;
}

static tide_status parse_error(tide_error *err, const tide_tstring *s, int64_t i, tide_dtype to,
                               const char *why)
{
    int shown = s->len > 64 ? 64 : (int)s->len;
    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                          "cannot cast string element %lld (\"%.*s%s\") to %s: %s", (long long)i,
                          shown, s->data ? s->data : "", s->len > 64 ? "..." : "",
                          tide_dtype_name(to), why);
}

#define PARSE_LOOP(DT, PARSE)                                                                      \
    do {                                                                                           \
        DT *d_ = dst;                                                                              \
        for (int64_t i = 0; i < n && st == TIDE_OK; i++) {                                         \
            char *heap = NULL;                                                                     \
            size_t len = 0;                                                                        \
            const char *text = trimmed(&s[i], buf, sizeof buf, &heap, &len);                       \
            const char *why = !text ? NULL : strlen(text) < len ? "contains a NUL byte"            \
                                                                : PARSE(text, &d_[i]);             \
            if (!text)                                                                             \
                st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,                                  \
                                    "out of memory parsing a string of %zu bytes", s[i].len);      \
            else if (why)                                                                          \
                st = parse_error(err, &s[i], i, to, why);                                          \
            free(heap);                                                                            \
        }                                                                                          \
    } while (0)

static tide_status parse_strings(const tide_tensor *t, tide_tensor *out, tide_error *err)
{
    const tide_tstring *s = tide_tensor_data(t);
    void *dst = tide_tensor_data(out);
    tide_dtype to = out->dtype;
    int64_t n = t->num_elements;
    char buf[128];
    tide_status st = TIDE_OK;
    locale_t old = enter_c_locale();
    switch (to) {
    case TIDE_BOOL: PARSE_LOOP(uint8_t, parse_bool); break;
    case TIDE_INT8: PARSE_LOOP(int8_t, parse_i8); break;
    case TIDE_INT16: PARSE_LOOP(int16_t, parse_i16); break;
    case TIDE_INT32: PARSE_LOOP(int32_t, parse_i32); break;
    case TIDE_INT64: PARSE_LOOP(int64_t, parse_i64); break;
    case TIDE_UINT8: PARSE_LOOP(uint8_t, parse_u8); break;
    case TIDE_UINT16: PARSE_LOOP(uint16_t, parse_u16); break;
    case TIDE_FLOAT16: PARSE_LOOP(uint16_t, parse_f16); break;
    case TIDE_BFLOAT16: PARSE_LOOP(uint16_t, parse_bf16); break;
    case TIDE_FLOAT32: PARSE_LOOP(float, parse_f32); break;
    case TIDE_FLOAT64: PARSE_LOOP(double, parse_f64); break;
    case TIDE_COMPLEX64: PARSE_LOOP(c64, parse_c64); break;
    case TIDE_COMPLEX128: PARSE_LOOP(c128, parse_c128); break;
    default: break;
    }
    leave_c_locale(old);
    return st;
}

/* ---------------------------------------------------------------- the public entry */

tide_tensor *tide_tensor_cast(const tide_tensor *t, tide_dtype dt, tide_error *err)
{
    if (!t) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot cast a NULL tensor");
        return NULL;
    }
    if (dt <= TIDE_INVALID_DTYPE || dt >= TIDE_NUM_DTYPES) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot cast a %s tensor to invalid dtype %d",
                       tide_dtype_name(t->dtype), (int)dt);
        return NULL;
    }
    if (t->dtype == dt)
        return tide_tensor_retain((tide_tensor *)t);
    if (!tide_tensor_host_data(t, err)) /* device memory the host cannot read */
        return NULL;
    tide_tensor *out = tide__tensor_alloc(dt, &t->shape, false, err);
    if (!out)
        return NULL;
    tide_status st = TIDE_OK;
    if (t->dtype == TIDE_STRING)
        st = parse_strings(t, out, err);
    else if (dt == TIDE_STRING)
        st = format_strings(t, out, err);
    else
        cast_numbers(t->dtype, tide_tensor_data(t), dt, tide_tensor_data(out), t->num_elements);
    if (st != TIDE_OK) {
        tide_tensor_release(out);
        return NULL;
    }
    return out;
}
