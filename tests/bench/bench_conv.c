/* bench_conv.c — the convolutions of TensorFlow's layers tutorial CNN (28x28x1 images, batch 100:
 * conv 5x5x1->32 SAME, then after 2x2 pooling conv 5x5x32->64 SAME) through Session.Run: forward
 * (Conv2D), backprop-input and backprop-filter of both, and the 2x2 max pooling with its gradient.
 * Each figure is the median of several runs (inputs fed, output fetched; argv[1] runs, default 21),
 * on argv[2] threads (default 2), in GFLOP/s counting a multiply-add as 2 (the same count for all three ops of a layer), with the
 * fastest run as best_gflops; pooling in GB/s of tensors read and written. The first line,
 * conv2d.gflops, is the second convolution's forward pass. The runs of each convolution alternate
 * between the default path (the figure: the best micro-kernels the CPU has, or the Winograd
 * convolution where conv.c chooses it), the AVX2 micro-kernels (avx2_gflops, the same when AVX2 is the
 * best) and the best direct kernels (direct_gflops: what Winograd gains, the same where it does not
 * apply), so every run also measures what AVX-512 and Winograd gain. cpu_ms: the median process
 * CPU time per run (all threads; on a loaded machine the wall time also counts the neighbours). */
#include <string.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

typedef struct layer {
    const char *name;
    int64_t h, w, cin, cout, k, stride;
} layer;

static const int64_t BATCH = 100;

static tide_tensor *random_tensor(const int64_t *dims, int rank, uint32_t seed)
{
    tide_shape s = tide_shape_make(rank, dims);
    tide_tensor *t = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
    float *d = tide_tensor_data(t);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        d[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    return t;
}

static tide_tensor *sizes(const int64_t *d)
{
    const int32_t v[4] = {(int32_t)d[0], (int32_t)d[1], (int32_t)d[2], (int32_t)d[3]};
    tide_shape s = tide_shape_vector(4);
    return tide_tensor_new_copy(TIDE_INT32, &s, v, sizeof v, NULL);
}

static tide_node *placeholder(tide_graph *g, const char *name, tide_dtype dt, tide_error *err)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    return tide_node_builder_finish(b, err);
}

/* The paths each convolution's runs alternate between, in interleaved rounds: the default (the
 * figure: the best micro-kernels the CPU has, or the Winograd convolution where conv.c takes it), the
 * AVX2 direct kernels ($TIDE_CONV_ISA, read by the kernels at every call), the best direct kernels
 * multiplying the width's padding taps too ($TIDE_CONV_FULL_WIDTH), the best direct kernels
 * ($TIDE_CONV_ALGO=direct: what Winograd gains; the same as the figure where it does not apply), and
 * for a strided backprop-input the old upsampled-dy method ($TIDE_CONV_UPSAMPLED) beside the phases,
 * and for backprop-filter the canvas method with partial sums ($TIDE_CONV_FILTER_SLICES) beside the
 * input read in place (kernels/cpu/conv_filter.c; the same where the input has < 8 channels). */
enum { BEST, AVX2, FULL_WIDTH, DIRECT, UPSAMPLED, SLICES, PATHS };

typedef struct timing {
    double median[PATHS], best[PATHS]; /* seconds; median < 0: failed */
    double cpu[PATHS];                 /* median process CPU seconds per run */
} timing;

/* Process CPU seconds: on a loaded machine, time spent descheduled does not count. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void use_path(int path)
{
    if (path == AVX2)
        setenv("TIDE_CONV_ISA", "avx2", 1);
    else
        unsetenv("TIDE_CONV_ISA");
    if (path == UPSAMPLED)
        setenv("TIDE_CONV_UPSAMPLED", "1", 1);
    else
        unsetenv("TIDE_CONV_UPSAMPLED");
    if (path == FULL_WIDTH)
        setenv("TIDE_CONV_FULL_WIDTH", "1", 1);
    else
        unsetenv("TIDE_CONV_FULL_WIDTH");
    if (path == DIRECT || path == FULL_WIDTH)
        setenv("TIDE_CONV_ALGO", "direct", 1);
    else
        unsetenv("TIDE_CONV_ALGO");
    if (path == SLICES)
        setenv("TIDE_CONV_FILTER_SLICES", "1", 1);
    else
        unsetenv("TIDE_CONV_FILTER_SLICES");
}

/* Medians of `reps` Session.Runs of op(inputs) fed through Placeholders, per path of path_list
 * (interleaved rounds, the order alternating); best: the fastest run (on a shared machine the median
 * also measures the neighbours). */
