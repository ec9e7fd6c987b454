/* grad_ops.c — op definitions that exist for gradients (placeholder) */
