/* index_plan.h — the index arithmetic of the GPU kernels, in C that nvcc compiles for the device and
 * a C compiler compiles for the host, so that it is tested on machines without a GPU
 * (tests/gpu/test_cuda_host.c checks it against the CPU kernels).
 *
 * Broadcasting (the element-wise template of elementwise.cu): two shapes are right-aligned, each
 * output dimension is the larger, and an input's stride is 0 along a dimension where it has size 1.
 * Dimensions of size 1 are dropped and neighbours that both inputs walk contiguously (or both
 * repeat) are merged, so [64, 128] + [128] becomes two dims, [8, 8] + [8, 8] one, and the kernel
 * decomposes each output index into at most that many coordinates.
 *
 * Strided walks (transpose, slice, reductions): a list of dims and a stride per dim; element i of
 * the walk (row-major over the dims) is at offset sum(coordinate_k * stride_k).
 *
 * Reductions: the input's dims split into kept and reduced ones (each list merged where
 * contiguous); an output element is a walk over the kept dims, and its inputs a walk over the
 * reduced dims from there.
 *
 * Padding (Pad, PadV2, and the explicit padding of convolutions cuDNN cannot pad evenly): an output
 * coordinate minus the padding before it is the input's, or outside it (the constant). Tiling: an
 * output coordinate modulo the input's dim is the input's. */
#ifndef TIDE_CUDA_INDEX_PLAN_H
#define TIDE_CUDA_INDEX_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TIDE_HD __host__ __device__
#else
#define TIDE_HD
#endif

#define TIDE_PLAN_MAX_RANK 8

/* A row-major walk over dims with an offset stride per dim. */
typedef struct tide_walk {
    int rank;
    int64_t dims[TIDE_PLAN_MAX_RANK];
    int64_t stride[TIDE_PLAN_MAX_RANK];
} tide_walk;

/* The offset of element i of the walk. */
TIDE_HD static inline int64_t tide_walk_offset(const tide_walk *w, int64_t i)
{
    int64_t off = 0;
    for (int k = w->rank - 1; k >= 0; k--) {
        int64_t d = w->dims[k], c = i % d;
        i /= d;
        off += c * w->stride[k];
    }
    return off;
}

/* Two inputs broadcast to one output. */
typedef struct tide_bcast {
    int rank;                          /* after dropping 1s and merging; 0: one element */
    int64_t dims[TIDE_PLAN_MAX_RANK];  /* of the output */
    int64_t stride_a[TIDE_PLAN_MAX_RANK], stride_b[TIDE_PLAN_MAX_RANK];
    int64_t num_elements;              /* of the output */
} tide_bcast;

/* Offsets into a and b of output element i. */
TIDE_HD static inline void tide_bcast_offsets(const tide_bcast *p, int64_t i, int64_t *oa, int64_t *ob)
{
    int64_t a = 0, b = 0;
    for (int k = p->rank - 1; k >= 0; k--) {
        int64_t d = p->dims[k], c = i % d;
        i /= d;
        a += c * p->stride_a[k];
        b += c * p->stride_b[k];
    }
    *oa = a;
    *ob = b;
}

/* Merges neighbouring dims of a walk set that every walk of the set steps through contiguously
 * (stride[k-1] == stride[k] * dims[k] in each), dropping dims of size 1. Host only. */
static inline int tide_plan_merge(int rank, int64_t *dims, int64_t *const *strides, int num_strides)
{
    int out = 0;
    for (int k = 0; k < rank; k++) {
        if (dims[k] == 1)
            continue;
        bool merge = out > 0;
        for (int s = 0; s < num_strides && merge; s++)
            merge = strides[s][out - 1] == strides[s][k] * dims[k];
        if (merge) {
            dims[out - 1] *= dims[k];
            for (int s = 0; s < num_strides; s++)
                strides[s][out - 1] = strides[s][k];
            continue;
        }
        dims[out] = dims[k];
        for (int s = 0; s < num_strides; s++)
            strides[s][out] = strides[s][k];
        out++;
    }
    return out;
}

/* The plan of a op b for shapes a (rank ra) and b; false when they do not broadcast. Host only. */
static inline bool tide_bcast_plan(int ra, const int64_t *da, int rb, const int64_t *db, tide_bcast *p)
{
    int rank = ra > rb ? ra : rb;
    if (rank > TIDE_PLAN_MAX_RANK)
        return false;
    int64_t dims[TIDE_PLAN_MAX_RANK], sa[TIDE_PLAN_MAX_RANK], sb[TIDE_PLAN_MAX_RANK];
    int64_t step_a = 1, step_b = 1, n = 1;
    for (int k = rank - 1; k >= 0; k--) {
        int ka = k - (rank - ra), kb = k - (rank - rb);
        int64_t x = ka >= 0 ? da[ka] : 1, y = kb >= 0 ? db[kb] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        dims[k] = x == 1 ? y : x;
        sa[k] = x == 1 ? 0 : step_a;
        sb[k] = y == 1 ? 0 : step_b;
        step_a *= x;
        step_b *= y;
        n *= dims[k];
    }
    int64_t *strides[2] = {sa, sb};
    p->rank = tide_plan_merge(rank, dims, strides, 2);
    for (int k = 0; k < p->rank; k++) {
        p->dims[k] = dims[k];
        p->stride_a[k] = sa[k];
        p->stride_b[k] = sb[k];
    }
    p->num_elements = n;
    return true;
}

/* The contiguous strides of dims (row-major). Host only. */
static inline void tide_plan_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t step = 1;
    for (int k = rank - 1; k >= 0; k--) {
        strides[k] = step;
        step *= dims[k];
    }
}

