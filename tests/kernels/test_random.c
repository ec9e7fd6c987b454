/* test_random.c — CUnit suite of the random ops: RandomUniform, RandomNormal, TruncatedNormal,
 * RandomUniformInt, RandomShuffle.
 *
 * Three kinds of checks:
 *  - golden streams: a reference Philox4x32-10 written here (itself checked against Random123's
 *    published known-answer vectors) and the seed rule and block layout documented in
 *    kernels/cpu/random.c reproduce the ops' outputs, also for outputs big enough to be generated
 *    in parallel chunks;
 *  - statistics on >= 100k samples with fixed seeds: mean and variance within 5 standard errors,
 *    and the Kolmogorov-Smirnov statistic D below 1.95/sqrt(n) (alpha = 0.001);
 *  - properties and errors: ranges, every dtype, determinism by seed, empty shapes, bad inputs.
 * Graph-only behaviour (a node's stream advancing across runs, graph seeds, shape inference from
 * partial shapes, kernel checks of fed values) is tested through sessions at the end. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

__extension__ typedef unsigned __int128 u128;

/* ---------------------------------------------------------------- reference generator */

static void ref_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k[2] = {key[0], key[1]};
    for (int round = 0; round < 10; round++) {
        if (round) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        uint64_t a = (uint64_t)c[0] * 0xD2511F53u, b = (uint64_t)c[2] * 0xCD9E8D57u;
        uint32_t n[4] = {(uint32_t)(b >> 32) ^ c[1] ^ k[0], (uint32_t)b,
                         (uint32_t)(a >> 32) ^ c[3] ^ k[1], (uint32_t)a};
        memcpy(c, n, sizeof c);
    }
    memcpy(out, c, sizeof c);
}

typedef struct ref_stream {
    uint32_t key[2];
    uint64_t stream;
} ref_stream;

static uint64_t ref_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t ref_fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
    return h;
}

/* The documented rule for a set seed: key = mix(mix(g) ^ seed), stream = mix(key ^ mix(seed2 + phi)). */
static ref_stream ref_seeded(int64_t graph_seed, int64_t seed, int64_t seed2)
{
    uint64_t g = graph_seed ? (uint64_t)graph_seed : 87654321u;
    uint64_t key = ref_mix(ref_mix(g) ^ (uint64_t)seed);
    ref_stream s = {{(uint32_t)key, (uint32_t)(key >> 32)},
                    ref_mix(key ^ ref_mix((uint64_t)seed2 + 0x9e3779b97f4a7c15ULL))};
    return s;
}

static void ref_block(const ref_stream *s, uint64_t block, uint32_t w[4])
{
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)s->stream,
                       (uint32_t)(s->stream >> 32)};
    ref_philox(ctr, s->key, w);
}

static double ref_u24(uint32_t x) { return (double)(x >> 8) / 16777216.0; }
static double ref_u53(uint32_t hi, uint32_t lo)
{
    return (double)((((uint64_t)hi << 32) | lo) >> 11) / 9007199254740992.0;
}

/* ---------------------------------------------------------------- helpers */

static tide_attrs *rattrs(const char *type_attr, tide_dtype dt, int64_t seed, int64_t seed2)
{
    tide_attrs *a = tide_attrs_new();
    if (type_attr)
        tide_attrs_set_type(a, type_attr, dt);
    tide_attrs_set_int(a, "seed", seed);
    tide_attrs_set_int(a, "seed2", seed2);
    return a;
}

/* A shape vector of dtype T (int32 or int64). */
static tide_tensor *shape_vec(tide_dtype T, int rank, const int64_t *dims)
{
    int32_t d32[16];
    for (int i = 0; i < rank && i < 16; i++)
        d32[i] = (int32_t)dims[i];
    int64_t n = rank;
    return T == TIDE_INT32 ? th_i32(1, &n, d32) : th_i64(1, &n, dims);
}

/* Runs a shape-taking op (RandomUniform, RandomNormal, TruncatedNormal) with th_run1. */
static tide_tensor *gen(const char *op, tide_dtype dt, int rank, const int64_t *dims, int64_t seed,
                        int64_t seed2)
{
    tide_tensor *shape = shape_vec(TIDE_INT32, rank, dims);
    tide_attrs *a = rattrs("dtype", dt, seed, seed2);
    tide_tensor *out = th_run1(op, &shape, 1, a);
    tide_attrs_free(a);
    tide_tensor_release(shape);
    return out;
}

/* RandomUniformInt of Tout dt over [lo, hi). */
static tide_tensor *gen_int(tide_dtype dt, int rank, const int64_t *dims, int64_t lo, int64_t hi,
                            int64_t seed, int64_t seed2)
{
    int32_t l32 = (int32_t)lo, h32 = (int32_t)hi;
    tide_tensor *in[3] = {shape_vec(TIDE_INT64, rank, dims),
                          dt == TIDE_INT32 ? th_i32(0, NULL, &l32) : th_i64(0, NULL, &lo),
                          dt == TIDE_INT32 ? th_i32(0, NULL, &h32) : th_i64(0, NULL, &hi)};
    tide_attrs *a = rattrs(NULL, TIDE_INVALID_DTYPE, seed, seed2);
    tide_tensor *out = th_run1("RandomUniformInt", in, 3, a);
    tide_attrs_free(a);
    for (int i = 0; i < 3; i++)
        tide_tensor_release(in[i]);
    return out;
}

/* The elements as doubles (malloc'd; caller frees). */
static double *to_doubles(const tide_tensor *t)
{
    int64_t n = tide_tensor_num_elements(t);
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = tide_tensor_get_f64(t, i);
    return x;
}

static void moments(const double *x, int64_t n, double *mean, double *var)
{
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++)
        ss += (x[i] - *mean) * (x[i] - *mean);
    *var = ss / (double)(n - 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov statistic of the sample (sorted in place) against cdf. */
static double ks_stat(double *x, int64_t n, double (*cdf)(double))
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double d = 0;
    for (int64_t i = 0; i < n; i++) {
        double f = cdf(x[i]);
        double hi = (double)(i + 1) / (double)n - f, lo = f - (double)i / (double)n;
        if (hi > d)
            d = hi;
        if (lo > d)
            d = lo;
    }
    return d;
}

static double cdf_uniform(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static double cdf_normal(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double pdf_normal(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * M_PI); }
static double cdf_truncated(double x)
{
    double lo = cdf_normal(-2.0), z = cdf_normal(2.0) - lo;
    return x < -2 ? 0 : x > 2 ? 1 : (cdf_normal(x) - lo) / z;
}

/* Mean and variance within 5 standard errors (var4 = the variance of (x - mean)^2), KS below the
 * alpha = 0.001 critical value. Prints the figures when a check fails. */
static void check_distribution(const char *what, double *x, int64_t n, double mean, double var,
                               double var4, double (*cdf)(double))
{
    double m, v;
    moments(x, n, &m, &v);
    double se_mean = sqrt(var / (double)n), se_var = sqrt(var4 / (double)n);
    double d = ks_stat(x, n, cdf), crit = 1.95 / sqrt((double)n);
    bool ok = fabs(m - mean) < 5 * se_mean && fabs(v - var) < 5 * se_var && d < crit;
    if (!ok)
        fprintf(stderr, "%s: mean %.6f (want %.6f +- %.6f), var %.6f (want %.6f +- %.6f), KS D %.5f "
                        "(critical %.5f)\n", what, m, mean, 5 * se_mean, v, var, 5 * se_var, d, crit);
    CU_ASSERT(fabs(m - mean) < 5 * se_mean);
    CU_ASSERT(fabs(v - var) < 5 * se_var);
    CU_ASSERT(d < crit);
}

static bool same_values(const tide_tensor *a, const tide_tensor *b)
{
    return a && b && tide_tensor_equal(a, b, true);
}

static const char *const shape_ops[] = {"RandomUniform", "RandomNormal", "TruncatedNormal"};
static const tide_dtype float_types[] = {TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_FLOAT32, TIDE_FLOAT64};

/* ---------------------------------------------------------------- golden streams */

static void test_reference_philox_known_answers(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        ref_philox(kat[i], kat[i] + 4, out);
        CU_ASSERT(memcmp(out, kat[i] + 6, sizeof out) == 0);
    }
}