static timing time_op(tide_engine *e, const char *op, tide_tensor *const *inputs, int n, bool pool,
                      int64_t stride, const int *path_list, int paths, int reps, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_output ins[3];
    tide_feed feeds[3];
    static const char *names[3] = {"a", "b", "c"};
    for (int i = 0; i < n; i++) {
        tide_node *p = placeholder(g, names[i], tide_tensor_dtype(inputs[i]), err);
        ins[i] = (tide_output){p, 0};
        feeds[i] = (tide_feed){ins[i], inputs[i]};
    }
    tide_node_builder *b = tide_node_builder_new(g, op, "op");
    tide_node_builder_add_inputs_flat(b, ins, n);
    tide_attrs *a = tide_node_builder_attrs(b);
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){1, stride, stride, 1}, 4);
    if (pool)
        tide_attrs_set_int_list(a, "ksize", (const int64_t[]){1, 2, 2, 1}, 4);
    tide_attrs_set_string(a, "padding", "SAME");
    tide_node *node = tide_node_builder_finish(b, err);
    tide_session *s = node ? tide_session_new(e, g, NULL, err) : NULL;
    timing t;
    for (int k = 0; k < PATHS; k++)
        t.median[k] = t.best[k] = t.cpu[k] = -1;
    double *times = calloc((size_t)(reps * PATHS), sizeof *times);
    double *cpu = calloc((size_t)(reps * PATHS), sizeof *cpu);
    tide_output fetch = {node, 0};
    bool ok = s != NULL;
    for (int r = -2; ok && r < reps; r++)
        for (int k = 0; ok && k < paths; k++) {
            const int path = path_list[(r + k) % paths < 0 ? k : (r + k) % paths];
            use_path(path);
            tide_tensor *out = NULL;
            double t0 = bench_now(), c0 = cpu_now();
            ok = tide_session_run(s, NULL, feeds, n, &fetch, 1, &out, NULL, 0, NULL, err) == TIDE_OK;
            if (ok && r >= 0) {
                times[path * reps + r] = bench_now() - t0;
                cpu[path * reps + r] = cpu_now() - c0;
            }
            tide_tensor_release(out);
        }
    use_path(BEST);
    for (int i = 0; ok && i < paths; i++) {
        const int k = path_list[i];
        t.median[k] = bench_median(times + k * reps, reps); /* sorts */
        t.best[k] = times[k * reps];
        t.cpu[k] = bench_median(cpu + k * reps, reps);
    }
    if (!ok)
        fprintf(stderr, "%s: %s\n", op, tide_error_message(err));
    free(times);
    free(cpu);
    tide_session_free(s);
    tide_graph_free(g);
    return t;
}

/* One JSON line, saying what was measured: the op, its input and filter sizes, and the AVX2
 * micro-kernels' median in the same interleaved run. */
static void emit(const char *name, double flops, const timing *t, const char *what, const layer *l)
{
    char extra[800], upsampled[80] = "", slices[80] = "";
    if (t->median[UPSAMPLED] > 0)
        snprintf(upsampled, sizeof upsampled, "\"upsampled_gflops\": %.1f, \"upsampled_cpu_ms\": %.3f, ",
                 flops / t->median[UPSAMPLED] * 1e-9, t->cpu[UPSAMPLED] * 1e3);
    if (t->median[SLICES] > 0)
        snprintf(slices, sizeof slices, "\"slices_gflops\": %.1f, \"slices_cpu_ms\": %.3f, ",
                 flops / t->median[SLICES] * 1e-9, t->cpu[SLICES] * 1e3);
    snprintf(extra, sizeof extra,
             "\"ms\": %.3f, \"best_gflops\": %.1f, \"avx2_gflops\": %.1f, \"cpu_ms\": %.3f, \"avx2_cpu_ms\": %.3f, "
             "\"full_width_gflops\": %.1f, \"full_width_cpu_ms\": %.3f, \"direct_gflops\": %.1f, \"direct_cpu_ms\": %.3f, %s%s\"op\": \"%s\", \"stride\": %lld, \"batch\": %lld, "
             "\"input\": [%lld, %lld, %lld, %lld], \"filter\": [%lld, %lld, %lld, %lld]",
             t->median[BEST] * 1e3, flops / t->best[BEST] * 1e-9, flops / t->median[AVX2] * 1e-9,
             t->cpu[BEST] * 1e3, t->cpu[AVX2] * 1e3, flops / t->median[FULL_WIDTH] * 1e-9, t->cpu[FULL_WIDTH] * 1e3,
             flops / t->median[DIRECT] * 1e-9, t->cpu[DIRECT] * 1e3, upsampled, slices, what, (long long)l->stride, (long long)BATCH, (long long)BATCH, (long long)l->h, (long long)l->w, (long long)l->cin,
             (long long)l->k, (long long)l->k, (long long)l->cin, (long long)l->cout);
    bench_emit(name, flops / t->median[BEST] * 1e-9, "GFLOP/s", extra);
}

