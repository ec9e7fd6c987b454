/* test_conv.c — convolution and pooling: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool,
 * MaxPoolGrad, AvgPool, AvgPoolGrad, and the gradient functions registered for them.
 *
 * Every expected value is computed here, independently of the kernels: a direct 7-loop convolution
 * in double (n, oh, ow, co, kh, kw, ci; taps outside the input skipped), its two adjoints written as
 * scatter loops (each product input * filter adds to dInput and dFilter), and window loops for the
 * pooling ops; the output size and padding come from TensorFlow's rule restated below. Literal
 * tables pin the conventions (SAME's extra padding after, the first maximum taking a tie's gradient,
 * AvgPool dividing by the valid elements) against a misreading shared by kernel and reference.
 *
 * Tolerances: float64 1e-12 relative + 1e-12 absolute. float32: every sum of T products of values
 * in [-1, 1] may differ from the double reference by rounding only, bounded here by
 * |got - want| <= 1e-5 * |want| + 4e-7 * T (T = the number of terms in each output's sum).
 * th_run also runs every op through a graph session and requires identical results, which checks
 * that the threaded kernels are deterministic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/cpu/conv_winograd.h"
#include "../../kernels/cpu/cpu_util.h"
#include "harness.h"
#include "tide_op.h"

/* ---------------------------------------------------------------- helpers */

static int64_t count4(const int64_t d[4]) { return d[0] * d[1] * d[2] * d[3]; }

/* A tensor of dtype dt with uniform values in [-1, 1); *values receives them as doubles (rounded to
 * float32 first when dt is float32, so the reference sees exactly what the kernel sees). */
static tide_tensor *random4(tide_dtype dt, const int64_t d[4], double **values)
{
    int64_t n = count4(d);
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        v[i] = th_rand(-1, 1);
        if (dt == TIDE_FLOAT32)
            v[i] = (float)v[i];
    }
    *values = v;
    return th_from_doubles(dt, 4, d, v, 0);
}

static tide_tensor *sizes4(const int64_t d[4])
{
    const int32_t v[4] = {(int32_t)d[0], (int32_t)d[1], (int32_t)d[2], (int32_t)d[3]};
    return th_i32(1, TH_DIMS(4), v);
}

static tide_attrs *conv_attrs(int64_t sh, int64_t sw, int64_t dh, int64_t dw, const char *padding)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){1, sh, sw, 1}, 4);
    tide_attrs_set_int_list(a, "dilations", (const int64_t[]){1, dh, dw, 1}, 4);
    tide_attrs_set_string(a, "padding", padding);
    return a;
}

static tide_attrs *pool_attrs(int64_t kh, int64_t kw, int64_t sh, int64_t sw, const char *padding)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "ksize", (const int64_t[]){1, kh, kw, 1}, 4);
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){1, sh, sw, 1}, 4);
    tide_attrs_set_string(a, "padding", padding);
    return a;
}

static void assert_close(tide_tensor *got, tide_dtype dt, const int64_t d[4], const double *want,
                         int64_t terms)
{
    tide_tensor *w = th_from_doubles(dt, 4, d, want, 0);
    if (dt == TIDE_FLOAT32)
        TH_ASSERT_CLOSE(got, w, 1e-5, 4e-7 * (double)(terms > 0 ? terms : 1));
    else
        TH_ASSERT_CLOSE(got, w, 1e-12, 1e-12);
    tide_tensor_release(w);
}

/* ---------------------------------------------------------------- reference convolution */

/* TensorFlow's output size and leading padding along one dimension, restated for the tests; ex is
 * NULL, or EXPLICIT padding's [before, after]. */
static int64_t tf_out(int64_t in, int64_t k, int64_t s, int64_t d, bool same, const int64_t *ex, int64_t *pad)
{
    int64_t span = d * (k - 1) + 1;
    if (ex) {
        *pad = ex[0];
        return (in + ex[0] + ex[1] - span) / s + 1;
    }
    int64_t out = same ? (in + s - 1) / s : (in - span) / s + 1;
    int64_t total = (out - 1) * s + span - in;
    *pad = same && total > 0 ? total / 2 : 0;
    return out;
}

typedef struct conv_case {
    int64_t n, h, w, cin, kh, kw, cout;
    int64_t sh, sw, dh, dw;
    bool same;
    bool explicit_pad;  /* padding 'EXPLICIT' by pads (top, bottom, left, right) */
    int64_t pads[4];
} conv_case;

#define CASE_PADS(c, dim) ((c)->explicit_pad ? &(c)->pads[(dim) * 2] : NULL)
/* The case tables give the padding fields only for EXPLICIT cases. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* The three tensors of a case: x [n, h, w, cin], f [kh, kw, cin, cout], dy [n, oh, ow, cout]. */
typedef struct conv_ref {
    int64_t xd[4], fd[4], yd[4];
    int64_t pad_h, pad_w;
    double *y, *dx, *df; /* Conv2D, and the gradients for the dy below */
} conv_ref;

/* Visits every (x element, f element, y element) product of the convolution: the 7 loops. */
#define FOR_EACH_TAP(c, r, BODY)                                                                  \
    for (int64_t n = 0; n < (c)->n; n++)                                                         \
        for (int64_t oh = 0; oh < (r)->yd[1]; oh++)                                              \
            for (int64_t ow = 0; ow < (r)->yd[2]; ow++)                                          \
                for (int64_t co = 0; co < (c)->cout; co++)                                       \
                    for (int64_t kh = 0; kh < (c)->kh; kh++)                                     \
                        for (int64_t kw = 0; kw < (c)->kw; kw++)                                 \
                            for (int64_t ci = 0; ci < (c)->cin; ci++) {                          \
                                int64_t ih = oh * (c)->sh + kh * (c)->dh - (r)->pad_h;           \
                                int64_t iw = ow * (c)->sw + kw * (c)->dw - (r)->pad_w;           \
                                if (ih < 0 || ih >= (c)->h || iw < 0 || iw >= (c)->w)            \
                                    continue;                                                    \
                                int64_t xi = ((n * (c)->h + ih) * (c)->w + iw) * (c)->cin + ci;  \
                                int64_t fi = ((kh * (c)->kw + kw) * (c)->cin + ci) * (c)->cout + co; \
                                int64_t yi = ((n * (r)->yd[1] + oh) * (r)->yd[2] + ow) * (c)->cout + co; \
                                BODY;                                                            \
                            }

static conv_ref reference(const conv_case *c, const double *x, const double *f, const double *dy)
{
    conv_ref r = {.xd = {c->n, c->h, c->w, c->cin}, .fd = {c->kh, c->kw, c->cin, c->cout}};
    int64_t oh = tf_out(c->h, c->kh, c->sh, c->dh, c->same, CASE_PADS(c, 0), &r.pad_h);
    int64_t ow = tf_out(c->w, c->kw, c->sw, c->dw, c->same, CASE_PADS(c, 1), &r.pad_w);
    memcpy(r.yd, (int64_t[4]){c->n, oh, ow, c->cout}, sizeof r.yd);
    r.y = calloc((size_t)count4(r.yd) + 1, sizeof(double));
    r.dx = calloc((size_t)count4(r.xd) + 1, sizeof(double));
    r.df = calloc((size_t)count4(r.fd) + 1, sizeof(double));
    FOR_EACH_TAP(c, &r, {
        r.y[yi] += x[xi] * f[fi];
        if (dy) {
            r.dx[xi] += dy[yi] * f[fi];
            r.df[fi] += x[xi] * dy[yi];
        }
    })
    return r;
}

static void ref_free(conv_ref *r)
{
    free(r->y);
    free(r->dx);
    free(r->df);
}

/* Runs the three ops on random data for case c and compares each with the reference. */
static void check_case(const conv_case *c, tide_dtype dt)
{
    double *x, *f, *dy;
    int64_t pad;
    const int64_t xd[4] = {c->n, c->h, c->w, c->cin}, fd[4] = {c->kh, c->kw, c->cin, c->cout};
    const int64_t yd[4] = {c->n, tf_out(c->h, c->kh, c->sh, c->dh, c->same, CASE_PADS(c, 0), &pad),
                           tf_out(c->w, c->kw, c->sw, c->dw, c->same, CASE_PADS(c, 1), &pad), c->cout};
    tide_tensor *tx = random4(dt, xd, &x), *tf = random4(dt, fd, &f), *tdy = random4(dt, yd, &dy);
    tide_tensor *txs = sizes4(xd), *tfs = sizes4(fd);
    conv_ref r = reference(c, x, f, dy);
    tide_attrs *a = conv_attrs(c->sh, c->sw, c->dh, c->dw,
                               c->explicit_pad ? "EXPLICIT" : c->same ? "SAME" : "VALID");
    if (c->explicit_pad)
        tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){0, 0, c->pads[0], c->pads[1],
                                                                          c->pads[2], c->pads[3], 0, 0}, 8);

    tide_tensor *y = th_run1("Conv2D", (tide_tensor *[]){tx, tf}, 2, a);
    assert_close(y, dt, r.yd, r.y, c->kh * c->kw * c->cin);
    tide_tensor *dx = th_run1("Conv2DBackpropInput", (tide_tensor *[]){txs, tf, tdy}, 3, a);
    assert_close(dx, dt, r.xd, r.dx, c->kh * c->kw * c->cout);
    tide_tensor *df = th_run1("Conv2DBackpropFilter", (tide_tensor *[]){tx, tfs, tdy}, 3, a);
    assert_close(df, dt, r.fd, r.df, r.yd[0] * r.yd[1] * r.yd[2]);

    tide_tensor *all[] = {tx, tf, tdy, txs, tfs, y, dx, df};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
    ref_free(&r);
    free(x);
    free(f);
    free(dy);
}

static void check_cases(const conv_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        check_case(&cases[i], TIDE_FLOAT32);
        check_case(&cases[i], TIDE_FLOAT64);
    }
}

/* ---------------------------------------------------------------- Conv2D and its gradients */

/* TensorFlow's documented example: 3x3 input 1..9, 2x2 filter of ones. SAME puts the one padding
 * row/column after (bottom/right); VALID keeps the 2x2 windows that fit. */
static void test_conv2d_literal(void)
{
    const double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, fv[4] = {1, 1, 1, 1};
    tide_tensor *x = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 3, 3, 1), xv, 0);
    tide_tensor *f = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(2, 2, 1, 1), fv, 0);
    tide_attrs *same = conv_attrs(1, 1, 1, 1, "SAME"), *valid = conv_attrs(1, 1, 1, 1, "VALID");
    tide_tensor *y = th_run1("Conv2D", (tide_tensor *[]){x, f}, 2, same);
    const double want_same[9] = {12, 16, 9, 24, 28, 15, 15, 17, 9};
    tide_tensor *w = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 3, 3, 1), want_same, 0);
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(w);
    y = th_run1("Conv2D", (tide_tensor *[]){x, f}, 2, valid);
    const double want_valid[4] = {12, 16, 24, 28};
    w = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 1), want_valid, 0);
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor *all[] = {x, f, y, w};
    for (int i = 0; i < 4; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(same);
    tide_attrs_free(valid);
}

