/* initializers.c — initializers (placeholder) */
