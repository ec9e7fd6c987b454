/* conv.c — CPU kernels of Conv2D and its gradients (placeholder) */
