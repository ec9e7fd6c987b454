/* checkpoint_ops.c — the SaveV2 and RestoreV2 ops and their CPU kernels (TensorFlow 1.x's names and
 * inputs): tensors saved to and restored from an .npz file (npz.c) by name. They are registered from
 * this library, not the engine, so that the engine core does not link libzip; the saver (saver.c)
 * references tide__checkpoint_ops_linked so that a program using checkpoints links them. */
#include <stdlib.h>
#include <string.h>

#include "tide_checkpoint.h"
#include "tide_op.h"

void tide__checkpoint_ops_linked(void);
void tide__checkpoint_ops_linked(void) {}

/* PREFIX.npz, or PREFIX when it ends with ".npz" (malloc'd). */
static char *npz_path(const char *prefix, size_t len)
{
    bool has = len >= 4 && memcmp(prefix + len - 4, ".npz", 4) == 0;
    char *path = malloc(len + 5);
    if (path) {
        memcpy(path, prefix, len);
        memcpy(path + len, has ? "" : ".npz", has ? 1 : 5);
    }
    return path;
}

/* Checks prefix, names and slices (one name per tensor, no slices); *path gets the file. */
static tide_status common_inputs(tide_kernel_ctx *ctx, int64_t num_tensors, char **path)
{
    tide_tensor *prefix = tide_kernel_input(ctx, 0), *names = tide_kernel_input(ctx, 1);
    tide_tensor *slices = tide_kernel_input(ctx, 2);
    if (tide_tensor_num_elements(prefix) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "prefix must be one string (the file), not %lld",
                                 (long long)tide_tensor_num_elements(prefix));
    if (tide_tensor_rank(names) != 1 || tide_tensor_num_elements(names) != num_tensors)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "tensor_names must be a vector of %lld names (one per "
                                 "tensor), not %lld", (long long)num_tensors,
                                 (long long)tide_tensor_num_elements(names));
    if (tide_tensor_num_elements(slices) != num_tensors)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "shape_and_slices must have %lld entries, not %lld",
                                 (long long)num_tensors, (long long)tide_tensor_num_elements(slices));
    for (int64_t i = 0; i < num_tensors; i++) {
        size_t len;
        tide_tensor_string_get(slices, i, &len);
        if (len)
            return tide_kernel_error(ctx, TIDE_UNIMPLEMENTED, "shape_and_slices[%lld]: slices are not supported "
                                     "(give \"\" to save or restore whole tensors)", (long long)i);
    }
    size_t len;
    const char *text = tide_tensor_string_get(prefix, 0, &len);
    if (!len)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "prefix is empty");
    *path = npz_path(text, len);
    return *path ? TIDE_OK : tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
}

/* names[i] as NUL-terminated copies (malloc'd array of malloc'd strings), NULL on OOM. */
static char **name_list(const tide_tensor *names, int64_t n)
{
    char **out = calloc((size_t)(n ? n : 1), sizeof *out);
    for (int64_t i = 0; out && i < n; i++) {
        size_t len;
        const char *s = tide_tensor_string_get(names, i, &len);
        if (!(out[i] = strndup(s, len))) {
            for (int64_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

static void free_names(char **names, int64_t n)
{
    for (int64_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static tide_status save_compute(tide_kernel_ctx *ctx)
{
    int n = tide_kernel_num_inputs(ctx) - 3;
    char *path = NULL;
    tide_status st = common_inputs(ctx, n, &path);
    if (st != TIDE_OK)
        return st;
    char **names = name_list(tide_kernel_input(ctx, 1), n);
    tide_tensor **tensors = malloc(sizeof *tensors * (size_t)(n ? n : 1));
    if (!names || !tensors) {
        st = tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        for (int i = 0; i < n; i++)
            tensors[i] = tide_kernel_input(ctx, 3 + i);
        tide_error *err = tide_error_new();
        if (tide_npz_write(path, (const char *const *)names, tensors, n, err) != TIDE_OK)
            st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
        tide_error_free(err);
    }
    free(tensors);
    free_names(names, n);
    free(path);
    return st;
}

static tide_status restore_one(tide_kernel_ctx *ctx, tide_npz *z, int i, const char *name, tide_error *err)
{
    tide_dtype want = tide_kernel_output_dtype(ctx, i), has;
    tide_shape shape;
    if (tide_npz_describe(z, name, &has, &shape, err) != TIDE_OK)
        return tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    if (has != want)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "tensor '%s' of the checkpoint is %s, but %s is asked "
                                 "for (dtypes[%d])", name, tide_dtype_name(has), tide_dtype_name(want), i);
    tide_tensor *t = tide_npz_read(z, name, err);
    if (!t)
        return tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    tide_kernel_set_output(ctx, i, t);
    tide_tensor_release(t);
    return TIDE_OK;
}

static tide_status restore_compute(tide_kernel_ctx *ctx)
{
    int n = tide_kernel_num_outputs(ctx);
    char *path = NULL;
    tide_status st = common_inputs(ctx, n, &path);
    if (st != TIDE_OK)
        return st;
    char **names = name_list(tide_kernel_input(ctx, 1), n);
    tide_error *err = tide_error_new();
    tide_npz *z = names ? tide_npz_open(path, err) : NULL;
    if (!names)
        st = tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    else if (!z)
        st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    for (int i = 0; st == TIDE_OK && i < n; i++)
        st = restore_one(ctx, z, i, names[i], err);
    tide_npz_close(z);
    tide_error_free(err);
    free_names(names, n);
    free(path);
    return st;
}

static tide_status restore_shape(tide_shape_ctx *ctx)
{
    for (int i = 0; i < tide_shape_num_outputs(ctx); i++)
        tide_shape_set_output(ctx, i, &(tide_shape){.rank = -1});
    return TIDE_OK;
}

static void register_checkpoint_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "SaveV2",
        .inputs = {"prefix: string", "tensor_names: string", "shape_and_slices: string", "tensors: dtypes"},
        .attrs = {"dtypes: list(type)"},
        .flags = TIDE_OP_STATEFUL,
        .doc = "Saves the tensors under their names to the .npz file PREFIX.npz (PREFIX when it ends with .npz), "
               "atomically: a crash leaves the old file or the complete new one. numpy.load reads it.",
        .tf_differences = "The file is one .npz (a zip of .npy files), not TensorFlow's .index and .data files; "
                          "shape_and_slices must be empty strings (no slices).",
    });
    tide_op_register(&(tide_op_spec){
        .name = "RestoreV2",
        .inputs = {"prefix: string", "tensor_names: string", "shape_and_slices: string"},
        .outputs = {"tensors: dtypes"},
        .attrs = {"dtypes: list(type)"},
        .flags = TIDE_OP_STATEFUL,
        .shape_fn = restore_shape,
        .doc = "Reads the named tensors from the .npz file PREFIX.npz; a missing name fails with NOT_FOUND listing "
               "what the file holds, a dtype other than dtypes says both.",
        .tf_differences = "The file is one .npz (a zip of .npy files), not TensorFlow's .index and .data files; "
                          "shape_and_slices must be empty strings (no slices).",
    });
    tide_kernel_register(&(tide_kernel_spec){.op = "SaveV2", .device_type = "cpu", .compute = save_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "RestoreV2", .device_type = "cpu", .compute = restore_compute});
}
TIDE_REGISTER(register_checkpoint_ops)