/* Uniform float32 and float64 are exactly the reference stream, for sizes that are not a multiple of
 * a block and for ones big enough to be split into parallel chunks. */
static void test_uniform_golden(void)
{
    const int64_t sizes[] = {1, 7, (1 << 20) + 3};
    for (int s = 0; s < 3; s++) {
        int64_t n = sizes[s];
        ref_stream rs = ref_seeded(0, 1234, 99);
        tide_tensor *f = gen("RandomUniform", TIDE_FLOAT32, 1, &n, 1234, 99);
        tide_tensor *d = gen("RandomUniform", TIDE_FLOAT64, 1, &n, 1234, 99);
        tide_tensor *wf = th_tensor(TIDE_FLOAT32, 1, &n, NULL), *wd = th_tensor(TIDE_FLOAT64, 1, &n, NULL);
        float *pf = tide_tensor_data(wf);
        double *pd = tide_tensor_data(wd);
        for (int64_t i = 0; i < n; i++) {
            uint32_t w[4];
            ref_block(&rs, (uint64_t)i / 4, w);
            pf[i] = (float)ref_u24(w[i % 4]);
            ref_block(&rs, (uint64_t)i / 2, w);
            pd[i] = i % 2 ? ref_u53(w[2], w[3]) : ref_u53(w[0], w[1]);
        }
        TH_ASSERT_CLOSE(f, wf, 0, 0);
        TH_ASSERT_CLOSE(d, wd, 0, 0);
        tide_tensor_release(f), tide_tensor_release(d), tide_tensor_release(wf), tide_tensor_release(wd);
    }
}

/* Box-Muller on the reference uniforms, computed here in double. */
static void ref_normals(const uint32_t w[4], bool wide, double z[4])
{
    for (int k = 0; k < (wide ? 1 : 2); k++) {
        double u1 = wide ? ((double)((((uint64_t)w[0] << 32) | w[1]) >> 11) + 1) / 9007199254740992.0
                         : ((double)(w[2 * k] >> 8) + 1) / 16777216.0;
        double u2 = wide ? ref_u53(w[2], w[3]) : ref_u24(w[2 * k + 1]);
        double r = sqrt(-2.0 * log(u1));
        z[2 * k] = r * cos(2 * M_PI * u2);
        z[2 * k + 1] = r * sin(2 * M_PI * u2);
    }
}

static void test_normal_golden(void)
{
    int64_t n = 300001; /* parallel chunks, a partial last block */
    ref_stream rs = ref_seeded(0, 5, 6);
    tide_tensor *f = gen("RandomNormal", TIDE_FLOAT32, 1, &n, 5, 6);
    tide_tensor *d = gen("RandomNormal", TIDE_FLOAT64, 1, &n, 5, 6);
    tide_tensor *wf = th_tensor(TIDE_FLOAT32, 1, &n, NULL), *wd = th_tensor(TIDE_FLOAT64, 1, &n, NULL);
    float *pf = tide_tensor_data(wf);
    double *pd = tide_tensor_data(wd);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        double z[4];
        ref_block(&rs, (uint64_t)i / 4, w);
        ref_normals(w, false, z);
        pf[i] = (float)z[i % 4];
        ref_block(&rs, (uint64_t)i / 2, w);
        ref_normals(w, true, z);
        pd[i] = z[i % 2];
    }
    TH_ASSERT_CLOSE(f, wf, 1e-5, 1e-5); /* float32 math in the kernel: a few ulps of error */
    TH_ASSERT_CLOSE(d, wd, 1e-13, 1e-13);
    tide_tensor_release(f), tide_tensor_release(d), tide_tensor_release(wf), tide_tensor_release(wd);
}

/* float64 truncated normals: group g takes blocks 16g, 16g+1, ... until it has two in (-2, 2). */
static void test_truncated_golden(void)
{
    int64_t n = 1001;
    ref_stream rs = ref_seeded(0, 77, 0);
    tide_tensor *d = gen("TruncatedNormal", TIDE_FLOAT64, 1, &n, 77, 0);
    tide_tensor *want = th_tensor(TIDE_FLOAT64, 1, &n, NULL);
    double *p = tide_tensor_data(want);
    for (int64_t g = 0; g * 2 < n; g++) {
        double v[2];
        int got = 0;
        for (uint64_t k = 0; got < 2; k++) {
            uint32_t w[4];
            double z[4];
            ref_block(&rs, (uint64_t)g * 16 + k, w);
            ref_normals(w, true, z);
            for (int i = 0; i < 2 && got < 2; i++)
                if (fabs(z[i]) < 2)
                    v[got++] = z[i];
        }
        for (int i = 0; i < 2 && g * 2 + i < n; i++)
            p[g * 2 + i] = v[i];
    }
    TH_ASSERT_CLOSE(d, want, 1e-13, 1e-13);
    tide_tensor_release(d), tide_tensor_release(want);
}

/* floor(x * r / 2^128) for x given as 32-bit limbs, most significant first: schoolbook. */
static uint64_t ref_mulhi128(const uint32_t x[4], uint64_t r)
{
    uint32_t b[2] = {(uint32_t)r, (uint32_t)(r >> 32)}, p[6] = {0};
    for (int i = 0; i < 4; i++) {
        uint64_t carry = 0, a = x[3 - i];
        for (int j = 0; j < 2; j++) {
            uint64_t t = a * b[j] + p[i + j] + carry;
            p[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
        p[i + 2] = (uint32_t)carry;
    }
    return ((uint64_t)p[5] << 32) | p[4];
}

/* int32 takes 64 bits per value (two per block), int64 128 bits (one per block): multiply-shift. */
static void test_uniform_int_golden(void)
{
    int64_t n = 9;
    ref_stream rs = ref_seeded(0, 3, 4);
    tide_tensor *a = gen_int(TIDE_INT32, 1, &n, -100, 100, 3, 4);
    tide_tensor *b = gen_int(TIDE_INT64, 1, &n, INT64_MIN, 1000, 3, 4);
    uint64_t range64 = (uint64_t)1000 - (uint64_t)INT64_MIN;
    for (int64_t i = 0; i < n && a && b; i++) {
        uint32_t w[4];
        ref_block(&rs, (uint64_t)i / 2, w);
        uint64_t x = i % 2 ? ((uint64_t)w[2] << 32) | w[3] : ((uint64_t)w[0] << 32) | w[1];
        int64_t want32 = -100 + (int64_t)(((u128)x * 200) >> 64);
        CU_ASSERT_EQUAL(((const int32_t *)tide_tensor_data(a))[i], want32);
        ref_block(&rs, (uint64_t)i, w);
        int64_t want64 = (int64_t)((uint64_t)INT64_MIN + ref_mulhi128(w, range64));
        CU_ASSERT_EQUAL(((const int64_t *)tide_tensor_data(b))[i], want64);
    }
    tide_tensor_release(a), tide_tensor_release(b);
}

/* ---------------------------------------------------------------- statistics */

static void test_uniform_statistics(void)
{
    int64_t n = 200000;
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int t = 0; t < 2; t++) {
        tide_tensor *out = gen("RandomUniform", types[t], 1, &n, 42, 1);
        double *x = to_doubles(out);
        check_distribution(tide_dtype_name(types[t]), x, n, 0.5, 1.0 / 12, 1.0 / 180, cdf_uniform);
        free(x);
        tide_tensor_release(out);
    }
}

static void test_normal_statistics(void)
{
    int64_t n = 200000;
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int t = 0; t < 2; t++) {
        tide_tensor *out = gen("RandomNormal", types[t], 1, &n, 43, 2);
        double *x = to_doubles(out);
        int64_t beyond = 0;
        for (int64_t i = 0; i < n; i++)
            beyond += fabs(x[i]) > 2;
        double p = 2 * cdf_normal(-2.0), sd = sqrt(n * p * (1 - p));
        CU_ASSERT(fabs((double)beyond - n * p) < 5 * sd); /* the tails are there */
        check_distribution(tide_dtype_name(types[t]), x, n, 0.0, 1.0, 2.0, cdf_normal);
        free(x);
        tide_tensor_release(out);
    }
}

