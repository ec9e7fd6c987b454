/* batch_norm.c — CPU kernels of batch normalisation (placeholder) */