static void test_conv_same_valid_stride1(void)
{
    static const conv_case cases[] = {
        {2, 7, 6, 3, 3, 3, 5, 1, 1, 1, 1, true},
        {2, 7, 6, 3, 3, 3, 5, 1, 1, 1, 1, false},
        {1, 5, 5, 2, 1, 1, 3, 1, 1, 1, 1, true},    /* 1x1 filter */
        {3, 6, 5, 4, 4, 2, 17, 1, 1, 1, 1, true},   /* even filter: asymmetric padding; 17 > 16 outputs */
        {1, 4, 4, 3, 4, 4, 2, 1, 1, 1, 1, false},   /* filter as large as the input: one output */
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_conv_strides(void)
{
    static const conv_case cases[] = {
        {3, 9, 8, 4, 3, 2, 17, 2, 2, 1, 1, false},
        {3, 9, 8, 4, 3, 2, 17, 2, 2, 1, 1, true},
        {2, 7, 5, 3, 4, 4, 6, 2, 3, 1, 1, true},    /* odd sizes, unequal strides */
        {2, 7, 5, 3, 2, 3, 6, 3, 2, 1, 1, false},
        {1, 6, 6, 2, 1, 1, 4, 2, 2, 1, 1, false},   /* 1x1, stride 2: skips rows and columns */
        {2, 8, 8, 3, 3, 3, 5, 4, 4, 1, 1, true},    /* stride larger than the filter */
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_conv_dilations(void)
{
    static const conv_case cases[] = {
        {2, 9, 8, 3, 3, 3, 5, 1, 1, 2, 2, true},
        {2, 9, 8, 3, 3, 3, 5, 1, 1, 2, 2, false},
        {1, 10, 9, 2, 2, 3, 4, 1, 1, 3, 2, true},   /* unequal dilations */
        {2, 11, 10, 2, 3, 3, 3, 2, 2, 2, 2, true},  /* dilation with stride */
        {1, 9, 9, 1, 3, 3, 2, 1, 1, 2, 1, false},   /* Cin = 1, dilated height only */
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* padding 'EXPLICIT': zeros added as explicit_paddings says, unevenly, larger than the filter,
 * with strides and dilations; use_cudnn_on_gpu (in every TensorFlow GraphDef) changes nothing. */
static void test_conv_explicit_padding(void)
{
    static const conv_case cases[] = {
        {2, 7, 6, 3, 3, 3, 5, 1, 1, 1, 1, false, true, {1, 2, 0, 3}},
        {2, 7, 6, 3, 3, 3, 5, 2, 2, 1, 1, false, true, {0, 0, 0, 0}},  /* as VALID */
        {1, 5, 5, 2, 3, 2, 4, 1, 1, 1, 1, false, true, {4, 0, 3, 5}},  /* padding past the filter */
        {2, 9, 8, 3, 3, 3, 5, 2, 1, 2, 2, false, true, {2, 1, 1, 2}},  /* stride and dilation */
        {1, 2, 2, 1, 4, 4, 17, 1, 1, 1, 1, false, true, {1, 1, 2, 0}}, /* a filter larger than the input */
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
    /* the 3x3 input 1..9 padded by one row above and one column on the right, 2x2 filter of ones */
    const double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, fv[4] = {1, 1, 1, 1};
    const double want[9] = {3, 5, 3, 12, 16, 9, 24, 28, 15};
    tide_tensor *x = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(1, 3, 3, 1), xv, 0);
    tide_tensor *f = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(2, 2, 1, 1), fv, 0);
    tide_tensor *w = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(1, 3, 3, 1), want, 0);
    tide_attrs *a = conv_attrs(1, 1, 1, 1, "EXPLICIT");
    tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){0, 0, 1, 0, 0, 1, 0, 0}, 8);
    tide_attrs_set_bool(a, "use_cudnn_on_gpu", false);
    tide_tensor *y = th_run1("Conv2D", (tide_tensor *[]){x, f}, 2, a);
    TH_ASSERT_CLOSE(y, w, 0, 0);
    tide_tensor *all[] = {x, f, w, y};
    for (int i = 0; i < 4; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
}

/* The first layer of the tutorial CNN: one input channel, 5x5 filters, 32 outputs; batch 1 (the
 * image split into row tiles over the threads) and 3. */
static void test_conv_single_input_channel(void)
{
    static const conv_case cases[] = {
        {1, 28, 28, 1, 5, 5, 32, 1, 1, 1, 1, true},
        {3, 13, 11, 1, 5, 5, 32, 1, 1, 1, 1, true},
        {3, 13, 11, 1, 3, 3, 7, 2, 2, 1, 1, false},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* The second layer at batch 2 (several k chunks, whole channel blocks) and a wide, deep 1x1 and 3x3
 * case whose k runs are split into several chunks. */
static void test_conv_large(void)
{
    static const conv_case cases[] = {
        {2, 14, 14, 32, 5, 5, 64, 1, 1, 1, 1, true},
        {1, 6, 7, 300, 1, 1, 33, 1, 1, 1, 1, true},
        {1, 5, 5, 70, 3, 3, 20, 1, 1, 1, 1, false},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* The portable micro-kernels (those of CPUs without AVX2+FMA), forced with $TIDE_CONV_PORTABLE on
 * machines that have it: every kernel path (channel blocks, the narrow dot kernel, dilated pieces,
 * several chunks) once more. */
static void test_conv_portable_kernels(void)
{
    static const conv_case cases[] = {
        {2, 7, 6, 3, 3, 3, 5, 1, 1, 1, 1, true},
        {3, 9, 8, 4, 3, 2, 17, 2, 2, 1, 1, false},
        {2, 9, 8, 3, 3, 3, 5, 1, 1, 2, 2, true},
        {1, 4, 4, 3, 4, 4, 2, 1, 1, 1, 1, false},
        {1, 13, 11, 1, 5, 5, 32, 1, 1, 1, 1, true},
        {2, 14, 14, 32, 5, 5, 64, 1, 1, 1, 1, true},
    };
    setenv("TIDE_CONV_PORTABLE", "1", 1);
    check_cases(cases, sizeof cases / sizeof cases[0]);
    unsetenv("TIDE_CONV_PORTABLE");
}

/* Conv2DBackpropInput with strides runs as stride_h x stride_w phases (stride-1 convolutions of dy
 * with every stride-th tap); windows smaller than the stride leave phases without taps (zeros), and
 * $TIDE_CONV_UPSAMPLED forces the former method (dy upsampled with zeros), still used when strides
 * and dilations meet. Both are checked on the same cases under the best micro-kernels. */
static void test_conv_backprop_input_phases(void)
{
    static const conv_case cases[] = {
        {2, 9, 8, 5, 1, 1, 7, 2, 2, 1, 1, true},   /* 1x1 stride 2: three of four phases empty */
        {2, 9, 10, 3, 3, 3, 33, 2, 2, 1, 1, false},
        {1, 11, 10, 4, 2, 2, 5, 3, 3, 1, 1, true},  /* 2x2 stride 3 */
        {1, 12, 9, 6, 5, 3, 18, 2, 3, 1, 1, true},
        {2, 13, 11, 3, 7, 7, 40, 2, 1, 1, 1, false},
        {1, 13, 12, 2, 3, 3, 9, 2, 2, 2, 1, true},  /* dilated and strided: the upsampled method */
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
    setenv("TIDE_CONV_UPSAMPLED", "1", 1);
    check_cases(cases, sizeof cases / sizeof cases[0]);
    unsetenv("TIDE_CONV_UPSAMPLED");
}

/* A random case: windows 1/3/5/7, strides 1-2, SAME or VALID, odd sizes, output channels from one
 * (the narrow dot kernel) past two channel blocks of every micro-kernel family (AVX-512: 32 float32). */
static conv_case random_case(unsigned *seed)
{
    static const int64_t windows[4] = {1, 3, 5, 7}, depths[8] = {1, 3, 5, 8, 16, 17, 33, 70};
    conv_case c = {.n = 1 + rand_r(seed) % 2, .kh = windows[rand_r(seed) % 4], .kw = windows[rand_r(seed) % 4],
                   .sh = 1 + rand_r(seed) % 2, .sw = 1 + rand_r(seed) % 2, .dh = 1, .dw = 1,
                   .same = rand_r(seed) % 2, .cin = 1 + rand_r(seed) % 9, .cout = depths[rand_r(seed) % 8]};
    c.h = c.kh + rand_r(seed) % 9; /* VALID needs the window to fit */
    c.w = c.kw + rand_r(seed) % 9;
    return c;
}

/* Every micro-kernel family the CPU has, forced in turn with $TIDE_CONV_ISA (portable, AVX2,
 * AVX-512), on the same random shapes and the tutorial CNN's second layer, each both ways along the
 * width: the default skipping the filter columns that read only padding (narrowed pieces per column
 * class) and $TIDE_CONV_FULL_WIDTH multiplying them; a family the CPU lacks is said to be skipped. */
static void test_conv_each_isa(void)
{
    static const char *const isas[3] = {"portable", "avx2", "avx512"};
    bool have[3] = {true, false, false};
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    have[1] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    have[2] = have[1] && __builtin_cpu_supports("avx512f");
#endif
    static const conv_case layer = {2, 14, 14, 32, 5, 5, 64, 1, 1, 1, 1, true};
    for (int i = 0; i < 3; i++) {
        if (!have[i]) {
            printf("test_conv_each_isa: %s micro-kernels skipped (the CPU lacks them)\n", isas[i]);
            continue;
        }
        setenv("TIDE_CONV_ISA", isas[i], 1);
        for (int full_width = 0; full_width < 2; full_width++) {
            if (full_width)
                setenv("TIDE_CONV_FULL_WIDTH", "1", 1);
            unsigned seed = 19;
            for (int k = 0; k < 16; k++) {
                conv_case c = random_case(&seed);
                check_cases(&c, 1);
            }
            check_cases(&layer, 1);
            unsetenv("TIDE_CONV_FULL_WIDTH");
        }
    }
    unsetenv("TIDE_CONV_ISA");
}

/* Conv2D of x and f (SAME) with the ISA capped by tide_cpu_isa_limit(limit) and $TIDE_CONV_ISA =
 * conv_isa (NULL: unset). */
static tide_tensor *conv_capped(tide_tensor *x, tide_tensor *f, tide_cpu_isa limit, const char *conv_isa)
{
    tide_attrs *a = conv_attrs(1, 1, 1, 1, "SAME");
    if (conv_isa)
        setenv("TIDE_CONV_ISA", conv_isa, 1);
    tide_cpu_isa before = tide_cpu_isa_limit(limit);
    tide_tensor *y = th_run1("Conv2D", (tide_tensor *[]){x, f}, 2, a);
    tide_cpu_isa_limit(before);
    unsetenv("TIDE_CONV_ISA");
    tide_attrs_free(a);
    return y;
}

static bool same_bits(const tide_tensor *a, const tide_tensor *b)
{
    return tide_tensor_num_elements(a) == tide_tensor_num_elements(b) &&
           memcmp(tide_tensor_data(a), tide_tensor_data(b), (size_t)tide_tensor_num_elements(a) * sizeof(float)) == 0;
}

/* Conv2D (op 0), Conv2DBackpropInput (op 1) or Conv2DBackpropFilter (op 2) of case c on x, f and dy with
 * $TIDE_CONV_ALGO = algo. */
static tide_tensor *conv_by_algo(const conv_case *c, int op, tide_tensor *x, tide_tensor *f, tide_tensor *dy,
                                 const char *algo)
{
    tide_attrs *a = conv_attrs(c->sh, c->sw, c->dh, c->dw, c->explicit_pad ? "EXPLICIT" : c->same ? "SAME" : "VALID");
    if (c->explicit_pad)
        tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){0, 0, c->pads[0], c->pads[1],
                                                                          c->pads[2], c->pads[3], 0, 0}, 8);
    setenv("TIDE_CONV_ALGO", algo, 1);
    tide_tensor *sizes = op == 2 ? sizes4((const int64_t[4]){c->kh, c->kw, c->cin, c->cout})
                                 : sizes4((const int64_t[4]){c->n, c->h, c->w, c->cin});
    tide_tensor *y = op == 0   ? th_run1("Conv2D", (tide_tensor *[]){x, f}, 2, a)
                     : op == 1 ? th_run1("Conv2DBackpropInput", (tide_tensor *[]){sizes, f, dy}, 3, a)
                               : th_run1("Conv2DBackpropFilter", (tide_tensor *[]){x, sizes, dy}, 3, a);
    unsetenv("TIDE_CONV_ALGO");
    tide_tensor_release(sizes);
    tide_attrs_free(a);
    return y;
}

/* A random case the Winograd path takes: 3x3 or 5x5, stride 1, channel counts multiples of 16, odd
 * sizes (partial tiles at the bottom and right), SAME, VALID or explicit padding. */
static conv_case winograd_case(unsigned *seed)
{
    const int64_t r = rand_r(seed) % 2 ? 3 : 5;
    conv_case c = {.n = 1 + rand_r(seed) % 3, .kh = r, .kw = r, .sh = 1, .sw = 1, .dh = 1, .dw = 1,
                   .cin = 16 * (1 + rand_r(seed) % 3), .cout = 16 * (1 + rand_r(seed) % 5)};
    c.h = r + rand_r(seed) % 13;
    c.w = r + rand_r(seed) % 13;
    const int padding = rand_r(seed) % 3;
    c.same = padding == 0;
    if (padding == 2) {
        c.explicit_pad = true;
        for (int i = 0; i < 4; i++)
            c.pads[i] = rand_r(seed) % (r + 1);
    }
    return c;
}

/* The Winograd convolutions (conv_winograd.c: F(2x2, 5x5), F(4x4, 3x3)) on random shapes, against the
 * double-precision reference (check_case with $TIDE_CONV_ALGO=winograd) and against the
 * direct kernels ($TIDE_CONV_ALGO=direct), Conv2D and Conv2DBackpropInput, within the float32
 * tolerance of a sum of that many terms; bitwise different from the direct results, so the path ran. */
static void test_conv_winograd(void)
{
    if (!tide_conv_winograd_supported(5, 16, 16)) {
        th_skip("the Winograd convolutions need AVX-512 (the CPU lacks it, or $TIDE_CPU_ISA caps it)");
        return;
    }
    unsigned seed = 7;
    int differed = 0;
    for (int k = 0; k < 14; k++) {
        const conv_case c = winograd_case(&seed);
        setenv("TIDE_CONV_ALGO", "winograd", 1); /* auto takes 5x5 only (conv.c, use_winograd) */
        check_case(&c, TIDE_FLOAT32);
        unsetenv("TIDE_CONV_ALGO");
        double *xv, *fv, *dyv;
        int64_t pad;
        const int64_t yd[4] = {c.n, tf_out(c.h, c.kh, 1, 1, c.same, CASE_PADS(&c, 0), &pad),
                               tf_out(c.w, c.kw, 1, 1, c.same, CASE_PADS(&c, 1), &pad), c.cout};
        tide_tensor *x = random4(TIDE_FLOAT32, TH_DIMS(c.n, c.h, c.w, c.cin), &xv);
        tide_tensor *f = random4(TIDE_FLOAT32, TH_DIMS(c.kh, c.kw, c.cin, c.cout), &fv);
        tide_tensor *dy = random4(TIDE_FLOAT32, yd, &dyv);
        for (int op = 0; op < 2; op++) {
            tide_tensor *wino = conv_by_algo(&c, op, x, f, dy, "winograd");
            tide_tensor *direct = conv_by_algo(&c, op, x, f, dy, "direct");
            const int64_t terms = c.kh * c.kw * (op == 0 ? c.cin : c.cout);
            TH_ASSERT_CLOSE(wino, direct, 2e-5, 8e-7 * (double)terms);
            differed += !same_bits(wino, direct);
            tide_tensor_release(wino);
            tide_tensor_release(direct);
        }
        tide_tensor_release(x);
        tide_tensor_release(f);
        tide_tensor_release(dy);
        free(xv);
        free(fv);
        free(dyv);
    }
    CU_ASSERT(differed > 20);
}

/* Conv2DBackpropFilter as a Winograd convolution (conv_winograd_filter.c: F(5x5, 2x2), and F(3x3, 4x4)
 * under $TIDE_CONV_ALGO=winograd) on odd shapes: batch 1 and 3, sizes that leave partial tiles of dy and
 * x at the bottom and right, SAME, VALID and explicit padding, 16 channels (the least it takes) and
 * more (48 and 80 output channels: the micro-kernel's narrower forms). Each case has at least 512
 * pixels of dy (smaller ones stay direct, the last case checks: its float32 error would come too close
 * to this file's tolerance). Against the double-precision reference (check_case, all three ops), and
 * against the direct method within the same tolerance and bitwise different (so the path ran). */
static void test_conv_winograd_filter(void)
{
    if (!tide_conv_winograd_filter_supported(5, 16, 16, 1 << 20)) {
        th_skip("the Winograd filter gradient needs AVX-512 (the CPU lacks it, or $TIDE_CPU_ISA caps it)");
        return;
    }
    static const conv_case cases[] = {
        {1, 27, 23, 16, 5, 5, 16, 1, 1, 1, 1, true},                    /* batch 1, minimum channels */
        {3, 19, 17, 16, 5, 5, 32, 1, 1, 1, 1, false},                   /* batch 3, VALID */
        {3, 15, 13, 48, 5, 5, 80, 1, 1, 1, 1, true},                    /* 80 = 64 + 16 outputs */
        {1, 25, 29, 32, 5, 5, 48, 1, 1, 1, 1, false, true, {3, 1, 0, 4}}, /* explicit, uneven padding */
        {1, 23, 25, 16, 3, 3, 16, 1, 1, 1, 1, true},                    /* F(3x3, 4x4) */
        {3, 16, 15, 32, 3, 3, 64, 1, 1, 1, 1, false},                   /* F(3x3, 4x4), VALID */
        {3, 11, 13, 32, 5, 5, 64, 1, 1, 1, 1, true},                    /* 429 pixels of dy: direct */
    };
    const size_t ncases = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < ncases; i++) {
        const conv_case *c = &cases[i];
        const bool small = i == ncases - 1;
        if (c->kh == 3)
            setenv("TIDE_CONV_ALGO", "winograd", 1); /* auto takes 5x5 only (conv.c, use_winograd) */
        check_case(c, TIDE_FLOAT32);
        unsetenv("TIDE_CONV_ALGO");
        double *xv, *fv, *dyv;
        int64_t pad;
        const int64_t yd[4] = {c->n, tf_out(c->h, c->kh, 1, 1, c->same, CASE_PADS(c, 0), &pad),
                               tf_out(c->w, c->kw, 1, 1, c->same, CASE_PADS(c, 1), &pad), c->cout};
        tide_tensor *x = random4(TIDE_FLOAT32, TH_DIMS(c->n, c->h, c->w, c->cin), &xv);
        tide_tensor *f = random4(TIDE_FLOAT32, TH_DIMS(c->kh, c->kw, c->cin, c->cout), &fv);
        tide_tensor *dy = random4(TIDE_FLOAT32, yd, &dyv);
        tide_tensor *wino = conv_by_algo(c, 2, x, f, dy, "winograd");
        tide_tensor *direct = conv_by_algo(c, 2, x, f, dy, "direct");
        TH_ASSERT_CLOSE(wino, direct, 2e-5, 8e-7 * (double)(yd[0] * yd[1] * yd[2]));
        CU_ASSERT(same_bits(wino, direct) == small);
        tide_tensor *all[] = {x, f, dy, wino, direct};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            tide_tensor_release(all[k]);
        free(xv);
        free(fv);
        free(dyv);
    }
}

/* The convolutions follow the ISA cap of every vectorised kernel ($TIDE_CPU_ISA, tide_cpu_isa_limit):
 * capped at portable or AVX2 they compute bit for bit what $TIDE_CONV_ISA forces, and not what the
 * uncapped kernels compute. A narrow filter (3 output channels: the dot kernel, whose sums run in
 * vectors of each ISA's width, and FMAs only with AVX2 and up) makes the families' roundings differ. */
static void test_conv_follows_cpu_isa(void)
{
    double *xv, *fv;
    tide_tensor *x = random4(TIDE_FLOAT32, TH_DIMS(2, 9, 9, 32), &xv), *f = random4(TIDE_FLOAT32, TH_DIMS(5, 5, 32, 3), &fv);
    static const char *const names[2] = {"portable", "avx2"};
    const tide_cpu_isa active = tide_cpu_isa_active();
    tide_tensor *uncapped = conv_capped(x, f, TIDE_ISA_AVX512, NULL);
    int compared = 0;
    for (tide_cpu_isa cap = TIDE_ISA_PORTABLE; cap <= TIDE_ISA_AVX2; cap++) {
        if (cap >= active)
            continue;
        tide_tensor *by_cap = conv_capped(x, f, cap, NULL), *by_conv_isa = conv_capped(x, f, TIDE_ISA_AVX512, names[cap]);
        CU_ASSERT(same_bits(by_cap, by_conv_isa));
        CU_ASSERT(!same_bits(by_cap, uncapped));
        compared++;
        tide_tensor_release(by_cap);
        tide_tensor_release(by_conv_isa);
    }
    tide_tensor_release(uncapped);
    tide_tensor_release(x);
    tide_tensor_release(f);
    free(xv);
    free(fv);
    if (compared == 0)
        th_skip("the kernels run portable here (no AVX2, or $TIDE_CPU_ISA=portable): no cap to compare");
}

/* The width's padding skipped where it is irregular: explicit paddings wider than the window
 * (columns reading nothing but padding: zeros), dilated columns (one piece per filter column),
 * strided and upsampled canvases (Conv2DBackpropInput's former method, whose hulls hold zeros),
 * filters wider than the input, and a deep input whose filter rows split into several pieces per
 * chunk (a piece narrowed inside a filter column); each compared with the reference with the skip
 * and with $TIDE_CONV_FULL_WIDTH. */
static void test_conv_width_padding(void)
{
    static const conv_case cases[] = {
        {2, 5, 6, 3, 3, 5, 9, 1, 1, 1, 1, false, true, {1, 0, 7, 6}},   /* all-padding columns */
        {2, 9, 11, 3, 3, 3, 5, 1, 1, 1, 3, true},                       /* dilated columns */
        {1, 9, 13, 2, 5, 7, 33, 1, 2, 1, 1, true},                      /* stride 2 along the width */
        {1, 7, 3, 4, 3, 7, 6, 1, 1, 1, 1, true},                        /* filter wider than the input */
        {1, 6, 9, 150, 3, 5, 40, 1, 1, 1, 1, true},                     /* pieces split inside a column */
        {1, 13, 12, 2, 3, 3, 9, 2, 2, 2, 2, true},                      /* upsampled (dilated and strided) */
    };
    for (int full_width = 0; full_width < 2; full_width++) {
        if (full_width)
            setenv("TIDE_CONV_FULL_WIDTH", "1", 1);
        check_cases(cases, sizeof cases / sizeof cases[0]);
        setenv("TIDE_CONV_ISA", "portable", 1);
        check_cases(cases, sizeof cases / sizeof cases[0]);
        unsetenv("TIDE_CONV_ISA");
        unsetenv("TIDE_CONV_FULL_WIDTH");
    }
}

/* Conv2DBackpropFilter with at least 8 input channels, stride 1 and no dilation reads the input and
 * dy in place (kernels/cpu/conv_filter.c): blocks of up to 6 channels inside one filter column, spans of the
 * rows and columns each tap reads data for, dy packed when cout is no multiple of the channel block
 * (17, 40, 70: one and two blocks, AVX-512's wide block of 64 included), taps that read only padding,
 * strides, dilations, explicit paddings, a 1x1 filter, and an image too large for one group (row
 * tiles). Checked under every micro-kernel family the CPU has, with the default choice (in place for
 * stride 1 and no dilation; the Winograd filter gradient for the CNN's layer with AVX-512), in place for
 * all ($TIDE_CONV_FILTER_IN_PLACE) and the canvas method ($TIDE_CONV_FILTER_SLICES) on the same cases. The forward pass and backprop-input of these cases take
 * the default algorithm (Winograd for the 5x5 case with AVX-512; 3x3 Winograd, which is not the default,
 * differed from the reference by 3.5e-4 against this file's tolerance of 2.3e-4 on the 40x40x16 -> 64
 * case: conv.c's use_winograd). */
static void test_conv_filter_in_place(void)
{
    static const conv_case cases[] = {
        {3, 9, 8, 8, 3, 3, 17, 2, 2, 1, 1, false},                      /* strides; cout 17: packed */
        {2, 9, 8, 13, 3, 3, 40, 1, 1, 2, 2, true},                      /* dilations; blocks 4 + 4 + 5 */
        {2, 7, 6, 9, 3, 3, 70, 1, 1, 1, 1, false, true, {1, 2, 0, 3}},  /* explicit padding; two blocks */
        {1, 5, 5, 8, 3, 2, 4, 1, 1, 1, 1, false, true, {4, 0, 3, 5}},   /* taps reading only padding */
        {2, 9, 9, 32, 3, 3, 64, 2, 2, 1, 1, true},                      /* 3x3 stride 2, whole blocks */
        {2, 5, 6, 24, 1, 1, 20, 1, 1, 1, 1, true},                      /* 1x1 */
        {1, 40, 40, 16, 3, 3, 64, 1, 1, 1, 1, true},                    /* x and dy past one group: row tiles */
        {5, 14, 14, 32, 5, 5, 64, 1, 1, 1, 1, true},                    /* the tutorial CNN's second layer */
    };
    static const char *const isas[3] = {"portable", "avx2", "avx512"};
    bool have[3] = {true, false, false};
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    have[1] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    have[2] = have[1] && __builtin_cpu_supports("avx512f");
#endif
    for (int i = 0; i < 3; i++) {
        if (!have[i]) {
            printf("test_conv_filter_in_place: %s micro-kernels skipped (the CPU lacks them)\n", isas[i]);
            continue;
        }
        setenv("TIDE_CONV_ISA", isas[i], 1);
        for (int method = 0; method < 3; method++) {
            if (method > 0)
                setenv(method == 1 ? "TIDE_CONV_FILTER_IN_PLACE" : "TIDE_CONV_FILTER_SLICES", "1", 1);
            check_cases(cases, sizeof cases / sizeof cases[0]);
            unsetenv("TIDE_CONV_FILTER_IN_PLACE");
            unsetenv("TIDE_CONV_FILTER_SLICES");
        }
    }
    unsetenv("TIDE_CONV_ISA");
}

/* ---------------------------------------------------------------- DepthwiseConv2dNative */

/* A depthwise case: input [n, h, w, c], filter [kh, kw, c, mult] (the conv_case fields, cout being
 * the multiplier). The reference visits every (input, filter, output) product as the 7 loops do,
 * channel c of the input meeting only filters [.., c, m] and writing output channel c * mult + m. */
static void check_depthwise(const conv_case *c, tide_dtype dt)
{
    double *x, *f, *dy;
    int64_t pad_h, pad_w, mult = c->cout;
    int64_t oh = tf_out(c->h, c->kh, c->sh, c->dh, c->same, NULL, &pad_h);
    int64_t ow = tf_out(c->w, c->kw, c->sw, c->dw, c->same, NULL, &pad_w);
    const int64_t xd[4] = {c->n, c->h, c->w, c->cin}, fd[4] = {c->kh, c->kw, c->cin, mult};
    const int64_t yd[4] = {c->n, oh, ow, c->cin * mult};
    tide_tensor *tx = random4(dt, xd, &x), *tf = random4(dt, fd, &f), *tdy = random4(dt, yd, &dy);
    double *y = calloc((size_t)count4(yd) + 1, sizeof *y), *dx = calloc((size_t)count4(xd) + 1, sizeof *dx);
    double *df = calloc((size_t)count4(fd) + 1, sizeof *df);
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++)
                for (int64_t ch = 0; ch < c->cin; ch++)
                    for (int64_t m = 0; m < mult; m++)
                        for (int64_t kh = 0; kh < c->kh; kh++)
                            for (int64_t kw = 0; kw < c->kw; kw++) {
                                int64_t ih = i * c->sh + kh * c->dh - pad_h, iw = j * c->sw + kw * c->dw - pad_w;
                                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
                                    continue;
                                int64_t xi = ((n * c->h + ih) * c->w + iw) * c->cin + ch;
                                int64_t fi = ((kh * c->kw + kw) * c->cin + ch) * mult + m;
                                int64_t yi = ((n * oh + i) * ow + j) * c->cin * mult + ch * mult + m;
                                y[yi] += x[xi] * f[fi];
                                dx[xi] += dy[yi] * f[fi];
                                df[fi] += x[xi] * dy[yi];
                            }
    tide_attrs *a = conv_attrs(c->sh, c->sw, c->dh, c->dw, c->same ? "SAME" : "VALID");
    tide_tensor *txs = sizes4(xd), *tfs = sizes4(fd);
    tide_tensor *got_y = th_run1("DepthwiseConv2dNative", (tide_tensor *[]){tx, tf}, 2, a);
    assert_close(got_y, dt, yd, y, c->kh * c->kw);
    tide_tensor *got_dx = th_run1("DepthwiseConv2dNativeBackpropInput", (tide_tensor *[]){txs, tf, tdy}, 3, a);
    assert_close(got_dx, dt, xd, dx, c->kh * c->kw * mult);
    tide_tensor *got_df = th_run1("DepthwiseConv2dNativeBackpropFilter", (tide_tensor *[]){tx, tfs, tdy}, 3, a);
    assert_close(got_df, dt, fd, df, c->n * oh * ow);
    tide_tensor *all[] = {tx, tf, tdy, txs, tfs, got_y, got_dx, got_df};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
    void *blocks[] = {x, f, dy, y, dx, df};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        free(blocks[i]);
}

static void test_depthwise(void)
{
    static const conv_case cases[] = {
        {2, 6, 5, 3, 3, 3, 1, 1, 1, 1, 1, true},   /* multiplier 1 */
        {2, 6, 5, 3, 3, 3, 2, 1, 1, 1, 1, false},  /* multiplier 2 */
        {1, 7, 8, 2, 2, 3, 3, 2, 2, 1, 1, true},   /* strides, an even filter */
        {2, 9, 8, 2, 3, 3, 1, 1, 2, 2, 2, true},   /* dilations */
        {1, 3, 3, 1, 3, 3, 4, 1, 1, 1, 1, false},  /* one output pixel */
        {0, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, true},   /* an empty batch */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_depthwise(&cases[i], TIDE_FLOAT32);
        check_depthwise(&cases[i], TIDE_FLOAT64);
    }
    /* literal: a 1x1 filter scales each channel by its own factors: [1, 2] -> [1*3, 1*4, 2*5, 2*6] */
    tide_tensor *x = th_f64(4, TH_DIMS(1, 1, 1, 2), (double[]){1, 2});
    tide_tensor *f = th_f64(4, TH_DIMS(1, 1, 2, 2), (double[]){3, 4, 5, 6});
    tide_attrs *a = conv_attrs(1, 1, 1, 1, "VALID");
    tide_tensor *y = th_run1("DepthwiseConv2dNative", (tide_tensor *[]){x, f}, 2, a);
    tide_tensor *want = th_f64(4, TH_DIMS(1, 1, 1, 4), (double[]){3, 4, 10, 12});
    TH_ASSERT_CLOSE(y, want, 0, 0);
    /* errors: depths that differ, NCHW, out_backprop of the wrong shape */
    tide_tensor *f3 = th_f64(4, TH_DIMS(1, 1, 3, 2), NULL);
    TH_ASSERT_FAILS("DepthwiseConv2dNative", ((tide_tensor *[]){x, f3}), 2, a, TIDE_INVALID_ARGUMENT,
                    "the input's depth 2 differs from the filter's 3: input [1, 1, 1, 2] (NHWC), filter [1, 1, 3, 2] "
                    "([height, width, in, multiplier])");
    tide_tensor *xs = sizes4((const int64_t[4]){1, 1, 1, 2}), *dy = th_f64(4, TH_DIMS(1, 1, 1, 3), NULL);
    TH_ASSERT_FAILS("DepthwiseConv2dNativeBackpropInput", ((tide_tensor *[]){xs, f, dy}), 3, a, TIDE_INVALID_ARGUMENT,
                    "out_backprop has shape [1, 1, 1, 3], but the depthwise convolution of input [1, 1, 1, 2] with "
                    "filter [1, 1, 2, 2] gives [1, 1, 1, 4]");
    tide_attrs_set_string(a, "data_format", "NCHW");
    TH_ASSERT_FAILS("DepthwiseConv2dNative", ((tide_tensor *[]){x, f}), 2, a, TIDE_INVALID_ARGUMENT,
                    "data_format 'NCHW' is not supported");
    tide_tensor *all[] = {x, f, y, want, f3, xs, dy};
    for (int i = 0; i < 7; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
}

/* Empty batches, zero channels and an output channel count of 0 give empty or zero results. */
static void test_conv_empty(void)
{
    static const conv_case cases[] = {
        {0, 5, 5, 3, 3, 3, 4, 1, 1, 1, 1, true},
        {2, 5, 5, 0, 3, 3, 4, 1, 1, 1, 1, true},   /* no input channels: zeros */
        {2, 5, 5, 3, 3, 3, 0, 1, 1, 1, 1, true},
        {2, 0, 5, 3, 3, 3, 4, 1, 1, 1, 1, true},   /* SAME over an empty height */
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* ---------------------------------------------------------------- errors */

/* Conv2D on x [1, 4, 4, 3] and f [ksize, ksize, depth, 2] with attrs a must fail with needle. */
static void conv_fails(int64_t ksize, int64_t depth, tide_attrs *a, const char *needle)
{
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 4, 4, 3), NULL);
    tide_tensor *f = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(ksize, ksize, depth, 2), NULL);
    TH_ASSERT_FAILS("Conv2D", ((tide_tensor *[]){x, f}), 2, a, TIDE_INVALID_ARGUMENT, needle);
    tide_tensor_release(x);
    tide_tensor_release(f);
    tide_attrs_free(a);
}

static void test_conv_bad_attrs(void)
{
    tide_attrs *a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){1, 1, 1}, 3);
    conv_fails(3, 3, a, "strides must have 4 entries [1, stride_height, stride_width, 1] (NHWC), got [1, 1, 1]");
    a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_string(a, "data_format", "NCHW");
    conv_fails(3, 3, a, "data_format 'NCHW' is not supported");
    conv_fails(3, 3, conv_attrs(1, 1, 1, 1, "FULL"), "padding must be 'SAME', 'VALID' or 'EXPLICIT', got 'FULL'");
    conv_fails(3, 3, conv_attrs(1, 1, 1, 1, "EXPLICIT"), "padding 'EXPLICIT' needs explicit_paddings of 8 "
               "entries [0, 0, top, bottom, left, right, 0, 0] (NHWC), got []");
    a = conv_attrs(1, 1, 1, 1, "EXPLICIT");
    tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){1, 0, 1, 1, 1, 1, 0, 0}, 8);
    conv_fails(3, 3, a, "explicit_paddings must be non-negative, at most 2147483647, and 0 for the batch and "
               "depth dimensions, got [1, 0, 1, 1, 1, 1, 0, 0]");
    a = conv_attrs(1, 1, 1, 1, "EXPLICIT");
    tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){0, 0, -1, 1, 1, 1, 0, 0}, 8);
    conv_fails(3, 3, a, "explicit_paddings must be non-negative");
    a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){0, 0, 1, 1, 1, 1, 0, 0}, 8);
    conv_fails(3, 3, a, "explicit_paddings [0, 0, 1, 1, 1, 1, 0, 0] is given but padding is not 'EXPLICIT'");
    a = conv_attrs(1, 1, 1, 1, "EXPLICIT");
    tide_attrs_set_int_list(a, "explicit_paddings", (const int64_t[]){0, 0, 0, 0, 0, 1, 0, 0}, 8);
    conv_fails(6, 3, a, "the window (6) is larger than the input's height 4 padded by 0 and 0 (EXPLICIT)");
    a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){2, 1, 1, 1}, 4);
    conv_fails(3, 3, a, "strides in the batch and depth dimensions must be 1, got [2, 1, 1, 1]");
    conv_fails(3, 3, conv_attrs(0, 1, 1, 1, "SAME"), "strides must be positive and at most 2147483647, got [1, 0, 1, 1]");
    conv_fails(3, 3, conv_attrs(INT64_MAX, 1, 1, 1, "SAME"), "strides must be positive and at most 2147483647");
    conv_fails(3, 3, conv_attrs(1, 1, INT64_MAX, 1, "VALID"), "dilations must be positive and at most");
    a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_int_list(a, "dilations", (const int64_t[]){2, 2}, 2);
    conv_fails(3, 3, a, "dilations must have 4 entries");
    a = tide_attrs_new();
    tide_attrs_set_string(a, "padding", "SAME");
    conv_fails(3, 3, a, "missing attr 'strides'");
}

