/* pool.c — CPU kernels of pooling (placeholder) */
