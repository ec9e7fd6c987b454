/* reverse_ops.h — what the reflection ops' definitions (engine/ops/reverse_ops.c) share with their
 * kernels (kernels/cpu/reverse.c): ReverseV2's axes and MirrorPad's mode, paddings and index map,
 * checked with the same messages at graph time and at run time. Engine-private. */
#ifndef TIDE_REVERSE_OPS_H
#define TIDE_REVERSE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tide_op.h"

/* ReverseV2's n axes against a tensor of rank `rank`: each in [-rank, rank), none named twice (as
 * -1 and rank - 1 name the same). Sets reversed[d] for each reversed dimension d. False with msg
 * written otherwise. */
bool tide_reverse_axes(const int64_t *axes, int64_t n, int rank, bool reversed[TIDE_MAX_RANK], char *msg,
                       size_t size);

/* MirrorPad's mode attr, "REFLECT" (the edge not repeated) or "SYMMETRIC" (repeated), into
 * *symmetric. False with msg written for anything else. */
bool tide_mirror_mode(const tide_attrs *attrs, bool *symmetric, char *msg, size_t size);

/* paddings (rows [before, after], one per dimension of `in`; n_rows of them) against `in`, whose
 * dims may be -1: the right count, non-negative, and at most dim - 1 (REFLECT) or dim (SYMMETRIC)
 * on each side. *out gets the padded shape (-1 where the input's dim is unknown). False with msg
 * written otherwise. */
bool tide_mirror_pad_shape(const tide_shape *in, const int64_t *paddings, int64_t n_rows, bool symmetric,
                           tide_shape *out, char *msg, size_t size);

/* MirrorPadGrad: the unpadded shape of a padded one (dims may be -1); the paddings must not exceed
 * the padded sizes. False with msg written otherwise; tide_mirror_pad_shape then checks the
 * paddings against it. */
bool tide_mirror_unpad_shape(const tide_shape *padded, const int64_t *paddings, int64_t n_rows,
                             tide_shape *out, char *msg, size_t size);

/* The index of the input (of size `in` along a dimension padded by `before`) that padded index i
 * copies: i - before inside, mirrored outside. */
static inline int64_t tide_mirror_source(int64_t i, int64_t before, int64_t in, bool symmetric)
{
    int64_t j = i - before;
    if (j < 0)
        return symmetric ? -j - 1 : -j;
    if (j >= in)
        return symmetric ? 2 * in - 1 - j : 2 * (in - 1) - j;
    return j;
}

#endif
