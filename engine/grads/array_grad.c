/* array_grad.c — gradient functions of the array and shape ops (placeholder) */