static void test_conv_bad_shapes(void)
{
    conv_fails(5, 3, conv_attrs(1, 1, 1, 1, "VALID"),
               "the window (5) is larger than the input's height 4 with VALID padding: input "
               "[1, 4, 4, 3], filter [5, 5, 3, 2]");
    conv_fails(3, 3, conv_attrs(1, 1, 2, 2, "VALID"),
               "the window (3 with dilation 2, spanning 5) is larger than the input's height 4");
    conv_fails(3, 2, conv_attrs(1, 1, 1, 1, "SAME"),
               "the input's depth 3 differs from the filter's input depth 2: input [1, 4, 4, 3] "
               "(NHWC), filter [3, 3, 2, 2]");
    conv_fails(0, 3, conv_attrs(1, 1, 1, 1, "SAME"), "the filter's height and width must be at least 1");
    tide_attrs *a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_tensor *x3 = th_tensor(TIDE_FLOAT32, 3, TH_DIMS(4, 4, 3), NULL);
    tide_tensor *f = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(3, 3, 3, 2), NULL);
    TH_ASSERT_FAILS("Conv2D", ((tide_tensor *[]){x3, f}), 2, a, TIDE_INVALID_ARGUMENT,
                    "input must have rank 4 (NHWC), got shape [4, 4, 3]");
    tide_tensor *fd = th_tensor(TIDE_FLOAT64, 4, TH_DIMS(3, 3, 3, 2), NULL);
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 4, 4, 3), NULL);
    TH_ASSERT_FAILS("Conv2D", ((tide_tensor *[]){x, fd}), 2, a, TIDE_INVALID_ARGUMENT, "float64");
    tide_tensor *xi = th_tensor(TIDE_INT32, 4, TH_DIMS(1, 4, 4, 3), NULL);
    tide_tensor *fi = th_tensor(TIDE_INT32, 4, TH_DIMS(3, 3, 3, 2), NULL);
    TH_ASSERT_FAILS("Conv2D", ((tide_tensor *[]){xi, fi}), 2, a, TIDE_INVALID_ARGUMENT, "int32");

    /* The gradient ops: out_backprop must have the convolution's shape, sizes must be 4 sizes. */
    tide_tensor *dy = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 3, 4, 2), NULL);
    tide_tensor *xs = sizes4(TH_DIMS(1, 4, 4, 3)), *fs = sizes4(TH_DIMS(3, 3, 3, 2));
    TH_ASSERT_FAILS("Conv2DBackpropInput", ((tide_tensor *[]){xs, f, dy}), 3, a, TIDE_INVALID_ARGUMENT,
                    "out_backprop has shape [1, 3, 4, 2], but the convolution of input [1, 4, 4, 3] "
                    "with filter [3, 3, 3, 2] gives [1, 4, 4, 2]");
    TH_ASSERT_FAILS("Conv2DBackpropFilter", ((tide_tensor *[]){x, fs, dy}), 3, a, TIDE_INVALID_ARGUMENT,
                    "out_backprop has shape [1, 3, 4, 2]");
    tide_tensor *s3 = th_i32(1, TH_DIMS(3), (const int32_t[]){1, 4, 4});
    tide_tensor *neg = th_i32(1, TH_DIMS(4), (const int32_t[]){1, -4, 4, 3});
    tide_tensor *dy_ok = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 4, 4, 2), NULL);
    TH_ASSERT_FAILS("Conv2DBackpropInput", ((tide_tensor *[]){s3, f, dy_ok}), 3, a, TIDE_INVALID_ARGUMENT,
                    "input_sizes must be a vector of 4 sizes, got shape [3]");
    TH_ASSERT_FAILS("Conv2DBackpropInput", ((tide_tensor *[]){neg, f, dy_ok}), 3, a,
                    TIDE_INVALID_ARGUMENT, "input_sizes must not be negative, got [1, -4, 4, 3]");
    TH_ASSERT_FAILS("Conv2DBackpropFilter", ((tide_tensor *[]){x, s3, dy_ok}), 3, a,
                    TIDE_INVALID_ARGUMENT, "filter_sizes must be a vector of 4 sizes");
    tide_tensor *all[] = {x3, f, fd, x, xi, fi, dy, xs, fs, s3, neg, dy_ok};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
}

