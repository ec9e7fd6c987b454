/* training.c — CPU kernels of the fused optimizer updates (placeholder) */
