/* state.c — CPU kernels of variables: Variable (read), Assign, AssignAdd, AssignSub. Updates write in
 * place when the variable is the only holder of its tensor; otherwise they build a new tensor, so a
 * value handed out earlier never changes under its reader.
 *
 * Variables are shared by name across an engine's graphs, so a kernel may meet a value that another
 * device's kernel left in that device's memory (a /sim:0 Assign, then a /cpu:0 one). Such a value is
 * never touched directly: a read gets a copy on the kernel's device (through the device interface), an
 * AssignAdd/AssignSub first moves the value there, and an Assign replaces it. The simulated device
 * runs these same kernels on its own threads, where its memory is in reach (docs/devices.md). */
#include <string.h>

#include "../../engine/tide_device.h"
#include "../../engine/tide_op.h"

/* Is t where this kernel's device reads it (host memory for the CPU, its own memory for a device)? A
 * value elsewhere is read through a copy and moved before being written, so that it follows the
 * device of the kernels that write it. */
static bool within_reach(tide_kernel_ctx *ctx, const tide_tensor *t)
{
    return tide_device_can_read(tide_kernel_device(ctx), t);
}

/* A copy of cur (v's value, out of reach) on this kernel's device, with v's lock (held on entry and on
 * return) dropped meanwhile: the copy waits for the work queued on cur's device, which may itself wait
 * for v. cur gets one more reference, for the caller to release. NULL with the kernel's error set. */
static tide_tensor *copy_within_reach(tide_kernel_ctx *ctx, tide_variable *v, tide_tensor *cur)
{
    tide_device *here = tide_kernel_device(ctx);
    tide_tensor_retain(cur);
    tide_variable_unlock(v);
    tide_error *err = tide_error_new();
    tide_tensor *copy = tide_tensor_copy_to_device(cur, here, err);
    if (!copy) {
        char from[64], to[64];
        const char *there = tide_tensor_device_name(cur);
        tide_device_short_name(there ? there : "host", from, sizeof from);
        tide_device_short_name(here ? tide_device_name(here) : "host", to, sizeof to);
        tide_kernel_error(ctx, tide_error_code(err), "variable '%s' holds its value in the memory of %s; copying it "
                          "to %s, where this node runs, failed: %s", tide_variable_name(v), from, to,
                          tide_error_message(err));
    }
    tide_error_free(err);
    tide_variable_lock(v);
    return copy;
}

/* With v locked: when v's value lies out of this kernel's reach, replaces it by a copy on the kernel's
 * device (again if another kernel replaced it while the copy ran). */
static tide_status move_value_within_reach(tide_kernel_ctx *ctx, tide_variable *v)
{
    tide_tensor *cur;
    while ((cur = tide_variable_value(v)) && !within_reach(ctx, cur)) {
        tide_tensor *copy = copy_within_reach(ctx, v, cur);
        bool unchanged = tide_variable_value(v) == cur;
        tide_tensor_release(cur);
        if (!copy)
            return tide_kernel_status(ctx);
        if (unchanged)
            tide_variable_set_value(v, copy);
        tide_tensor_release(copy);
    }
    return TIDE_OK;
}

/* A Variable hands out its value only when it agrees with what the node declares: the value may have
 * been left by another graph's declaration of the same name (another shape after the REPL's :reset). */