static void test_truncated_normal_statistics(void)
{
    int64_t n = 200000;
    double z = cdf_normal(2.0) - cdf_normal(-2.0), phi = pdf_normal(2.0);
    double m2 = 1 - 4 * phi / z, m4 = 3 - 28 * phi / z; /* E x^2, E x^4 on [-2, 2] */
    const tide_dtype types[] = {TIDE_FLOAT32, TIDE_FLOAT64};
    for (int t = 0; t < 2; t++) {
        tide_tensor *out = gen("TruncatedNormal", types[t], 1, &n, 44, 3);
        double *x = to_doubles(out);
        double lo = 0, hi = 0;
        for (int64_t i = 0; i < n; i++)
            lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
        CU_ASSERT(lo >= -2.0 && hi <= 2.0);
        CU_ASSERT(lo < -1.99 && hi > 1.99); /* and it reaches the bounds */
        check_distribution(tide_dtype_name(types[t]), x, n, 0.0, m2, m4 - m2 * m2, cdf_truncated);
        free(x);
        tide_tensor_release(out);
    }
}

/* Half-precision outputs: the right dtype, in range, roughly the right moments. */
static void test_half_precision(void)
{
    int64_t n = 100000;
    for (int t = 0; t < 2; t++) {
        tide_dtype dt = float_types[t];
        tide_tensor *u = gen("RandomUniform", dt, 1, &n, 8, 0);
        tide_tensor *g = gen("RandomNormal", dt, 1, &n, 8, 0);
        tide_tensor *tr = gen("TruncatedNormal", dt, 1, &n, 8, 0);
        CU_ASSERT_EQUAL(tide_tensor_dtype(u), dt);
        CU_ASSERT_EQUAL(tide_tensor_dtype(g), dt);
        double *xu = to_doubles(u), *xg = to_doubles(g), *xt = to_doubles(tr);
        double grid = dt == TIDE_FLOAT16 ? 1024 : 128; /* 10 or 7 random bits */
        bool in_range = true, on_grid = true, trunc_ok = true;
        for (int64_t i = 0; i < n; i++) {
            in_range &= xu[i] >= 0 && xu[i] < 1;
            on_grid &= xu[i] * grid == floor(xu[i] * grid);
            trunc_ok &= fabs(xt[i]) <= 2;
        }
        CU_ASSERT(in_range);
        CU_ASSERT(on_grid);
        CU_ASSERT(trunc_ok);
        double m, v;
        moments(xu, n, &m, &v);
        CU_ASSERT(fabs(m - (1 - 1 / grid) / 2) < 0.005); /* uniform on the grid */
        moments(xg, n, &m, &v);
        CU_ASSERT(fabs(m) < 0.02 && fabs(v - 1) < 0.03);
        free(xu), free(xg), free(xt);
        tide_tensor_release(u), tide_tensor_release(g), tide_tensor_release(tr);
    }
}

static void test_uniform_int_statistics(void)
{
    int64_t n = 200000, dims[2] = {400, 500};
    tide_tensor *small = gen_int(TIDE_INT32, 2, dims, -5, 5, 11, 0);
    TH_ASSERT_SHAPE(small, 2, dims);
    int64_t counts[10] = {0};
    bool in_range = true;
    const int32_t *p = tide_tensor_data(small);
    for (int64_t i = 0; i < n; i++) {
        in_range &= p[i] >= -5 && p[i] < 5;
        if (p[i] >= -5 && p[i] < 5)
            counts[p[i] + 5]++;
    }
    CU_ASSERT(in_range);
    double sd = sqrt(n * 0.1 * 0.9);
    for (int k = 0; k < 10; k++)
        CU_ASSERT(fabs((double)counts[k] - n * 0.1) < 5 * sd);
    tide_tensor_release(small);
    /* A range wider than 32 bits, scaled to [0, 1): uniform. */
    int64_t range = 3LL << 40;
    tide_tensor *wide = gen_int(TIDE_INT64, 1, &n, -range / 2, range / 2, 12, 0);
    double *x = to_doubles(wide);
    for (int64_t i = 0; i < n; i++)
        x[i] = (x[i] + (double)(range / 2)) / (double)range;
    check_distribution("int64 wide", x, n, 0.5, 1.0 / 12, 1.0 / 180, cdf_uniform);
    free(x);
    tide_tensor_release(wide);
}

/* The extreme ranges of both dtypes: every value valid, both halves hit evenly. */
static void test_uniform_int_extremes(void)
{
    int64_t n = 100000;
    tide_tensor *a = gen_int(TIDE_INT32, 1, &n, INT32_MIN, INT32_MAX, 13, 0);
    tide_tensor *b = gen_int(TIDE_INT64, 1, &n, INT64_MIN, INT64_MAX, 13, 0);
    int64_t neg_a = 0, neg_b = 0, max_a = 0, max_b = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t va = ((const int32_t *)tide_tensor_data(a))[i];
        int64_t vb = ((const int64_t *)tide_tensor_data(b))[i];
        neg_a += va < 0, neg_b += vb < 0;
        max_a += va == INT32_MAX, max_b += vb == INT64_MAX;
    }
    double sd = sqrt(n * 0.25);
    CU_ASSERT(fabs((double)neg_a - n / 2.0) < 5 * sd);
    CU_ASSERT(fabs((double)neg_b - n / 2.0) < 5 * sd);
    CU_ASSERT(max_a == 0 && max_b == 0); /* maxval is excluded */
    tide_tensor_release(a), tide_tensor_release(b);
    /* A one-value range always gives minval. */
    int64_t m = 50;
    tide_tensor *one = gen_int(TIDE_INT64, 1, &m, INT64_MAX - 1, INT64_MAX, 14, 0);
    tide_tensor *want = th_tensor(TIDE_INT64, 1, &m, NULL);
    for (int64_t i = 0; i < m; i++)
        ((int64_t *)tide_tensor_data(want))[i] = INT64_MAX - 1;
    TH_ASSERT_CLOSE(one, want, 0, 0);
    tide_tensor_release(one), tide_tensor_release(want);
}

/* ---------------------------------------------------------------- dtypes, shapes, seeds */

