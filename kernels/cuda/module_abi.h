/* module_abi.h — the contract between the engine and the CUDA kernel module (libtide_cuda_kernels.so).
 *
 * The engine links no CUDA library (kernels/cuda/device_cuda.c opens the runtime with dlopen), so
 * the GPU kernels live in a shared module of their own, compiled by nvcc and linked against cudart,
 * cuBLAS and cuDNN, that the "gpu" device type loads when it finds a GPU (cuda_kernels.c). Programs
 * that link tide statically export none of its symbols, so the module does not call the engine by
 * name: the engine hands it a table of the functions its kernels use (tide_cuda_host_api), and the
 * module (module.cu) defines functions of the engine's names that call through that table, so that
 * kernels are written against tide_op.h as the CPU's are.
 *
 * TIDE_CUDA_KERNELS is the one list of the GPU kernels: the engine registers a "gpu" kernel for each
 * entry at load time (whether or not a GPU is ever found: they only matter where a /gpu device
 * exists), and the module defines one function per entry. Both sides expand the same list, and a
 * test (tests/gpu/test_cuda_module.c) loads the module without a GPU and checks that its table and
 * the engine's registrations agree. */
#ifndef TIDE_CUDA_MODULE_ABI_H
#define TIDE_CUDA_MODULE_ABI_H

#include "../../engine/tide_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus /* conv_ops.h names a parameter `explicit`, a C++ keyword */
#define explicit explicit_padding_
#endif
#include "../../engine/ops/array_ops.h"
#include "../../engine/ops/conv_ops.h"
#include "../../engine/ops/nn_ops.h"
#ifdef __cplusplus
#undef explicit
#endif

/* Raised whenever the table below or the kernel list changes: a module of another version is refused. */
#define TIDE_CUDA_ABI_VERSION 7 /* 7: small arguments may arrive in host memory (engine/host_inputs.c) */

/* Flags of a kernel entry. */
enum {
    TIDE_CUDA_PHILOX = 1u << 0, /* a random op: the engine keeps a Philox generator per node (the CPU's seeds) */
    TIDE_CUDA_KEEP = 1u << 1,   /* the engine keeps a tensor slot per node (tide_tensor **, NULL at first), whose
                                 * tensor it releases with the node's kernel (Const's copy on the GPU) */
};

/* The float types of the element-wise template and the reductions (float16 and bfloat16 computed in
 * float32 and rounded back, as on the CPU), and those with the integers of shapes and indices. */
#define TIDE_CUDA_FLOATS "{float32, float16, bfloat16}"
#define TIDE_CUDA_NUMBERS "{float32, float16, bfloat16, int32, int64}"

/* The dtypes data movement handles (elements of 1, 2, 4 or 8 bytes, moved without being looked at). */
#define TIDE_CUDA_MOVABLE "{float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, bool}"

/* The GPU kernels: X(op, (type constraints), function name in the module, flags); the constraints are
 * those of tide_kernel_spec, up to 4, in parentheses. Element-wise ops come from one template over
 * functors (elementwise.cu), for float32, float16 and bfloat16 (and int32/int64 where the op is
 * integer arithmetic); matrix products and convolutions for float32, float16 and bfloat16 (cuBLAS and
 * cuDNN with float32 accumulation); softmax, batch norm and the optimizers are float32. */