/* ---------------------------------------------------------------- graph-time shapes */

static tide_output placeholder(tide_graph *g, tide_dtype dt, tide_shape shape)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &shape);
    tide_node *n = tide_node_builder_finish(b, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    return (tide_output){n, 0};
}

static tide_output constant(tide_graph *g, tide_tensor *value)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_node *n = tide_node_builder_finish(b, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    tide_tensor_release(value);
    return (tide_output){n, 0};
}

/* Builds op(inputs) with attrs a (freed) in g; asserts the inferred shape (want) or, want NULL,
 * that building fails with needle. */
static void infer(tide_graph *g, const char *op, const tide_output *ins, int n, tide_attrs *a,
                  const tide_shape *want, const char *needle)
{
    tide_error *err = tide_error_new();
    tide_node_builder *b = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_inputs_flat(b, ins, n);
    tide_attrs_merge(tide_node_builder_attrs(b), a);
    tide_node *node = tide_node_builder_finish(b, err);
    if (want) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(node);
        tide_shape got = tide_node_output_shape(node, 0);
        char x[TIDE_SHAPE_STR_MAX], y[TIDE_SHAPE_STR_MAX];
        if (!tide_shape_equal(&got, want))
            fprintf(stderr, "%s: inferred %s, expected %s\n", op, tide_shape_format(&got, x, sizeof x),
                    tide_shape_format(want, y, sizeof y));
        CU_ASSERT(tide_shape_equal(&got, want));
    } else {
        CU_ASSERT_PTR_NULL(node);
        bool ok = strstr(tide_error_message(err), needle) != NULL;
        if (!ok)
            fprintf(stderr, "%s: expected an error containing \"%s\", got \"%s\"\n", op, needle,
                    tide_error_message(err));
        CU_ASSERT(ok);
    }
    tide_error_free(err);
    tide_attrs_free(a);
}

