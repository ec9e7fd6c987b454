/* training.cu — the fused optimizer updates on the GPU, ApplyGradientDescent and ApplyAdam (one
 * kernel pass over the variable and its slots, with the CPU's formulas, kernels/cpu/training.c),
 * Assign (every dtype of 1, 2, 4 or 8 bytes: a copy), and AssignAdd / AssignSub (float32, float16,
 * bfloat16, int32, int64: kernels/cpu/state.c's arithmetic; never run on a GPU). The hyper-parameters are scalars in GPU memory that the kernel reads itself: nothing waits
 * for the host. As on the CPU, an update writes in place into a value only its variable holds, else
 * into a new tensor that replaces it (copy on write: a fetched value is never changed under its
 * reader), with the variables locked in address order. */
#include <cmath>

#include "common.cuh"
#include "half.h"

#define MAX_REFS 3

__global__ void gradient_descent(float *var_out, const float *var, const float *alpha, const float *delta, int64_t n)
{
    float a = *alpha;
    CUDA_FOR(i, n) var_out[i] = var[i] - a * delta[i];
}

/* The arrays of one Adam update (passed by value: a struct's arrays travel as kernel parameters).
 * out and old: var, m, v; h: beta1_power, beta2_power, lr, beta1, beta2, epsilon (device scalars). */
struct adam_args {
    float *out[3];
    const float *old[3];
    const float *h[6];
};

__global__ void adam(adam_args a, const float *g, int64_t n, bool nesterov)
{
    const float beta1_power = *a.h[0], beta2_power = *a.h[1], lr = *a.h[2], beta1 = *a.h[3], beta2 = *a.h[4],
                epsilon = *a.h[5];
    const float alpha = lr * (float)sqrt((double)(1.0f - beta2_power)) / (1.0f - beta1_power);
    const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;
    CUDA_FOR(i, n) {
        float m = a.old[1][i] + (g[i] - a.old[1][i]) * one_minus_beta1;
        float v = a.old[2][i] + (g[i] * g[i] - a.old[2][i]) * one_minus_beta2;
        a.out[1][i] = m;
        a.out[2][i] = v;
        float step = nesterov ? m * beta1 + g[i] * one_minus_beta1 : m;
        a.out[0][i] = a.old[0][i] - alpha * step / (sqrtf(v) + epsilon);
    }
}

/* The variables of one update, locked; values current and checked; where the update writes. */
typedef struct update {
    int n;
    tide_variable *var[MAX_REFS];
    tide_tensor *cur[MAX_REFS];
    tide_tensor *fresh[MAX_REFS]; /* copy on write, or NULL (in place) */
    bool locked;
} update;

static const char *const adam_names[] = {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                                         "epsilon", "grad"};
static const char *const gd_names[] = {"var", "alpha", "delta"};

static void lock_all(update *u, bool lock)
{
    int order[MAX_REFS];
    for (int k = 0; k < u->n; k++) {
        int at = k;
        while (at > 0 && (uintptr_t)u->var[order[at - 1]] > (uintptr_t)u->var[k]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = k;
    }
    for (int k = 0; k < u->n; k++) {
        if (lock)
            tide_variable_lock(u->var[order[k]]);
        else
            tide_variable_unlock(u->var[order[u->n - 1 - k]]);
    }
    u->locked = lock;
}

/* Finds, locks and checks the n Ref inputs against grad; prepares where to write. */
static tide_status begin_update(tide_kernel_ctx *ctx, update *u, int n, const char *const *names,
                                const tide_tensor *grad, const char *grad_name)
{
    u->n = n;
    for (int k = 0; k < n; k++) {
        u->var[k] = tide_kernel_input_variable(ctx, k);
        if (!u->var[k])
            return tide_kernel_status(ctx);
        for (int o = 0; o < k; o++)
            if (u->var[o] == u->var[k])
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s and %s are the same variable '%s': they "
                                         "must be different", names[o], names[k], tide_variable_name(u->var[k]));
    }
    lock_all(u, true);
    for (int k = 0; k < n; k++) {
        u->cur[k] = tide_variable_value(u->var[k]);
        if (!u->cur[k])
            return tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION, "variable '%s' (%s) is uninitialized: run its "
                                     "initializer first", tide_variable_name(u->var[k]), names[k]);
        char a[TIDE_SHAPE_STR_MAX];
        if (tide_tensor_num_elements(u->cur[k]) != tide_tensor_num_elements(grad) ||
            tide_tensor_shape(u->cur[k])->rank != tide_tensor_shape(grad)->rank)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s of shape %s does not match variable '%s' (%s) "
                                     "of shape %s", grad_name, tide_shape_format(tide_tensor_shape(grad), a, sizeof a),
                                     tide_variable_name(u->var[k]), names[k], cuda_shape_str(tide_tensor_shape(u->cur[k])));
        if (!tide_tensor_device_pointer(u->cur[k]))
            return tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION, "variable '%s' (%s) holds a value in host memory: "
                                     "initialise it on the GPU", tide_variable_name(u->var[k]), names[k]);
        if (!tide_tensor_is_exclusive(u->cur[k])) {
            u->fresh[k] = tide_cuda_api->alloc_temp(ctx, TIDE_FLOAT32, tide_tensor_shape(u->cur[k]));
            if (!u->fresh[k])
                return tide_kernel_status(ctx);
        }
    }
    return TIDE_OK;
}

