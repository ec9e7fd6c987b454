/* activation.c — CPU kernels of the activations (placeholder) */