#define SHP4(a, b, c, d) tide_shape_make(4, TH_DIMS(a, b, c, d))

static void test_conv_shape_inference(void)
{
    tide_graph *g = tide_graph_new();
    tide_output x = placeholder(g, TIDE_FLOAT32, SHP4(-1, 28, 28, 1));
    tide_output f = placeholder(g, TIDE_FLOAT32, SHP4(5, 5, 1, 32));
    tide_output xf[2] = {x, f};
    tide_shape want = SHP4(-1, 28, 28, 32);
    infer(g, "Conv2D", xf, 2, conv_attrs(1, 1, 1, 1, "SAME"), &want, NULL);
    want = SHP4(-1, 24, 24, 32);
    infer(g, "Conv2D", xf, 2, conv_attrs(1, 1, 1, 1, "VALID"), &want, NULL);
    want = SHP4(-1, 14, 10, 32);
    infer(g, "Conv2D", xf, 2, conv_attrs(2, 3, 1, 1, "SAME"), &want, NULL);
    want = SHP4(-1, 20, 20, 32); /* dilation 2: a 9x9 span */
    infer(g, "Conv2D", xf, 2, conv_attrs(1, 1, 2, 2, "VALID"), &want, NULL);
    tide_output unknown_f = placeholder(g, TIDE_FLOAT32, tide_shape_unknown());
    want = SHP4(-1, -1, -1, -1);
    infer(g, "Conv2D", (tide_output[]){x, unknown_f}, 2, conv_attrs(1, 1, 1, 1, "SAME"), &want, NULL);
    /* Rejected at graph time: NCHW, bad strides, depths that differ, a window too large. */
    tide_attrs *a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_string(a, "data_format", "NCHW");
    infer(g, "Conv2D", xf, 2, a, NULL, "data_format 'NCHW' is not supported");
    a = conv_attrs(1, 1, 1, 1, "SAME");
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){1, 2, 2}, 3);
    infer(g, "Conv2D", xf, 2, a, NULL, "strides must have 4 entries");
    tide_output f3 = placeholder(g, TIDE_FLOAT32, SHP4(5, 5, 3, 32));
    infer(g, "Conv2D", (tide_output[]){x, f3}, 2, conv_attrs(1, 1, 1, 1, "SAME"), NULL,
          "the input's depth 1 differs from the filter's input depth 3");
    tide_output f40 = placeholder(g, TIDE_FLOAT32, SHP4(40, 5, 1, 32));
    infer(g, "Conv2D", (tide_output[]){x, f40}, 2, conv_attrs(1, 1, 1, 1, "VALID"), NULL,
          "the window (40) is larger than the input's height 28");

    /* The gradient ops take their output shape from a constant size input, or from the others. */
    tide_output dy = placeholder(g, TIDE_FLOAT32, SHP4(-1, 14, 14, 32));
    tide_output xs = constant(g, sizes4(TH_DIMS(100, 28, 28, 1)));
    tide_output fs = constant(g, sizes4(TH_DIMS(5, 5, 1, 32)));
    want = SHP4(100, 28, 28, 1);
    infer(g, "Conv2DBackpropInput", (tide_output[]){xs, f, dy}, 3, conv_attrs(2, 2, 1, 1, "SAME"), &want, NULL);
    want = SHP4(5, 5, 1, 32);
    infer(g, "Conv2DBackpropFilter", (tide_output[]){x, fs, dy}, 3, conv_attrs(2, 2, 1, 1, "SAME"), &want, NULL);
    tide_output fed_sizes = placeholder(g, TIDE_INT32, tide_shape_vector(4));
    want = SHP4(-1, -1, -1, 1);
    infer(g, "Conv2DBackpropInput", (tide_output[]){fed_sizes, f, dy}, 3, conv_attrs(2, 2, 1, 1, "SAME"),
          &want, NULL);
    want = SHP4(-1, -1, 1, 32);
    infer(g, "Conv2DBackpropFilter", (tide_output[]){x, fed_sizes, dy}, 3, conv_attrs(2, 2, 1, 1, "SAME"),
          &want, NULL);
    infer(g, "Conv2DBackpropInput", (tide_output[]){xs, f, dy}, 3, conv_attrs(1, 1, 1, 1, "SAME"), NULL,
          "out_backprop has shape [?, 14, 14, 32], but the convolution of input [100, 28, 28, 1] with "
          "filter [5, 5, 1, 32] gives [100, 28, 28, 32]");
    tide_output s3 = constant(g, th_i32(1, TH_DIMS(3), (const int32_t[]){1, 2, 3}));
    infer(g, "Conv2DBackpropFilter", (tide_output[]){x, s3, dy}, 3, conv_attrs(2, 2, 1, 1, "SAME"), NULL,
          "filter_sizes must be a vector of 4 sizes, got shape [3]");
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- pooling */

