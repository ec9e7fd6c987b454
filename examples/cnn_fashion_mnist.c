/* cnn_fashion_mnist.c — the convolutional model of TensorFlow's layers tutorial on Fashion-MNIST:
 * conv 5x5x32 SAME + ReLU, max-pool 2x2/2, conv 5x5x64 SAME + ReLU, max-pool 2x2/2, dense 1024 + ReLU,
 * dropout 0.4, dense 10; Adam. Run: build/examples/cnn_fashion_mnist [--epochs N] (see --help). */
#include "fashion.h"

static void build(fashion_model *m)
{
    tide_output x = fx_conv_relu(m, "conv1", m->images, 5, 5, 1, 32);
    x = fx_max_pool_2x2(m, x);
    x = fx_conv_relu(m, "conv2", x, 5, 5, 32, 64);
    x = fx_max_pool_2x2(m, x);
    x = fx_flatten(m, x, 7 * 7 * 64);
    x = fx_dense(m, "dense", x, 7 * 7 * 64, 1024, true);
    tide_node *drop = fx_op(m, "Dropout", (tide_output[]){x, m->rate}, 2, NULL).node;
    m->logits = fx_dense(m, "logits", (tide_output){drop, 0}, 1024, 10, false);
}

int main(int argc, char **argv)
{
    fashion_config cfg = {.name = "cnn", .epochs = 12, .batch = 100, .dropout = 0.4, .build = build};
    tide_optimizer_init(&cfg.optimizer, TIDE_OPT_ADAM, 1e-3);
    return fashion_main(&cfg, argc, argv);
}
