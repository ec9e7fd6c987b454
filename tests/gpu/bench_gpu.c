/* bench_gpu.c — the GPU benchmarks (tests/gpu/run_gpu_checks.sh runs them on the device machine; skipped
 * with 77 where the engine finds no GPU). Everything lives on /gpu:0: variables initialised there, no
 * feeds, so a step is the GPU kernels and the engine's overhead per node.
 *   gpu.op_us          a chain of 200 scalar Adds (y = y + v) per run: microseconds per op; with
 *                      $TIDE_GPU_SYNC_EACH_KERNEL=1 the device waits for every kernel (before stream-
 *                      ordered memory) and the figure is gpu.op_us_sync_each_kernel
 *   gpu.matmul8192     one 8192^3 MatMul per run against cublasSgemm called directly on the same
 *                      machine (ratio_vs_cublas = cuBLAS time / tide time; 1.0 is cuBLAS's speed)
 *   gpu.mlp            784-512-256-10 ReLU MLP, batch 128, softmax cross-entropy, SGD: steps per second
 *                      with whole-step capture (gpu.mlp.steps_per_s; "replayed" says whether the timed
 *                      steps were replays, "why" why not) and without (gpu.mlp.eager_steps_per_s)
 *   gpu.cnn            the TF tutorial's CNN (5x5 conv 32, 2x2 max pool, 5x5 conv 64, 2x2 max pool, dense
 *                      1024, dense 10; ReLUs, SAME padding), batch 100 of 28x28x1, softmax cross-entropy,
 *                      SGD: steps per second (PyTorch's same model is the peer: gpu.cnn.ratio_vs_torch)
 * $TIDE_GPU_TEST_DEVICE=/sim:0 runs the op chain and the MLP on the simulated device (to check the
 * graphs without a GPU; its figures mean nothing). Each figure is the median of rounds after warm-up runs. PyTorch's figures come from
 * tests/gpu/peer_gpu_torch.py in the same script. Never run on a GPU yet. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench_util.h"
#include "tide.h"

static tide_engine *engine;
static tide_error *err;
static const char *device = "/gpu:0"; /* $TIDE_GPU_TEST_DEVICE=/sim:0 checks the benchmark's graphs without a GPU */

static void die(const char *what)
{
    fprintf(stderr, "bench_gpu: %s: %s\n", what, tide_error_message(err));
    exit(1);
}

static tide_node *op(tide_graph *g, const char *name, int n, const tide_output *ins, tide_attrs *attrs)
{
    tide_node_builder *b = tide_node_builder_new(g, name, NULL);
    tide_node_builder_add_inputs_flat(b, ins, n);
    if (attrs) {
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
        tide_attrs_free(attrs);
    }
    tide_node *node = tide_node_builder_finish(b, err);
    if (!node)
        die(name);
    return node;
}

/* A trainable variable of shape initialised as init says (built on the graph's device scope). */
static tide_node *variable(tide_graph *g, const char *name, tide_init_kind kind, double lo, double hi, int rank,
                           const int64_t *dims)
{
    tide_initializer init;
    tide_initializer_init(&init, kind);
    init.lo = lo, init.hi = hi, init.value = lo, init.seed = 1;
    tide_shape s = tide_shape_make(rank, dims);
    tide_output v = tide_initializer_build(g, &init, TIDE_FLOAT32, &s, err);
    tide_node *n = v.node ? tide_variable_new(g, name, v, true, err) : NULL;
    if (!n)
        die(name);
    return n;
}

static tide_session *start(tide_graph *g)
{
    tide_session *s = tide_session_new(engine, g, NULL, err);
    tide_node *init = s ? tide_global_variables_initializer(g, err) : NULL;
    if (!init || tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err) != TIDE_OK)
        die("initialising the variables");
    return s;
}

/* Median seconds per run of target (or of fetching `fetch` when target is NULL) over rounds of runs. */
static double time_runs(tide_session *s, tide_node *target, tide_output fetch, int warm, int rounds, int runs)
{
    double t[32];
    for (int r = -1; r < rounds; r++) {
        int n = r < 0 ? warm : runs;
        double t0 = bench_now();
        for (int i = 0; i < n; i++) {
            tide_tensor *out = NULL;
            tide_status st = target ? tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &target, 1, NULL, err)
                                    : tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err);
            tide_tensor_release(out);
            if (st != TIDE_OK)
                die("a run");
        }
        if (r >= 0)
            t[r] = (bench_now() - t0) / n;
    }
    return bench_median(t, rounds);
}

static int placement_warnings(tide_session *s)
{
    const char *const *w = NULL;
    int n = tide_session_warnings(s, &w);
    for (int i = 0; i < n && i < 5; i++)
        fprintf(stderr, "placement: %s\n", w[i]);
    return n;
}

