/* fashion.c — the training loop and layer helpers shared by the Fashion-MNIST examples
 * (softmax_fashion_mnist, mlp_fashion_mnist, cnn_fashion_mnist). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fashion.h"
#include "store.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU time of the whole process (every thread: the engine's pool, the run log's writer). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const tide_error *err)
{
    fprintf(stderr, "error: %s: %s\n", what, err ? tide_error_message(err) : "failed");
    exit(1);
}

/* ---------------------------------------------------------------- layers */

tide_output fx_op(fashion_model *m, const char *op, const tide_output *inputs, int n, tide_attrs *attrs)
{
    tide_error *err = tide_error_new();
    tide_node_builder *b = tide_node_builder_new(m->g, op, NULL);
    tide_node_builder_add_inputs_flat(b, inputs, n);
    if (attrs)
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
    tide_node *node = tide_node_builder_finish(b, err);
    if (!node)
        die(op, err);
    tide_error_free(err);
    tide_attrs_free(attrs);
    return (tide_output){node, 0};
}

static tide_output int_vector(fashion_model *m, int n, const int32_t *v)
{
    tide_shape s = tide_shape_vector(n);
    tide_tensor *t = tide_tensor_new_copy(TIDE_INT32, &s, v, (size_t)n * sizeof *v, NULL);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_tensor(a, "value", t);
    tide_attrs_set_type(a, "dtype", TIDE_INT32);
    tide_tensor_release(t);
    return fx_op(m, "Const", NULL, 0, a);
}

tide_output fx_variable(fashion_model *m, const char *name, tide_init_kind kind, const tide_shape *shape)
{
    tide_error *err = tide_error_new();
    tide_initializer init;
    tide_initializer_init(&init, kind);
    tide_output value = tide_initializer_build(m->g, &init, TIDE_FLOAT32, shape, err);
    if (!value.node)
        die(name, err);
    tide_node *v = tide_variable_new(m->g, name, value, true, err);
    if (!v)
        die(name, err);
    tide_error_free(err);
    return (tide_output){v, 0};
}

tide_output fx_dense(fashion_model *m, const char *name, tide_output x, int64_t in, int64_t out, bool relu)
{
    tide_graph_push_scope(m->g, name);
    tide_shape ws = tide_shape_matrix(in, out), bs = tide_shape_vector(out);
    tide_output w = fx_variable(m, "weights", TIDE_INIT_GLOROT_UNIFORM, &ws);
    tide_output b = fx_variable(m, "bias", TIDE_INIT_ZEROS, &bs);
    tide_output y = fx_op(m, "MatMul", (tide_output[]){x, w}, 2, NULL);
    y = fx_op(m, "BiasAdd", (tide_output[]){y, b}, 2, NULL);
    if (relu)
        y = fx_op(m, "Relu", &y, 1, NULL);
    tide_graph_pop_scope(m->g);
    return y;
}

tide_output fx_conv_relu(fashion_model *m, const char *name, tide_output x, int64_t kh, int64_t kw,
                         int64_t cin, int64_t cout)
{
    tide_graph_push_scope(m->g, name);
    tide_shape ws = tide_shape_make(4, (int64_t[]){kh, kw, cin, cout}), bs = tide_shape_vector(cout);
    tide_output w = fx_variable(m, "kernel", TIDE_INIT_GLOROT_UNIFORM, &ws);
    tide_output b = fx_variable(m, "bias", TIDE_INIT_ZEROS, &bs);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "strides", (int64_t[]){1, 1, 1, 1}, 4);
    tide_attrs_set_string(a, "padding", "SAME");
    tide_output y = fx_op(m, "Conv2D", (tide_output[]){x, w}, 2, a);
    y = fx_op(m, "BiasAdd", (tide_output[]){y, b}, 2, NULL);
    y = fx_op(m, "Relu", &y, 1, NULL);
    tide_graph_pop_scope(m->g);
    return y;
}

tide_output fx_max_pool_2x2(fashion_model *m, tide_output x)
{
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "ksize", (int64_t[]){1, 2, 2, 1}, 4);
    tide_attrs_set_int_list(a, "strides", (int64_t[]){1, 2, 2, 1}, 4);
    tide_attrs_set_string(a, "padding", "VALID");
    return fx_op(m, "MaxPool", &x, 1, a);
}

