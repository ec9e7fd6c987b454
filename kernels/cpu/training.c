/* training.c — CPU kernels of the fused optimizer updates (engine/ops/training_ops.c):
 * ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyRMSProp, ApplyAdam, float32 and float64.
 *
 * One compute function serves every op: it finds the variables behind the Ref inputs (the variable
 * and its slots), checks the scalars and the gradient, locks the variables (in address order, so two
 * updates never deadlock), and then runs the op's element loop once over all arrays. A variable whose
 * tensor nobody else holds is updated in place; otherwise the loop writes a new tensor computed from
 * the old one (copy on write), which replaces the old one only after the loop, so a tensor already
 * handed to another op never changes under it and a failure leaves every variable as it was.
 *
 * The loops read each old value and write the new one at the same index, so in place (old == new) and
 * copy on write run the same code; they are written to vectorise (no branches; square roots in
 * blocks, see tide_sqrt_f32), are built for the baseline ISA and AVX2 and chosen per call
 * (TIDE_ISA_VARIANTS_TO_AVX2 in cpu_util.h: bit-identical results, about 1.3-2x faster; AVX-512 did
 * not pay, see APPLY_LOOP), and large variables are split over tide_kernel_parallel_for. Formulas
 * are TensorFlow's, evaluated in T as TensorFlow's kernels do. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "../../engine/tide_device.h"
#include "../../engine/tide_op.h"

/* Loops of unknown length vectorised, selects of floats too (cpu_util.h: before including it). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif
#include "cpu_util.h"

#define MAX_REFS 3    /* the variable and up to two slots */
#define MAX_SCALARS 8 /* hyper-parameters of one op */

/* One update's arrays. old[k] and out[k] are variable k's current and new values (the same buffer
 * when updated in place); k = 0 is the variable, then its slots in input order. h holds the scalar
 * hyper-parameters in input order. */
typedef struct apply_job {
    const void *old[MAX_REFS];
    void *out[MAX_REFS];
    const void *grad;
    double h[MAX_SCALARS];
    void (*loop)(const struct apply_job *j, int64_t begin, int64_t end);
} apply_job;

typedef void (*apply_loop)(const apply_job *j, int64_t begin, int64_t end);

/* ---------------------------------------------------------------- element loops */

/* var -= alpha * delta.   h: alpha */
#define GRADIENT_DESCENT_LOOP(name, TARGET, ISA, T)                                         \
    TARGET static void name(const apply_job *j, int64_t begin, int64_t end)                 \
    {                                                                                       \
        const T *var = j->old[0], *g = j->grad;                                             \
        T *var_out = j->out[0];                                                             \
        const T alpha = (T)j->h[0];                                                         \
        IVDEP for (int64_t i = begin; i < end; i++)                                         \
            var_out[i] = var[i] - alpha * g[i];                                             \
    }

/* accum = accum * momentum + grad; var -= lr * accum (Nesterov: grad * lr + accum * momentum * lr).
 * h: lr, momentum */
#define MOMENTUM_LOOP(name, TARGET, ISA, T, NESTEROV)                                       \
    TARGET static void name(const apply_job *j, int64_t begin, int64_t end)                 \
    {                                                                                       \
        const T *var = j->old[0], *accum = j->old[1], *g = j->grad;                         \
        T *var_out = j->out[0], *accum_out = j->out[1];                                     \
        const T lr = (T)j->h[0], momentum = (T)j->h[1];                                     \
        IVDEP for (int64_t i = begin; i < end; i++) {                                       \
            const T a = accum[i] * momentum + g[i];                                         \
            accum_out[i] = a;                                                               \
            var_out[i] = NESTEROV ? var[i] - (g[i] * lr + a * momentum * lr) : var[i] - lr * a; \
        }                                                                                   \
    }

/* The loops that take square roots run in blocks: a first pass updates the slots and writes what
 * to take the root of into a block on the stack, tide_sqrt_f32/_f64 (cpu_util.h) take the roots
 * several at a time, a second pass updates the variable. */
#define BLOCK 256

/* Runs the statements of a blocked loop over [begin, end): BODY1 for each i, then roots of root[],
 * then BODY2 for each i; `at` is the element index, `r` the index within the block. */