/* How many times one run of fetch waits for the device (tide_engine_device_host_waits). */
static double host_waits_per_run(tide_session *s, tide_output fetch)
{
    int dev = -1;
    for (int i = 0; i < tide_engine_num_devices(engine); i++)
        if (strstr(tide_engine_device_name(engine, i), device + 1))
            dev = i;
    if (dev < 0)
        return -1;
    int64_t before = tide_engine_device_host_waits(engine, dev);
    tide_tensor *out = NULL;
    if (tide_session_run(s, NULL, NULL, 0, &fetch, 1, &out, NULL, 0, NULL, err) != TIDE_OK)
        die("a run");
    tide_tensor_release(out);
    return (double)(tide_engine_device_host_waits(engine, dev) - before);
}

static void bench_op_us(void)
{
    enum { CHAIN = 200 };
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, device);
    tide_node *v = variable(g, "v", TIDE_INIT_CONSTANT, 1e-3, 0, 0, NULL);
    tide_output y = {v, 0};
    for (int i = 0; i < CHAIN; i++)
        y = (tide_output){op(g, "Add", 2, (tide_output[]){y, {v, 0}}, NULL), 0};
    tide_graph_pop_device(g);
    tide_session *s = start(g);
    double t = time_runs(s, NULL, y, 20, 9, 50);
    char extra[320];
    const char *sync = getenv("TIDE_GPU_SYNC_EACH_KERNEL");
    bool sync_each = sync && strcmp(sync, "1") == 0; /* the device then waits for every kernel (the old way) */
    snprintf(extra, sizeof extra, "\"chain\": %d, \"run_us\": %.1f, \"placement_warnings\": %d, \"host_waits_per_run\": %.1f, "
             "\"sync_each_kernel\": %s", CHAIN, t * 1e6, placement_warnings(s), host_waits_per_run(s, y),
             sync_each ? "true" : "false");
    bench_emit(sync_each ? "gpu.op_us_sync_each_kernel" : "gpu.op_us", t * 1e6 / CHAIN, "us", extra);
    tide_session_free(s);
    tide_graph_free(g);
}

/* cublasSgemm on 8192^3, timed as tide's runs are (the host waits for each). */
static double cublas_sgemm_s(int n)
{
    float *a = NULL, *b = NULL, *c = NULL;
    cublasHandle_t h = NULL;
    size_t bytes = (size_t)n * n * sizeof(float);
    if (cudaMalloc((void **)&a, bytes) != cudaSuccess || cudaMalloc((void **)&b, bytes) != cudaSuccess ||
        cudaMalloc((void **)&c, bytes) != cudaSuccess || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench_gpu: cuBLAS setup failed\n");
        exit(1);
    }
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    const float one = 1.0f, zero = 0.0f;
    double t[9];
    for (int r = -1; r < 9; r++) {
        double t0 = bench_now();
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);
        cudaDeviceSynchronize();
        if (r >= 0)
            t[r] = bench_now() - t0;
    }
    cublasDestroy(h);
    cudaFree(a), cudaFree(b), cudaFree(c);
    return bench_median(t, 9);
}

static void bench_matmul(void)
{
    const int64_t n = 8192;
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, device);
    tide_node *a = variable(g, "a", TIDE_INIT_UNIFORM, -1, 1, 2, (int64_t[]){n, n});
    tide_node *b = variable(g, "b", TIDE_INIT_UNIFORM, -1, 1, 2, (int64_t[]){n, n});
    tide_node *mm = op(g, "MatMul", 2, (tide_output[]){{a, 0}, {b, 0}}, NULL);
    tide_graph_pop_device(g);
    tide_session *s = start(g);
    double tide_s = time_runs(s, mm, (tide_output){0}, 2, 9, 1);
    int warnings = placement_warnings(s);
    tide_session_free(s);
    tide_graph_free(g);
    double cublas_s = cublas_sgemm_s((int)n);
    double flops = 2.0 * n * n * n;
    char extra[256];
    snprintf(extra, sizeof extra, "\"tide_ms\": %.2f, \"cublas_ms\": %.2f, \"tide_tflops\": %.1f, \"cublas_tflops\": %.1f, "
             "\"tf32\": %s, \"placement_warnings\": %d", tide_s * 1e3, cublas_s * 1e3, flops / tide_s * 1e-12,
             flops / cublas_s * 1e-12, getenv("TIDE_GPU_TF32") ? "true" : "false", warnings);
    bench_emit("gpu.matmul8192.ratio_vs_cublas", cublas_s / tide_s, "ratio", extra);
}

