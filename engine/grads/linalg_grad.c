/* linalg_grad.c — gradient functions of MatMul and the linear algebra ops (placeholder) */