static tide_status variable_compute(tide_kernel_ctx *ctx)
{
    tide_variable *v = tide_kernel_own_variable(ctx);
    if (!v)
        return tide_kernel_status(ctx);
    tide_shape declared = tide_shape_unknown();
    tide_dtype dtype = TIDE_INVALID_DTYPE;
    tide_attrs_get_shape(tide_kernel_attrs(ctx), "shape", &declared);
    tide_attrs_get_type(tide_kernel_attrs(ctx), "dtype", &dtype);
    tide_variable_lock(v);
    tide_tensor *value = tide_variable_value(v);
    tide_shape held = value ? *tide_tensor_shape(value) : declared;
    tide_dtype held_dtype = value ? tide_tensor_dtype(value) : dtype;
    bool agrees = value && held_dtype == dtype && tide_shape_compatible(&declared, &held);
    if (agrees && !within_reach(ctx, value)) { /* another device's: this read gets a copy */
        tide_tensor *copy = copy_within_reach(ctx, v, value);
        tide_tensor_release(value);
        tide_variable_unlock(v);
        if (!copy)
            return tide_kernel_status(ctx);
        tide_kernel_set_output(ctx, 0, copy);
        tide_tensor_release(copy);
        return TIDE_OK;
    }
    if (agrees)
        tide_kernel_set_output(ctx, 0, value);
    tide_variable_unlock(v);
    if (!value)
        return tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                                 "variable '%s' is uninitialized: run its initializer (an Assign) first",
                                 tide_variable_name(v));
    if (!agrees) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                                 "variable '%s' holds a %s value of shape %s, but this node declares %s %s (the "
                                 "value was left by another declaration of the name): run its initializer to "
                                 "replace it", tide_variable_name(v), tide_dtype_name(held_dtype),
                                 tide_shape_format(&held, a, sizeof a), tide_dtype_name(dtype),
                                 tide_shape_format(&declared, b, sizeof b));
    }
    return TIDE_OK;
}

static tide_status assign_compute(tide_kernel_ctx *ctx)
{
    tide_variable *v = tide_kernel_assigned_variable(ctx, 0);
    if (!v)
        return tide_kernel_status(ctx);
    tide_tensor *value = tide_kernel_input(ctx, 1);
    bool validate = true;
    tide_attrs_get_bool(tide_kernel_attrs(ctx), "validate_shape", &validate);
    tide_variable_lock(v);
    tide_shape declared = tide_variable_shape(v);
    tide_variable_unlock(v);
    if (validate && !tide_shape_compatible(&declared, tide_tensor_shape(value))) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "cannot assign a value of shape %s to variable '%s' of shape %s",
                                 tide_shape_format(tide_tensor_shape(value), a, sizeof a),
                                 tide_variable_name(v), tide_shape_format(&declared, b, sizeof b));
    }
    tide_variable_lock(v);
    tide_tensor *cur = tide_variable_value(v);
    tide_status st = TIDE_OK;
    if (cur && within_reach(ctx, cur) && tide_tensor_dtype(value) != TIDE_STRING && tide_tensor_is_exclusive(cur) &&
        tide_tensor_dtype(cur) == tide_tensor_dtype(value) &&
        tide_shape_equal(tide_tensor_shape(cur), tide_tensor_shape(value))) {
        memcpy(tide_tensor_data(cur), tide_tensor_data(value), tide_tensor_byte_size(value));
    } else if (tide_tensor_is_exclusive(value)) {
        tide_variable_set_value(v, value); /* nobody else holds it: keep it, no copy */
    } else {
        tide_error *err = tide_error_new();
        tide_tensor *copy = tide_tensor_copy(value, err);
        if (copy) {
            tide_variable_set_value(v, copy);
            tide_tensor_release(copy);
        } else {
            st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
        }
        tide_error_free(err);
    }
    if (st == TIDE_OK)
        tide_kernel_set_output(ctx, 0, tide_variable_value(v));
    tide_variable_unlock(v);
    return st;
}

#define UPDATE_LOOP(type, OP)                                           \
    do {                                                                \
        type *d = dst;                                                  \
        const type *s = src;                                            \
        for (int64_t i = 0; i < n; i++)                                 \
            d[i] = (type)(d[i] OP s[i]);                                \
    } while (0)

/* int32 and int64 through their unsigned type: an overflowing update wraps (two's complement) instead of
 * being undefined behaviour (UBSan: "signed integer overflow: 2147483647 + 1"). */
#define UPDATE_WRAP(type, utype, OP)                                    \
    do {                                                                \
        type *d = dst;                                                  \
        const type *s = src;                                            \
        for (int64_t i = 0; i < n; i++)                                 \
            d[i] = (type)((utype)d[i] OP (utype)s[i]);                  \
    } while (0)

#define UPDATE_HALF(TO, FROM, OP)                                       \
    do {                                                                \
        uint16_t *d = dst;                                              \
        const uint16_t *s = src;                                        \
        for (int64_t i = 0; i < n; i++)                                 \
            d[i] = TO(FROM(d[i]) OP FROM(s[i]));                        \
    } while (0)