static tide_node *dense(tide_graph *g, const char *name, tide_output x, int64_t in, int64_t out, bool relu)
{
    char w_name[32], b_name[32];
    snprintf(w_name, sizeof w_name, "%s/w", name);
    snprintf(b_name, sizeof b_name, "%s/b", name);
    double limit = 1.0 / (double)in;
    tide_node *w = variable(g, w_name, TIDE_INIT_UNIFORM, -limit, limit, 2, (int64_t[]){in, out});
    tide_node *b = variable(g, b_name, TIDE_INIT_ZEROS, 0, 0, 1, (int64_t[]){out});
    tide_node *h = op(g, "MatMul", 2, (tide_output[]){x, {w, 0}}, NULL);
    h = op(g, "BiasAdd", 2, (tide_output[]){{h, 0}, {b, 0}}, NULL);
    return relu ? op(g, "Relu", 1, (tide_output[]){{h, 0}}, NULL) : h;
}

/* Constant labels (0.1 each) and the mean softmax cross-entropy of logits against them. */
static tide_node *mean_xent(tide_graph *g, tide_node *logits, int64_t batch)
{
    tide_node *labels = variable(g, "labels", TIDE_INIT_CONSTANT, 0.1, 0, 2, (int64_t[]){batch, 10});
    tide_node *xent = op(g, "SoftmaxCrossEntropyWithLogits", 2, (tide_output[]){{logits, 0}, {labels, 0}}, NULL);
    tide_node_builder *cb = tide_node_builder_new(g, "Const", NULL);
    tide_tensor *axis = tide_tensor_new(TIDE_INT32, &(tide_shape){1, {1}}, err);
    ((int32_t *)tide_tensor_data(axis))[0] = 0;
    tide_attrs_set_tensor(tide_node_builder_attrs(cb), "value", axis);
    tide_attrs_set_type(tide_node_builder_attrs(cb), "dtype", TIDE_INT32);
    tide_tensor_release(axis);
    tide_node *ax = tide_node_builder_finish(cb, err);
    return op(g, "Mean", 2, (tide_output[]){{xent, 0}, {ax, 0}}, NULL);
}

/* SGD on every trainable variable but the data (x, labels); the step's train op. */
static tide_node *sgd_step(tide_graph *g, tide_node *loss)
{
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_SGD, 0.01);
    tide_node *all[32], *vars[32];
    int n_all = tide_graph_variables(g, true, all, 32), nv = 0;
    for (int i = 0; i < n_all; i++)
        if (strcmp(tide_node_name(all[i]), "x") != 0 && strcmp(tide_node_name(all[i]), "labels") != 0)
            vars[nv++] = all[i];
    tide_node *train = tide_optimizer_minimize(g, &opt, (tide_output){loss, 0}, vars, nv, NULL, err);
    if (!train)
        die("minimize");
    return train;
}

static void bench_mlp(void)
{
    const int64_t batch = 128;
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, device);
    tide_node *x = variable(g, "x", TIDE_INIT_UNIFORM, 0, 1, 2, (int64_t[]){batch, 784});
    tide_node *h = dense(g, "dense1", (tide_output){x, 0}, 784, 512, true);
    h = dense(g, "dense2", (tide_output){h, 0}, 512, 256, true);
    tide_node *logits = dense(g, "logits", (tide_output){h, 0}, 256, 10, false);
    tide_node *train = sgd_step(g, mean_xent(g, logits, batch));
    tide_graph_pop_device(g);
    for (int capture = 1; capture >= 0; capture--) { /* a session each: its own graph, or none */
        tide_session *s = start(g);
        tide_session_set_capture(s, capture);
        double t = time_runs(s, train, (tide_output){0}, 20, 9, 30);
        tide_capture_status cs;
        tide_session_capture_status(s, &cs);
        char extra[640];
        snprintf(extra, sizeof extra, "\"batch\": %lld, \"step_ms\": %.3f, \"placement_warnings\": %d, "
                 "\"replayed\": %s, \"replays\": %lld, \"why\": \"%s\"", (long long)batch, t * 1e3,
                 placement_warnings(s), cs.last == TIDE_STEP_REPLAYED ? "true" : "false", (long long)cs.replays,
                 capture ? cs.why : "capture off");
        bench_emit(capture ? "gpu.mlp.steps_per_s" : "gpu.mlp.eager_steps_per_s", 1.0 / t, "steps/s", extra);
        tide_session_free(s);
    }
    tide_graph_free(g);
}

