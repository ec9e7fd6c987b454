/* fashion.h — what the Fashion-MNIST examples share: building layers with the C API, and one
 * training loop (shuffled batches, progress, test accuracy, a benchmark mode). Each example only
 * describes its model. */
#ifndef TIDE_EXAMPLES_FASHION_H
#define TIDE_EXAMPLES_FASHION_H

#include "tide.h"
#include "tide_data.h"

/* The model an example builds into g: logits [batch, 10] from images [batch, 28, 28, 1]. */
typedef struct fashion_model {
    tide_graph *g;
    tide_output images;   /* float32 placeholder [?, 28, 28, 1] */
    tide_output labels;   /* int32 placeholder [?] */
    tide_output rate;     /* float32 scalar placeholder: dropout rate (0 at test time); .node NULL if unused */
    tide_output logits;
    int64_t seed;
} fashion_model;

typedef struct fashion_config {
    const char *name;            /* "softmax", "mlp", "cnn" */
    int epochs;                  /* default for a full run */
    int64_t batch;               /* 100 */
    double dropout;              /* rate fed while training */
    tide_optimizer optimizer;
    void (*build)(fashion_model *m); /* adds the layers: m->logits from m->images */
} fashion_config;

/* Parses argv (--epochs N, --steps N, --batch N, --seed N, --eval N, --bench STEPS, --quiet, --help),
 * loads the data, builds, trains, prints progress and "test accuracy A" last. Returns the exit status. */
int fashion_main(const fashion_config *cfg, int argc, char **argv);

/* Layer helpers (exit with a message on failure: an example's graph is fixed). */
tide_output fx_op(fashion_model *m, const char *op, const tide_output *inputs, int n, tide_attrs *attrs);
tide_output fx_variable(fashion_model *m, const char *name, tide_init_kind init, const tide_shape *shape);
/* x [?, in] -> x W + b (ReLU if relu), W Glorot-uniform, b zeros; under scope name. */
tide_output fx_dense(fashion_model *m, const char *name, tide_output x, int64_t in, int64_t out, bool relu);
/* Conv2D SAME stride 1 (kh x kw x cin -> cout) + BiasAdd + ReLU; under scope name. */
tide_output fx_conv_relu(fashion_model *m, const char *name, tide_output x, int64_t kh, int64_t kw,
                         int64_t cin, int64_t cout);
tide_output fx_max_pool_2x2(fashion_model *m, tide_output x);
/* x reshaped to [-1, cols]. */
tide_output fx_flatten(fashion_model *m, tide_output x, int64_t cols);

#endif
