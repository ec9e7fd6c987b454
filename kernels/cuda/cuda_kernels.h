/* cuda_kernels.h — what the gpu device type (device_cuda.c) and the tests ask of the GPU kernels'
 * registration (cuda_kernels.c): loading the CUDA kernel module, and the list of ops it computes. */
#ifndef TIDE_CUDA_KERNELS_H
#define TIDE_CUDA_KERNELS_H

/* Loads libtide_cuda_kernels.so once (the gpu device type calls it when it finds a GPU); NULL when it
 * is loaded, else why not (the paths tried and dlerror's reasons). */
const char *tide__cuda_kernels_load(void);
/* What the loaded module was built for ("sm_90 + compute_90 PTX, ..."), NULL when none is loaded. */
const char *tide__cuda_kernels_built_for(void);
/* The ops with a gpu kernel from the module, in the list's order (an op may appear twice: Add and
 * AddV2 share a function, not an entry): fills ops[0..max) and returns how many there are. */
int tide__cuda_kernel_ops(const char **ops, int max);

#endif
