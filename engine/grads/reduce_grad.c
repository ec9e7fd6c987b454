/* reduce_grad.c — gradient functions of the reductions (placeholder) */
