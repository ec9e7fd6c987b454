/* host_inputs.c — which inputs of a kernel on an accelerator are read on the host (TensorFlow's
 * HostMemory arguments): the small arguments a kernel needs before it can launch anything — a rate, axes,
 * a permutation, a shape, sizes. On a GPU such a value is read with a copy to the host that waits for the
 * stream (and so cannot be part of a captured CUDA graph); kept in host memory it is read where it is. The
 * plan (pass 5b) hands such an input over in host memory without a transfer when it is made on the host
 * (a fed value, or a constant, which placement then keeps on the host); one computed in the device's
 * memory stays there and the kernel reads it back. The list covers every GPU kernel that reads an input
 * on the host (kernels/cuda: cuda_read_ints, cuda_read_shape, cuda_read_float); the simulated device's
 * kernels read the same arguments on the host, so that /sim:0 keeps them where a GPU does. A kernel may
 * name more in its spec (tide_kernel_spec.host_inputs). docs/devices.md, "Host-memory inputs". */
#include <string.h>

#include "internal.h"

/* Per op, the input arguments (bit a for argument a of the op's inputs) read on the host. */
static const struct {
    const char *op;
    unsigned args;
} host_args[] = {
    {"AvgPoolGrad", 1u << 0},         /* orig_input_shape */
    {"BroadcastTo", 1u << 1},         /* shape */
    {"ConcatV2", 1u << 1},            /* axis */
    {"Conv2DBackpropFilter", 1u << 1}, /* filter_sizes */
    {"Conv2DBackpropInput", 1u << 0}, /* input_sizes */
    {"Dropout", 1u << 1},             /* rate */
    {"ExpandDims", 1u << 1},          /* dim */
    {"Fill", 1u << 0},                /* dims */
    {"GatherV2", 1u << 2},            /* axis */
    {"Max", 1u << 1},                 /* reduction_indices */
    {"Mean", 1u << 1},
    {"Min", 1u << 1},
    {"Pad", 1u << 1},                 /* paddings */
    {"PadV2", 1u << 1},
    {"RandomNormal", 1u << 0},        /* shape */
    {"RandomUniform", 1u << 0},
    {"Reshape", 1u << 1},             /* shape */
    {"Slice", (1u << 1) | (1u << 2)}, /* begin, size */
    {"StridedSlice", (1u << 1) | (1u << 2) | (1u << 3)}, /* begin, end, strides */
    {"Sum", 1u << 1},
    {"Tile", 1u << 1},                /* multiples */
    {"Transpose", 1u << 1},           /* perm */
};

static unsigned listed_args(const char *op)
{
    for (size_t i = 0; i < sizeof host_args / sizeof host_args[0]; i++)
        if (strcmp(host_args[i].op, op) == 0)
            return host_args[i].args;
    return 0;
}

bool tide__kernel_host_input(const tide_kernel_def *k, const tide_device *device, const tide_node *node, int i)
{
    if (!k || !device || device->host_visible || i < 0 || i >= node->num_inputs)
        return false;
    unsigned args = k->spec.host_inputs | listed_args(node->op->name);
    for (int a = 0; args && a < node->op->num_inputs && a < 32; a++)
        if (i >= node->arg_start[a] && i < node->arg_start[a + 1])
            return (args >> a) & 1u;
    return false;
}