#define TIDE_CUDA_UNPAREN(...) __VA_ARGS__
#define TIDE_CUDA_KERNELS(X)                                                                                \
    /* element-wise, binary with broadcasting */                                                           \
    X("Add", ("T: " TIDE_CUDA_NUMBERS), cuda_add, 0)                                                         \
    X("AddV2", ("T: " TIDE_CUDA_NUMBERS), cuda_add, 0)                                                       \
    X("Sub", ("T: " TIDE_CUDA_NUMBERS), cuda_sub, 0)                                                         \
    X("Mul", ("T: " TIDE_CUDA_NUMBERS), cuda_mul, 0)                                                         \
    X("Div", ("T: " TIDE_CUDA_NUMBERS), cuda_div, 0)                                                         \
    X("RealDiv", ("T: " TIDE_CUDA_FLOATS), cuda_real_div, 0)                                                 \
    X("Maximum", ("T: " TIDE_CUDA_NUMBERS), cuda_maximum, 0)                                                 \
    X("Minimum", ("T: " TIDE_CUDA_NUMBERS), cuda_minimum, 0)                                                 \
    X("SquaredDifference", ("T: " TIDE_CUDA_NUMBERS), cuda_squared_difference, 0)                            \
    X("Pow", ("T: " TIDE_CUDA_FLOATS), cuda_pow, 0)                                                          \
    X("DivNoNan", ("T: " TIDE_CUDA_FLOATS), cuda_div_no_nan, 0)                                              \
    X("ReluGrad", ("T: {float32}"), cuda_relu_grad, 0)                                                       \
    X("SigmoidGrad", ("T: {float32}"), cuda_sigmoid_grad, 0)                                                 \
    X("TanhGrad", ("T: {float32}"), cuda_tanh_grad, 0)                                                       \
    X("SqrtGrad", ("T: " TIDE_CUDA_FLOATS), cuda_sqrt_grad, 0)                                               \
    X("RsqrtGrad", ("T: " TIDE_CUDA_FLOATS), cuda_rsqrt_grad, 0)                                             \
    X("ReciprocalGrad", ("T: " TIDE_CUDA_FLOATS), cuda_reciprocal_grad, 0)                                   \
    /* element-wise, unary */                                                                              \
    X("Neg", ("T: " TIDE_CUDA_NUMBERS), cuda_neg, 0)                                                         \
    X("Abs", ("T: " TIDE_CUDA_NUMBERS), cuda_abs, 0)                                                         \
    X("Sign", ("T: " TIDE_CUDA_NUMBERS), cuda_sign, 0)                                                       \
    X("Square", ("T: " TIDE_CUDA_NUMBERS), cuda_square, 0)                                                   \
    X("Reciprocal", ("T: " TIDE_CUDA_FLOATS), cuda_reciprocal, 0)                                            \
    X("Sqrt", ("T: " TIDE_CUDA_FLOATS), cuda_sqrt, 0)                                                        \
    X("Rsqrt", ("T: " TIDE_CUDA_FLOATS), cuda_rsqrt, 0)                                                      \
    X("Exp", ("T: " TIDE_CUDA_FLOATS), cuda_exp, 0)                                                          \
    X("Log", ("T: " TIDE_CUDA_FLOATS), cuda_log, 0)                                                          \
    X("Log1p", ("T: " TIDE_CUDA_FLOATS), cuda_log1p, 0)                                                      \
    X("Tanh", ("T: " TIDE_CUDA_FLOATS), cuda_tanh, 0)                                                        \
    X("Sigmoid", ("T: " TIDE_CUDA_FLOATS), cuda_sigmoid, 0)                                                  \
    X("Relu", ("T: {float32}"), cuda_relu, 0)                                                                \
    X("Floor", ("T: " TIDE_CUDA_FLOATS), cuda_floor, 0)                                                      \
    X("Ceil", ("T: " TIDE_CUDA_FLOATS), cuda_ceil, 0)                                                        \
    X("Sin", ("T: " TIDE_CUDA_FLOATS), cuda_sin, 0)                                                          \
    X("Cos", ("T: " TIDE_CUDA_FLOATS), cuda_cos, 0)                                                          \
    X("Softplus", ("T: {float32}"), cuda_softplus, 0)                                                        \
    /* reductions over axes */                                                                             \
    X("Sum", ("T: " TIDE_CUDA_FLOATS), cuda_sum, 0)                                                          \
    X("Mean", ("T: " TIDE_CUDA_FLOATS), cuda_mean, 0)                                                        \
    X("Max", ("T: " TIDE_CUDA_FLOATS), cuda_max, 0)                                                          \
    X("Min", ("T: " TIDE_CUDA_FLOATS), cuda_min, 0)                                                          \
    X("BiasAdd", ("T: {float32}"), cuda_bias_add, 0)                                                         \
    X("BiasAddGrad", ("T: {float32}"), cuda_bias_add_grad, 0)                                                \
    /* cuBLAS */                                                                                           \
    X("MatMul", ("T: " TIDE_CUDA_FLOATS), cuda_matmul, 0)                                                    \
    X("BatchMatMul", ("T: " TIDE_CUDA_FLOATS), cuda_batch_matmul, 0)                                         \
    /* softmax and cross-entropy */                                                                        \
    X("Softmax", ("T: {float32}"), cuda_softmax, 0)                                                          \
    X("LogSoftmax", ("T: {float32}"), cuda_log_softmax, 0)                                                   \
    X("SoftmaxCrossEntropyWithLogits", ("T: {float32}"), cuda_softmax_xent, 0)                               \
    X("SparseSoftmaxCrossEntropyWithLogits", ("T: {float32}", "Tlabels: {int32, int64}"), cuda_sparse_softmax_xent, 0)                  \
    /* cuDNN */                                                                                            \
    X("Conv2D", ("T: " TIDE_CUDA_FLOATS), cuda_conv2d, 0)                                                    \
    X("Conv2DBackpropInput", ("T: " TIDE_CUDA_FLOATS), cuda_conv2d_backprop_input, 0)                        \
    X("Conv2DBackpropFilter", ("T: " TIDE_CUDA_FLOATS), cuda_conv2d_backprop_filter, 0)                      \
    X("MaxPool", ("T: {float32}"), cuda_max_pool, 0)                                                         \
    X("AvgPool", ("T: {float32}"), cuda_avg_pool, 0)                                                         \
    X("MaxPoolGrad", ("T: {float32}"), cuda_max_pool_grad, 0)                                                \
    X("AvgPoolGrad", ("T: {float32}"), cuda_avg_pool_grad, 0)                                                \
    /* batch normalisation (cuDNN) */                                                                      \
    X("FusedBatchNorm", ("T: {float32}"), cuda_batch_norm, 0)                                                \
    X("FusedBatchNormV2", ("T: {float32}", "U: {float32}"), cuda_batch_norm, 0)                              \
    X("FusedBatchNormV3", ("T: {float32}", "U: {float32}"), cuda_batch_norm, 0)                              \
    X("FusedBatchNormGrad", ("T: {float32}"), cuda_batch_norm_grad, 0)                                       \
    X("FusedBatchNormGradV2", ("T: {float32}", "U: {float32}"), cuda_batch_norm_grad, 0)                     \
    X("FusedBatchNormGradV3", ("T: {float32}", "U: {float32}"), cuda_batch_norm_grad, 0)                     \
    /* fused optimizer updates */                                                                          \
    X("ApplyGradientDescent", ("T: {float32}"), cuda_apply_gradient_descent, 0)                              \
    X("ApplyAdam", ("T: {float32}"), cuda_apply_adam, 0)                                                     \
    X("Assign", ("T: " TIDE_CUDA_MOVABLE), cuda_assign, 0)                                                   \
    X("AssignAdd", ("T: " TIDE_CUDA_NUMBERS), cuda_assign_add, 0)                                            \
    X("AssignSub", ("T: " TIDE_CUDA_NUMBERS), cuda_assign_sub, 0)                                            \
    /* casts, fills, random numbers */                                                                     \
    X("Cast", ("SrcT: {float32, float16, bfloat16, int32, int64, bool}", "DstT: " TIDE_CUDA_NUMBERS), cuda_cast, 0)                                                                          \
    X("Fill", ("T: " TIDE_CUDA_MOVABLE), cuda_fill, 0)                                                                \
    X("ZerosLike", ("T: " TIDE_CUDA_MOVABLE), cuda_zeros_like, 0)                                                     \
    X("OnesLike", ("T: " TIDE_CUDA_NUMBERS), cuda_ones_like, 0)                                                       \
    X("RandomUniform", ("dtype: {float32}"), cuda_random_uniform, TIDE_CUDA_PHILOX)                          \
    X("RandomNormal", ("dtype: {float32}"), cuda_random_normal, TIDE_CUDA_PHILOX)                            \
    X("Dropout", ("T: {float32}"), cuda_dropout, TIDE_CUDA_PHILOX)                                           \
    /* moving data */                                                                                      \
    X("Transpose", ("T: " TIDE_CUDA_MOVABLE), cuda_transpose, 0)                                            \
    X("ConcatV2", ("T: " TIDE_CUDA_MOVABLE), cuda_concat, 0)                                                \
    X("Slice", ("T: " TIDE_CUDA_MOVABLE), cuda_slice, 0)                                                    \
    X("StridedSlice", ("T: " TIDE_CUDA_MOVABLE), cuda_strided_slice, 0)                                     \
    X("Tile", ("T: " TIDE_CUDA_MOVABLE), cuda_tile, 0)                                                      \
    X("Pad", ("T: " TIDE_CUDA_MOVABLE), cuda_pad, 0)                                                        \
    X("PadV2", ("T: " TIDE_CUDA_MOVABLE), cuda_pad, 0)                                                      \
    X("BroadcastTo", ("T: " TIDE_CUDA_MOVABLE), cuda_broadcast_to, 0)                                       \
    X("GatherV2", ("Tparams: " TIDE_CUDA_MOVABLE, "Tindices: {int32, int64}"), cuda_gather, 0)                      \
    /* shapes: Reshape, ExpandDims and Squeeze are views; Shape and Size write into GPU memory (no tensor  \
     * crosses to the host for them); Const copies its value to the GPU once and keeps it */              \
    X("Reshape", ("T: " TIDE_CUDA_MOVABLE), cuda_reshape, 0)                                                \
    X("ExpandDims", ("T: " TIDE_CUDA_MOVABLE), cuda_expand_dims, 0)                                         \
    X("Squeeze", ("T: " TIDE_CUDA_MOVABLE), cuda_squeeze, 0)                                                \
    X("Shape", ("T: " TIDE_CUDA_MOVABLE), cuda_shape, 0)                                                    \
    X("Size", ("T: " TIDE_CUDA_MOVABLE), cuda_size, 0)                                                      \
    X("Const", ("dtype: " TIDE_CUDA_MOVABLE), cuda_const, TIDE_CUDA_KEEP)

