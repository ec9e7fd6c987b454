/* fashion_mnist.c — Fashion-MNIST loader (placeholder) */
