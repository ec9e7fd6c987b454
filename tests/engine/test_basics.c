/* test_basics.c — value types: dtypes and their names, float16/bfloat16 conversion (the CPU's and the
 * GPU kernels' one definition, engine/half_convert.h, against rounding by plain arithmetic), shapes and
 * broadcasting, tensors (reference counts, views, strings, wrapping foreign memory, copies, text), and
 * attribute sets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "half_convert.h"
#include "harness.h"
#include "tide_op.h"

static void test_dtypes(void)
{
    for (int d = 1; d < TIDE_NUM_DTYPES; d++) {
        const char *name = tide_dtype_name((tide_dtype)d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(name);
        CU_ASSERT_EQUAL(tide_dtype_from_name(name), d);
        CU_ASSERT(tide_dtype_size((tide_dtype)d) > 0);
    }
    CU_ASSERT_EQUAL(tide_dtype_from_name("double"), TIDE_FLOAT64);
    CU_ASSERT_EQUAL(tide_dtype_from_name("nonsense"), TIDE_INVALID_DTYPE);
    CU_ASSERT_EQUAL(tide_dtype_size(TIDE_COMPLEX128), 16);
    CU_ASSERT(tide_dtype_is_float(TIDE_BFLOAT16) && !tide_dtype_is_float(TIDE_INT8));
    CU_ASSERT_PTR_NULL(tide_dtype_name((tide_dtype)99));
}

static void test_half_precision(void)
{
    /* Exactly representable values survive; rounding is to nearest even; limits and specials hold. */
    const float exact[] = {0.0f, 1.0f, -2.0f, 0.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        CU_ASSERT_EQUAL(tide_f16_to_f32(tide_f32_to_f16(exact[i])), exact[i]);
    CU_ASSERT_EQUAL(tide_f32_to_f16(1.0f), 0x3c00);
    CU_ASSERT_EQUAL(tide_f32_to_f16(65520.0f), 0x7c00);            /* overflow rounds to inf */
    CU_ASSERT_EQUAL(tide_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  /* tie -> even */
    CU_ASSERT_EQUAL(tide_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);  /* tie -> even (up) */
    CU_ASSERT(isnan(tide_f16_to_f32(tide_f32_to_f16(NAN))));
    CU_ASSERT(isinf(tide_f16_to_f32(tide_f32_to_f16(-INFINITY))));
    CU_ASSERT_EQUAL(tide_bf16_to_f32(tide_f32_to_bf16(3.0f)), 3.0f);
    CU_ASSERT_EQUAL(tide_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);  /* tie -> even */
    CU_ASSERT(isnan(tide_bf16_to_f32(tide_f32_to_bf16(NAN))));
    /* Every half value converts to float and back to itself (NaN payloads aside). */
    int mismatches = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tide_f16_to_f32((uint16_t)h);
        if (!isnan(f) && tide_f32_to_f16(f) != h)
            mismatches++;
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

/* x rounded to nearest even to a binary format with `bits` significant bits, exponents from min_exp
 * (below 2^min_exp: subnormal, a fixed step) and inf from `overflow` on (the largest finite plus half
 * its step). Plain arithmetic in long double (exact for a float and an int64), no bit tricks: the
 * reference the shared conversions (engine/half_convert.h: the CPU's and the GPU kernels') meet. */
static long double round_to_format(long double x, int bits, int min_exp, long double overflow)
{
    if (isnan(x) || isinf(x))
        return x;
    if (fabsl(x) >= overflow)
        return copysignl(INFINITY, x);
    int e;
    frexpl(x, &e); /* |x| in [2^(e-1), 2^e) */
    long double step = ldexpl(1.0L, (e - 1 < min_exp ? min_exp : e - 1) - bits + 1);
    return copysignl(nearbyintl(x / step) * step, x);
}

static long double to_f16(long double x) { return round_to_format(x, 11, -14, 65520.0L); }
static long double to_bf16(long double x) { return round_to_format(x, 8, -126, ldexpl(2.0L - 1.0L / 256, 127)); }

/* Whether a narrowed value (widened back: exact) is the reference's, NaN for NaN, zeros by sign. */
static bool same_value(float got, long double want)
{
    return isnan(want) ? isnan(got) : (long double)got == want && !signbit(got) == !signbit(want);
}

/* The float to float16 / bfloat16 conversions against round_to_format: every half value (widened and
 * narrowed back), the two halfway points around each and the floats just beside them (ties to even),
 * 2^20 random floats; int64 values of every magnitude through tide_half_from_i64 (the GPU's Cast) and
 * the CPU's Cast kernel, both rounded once. */
static void test_half_against_reference(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tide_half_to_f32((uint16_t)h), b = tide_bhalf_to_f32((uint16_t)h);
        bad += !same_value(f, to_f16(f)) || (!isnan(f) && tide_half_from_f32(f) != h);
        bad += !same_value(b, to_bf16(b)) || (!isnan(b) && tide_bhalf_from_f32(b) != h);
        if (isnan(f) || isinf(f) || h == 0x7bff || h == 0xfbff)
            continue;
        float next_f = tide_half_to_f32((uint16_t)(h + 1)), mid_f = f / 2 + next_f / 2; /* exact */
        float next_b = tide_bhalf_to_f32((uint16_t)(h + 1)), mid_b = isinf(next_b) || isnan(next_b) ? b : b / 2 + next_b / 2;
        const float tries[] = {mid_f, nextafterf(mid_f, -INFINITY), nextafterf(mid_f, INFINITY),
                               mid_b, nextafterf(mid_b, -INFINITY), nextafterf(mid_b, INFINITY)};
        for (int t = 0; t < 6; t++) {
            bad += !same_value(tide_half_to_f32(tide_half_from_f32(tries[t])), to_f16(tries[t]));
            bad += !same_value(tide_bhalf_to_f32(tide_bhalf_from_f32(tries[t])), to_bf16(tries[t]));
        }
    }
    for (int i = 0; i < (1 << 20); i++) {
        uint32_t u = (uint32_t)th_rand(0, 4294967296.0);
        float f;
        memcpy(&f, &u, sizeof f);
        bad += !same_value(tide_half_to_f32(tide_half_from_f32(f)), to_f16(f));
        bad += !same_value(tide_bhalf_to_f32(tide_bhalf_from_f32(f)), to_bf16(f));
    }
    CU_ASSERT_EQUAL(bad, 0);
    enum { N = 4096 };
    int64_t *v = malloc(sizeof *v * N);
    for (int i = 0; i < N; i++)
        v[i] = (int64_t)(th_rand(-1, 1) * ldexp(1.0, (int)th_rand(0, 63))) + (i % 7) - 3;
    v[0] = INT64_MIN, v[1] = INT64_MAX, v[2] = 2049, v[3] = 65520, v[4] = (1LL << 53) + 1, v[5] = 65519;
    v[6] = (1LL << 40) + (1LL << 32) + 1; /* above a bfloat16 halfway point by less than a float's step */
    v[7] = (1LL << 62) + (1LL << 54) + 1, v[8] = -v[7]; /* ... by less than a double's step */
    tide_tensor *x = th_i64(1, TH_DIMS(N), v);
    static const tide_dtype to[] = {TIDE_FLOAT16, TIDE_BFLOAT16};
    for (int t = 0; t < 2; t++) {
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_type(a, "DstT", to[t]);
        tide_tensor *cast = th_run1("Cast", &x, 1, a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cast);
        const uint16_t *c = tide_tensor_data(cast);
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            long double want = t ? to_bf16((long double)v[i]) : to_f16((long double)v[i]);
            uint16_t mine = t ? tide_bhalf_from_i64(v[i]) : tide_half_from_i64(v[i]);
            wrong += mine != c[i] || !same_value(t ? tide_bhalf_to_f32(mine) : tide_half_to_f32(mine), want);
        }
        CU_ASSERT_EQUAL(wrong, 0);
        tide_tensor_release(cast);
        tide_attrs_free(a);
    }
    tide_tensor_release(x);
    free(v);
}