static float *out_of(const update *u, int k) { return fptr(u->fresh[k] ? u->fresh[k] : u->cur[k]); }

/* Commits (when st is TIDE_OK), unlocks, releases. */
static tide_status end_update(tide_kernel_ctx *ctx, update *u, tide_status st)
{
    if (st == TIDE_OK) {
        for (int k = 0; k < u->n; k++)
            if (u->fresh[k])
                tide_variable_set_value(u->var[k], u->fresh[k]);
        tide_kernel_set_output(ctx, 0, tide_variable_value(u->var[0]));
    }
    if (u->locked)
        lock_all(u, false);
    for (int k = 0; k < u->n; k++)
        if (u->fresh[k])
            tide_tensor_release(u->fresh[k]);
    return st == TIDE_OK ? tide_kernel_status(ctx) : st;
}

/* Each of the inputs [from, to) except skip must be a float32 scalar. */
static tide_status check_scalars(tide_kernel_ctx *ctx, int from, int to, int skip, const char *const *names)
{
    for (int i = from; i < to; i++) {
        const tide_tensor *t = tide_kernel_input(ctx, i);
        if (i != skip && tide_tensor_shape(t)->rank != 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s", names[i],
                                     cuda_shape_str(tide_tensor_shape(t)));
    }
    return TIDE_OK;
}

extern "C" tide_status cuda_apply_gradient_descent(tide_kernel_ctx *ctx, void *)
{
    if (check_scalars(ctx, 1, 2, -1, gd_names) != TIDE_OK)
        return tide_kernel_status(ctx);
    const tide_tensor *delta = tide_kernel_input(ctx, 2);
    update u = {};
    tide_status st = begin_update(ctx, &u, 1, gd_names, delta, "delta");
    cudaStream_t s = st == TIDE_OK ? cuda_begin(ctx) : NULL;
    if (s) {
        int64_t n = tide_tensor_num_elements(delta);
        if (n > 0)
            gradient_descent<<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, s>>>(out_of(&u, 0), fptr(u.cur[0]),
                                                                          fptr(tide_kernel_input(ctx, 1)), fptr(delta), n);
        st = cuda_launched(ctx, "ApplyGradientDescent's kernel");
    }
    return end_update(ctx, &u, s ? st : tide_kernel_status(ctx));
}

extern "C" tide_status cuda_apply_adam(tide_kernel_ctx *ctx, void *)
{
    if (check_scalars(ctx, 3, 9, -1, adam_names) != TIDE_OK)
        return tide_kernel_status(ctx);
    bool nesterov = false;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "use_nesterov", &nesterov);
    const tide_tensor *grad = tide_kernel_input(ctx, 9);
    update u = {};
    tide_status st = begin_update(ctx, &u, 3, adam_names, grad, "grad");
    cudaStream_t s = st == TIDE_OK ? cuda_begin(ctx) : NULL;
    if (s) {
        adam_args a;
        for (int k = 0; k < 3; k++) {
            a.out[k] = out_of(&u, k);
            a.old[k] = fptr(u.cur[k]);
        }
        for (int i = 0; i < 6; i++)
            a.h[i] = fptr(tide_kernel_input(ctx, 3 + i));
        int64_t n = tide_tensor_num_elements(grad);
        if (n > 0)
            adam<<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, s>>>(a, fptr(grad), n, nesterov);
        st = cuda_launched(ctx, "ApplyAdam's kernel");
    }
    return end_update(ctx, &u, s ? st : tide_kernel_status(ctx));
}