#define BLOCKED(T, SQRT, ISA, BODY1, BODY2)                                                      \
    T root[BLOCK];                                                                          \
    for (int64_t start = begin; start < end; start += BLOCK) {                              \
        const int64_t len = end - start < BLOCK ? end - start : BLOCK;                      \
        IVDEP for (int64_t r = 0; r < len; r++) {                                           \
            const int64_t at = start + r;                                                   \
            BODY1                                                                           \
        }                                                                                   \
        TIDE_ISA_FN(SQRT, ISA)(root, root, len, false);                                     \
        IVDEP for (int64_t r = 0; r < len; r++) {                                           \
            const int64_t at = start + r;                                                   \
            BODY2                                                                           \
        }                                                                                   \
    }

/* accum += grad^2 (unless update_slots is false: FROZEN); var -= lr * grad / sqrt(accum).
 * h: lr */
#define ADAGRAD_LOOP(name, TARGET, ISA, T, SQRT, FROZEN)                                    \
    TARGET static void name(const apply_job *j, int64_t begin, int64_t end)                 \
    {                                                                                       \
        const T *var = j->old[0], *accum = j->old[1], *g = j->grad;                         \
        T *var_out = j->out[0], *accum_out = j->out[1];                                     \
        const T lr = (T)j->h[0];                                                            \
        BLOCKED(T, SQRT, ISA,                                                                  \
                const T a = FROZEN ? accum[at] : accum[at] + g[at] * g[at];                 \
                accum_out[at] = a;                                                          \
                root[r] = a;,                                                               \
                var_out[at] = var[at] - lr * g[at] / root[r];)                              \
    }

/* ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon);
 * var -= mom.   h: lr, rho, momentum, epsilon */
#define RMSPROP_LOOP(name, TARGET, ISA, T, SQRT)                                            \
    TARGET static void name(const apply_job *j, int64_t begin, int64_t end)                 \
    {                                                                                       \
        const T *var = j->old[0], *ms = j->old[1], *mom = j->old[2], *g = j->grad;          \
        T *var_out = j->out[0], *ms_out = j->out[1], *mom_out = j->out[2];                  \
        const T lr = (T)j->h[0], one_minus_rho = (T)1 - (T)j->h[1], momentum = (T)j->h[2],  \
                epsilon = (T)j->h[3];                                                       \
        BLOCKED(T, SQRT, ISA,                                                                  \
                const T s = ms[at] + (g[at] * g[at] - ms[at]) * one_minus_rho;              \
                ms_out[at] = s;                                                             \
                root[r] = s + epsilon;,                                                     \
                const T m = mom[at] * momentum + lr * g[at] / root[r];                      \
                mom_out[at] = m;                                                            \
                var_out[at] = var[at] - m;)                                                 \
    }

/* alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1);
 * v += (grad^2 - v) * (1 - beta2); var -= alpha * m / (sqrt(v) + epsilon) (Nesterov: m * beta1 +
 * grad * (1 - beta1) instead of m).   h: beta1_power, beta2_power, lr, beta1, beta2, epsilon */
#define ADAM_LOOP(name, TARGET, ISA, T, SQRT, NESTEROV)                                     \
    TARGET static void name(const apply_job *j, int64_t begin, int64_t end)                 \
    {                                                                                       \
        const T *var = j->old[0], *m = j->old[1], *v = j->old[2], *g = j->grad;             \
        T *var_out = j->out[0], *m_out = j->out[1], *v_out = j->out[2];                     \
        const T beta1_power = (T)j->h[0], beta2_power = (T)j->h[1], lr = (T)j->h[2],        \
                beta1 = (T)j->h[3], beta2 = (T)j->h[4], epsilon = (T)j->h[5];               \
        const T alpha = lr * (T)sqrt((T)1 - beta2_power) / ((T)1 - beta1_power);            \
        const T one_minus_beta1 = (T)1 - beta1, one_minus_beta2 = (T)1 - beta2;             \
        BLOCKED(T, SQRT, ISA,                                                                  \
                m_out[at] = m[at] + (g[at] - m[at]) * one_minus_beta1;                      \
                const T vi = v[at] + (g[at] * g[at] - v[at]) * one_minus_beta2;             \
                v_out[at] = vi;                                                             \
                root[r] = vi;,                                                              \
                const T step = NESTEROV ? m_out[at] * beta1 + g[at] * one_minus_beta1       \
                                        : m_out[at];                                        \
                var_out[at] = var[at] - alpha * step / (root[r] + epsilon);)                \
    }

