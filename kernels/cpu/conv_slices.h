/* conv_slices.h — the slice method the filter gradients share (conv.c's canvas method, conv_filter.c's
 * in-place one, conv_winograd_filter.c's Winograd one): the batch is cut into slices by its size alone,
 * each thread of the engine's pool takes slices one at a time from a shared counter and sums each into
 * that slice's own partial buffer, and the partials are then added in slice order. So the result
 * depends neither on the number nor on the timing of the threads. Internal to the CPU kernels. */
#ifndef TIDE_KERNELS_CPU_CONV_SLICES_H
#define TIDE_KERNELS_CPU_CONV_SLICES_H

#include <stddef.h>
#include <stdint.h>

#include "tide_op.h"

typedef struct tide_conv_slices {
    tide_kernel_ctx *ctx;
    int64_t slices;
    size_t partial_bytes;   /* one slice's partial buffer */
    double ns_per_slice;    /* the cost model for tide_kernel_parallel_for */
    void *arg;              /* the method's job, passed to the three functions */
    /* A thread's scratch memory before its first slice (NULL: out of memory; may return arg when it
     * needs none), the sum of one slice into its partial (not zeroed: the method stores or adds), and
     * the scratch freed after its last slice (may be NULL). */
    void *(*scratch_new)(void *arg);
    void (*sum_slice)(void *arg, void *scratch, int64_t slice, char *partial);
    void (*scratch_free)(void *arg, void *scratch);
} tide_conv_slices;

/* Runs every slice on the engine's threads into a new array of s->slices partial buffers (contiguous,
 * s->partial_bytes apart), returned to the caller to free; NULL with the context's error set when out of
 * memory. Once the step is cancelled no slice starts (what the partials then hold is not a result). */
char *tide_conv_slices_run(const tide_conv_slices *s);

/* The direct methods' partials, [slices][cblocks][k_total][vb] of float32 (es 4) or float64 (es 8),
 * added in slice order into out [k_total][cout] (columns cout and on of the last channel block are
 * padding), rows of k split over the engine's threads. */
typedef struct tide_conv_partials {
    tide_kernel_ctx *ctx;
    size_t es;
    int64_t slices, cblocks, k_total, vb, cout;
    const char *partials;
    void *out;
} tide_conv_partials;
void tide_conv_partials_sum(const tide_conv_partials *p);

#endif
