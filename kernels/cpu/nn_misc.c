/* nn_misc.c — CPU kernels of BiasAdd, L2Loss, Dropout (placeholder) */