/* 5x5 convolution (SAME) to cout channels, bias, ReLU and 2x2 max pool (SAME, stride 2). */
static tide_node *conv_pool(tide_graph *g, const char *name, tide_output x, int64_t cin, int64_t cout)
{
    char w_name[32], b_name[32];
    snprintf(w_name, sizeof w_name, "%s/w", name);
    snprintf(b_name, sizeof b_name, "%s/b", name);
    tide_node *w = variable(g, w_name, TIDE_INIT_UNIFORM, -0.1, 0.1, 4, (int64_t[]){5, 5, cin, cout});
    tide_node *b = variable(g, b_name, TIDE_INIT_CONSTANT, 0.1, 0, 1, (int64_t[]){cout});
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "strides", (int64_t[]){1, 1, 1, 1}, 4);
    tide_attrs_set_string(a, "padding", "SAME");
    tide_node *h = op(g, "Conv2D", 2, (tide_output[]){x, {w, 0}}, a);
    h = op(g, "BiasAdd", 2, (tide_output[]){{h, 0}, {b, 0}}, NULL);
    h = op(g, "Relu", 1, (tide_output[]){{h, 0}}, NULL);
    a = tide_attrs_new();
    tide_attrs_set_int_list(a, "ksize", (int64_t[]){1, 2, 2, 1}, 4);
    tide_attrs_set_int_list(a, "strides", (int64_t[]){1, 2, 2, 1}, 4);
    tide_attrs_set_string(a, "padding", "SAME");
    return op(g, "MaxPool", 1, (tide_output[]){{h, 0}}, a);
}

static void bench_cnn(void)
{
    const int64_t batch = 100;
    tide_graph *g = tide_graph_new();
    tide_graph_push_device(g, device);
    tide_node *x = variable(g, "x", TIDE_INIT_UNIFORM, 0, 1, 4, (int64_t[]){batch, 28, 28, 1});
    tide_node *h = conv_pool(g, "conv1", (tide_output){x, 0}, 1, 32);
    h = conv_pool(g, "conv2", (tide_output){h, 0}, 32, 64);
    tide_node_builder *cb = tide_node_builder_new(g, "Const", NULL);
    tide_tensor *shape = tide_tensor_new(TIDE_INT32, &(tide_shape){1, {2}}, err);
    ((int32_t *)tide_tensor_data(shape))[0] = -1;
    ((int32_t *)tide_tensor_data(shape))[1] = 7 * 7 * 64;
    tide_attrs_set_tensor(tide_node_builder_attrs(cb), "value", shape);
    tide_attrs_set_type(tide_node_builder_attrs(cb), "dtype", TIDE_INT32);
    tide_tensor_release(shape);
    tide_node *flat_shape = tide_node_builder_finish(cb, err);
    h = op(g, "Reshape", 2, (tide_output[]){{h, 0}, {flat_shape, 0}}, NULL);
    h = dense(g, "fc1", (tide_output){h, 0}, 7 * 7 * 64, 1024, true);
    tide_node *logits = dense(g, "logits", (tide_output){h, 0}, 1024, 10, false);
    tide_node *train = sgd_step(g, mean_xent(g, logits, batch));
    tide_graph_pop_device(g);
    tide_session *s = start(g);
    double t = time_runs(s, train, (tide_output){0}, 10, 9, 20);
    char extra[256];
    snprintf(extra, sizeof extra, "\"batch\": %lld, \"step_ms\": %.3f, \"placement_warnings\": %d", (long long)batch,
             t * 1e3, placement_warnings(s));
    bench_emit("gpu.cnn.steps_per_s", 1.0 / t, "steps/s", extra);
    tide_session_free(s);
    tide_graph_free(g);
}

int main(int argc, char **argv)
{
    err = tide_error_new();
    const char *want = getenv("TIDE_GPU_TEST_DEVICE");
    if (want && want[0])
        device = want;
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_sim_devices = strstr(device, "sim") ? 1 : 0;
    engine = tide_engine_new(&o, err);
    if (!engine)
        die("engine");
    bool gpu = false;
    for (int i = 0; i < tide_engine_num_devices(engine); i++)
        gpu |= strncmp(tide_engine_device_type(engine, i), device + 1, 3) == 0;
    if (!gpu) {
        printf("skip: no GPU (the CUDA device type found none)\n");
        return 77;
    }
    const char *only = argc > 1 ? argv[1] : "";
    if (!*only || strstr(only, "op"))
        bench_op_us();
    if ((!*only || strstr(only, "matmul")) && strstr(device, "gpu"))
        bench_matmul();
    if (!*only || strstr(only, "mlp"))
        bench_mlp();
    if (!*only || strstr(only, "cnn"))
        bench_cnn();
    tide_engine_free(engine);
    tide_error_free(err);
    return 0;
}
