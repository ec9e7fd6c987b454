/* mlp_fashion_mnist.c — a multi-layer perceptron 784-512-256-10 with ReLU, trained with Adam on
 * Fashion-MNIST. Run: build/examples/mlp_fashion_mnist [--epochs N] (see --help). */
#include "fashion.h"

static void build(fashion_model *m)
{
    tide_output x = fx_flatten(m, m->images, 784);
    x = fx_dense(m, "dense1", x, 784, 512, true);
    x = fx_dense(m, "dense2", x, 512, 256, true);
    m->logits = fx_dense(m, "logits", x, 256, 10, false);
}

int main(int argc, char **argv)
{
    fashion_config cfg = {.name = "mlp", .epochs = 15, .batch = 100, .build = build};
    tide_optimizer_init(&cfg.optimizer, TIDE_OPT_ADAM, 1e-3);
    return fashion_main(&cfg, argc, argv);
}