/* Each loop in the portable and AVX2 variants of cpu_util.h, and its dispatcher under the plain
 * name. Not AVX-512: on Zen 4 its Adam loop was slower than the portable one once the arrays
 * outgrow the L2 cache (1M and 3.2M elements: 0.77 and 0.90 ns per element against 0.62 and 0.68;
 * AVX2 0.35 and 0.54), as in the CNN's step (3.3M parameters), though faster within L2. */
#define APPLY_LOOP(name, LOOP, ...)                                                         \
    TIDE_ISA_VARIANTS_TO_AVX2(LOOP, name, __VA_ARGS__)                                      \
    static void name(const apply_job *j, int64_t begin, int64_t end)                        \
    {                                                                                       \
        TIDE_ISA_DISPATCH_TO_AVX2(name, j, begin, end);                                     \
    }
APPLY_LOOP(gradient_descent_f32, GRADIENT_DESCENT_LOOP, float)
APPLY_LOOP(gradient_descent_f64, GRADIENT_DESCENT_LOOP, double)
APPLY_LOOP(momentum_f32, MOMENTUM_LOOP, float, 0)
APPLY_LOOP(momentum_f64, MOMENTUM_LOOP, double, 0)
APPLY_LOOP(momentum_nesterov_f32, MOMENTUM_LOOP, float, 1)
APPLY_LOOP(momentum_nesterov_f64, MOMENTUM_LOOP, double, 1)
APPLY_LOOP(adagrad_f32, ADAGRAD_LOOP, float, tide_sqrt_f32, 0)
APPLY_LOOP(adagrad_f64, ADAGRAD_LOOP, double, tide_sqrt_f64, 0)
APPLY_LOOP(adagrad_frozen_f32, ADAGRAD_LOOP, float, tide_sqrt_f32, 1)
APPLY_LOOP(adagrad_frozen_f64, ADAGRAD_LOOP, double, tide_sqrt_f64, 1)
APPLY_LOOP(rmsprop_f32, RMSPROP_LOOP, float, tide_sqrt_f32)
APPLY_LOOP(rmsprop_f64, RMSPROP_LOOP, double, tide_sqrt_f64)
APPLY_LOOP(adam_f32, ADAM_LOOP, float, tide_sqrt_f32, 0)
APPLY_LOOP(adam_f64, ADAM_LOOP, double, tide_sqrt_f64, 0)
APPLY_LOOP(adam_nesterov_f32, ADAM_LOOP, float, tide_sqrt_f32, 1)
APPLY_LOOP(adam_nesterov_f64, ADAM_LOOP, double, tide_sqrt_f64, 1)

/* ---------------------------------------------------------------- the ops */

/* An update op: its inputs as in training_ops.c ([0, num_refs) the variable and its slots, `grad`
 * the gradient, the others scalars), its loops by dtype, the variant's loops chosen by the bool
 * attr `variant` when it differs from its default (use_nesterov true for Momentum and Adam,
 * update_slots false for Adagrad), and its cost. */
typedef struct apply_kind {
    const char *op;
    int num_inputs, num_refs, grad;
    const char *names[10];
    apply_loop f32, f64, variant_f32, variant_f64;
    const char *variant;
    bool variant_default;
    double ns_per_element;
} apply_kind;

