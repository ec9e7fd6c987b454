/* nn_grad.c — gradient functions of the neural-network ops (placeholder) */