/* What a module's kernel gets besides its context: the per-node state the engine keeps (a Philox
 * generator for TIDE_CUDA_PHILOX entries, else NULL). */
typedef tide_status (*tide_cuda_kernel_fn)(tide_kernel_ctx *ctx, void *node_state);

/* The engine functions the module calls: X(return type, name, parameters, arguments). */
#define TIDE_CUDA_HOST_FUNCTIONS(X)                                                                         \
    X(tide_tensor *, tide_kernel_input, (const tide_kernel_ctx *ctx, int i), (ctx, i))                      \
    X(int, tide_kernel_num_inputs, (const tide_kernel_ctx *ctx), (ctx))                                     \
    X(int, tide_kernel_num_outputs, (const tide_kernel_ctx *ctx), (ctx))                                    \
    X(tide_dtype, tide_kernel_output_dtype, (const tide_kernel_ctx *ctx, int i), (ctx, i))                  \
    X(tide_tensor *, tide_kernel_alloc_output, (tide_kernel_ctx *ctx, int i, const tide_shape *s, bool zero), \
      (ctx, i, s, zero))                                                                                    \
    X(tide_tensor *, tide_kernel_forward_or_alloc, (tide_kernel_ctx *ctx, int in, int out, const tide_shape *s), \
      (ctx, in, out, s))                                                                                    \
    X(void, tide_kernel_set_output, (tide_kernel_ctx *ctx, int i, tide_tensor *t), (ctx, i, t))            \
    X(tide_status, tide_kernel_status, (const tide_kernel_ctx *ctx), (ctx))                                 \
    X(const tide_attrs *, tide_kernel_attrs, (const tide_kernel_ctx *ctx), (ctx))                           \
    X(const char *, tide_kernel_node_name, (const tide_kernel_ctx *ctx), (ctx))                             \
    X(tide_device *, tide_kernel_device, (const tide_kernel_ctx *ctx), (ctx))                               \
    X(tide_stream *, tide_kernel_stream, (const tide_kernel_ctx *ctx), (ctx))                               \
    X(void *, tide_stream_context, (const tide_stream *s), (s))                                             \
    X(int, tide_device_ordinal, (const tide_device *d), (d))                                                \
    X(tide_dtype, tide_tensor_dtype, (const tide_tensor *t), (t))                                           \
    X(const tide_shape *, tide_tensor_shape, (const tide_tensor *t), (t))                                   \
    X(int64_t, tide_tensor_num_elements, (const tide_tensor *t), (t))                                       \
    X(size_t, tide_tensor_byte_size, (const tide_tensor *t), (t))                                           \
    X(void *, tide_tensor_device_pointer, (const tide_tensor *t), (t))                                      \
    X(bool, tide_tensor_is_exclusive, (const tide_tensor *t), (t))                                          \
    X(void, tide_tensor_release, (tide_tensor *t), (t))                                                     \
    X(tide_tensor *, tide_tensor_retain, (tide_tensor *t), (t))                                             \
    X(void *, tide_tensor_data, (const tide_tensor *t), (t))                                                \
    X(tide_tensor *, tide_tensor_reshape, (tide_tensor *t, const tide_shape *s, tide_error *err), (t, s, err)) \
    X(tide_error *, tide_error_new, (void), ())                                                             \
    X(void, tide_error_free, (tide_error *e), (e))                                                          \
    X(const char *, tide_error_message, (const tide_error *e), (e))                                         \
    X(tide_status, tide_error_code, (const tide_error *e), (e))                                             \
    X(char *, tide_shape_format, (const tide_shape *s, char *buf, size_t size), (s, buf, size))            \
    X(const char *, tide_dtype_name, (tide_dtype dt), (dt))                                                 \
    X(size_t, tide_dtype_size, (tide_dtype dt), (dt))                                                       \
    X(bool, tide_attrs_get_bool, (const tide_attrs *a, const char *n, bool *v), (a, n, v))                 \
    X(bool, tide_attrs_get_int, (const tide_attrs *a, const char *n, int64_t *v), (a, n, v))               \
    X(bool, tide_attrs_get_float, (const tide_attrs *a, const char *n, double *v), (a, n, v))              \
    X(bool, tide_attrs_get_string, (const tide_attrs *a, const char *n, const char **v), (a, n, v))        \
    X(bool, tide_attrs_get_type, (const tide_attrs *a, const char *n, tide_dtype *v), (a, n, v))           \
    X(bool, tide_attrs_get_tensor, (const tide_attrs *a, const char *n, tide_tensor **v), (a, n, v))       \
    X(bool, tide_attrs_get_int_list, (const tide_attrs *a, const char *n, const int64_t **v, int *c),      \
      (a, n, v, c))                                                                                         \
    X(tide_variable *, tide_kernel_input_variable, (tide_kernel_ctx *ctx, int i), (ctx, i))                \
    X(tide_variable *, tide_kernel_assigned_variable, (tide_kernel_ctx *ctx, int i), (ctx, i))             \
    X(void, tide_variable_lock, (tide_variable *v), (v))                                                    \
    X(void, tide_variable_unlock, (tide_variable *v), (v))                                                  \
    X(const char *, tide_variable_name, (const tide_variable *v), (v))                                      \
    X(tide_shape, tide_variable_shape, (const tide_variable *v), (v))                                       \
    X(tide_tensor *, tide_variable_value, (tide_variable *v), (v))                                          \
    X(void, tide_variable_set_value, (tide_variable *v, tide_tensor *t), (v, t))                            \
    /* the shape rules the CPU kernels check with (engine/ops), so both devices say the same */            \
    X(bool, tide_nn_check_logits, (const tide_shape *l, char *msg, size_t size), (l, msg, size))            \
    X(bool, tide_nn_check_xent, (const tide_shape *f, const tide_shape *l, bool sparse, int64_t *batch,    \
      int64_t *classes, char *msg, size_t size), (f, l, sparse, batch, classes, msg, size))                 \
    X(bool, tide_nn_same_shape, (const tide_shape *a, const tide_shape *b, const char *na, const char *nb,  \
      tide_shape *merged, char *msg, size_t size), (a, b, na, nb, merged, msg, size))                       \
    X(bool, tide_nn_check_dropout_rate, (const tide_shape *r, const double *v, char *msg, size_t size),     \
      (r, v, msg, size))                                                                                    \
    X(bool, tide_nn_check_batch_norm_x, (const tide_shape *x, int64_t *c, char *msg, size_t size),         \
      (x, c, msg, size))                                                                                    \
    X(bool, tide_nn_check_channel_vector, (const tide_shape *v, const char *name, bool may_be_empty,        \
      const tide_shape *x, int64_t *c, char *msg, size_t size), (v, name, may_be_empty, x, c, msg, size))   \
    X(void, tide_array_ss_masks, (const tide_attrs *a, int64_t masks[TIDE_SS_NUM_MASKS]), (a, masks))      \
    X(tide_status, tide_array_strided_slice, (const tide_shape *in, int64_t n, const int64_t *begin,       \
      const int64_t *end, const int64_t *strides, const int64_t masks[TIDE_SS_NUM_MASKS], int64_t *dense_begin, \
      int64_t *dense_stride, tide_shape *processing, tide_shape *final, char *msg, size_t msg_size),        \
      (in, n, begin, end, strides, masks, dense_begin, dense_stride, processing, final, msg, msg_size))     \
    X(bool, tide_conv_read_attrs, (const tide_attrs *a, tide_conv_window *w, char *msg, size_t size),      \
      (a, w, msg, size))                                                                                    \
    X(bool, tide_pool_read_attrs, (const tide_attrs *a, tide_conv_window *w, char *msg, size_t size),      \
      (a, w, msg, size))                                                                                    \
    X(bool, tide_conv_input_dims, (const tide_shape *s, const char *what, int64_t dims[4], char *msg,      \
      size_t size), (s, what, dims, msg, size))                                                             \
    X(bool, tide_conv_geometry_make, (const tide_conv_window *w, const int64_t input[4],                   \
      const int64_t filter[4], tide_conv_geometry *g, char *msg, size_t size), (w, input, filter, g, msg, size)) \
    X(bool, tide_conv_backprop_geometry, (const tide_conv_window *w, const int64_t input[4],               \
      const int64_t filter[4], const int64_t out_backprop[4], tide_conv_geometry *g, char *msg, size_t size), \
      (w, input, filter, out_backprop, g, msg, size))                                                       \
    X(bool, tide_pool_geometry, (const tide_conv_window *w, const int64_t input[4], const int64_t *pooled,  \
      const char *pooled_name, tide_conv_geometry *g, char *msg, size_t size),                             \
      (w, input, pooled, pooled_name, g, msg, size))