static const apply_kind KINDS[] = {
    {"ApplyGradientDescent", 3, 1, 2, {"var", "alpha", "delta"},
     gradient_descent_f32, gradient_descent_f64, NULL, NULL, NULL, false, 0.5},
    {"ApplyMomentum", 5, 2, 3, {"var", "accum", "lr", "grad", "momentum"},
     momentum_f32, momentum_f64, momentum_nesterov_f32, momentum_nesterov_f64, "use_nesterov", false, 1.0},
    {"ApplyAdagrad", 4, 2, 3, {"var", "accum", "lr", "grad"}, adagrad_f32, adagrad_f64,
     adagrad_frozen_f32, adagrad_frozen_f64, "update_slots", true, 2.0},
    {"ApplyRMSProp", 8, 3, 7, {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"},
     rmsprop_f32, rmsprop_f64, NULL, NULL, NULL, false, 3.0},
    {"ApplyAdam", 10, 3, 9,
     {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"},
     adam_f32, adam_f64, adam_nesterov_f32, adam_nesterov_f64, "use_nesterov", false, 4.0},
};
#define NUM_KINDS (sizeof KINDS / sizeof KINDS[0])

/* Per node: the op and the loop chosen by dtype and the variant attr. */
typedef struct apply_state {
    const apply_kind *kind;
    apply_loop loop;
} apply_state;

static tide_status apply_init(tide_kernel_ctx *ctx, void **state)
{
    const apply_kind *kind = NULL;
    for (size_t i = 0; i < NUM_KINDS; i++)
        if (strcmp(KINDS[i].op, tide_kernel_op_name(ctx)) == 0)
            kind = &KINDS[i];
    tide_dtype dt = tide_kernel_input_dtype(ctx, 0);
    if (!kind || (dt != TIDE_FLOAT32 && dt != TIDE_FLOAT64))
        return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no cpu kernel for dtype %s",
                                 tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    bool variant = kind->variant_default;
    if (kind->variant)
        tide_attrs_get_bool(tide_kernel_attrs(ctx), kind->variant, &variant);
    apply_state *s = malloc(sizeof *s);
    if (!s)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    s->kind = kind;
    if (variant != kind->variant_default)
        s->loop = dt == TIDE_FLOAT32 ? kind->variant_f32 : kind->variant_f64;
    else
        s->loop = dt == TIDE_FLOAT32 ? kind->f32 : kind->f64;
    *state = s;
    return TIDE_OK;
}

/* The variables of one update, their current values and what the loop writes. */
typedef struct apply_vars {
    int n;
    tide_variable *var[MAX_REFS];
    tide_tensor *cur[MAX_REFS]; /* current values (borrowed from the variables, lock held) */
    tide_tensor *out[MAX_REFS]; /* new tensors (copy on write; owned) or NULL (in place) */
} apply_vars;

/* Finds the variables behind the Ref inputs; they must be distinct (one lock each). */
static tide_status find_variables(tide_kernel_ctx *ctx, const apply_kind *kind, apply_vars *vs)
{
    vs->n = kind->num_refs;
    for (int k = 0; k < vs->n; k++) {
        vs->var[k] = tide_kernel_input_variable(ctx, k);
        if (!vs->var[k])
            return tide_kernel_status(ctx);
        for (int other = 0; other < k; other++)
            if (vs->var[other] == vs->var[k])
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                         "%s and %s are the same variable '%s': they must be different",
                                         kind->names[other], kind->names[k], tide_variable_name(vs->var[k]));
    }
    return TIDE_OK;
}

/* Checks the scalars and copies them into job->h in input order. */
static tide_status read_scalars(tide_kernel_ctx *ctx, const apply_kind *kind, apply_job *job)
{
    int h = 0;
    for (int i = kind->num_refs; i < kind->num_inputs; i++) {
        if (i == kind->grad)
            continue;
        const tide_tensor *t = tide_kernel_input(ctx, i);
        if (tide_tensor_rank(t) != 0) {
            char s[TIDE_SHAPE_STR_MAX];
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s",
                                     kind->names[i], tide_shape_format(tide_tensor_shape(t), s, sizeof s));
        }
        job->h[h++] = tide_tensor_get_f64(t, 0);
    }
    return TIDE_OK;
}

/* Locks the variables in address order (every update takes them in the same order). */
static void lock_all(apply_vars *vs, bool lock)
{
    int order[MAX_REFS];
    for (int k = 0; k < vs->n; k++) {
        int at = k;
        while (at > 0 && (uintptr_t)vs->var[order[at - 1]] > (uintptr_t)vs->var[k]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = k;
    }
    for (int k = 0; k < vs->n; k++) {
        if (lock)
            tide_variable_lock(vs->var[order[k]]);
        else
            tide_variable_unlock(vs->var[order[vs->n - 1 - k]]);
    }
}

/* With the locks held: every variable is initialised and has the gradient's shape. */
static tide_status check_values(tide_kernel_ctx *ctx, const apply_kind *kind, apply_vars *vs,
                                const tide_tensor *grad)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    for (int k = 0; k < vs->n; k++) {
        vs->cur[k] = tide_variable_value(vs->var[k]);
        if (!vs->cur[k])
            return tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                                     "variable '%s' (%s) is uninitialized: run its initializer first",
                                     tide_variable_name(vs->var[k]), kind->names[k]);
        if (!tide_tensor_is_host_visible(vs->cur[k]) && !tide_device_can_read(tide_kernel_device(ctx), vs->cur[k])) {
            char there[64], here[64];
            const char *held = tide_tensor_device_name(vs->cur[k]);
            const tide_device *d = tide_kernel_device(ctx);
            tide_device_short_name(held ? held : "host", there, sizeof there);
            tide_device_short_name(d ? tide_device_name(d) : "host", here, sizeof here);
            return tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                                     "variable '%s' (%s) holds its value in the memory of %s, not of %s where this "
                                     "update runs: run it where the variable's other updates run (or assign the "
                                     "variable on %s first)", tide_variable_name(vs->var[k]), kind->names[k], there,
                                     here, here);
        }
        if (!tide_shape_equal(tide_tensor_shape(vs->cur[k]), tide_tensor_shape(grad)))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "%s of shape %s does not match variable '%s' (%s) of shape %s",
                                     kind->names[kind->grad],
                                     tide_shape_format(tide_tensor_shape(grad), a, sizeof a),
                                     tide_variable_name(vs->var[k]), kind->names[k],
                                     tide_shape_format(tide_tensor_shape(vs->cur[k]), b, sizeof b));
    }
    return TIDE_OK;
}