/* The three ops of one layer; prefix "" names the second layer's forward pass conv2d.gflops. */
static int bench_layer(tide_engine *e, const layer *l, int reps, tide_error *err)
{
    const int64_t xd[4] = {BATCH, l->h, l->w, l->cin}, fd[4] = {l->k, l->k, l->cin, l->cout};
    const int64_t oh = (l->h + l->stride - 1) / l->stride, ow = (l->w + l->stride - 1) / l->stride; /* SAME */
    const int64_t yd[4] = {BATCH, oh, ow, l->cout};
    tide_tensor *x = random_tensor(xd, 4, 1), *f = random_tensor(fd, 4, 2), *dy = random_tensor(yd, 4, 3);
    tide_tensor *xs = sizes(xd), *fs = sizes(fd);
    const double flops = 2.0 * (double)(BATCH * oh * ow * l->cout) * (double)(l->k * l->k * l->cin);
    static const char *const ops[3] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
    static const char *const suffixes[3] = {"", ".backprop_input", ".backprop_filter"};
    tide_tensor *const inputs[3][3] = {{x, f}, {xs, f, dy}, {x, fs, dy}};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        int path_list[PATHS] = {BEST, AVX2, FULL_WIDTH, DIRECT}, paths = 4;
        if (i == 1 && l->stride > 1)
            path_list[paths++] = UPSAMPLED;
        if (i == 2)
            path_list[paths++] = SLICES;
        timing t = time_op(e, ops[i], inputs[i], i == 0 ? 2 : 3, false, l->stride, path_list, paths, reps, err);
        char name[96];
        snprintf(name, sizeof name, "%s%s.gflops", l->name, suffixes[i]);
        if (t.median[BEST] > 0)
            emit(name, flops, &t, ops[i], l);
        else
            rc = 1;
    }
    tide_tensor *all[] = {x, f, dy, xs, fs};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(all[i]);
    return rc;
}

/* MaxPool 2x2/2 over the first layer's output and its gradient, in GB/s of tensors read and written. */
static int bench_pool(tide_engine *e, int reps, tide_error *err)
{
    const int64_t xd[4] = {BATCH, 28, 28, 32}, yd[4] = {BATCH, 14, 14, 32};
    tide_tensor *x = random_tensor(xd, 4, 4), *y = random_tensor(yd, 4, 5), *dy = random_tensor(yd, 4, 6);
    const double xb = 4.0 * (double)(BATCH * 28 * 28 * 32), yb = xb / 4;
    double t = time_op(e, "MaxPool", &x, 1, true, 2, (const int[]){BEST}, 1, reps, err).median[BEST];
    double tg = time_op(e, "MaxPoolGrad", (tide_tensor *[]){x, y, dy}, 3, true, 2, (const int[]){BEST}, 1, reps, err).median[BEST];
    char extra[160];
    snprintf(extra, sizeof extra, "\"ms\": %.3f, \"batch\": %lld, \"input\": [%lld, 28, 28, 32], \"window\": \"2x2/2\"",
             t * 1e3, (long long)BATCH, (long long)BATCH);
    if (t > 0)
        bench_emit("maxpool.gbytes_per_s", (xb + yb) / t * 1e-9, "GB/s", extra);
    snprintf(extra, sizeof extra, "\"ms\": %.3f, \"batch\": %lld, \"input\": [%lld, 28, 28, 32], \"window\": \"2x2/2\"",
             tg * 1e3, (long long)BATCH, (long long)BATCH);
    if (tg > 0)
        bench_emit("maxpool_grad.gbytes_per_s", (2 * xb + 2 * yb) / tg * 1e-9, "GB/s", extra);
    tide_tensor_release(x);
    tide_tensor_release(y);
    tide_tensor_release(dy);
    return t > 0 && tg > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 21, threads = argc > 2 ? atoi(argv[2]) : 2;
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(threads, 0, 0);
    static const layer conv2 = {"conv2d", 14, 14, 32, 64, 5, 1}, conv1 = {"conv2d_1", 28, 28, 1, 32, 5, 1};
    static const layer strided = {"conv3x3_s2", 28, 28, 32, 64, 3, 2};
    int rc = bench_layer(e, &conv2, reps, err) | bench_layer(e, &conv1, reps, err) |
             bench_layer(e, &strided, reps, err) | bench_pool(e, reps, err);
    tide_engine_free(e);
    tide_error_free(err);
    return rc;
}
