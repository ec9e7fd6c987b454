/* softmax.c — CPU kernels of softmax and cross-entropy (placeholder) */
