/* debug.c — the debugger an engine holds (tide_debug.h): attaching and detaching it (detaching waits
 * for its callbacks in flight, with the observers' entries: observers.c), the copy each run takes,
 * health summaries of tensors (DebugNumericSummary), computed on the caller's thread in one pass, and
 * the much cheaper question has_inf_or_nan asks of every output: is any element non-finite. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int tide_engine_attach_debugger(tide_engine *e, const tide_debugger *d, tide_error *err)
{
    if (!e || !d || !d->check || !d->paused) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "attach_debugger: the engine, the debugger, its check and "
                       "its paused callbacks must be given");
        return 0;
    }
    tide_observer_entry *entry = tide__entry_new();
    if (!entry) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return 0;
    }
    pthread_mutex_lock(&e->observers_lock);
    tide_debugger_slot old = e->debugger;
    int id = ++e->next_debugger_id;
    e->debugger = (tide_debugger_slot){id, *d, entry};
    atomic_fetch_add(&e->debugger_version, 1);
    pthread_mutex_unlock(&e->observers_lock);
    if (old.entry) { /* replaced: as if detached */
        tide__entry_retire(old.entry);
        tide__entry_release(old.entry);
    }
    return id;
}

void tide_engine_detach_debugger(tide_engine *e, int id)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->observers_lock);
    tide_debugger_slot old = {0};
    if (e->debugger.entry && e->debugger.id == id) {
        old = e->debugger;
        e->debugger = (tide_debugger_slot){0};
        atomic_fetch_add(&e->debugger_version, 1);
    }
    pthread_mutex_unlock(&e->observers_lock);
    if (old.entry) {
        tide__entry_retire(old.entry);
        tide__entry_release(old.entry);
    }
}

void tide_engine_debugger_changed(tide_engine *e)
{
    if (e)
        atomic_fetch_add(&e->debugger_version, 1);
}

