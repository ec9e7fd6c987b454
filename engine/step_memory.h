/* step_memory.h — what one step's kernels hold in memory (step_memory.c). The executor makes an account
 * per observed step, which the kernels' contexts find through their step; every tensor a kernel allocates on its
 * device through the context (outputs, temporaries: tide_kernel_alloc_output, forward_or_alloc) is
 * charged to it, per device and in total, and the buffer keeps the account until it is freed, on
 * whatever thread and whenever that is (a fetched value outlives its step: the account lives until its
 * last buffer goes). The peaks are the most bytes charged and not yet freed at any moment of the step.
 * Fed values, variables and tensors a step only passes along (in place, views) are not charged: its
 * kernels did not allocate them; nor are copies between devices (made by the transfer, not a kernel)
 * or a kernel's own scratch memory that is not a tensor. */
#ifndef TIDE_STEP_MEMORY_H
#define TIDE_STEP_MEMORY_H

#include <stdint.h>

struct tide_buffer;
typedef struct tide_step_memory tide_step_memory;

/* An account for num_devices devices (NULL when out of memory); the caller holds one reference. */
tide_step_memory *tide__step_memory_new(int num_devices);
void tide__step_memory_release(tide_step_memory *m);
/* A buffer of b->device was allocated for a kernel of m's step / is being freed: charged to m / given
 * back to its account. m NULL, or a buffer of no device: nothing. */
void tide__step_memory_charge(tide_step_memory *m, struct tide_buffer *b);
void tide__step_memory_uncharge(struct tide_buffer *b);
/* The account of a step (executor.c): NULL when the step is not observed, or step is NULL. */
struct tide_step;
tide_step_memory *tide__step_memory_of(struct tide_step *step);
/* The peak of one device (its engine index), or of all devices together (device -1); 0 for m NULL. */
int64_t tide__step_memory_peak(const tide_step_memory *m, int device);
int tide__step_memory_num_devices(const tide_step_memory *m);

#endif