static void test_shapes(void)
{
    tide_shape a = tide_shape_make(2, TH_DIMS(3, 1)), b = tide_shape_make(1, TH_DIMS(4)), o;
    CU_ASSERT(tide_shape_broadcast(&a, &b, &o));
    CU_ASSERT_EQUAL(o.rank, 2);
    CU_ASSERT_EQUAL(o.dims[0], 3);
    CU_ASSERT_EQUAL(o.dims[1], 4);
    tide_shape c = tide_shape_make(1, TH_DIMS(3));
    CU_ASSERT(!tide_shape_broadcast(&b, &c, &o));
    tide_shape u = tide_shape_make(2, TH_DIMS(-1, 4));
    CU_ASSERT(tide_shape_broadcast(&u, &b, &o));
    CU_ASSERT_EQUAL(o.dims[0], -1);
    tide_shape zero = tide_shape_make(2, TH_DIMS(0, 4));
    CU_ASSERT(tide_shape_broadcast(&u, &zero, &o)); /* an unknown dim against 0 can only be 0 (or fail) */
    CU_ASSERT_EQUAL(o.dims[0], 0);
    CU_ASSERT(tide_shape_compatible(&u, &(tide_shape){2, {7, 4}}));
    CU_ASSERT(!tide_shape_compatible(&u, &(tide_shape){2, {7, 5}}));
    CU_ASSERT_EQUAL(tide_shape_num_elements(&u), -1);
    char buf[TIDE_SHAPE_STR_MAX];
    CU_ASSERT_STRING_EQUAL(tide_shape_format(&u, buf, sizeof buf), "[?, 4]");
    tide_shape unk = tide_shape_unknown();
    CU_ASSERT_STRING_EQUAL(tide_shape_format(&unk, buf, sizeof buf), "<unknown>");
}