void tide__debugger_snapshot(tide_engine *e, tide_debugger_slot *slot)
{
    *slot = (tide_debugger_slot){0};
    if (!__atomic_load_n(&e->debugger.entry, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&e->observers_lock);
    *slot = e->debugger;
    tide__entry_retain(slot->entry);
    pthread_mutex_unlock(&e->observers_lock);
}

void tide__debugger_release(tide_debugger_slot *slot)
{
    tide__entry_release(slot->entry);
    *slot = (tide_debugger_slot){0};
}

const char *tide_debug_node_state_name(tide_debug_node_state s)
{
    static const char *const names[] = {"not in this step", "waiting", "ready", "running", "done", "stopped here",
                                        "skipped"};
    return (int)s >= 0 && (size_t)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* ---------------------------------------------------------------- health summaries */

typedef struct health_acc {
    int64_t nan, neg_inf, pos_inf, negative, zero, positive, finite;
    double min, max, sum, sumsq;
} health_acc;

/* One pass over n values of type T (float or double): the counts without branches on the common path,
 * min, max and sums over the finite values. */
#define HEALTH_LOOP(T, data, n, acc)                                                              \
    do {                                                                                          \
        const T *v_ = (const T *)(data);                                                          \
        for (int64_t i_ = 0; i_ < (n); i_++) {                                                    \
            double x_ = (double)v_[i_];                                                           \
            if (isfinite(x_)) {                                                                   \
                (acc)->negative += x_ < 0;                                                        \
                (acc)->zero += x_ == 0;                                                           \
                (acc)->positive += x_ > 0;                                                        \
                (acc)->min = x_ < (acc)->min ? x_ : (acc)->min;                                   \
                (acc)->max = x_ > (acc)->max ? x_ : (acc)->max;                                   \
                (acc)->sum += x_;                                                                 \
                (acc)->sumsq += x_ * x_;                                                          \
                (acc)->finite++;                                                                  \
            } else if (isnan(x_)) {                                                               \
                (acc)->nan++;                                                                     \
            } else if (x_ < 0) {                                                                  \
                (acc)->neg_inf++;                                                                 \
            } else {                                                                              \
                (acc)->pos_inf++;                                                                 \
            }                                                                                     \
        }                                                                                         \
    } while (0)

bool tide_tensor_health(const tide_tensor *t, tide_health *h)
{
    memset(h, 0, sizeof *h);
    if (!t || t == tide__dead || t->dtype == TIDE_STRING || t->dtype == TIDE_INVALID_DTYPE)
        return false;
    int64_t n = t->num_elements;
    health_acc a = {.min = INFINITY, .max = -INFINITY};
    const void *data = n ? tide_tensor_data(t) : NULL;
    tide_tensor *host = NULL; /* a host copy of a tensor in an accelerator's memory (docs/devices.md) */
    if (n && !data) {
        if (!(host = tide_tensor_to_host(t, NULL)))
            return false;
        t = host;
        data = tide_tensor_data(t);
    }
    if (t->dtype == TIDE_FLOAT32)
        HEALTH_LOOP(float, data, n, &a);
    else if (t->dtype == TIDE_FLOAT64)
        HEALTH_LOOP(double, data, n, &a);
    else /* the others through a conversion per element: float16, bfloat16, integers, bool, complex (real part) */
        for (int64_t i = 0; i < n; i++) {
            double x = tide_tensor_get_f64(t, i);
            HEALTH_LOOP(double, &x, 1, &a);
        }
    h->elements = n;
    h->nan = a.nan;
    h->neg_inf = a.neg_inf;
    h->pos_inf = a.pos_inf;
    h->negative = a.negative;
    h->zero = a.zero;
    h->positive = a.positive;
    if (a.finite > 0) {
        h->min = a.min;
        h->max = a.max;
        h->mean = a.sum / (double)a.finite;
        double var = a.sumsq / (double)a.finite - h->mean * h->mean;
        h->std = var > 0 ? sqrt(var) : 0;
    }
    tide_tensor_release(host);
    return true;
}

/* ---------------------------------------------------------------- any NaN or infinity */

/* An element is NaN or infinite when its exponent field is all ones: then (bits & ~sign) + (the
 * exponent's lowest bit) carries into the sign bit, and never otherwise. ORing that over the tensor is
 * a reduction without branches or a loop-carried compare, which GCC vectorises: 64 bytes a cycle with
 * AVX-512 (BW for the 16-bit floats), 32 with AVX2, 16 with SSE2, chosen at run time once (capped by
 * $TIDE_CPU_ISA as the CPU kernels are: portable, avx2, avx512). The pass is what has_inf_or_nan costs
 * a step: on the MLP of tests/bench/debug_overhead.lua about 8 MB of outputs a step. */
#if defined(__GNUC__) && !defined(__clang__)
#define VECTORISED(...) __attribute__((optimize("tree-vectorize", "unroll-loops") __VA_OPT__(, ) __VA_ARGS__))
#else
#define VECTORISED(...) __attribute__((__VA_ARGS__))
#endif
#define NONFINITE_FN(name, T, attrs)                                                              \
    attrs static bool name(const T *bits, int64_t n, T abs_mask, T exponent_lsb)                  \
    {                                                                                             \
        T acc = 0;                                                                                \
        for (int64_t i = 0; i < n; i++)                                                           \
            acc |= (T)((T)(bits[i] & abs_mask) + exponent_lsb);                                    \
        return acc >> (sizeof(T) * 8 - 1);                                                        \
    }
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_PATHS 1
#define AVX512_TARGET target("avx2,avx512f,avx512bw,prefer-vector-width=512")
NONFINITE_FN(nonfinite16_avx512, uint16_t, VECTORISED(AVX512_TARGET))
NONFINITE_FN(nonfinite32_avx512, uint32_t, VECTORISED(AVX512_TARGET))
NONFINITE_FN(nonfinite64_avx512, uint64_t, VECTORISED(AVX512_TARGET))
NONFINITE_FN(nonfinite16_avx2, uint16_t, VECTORISED(target("avx2")))
NONFINITE_FN(nonfinite32_avx2, uint32_t, VECTORISED(target("avx2")))
NONFINITE_FN(nonfinite64_avx2, uint64_t, VECTORISED(target("avx2")))
#endif
NONFINITE_FN(nonfinite16, uint16_t, VECTORISED())
NONFINITE_FN(nonfinite32, uint32_t, VECTORISED())
NONFINITE_FN(nonfinite64, uint64_t, VECTORISED())

enum { SCAN_PORTABLE = 0, SCAN_AVX2 = 1, SCAN_AVX512 = 2 };

/* The widest pass this CPU runs, capped by $TIDE_CPU_ISA. */
static int scan_isa(void)
{
#ifdef HAVE_X86_PATHS
    static atomic_int cached = -1; /* -1: not asked yet; every thread computes the same value */
    int isa = atomic_load_explicit(&cached, memory_order_relaxed);
    if (isa < 0) {
        __builtin_cpu_init();
        isa = !__builtin_cpu_supports("avx2")       ? SCAN_PORTABLE
              : !__builtin_cpu_supports("avx512f") ||
                        !__builtin_cpu_supports("avx512bw") ? SCAN_AVX2
                                                            : SCAN_AVX512;
        const char *cap = getenv("TIDE_CPU_ISA");
        if (cap && strcmp(cap, "portable") == 0)
            isa = SCAN_PORTABLE;
        else if (cap && strcmp(cap, "avx2") == 0 && isa > SCAN_AVX2)
            isa = SCAN_AVX2;
        atomic_store_explicit(&cached, isa, memory_order_relaxed);
    }
    return isa;
#else
    return SCAN_PORTABLE;
#endif
}

static bool nonfinite_bits(const void *data, int64_t n, int width, uint64_t abs_mask, uint64_t lsb)
{
#ifdef HAVE_X86_PATHS
    switch (scan_isa()) {
    case SCAN_AVX512:
        return width == 16   ? nonfinite16_avx512(data, n, (uint16_t)abs_mask, (uint16_t)lsb)
               : width == 32 ? nonfinite32_avx512(data, n, (uint32_t)abs_mask, (uint32_t)lsb)
                             : nonfinite64_avx512(data, n, abs_mask, lsb);
    case SCAN_AVX2:
        return width == 16   ? nonfinite16_avx2(data, n, (uint16_t)abs_mask, (uint16_t)lsb)
               : width == 32 ? nonfinite32_avx2(data, n, (uint32_t)abs_mask, (uint32_t)lsb)
                             : nonfinite64_avx2(data, n, abs_mask, lsb);
    default:
        break;
    }
#endif
    return width == 16   ? nonfinite16(data, n, (uint16_t)abs_mask, (uint16_t)lsb)
           : width == 32 ? nonfinite32(data, n, (uint32_t)abs_mask, (uint32_t)lsb)
                         : nonfinite64(data, n, abs_mask, lsb);
}

bool tide_tensor_has_inf_or_nan(const tide_tensor *t)
{
    if (!t || t == tide__dead || t->num_elements == 0)
        return false;
    const void *data = tide_tensor_data(t);
    tide_health h;
    if (!data) /* in an accelerator's memory: the summary of a host copy */
        return tide_tensor_health(t, &h) && tide_health_bad(&h);
    switch (t->dtype) {
    case TIDE_FLOAT32:
        return nonfinite_bits(data, t->num_elements, 32, 0x7fffffffu, 0x00800000u);
    case TIDE_FLOAT64:
        return nonfinite_bits(data, t->num_elements, 64, 0x7fffffffffffffffull, 0x0010000000000000ull);
    case TIDE_FLOAT16:
        return nonfinite_bits(data, t->num_elements, 16, 0x7fffu, 0x0400u);
    case TIDE_BFLOAT16:
        return nonfinite_bits(data, t->num_elements, 16, 0x7fffu, 0x0080u);
    case TIDE_BOOL:
    case TIDE_INT8:
    case TIDE_INT16:
    case TIDE_INT32:
    case TIDE_INT64:
    case TIDE_UINT8:
    case TIDE_UINT16:
    case TIDE_STRING:
    case TIDE_INVALID_DTYPE:
        return false; /* no infinities */
    default: /* the rest (complex numbers): the whole summary */
        return tide_tensor_health(t, &h) && tide_health_bad(&h);
    }
}
