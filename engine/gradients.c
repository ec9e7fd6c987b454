/* gradients.c — tide_gradients and the gradient-function context (placeholder) */
