/* grad_support.c — CPU kernels of the ops that exist for gradients (placeholder) */
