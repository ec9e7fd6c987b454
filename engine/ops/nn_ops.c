/* nn_ops.c — neural-network op definitions (placeholder) */