/* Assign: the variable takes value's contents (in place when only it holds its current value and the
 * shapes agree, else value itself when nobody else holds it, else a copy). */
extern "C" tide_status cuda_assign(tide_kernel_ctx *ctx, void *)
{
    tide_variable *v = tide_kernel_assigned_variable(ctx, 0);
    if (!v)
        return tide_kernel_status(ctx);
    tide_tensor *value = tide_kernel_input(ctx, 1);
    bool validate = true;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "validate_shape", &validate);
    tide_variable_lock(v);
    tide_shape declared = tide_variable_shape(v);
    bool fits = declared.rank < 0 || declared.rank == tide_tensor_shape(value)->rank;
    for (int k = 0; fits && declared.rank > 0 && k < declared.rank; k++)
        fits = declared.dims[k] < 0 || declared.dims[k] == tide_tensor_shape(value)->dims[k];
    if (validate && !fits) {
        tide_variable_unlock(v);
        char a[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot assign a value of shape %s to variable '%s' of "
                                 "shape %s", tide_shape_format(tide_tensor_shape(value), a, sizeof a),
                                 tide_variable_name(v), cuda_shape_str(&declared));
    }
    tide_tensor *cur = tide_variable_value(v), *copy = NULL;
    cudaStream_t s = cuda_begin(ctx);
    tide_status st = s ? TIDE_OK : tide_kernel_status(ctx);
    size_t bytes = tide_tensor_byte_size(value);
    bool same = cur && tide_tensor_device_pointer(cur) && tide_tensor_is_exclusive(cur) &&
                tide_tensor_dtype(cur) == tide_tensor_dtype(value) && tide_tensor_byte_size(cur) == bytes &&
                tide_tensor_shape(cur)->rank == tide_tensor_shape(value)->rank;
    for (int k = 0; same && k < tide_tensor_shape(value)->rank; k++)
        same = tide_tensor_shape(cur)->dims[k] == tide_tensor_shape(value)->dims[k];
    if (st == TIDE_OK && same) {
        st = cuda_check(ctx, cudaMemcpyAsync(tide_tensor_device_pointer(cur), tide_tensor_device_pointer(value), bytes,
                                             cudaMemcpyDeviceToDevice, s), "Assign's copy");
    } else if (st == TIDE_OK && tide_tensor_is_exclusive(value)) {
        tide_variable_set_value(v, value);
    } else if (st == TIDE_OK) {
        copy = tide_cuda_api->alloc_temp(ctx, tide_tensor_dtype(value), tide_tensor_shape(value));
        st = copy ? cuda_check(ctx, cudaMemcpyAsync(tide_tensor_device_pointer(copy), tide_tensor_device_pointer(value),
                                                    bytes, cudaMemcpyDeviceToDevice, s), "Assign's copy")
                  : tide_kernel_status(ctx);
        if (st == TIDE_OK)
            tide_variable_set_value(v, copy);
    }
    if (st == TIDE_OK)
        tide_kernel_set_output(ctx, 0, tide_variable_value(v));
    tide_variable_unlock(v);
    if (copy)
        tide_tensor_release(copy);
    return st;
}

/* ---------------------------------------------------------------- AssignAdd, AssignSub */

/* out = a + b or a - b element-wise in T's arithmetic: halves computed in float32 and rounded back (the
 * CPU's UPDATE_HALF), integers wrapping (through their unsigned type, as two's complement). */
template <class T> struct update_math {
    __device__ static T apply(T a, T b, bool add)
    {
        typedef typename io<T>::value V;
        V x = io<T>::load(a), y = io<T>::load(b);
        return io<T>::store(add ? x + y : x - y);
    }
};
template <> struct update_math<int32_t> {
    __device__ static int32_t apply(int32_t a, int32_t b, bool add)
    {
        return (int32_t)(add ? (uint32_t)a + (uint32_t)b : (uint32_t)a - (uint32_t)b);
    }
};
template <> struct update_math<int64_t> {
    __device__ static int64_t apply(int64_t a, int64_t b, bool add)
    {
        return (int64_t)(add ? (uint64_t)a + (uint64_t)b : (uint64_t)a - (uint64_t)b);
    }
};