static void test_every_dtype_and_shape_type(void)
{
    int64_t dims[3] = {3, 1, 5};
    for (int o = 0; o < 3; o++)
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < 2; s++) {
                tide_tensor *shape = shape_vec(s ? TIDE_INT64 : TIDE_INT32, 3, dims);
                tide_attrs *a = rattrs("dtype", float_types[t], 21, 0);
                tide_tensor *out = th_run1(shape_ops[o], &shape, 1, a);
                TH_ASSERT_SHAPE(out, 3, dims);
                CU_ASSERT(out && tide_tensor_dtype(out) == float_types[t]);
                double *x = to_doubles(out), lo = 1e9, hi = -1e9;
                for (int i = 0; out && i < 15; i++)
                    lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
                CU_ASSERT(hi > lo); /* not constant */
                if (o == 0)
                    CU_ASSERT(lo >= 0 && hi < 1);
                free(x);
                tide_tensor_release(out), tide_tensor_release(shape);
                tide_attrs_free(a);
            }
}

static void test_empty_and_scalar_shapes(void)
{
    int64_t empty1[1] = {0}, empty3[3] = {2, 0, 3};
    for (int o = 0; o < 3; o++) {
        tide_tensor *a = gen(shape_ops[o], TIDE_FLOAT32, 1, empty1, 1, 0);
        tide_tensor *b = gen(shape_ops[o], TIDE_FLOAT64, 3, empty3, 1, 0);
        tide_tensor *c = gen(shape_ops[o], TIDE_FLOAT32, 0, NULL, 1, 0);
        TH_ASSERT_SHAPE(a, 1, empty1);
        TH_ASSERT_SHAPE(b, 3, empty3);
        TH_ASSERT_SHAPE(c, 0, NULL);
        tide_tensor_release(a), tide_tensor_release(b), tide_tensor_release(c);
    }
    tide_tensor *i = gen_int(TIDE_INT32, 3, empty3, 0, 10, 1, 0);
    TH_ASSERT_SHAPE(i, 3, empty3);
    tide_tensor_release(i);
    /* Like TensorFlow, an empty output needs no valid range. */
    i = gen_int(TIDE_INT64, 1, empty1, 5, 5, 1, 0);
    TH_ASSERT_SHAPE(i, 1, empty1);
    tide_tensor_release(i);
    /* A zero dimension makes huge other ones fine (their product would overflow). */
    int64_t huge_empty[3] = {1LL << 40, 1LL << 40, 0};
    i = gen_int(TIDE_INT32, 3, huge_empty, 9, 2, 1, 0);
    TH_ASSERT_SHAPE(i, 3, huge_empty);
    tide_tensor_release(i);
    tide_tensor *shape = shape_vec(TIDE_INT64, 3, huge_empty);
    for (int o = 0; o < 3; o++) {
        tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 1, 0);
        tide_tensor *out = th_run1(shape_ops[o], &shape, 1, a);
        TH_ASSERT_SHAPE(out, 3, huge_empty);
        tide_tensor_release(out);
        tide_attrs_free(a);
    }
    tide_tensor_release(shape);
    i = gen_int(TIDE_INT64, 0, NULL, 7, 8, 1, 0);
    TH_ASSERT_SHAPE(i, 0, NULL);
    CU_ASSERT(i && tide_tensor_get_f64(i, 0) == 7);
    tide_tensor_release(i);
}

/* Runs op eagerly with the given seeds; shuffles `value` for RandomShuffle. */
static tide_tensor *run_seeded(const char *op, int64_t seed, int64_t seed2, tide_tensor *value)
{
    int64_t dims[2] = {4, 25};
    int32_t lo = -1000, hi = 1000;
    tide_tensor *in[3] = {shape_vec(TIDE_INT32, 2, dims), th_i32(0, NULL, &lo), th_i32(0, NULL, &hi)};
    bool is_int = strcmp(op, "RandomUniformInt") == 0, shuffle = strcmp(op, "RandomShuffle") == 0;
    tide_attrs *a = rattrs(is_int || shuffle ? NULL : "dtype", TIDE_FLOAT32, seed, seed2);
    tide_tensor *out = NULL;
    int got = 0;
    tide_error *err = tide_error_new();
    /* Directly, not th_run: a graph run would not repeat unseeded numbers. */
    tide_status st = tide_engine_run_op(th_engine(), op, shuffle ? &value : in, shuffle ? 1 : is_int ? 3 : 1,
                                        a, &out, 1, &got, err);
    if (st != TIDE_OK)
        fprintf(stderr, "%s: %s\n", op, tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    tide_error_free(err);
    tide_attrs_free(a);
    for (int i = 0; i < 3; i++)
        tide_tensor_release(in[i]);
    return out;
}

static void test_seeds_determine_the_numbers(void)
{
    static const char *const ops[] = {"RandomUniform", "RandomNormal", "TruncatedNormal",
                                      "RandomUniformInt", "RandomShuffle"};
    int64_t n = 100;
    tide_tensor *value = th_tensor(TIDE_INT64, 1, &n, NULL);
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)tide_tensor_data(value))[i] = i;
    for (int o = 0; o < 5; o++) {
        tide_tensor *a = run_seeded(ops[o], 1, 2, value), *b = run_seeded(ops[o], 1, 2, value);
        tide_tensor *c = run_seeded(ops[o], 3, 2, value), *d = run_seeded(ops[o], 1, 3, value);
        tide_tensor *e = run_seeded(ops[o], 0, 0, value), *f = run_seeded(ops[o], 0, 0, value);
        /* seed2 alone counts as an op seed */
        tide_tensor *g = run_seeded(ops[o], 0, 2, value), *h = run_seeded(ops[o], 0, 2, value);
        CU_ASSERT(same_values(a, b));   /* same seeds: same numbers (eager calls start afresh) */
        CU_ASSERT(!same_values(a, c));  /* other seed */
        CU_ASSERT(!same_values(a, d));  /* other seed2 */
        CU_ASSERT(!same_values(e, f));  /* no seeds at all: nondeterministic */
        CU_ASSERT(same_values(g, h));
        tide_tensor *tensors[] = {a, b, c, d, e, f, g, h};
        for (int i = 0; i < 8; i++)
            tide_tensor_release(tensors[i]);
    }
    tide_tensor_release(value);
}

/* ---------------------------------------------------------------- errors */

static void test_shape_input_errors(void)
{
    int32_t matrix[2] = {2, 3}, scalar = 4, negative[2] = {2, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int64_t overflow[2] = {1LL << 40, 1LL << 40}, huge[2] = {1LL << 30, 1LL << 30};
    float as_float[1] = {3};
    tide_tensor *bad[] = {th_i32(2, TH_DIMS(1, 2), matrix), th_i32(0, NULL, &scalar),
                          th_i32(1, TH_DIMS(2), negative), th_i32(1, TH_DIMS(9), nine),
                          th_i64(1, TH_DIMS(2), overflow), th_i64(1, TH_DIMS(2), huge),
                          th_f32(1, TH_DIMS(1), as_float)};
    static const struct {
        tide_status code;
        const char *needle;
    } want[] = {
        {TIDE_INVALID_ARGUMENT, "shape must be a vector of int32 or int64, got a tensor of shape [1, 2]"},
        {TIDE_INVALID_ARGUMENT, "shape must be a vector of int32 or int64, got a tensor of shape []"},
        {TIDE_INVALID_ARGUMENT, "shape [2, -1] has a negative dimension"},
        {TIDE_INVALID_ARGUMENT, "shape has 9 dimensions; at most 8 are supported"},
        {TIDE_INVALID_ARGUMENT, "shape [1099511627776, 1099511627776] has too many elements"},
        {TIDE_RESOURCE_EXHAUSTED, "too large"}, /* 2^60 elements: the allocator says no */
        {TIDE_INVALID_ARGUMENT, "input 'shape' has dtype float32, but T must be one of {int32, int64}"},
    };
    for (int o = 0; o < 3; o++) {
        tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 1, 0);
        for (int i = 0; i < 7; i++)
            TH_ASSERT_FAILS(shape_ops[o], &bad[i], 1, a, want[i].code, want[i].needle);
        tide_attrs_free(a);
    }
    for (int i = 0; i < 7; i++)
        tide_tensor_release(bad[i]);
}