typedef struct tide_cuda_host_api {
    int version; /* TIDE_CUDA_ABI_VERSION */
#define TIDE_CUDA_API_FIELD(ret, name, params, args) ret(*name) params;
    TIDE_CUDA_HOST_FUNCTIONS(TIDE_CUDA_API_FIELD)
#undef TIDE_CUDA_API_FIELD
    tide_status (*kernel_error)(tide_kernel_ctx *ctx, tide_status code, const char *fmt, ...);
    /* A tensor on the kernel's device, the kernel's to release (cuDNN's workspace) or keep (Const's copy). */
    tide_tensor *(*alloc_temp)(tide_kernel_ctx *ctx, tide_dtype dt, const tide_shape *shape);
    /* For TIDE_CUDA_PHILOX entries: reserves `blocks` blocks of the node's generator (node_state) and
     * gives its key and stream; returns the first block (kernels/cpu/philox.h). */
    uint64_t (*philox_reserve)(void *node_state, uint64_t blocks, uint32_t key[2], uint64_t *stream);
} tide_cuda_host_api;

/* One kernel of the module. */
typedef struct tide_cuda_kernel_entry {
    const char *op;
    tide_cuda_kernel_fn compute;
} tide_cuda_kernel_entry;

typedef struct tide_cuda_module {
    int version;                            /* TIDE_CUDA_ABI_VERSION */
    const char *built_for;                  /* "sm_90 + compute_90 PTX, CUDA 13.0, cuDNN 9.x" */
    int num_kernels;
    const tide_cuda_kernel_entry *kernels;  /* in TIDE_CUDA_KERNELS order */
    /* Frees the library handles of every device (before the runtime goes). */
    void (*close)(void);
} tide_cuda_module;

/* The module's one exported function. api NULL: only describe (no CUDA call is made; for tests on
 * machines without a GPU). */
#define TIDE_CUDA_MODULE_ENTRY "tide_cuda_module_open"
typedef const tide_cuda_module *(*tide_cuda_module_open_fn)(const tide_cuda_host_api *api);

#ifdef __cplusplus
}
#endif

#endif
