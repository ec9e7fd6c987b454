/* conv_grad.c — gradient functions of convolution and pooling (placeholder) */