static void test_attr_errors(void)
{
    int32_t dims[1] = {3};
    tide_tensor *shape = th_i32(1, TH_DIMS(1), dims);
    for (int o = 0; o < 3; o++) {
        tide_attrs *a = rattrs("dtype", TIDE_INT32, 1, 0);
        TH_ASSERT_FAILS(shape_ops[o], &shape, 1, a, TIDE_INVALID_ARGUMENT,
                        "attr dtype=int32 is not allowed; expected one of {float16, bfloat16, float32, float64}");
        tide_attrs_free(a);
        a = rattrs(NULL, TIDE_INVALID_DTYPE, 1, 0);
        TH_ASSERT_FAILS(shape_ops[o], &shape, 1, a, TIDE_INVALID_ARGUMENT, "missing attr 'dtype'");
        tide_attrs_set_string(a, "dtype", "float32");
        TH_ASSERT_FAILS(shape_ops[o], &shape, 1, a, TIDE_INVALID_ARGUMENT, "attr 'dtype' must be a type");
        tide_attrs_free(a);
        a = rattrs("dtype", TIDE_FLOAT32, 1, 0);
        tide_attrs_set_float(a, "seed", 1.5);
        TH_ASSERT_FAILS(shape_ops[o], &shape, 1, a, TIDE_INVALID_ARGUMENT, "attr 'seed' must be a int");
        tide_attrs_free(a);
    }
    tide_tensor_release(shape);
}

static void test_uniform_int_errors(void)
{
    int64_t dims[1] = {4}, pair[2] = {1, 2};
    int32_t five = 5, three = 3, four = 4;
    int64_t three64 = 3;
    float f = 1;
    tide_tensor *shape = th_i64(1, TH_DIMS(1), dims);
    tide_tensor *c5 = th_i32(0, NULL, &five), *c3 = th_i32(0, NULL, &three), *c4 = th_i32(0, NULL, &four);
    tide_tensor *c3_64 = th_i64(0, NULL, &three64), *vec = th_i64(1, TH_DIMS(2), pair), *cf = th_f32(0, NULL, &f);
    tide_tensor *neg = th_i64(1, TH_DIMS(2), (int64_t[]){-3, 2});
    tide_tensor *in1[3] = {shape, c5, c3}, *in2[3] = {shape, c4, c4}, *in3[3] = {shape, c5, c3_64};
    tide_tensor *in4[3] = {shape, vec, vec}, *in5[3] = {shape, cf, cf}, *in6[3] = {neg, c3, c5};
    tide_tensor *in7[3] = {shape, c3_64, vec};
    TH_ASSERT_FAILS("RandomUniformInt", in1, 3, NULL, TIDE_INVALID_ARGUMENT, "need minval < maxval, got 5 >= 3");
    TH_ASSERT_FAILS("RandomUniformInt", in2, 3, NULL, TIDE_INVALID_ARGUMENT, "need minval < maxval, got 4 >= 4");
    TH_ASSERT_FAILS("RandomUniformInt", in3, 3, NULL, TIDE_INVALID_ARGUMENT,
                    "input 'maxval' has dtype int64, expected int32");
    TH_ASSERT_FAILS("RandomUniformInt", in4, 3, NULL, TIDE_INVALID_ARGUMENT, "minval must be a scalar, got shape [2]");
    TH_ASSERT_FAILS("RandomUniformInt", in7, 3, NULL, TIDE_INVALID_ARGUMENT, "maxval must be a scalar, got shape [2]");
    TH_ASSERT_FAILS("RandomUniformInt", in5, 3, NULL, TIDE_INVALID_ARGUMENT,
                    "input 'minval' has dtype float32, but Tout must be one of {int32, int64}");
    TH_ASSERT_FAILS("RandomUniformInt", in6, 3, NULL, TIDE_INVALID_ARGUMENT, "shape [-3, 2] has a negative dimension");
    TH_ASSERT_FAILS("RandomUniformInt", in1, 2, NULL, TIDE_INVALID_ARGUMENT, "expects 3 inputs");
    tide_tensor *all[] = {shape, c5, c3, c4, c3_64, vec, cf, neg};
    for (int i = 0; i < 8; i++)
        tide_tensor_release(all[i]);
}

/* ---------------------------------------------------------------- RandomShuffle */

static tide_tensor *shuffle(tide_tensor *value, int64_t seed, int64_t seed2)
{
    tide_attrs *a = rattrs(NULL, TIDE_INVALID_DTYPE, seed, seed2);
    tide_tensor *out = th_run1("RandomShuffle", &value, 1, a);
    tide_attrs_free(a);
    return out;
}

/* A tensor of `rows` distinct rows: row r starts with r in little-endian (one byte if rows are). */
static tide_tensor *distinct_rows(tide_dtype dt, int rank, const int64_t *dims)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    size_t row = tide_tensor_byte_size(t) / (size_t)dims[0];
    unsigned char *p = tide_tensor_data(t);
    for (int64_t r = 0; r < dims[0]; r++)
        for (size_t k = 0; k < row; k++)
            p[(size_t)r * row + k] = k == 0 ? (unsigned char)r : k == 1 ? (unsigned char)(r >> 8)
                                                                        : (unsigned char)(r * 7 + k);
    return t;
}

/* out's rows are in's rows, each exactly once; returns how many stayed in place. */
static int64_t check_row_permutation(const tide_tensor *in, const tide_tensor *out)
{
    CU_ASSERT_FATAL(out != NULL);
    CU_ASSERT(tide_shape_equal(tide_tensor_shape(in), tide_tensor_shape(out)));
    int64_t rows = tide_tensor_dim(in, 0), fixed = 0;
    size_t row = tide_tensor_byte_size(in) / (size_t)rows;
    const unsigned char *a = tide_tensor_data(in), *b = tide_tensor_data(out);
    bool *seen = calloc((size_t)rows, 1), ok = true;
    for (int64_t i = 0; i < rows && ok; i++) {
        int64_t r = b[(size_t)i * row] | (row > 1 ? (int64_t)b[(size_t)i * row + 1] << 8 : 0);
        ok = r < rows && !seen[r] && memcmp(a + (size_t)r * row, b + (size_t)i * row, row) == 0;
        if (ok)
            seen[r] = true, fixed += r == i;
    }
    CU_ASSERT(ok);
    free(seen);
    return fixed;
}

