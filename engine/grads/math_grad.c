/* math_grad.c — gradient functions of the element-wise math ops (placeholder) */