typedef struct pool_case {
    int64_t n, h, w, c, kh, kw, sh, sw;
    bool same;
} pool_case;

/* Reference pooling: for each output pixel and channel, the window's valid elements in row-major
 * order. Max: the first element strictly larger than every earlier one gets dy; avg: each gets
 * dy / count. */
static void ref_pool(const pool_case *p, bool max, const double *x, const double *dy, int64_t yd[4],
                     double **y, double **dx)
{
    int64_t pt, pl;
    yd[0] = p->n;
    yd[1] = tf_out(p->h, p->kh, p->sh, 1, p->same, NULL, &pt);
    yd[2] = tf_out(p->w, p->kw, p->sw, 1, p->same, NULL, &pl);
    yd[3] = p->c;
    *y = calloc((size_t)count4(yd) + 1, sizeof(double));
    *dx = calloc((size_t)(p->n * p->h * p->w * p->c) + 1, sizeof(double));
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t oh = 0; oh < yd[1]; oh++)
            for (int64_t ow = 0; ow < yd[2]; ow++)
                for (int64_t c = 0; c < p->c; c++) {
                    int64_t yi = ((n * yd[1] + oh) * yd[2] + ow) * p->c + c, best = -1, cnt = 0;
                    double sum = 0;
                    for (int64_t i = oh * p->sh - pt; i < oh * p->sh - pt + p->kh; i++)
                        for (int64_t j = ow * p->sw - pl; j < ow * p->sw - pl + p->kw; j++) {
                            if (i < 0 || i >= p->h || j < 0 || j >= p->w)
                                continue;
                            int64_t xi = ((n * p->h + i) * p->w + j) * p->c + c;
                            if (best < 0 || x[xi] > x[best])
                                best = xi;
                            sum += x[xi];
                            cnt++;
                        }
                    (*y)[yi] = max ? x[best] : sum / (double)cnt;
                    if (!dy)
                        continue;
                    if (max)
                        (*dx)[best] += dy[yi];
                    else
                        for (int64_t i = oh * p->sh - pt; i < oh * p->sh - pt + p->kh; i++)
                            for (int64_t j = ow * p->sw - pl; j < ow * p->sw - pl + p->kw; j++)
                                if (i >= 0 && i < p->h && j >= 0 && j < p->w)
                                    (*dx)[((n * p->h + i) * p->w + j) * p->c + c] += dy[yi] / (double)cnt;
                }
}

/* x with values from {0, 1, 2} when ties is set (many equal maxima), else uniform. */
static tide_tensor *pool_input(tide_dtype dt, const int64_t d[4], bool ties, double **values)
{
    tide_tensor *t = random4(dt, d, values);
    if (!ties)
        return t;
    tide_tensor_release(t);
    for (int64_t i = 0; i < count4(d); i++)
        (*values)[i] = floor(((*values)[i] + 1) * 1.5);
    return th_from_doubles(dt, 4, d, *values, 0);
}

static void check_pool(const pool_case *p, tide_dtype dt, bool max, bool ties)
{
    const int64_t xd[4] = {p->n, p->h, p->w, p->c};
    int64_t pad, yd[4] = {p->n, tf_out(p->h, p->kh, p->sh, 1, p->same, NULL, &pad),
                          tf_out(p->w, p->kw, p->sw, 1, p->same, NULL, &pad), p->c};
    double *x, *dy, *y, *dx;
    tide_tensor *tx = pool_input(dt, xd, ties, &x), *tdy = random4(dt, yd, &dy);
    ref_pool(p, max, x, dy, yd, &y, &dx);
    tide_attrs *a = pool_attrs(p->kh, p->kw, p->sh, p->sw, p->same ? "SAME" : "VALID");
    tide_tensor *got_y = th_run1(max ? "MaxPool" : "AvgPool", &tx, 1, a);
    assert_close(got_y, dt, yd, y, p->kh * p->kw);
    tide_tensor *got_dx, *shape = NULL;
    if (max) {
        got_dx = th_run1("MaxPoolGrad", (tide_tensor *[]){tx, got_y, tdy}, 3, a);
    } else {
        shape = sizes4(xd);
        got_dx = th_run1("AvgPoolGrad", (tide_tensor *[]){shape, tdy}, 2, a);
    }
    assert_close(got_dx, dt, xd, dx, p->kh * p->kw);
    tide_tensor *all[] = {tx, tdy, got_y, got_dx, shape};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
    free(x);
    free(dy);
    free(y);
    free(dx);
}

static const pool_case pool_cases[] = {
    {2, 28, 28, 32, 2, 2, 2, 2, true},   /* the tutorial CNN's pooling */
    {2, 7, 7, 3, 2, 2, 2, 2, true},      /* odd size: the last window is clipped */
    {2, 7, 7, 3, 2, 2, 2, 2, false},
    {3, 8, 9, 5, 3, 3, 2, 2, true},      /* overlapping windows */
    {3, 8, 9, 5, 3, 3, 1, 1, false},
    {1, 6, 5, 2, 3, 2, 3, 1, true},      /* unequal window and strides */
    {1, 5, 5, 4, 5, 5, 1, 1, true},      /* windows mostly padding */
    {2, 9, 10, 9, 2, 2, 3, 3, false},    /* gaps between windows; 9 channels: vectors and a tail */
    {2, 1, 1, 3, 1, 1, 1, 1, false},
};

static void test_max_pool(void)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        check_pool(&pool_cases[i], TIDE_FLOAT32, true, false);
        check_pool(&pool_cases[i], TIDE_FLOAT64, true, false);
    }
}

/* Many equal maxima: the gradient goes to the first in row-major window order, never split. */
static void test_max_pool_ties(void)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        check_pool(&pool_cases[i], TIDE_FLOAT32, true, true);
        check_pool(&pool_cases[i], TIDE_FLOAT64, true, true);
    }
    /* Literal: a constant 2x2 window sends everything to its top-left element; with overlapping
     * 2x2 windows of stride 1 over a constant 3x3 input each window's first element collects. */
    const double four[4] = {5, 5, 5, 5}, g[1] = {7};
    tide_tensor *x = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 1), four, 0);
    tide_tensor *y = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 1, 1, 1), four, 0);
    tide_tensor *dy = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 1, 1, 1), g, 0);
    tide_attrs *a = pool_attrs(2, 2, 2, 2, "VALID");
    tide_tensor *dx = th_run1("MaxPoolGrad", (tide_tensor *[]){x, y, dy}, 3, a);
    tide_tensor *want = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 1), (const double[]){7, 0, 0, 0}, 0);
    TH_ASSERT_CLOSE(dx, want, 0, 0);
    tide_tensor *all[] = {x, y, dy, dx, want};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);
    const double nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, g4[4] = {1, 2, 3, 4};
    x = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(1, 3, 3, 1), nine, 0);
    y = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(1, 2, 2, 1), nine, 0);
    dy = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(1, 2, 2, 1), g4, 0);
    a = pool_attrs(2, 2, 1, 1, "VALID");
    dx = th_run1("MaxPoolGrad", (tide_tensor *[]){x, y, dy}, 3, a);
    want = th_from_doubles(TIDE_FLOAT64, 4, TH_DIMS(1, 3, 3, 1), (const double[]){1, 2, 0, 3, 4, 0, 0, 0, 0}, 0);
    TH_ASSERT_CLOSE(dx, want, 0, 0);
    tide_tensor *more[] = {x, y, dy, dx, want};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(more[i]);
    tide_attrs_free(a);
}

/* TensorFlow's conventions on a 3x3 input 1..9: MaxPool 2x2/2 SAME pads after; AvgPool 2x2/1 SAME
 * divides border windows by the elements they cover; a NaN is a window's maximum and takes the
 * gradient. */