static void test_tensor_views(void)
{
    float v[6] = {0, 1, 2, 3, 4, 5};
    tide_tensor *t = th_f32(2, TH_DIMS(3, 2), v);
    CU_ASSERT(tide_tensor_is_exclusive(t));
    tide_error *err = tide_error_new();
    tide_shape s = tide_shape_make(2, TH_DIMS(2, -1));
    tide_tensor *r = tide_tensor_reshape(t, &s, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(tide_tensor_dim(r, 1), 3);
    CU_ASSERT_PTR_EQUAL(tide_tensor_data(r), tide_tensor_data(t)); /* no copy */
    CU_ASSERT(!tide_tensor_is_exclusive(t));                        /* the view shares the buffer */
    tide_tensor *sl = tide_tensor_slice(t, 1, 3, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sl);
    CU_ASSERT_EQUAL(tide_tensor_dim(sl, 0), 2);
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(sl))[0], 2.0f);
    tide_tensor_release(t); /* the views keep the buffer alive */
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(r))[5], 5.0f);
    tide_shape bad = tide_shape_make(1, TH_DIMS(4));
    CU_ASSERT_PTR_NULL(tide_tensor_reshape(r, &bad, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "cannot reshape [2, 3] (6 elements) to [4]"));
    CU_ASSERT_PTR_NULL(tide_tensor_slice(r, 1, 5, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_OUT_OF_RANGE);
    tide_tensor *empty = tide_tensor_slice(sl, 1, 1, err);
    CU_ASSERT_EQUAL(tide_tensor_num_elements(empty), 0);
    tide_tensor *copy = tide_tensor_copy(sl, err);
    CU_ASSERT(tide_tensor_equal(copy, sl, false));
    CU_ASSERT_PTR_NOT_EQUAL(tide_tensor_data(copy), tide_tensor_data(sl));
    tide_tensor_release(copy);
    tide_tensor_release(empty);
    tide_tensor_release(sl);
    tide_tensor_release(r);
    tide_error_free(err);
}

