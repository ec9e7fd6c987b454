/* conv_slices.c — the slice method the filter gradients share (see conv_slices.h): the driver that
 * hands slices of the batch to the engine's threads, and the sum of the direct methods' partials in
 * slice order. Summing the partials on the threads (rows of k split) rather than on the calling thread
 * alone: done serially it was ~9% of the CNN layer's backprop-filter time (perf). */
#include "conv_slices.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct slices_run {
    const tide_conv_slices *s;
    char *partials;
    atomic_llong next;
    atomic_bool out_of_memory;
} slices_run;

/* parallel_for body: one part per thread, taking slices until none is left. */
static void slices_part(int64_t begin, int64_t end, void *arg)
{
    (void)begin, (void)end;
    slices_run *r = arg;
    const tide_conv_slices *s = r->s;
    void *scratch = s->scratch_new(s->arg);
    if (!scratch) {
        atomic_store(&r->out_of_memory, true);
        return;
    }
    for (int64_t sl; (sl = atomic_fetch_add(&r->next, 1)) < s->slices && !tide_kernel_cancelled(s->ctx);)
        s->sum_slice(s->arg, scratch, sl, r->partials + s->partial_bytes * (size_t)sl);
    if (s->scratch_free)
        s->scratch_free(s->arg, scratch);
}

char *tide_conv_slices_run(const tide_conv_slices *s)
{
    slices_run r = {.s = s, .partials = malloc(s->partial_bytes * (size_t)s->slices + 64)};
    atomic_init(&r.next, 0);
    atomic_init(&r.out_of_memory, r.partials == NULL);
    if (r.partials) {
        int64_t parts = tide_kernel_num_threads(s->ctx);
        parts = parts < s->slices ? parts : s->slices;
        parts = parts > 1 ? parts : 1;
        tide_kernel_parallel_for(s->ctx, parts, s->ns_per_slice * (double)s->slices / (double)parts + 1000.0,
                                 slices_part, &r);
    }
    if (atomic_load(&r.out_of_memory))
        tide_kernel_error(s->ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory for the filter gradient's buffers");
    if (tide_kernel_status(s->ctx) != TIDE_OK) {
        free(r.partials);
        return NULL;
    }
    return r.partials;
}

/* Rows [k0, k1) of out: each row of each channel block as one contiguous run per slice (the loop over
 * v vectorises). */
#define DEFINE_SUM_PARTIALS(T, SFX)                                                              \
    static void sum_partials_##SFX(const tide_conv_partials *p, int64_t k0, int64_t k1)          \
    {                                                                                            \
        const T *part = (const T *)p->partials;                                                  \
        T *out = p->out;                                                                         \
        const int64_t vb = p->vb, stride = p->cblocks * p->k_total * vb;                         \
        for (int64_t k = k0; k < k1; k++)                                                        \
            for (int64_t cb = 0; cb < p->cblocks; cb++) {                                        \
                const int64_t ncols = p->cout - cb * vb < vb ? p->cout - cb * vb : vb;           \
                const T *at = part + (cb * p->k_total + k) * vb;                                 \
                T *to = out + k * p->cout + cb * vb;                                             \
                for (int64_t v = 0; v < ncols; v++)                                              \
                    to[v] = at[v];                                                               \
                for (int64_t s = 1; s < p->slices; s++)                                          \
                    for (int64_t v = 0; v < ncols; v++)                                          \
                        to[v] += at[s * stride + v];                                             \
            }                                                                                    \
    }
DEFINE_SUM_PARTIALS(float, f32)
DEFINE_SUM_PARTIALS(double, f64)

typedef struct sum_run {
    const tide_conv_partials *p;
    int64_t parts;
} sum_run;

/* parallel_for body over r->parts parts: the partial sums of the parts' share of the rows. */
static void sum_rows(int64_t begin, int64_t end, void *arg)
{
    const sum_run *r = arg;
    const int64_t k0 = begin * r->p->k_total / r->parts, k1 = end * r->p->k_total / r->parts;
    if (r->p->es == sizeof(float))
        sum_partials_f32(r->p, k0, k1);
    else
        sum_partials_f64(r->p, k0, k1);
}

void tide_conv_partials_sum(const tide_conv_partials *p)
{
    sum_run r = {.p = p, .parts = tide_kernel_num_threads(p->ctx)};
    r.parts = r.parts < p->k_total ? r.parts : p->k_total;
    r.parts = r.parts > 1 ? r.parts : 1;
    tide_kernel_parallel_for(p->ctx, r.parts, 0.5 * (double)(p->slices * p->cout * p->k_total / r.parts), sum_rows, &r);
}