/* The walk over the input of a transpose: output dim k is input dim perm[k]. Host only; perm is
 * valid (checked by the caller). */
static inline void tide_plan_transpose(int rank, const int64_t *in_dims, const int64_t *perm, tide_walk *w)
{
    int64_t in_strides[TIDE_PLAN_MAX_RANK], dims[TIDE_PLAN_MAX_RANK], strides[TIDE_PLAN_MAX_RANK];
    tide_plan_strides(rank, in_dims, in_strides);
    for (int k = 0; k < rank; k++) {
        dims[k] = in_dims[perm[k]];
        strides[k] = in_strides[perm[k]];
    }
    /* merge where the output's neighbours are also the input's (stride[k-1] == stride[k] * dims[k]) */
    int64_t *s[1] = {strides};
    w->rank = tide_plan_merge(rank, dims, s, 1);
    for (int k = 0; k < w->rank; k++) {
        w->dims[k] = dims[k];
        w->stride[k] = strides[k];
    }
}

/* A reduction of an input of dims over the axes marked in reduce[k]. */
typedef struct tide_reduce_plan {
    tide_walk kept;        /* one element per output, in the output's order */
    tide_walk reduced;     /* the inputs of one output, from its base offset */
    int64_t num_outputs, reduce_size;
} tide_reduce_plan;

/* Host only. */
static inline void tide_plan_reduce(int rank, const int64_t *dims, const bool *reduce, tide_reduce_plan *p)
{
    int64_t strides[TIDE_PLAN_MAX_RANK];
    tide_plan_strides(rank, dims, strides);
    int64_t kd[TIDE_PLAN_MAX_RANK], ks[TIDE_PLAN_MAX_RANK], rd[TIDE_PLAN_MAX_RANK], rs[TIDE_PLAN_MAX_RANK];
    int nk = 0, nr = 0;
    p->num_outputs = 1;
    p->reduce_size = 1;
    for (int k = 0; k < rank; k++) {
        if (reduce[k]) {
            rd[nr] = dims[k], rs[nr++] = strides[k];
            p->reduce_size *= dims[k];
        } else {
            kd[nk] = dims[k], ks[nk++] = strides[k];
            p->num_outputs *= dims[k];
        }
    }
    int64_t *sk[1] = {ks}, *sr[1] = {rs};
    p->kept.rank = tide_plan_merge(nk, kd, sk, 1);
    p->reduced.rank = tide_plan_merge(nr, rd, sr, 1);
    for (int k = 0; k < p->kept.rank; k++)
        p->kept.dims[k] = kd[k], p->kept.stride[k] = ks[k];
    for (int k = 0; k < p->reduced.rank; k++)
        p->reduced.dims[k] = rd[k], p->reduced.stride[k] = rs[k];
}

/* A padded copy: output dims, the input's dims and contiguous strides, the padding before each. */
typedef struct tide_pad_plan {
    int rank;
    int64_t out_dims[TIDE_PLAN_MAX_RANK], in_dims[TIDE_PLAN_MAX_RANK], before[TIDE_PLAN_MAX_RANK];
    int64_t in_stride[TIDE_PLAN_MAX_RANK];
} tide_pad_plan;

/* The input offset of output element i, or -1 where it is padding. */
TIDE_HD static inline int64_t tide_pad_source(const tide_pad_plan *p, int64_t i)
{
    int64_t off = 0;
    bool inside = true;
    for (int k = p->rank - 1; k >= 0; k--) {
        int64_t c = i % p->out_dims[k] - p->before[k];
        i /= p->out_dims[k];
        inside = inside && c >= 0 && c < p->in_dims[k];
        off += c * p->in_stride[k];
    }
    return inside ? off : -1;
}

/* Host only: in_dims padded by before[k] and after[k] (none negative). */
static inline void tide_plan_pad(int rank, const int64_t *in_dims, const int64_t *before, const int64_t *after,
                                 tide_pad_plan *p)
{
    p->rank = rank;
    tide_plan_strides(rank, in_dims, p->in_stride);
    for (int k = 0; k < rank; k++) {
        p->in_dims[k] = in_dims[k];
        p->before[k] = before[k];
        p->out_dims[k] = in_dims[k] + before[k] + after[k];
    }
}

/* A tiled copy: output dims, the input's dims and contiguous strides. */
typedef struct tide_tile_plan {
    int rank;
    int64_t out_dims[TIDE_PLAN_MAX_RANK], in_dims[TIDE_PLAN_MAX_RANK], in_stride[TIDE_PLAN_MAX_RANK];
} tide_tile_plan;

TIDE_HD static inline int64_t tide_tile_source(const tide_tile_plan *p, int64_t i)
{
    int64_t off = 0;
    for (int k = p->rank - 1; k >= 0; k--) {
        int64_t c = i % p->out_dims[k];
        i /= p->out_dims[k];
        off += (c % p->in_dims[k]) * p->in_stride[k];
    }
    return off;
}

/* Host only: in_dims repeated multiples[k] times along each dim (no input dim 0 when the output
 * has elements). */
static inline void tide_plan_tile(int rank, const int64_t *in_dims, const int64_t *multiples, tide_tile_plan *p)
{
    p->rank = rank;
    tide_plan_strides(rank, in_dims, p->in_stride);
    for (int k = 0; k < rank; k++) {
        p->in_dims[k] = in_dims[k];
        p->out_dims[k] = in_dims[k] * multiples[k];
    }
}

#endif
