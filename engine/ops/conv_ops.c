/* conv_ops.c — convolution and pooling op definitions (placeholder) */
