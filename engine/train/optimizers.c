/* optimizers.c — optimizers and minimize (placeholder) */
