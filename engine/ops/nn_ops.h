/* nn_ops.h — what the neural-network ops' definitions (engine/ops/nn_ops.c) share with their CPU
 * kernels (kernels/cpu/activation.c, softmax.c, nn_misc.c, batch_norm.c): the checks of input
 * shapes and attr values, defined once in nn_ops.c so that the shape functions (on partial shapes,
 * at graph time) and the kernels (on actual shapes, at run time) accept the same inputs with the
 * same messages. Engine-private.
 *
 * Every check takes shapes that may be partial (unknown rank, -1 dims): what is unknown passes, what
 * is known to be wrong fails with msg written (TIDE_OP_MSG_MAX bytes are enough). */
#ifndef TIDE_NN_OPS_H
#define TIDE_NN_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* Two inputs that must have the same shape (the *Grad ops' gradients and features): *merged gets
 * the most specific shape both allow. name_a, name_b are the op's names of the inputs. */
bool tide_nn_same_shape(const tide_shape *a, const tide_shape *b, const char *name_a,
                        const char *name_b, tide_shape *merged, char *msg, size_t size);

/* Softmax, LogSoftmax: logits of rank >= 1 (the last dimension holds the classes). */
bool tide_nn_check_logits(const tide_shape *logits, char *msg, size_t size);

/* The cross-entropy ops: features [B, C] and labels [B, C] (sparse: labels [B]). *batch and *classes
 * receive B and C (-1 when unknown). */
bool tide_nn_check_xent(const tide_shape *features, const tide_shape *labels, bool sparse,
                        int64_t *batch, int64_t *classes, char *msg, size_t size);

/* BiasAdd's data_format: only "NHWC" (channels last). */
bool tide_nn_check_data_format(const char *data_format, char *msg, size_t size);

/* BiasAdd: value of rank >= 2 and bias [C] with C the last dimension of value. *channels gets C
 * (-1 when unknown). BiasAddGrad passes bias NULL. */
bool tide_nn_check_bias_add(const tide_shape *value, const tide_shape *bias, int64_t *channels,
                            char *msg, size_t size);

/* Dropout's rate: a scalar (rate_shape) in [0, 1). value NULL when not known yet. */
bool tide_nn_check_dropout_rate(const tide_shape *rate_shape, const double *value, char *msg,
                                size_t size);

/* FusedBatchNorm(Grad) (and their V2, V3): x of rank >= 2 whose last dimension is the number of
 * channels C. *channels gets C (-1 when unknown). */
bool tide_nn_check_batch_norm_x(const tide_shape *x, int64_t *channels, char *msg, size_t size);

/* FusedBatchNorm's data_format: the channels last, 'NHWC' or 'NDHWC' (TensorFlow's default names for
 * rank 4 and 5; tide normalises over every dimension but the last whatever the rank). */
bool tide_nn_check_batch_norm_format(const char *data_format, char *msg, size_t size);

/* FusedBatchNormV2/V3: the statistics' type U must be x's T (tide computes both in one dtype). */
bool tide_nn_check_batch_norm_types(tide_dtype t, tide_dtype u, char *msg, size_t size);

/* A per-channel vector of FusedBatchNorm(Grad) named `name`: shape [C] (may_be_empty: or [0], as the
 * mean and variance inputs may be in training). *channels is C so far (-1 unknown) and is refined;
 * x is named in the message. */
bool tide_nn_check_channel_vector(const tide_shape *v, const char *name, bool may_be_empty,
                                  const tide_shape *x, int64_t *channels, char *msg, size_t size);

/* ---------------------------------------------------------------- for the CPU kernels
 * Defined in kernels/cpu/batch_norm.c, used by BiasAddGrad (kernels/cpu/nn_misc.c); the engine
 * never calls it. */

/* Column sums of a row-major [rows, width] float32 or float64 (dt) matrix, accumulated in double
 * into sums[0 .. width), split across the engine's threads in a way fixed by the shape (so the
 * result never depends on the thread count). False when out of memory, with the error recorded. */
bool tide_nn_column_sums(tide_kernel_ctx *ctx, tide_dtype dt, const void *x, int64_t rows,
                         int64_t width, double *sums);

#endif
