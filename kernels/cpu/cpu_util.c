/* cpu_util.c — NumPy broadcasting, kernel-table registration, output allocation and the run-time
 * choice of instruction set for the CPU kernels (see cpu_util.h). */
#include "cpu_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- instruction set */

static _Atomic int supported_isa = -1; /* every thread computes the same value */
static _Atomic int env_cap = -1;       /* $TIDE_CPU_ISA, read once */
static _Atomic int limit_cap = TIDE_ISA_AVX512;

tide_cpu_isa tide_cpu_isa_supported(void)
{
    int isa = atomic_load_explicit(&supported_isa, memory_order_relaxed);
    if (isa >= 0)
        return (tide_cpu_isa)isa;
    isa = TIDE_ISA_PORTABLE;
#if TIDE_ISA_DISPATCH_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        isa = TIDE_ISA_AVX2;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
            isa = TIDE_ISA_AVX512;
    }
#endif
    atomic_store_explicit(&supported_isa, isa, memory_order_relaxed);
    return (tide_cpu_isa)isa;
}

const char *tide_cpu_isa_name(tide_cpu_isa isa)
{
    return isa == TIDE_ISA_AVX512 ? "avx512" : isa == TIDE_ISA_AVX2 ? "avx2" : "portable";
}

/* $TIDE_CPU_ISA as a cap; unset, empty or unknown (then said once on stderr): no cap. */
static int read_env_cap(void)
{
    const char *v = getenv("TIDE_CPU_ISA");
    if (!v || !*v)
        return TIDE_ISA_AVX512;
    for (int isa = TIDE_ISA_PORTABLE; isa <= TIDE_ISA_AVX512; isa++)
        if (!strcmp(v, tide_cpu_isa_name((tide_cpu_isa)isa)))
            return isa;
    fprintf(stderr, "tide: TIDE_CPU_ISA=%s is not portable, avx2 or avx512; ignored\n", v);
    return TIDE_ISA_AVX512;
}

tide_cpu_isa tide_cpu_isa_active(void)
{
    int env = atomic_load_explicit(&env_cap, memory_order_relaxed);
    if (env < 0) {
        int expected = -1;
        env = read_env_cap();
        if (!atomic_compare_exchange_strong(&env_cap, &expected, env))
            env = expected; /* another thread read it first */
    }
    int isa = (int)tide_cpu_isa_supported(), cap = atomic_load_explicit(&limit_cap, memory_order_relaxed);
    isa = isa < env ? isa : env;
    return (tide_cpu_isa)(isa < cap ? isa : cap);
}

tide_cpu_isa tide_cpu_isa_limit(tide_cpu_isa max)
{
    return (tide_cpu_isa)atomic_exchange(&limit_cap, (int)max);
}

bool tide_bcast_init(tide_bcast *bc, const tide_shape *a, const tide_shape *b)
{
    memset(bc, 0, sizeof *bc);
    if (!tide_shape_broadcast(a, b, &bc->out))
        return false;
    bc->out_n = tide_shape_num_elements(&bc->out);
    bc->same = tide_shape_equal(a, b);
    bc->a_scalar = tide_shape_num_elements(a) == 1;
    bc->b_scalar = tide_shape_num_elements(b) == 1;
    int r = bc->out.rank;
    /* Align both to the output's rank, then merge adjacent dims with the same broadcast pattern. */
    int64_t ad[TIDE_MAX_RANK], bd[TIDE_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        ad[i] = ia >= 0 ? a->dims[ia] : 1;
        bd[i] = ib >= 0 ? b->dims[ib] : 1;
    }
    int64_t dims[TIDE_MAX_RANK];
    bool abc[TIDE_MAX_RANK], bbc[TIDE_MAX_RANK]; /* broadcast along this dim? */
    int n = 0;
    for (int i = 0; i < r; i++) {
        int64_t d = bc->out.dims[i];
        if (d == 1)
            continue; /* size-1 output dims change nothing */
        bool ab = ad[i] == 1, bb = bd[i] == 1;
        if (n > 0 && abc[n - 1] == ab && bbc[n - 1] == bb) {
            dims[n - 1] = tide_dim_mul(dims[n - 1], d);
        } else {
            dims[n] = d;
            abc[n] = ab;
            bbc[n] = bb;
            n++;
        }
    }
    if (n == 0) { /* scalar or all ones */
        dims[0] = 1;
        abc[0] = bbc[0] = false;
        n = 1;
    }
    bc->rank = n;
    int64_t as = 1, bs = 1;
    for (int i = n - 1; i >= 0; i--) {
        bc->dims[i] = dims[i];
        bc->a_strides[i] = abc[i] ? 0 : as;
        bc->b_strides[i] = bbc[i] ? 0 : bs;
        if (!abc[i])
            as *= dims[i];
        if (!bbc[i])
            bs *= dims[i];
    }
    bc->inner = bc->dims[n - 1];
    bc->rows = bc->inner ? bc->out_n / bc->inner : 0;
    bc->a_inner = bc->a_strides[n - 1] ? 1 : 0;
    bc->b_inner = bc->b_strides[n - 1] ? 1 : 0;
    return true;
}

void tide_bcast_row(const tide_bcast *bc, int64_t row, int64_t *a_off, int64_t *b_off)
{
    int64_t ia = 0, ib = 0;
    for (int i = bc->rank - 2; i >= 0; i--) {
        int64_t c = row % bc->dims[i];
        row /= bc->dims[i];
        ia += c * bc->a_strides[i];
        ib += c * bc->b_strides[i];
    }
    *a_off = ia;
    *b_off = ib;
}

void tide_cpu_register_kernels(const tide_cpu_kernel *table, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tide_kernel_register(&(tide_kernel_spec){
            .op = table[i].op,
            .device_type = "cpu",
            .flags = table[i].flags,
            .init = table[i].init,
            .destroy = table[i].init ? free : NULL,
            .compute = table[i].compute,
        });
}

tide_tensor *tide_cpu_alloc_result(tide_kernel_ctx *ctx, const tide_shape *shape, bool no_terms,
                                   tide_status *st)
{
    tide_tensor *out = tide_kernel_alloc_output(ctx, 0, shape, no_terms);
    *st = out ? TIDE_OK : tide_kernel_status(ctx);
    return out && !no_terms && tide_shape_num_elements(shape) > 0 ? out : NULL;
}