static void test_pool_literal(void)
{
    const double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    tide_tensor *x = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 3, 3, 1), xv, 0);
    tide_attrs *a = pool_attrs(2, 2, 2, 2, "SAME");
    tide_tensor *y = th_run1("MaxPool", &x, 1, a);
    tide_tensor *want = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 1), (const double[]){5, 6, 8, 9}, 0);
    TH_ASSERT_CLOSE(y, want, 0, 0);
    tide_tensor_release(y);
    tide_tensor_release(want);
    tide_attrs_free(a);
    a = pool_attrs(2, 2, 1, 1, "SAME");
    y = th_run1("AvgPool", &x, 1, a);
    want = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 3, 3, 1),
                           (const double[]){3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9}, 0);
    TH_ASSERT_CLOSE(y, want, 1e-7, 0);
    tide_tensor_release(y);
    tide_tensor_release(want);
    tide_attrs_free(a);
    tide_tensor_release(x);

    const double nv[4] = {1, NAN, 3, NAN}, g[1] = {2};
    x = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 1), nv, 0);
    a = pool_attrs(2, 2, 2, 2, "VALID");
    y = th_run1("MaxPool", &x, 1, a);
    CU_ASSERT(y && isnan(tide_tensor_get_f64(y, 0)));
    tide_tensor *dy = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 1, 1, 1), g, 0);
    tide_tensor *dx = th_run1("MaxPoolGrad", (tide_tensor *[]){x, y, dy}, 3, a);
    want = th_from_doubles(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 1), (const double[]){0, 2, 0, 0}, 0);
    TH_ASSERT_CLOSE(dx, want, 0, 0);
    tide_tensor *all[] = {x, y, dy, dx, want};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);

    /* The same per channel, 9 channels (whole vectors and a tail), NaN in some, ties in others:
     * window elements e0..e3 of channel c hold v[e][c]; the gradient g[c] goes to want[e][c]. */
    const double v[4][9] = {{1, NAN, 3, 2, 2, 0, 5, 1, NAN},
                            {4, 1, NAN, 2, 7, 0, 5, NAN, 1},
                            {2, NAN, 3, 2, 7, 0, NAN, 1, 2},
                            {4, 1, 3, 9, 1, 0, 5, 9, NAN}};
    const double g9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const int first[9] = {1, 0, 1, 3, 1, 0, 2, 1, 0};
    double want9[4][9] = {{0}};
    for (int c = 0; c < 9; c++)
        want9[first[c]][c] = g9[c];
    for (int f = 0; f < 2; f++) {
        tide_dtype dt = f ? TIDE_FLOAT64 : TIDE_FLOAT32;
        x = th_from_doubles(dt, 4, TH_DIMS(1, 2, 2, 9), &v[0][0], 0);
        y = th_run1("MaxPool", &x, 1, a = pool_attrs(2, 2, 2, 2, "VALID"));
        dy = th_from_doubles(dt, 4, TH_DIMS(1, 1, 1, 9), g9, 0);
        dx = th_run1("MaxPoolGrad", (tide_tensor *[]){x, y, dy}, 3, a);
        want = th_from_doubles(dt, 4, TH_DIMS(1, 2, 2, 9), &want9[0][0], 0);
        TH_ASSERT_CLOSE(dx, want, 0, 0);
        for (int c = 0; c < 9 && y; c++) /* MaxPool itself: NaN where a NaN is, else the max */
            CU_ASSERT(isnan(v[first[c]][c]) ? isnan(tide_tensor_get_f64(y, c))
                                            : tide_tensor_get_f64(y, c) == v[first[c]][c]);
        tide_tensor *more[] = {x, y, dy, dx, want};
        for (int i = 0; i < 5; i++)
            tide_tensor_release(more[i]);
        tide_attrs_free(a);
    }
}

static void test_avg_pool(void)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        check_pool(&pool_cases[i], TIDE_FLOAT32, false, false);
        check_pool(&pool_cases[i], TIDE_FLOAT64, false, false);
    }
}

static void test_pool_errors_and_shapes(void)
{
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 4, 4, 3), NULL);
    tide_attrs *a = pool_attrs(2, 2, 2, 2, "SAME");
    tide_attrs_set_int_list(a, "ksize", (const int64_t[]){1, 2, 2}, 3);
    TH_ASSERT_FAILS("MaxPool", &x, 1, a, TIDE_INVALID_ARGUMENT,
                    "ksize must have 4 entries [1, window_height, window_width, 1] (NHWC), got [1, 2, 2]");
    tide_attrs_set_int_list(a, "ksize", (const int64_t[]){1, 2, 2, 2}, 4);
    TH_ASSERT_FAILS("AvgPool", &x, 1, a, TIDE_INVALID_ARGUMENT,
                    "ksize in the batch and depth dimensions must be 1, got [1, 2, 2, 2]");
    tide_attrs_free(a);
    a = pool_attrs(2, 2, 2, 2, "SAME");
    tide_attrs_set_string(a, "data_format", "NCHW");
    TH_ASSERT_FAILS("MaxPool", &x, 1, a, TIDE_INVALID_ARGUMENT, "data_format 'NCHW' is not supported");
    tide_attrs_free(a);
    a = pool_attrs(2, 2, 2, 2, "EXPLICIT"); /* TensorFlow's pools have no EXPLICIT padding either */
    TH_ASSERT_FAILS("MaxPool", &x, 1, a, TIDE_INVALID_ARGUMENT, "padding must be 'SAME' or 'VALID', got 'EXPLICIT'");
    tide_attrs_free(a);
    a = pool_attrs(5, 2, 1, 1, "VALID");
    TH_ASSERT_FAILS("AvgPool", &x, 1, a, TIDE_INVALID_ARGUMENT,
                    "the window (5) is larger than the input's height 4 with VALID padding: input "
                    "[1, 4, 4, 3], window 5 x 2");
    tide_attrs_free(a);
    a = pool_attrs(2, 2, 2, 2, "VALID");
    tide_tensor *y = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 3), NULL);
    tide_tensor *bad = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 3, 3), NULL);
    TH_ASSERT_FAILS("MaxPoolGrad", ((tide_tensor *[]){x, y, bad}), 3, a, TIDE_INVALID_ARGUMENT,
                    "grad has shape [1, 2, 3, 3], but pooling input [1, 4, 4, 3] gives [1, 2, 2, 3]");
    TH_ASSERT_FAILS("MaxPoolGrad", ((tide_tensor *[]){x, bad, y}), 3, a, TIDE_INVALID_ARGUMENT,
                    "orig_output has shape [1, 2, 3, 3]");
    tide_tensor *s = sizes4(TH_DIMS(1, 4, 4, 3)), *s3 = th_i32(1, TH_DIMS(3), (const int32_t[]){1, 4, 4});
    TH_ASSERT_FAILS("AvgPoolGrad", ((tide_tensor *[]){s, bad}), 2, a, TIDE_INVALID_ARGUMENT,
                    "grad has shape [1, 2, 3, 3]");
    TH_ASSERT_FAILS("AvgPoolGrad", ((tide_tensor *[]){s3, y}), 2, a, TIDE_INVALID_ARGUMENT,
                    "orig_input_shape must be a vector of 4 sizes, got shape [3]");
    tide_tensor *all[] = {x, y, bad, s, s3};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(all[i]);
    tide_attrs_free(a);

    tide_graph *g = tide_graph_new();
    tide_output v = placeholder(g, TIDE_FLOAT32, SHP4(-1, 28, 28, 32));
    tide_shape want = SHP4(-1, 14, 14, 32);
    infer(g, "MaxPool", &v, 1, pool_attrs(2, 2, 2, 2, "SAME"), &want, NULL);
    want = SHP4(-1, 9, 13, 32);
    infer(g, "AvgPool", &v, 1, pool_attrs(3, 3, 3, 2, "VALID"), &want, NULL);
    a = pool_attrs(2, 2, 2, 2, "SAME");
    tide_attrs_set_string(a, "data_format", "NCHW");
    infer(g, "MaxPool", &v, 1, a, NULL, "data_format 'NCHW' is not supported");
    tide_output sizes = constant(g, sizes4(TH_DIMS(8, 28, 28, 32)));
    tide_output dy = placeholder(g, TIDE_FLOAT32, SHP4(-1, 14, 14, 32));
    want = SHP4(8, 28, 28, 32);
    infer(g, "AvgPoolGrad", (tide_output[]){sizes, dy}, 2, pool_attrs(2, 2, 2, 2, "SAME"), &want, NULL);
    infer(g, "AvgPoolGrad", (tide_output[]){sizes, dy}, 2, pool_attrs(2, 2, 1, 1, "SAME"), NULL,
          "grad has shape [?, 14, 14, 32], but pooling input [8, 28, 28, 32] gives [8, 28, 28, 32]");
    want = SHP4(-1, 28, 28, 32);
    infer(g, "MaxPoolGrad", (tide_output[]){v, dy, dy}, 3, pool_attrs(2, 2, 2, 2, "SAME"), &want, NULL);
    tide_graph_free(g);
}

/* ---------------------------------------------------------------- gradient functions */

/* A graph whose inputs are fed Placeholders; tide_gradients of one output against some inputs. */
typedef struct grad_graph {
    tide_graph *g;
    tide_feed feeds[6];
    int num_feeds;
} grad_graph;

/* A Placeholder fed with t; its batch dimension is left unknown when unknown_batch (the gradient
 * functions then read shapes with Shape nodes instead of constants). */
static tide_output fed(grad_graph *gg, tide_tensor *t, bool unknown_batch)
{
    tide_shape s = *tide_tensor_shape(t);
    if (unknown_batch)
        s.dims[0] = -1;
    tide_output o = placeholder(gg->g, tide_tensor_dtype(t), s);
    gg->feeds[gg->num_feeds++] = (tide_feed){o, t};
    return o;
}