template <class T> __global__ void update_kernel(T *out, const T *a, const T *b, int64_t n, bool add)
{
    CUDA_FOR(i, n) out[i] = update_math<T>::apply(a[i], b[i], add);
}

template <class T> static void launch_update(void *out, const void *a, const void *b, int64_t n, bool add, cudaStream_t s)
{
    update_kernel<T><<<cuda_blocks(n), TIDE_CUDA_THREADS, 0, s>>>((T *)out, (const T *)a, (const T *)b, n, add);
}

/* The variable += or -= value, in place when only the variable holds its value (else into a new tensor
 * that replaces it: copy on write, as on the CPU); the output is the new value. */
static tide_status assign_update(tide_kernel_ctx *ctx, bool add)
{
    tide_variable *v = tide_kernel_input_variable(ctx, 0);
    if (!v)
        return tide_kernel_status(ctx);
    const tide_tensor *delta = tide_kernel_input(ctx, 1);
    tide_variable_lock(v);
    tide_tensor *cur = tide_variable_value(v), *fresh = NULL;
    tide_status st = TIDE_OK;
    const tide_shape *cs = cur ? tide_tensor_shape(cur) : NULL, *ds = tide_tensor_shape(delta);
    bool same = cs && cs->rank == ds->rank;
    for (int k = 0; same && k < ds->rank; k++)
        same = cs->dims[k] == ds->dims[k];
    cudaStream_t s = NULL;
    if (!cur) {
        st = tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION, "variable '%s' is uninitialized: run its initializer first",
                               tide_variable_name(v));
    } else if (!same) {
        char a[TIDE_SHAPE_STR_MAX];
        st = tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "update of shape %s does not match variable '%s' of shape %s",
                               tide_shape_format(ds, a, sizeof a), tide_variable_name(v), cuda_shape_str(cs));
    } else if (!tide_tensor_device_pointer(cur)) {
        st = tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION, "variable '%s' holds a value in host memory: initialise it "
                               "on the GPU", tide_variable_name(v));
    } else if (!(s = cuda_begin(ctx))) {
        st = tide_kernel_status(ctx);
    } else if (!tide_tensor_is_exclusive(cur) && !(fresh = tide_cuda_api->alloc_temp(ctx, tide_tensor_dtype(cur), cs))) {
        st = tide_kernel_status(ctx);
    }
    int64_t n = cur ? tide_tensor_num_elements(cur) : 0;
    if (st == TIDE_OK && n > 0) {
        void *out = tide_tensor_device_pointer(fresh ? fresh : cur);
        const void *a = tide_tensor_device_pointer(cur), *b = tide_tensor_device_pointer(delta);
        switch (tide_tensor_dtype(cur)) {
        case TIDE_FLOAT32: launch_update<float>(out, a, b, n, add, s); break;
        case TIDE_FLOAT16: launch_update<f16>(out, a, b, n, add, s); break;
        case TIDE_BFLOAT16: launch_update<bf16>(out, a, b, n, add, s); break;
        case TIDE_INT32: launch_update<int32_t>(out, a, b, n, add, s); break;
        case TIDE_INT64: launch_update<int64_t>(out, a, b, n, add, s); break;
        default:
            st = tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "no GPU update for %s variables",
                                   tide_dtype_name(tide_tensor_dtype(cur)));
        }
        if (st == TIDE_OK)
            st = cuda_launched(ctx, add ? "AssignAdd's kernel" : "AssignSub's kernel");
    }
    if (st == TIDE_OK && fresh)
        tide_variable_set_value(v, fresh);
    if (st == TIDE_OK)
        tide_kernel_set_output(ctx, 0, tide_variable_value(v));
    tide_variable_unlock(v);
    if (fresh)
        tide_tensor_release(fresh);
    return st;
}

extern "C" tide_status cuda_assign_add(tide_kernel_ctx *ctx, void *) { return assign_update(ctx, true); }
extern "C" tide_status cuda_assign_sub(tide_kernel_ctx *ctx, void *) { return assign_update(ctx, false); }
