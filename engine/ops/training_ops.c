/* training_ops.c — fused optimizer update op definitions (placeholder) */