/* op(ins) with attrs a (freed) in the graph. */
static tide_output node(grad_graph *gg, const char *op, const tide_output *ins, int n, tide_attrs *a)
{
    tide_error *err = tide_error_new();
    tide_node_builder *b = tide_node_builder_new(gg->g, op, NULL);
    tide_node_builder_add_inputs_flat(b, ins, n);
    tide_attrs_merge(tide_node_builder_attrs(b), a);
    tide_node *nd = tide_node_builder_finish(b, err);
    if (!nd)
        fprintf(stderr, "building %s: %s\n", op, tide_error_message(err));
    tide_attrs_free(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(nd);
    tide_error_free(err);
    return (tide_output){nd, 0};
}

/* d(sum(y * gy))/d(xs[i]) for the fed gy, fetched into out[i]. */
static void gradients_of(grad_graph *gg, tide_output y, tide_tensor *gy, const tide_output *xs, int n,
                         tide_tensor **out)
{
    tide_error *err = tide_error_new();
    tide_output gyo = fed(gg, gy, false), dxs[4] = {{0}};
    tide_status st = tide_gradients(gg->g, &y, 1, xs, n, &gyo, dxs, err);
    if (st != TIDE_OK)
        fprintf(stderr, "gradients: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL_FATAL(st, TIDE_OK);
    for (int i = 0; i < n; i++)
        CU_ASSERT_PTR_NOT_NULL_FATAL(dxs[i].node);
    tide_session *s = tide_session_new(th_engine(), gg->g, NULL, err);
    st = tide_session_run(s, NULL, gg->feeds, gg->num_feeds, dxs, n, out, NULL, 0, NULL, err);
    if (st != TIDE_OK)
        fprintf(stderr, "gradients run: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_session_free(s);
    tide_error_free(err);
}

/* Conv2D's gradients and, through the two backprop ops' own gradients, its second derivatives,
 * against the reference loops: for the linear maps y = A(x, f), the gradient of sum(y * g) with
 * respect to one argument is the adjoint applied to g. */
static void check_conv_gradients(const conv_case *c, tide_dtype dt, bool unknown_batch)
{
    double *x, *f, *dy, *g2;
    int64_t pad;
    const int64_t xd[4] = {c->n, c->h, c->w, c->cin}, fd[4] = {c->kh, c->kw, c->cin, c->cout};
    const int64_t yd[4] = {c->n, tf_out(c->h, c->kh, c->sh, c->dh, c->same, CASE_PADS(c, 0), &pad),
                           tf_out(c->w, c->kw, c->sw, c->dw, c->same, CASE_PADS(c, 1), &pad), c->cout};
    tide_tensor *tx = random4(dt, xd, &x), *tf = random4(dt, fd, &f), *tdy = random4(dt, yd, &dy);
    tide_tensor *tg2 = random4(dt, xd, &g2); /* a gradient flowing into an input-shaped output */
    tide_tensor *tfs = sizes4(fd), *txs = sizes4(xd), *tgf = NULL;
    const char *padding = c->same ? "SAME" : "VALID";
    int64_t taps = c->kh * c->kw, pixels = yd[0] * yd[1] * yd[2];

    /* Conv2D: dx and df. */
    conv_ref r = reference(c, x, f, dy);
    grad_graph gg = {.g = tide_graph_new()};
    tide_output ox = fed(&gg, tx, unknown_batch), of = fed(&gg, tf, false);
    tide_output y = node(&gg, "Conv2D", (tide_output[]){ox, of}, 2, conv_attrs(c->sh, c->sw, c->dh, c->dw, padding));
    tide_tensor *out[2] = {0};
    gradients_of(&gg, y, tdy, (tide_output[]){ox, of}, 2, out);
    assert_close(out[0], dt, xd, r.dx, taps * c->cout);
    assert_close(out[1], dt, fd, r.df, pixels);
    tide_tensor_release(out[0]);
    tide_tensor_release(out[1]);
    tide_graph_free(gg.g);

    /* Conv2DBackpropInput(sizes, f, d) with gradient g2 flowing in: df = filter gradient of input
     * g2 against d; dd = Conv2D(g2, f). */
    conv_ref r2 = reference(c, g2, f, dy);
    gg = (grad_graph){.g = tide_graph_new()};
    of = fed(&gg, tf, false);
    tide_output od = fed(&gg, tdy, unknown_batch), os = fed(&gg, txs, false);
    y = node(&gg, "Conv2DBackpropInput", (tide_output[]){os, of, od}, 3,
             conv_attrs(c->sh, c->sw, c->dh, c->dw, padding));
    gradients_of(&gg, y, tg2, (tide_output[]){of, od}, 2, out);
    assert_close(out[0], dt, fd, r2.df, pixels);
    assert_close(out[1], dt, yd, r2.y, taps * c->cin);
    tide_tensor_release(out[0]);
    tide_tensor_release(out[1]);
    tide_graph_free(gg.g);

    /* Conv2DBackpropFilter(x, sizes, d) with gradient gf flowing in: dx = input gradient of filter
     * gf against d; dd = Conv2D(x, gf). */
    double *gf;
    tgf = random4(dt, fd, &gf);
    conv_ref r3 = reference(c, x, gf, dy);
    gg = (grad_graph){.g = tide_graph_new()};
    ox = fed(&gg, tx, unknown_batch);
    od = fed(&gg, tdy, false);
    os = fed(&gg, tfs, false);
    y = node(&gg, "Conv2DBackpropFilter", (tide_output[]){ox, os, od}, 3,
             conv_attrs(c->sh, c->sw, c->dh, c->dw, padding));
    gradients_of(&gg, y, tgf, (tide_output[]){ox, od}, 2, out);
    assert_close(out[0], dt, xd, r3.dx, taps * c->cout);
    assert_close(out[1], dt, yd, r3.y, taps * c->cin);
    tide_tensor_release(out[0]);
    tide_tensor_release(out[1]);
    tide_graph_free(gg.g);

    tide_tensor *all[] = {tx, tf, tdy, tg2, tfs, txs, tgf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tide_tensor_release(all[i]);
    ref_free(&r);
    ref_free(&r2);
    ref_free(&r3);
    free(x);
    free(f);
    free(dy);
    free(g2);
    free(gf);
}

static void test_conv_gradients(void)
{
    static const conv_case cases[] = {
        {2, 7, 6, 3, 3, 3, 5, 1, 1, 1, 1, true},
        {3, 9, 8, 4, 3, 2, 17, 2, 2, 1, 1, false},
        {2, 9, 8, 3, 3, 3, 5, 1, 1, 2, 2, true},
        {2, 14, 14, 32, 5, 5, 64, 1, 1, 1, 1, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_conv_gradients(&cases[i], TIDE_FLOAT32, i % 2 == 0);
        check_conv_gradients(&cases[i], TIDE_FLOAT64, i % 2 == 1);
    }
}

/* MaxPool's and AvgPool's gradients (and AvgPoolGrad's, which is AvgPool) through tide_gradients. */
static void check_pool_gradients(const pool_case *p, tide_dtype dt, bool max, bool unknown_batch)
{
    const int64_t xd[4] = {p->n, p->h, p->w, p->c};
    int64_t pad, yd[4] = {p->n, tf_out(p->h, p->kh, p->sh, 1, p->same, NULL, &pad),
                          tf_out(p->w, p->kw, p->sw, 1, p->same, NULL, &pad), p->c};
    double *x, *dy, *y, *dx;
    tide_tensor *tx = pool_input(dt, xd, max, &x), *tdy = random4(dt, yd, &dy);
    ref_pool(p, max, x, dy, yd, &y, &dx);
    const char *padding = p->same ? "SAME" : "VALID";
    grad_graph gg = {.g = tide_graph_new()};
    tide_output ox = fed(&gg, tx, unknown_batch);
    tide_output yo = node(&gg, max ? "MaxPool" : "AvgPool", &ox, 1, pool_attrs(p->kh, p->kw, p->sh, p->sw, padding));
    tide_tensor *got = NULL;
    gradients_of(&gg, yo, tdy, &ox, 1, &got);
    assert_close(got, dt, xd, dx, p->kh * p->kw);
    tide_tensor_release(got);
    tide_graph_free(gg.g);
    if (!max) { /* AvgPoolGrad(s, g) with x flowing in: dg = AvgPool(x) */
        tide_tensor *s = sizes4(xd);
        gg = (grad_graph){.g = tide_graph_new()};
        tide_output os = fed(&gg, s, false), og = fed(&gg, tdy, unknown_batch);
        yo = node(&gg, "AvgPoolGrad", (tide_output[]){os, og}, 2, pool_attrs(p->kh, p->kw, p->sh, p->sw, padding));
        gradients_of(&gg, yo, tx, &og, 1, &got);
        assert_close(got, dt, yd, y, p->kh * p->kw);
        tide_tensor_release(got);
        tide_graph_free(gg.g);
        tide_tensor_release(s);
    }
    tide_tensor_release(tx);
    tide_tensor_release(tdy);
    free(x);
    free(dy);
    free(y);
    free(dx);
}

static void test_pool_gradients(void)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++)
        for (int max = 0; max < 2; max++) {
            check_pool_gradients(&pool_cases[i], TIDE_FLOAT32, max, i % 2 == 0);
            check_pool_gradients(&pool_cases[i], TIDE_FLOAT64, max, i % 2 == 1);
        }
}

/* The registry knows which of the family are differentiable; MaxPoolGrad is not (no second
 * derivative of max pooling), and saying so names it. */
static void test_gradient_registry(void)
{
    const char *const *names;
    int n = tide_registry_gradient_ops(&names);
    const char *want[] = {"AvgPool", "AvgPoolGrad", "Conv2D", "Conv2DBackpropFilter",
                          "Conv2DBackpropInput", "MaxPool"};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found = found || strcmp(names[i], want[w]) == 0;
        if (!found)
            fprintf(stderr, "no gradient function for %s\n", want[w]);
        CU_ASSERT(found);
    }
    tide_tensor *x = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 4, 4, 2), NULL);
    tide_tensor *dy = th_tensor(TIDE_FLOAT32, 4, TH_DIMS(1, 2, 2, 2), NULL);
    grad_graph gg = {.g = tide_graph_new()};
    tide_output ox = fed(&gg, x, false);
    tide_output yo = node(&gg, "MaxPool", &ox, 1, pool_attrs(2, 2, 2, 2, "VALID"));
    tide_output gy = fed(&gg, dy, false);
    tide_output g = node(&gg, "MaxPoolGrad", (tide_output[]){ox, yo, gy}, 3, pool_attrs(2, 2, 2, 2, "VALID"));
    tide_output dgy = {0};
    tide_error *err = tide_error_new();
    CU_ASSERT_NOT_EQUAL(tide_gradients(gg.g, &g, 1, &gy, 1, NULL, &dgy, err), TIDE_OK);
    CU_ASSERT(strstr(tide_error_message(err), "MaxPoolGrad") != NULL);
    tide_error_free(err);
    tide_graph_free(gg.g);
    tide_tensor_release(x);
    tide_tensor_release(dy);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_conv2d_literal),
        TH_TEST(test_conv_same_valid_stride1),
        TH_TEST(test_conv_strides),
        TH_TEST(test_conv_dilations),
        TH_TEST(test_conv_explicit_padding),
        TH_TEST(test_conv_single_input_channel),
        TH_TEST(test_conv_large),
        TH_TEST(test_conv_empty),
        TH_TEST(test_depthwise),
        TH_TEST(test_conv_portable_kernels),
        TH_TEST(test_conv_each_isa),
        TH_TEST(test_conv_width_padding),
        TH_TEST(test_conv_filter_in_place),
        TH_TEST(test_conv_follows_cpu_isa),
        TH_TEST(test_conv_winograd),
        TH_TEST(test_conv_winograd_filter),
        TH_TEST(test_conv_backprop_input_phases),
        TH_TEST(test_conv_bad_attrs),
        TH_TEST(test_conv_bad_shapes),
        TH_TEST(test_conv_shape_inference),
        TH_TEST(test_pool_literal),
        TH_TEST(test_max_pool),
        TH_TEST(test_max_pool_ties),
        TH_TEST(test_avg_pool),
        TH_TEST(test_pool_errors_and_shapes),
        TH_TEST(test_conv_gradients),
        TH_TEST(test_pool_gradients),
        TH_TEST(test_gradient_registry),
        TH_END,
    };
    return th_main("conv", tests);
}