static void test_shuffle_rows_of_every_size(void)
{
    static const struct {
        tide_dtype dt;
        int rank;
        int64_t cols;
    } cases[] = {
        {TIDE_INT8, 1, 0},       {TIDE_UINT8, 1, 0},    {TIDE_INT16, 1, 0},  {TIDE_FLOAT16, 1, 0},
        {TIDE_BFLOAT16, 1, 0},   {TIDE_INT32, 1, 0},    {TIDE_FLOAT32, 1, 0}, {TIDE_INT64, 1, 0},
        {TIDE_FLOAT64, 1, 0},    {TIDE_COMPLEX64, 1, 0}, {TIDE_COMPLEX128, 1, 0},
        {TIDE_INT8, 2, 3},       {TIDE_FLOAT64, 2, 3},  {TIDE_FLOAT64, 2, 40}, /* 3, 24, 320 bytes */
        {TIDE_UINT16, 3, 5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t dims[3] = {200, cases[c].cols, 2};
        tide_tensor *in = distinct_rows(cases[c].dt, cases[c].rank, dims);
        tide_tensor *copy = tide_tensor_copy(in, NULL);
        tide_tensor *out = shuffle(in, 31, (int64_t)c);
        int64_t fixed = check_row_permutation(in, out);
        CU_ASSERT(fixed < 20); /* a random permutation fixes about one row */
        CU_ASSERT(tide_tensor_equal(in, copy, true)); /* the caller's tensor is not touched */
        tide_tensor_release(in), tide_tensor_release(copy), tide_tensor_release(out);
    }
}

static void test_shuffle_bool_and_strings(void)
{
    int64_t n = 1000;
    tide_tensor *b = th_tensor(TIDE_BOOL, 1, &n, NULL);
    for (int64_t i = 0; i < n; i++)
        ((uint8_t *)tide_tensor_data(b))[i] = i < 300;
    tide_tensor *bs = shuffle(b, 5, 0);
    int64_t trues = 0, head = 0;
    const uint8_t *pb = bs ? tide_tensor_data(bs) : NULL;
    for (int64_t i = 0; pb && i < n; i++)
        trues += pb[i], head += i < 300 && pb[i];
    CU_ASSERT(trues == 300 && head < 150);
    tide_tensor_release(b), tide_tensor_release(bs);

    tide_tstring strs[60];
    char text[60][16];
    for (int i = 0; i < 60; i++) {
        snprintf(text[i], sizeof text[i], "row %d", i / 2);
        strs[i] = (tide_tstring){text[i], strlen(text[i]) + (size_t)(i % 2)}; /* odd: with the NUL */
    }
    tide_tensor *s = th_tensor(TIDE_STRING, 2, TH_DIMS(30, 2), strs);
    tide_tensor *out = shuffle(s, 6, 0);
    CU_ASSERT_FATAL(out != NULL);
    TH_ASSERT_SHAPE(out, 2, TH_DIMS(30, 2));
    bool seen[30] = {false}, ok = true;
    for (int64_t i = 0; i < 30; i++) {
        size_t l0, l1;
        const char *a = tide_tensor_string_get(out, 2 * i, &l0), *c = tide_tensor_string_get(out, 2 * i + 1, &l1);
        int r = -1;
        ok &= sscanf(a, "row %d", &r) == 1 && r >= 0 && r < 30 && !seen[r];
        if (!ok)
            break;
        seen[r] = true;
        ok &= l0 == strlen(a) && l1 == l0 + 1 && strcmp(a, c) == 0 && a != text[2 * r]; /* deep copies */
        ok &= a != tide_tensor_string_get(s, 2 * r, NULL);
    }
    CU_ASSERT(ok);
    tide_tensor_release(s), tide_tensor_release(out);
}

static void test_shuffle_small_inputs(void)
{
    double x = 2.5;
    tide_tensor *scalar = th_f64(0, NULL, &x), *one = th_f64(2, TH_DIMS(1, 4), (double[]){1, 2, 3, 4});
    tide_tensor *empty = th_f64(2, TH_DIMS(0, 3), NULL), *flat = th_f64(2, TH_DIMS(5, 0), NULL);
    tide_tensor *ins[4] = {scalar, one, empty, flat};
    for (int i = 0; i < 4; i++) {
        tide_tensor *out = shuffle(ins[i], 1, 0);
        TH_ASSERT_CLOSE(out, ins[i], 0, 0); /* returned as is */
        tide_tensor_release(out);
        tide_tensor_release(ins[i]);
    }
}

/* Fisher-Yates is uniform: over 6000 seeds each of the 6 orders of 3 rows comes up ~1000 times (a
 * Sattolo-style off-by-one would give only 2 orders, an "i in [0, n)" one a biased mix). */
static void test_shuffle_is_uniform(void)
{
    int32_t v[3] = {0, 1, 2};
    tide_tensor *in = th_i32(1, TH_DIMS(3), v);
    int64_t counts[9] = {0}, seeds = 6000;
    for (int64_t s = 1; s <= seeds; s++) {
        tide_tensor *out = shuffle(in, s, 0);
        const int32_t *p = tide_tensor_data(out);
        counts[p[0] * 3 + p[1]]++; /* (first, second) fixes the order */
        tide_tensor_release(out);
    }
    double want = seeds / 6.0, sd = sqrt(seeds * (1 / 6.0) * (5 / 6.0));
    for (int k = 0; k < 9; k++)
        if (k / 3 != k % 3)
            CU_ASSERT(fabs((double)counts[k] - want) < 5 * sd);
    tide_tensor_release(in);
    /* A large vector: a permutation, computed quickly. */
    int64_t n = 1 << 20;
    tide_tensor *big = th_tensor(TIDE_INT32, 1, &n, NULL);
    for (int64_t i = 0; i < n; i++)
        ((int32_t *)tide_tensor_data(big))[i] = (int32_t)i;
    tide_tensor *out = shuffle(big, 9, 9);
    bool *seen = calloc((size_t)n, 1), ok = out != NULL;
    int64_t fixed = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        int32_t r = ((const int32_t *)tide_tensor_data(out))[i];
        ok = r >= 0 && r < n && !seen[r];
        if (ok)
            seen[r] = true, fixed += r == i;
    }
    CU_ASSERT(ok && fixed < 20);
    free(seen);
    tide_tensor_release(big), tide_tensor_release(out);
}

/* ---------------------------------------------------------------- through graphs and sessions
 * A node's stream lives in its kernel state: it advances across runs of one session, and starts
 * again in a new one. */

/* A node of op with the given inputs; attrs copied in (may be NULL). NULL on failure (message in err). */
static tide_node *node(tide_graph *g, const char *op, const char *name, tide_node *const *ins, int n,
                       const tide_attrs *attrs, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    for (int i = 0; i < n; i++)
        tide_node_builder_add_input(b, (tide_output){ins[i], 0});
    if (attrs)
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
    return tide_node_builder_finish(b, err);
}

static tide_node *const_node(tide_graph *g, tide_tensor *value)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_node *n = tide_node_builder_finish(b, NULL);
    tide_tensor_release(value);
    return n;
}

static tide_node *placeholder(tide_graph *g, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_shape s = rank < 0 ? tide_shape_unknown() : tide_shape_make(rank, dims);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    return tide_node_builder_finish(b, NULL);
}

/* Runs fetch once in s, with optional feeds; NULL on failure (message in err). */
static tide_tensor *fetch(tide_session *s, tide_node *n, const tide_feed *feeds, int num_feeds, tide_error *err)
{
    tide_output o = {n, 0};
    tide_tensor *v = NULL;
    tide_status st = tide_session_run(s, NULL, feeds, num_feeds, &o, 1, &v, NULL, 0, NULL, err);
    return st == TIDE_OK ? v : NULL;
}

/* The reference float32 uniforms of a stream from block `first` on. */
static tide_tensor *ref_uniform_f32(ref_stream rs, uint64_t first, int64_t n)
{
    tide_tensor *t = th_tensor(TIDE_FLOAT32, 1, &n, NULL);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        ref_block(&rs, first + (uint64_t)i / 4, w);
        ((float *)tide_tensor_data(t))[i] = (float)ref_u24(w[i % 4]);
    }
    return t;
}