/* Where the loop writes: in place into a tensor only the variable holds, else into a new one. */
static tide_status prepare_outputs(tide_kernel_ctx *ctx, apply_vars *vs, apply_job *job)
{
    for (int k = 0; k < vs->n; k++) {
        tide_tensor *cur = vs->cur[k];
        job->old[k] = tide_tensor_data(cur);
        if (tide_tensor_is_exclusive(cur)) {
            job->out[k] = tide_tensor_data(cur);
            continue;
        }
        tide_error *err = tide_error_new();
        vs->out[k] = tide_tensor_new(tide_tensor_dtype(cur), tide_tensor_shape(cur), err);
        if (!vs->out[k]) {
            tide_status st = tide_kernel_error(ctx, tide_error_code(err), "copy on write of variable '%s': %s",
                                               tide_variable_name(vs->var[k]), tide_error_message(err));
            tide_error_free(err);
            return st;
        }
        tide_error_free(err);
        job->out[k] = tide_tensor_data(vs->out[k]);
    }
    return TIDE_OK;
}

static void run_chunk(int64_t begin, int64_t end, void *arg)
{
    const apply_job *j = arg;
    j->loop(j, begin, end);
}

/* After the loop: the new tensors replace the old values; output 0 is the variable's value. */
static void commit(tide_kernel_ctx *ctx, apply_vars *vs)
{
    for (int k = 0; k < vs->n; k++)
        if (vs->out[k])
            tide_variable_set_value(vs->var[k], vs->out[k]);
    tide_kernel_set_output(ctx, 0, tide_variable_value(vs->var[0]));
}

static tide_status apply_compute(tide_kernel_ctx *ctx)
{
    const apply_state *state = tide_kernel_state(ctx);
    const apply_kind *kind = state->kind;
    if (tide_kernel_num_inputs(ctx) != kind->num_inputs)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "expects %d inputs, got %d", kind->num_inputs,
                                 tide_kernel_num_inputs(ctx));
    apply_vars vs = {0};
    apply_job job = {.loop = state->loop};
    tide_tensor *grad = tide_kernel_input(ctx, kind->grad);
    job.grad = tide_tensor_data(grad);
    if (find_variables(ctx, kind, &vs) != TIDE_OK || read_scalars(ctx, kind, &job) != TIDE_OK)
        return tide_kernel_status(ctx);
    lock_all(&vs, true);
    tide_status st = check_values(ctx, kind, &vs, grad);
    if (st == TIDE_OK)
        st = prepare_outputs(ctx, &vs, &job);
    if (st == TIDE_OK) {
        tide_kernel_parallel_for(ctx, tide_tensor_num_elements(grad), kind->ns_per_element, run_chunk, &job);
        commit(ctx, &vs);
    }
    lock_all(&vs, false);
    for (int k = 0; k < vs.n; k++)
        tide_tensor_release(vs.out[k]);
    return st == TIDE_OK ? tide_kernel_status(ctx) : st;
}

static void register_training_kernels(void)
{
    for (size_t i = 0; i < NUM_KINDS; i++)
        tide_kernel_register(&(tide_kernel_spec){.op = KINDS[i].op, .device_type = "cpu",
                                                  .init = apply_init, .destroy = free,
                                                  .compute = apply_compute});
}
TIDE_REGISTER(register_training_kernels)