static int freed;
static void count_free(void *data, size_t bytes, void *arg)
{
    (void)bytes;
    CU_ASSERT_PTR_EQUAL(arg, &freed);
    free(data);
    freed++;
}

static void test_tensor_wrap_and_errors(void)
{
    double *mem = malloc(4 * sizeof(double));
    tide_shape s = tide_shape_vector(4);
    tide_error *err = tide_error_new();
    tide_tensor *t = tide_tensor_wrap(TIDE_FLOAT64, &s, mem, 4 * sizeof(double), count_free, &freed, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    tide_tensor *view = tide_tensor_slice(t, 0, 2, err);
    tide_tensor_release(t);
    CU_ASSERT_EQUAL(freed, 0);
    tide_tensor_release(view);
    CU_ASSERT_EQUAL(freed, 1);
    CU_ASSERT_PTR_NULL(tide_tensor_wrap(TIDE_FLOAT64, &s, mem, 8, NULL, NULL, err));
    tide_shape unknown = tide_shape_make(1, TH_DIMS(-1));
    CU_ASSERT_PTR_NULL(tide_tensor_new(TIDE_FLOAT32, &unknown, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "fully defined"));
    tide_shape huge = tide_shape_make(3, TH_DIMS(1LL << 40, 1LL << 20, 1LL << 10));
    CU_ASSERT_PTR_NULL(tide_tensor_new(TIDE_FLOAT32, &huge, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_RESOURCE_EXHAUSTED);
    tide_shape empty_big = tide_shape_make(3, TH_DIMS(1LL << 40, 1LL << 40, 0)); /* no elements: fine */
    tide_tensor *e = tide_tensor_new(TIDE_FLOAT32, &empty_big, err);
    CU_ASSERT_PTR_NOT_NULL(e);
    CU_ASSERT_EQUAL(e ? tide_tensor_num_elements(e) : -1, 0);
    tide_tensor_release(e);
    CU_ASSERT_PTR_NULL(tide_tensor_new_copy(TIDE_FLOAT32, &s, mem, 3, err));
    CU_ASSERT_PTR_NULL(tide_tensor_new((tide_dtype)77, &s, err));
    tide_error_free(err);
}

static void test_strings_and_format(void)
{
    tide_shape s = tide_shape_vector(2);
    tide_tensor *t = tide_tensor_new(TIDE_STRING, &s, NULL);
    CU_ASSERT_EQUAL(tide_tensor_string_set(t, 0, "hello", 5, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(tide_tensor_string_set(t, 1, "a\0b", 3, NULL), TIDE_OK);
    size_t len;
    CU_ASSERT_STRING_EQUAL(tide_tensor_string_get(t, 0, &len), "hello");
    tide_tensor_string_get(t, 1, &len);
    CU_ASSERT_EQUAL(len, 3);
    tide_tensor *c = tide_tensor_copy(t, NULL);
    CU_ASSERT(tide_tensor_equal(c, t, false));
    CU_ASSERT_EQUAL(tide_tensor_string_set(t, 5, "x", 1, NULL), TIDE_OUT_OF_RANGE);
    char *f = tide_tensor_format(c, 0, 3);
    CU_ASSERT_STRING_EQUAL(f, "[\"hello\", \"a\"]");
    free(f);
    tide_tensor_release(c);
    tide_tensor_release(t);
    float v[6] = {1, 2.5f, 3, 4, 5, 6};
    tide_tensor *m = th_f32(2, TH_DIMS(2, 3), v);
    f = tide_tensor_format(m, 0, 3);
    CU_ASSERT_STRING_EQUAL(f, "[[1.0000, 2.5000, 3.0000],\n [4.0000, 5.0000, 6.0000]]");
    free(f);
    tide_tensor_release(m);
    tide_shape big = tide_shape_vector(1000);
    tide_tensor *z = tide_tensor_new(TIDE_INT32, &big, NULL);
    f = tide_tensor_format(z, 100, 3);
    CU_ASSERT_STRING_EQUAL(f, "[0, 0, 0, ..., 0, 0, 0]");
    free(f);
    tide_tensor_release(z);
}

static void test_attrs(void)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int(a, "n", 3);
    tide_attrs_set_int(a, "n", 4); /* replaces */
    tide_attrs_set_string(a, "pad", "SAME");
    int64_t perm[3] = {2, 0, 1};
    tide_attrs_set_int_list(a, "perm", perm, 3);
    tide_attrs *b = tide_attrs_clone(a);
    tide_attrs_free(a);
    int64_t n = 0;
    CU_ASSERT(tide_attrs_get_int(b, "n", &n));
    CU_ASSERT_EQUAL(n, 4);
    const char *pad = NULL;
    CU_ASSERT(tide_attrs_get_string(b, "pad", &pad));
    CU_ASSERT_STRING_EQUAL(pad, "SAME");
    const int64_t *p;
    int count;
    CU_ASSERT(tide_attrs_get_int_list(b, "perm", &p, &count));
    CU_ASSERT_EQUAL(count, 3);
    CU_ASSERT_EQUAL(p[0], 2);
    bool flag;
    CU_ASSERT(!tide_attrs_get_bool(b, "n", &flag)); /* wrong type */
    CU_ASSERT(!tide_attrs_get_int(b, "missing", &n));
    CU_ASSERT_EQUAL(tide_attrs_count(b), 3);
    tide_attrs_free(b);
}

/* The list kinds that hold strings, bools, shapes and tensors: deep copies (the strings copied, the
 * tensors retained), getters by kind. */
static void test_attr_lists_of_every_kind(void)
{
    tide_attrs *a = tide_attrs_new();
    char name0[] = "first";
    const char *names[] = {name0, ""};
    tide_attrs_set_string_list(a, "names", names, 2);
    name0[0] = 'F'; /* the attrs hold their own copy */
    bool bits[] = {true, false};
    tide_attrs_set_bool_list(a, "bits", bits, 2);
    tide_shape shapes[] = {tide_shape_matrix(2, -1), tide_shape_unknown()};
    tide_attrs_set_shape_list(a, "shapes", shapes, 2);
    float one = 1;
    tide_tensor *t = th_f32(0, NULL, &one);
    tide_attrs_set_tensor_list(a, "tensors", &t, 1);
    tide_attrs *b = tide_attrs_clone(a);
    tide_attrs_free(a);
    CU_ASSERT(tide_tensor_is_exclusive(t) == false); /* retained by b */
    tide_tensor_release(t);
    const char *const *ns;
    const bool *bs;
    const tide_shape *ss;
    tide_tensor *const *ts;
    int n = 0;
    CU_ASSERT(tide_attrs_get_string_list(b, "names", &ns, &n) && n == 2 && !strcmp(ns[0], "first") && !ns[1][0]);
    CU_ASSERT(tide_attrs_get_bool_list(b, "bits", &bs, &n) && n == 2 && bs[0] && !bs[1]);
    CU_ASSERT(tide_attrs_get_shape_list(b, "shapes", &ss, &n) && n == 2 && ss[0].dims[1] == -1 && ss[1].rank == -1);
    CU_ASSERT(tide_attrs_get_tensor_list(b, "tensors", &ts, &n) && n == 1 && tide_tensor_get_f64(ts[0], 0) == 1);
    CU_ASSERT(!tide_attrs_get_int_list(b, "names", &(const int64_t *){0}, &n)); /* another kind */
    CU_ASSERT_EQUAL(tide_attrs_type(b, "shapes"), TIDE_ATTR_SHAPE_LIST);
    tide_attrs_free(b);
}

static void test_errors(void)
{
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_OK);
    CU_ASSERT_STRING_EQUAL(tide_error_message(err), "");
    CU_ASSERT_EQUAL(tide_error_set(err, TIDE_NOT_FOUND, "no %s", "thing"), TIDE_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(tide_error_message(err), "no thing");
    CU_ASSERT_STRING_EQUAL(tide_status_name(TIDE_NOT_FOUND), "NOT_FOUND");
    tide_error_clear(err);
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_error_set(NULL, TIDE_INTERNAL, "x"), TIDE_INTERNAL); /* NULL error is allowed */
    tide_error_free(err);
    tide_error_free(NULL);
    tide_tensor_release(NULL);
    tide_attrs_free(NULL);
    tide_graph_free(NULL);
    tide_session_free(NULL);
    tide_engine_free(NULL);
}

/* Large buffers come back from tide's cache of released ones (not under AddressSanitizer, which
 * must see every free): the same memory, zero-filled again, for a tensor of the same size class; a
 * view keeps its buffer out of the cache until the view goes. */
static void test_large_buffer_reuse(void)
{
    int64_t dims[2] = {512, 513}; /* 1 MiB and a bit: a cached size class */
    tide_shape s = tide_shape_make(2, dims);
    tide_tensor *a = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    float *pa = tide_tensor_data(a);
    for (int64_t i = 0; i < tide_tensor_num_elements(a); i++)
        pa[i] = 7.0f;
    tide_tensor *view = tide_tensor_slice(a, 1, 3, NULL);
    tide_tensor_release(a);
    tide_tensor *b = tide_tensor_new(TIDE_FLOAT32, &s, NULL); /* a's buffer is still held by the view */
    CU_ASSERT_PTR_NOT_EQUAL(tide_tensor_data(b), pa);
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(view))[0], 7.0f);
    tide_tensor_release(view);
    tide_tensor *c = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
#if !defined(__SANITIZE_ADDRESS__)
    CU_ASSERT_PTR_EQUAL(tide_tensor_data(c), pa); /* a's memory, reused */
#endif
    const float *pc = tide_tensor_data(c);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < tide_tensor_num_elements(c); i++)
        nonzero += pc[i] != 0.0f;
    CU_ASSERT_EQUAL(nonzero, 0);
    tide_tensor_release(b);
    tide_tensor_release(c);
}