static void test_graph_runs_advance_the_stream(void)
{
    int64_t n = 10;
    tide_graph *g = tide_graph_new();
    tide_node *shape = const_node(g, th_i32(1, TH_DIMS(1), (int32_t[]){10}));
    tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 5, 0);
    tide_node *u = node(g, "RandomUniform", "u", &shape, 1, a, NULL);
    CU_ASSERT_FATAL(u != NULL);
    tide_session *s1 = tide_session_new(th_engine(), g, NULL, NULL), *s2 = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *r1 = fetch(s1, u, NULL, 0, NULL), *r2 = fetch(s1, u, NULL, 0, NULL);
    tide_tensor *again = fetch(s2, u, NULL, 0, NULL), *eager = gen("RandomUniform", TIDE_FLOAT32, 1, &n, 5, 0);
    tide_tensor *want1 = ref_uniform_f32(ref_seeded(0, 5, 0), 0, n);
    tide_tensor *want2 = ref_uniform_f32(ref_seeded(0, 5, 0), 3, n);
    TH_ASSERT_CLOSE(r1, want1, 0, 0);    /* the first run starts the stream, like an eager call */
    TH_ASSERT_CLOSE(r1, eager, 0, 0);
    TH_ASSERT_CLOSE(r2, want2, 0, 0);    /* the second continues after the 3 blocks the first used */
    TH_ASSERT_CLOSE(again, want1, 0, 0); /* a new session starts again: reproducible */
    tide_tensor *all[] = {r1, r2, again, eager, want1, want2};
    for (int i = 0; i < 6; i++)
        tide_tensor_release(all[i]);
    tide_session_free(s1), tide_session_free(s2);
    tide_attrs_free(a);
    tide_graph_free(g);
}

typedef struct runner {
    tide_session *s;
    tide_node *node;
    tide_tensor *outs[100];
} runner;

static void *run_100(void *arg)
{
    runner *r = arg;
    for (int i = 0; i < 100; i++)
        r->outs[i] = fetch(r->s, r->node, NULL, 0, NULL);
    return NULL;
}

/* Two threads running one node of one session: each run reserves its own block (4 floats), so the
 * 200 outputs are blocks 0..199 of the stream, each exactly once, in some order. */
static void test_graph_concurrent_runs(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *shape = const_node(g, th_i32(1, TH_DIMS(1), (int32_t[]){4}));
    tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 17, 1);
    runner r[2] = {{.node = node(g, "RandomUniform", "u", &shape, 1, a, NULL)}};
    CU_ASSERT_FATAL(r[0].node != NULL);
    r[0].s = tide_session_new(th_engine(), g, NULL, NULL);
    r[1].s = r[0].s, r[1].node = r[0].node;
    pthread_t t;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, run_100, &r[1]) == 0);
    run_100(&r[0]);
    pthread_join(t, NULL);
    tide_tensor *want = ref_uniform_f32(ref_seeded(0, 17, 1), 0, 800);
    const float *w = tide_tensor_data(want);
    bool seen[200] = {false}, ok = true;
    for (int i = 0; i < 200 && ok; i++) {
        const tide_tensor *o = r[i / 100].outs[i % 100];
        int b = 0;
        while (o && b < 200 && memcmp(tide_tensor_data(o), w + 4 * b, 4 * sizeof(float)) != 0)
            b++;
        ok = o && b < 200 && !seen[b];
        if (ok)
            seen[b] = true;
    }
    CU_ASSERT(ok);
    for (int i = 0; i < 200; i++)
        tide_tensor_release(r[i / 100].outs[i % 100]);
    tide_tensor_release(want);
    tide_session_free(r[0].s);
    tide_attrs_free(a);
    tide_graph_free(g);
}

/* RandomShuffle of a node's output that only it uses: the executor may hand it the buffer to
 * shuffle in place. The result is a permutation of the (reference) uniforms. */
static void test_graph_shuffle_of_an_intermediate(void)
{
    int64_t n = 1000;
    tide_graph *g = tide_graph_new();
    tide_node *shape = const_node(g, th_i32(1, TH_DIMS(1), (int32_t[]){1000}));
    tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 23, 0), *b = rattrs(NULL, TIDE_INVALID_DTYPE, 24, 0);
    tide_node *u = node(g, "RandomUniform", "u", &shape, 1, a, NULL);
    tide_node *sh = node(g, "RandomShuffle", "sh", &u, 1, b, NULL);
    CU_ASSERT_FATAL(sh != NULL);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *got = fetch(s, sh, NULL, 0, NULL), *want = ref_uniform_f32(ref_seeded(0, 23, 0), 0, n);
    CU_ASSERT_FATAL(got != NULL);
    double *x = to_doubles(got), *y = to_doubles(want);
    bool moved = false;
    for (int64_t i = 0; i < n; i++)
        moved |= x[i] != y[i];
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    qsort(y, (size_t)n, sizeof *y, cmp_double);
    CU_ASSERT(moved && memcmp(x, y, (size_t)n * sizeof *x) == 0);
    free(x), free(y);
    tide_tensor_release(got), tide_tensor_release(want);
    tide_session_free(s);
    tide_attrs_free(a), tide_attrs_free(b);
    tide_graph_free(g);
}

/* Graph seed 42 and no op seed: each node's op seed is FNV-1a of its name. */
static void test_graph_seed_rule(void)
{
    int64_t n = 6;
    tide_tensor *out[2][2] = {{NULL}};
    for (int rebuild = 0; rebuild < 2; rebuild++) {
        tide_graph *g = tide_graph_new();
        tide_graph_set_seed(g, 42);
        tide_node *shape = const_node(g, th_i32(1, TH_DIMS(1), (int32_t[]){6}));
        tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 0, 0);
        tide_node *na = node(g, "RandomUniform", "a", &shape, 1, a, NULL);
        tide_node *nb = node(g, "RandomUniform", "b", &shape, 1, a, NULL);
        tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
        out[rebuild][0] = fetch(s, na, NULL, 0, NULL);
        out[rebuild][1] = fetch(s, nb, NULL, 0, NULL);
        tide_session_free(s);
        tide_attrs_free(a);
        tide_graph_free(g);
    }
    tide_tensor *want_a = ref_uniform_f32(ref_seeded(42, (int64_t)ref_fnv1a("a"), 0), 0, n);
    TH_ASSERT_CLOSE(out[0][0], want_a, 0, 0);
    CU_ASSERT(!same_values(out[0][0], out[0][1])); /* different nodes differ */
    CU_ASSERT(same_values(out[0][0], out[1][0]));  /* the same graph seed repeats */
    CU_ASSERT(same_values(out[0][1], out[1][1]));
    for (int i = 0; i < 4; i++)
        tide_tensor_release(out[i / 2][i % 2]);
    tide_tensor_release(want_a);
    /* Neither seed: two sessions differ. */
    tide_graph *g = tide_graph_new();
    tide_node *shape = const_node(g, th_i32(1, TH_DIMS(1), (int32_t[]){6}));
    tide_attrs *a = rattrs("dtype", TIDE_FLOAT32, 0, 0);
    tide_node *u = node(g, "RandomUniform", "u", &shape, 1, a, NULL);
    tide_session *s1 = tide_session_new(th_engine(), g, NULL, NULL), *s2 = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *x = fetch(s1, u, NULL, 0, NULL), *y = fetch(s2, u, NULL, 0, NULL);
    CU_ASSERT(x && y && !same_values(x, y));
    tide_tensor_release(x), tide_tensor_release(y);
    tide_session_free(s1), tide_session_free(s2);
    tide_attrs_free(a);
    tide_graph_free(g);
}