/* dst op= src elementwise; complex numbers add/subtract part by part. */
static void update(tide_dtype dt, void *dst, const void *src, int64_t n, bool add)
{
    if (dt == TIDE_COMPLEX64) {
        dt = TIDE_FLOAT32;
        n *= 2;
    } else if (dt == TIDE_COMPLEX128) {
        dt = TIDE_FLOAT64;
        n *= 2;
    }
#define BOTH(type)                      \
    if (add)                            \
        UPDATE_LOOP(type, +);           \
    else                                \
        UPDATE_LOOP(type, -);           \
    break;
    switch (dt) {
    case TIDE_FLOAT32: BOTH(float)
    case TIDE_FLOAT64: BOTH(double)
    case TIDE_INT8: BOTH(int8_t)
    case TIDE_INT16: BOTH(int16_t)
    case TIDE_INT32:
        if (add)
            UPDATE_WRAP(int32_t, uint32_t, +);
        else
            UPDATE_WRAP(int32_t, uint32_t, -);
        break;
    case TIDE_INT64:
        if (add)
            UPDATE_WRAP(int64_t, uint64_t, +);
        else
            UPDATE_WRAP(int64_t, uint64_t, -);
        break;
    case TIDE_UINT8: BOTH(uint8_t)
    case TIDE_UINT16: BOTH(uint16_t)
    case TIDE_FLOAT16:
        if (add)
            UPDATE_HALF(tide_f32_to_f16, tide_f16_to_f32, +);
        else
            UPDATE_HALF(tide_f32_to_f16, tide_f16_to_f32, -);
        break;
    case TIDE_BFLOAT16:
        if (add)
            UPDATE_HALF(tide_f32_to_bf16, tide_bf16_to_f32, +);
        else
            UPDATE_HALF(tide_f32_to_bf16, tide_bf16_to_f32, -);
        break;
    default: break;
    }
#undef BOTH
}

static tide_status assign_update(tide_kernel_ctx *ctx, bool add)
{
    tide_variable *v = tide_kernel_input_variable(ctx, 0);
    if (!v)
        return tide_kernel_status(ctx);
    tide_tensor *delta = tide_kernel_input(ctx, 1);
    tide_variable_lock(v);
    tide_status st = move_value_within_reach(ctx, v); /* its elements are then updated in place */
    tide_tensor *cur = tide_variable_value(v);
    if (st != TIDE_OK) {
        /* the kernel's error says why */
    } else if (!cur) {
        st = tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION,
                               "variable '%s' is uninitialized: run its initializer first",
                               tide_variable_name(v));
    } else if (!tide_shape_equal(tide_tensor_shape(cur), tide_tensor_shape(delta))) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        st = tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "update of shape %s does not match variable '%s' of shape %s",
                               tide_shape_format(tide_tensor_shape(delta), a, sizeof a), tide_variable_name(v),
                               tide_shape_format(tide_tensor_shape(cur), b, sizeof b));
    } else {
        if (!tide_tensor_is_exclusive(cur)) { /* someone still reads the old value: copy on write */
            tide_error *err = tide_error_new();
            tide_tensor *copy = tide_tensor_copy(cur, err);
            if (copy) {
                tide_variable_set_value(v, copy);
                tide_tensor_release(copy);
                cur = copy;
            } else {
                st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
            }
            tide_error_free(err);
        }
        if (st == TIDE_OK) {
            update(tide_tensor_dtype(cur), tide_tensor_data(cur), tide_tensor_data(delta),
                   tide_tensor_num_elements(cur), add);
            tide_kernel_set_output(ctx, 0, cur);
        }
    }
    tide_variable_unlock(v);
    return st;
}

static tide_status assign_add_compute(tide_kernel_ctx *ctx) { return assign_update(ctx, true); }
static tide_status assign_sub_compute(tide_kernel_ctx *ctx) { return assign_update(ctx, false); }

static void register_state_kernels(void)
{
    tide_kernel_register(&(tide_kernel_spec){.op = "Variable", .device_type = "cpu",
                                              .compute = variable_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "Assign", .device_type = "cpu",
                                              .compute = assign_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "AssignAdd", .device_type = "cpu",
                                              .compute = assign_add_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "AssignSub", .device_type = "cpu",
                                              .compute = assign_sub_compute});
}
TIDE_REGISTER(register_state_kernels)
