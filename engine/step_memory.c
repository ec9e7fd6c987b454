/* step_memory.c — the accounts of step_memory.h: bytes live and their peak, per device and in total,
 * for the tensors a step's kernels allocate. An allocation outside an observed step costs one branch
 * (the context has no account). Counters are atomic: kernels of one step run on several threads, and
 * buffers are freed on any. */
#include <stdlib.h>

#include "internal.h"
#include "step_memory.h"

typedef struct device_bytes {
    atomic_llong live, peak;
} device_bytes;

struct tide_step_memory {
    atomic_int refs;               /* the step's + one per charged buffer not yet freed */
    int num_devices;
    device_bytes total;
    device_bytes devices[];
};

tide_step_memory *tide__step_memory_new(int num_devices)
{
    tide_step_memory *m = calloc(1, sizeof *m + sizeof m->devices[0] * (size_t)(num_devices > 0 ? num_devices : 0));
    if (!m)
        return NULL;
    atomic_init(&m->refs, 1);
    m->num_devices = num_devices;
    return m;
}

void tide__step_memory_release(tide_step_memory *m)
{
    if (m && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
        free(m);
}

static void add(device_bytes *d, int64_t bytes)
{
    long long now = atomic_fetch_add_explicit(&d->live, bytes, memory_order_relaxed) + bytes;
    long long peak = atomic_load_explicit(&d->peak, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&d->peak, &peak, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

void tide__step_memory_charge(tide_step_memory *m, tide_buffer *b)
{
    if (!m || !b->device || b->device->index < 0 || b->device->index >= m->num_devices)
        return;
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    b->step_memory = m;
    add(&m->devices[b->device->index], (int64_t)b->size);
    add(&m->total, (int64_t)b->size);
}

void tide__step_memory_uncharge(tide_buffer *b)
{
    tide_step_memory *m = b->step_memory;
    if (!m)
        return;
    atomic_fetch_sub_explicit(&m->devices[b->device->index].live, (long long)b->size, memory_order_relaxed);
    atomic_fetch_sub_explicit(&m->total.live, (long long)b->size, memory_order_relaxed);
    b->step_memory = NULL;
    tide__step_memory_release(m);
}

int64_t tide__step_memory_peak(const tide_step_memory *m, int device)
{
    if (!m || device < -1 || device >= m->num_devices)
        return 0;
    const device_bytes *d = device < 0 ? &m->total : &m->devices[device];
    return atomic_load_explicit(&d->peak, memory_order_relaxed);
}

int tide__step_memory_num_devices(const tide_step_memory *m) { return m ? m->num_devices : 0; }