/* Builds op(shape input) and checks the inferred shape, or that building fails naming `needle`. */
static void expect_inferred(tide_graph *g, const char *op, tide_node *const *ins, int n, int rank,
                            const int64_t *dims, const char *needle)
{
    tide_error *err = tide_error_new();
    tide_attrs *a = rattrs(strcmp(op, "RandomUniformInt") && strcmp(op, "RandomShuffle") ? "dtype" : NULL,
                           TIDE_FLOAT32, 1, 0);
    tide_node *r = node(g, op, NULL, ins, n, a, err);
    if (needle) {
        CU_ASSERT(r == NULL && strstr(tide_error_message(err), needle) != NULL);
        if (r || !strstr(tide_error_message(err), needle))
            fprintf(stderr, "expected \"%s\", got \"%s\"\n", needle, tide_error_message(err));
    } else {
        CU_ASSERT_FATAL(r != NULL);
        tide_shape got = tide_node_output_shape(r, 0);
        tide_shape want = rank < 0 ? tide_shape_unknown() : tide_shape_make(rank, dims);
        CU_ASSERT(tide_shape_equal(&got, &want));
    }
    tide_attrs_free(a);
    tide_error_free(err);
}

static void test_graph_shape_inference(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *c23 = const_node(g, th_i64(1, TH_DIMS(2), (int64_t[]){2, 3}));
    tide_node *p3 = placeholder(g, TIDE_INT32, 1, TH_DIMS(3)), *pu = placeholder(g, TIDE_INT64, -1, NULL);
    tide_node *pq = placeholder(g, TIDE_INT32, 1, TH_DIMS(-1)), *p9 = placeholder(g, TIDE_INT32, 1, TH_DIMS(9));
    tide_node *p22 = placeholder(g, TIDE_INT32, 2, TH_DIMS(2, 2)), *p0 = placeholder(g, TIDE_INT32, 0, NULL);
    tide_node *cneg = const_node(g, th_i32(1, TH_DIMS(2), (int32_t[]){-1, 2}));
    tide_node *c0 = const_node(g, th_i32(1, TH_DIMS(1), (int32_t[]){0}));
    tide_node *lo = const_node(g, th_i32(0, NULL, (int32_t[]){5}));
    tide_node *hi = const_node(g, th_i32(0, NULL, (int32_t[]){3}));
    tide_node *plo = placeholder(g, TIDE_INT32, 1, TH_DIMS(2)), *pf = placeholder(g, TIDE_FLOAT32, 2, TH_DIMS(-1, 3));
    for (int o = 0; o < 3; o++) {
        expect_inferred(g, shape_ops[o], &c23, 1, 2, TH_DIMS(2, 3), NULL);
        expect_inferred(g, shape_ops[o], &p3, 1, 3, TH_DIMS(-1, -1, -1), NULL);
        expect_inferred(g, shape_ops[o], &pu, 1, -1, NULL, NULL);
        expect_inferred(g, shape_ops[o], &pq, 1, -1, NULL, NULL);
        expect_inferred(g, shape_ops[o], &p9, 1, 0, NULL, "at most 8 are supported");
        expect_inferred(g, shape_ops[o], &p22, 1, 0, NULL, "shape must be a vector");
        expect_inferred(g, shape_ops[o], &p0, 1, 0, NULL, "shape must be a vector");
        expect_inferred(g, shape_ops[o], &cneg, 1, 0, NULL, "shape [-1, 2] has a negative dimension");
    }
    expect_inferred(g, "RandomUniformInt", (tide_node *[]){c23, lo, hi}, 3, 0, NULL,
                    "need minval < maxval, got 5 >= 3");
    expect_inferred(g, "RandomUniformInt", (tide_node *[]){c0, lo, hi}, 3, 1, TH_DIMS(0), NULL);
    expect_inferred(g, "RandomUniformInt", (tide_node *[]){p3, hi, lo}, 3, 3, TH_DIMS(-1, -1, -1), NULL);
    expect_inferred(g, "RandomUniformInt", (tide_node *[]){c23, plo, lo}, 3, 0, NULL, "minval must be a scalar");
    expect_inferred(g, "RandomShuffle", &pf, 1, 2, TH_DIMS(-1, 3), NULL);
    tide_graph_free(g);
}

/* Fed values reach the kernels, which check what the shape functions could not. */
static void test_graph_kernel_errors(void)
{
    tide_graph *g = tide_graph_new();
    tide_node *ps = placeholder(g, TIDE_INT32, -1, NULL), *pl = placeholder(g, TIDE_INT64, -1, NULL);
    tide_node *ph = placeholder(g, TIDE_INT64, -1, NULL);
    tide_attrs *a = rattrs("dtype", TIDE_FLOAT64, 1, 0), *ai = rattrs(NULL, TIDE_INVALID_DTYPE, 1, 0);
    tide_node *u = node(g, "RandomNormal", NULL, &ps, 1, a, NULL);
    tide_node *ri = node(g, "RandomUniformInt", NULL, (tide_node *[]){ps, pl, ph}, 3, ai, NULL);
    CU_ASSERT_FATAL(u && ri);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *neg = th_i32(1, TH_DIMS(2), (int32_t[]){2, -1}), *mat = th_i32(2, TH_DIMS(1, 1), (int32_t[]){2});
    tide_tensor *good = th_i32(1, TH_DIMS(1), (int32_t[]){4});
    tide_tensor *five = th_i64(0, NULL, (int64_t[]){5}), *three = th_i64(0, NULL, (int64_t[]){3});
    tide_tensor *vec = th_i64(1, TH_DIMS(1), (int64_t[]){9});
    static const char *const needles[] = {"shape [2, -1] has a negative dimension", "shape must be a vector",
                                          "need minval < maxval, got 5 >= 3", "maxval must be a scalar"};
    tide_feed feeds[4][3] = {{{{ps, 0}, neg}}, {{{ps, 0}, mat}},
                             {{{ps, 0}, good}, {{pl, 0}, five}, {{ph, 0}, three}},
                             {{{ps, 0}, good}, {{pl, 0}, three}, {{ph, 0}, vec}}};
    for (int i = 0; i < 4; i++) {
        tide_error *err = tide_error_new();
        tide_tensor *v = fetch(s, i < 2 ? u : ri, feeds[i], i < 2 ? 1 : 3, err);
        CU_ASSERT(v == NULL && tide_error_code(err) == TIDE_INVALID_ARGUMENT &&
                  strstr(tide_error_message(err), needles[i]));
        tide_tensor_release(v);
        tide_error_free(err);
    }
    tide_tensor *all[] = {neg, mat, good, five, three, vec};
    for (int i = 0; i < 6; i++)
        tide_tensor_release(all[i]);
    tide_session_free(s);
    tide_attrs_free(a), tide_attrs_free(ai);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_reference_philox_known_answers),
        TH_TEST(test_uniform_golden),
        TH_TEST(test_normal_golden),
        TH_TEST(test_truncated_golden),
        TH_TEST(test_uniform_int_golden),
        TH_TEST(test_uniform_statistics),
        TH_TEST(test_normal_statistics),
        TH_TEST(test_truncated_normal_statistics),
        TH_TEST(test_half_precision),
        TH_TEST(test_uniform_int_statistics),
        TH_TEST(test_uniform_int_extremes),
        TH_TEST(test_every_dtype_and_shape_type),
        TH_TEST(test_empty_and_scalar_shapes),
        TH_TEST(test_seeds_determine_the_numbers),
        TH_TEST(test_shape_input_errors),
        TH_TEST(test_attr_errors),
        TH_TEST(test_uniform_int_errors),
        TH_TEST(test_shuffle_rows_of_every_size),
        TH_TEST(test_shuffle_bool_and_strings),
        TH_TEST(test_shuffle_small_inputs),
        TH_TEST(test_shuffle_is_uniform),
        TH_TEST(test_graph_runs_advance_the_stream),
        TH_TEST(test_graph_concurrent_runs),
        TH_TEST(test_graph_seed_rule),
        TH_TEST(test_graph_shuffle_of_an_intermediate),
        TH_TEST(test_graph_shape_inference),
        TH_TEST(test_graph_kernel_errors),
        TH_END,
    };
    return th_main("random", tests);
}