static void test_engine_options(void)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = -1;
    tide_error *err = tide_error_new();
    CU_ASSERT_PTR_NULL(tide_engine_new(&o, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "num_threads=-1"));
    o.num_threads = 3;
    o.num_cpu_devices = 2;
    tide_engine *e = tide_engine_new(&o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(tide_engine_num_threads(e), 3);
    CU_ASSERT_EQUAL(tide_engine_num_devices(e), 2);
    CU_ASSERT_STRING_EQUAL(tide_engine_device_name(e, 1), "/job:localhost/replica:0/task:0/device:cpu:1");
    CU_ASSERT_PTR_NULL(tide_engine_device_name(e, 2));
    const char *const *names;
    int n = tide_registry_op_names(&names);
    CU_ASSERT(n >= 8);
    for (int i = 1; i < n; i++)
        CU_ASSERT(strcmp(names[i - 1], names[i]) < 0);
    tide_engine_free(e);
    tide_error_free(err);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_dtypes), TH_TEST(test_half_precision), TH_TEST(test_half_against_reference), TH_TEST(test_shapes), TH_TEST(test_tensor_views),
        TH_TEST(test_tensor_wrap_and_errors), TH_TEST(test_strings_and_format), TH_TEST(test_attrs), TH_TEST(test_attr_lists_of_every_kind),
        TH_TEST(test_errors), TH_TEST(test_large_buffer_reuse), TH_TEST(test_engine_options), TH_END};
    return th_main("basics", tests);
}