tide_output fx_flatten(fashion_model *m, tide_output x, int64_t cols)
{
    return fx_op(m, "Reshape", (tide_output[]){x, int_vector(m, 2, (int32_t[]){-1, (int32_t)cols})}, 2, NULL);
}

static tide_output placeholder(fashion_model *m, const char *name, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_error *err = tide_error_new();
    tide_node_builder *b = tide_node_builder_new(m->g, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_shape s = tide_shape_make(rank, dims);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    tide_node *n = tide_node_builder_finish(b, err);
    if (!n)
        die(name, err);
    tide_error_free(err);
    return (tide_output){n, 0};
}

/* ---------------------------------------------------------------- running */

typedef struct options {
    int epochs;
    int64_t max_steps, batch, eval_limit, bench_steps, profile_steps;
    int64_t seed;
    double learning_rate;
    const char *log_path; /* the run log, or NULL */
    const char *device;   /* --device: where the model goes, or NULL (placement decides) */
    int optimizer; /* a tide_optimizer_kind, or -1: the example's own */
    bool quiet;
} options;

static const char *const optimizer_names[] = {"sgd", "momentum", "adagrad", "rmsprop", "adam"};

static void usage(const fashion_config *cfg, FILE *f)
{
    fprintf(f,
            "usage: %s_fashion_mnist [--epochs N] [--steps N] [--batch N] [--optimizer NAME] [--lr X]\n"
            "                         [--seed N] [--eval N] [--bench STEPS] [--profile STEPS] [--log FILE]\n"
            "                         [--device SPEC] [--quiet]\n"
            "Trains the %s model on Fashion-MNIST (Debian package dataset-fashion-mnist, or the\n"
            "directory in $TIDE_FASHION_MNIST) and prints the test accuracy on its last line.\n"
            "  --epochs N     passes over the 60,000 training images (default %d)\n"
            "  --steps N      stop after N training steps (a smoke test)\n"
            "  --batch N      examples per step (default %lld)\n"
            "  --optimizer N  sgd, momentum, adagrad, rmsprop or adam (default %s)\n"
            "  --lr X         learning rate (default %g)\n"
            "  --seed N       graph seed: initial weights, shuffling, dropout (default 1)\n"
            "  --eval N       evaluate on the first N test images only (default all 10,000)\n"
            "  --bench STEPS  time STEPS training steps and print JSON lines instead of training\n"
            "  --profile STEPS  trace STEPS training steps; print where the time goes, by op\n"
            "  --log FILE     record the runs in the run log FILE (SQLite; docs/run-log.md) with its\n"
            "                 default policy, the loss watched\n"
            "  --device SPEC  build the model on this device: /cpu:0, /sim:0 (the simulated accelerator:\n"
            "                 memory the host cannot read, copies and streams; docs/devices.md), /gpu:0\n"
            "  --quiet        no progress lines\n",
            cfg->name, cfg->name, cfg->epochs, (long long)cfg->batch,
            optimizer_names[cfg->optimizer.kind], cfg->optimizer.learning_rate);
}

static bool parse_args(const fashion_config *cfg, int argc, char **argv, options *o)
{
    *o = (options){.epochs = cfg->epochs, .batch = cfg->batch, .seed = 1, .eval_limit = 10000,
                   .learning_rate = cfg->optimizer.learning_rate, .optimizer = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(cfg, stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: unknown or incomplete option '%s'\n", a);
            usage(cfg, stderr);
            return false;
        }
        char *end;
        if (!strcmp(a, "--log")) {
            o->log_path = argv[++i];
            continue;
        }
        if (!strcmp(a, "--device")) {
            o->device = argv[++i];
            continue;
        }
        if (!strcmp(a, "--optimizer")) {
            i++;
            o->optimizer = -1;
            for (int k = 0; k < 5; k++)
                if (!strcmp(argv[i], optimizer_names[k]))
                    o->optimizer = k;
            if (o->optimizer < 0) {
                fprintf(stderr, "error: --optimizer takes sgd, momentum, adagrad, rmsprop or adam, not '%s'\n",
                        argv[i]);
                return false;
            }
            continue;
        }
        if (!strcmp(a, "--lr")) {
            o->learning_rate = strtod(argv[++i], &end);
            if (*end || !(o->learning_rate > 0)) {
                fprintf(stderr, "error: --lr needs a positive number, got '%s'\n", argv[i]);
                return false;
            }
            continue;
        }
        long long v = strtoll(argv[++i], &end, 10);
        if (*end || v < 0) {
            fprintf(stderr, "error: %s needs a non-negative integer, got '%s'\n", a, argv[i]);
            return false;
        }
        if (!strcmp(a, "--epochs")) o->epochs = (int)v;
        else if (!strcmp(a, "--steps")) o->max_steps = v;
        else if (!strcmp(a, "--batch") && v > 0) o->batch = v;
        else if (!strcmp(a, "--seed")) o->seed = v;
        else if (!strcmp(a, "--eval")) o->eval_limit = v;
        else if (!strcmp(a, "--bench") && v > 0) o->bench_steps = v;
        else if (!strcmp(a, "--profile") && v > 0) o->profile_steps = v;
        else {
            fprintf(stderr, "error: unknown option '%s' (or a value out of range)\n", a);
            usage(cfg, stderr);
            return false;
        }
    }
    return true;
}

typedef struct trainer {
    const fashion_config *cfg;
    fashion_model m;
    tide_engine *engine;
    tide_session *s;
    tide_store *log;
    tide_output loss;
    tide_node *train;
    tide_tensor *rate_train, *rate_test;
    tide_error *err;
} trainer;

/* One training step on a batch; the loss when fetch_loss (else NAN). */
/* One training step on a batch; the loss when fetch_loss (else NAN). With stats, the step is traced. */
static double traced_step(trainer *t, tide_tensor *images, tide_tensor *labels, bool fetch_loss,
                          tide_step_stats **stats)
{
    tide_feed feeds[3] = {{t->m.images, images}, {t->m.labels, labels}, {t->m.rate, t->rate_train}};
    int nf = t->m.rate.node ? 3 : 2;
    tide_tensor *loss = NULL;
    tide_run_options opts = {.trace = stats != NULL};
    if (tide_session_run(t->s, &opts, feeds, nf, &t->loss, fetch_loss ? 1 : 0, &loss, &t->train, 1, stats,
                         t->err) != TIDE_OK)
        die("training step", t->err);
    double v = loss ? tide_tensor_get_f64(loss, 0) : NAN;
    tide_tensor_release(loss);
    return v;
}

static double train_step(trainer *t, tide_tensor *images, tide_tensor *labels, bool fetch_loss)
{
    return traced_step(t, images, labels, fetch_loss, NULL);
}

/* Accuracy over the first `limit` test images, in chunks of 1000. */
static double evaluate(trainer *t, const tide_dataset *ds, int64_t limit)
{
    int64_t n = tide_tensor_dim(ds->test_images, 0);
    if (limit > n)
        limit = n;
    const int32_t *labels = tide_tensor_data(ds->test_labels);
    int64_t correct = 0;
    for (int64_t at = 0; at < limit; at += 1000) {
        int64_t end = at + 1000 < limit ? at + 1000 : limit;
        tide_tensor *batch = tide_tensor_slice(ds->test_images, at, end, t->err);
        tide_feed feeds[2] = {{t->m.images, batch}, {t->m.rate, t->rate_test}};
        tide_tensor *logits = NULL;
        if (!batch || tide_session_run(t->s, NULL, feeds, t->m.rate.node ? 2 : 1, &t->m.logits, 1, &logits, NULL,
                                       0, NULL, t->err) != TIDE_OK)
            die("evaluation", t->err);
        const float *z = tide_tensor_data(logits);
        for (int64_t i = 0; i < end - at; i++) {
            int best = 0;
            for (int k = 1; k < 10; k++)
                if (z[i * 10 + k] > z[i * 10 + best])
                    best = k;
            correct += best == labels[at + i];
        }
        tide_tensor_release(logits);
        tide_tensor_release(batch);
    }
    return limit ? (double)correct / (double)limit : 0.0;
}

static void build(trainer *t, const options *o)
{
    fashion_model *m = &t->m;
    m->g = tide_graph_new();
    m->seed = o->seed;
    tide_graph_set_seed(m->g, o->seed);
    tide_device_spec spec;
    if (o->device && tide_device_spec_parse(o->device, &spec, t->err) != TIDE_OK)
        die("--device", t->err);
    if (o->device)
        tide_graph_push_device(m->g, o->device);
    m->images = placeholder(m, "images", TIDE_FLOAT32, 4, (int64_t[]){-1, 28, 28, 1});
    m->labels = placeholder(m, "labels", TIDE_INT32, 1, (int64_t[]){-1});
    if (t->cfg->dropout > 0)
        m->rate = placeholder(m, "dropout_rate", TIDE_FLOAT32, 0, NULL);
    t->cfg->build(m);
    tide_graph_push_scope(m->g, "loss");
    tide_node *xent = fx_op(m, "SparseSoftmaxCrossEntropyWithLogits", (tide_output[]){m->logits, m->labels}, 2,
                            NULL).node;
    t->loss = fx_op(m, "Mean", (tide_output[]){{xent, 0}, int_vector(m, 1, (int32_t[]){0})}, 2, NULL);
    tide_graph_pop_scope(m->g);
    tide_node *step = tide_global_step(m->g, t->err);
    tide_optimizer opt = t->cfg->optimizer;
    if (o->optimizer >= 0)
        tide_optimizer_init(&opt, (tide_optimizer_kind)o->optimizer, o->learning_rate);
    opt.learning_rate = o->learning_rate;
    t->train = step ? tide_optimizer_minimize(m->g, &opt, t->loss, NULL, 0, step, t->err) : NULL;
    if (!t->train)
        die("building the training step", t->err);
    tide_node *init = tide_global_variables_initializer(m->g, t->err);
    if (o->device)
        tide_graph_pop_device(m->g);
    tide_engine_options eo;
    tide_engine_options_init(&eo);
    if (o->device && !strcmp(spec.type, "sim"))
        eo.num_sim_devices = spec.index + 1; /* /sim:N asked for: the engine gets /sim:0../sim:N */
    t->engine = init ? tide_engine_new(&eo, t->err) : NULL;
    t->s = t->engine ? tide_session_new(t->engine, m->g, NULL, t->err) : NULL;
    if (!t->s || tide_session_run(t->s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, t->err) != TIDE_OK)
        die("initialising the variables", t->err);
    if (o->log_path) {
        t->log = tide_store_open(o->log_path, NULL, t->err);
        if (!t->log || tide_store_log_session(t->log, t->s, t->engine, t->cfg->name, t->err) < 0 ||
            tide_store_log_graph(t->log, t->s, t->err) < 0 || tide_store_attach(t->log, t->engine, t->err) == 0 ||
            tide_store_watch(t->log, tide_node_name(t->loss.node), t->err) != TIDE_OK)
            die("opening the run log", t->err);
    }
    float train_rate = (float)t->cfg->dropout, test_rate = 0;
    t->rate_train = tide_tensor_new_scalar(TIDE_FLOAT32, &train_rate, NULL);
    t->rate_test = tide_tensor_new_scalar(TIDE_FLOAT32, &test_rate, NULL);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct op_time {
    const char *op;
    double ns;
    int64_t count;
} op_time;

static int by_time(const void *a, const void *b)
{
    double x = ((const op_time *)a)->ns, y = ((const op_time *)b)->ns;
    return (x < y) - (x > y);
}

/* Traces profile_steps steps (after a warm-up) and prints the kernel time per op type, the sum of
 * kernel times against the wall time (above 1 when kernels overlap on several threads). */
static void profile(trainer *t, const tide_dataset *ds, const options *o)
{
    tide_tensor *pair[2] = {ds->train_images, ds->train_labels};
    tide_batcher *b = tide_batcher_new(pair, 2, o->batch, true, (uint64_t)o->seed, true, t->err);
    if (!b)
        die("batching", t->err);
    op_time ops[256];
    int n = 0;
    double wall = 0, busy = 0;
    tide_tensor *batch[2];
    for (int64_t i = -10; i < o->profile_steps; i++) {
        if (!tide_batcher_next(b, batch, t->err) && !tide_batcher_next(b, batch, t->err))
            die("batching", t->err);
        tide_step_stats *st = NULL;
        double t0 = now_s();
        traced_step(t, batch[0], batch[1], false, i >= 0 ? &st : NULL);
        if (i >= 0)
            wall += now_s() - t0;
        for (int k = 0; st && k < tide_step_stats_count(st); k++) {
            const tide_node_timing *nt = tide_step_stats_at(st, k);
            const char *op = tide_node_op(nt->node);
            int j = 0;
            while (j < n && strcmp(ops[j].op, op) != 0)
                j++;
            if (j == n && n < 256)
                ops[n++] = (op_time){op, 0, 0};
            if (j < n) {
                ops[j].ns += (double)(nt->end_ns - nt->start_ns);
                ops[j].count++;
                busy += (double)(nt->end_ns - nt->start_ns);
            }
        }
        tide_step_stats_free(st);
        tide_tensor_release(batch[0]);
        tide_tensor_release(batch[1]);
    }
    qsort(ops, (size_t)n, sizeof *ops, by_time);
    double steps = (double)o->profile_steps;
    printf("%lld traced steps: %.3f ms per step wall, %.3f ms of kernel time per step (%.2f threads busy)\n",
           (long long)o->profile_steps, wall / steps * 1e3, busy / steps * 1e-6, busy * 1e-9 / wall);
    printf("%-36s %10s %8s %7s\n", "op", "ms/step", "calls", "share");
    for (int j = 0; j < n; j++)
        printf("%-36s %10.3f %8.1f %6.1f%%\n", ops[j].op, ops[j].ns / steps * 1e-6, (double)ops[j].count / steps,
               100.0 * ops[j].ns / busy);
    tide_batcher_free(b);
}

/* Times bench_steps steps in 5 rounds after a warm-up; prints the median rate as JSON, with the median
 * round's CPU time per step of the whole process (cpu_ms_per_step: what the work costs, which a loaded
 * machine's scheduling does not move as it moves the wall-clock rate). */
static void bench(trainer *t, const tide_dataset *ds, const options *o)
{
    tide_tensor *pair[2] = {ds->train_images, ds->train_labels};
    tide_batcher *b = tide_batcher_new(pair, 2, o->batch, true, (uint64_t)o->seed, true, t->err);
    if (!b)
        die("batching", t->err);
    tide_tensor *batch[2];
    double rates[5], cpu_ms[5];
    for (int round = -1; round < 5; round++) {
        int64_t steps = round < 0 ? 20 : o->bench_steps;
        double t0 = now_s(), c0 = cpu_s();
        for (int64_t i = 0; i < steps; i++) {
            if (!tide_batcher_next(b, batch, t->err) && !tide_batcher_next(b, batch, t->err))
                die("batching", t->err);
            train_step(t, batch[0], batch[1], false);
            tide_tensor_release(batch[0]);
            tide_tensor_release(batch[1]);
        }
        if (round >= 0) {
            rates[round] = (double)steps / (now_s() - t0);
            cpu_ms[round] = (cpu_s() - c0) * 1e3 / (double)steps;
        }
    }
    qsort(rates, 5, sizeof *rates, compare_doubles);
    qsort(cpu_ms, 5, sizeof *cpu_ms, compare_doubles);
    printf("{\"name\": \"train.%s.steps_per_s\", \"value\": %.2f, \"unit\": \"steps/s\", \"batch\": %lld, "
           "\"threads\": %d, \"rounds\": [%.2f, %.2f, %.2f, %.2f, %.2f], \"cpu_ms_per_step\": %.4f}\n",
           t->cfg->name, rates[2], (long long)o->batch, tide_engine_num_threads(t->engine), rates[0], rates[1],
           rates[2], rates[3], rates[4], cpu_ms[2]);
    tide_batcher_free(b);
}

/* Commits the run log and says on stderr what it could not record, if anything. */
static void report_log(tide_store *log)
{
    if (!log)
        return;
    tide_store_flush(log, NULL);
    tide_store_health h;
    tide_store_health_get(log, &h);
    char *lost = tide_store_health_ok(&h) ? NULL : tide_store_health_format(&h);
    if (lost)
        fprintf(stderr, "run log: %s; the first problem: %s\n", lost, h.first_error);
    free(lost);
}

/* With --device: what the device held (its peak memory shows the model ran there) and how many nodes
 * soft placement left elsewhere. */
static void report_device(const trainer *t, const char *device)
{
    for (int i = 0; i < tide_engine_num_devices(t->engine); i++) {
        char name[128];
        tide_device_short_name(tide_engine_device_name(t->engine, i), name, sizeof name);
        tide_device_memory_stats m;
        if (strcmp(name, device) != 0 || !tide_engine_device_memory_stats(t->engine, i, &m))
            continue;
        const char *const *texts = NULL;
        int warnings = tide_session_warnings(t->s, &texts);
        printf("device %s: peak %.1f MiB held by tensors, %lld allocations (%lld from its cache); %d placement "
               "warnings\n", name, (double)m.peak / 1048576.0, (long long)m.allocations, (long long)m.cache_hits,
               warnings);
    }
}

int fashion_main(const fashion_config *cfg, int argc, char **argv)
{
    options o;
    if (!parse_args(cfg, argc, argv, &o))
        return 2;
    trainer t = {.cfg = cfg, .err = tide_error_new()};
    tide_dataset ds;
    double t0 = now_s();
    if (tide_fashion_mnist_load(NULL, &ds, t.err) != TIDE_OK)
        die("loading Fashion-MNIST", t.err);
    double loaded = now_s();
    build(&t, &o);
    if (!o.quiet)
        printf("%s: %d nodes, data loaded in %.2f s\n", cfg->name, tide_graph_num_nodes(t.m.g), loaded - t0);
    if (o.bench_steps || o.profile_steps) {
        if (o.bench_steps)
            bench(&t, &ds, &o);
        else
            profile(&t, &ds, &o);
        report_log(t.log);
        tide_store_close(t.log);
        return 0;
    }
    tide_tensor *pair[2] = {ds.train_images, ds.train_labels};
    tide_batcher *b = tide_batcher_new(pair, 2, o.batch, true, (uint64_t)o.seed, true, t.err);
    if (!b)
        die("batching", t.err);
    double start = now_s(), first_loss = NAN, last_loss = NAN, window = 0;
    int64_t step = 0, in_window = 0;
    tide_tensor *batch[2];
    for (int epoch = 0; epoch < o.epochs && (!o.max_steps || step < o.max_steps); epoch++) {
        while ((!o.max_steps || step < o.max_steps) && tide_batcher_next(b, batch, t.err)) {
            double loss = train_step(&t, batch[0], batch[1], true);
            tide_tensor_release(batch[0]);
            tide_tensor_release(batch[1]);
            if (step == 0)
                first_loss = loss;
            window += loss;
            in_window++;
            step++;
            if (step % 100 == 0) {
                last_loss = window / (double)in_window;
                if (!o.quiet)
                    printf("epoch %d step %lld loss %.4f (%.1f steps/s)\n", epoch + 1, (long long)step, last_loss,
                           (double)step / (now_s() - start));
                fflush(stdout);
                window = 0;
                in_window = 0;
            }
        }
        if (tide_error_code(t.err) != TIDE_OK)
            die("batching", t.err);
        if (!o.quiet && !o.max_steps)
            printf("epoch %d done: test accuracy %.4f (%.0f s)\n", epoch + 1, evaluate(&t, &ds, o.eval_limit),
                   now_s() - start);
    }
    if (in_window)
        last_loss = window / (double)in_window;
    double train_s = now_s() - start;
    double accuracy = evaluate(&t, &ds, o.eval_limit);
    printf("%s: %lld steps (batch %lld, %s, learning rate %g) in %.1f s, %.1f steps/s; loss %.4f -> %.4f\n",
           cfg->name, (long long)step, (long long)o.batch,
           optimizer_names[o.optimizer >= 0 ? o.optimizer : (int)cfg->optimizer.kind], o.learning_rate, train_s, (double)step / train_s, first_loss, last_loss);
    if (o.device)
        report_device(&t, o.device);
    printf("test accuracy %.4f\n", accuracy);
    tide_batcher_free(b);
    tide_tensor_release(t.rate_train);
    tide_tensor_release(t.rate_test);
    report_log(t.log);
    tide_store_close(t.log);
    tide_session_free(t.s);
    tide_graph_free(t.m.g);
    tide_engine_free(t.engine);
    tide_dataset_release(&ds);
    tide_error_free(t.err);
    return 0;
}
