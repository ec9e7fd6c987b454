/* variables.c — variables with initializers, the global step (placeholder) */
