/* array.c — CPU kernels of the array manipulation ops (part A): Reshape, Transpose, Concat, Split,
 * Slice, StridedSlice, Pack, Unpack, Tile, Pad and PadV2 (definitions in engine/ops/array_ops.c).
 *
 * These kernels move elements without looking at them, so one implementation serves every dtype,
 * by element size (1, 2, 4, 8 or 16 bytes). String elements (16-byte tide_tstring) are moved the
 * same way, shallowly, and then replaced by deep copies in place (deepen_strings) before anyone
 * else can see the output. Results that are a contiguous block of the input are views of its
 * buffer, not copies.
 *
 * The core is an affine gather (gather_plan): output element (i0, ..., ik) is input element
 * base + sum(i_j * stride_j), strides in elements and possibly negative. Transpose, Slice and
 * StridedSlice reduce to it. After merging dimensions it runs as contiguous rows (memcpy), as
 * cache-blocked 2-D tiles when the input's contiguous dimension is not the output's innermost, or
 * as a strided element loop; big outputs are split over the engine's threads. Concat/Pack and
 * Split/Unpack are row-wise interleavings of pieces (piece_job); Tile replicates by doubling
 * memcpy; Pad writes each output row once (fill, copy, fill). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/array_ops.h"
#include "../../engine/ops/op_util.h"
#include "../../engine/tide_op.h"
#include "cpu_util.h"

#define MAX_LOCAL_PIECES 16 /* Concat/Split pieces tracked without a malloc */

#define SHAPE_STR(s, buf) tide_shape_format(s, buf, sizeof buf)

typedef struct elem16 {
    uint64_t lo, hi;
} elem16;

/* ---------------------------------------------------------------- small helpers */

static int size_class(size_t esize) /* 1, 2, 4, 8, 16 bytes -> 0..4 */
{
    return esize == 1 ? 0 : esize == 2 ? 1 : esize == 4 ? 2 : esize == 8 ? 3 : 4;
}

/* Row-major strides in elements; all 0 for an empty shape. */
static void contiguous_strides(const tide_shape *s, int64_t *strides)
{
    int64_t st = tide_shape_num_elements(s) > 0 ? 1 : 0;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->dims[i];
    }
}

static int64_t prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

/* Reads input i, which must be a vector of at most cap int32/int64 entries, into out. */
static tide_status index_vector(tide_kernel_ctx *ctx, int i, const char *name, int64_t *out,
                                int cap, int *n)
{
    const tide_tensor *t = tide_kernel_input(ctx, i);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(t) != 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a vector, got shape %s",
                                 name, SHAPE_STR(tide_tensor_shape(t), buf));
    int64_t len = tide_tensor_dim(t, 0);
    if (len > cap)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "%s has %lld entries; at most %d are supported", name,
                                 (long long)len, cap);
    tide_op_index_values(t, out, len);
    *n = (int)len;
    return TIDE_OK;
}

/* Reads input i, which must be a scalar int32/int64. */
static tide_status index_scalar(tide_kernel_ctx *ctx, int i, const char *name, int64_t *v)
{
    const tide_tensor *t = tide_kernel_input(ctx, i);
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(t) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s must be a scalar, got shape %s",
                                 name, SHAPE_STR(tide_tensor_shape(t), buf));
    *v = tide_op_int_at(t, 0);
    return TIDE_OK;
}

static tide_status axis_error(tide_kernel_ctx *ctx, int64_t axis, int rank, const tide_shape *s,
                              const char *what)
{
    char msg[TIDE_OP_MSG_MAX];
    return tide_kernel_error(ctx, TIDE_OUT_OF_RANGE, "%s",
                             tide_array_axis_message(axis, rank, s, what, msg, sizeof msg));
}

/* Replaces the shallow copies of strings in a fresh output by deep copies. On failure the rest
 * are cleared, so releasing the output never frees the input's strings. */
static tide_status deepen_strings(tide_kernel_ctx *ctx, tide_tensor *out)
{
    if (tide_tensor_dtype(out) != TIDE_STRING)
        return TIDE_OK;
    tide_tstring *s = tide_tensor_data(out);
    int64_t n = tide_tensor_num_elements(out);
    for (int64_t i = 0; i < n; i++) {
        if (!s[i].data)
            continue; /* an empty string */
        const char *src = s[i].data;
        size_t len = s[i].len;
        s[i].data = NULL;
        s[i].len = 0;
        if (tide_tensor_string_set(out, i, src, len, NULL) != TIDE_OK) {
            memset(s + i + 1, 0, (size_t)(n - i - 1) * sizeof *s);
            return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED,
                                     "out of memory copying %lld strings", (long long)n);
        }
    }
    return TIDE_OK;
}

/* Sets output i to the elements of `in` from element `off` on, viewed with `shape` (no copy). */
static tide_status set_view(tide_kernel_ctx *ctx, int i, tide_tensor *in, int64_t off,
                            const tide_shape *shape)
{
    int64_t n = tide_shape_num_elements(shape), total = tide_tensor_num_elements(in);
    const tide_shape *is = tide_tensor_shape(in);
    tide_tensor *v = NULL, *part = NULL;
    if (off == 0 && n == total) {
        if (tide_shape_equal(shape, is)) {
            tide_kernel_set_output(ctx, i, in);
            return TIDE_OK;
        }
        v = tide_tensor_reshape(in, shape, NULL);
    } else {
        int64_t row = is->rank > 0 && is->dims[0] > 0 ? total / is->dims[0] : 0;
        if (row > 0 && off % row == 0 && n % row == 0) {
            part = tide_tensor_slice(in, off / row, (off + n) / row, NULL);
        } else {
            tide_shape flat = tide_shape_vector(total);
            tide_tensor *f = tide_tensor_reshape(in, &flat, NULL);
            part = f ? tide_tensor_slice(f, off, off + n, NULL) : NULL;
            tide_tensor_release(f);
        }
        if (part && tide_shape_equal(shape, tide_tensor_shape(part))) {
            v = part;
            part = NULL;
        } else if (part) {
            v = tide_tensor_reshape(part, shape, NULL);
        }
    }
    tide_tensor_release(part);
    if (!v)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory making a view");
    tide_kernel_set_output(ctx, i, v);
    tide_tensor_release(v);
    return TIDE_OK;
}

static tide_tensor *alloc_output(tide_kernel_ctx *ctx, int i, const tide_shape *shape)
{
    return tide_kernel_alloc_output(ctx, i, shape, false);
}

/* ---------------------------------------------------------------- per-element-size loops */

/* dst[j] = src[j * stride], j < n (reversal, the common negative stride, has its own loop) */
#define STRIDED_ROW(name, type)                                                          \
    static void name(char *dst, const char *src, int64_t n, int64_t stride)              \
    {                                                                                    \
        type *d = (type *)dst;                                                           \
        const type *s = (const type *)src;                                               \
        if (stride == -1) {                                                              \
            for (int64_t j = 0; j < n; j++)                                              \
                d[j] = s[-j];                                                            \
            return;                                                                      \
        }                                                                                \
        for (int64_t j = 0; j < n; j++)                                                  \
            d[j] = s[j * stride];                                                        \
    }
/* The tile edge of a blocked transposition: source runs of 256 bytes, at most 64 elements. */
#define TILE_EDGE(type) (256 / sizeof(type) > 64 ? 64 : 256 / sizeof(type))
/* dst[r * dst_stride + c] = src[r + c * src_stride] for r < rows, c < cols (both <= the tile
 * edge): one tile of a transposition. Through a buffer, so that every source and destination
 * cache line is touched once per tile (with power-of-two strides the lines share cache sets and
 * would evict each other if read in turns), prefetching the source rows of the next tile
 * (next_cols of them at src + cols * src_stride) while reading these: strided runs defeat the
 * hardware prefetcher. */
#define TILE_2D(name, type)                                                              \
    static void name(char *dst, const char *src, int64_t rows, int64_t cols,             \
                     int64_t dst_stride, int64_t src_stride, int64_t next_cols)          \
    {                                                                                    \
        enum { EDGE = TILE_EDGE(type), LINE = 64 / sizeof(type) ? 64 / sizeof(type) : 1 };  \
        type buf[EDGE][EDGE];                                                            \
        for (int64_t c = 0; c < cols; c++) {                                             \
            const type *s = (const type *)src + c * src_stride;                          \
            if (c < next_cols)                                                           \
                for (int64_t r = 0; r < rows; r += LINE)                                 \
                    __builtin_prefetch(s + cols * src_stride + r);                       \
            for (int64_t r = 0; r < rows; r++)                                           \
                buf[r][c] = s[r];                                                        \
        }                                                                                \
        for (int64_t r = 0; r < rows; r++) {                                             \
            type *d = (type *)dst + r * dst_stride;                                      \
            for (int64_t c = 0; c < cols; c++)                                           \
                d[c] = buf[r][c];                                                        \
        }                                                                                \
    }
/* dst[0..n) = *value */
#define FILL(name, type)                                                                 \
    static void name(char *dst, const void *value, int64_t n)                            \
    {                                                                                    \
        type v, *d = (type *)dst;                                                        \
        memcpy(&v, value, sizeof v);                                                     \
        for (int64_t j = 0; j < n; j++)                                                  \
            d[j] = v;                                                                    \
    }
/* Interleaving n pieces of one element per row: dst[o * n + i] = piece_i[o], and back. */
#define INTERLEAVE(name, type)                                                           \
    static void name##_join(char *dst, char *const *pieces, int n, int64_t b, int64_t e) \
    {                                                                                    \
        for (int64_t o = b; o < e; o++)                                                  \
            for (int i = 0; i < n; i++)                                                  \
                ((type *)dst)[o * n + i] = ((const type *)pieces[i])[o];                 \
    }                                                                                    \
    static void name##_split(const char *src, char *const *pieces, int n, int64_t b,     \
                             int64_t e)                                                  \
    {                                                                                    \
        for (int64_t o = b; o < e; o++)                                                  \
            for (int i = 0; i < n; i++)                                                  \
                ((type *)pieces[i])[o] = ((const type *)src)[o * n + i];                 \
    }

#define STAMP(M)                                                                         \
    M(M##_1, uint8_t)                                                                    \
    M(M##_2, uint16_t)                                                                   \
    M(M##_4, uint32_t)                                                                   \
    M(M##_8, uint64_t)                                                                   \
    M(M##_16, elem16)
STAMP(STRIDED_ROW)
STAMP(TILE_2D)
STAMP(FILL)
STAMP(INTERLEAVE)

typedef void (*strided_row_fn)(char *, const char *, int64_t, int64_t);
typedef void (*tile_fn)(char *, const char *, int64_t, int64_t, int64_t, int64_t, int64_t);
typedef void (*fill_fn)(char *, const void *, int64_t);
typedef void (*join_fn)(char *, char *const *, int, int64_t, int64_t);
typedef void (*split_fn)(const char *, char *const *, int, int64_t, int64_t);

static const strided_row_fn strided_rows[] = {STRIDED_ROW_1, STRIDED_ROW_2, STRIDED_ROW_4,
                                              STRIDED_ROW_8, STRIDED_ROW_16};
static const tile_fn tiles[] = {TILE_2D_1, TILE_2D_2, TILE_2D_4, TILE_2D_8, TILE_2D_16};
static const fill_fn fills[] = {FILL_1, FILL_2, FILL_4, FILL_8, FILL_16};
static const join_fn joins[] = {INTERLEAVE_1_join, INTERLEAVE_2_join, INTERLEAVE_4_join,
                                INTERLEAVE_8_join, INTERLEAVE_16_join};
static const split_fn splits[] = {INTERLEAVE_1_split, INTERLEAVE_2_split, INTERLEAVE_4_split,
                                  INTERLEAVE_8_split, INTERLEAVE_16_split};

/* ---------------------------------------------------------------- the affine gather */

typedef struct gather_plan {
    int rank;
    int64_t dims[TIDE_MAX_RANK];
    int64_t strides[TIDE_MAX_RANK];  /* input strides (elements) per output dimension */
    int64_t ostrides[TIDE_MAX_RANK]; /* output strides (elements) */
    int64_t base;                    /* input element of output element 0 */
    int kdim;                        /* blocked mode: the dimension read contiguously */
    int64_t edge, kblocks;           /* blocked mode: tile edge, blocks of kdim */
    size_t esize;
    const char *src; /* input element `base` */
    char *dst;
    strided_row_fn row; /* NULL: rows are contiguous in the input (memcpy) */
    tile_fn tile;
} gather_plan;

/* Drops size-1 dimensions and merges neighbours that are contiguous with each other. */
static void gather_simplify(gather_plan *p)
{
    int r = 0;
    for (int i = 0; i < p->rank; i++) {
        if (p->dims[i] == 1)
            continue;
        if (r > 0 && p->strides[r - 1] == p->strides[i] * p->dims[i]) {
            p->dims[r - 1] *= p->dims[i];
            p->strides[r - 1] = p->strides[i];
            continue;
        }
        p->dims[r] = p->dims[i];
        p->strides[r] = p->strides[i];
        r++;
    }
    p->rank = r;
    int64_t st = 1;
    for (int i = r - 1; i >= 0; i--) {
        p->ostrides[i] = st;
        st *= p->dims[i];
    }
}

/* Rows [begin, end) of the output (every dimension but the last). */
static void gather_rows(int64_t begin, int64_t end, void *arg)
{
    const gather_plan *p = arg;
    int last = p->rank - 1;
    int64_t idx[TIDE_MAX_RANK], off = 0, r = begin;
    for (int i = last - 1; i >= 0; i--) {
        idx[i] = r % p->dims[i];
        r /= p->dims[i];
        off += idx[i] * p->strides[i];
    }
    int64_t len = p->dims[last], es = (int64_t)p->esize;
    char *dst = p->dst + begin * len * es;
    for (int64_t row = begin; row < end; row++, dst += len * es) {
        if (p->row)
            p->row(dst, p->src + off * es, len, p->strides[last]);
        else
            memcpy(dst, p->src + off * es, (size_t)(len * es));
        for (int i = last - 1; i >= 0; i--) {
            off += p->strides[i];
            if (++idx[i] < p->dims[i])
                break;
            off -= p->strides[i] * p->dims[i];
            idx[i] = 0;
        }
    }
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Units [begin, end) of the blocked mode. A unit is one (index over the other dimensions) x
 * (outer x outer square of dims kdim and last), done as tiles: the pages it touches stay in the
 * TLB while its tiles reuse them. */
static void gather_blocked(int64_t begin, int64_t end, void *arg)
{
    const gather_plan *p = arg;
    int k = p->kdim, last = p->rank - 1;
    int64_t es = (int64_t)p->esize, rows_total = p->dims[k], cols_total = p->dims[last];
    int64_t edge = p->edge, outer = 4 * edge, cblocks = (cols_total + outer - 1) / outer;
    for (int64_t u = begin; u < end; u++) {
        int64_t cb0 = (u % cblocks) * outer, kb0 = (u / cblocks % p->kblocks) * outer;
        int64_t o = u / cblocks / p->kblocks, src = 0, dst = 0;
        for (int i = last - 1; i >= 0; i--) {
            if (i == k)
                continue;
            int64_t idx = o % p->dims[i];
            o /= p->dims[i];
            src += idx * p->strides[i];
            dst += idx * p->ostrides[i];
        }
        int64_t cb_end = min64(cb0 + outer, cols_total);
        for (int64_t kb = kb0; kb < min64(kb0 + outer, rows_total); kb += edge)
            for (int64_t cb = cb0; cb < cb_end; cb += edge)
                p->tile(p->dst + (dst + kb * p->ostrides[k] + cb) * es,
                        p->src + (src + kb + cb * p->strides[last]) * es,
                        min64(edge, rows_total - kb), min64(edge, cols_total - cb),
                        p->ostrides[k], p->strides[last],
                        cb + edge < cb_end ? min64(edge, cb_end - cb - edge) : 0);
    }
}

/* Produces output 0 of shape `shape` from `in` by the plan (dims, strides and base filled in;
 * the shape's element count must be > 0): a view when the result is contiguous in the input. */
static tide_status gather_run(tide_kernel_ctx *ctx, tide_tensor *in, gather_plan *p,
                              const tide_shape *shape)
{
    gather_simplify(p);
    if (p->rank == 0 || (p->rank == 1 && p->strides[0] == 1))
        return set_view(ctx, 0, in, p->base, shape);
    tide_tensor *out = alloc_output(ctx, 0, shape);
    if (!out)
        return tide_kernel_status(ctx);
    p->esize = tide_dtype_size(tide_tensor_dtype(in));
    p->src = (const char *)tide_tensor_data(in) + p->base * (int64_t)p->esize;
    p->dst = tide_tensor_data(out);
    int sc = size_class(p->esize), last = p->rank - 1;
    p->row = p->strides[last] == 1 ? NULL : strided_rows[sc];
    p->kdim = -1;
    for (int i = 0; i < last && p->row; i++)
        if (p->strides[i] == 1 && p->dims[i] >= 8 && p->dims[last] >= 8)
            p->kdim = i;
    int64_t n = tide_shape_num_elements(shape);
    if (p->kdim >= 0) {
        p->tile = tiles[sc];
        static const int64_t edges[] = {TILE_EDGE(uint8_t), TILE_EDGE(uint16_t),
                                        TILE_EDGE(uint32_t), TILE_EDGE(uint64_t),
                                        TILE_EDGE(elem16)};
        int64_t rows = p->dims[p->kdim], cols = p->dims[last], outer = 4 * edges[sc];
        p->edge = edges[sc];
        p->kblocks = (rows + outer - 1) / outer;
        int64_t units = n / rows / cols * p->kblocks * ((cols + outer - 1) / outer);
        tide_kernel_parallel_for(ctx, units, (double)(min64(rows, outer) * min64(cols, outer)),
                                 gather_blocked, p);
    } else {
        int64_t len = p->dims[last];
        double cost = p->row ? (double)len : (double)len * (double)p->esize * 0.06 + 10.0;
        tide_kernel_parallel_for(ctx, n / len, cost, gather_rows, p);
    }
    return deepen_strings(ctx, out);
}

/* ---------------------------------------------------------------- Reshape */

static tide_status reshape_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    int64_t v[TIDE_MAX_RANK];
    int n;
    tide_status st = index_vector(ctx, 1, "shape", v, TIDE_MAX_RANK, &n);
    if (st != TIDE_OK)
        return st;
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    int unknown = -1;
    int64_t known = 1, in_n = tide_tensor_num_elements(in);
    for (int i = 0; i < n; i++) {
        if (v[i] < -1 || (v[i] == -1 && unknown >= 0))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "shape %s: sizes must be >= 0, with at most one -1",
                                     tide_op_format_values(v, n, a, sizeof a));
        if (v[i] == -1)
            unknown = i;
        else if (__builtin_mul_overflow(known, v[i], &known))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "shape %s has too many elements",
                                     tide_op_format_values(v, n, a, sizeof a));
    }
    tide_shape shape = tide_shape_make(n, v);
    if (unknown >= 0 && known == 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "cannot infer the -1 in shape %s: the other sizes multiply to 0",
                                 tide_op_format_values(v, n, a, sizeof a));
    if (unknown >= 0) {
        if (in_n % known)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "cannot reshape a tensor of shape %s (%lld elements) into "
                                     "shape %s: %lld is not a multiple of %lld",
                                     SHAPE_STR(tide_tensor_shape(in), a), (long long)in_n,
                                     tide_op_format_values(v, n, b, sizeof b), (long long)in_n,
                                     (long long)known);
        shape.dims[unknown] = in_n / known;
    } else if (in_n != known) {
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "cannot reshape a tensor of shape %s (%lld elements) into shape "
                                 "%s (%lld elements)",
                                 SHAPE_STR(tide_tensor_shape(in), a), (long long)in_n,
                                 SHAPE_STR(&shape, b), (long long)known);
    }
    return set_view(ctx, 0, in, 0, &shape);
}

/* ---------------------------------------------------------------- Transpose */

static tide_status transpose_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *x = tide_kernel_input(ctx, 0);
    const tide_shape *xs = tide_tensor_shape(x);
    int64_t perm[TIDE_MAX_RANK];
    int n;
    tide_status st = index_vector(ctx, 1, "perm", perm, TIDE_MAX_RANK, &n);
    if (st != TIDE_OK)
        return st;
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (n != xs->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "perm has %d entries but x has rank %d (shape %s)", n, xs->rank,
                                 SHAPE_STR(xs, a));
    gather_plan p = {.rank = n};
    int64_t in_strides[TIDE_MAX_RANK];
    contiguous_strides(xs, in_strides);
    tide_shape out = *xs;
    bool seen[TIDE_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "perm %s is not a permutation of 0..%d (x shape %s)",
                                     tide_op_format_values(perm, n, a, sizeof a), n - 1,
                                     SHAPE_STR(xs, b));
        seen[perm[i]] = true;
        out.dims[i] = p.dims[i] = xs->dims[perm[i]];
        p.strides[i] = in_strides[perm[i]];
    }
    if (tide_tensor_num_elements(x) == 0)
        return alloc_output(ctx, 0, &out) ? TIDE_OK : tide_kernel_status(ctx);
    return gather_run(ctx, x, &p, &out);
}

/* ---------------------------------------------------------------- Slice */

static tide_status slice_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *is = tide_tensor_shape(in);
    int64_t begin[TIDE_MAX_RANK], size[TIDE_MAX_RANK];
    int nb, ns;
    tide_status st = index_vector(ctx, 1, "begin", begin, TIDE_MAX_RANK, &nb);
    if (st == TIDE_OK)
        st = index_vector(ctx, 2, "size", size, TIDE_MAX_RANK, &ns);
    if (st != TIDE_OK)
        return st;
    char a[TIDE_SHAPE_STR_MAX];
    if (nb != is->rank || ns != is->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "begin has %d entries and size %d, but the input has rank %d "
                                 "(shape %s)", nb, ns, is->rank, SHAPE_STR(is, a));
    tide_shape out = *is;
    for (int i = 0; i < is->rank; i++) {
        int64_t dim = is->dims[i], b = begin[i], s = size[i];
        if (s < -1)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "size[%d] = %lld is negative (only -1, meaning \"to the "
                                     "end\", is allowed)", i, (long long)s);
        if (b < 0 || b > dim)
            return tide_kernel_error(ctx, TIDE_OUT_OF_RANGE,
                                     "begin[%d] = %lld is out of range for dimension %d of input "
                                     "shape %s", i, (long long)b, i, SHAPE_STR(is, a));
        if (s > dim - b)
            return tide_kernel_error(ctx, TIDE_OUT_OF_RANGE,
                                     "size[%d] = %lld goes past the end of dimension %d: begin "
                                     "%lld + size %lld > %lld (input shape %s)", i, (long long)s,
                                     i, (long long)b, (long long)s, (long long)dim,
                                     SHAPE_STR(is, a));
        out.dims[i] = s == -1 ? dim - b : s;
    }
    if (tide_shape_num_elements(&out) == 0)
        return alloc_output(ctx, 0, &out) ? TIDE_OK : tide_kernel_status(ctx);
    gather_plan p = {.rank = is->rank};
    contiguous_strides(is, p.strides);
    for (int i = 0; i < is->rank; i++) {
        p.dims[i] = out.dims[i];
        p.base += begin[i] * p.strides[i];
    }
    return gather_run(ctx, in, &p, &out);
}

/* ---------------------------------------------------------------- StridedSlice */

static tide_status strided_slice_init(tide_kernel_ctx *ctx, void **state)
{
    int64_t *masks = calloc(TIDE_SS_NUM_MASKS, sizeof *masks);
    if (!masks)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_array_ss_masks(tide_kernel_attrs(ctx), masks);
    *state = masks;
    return TIDE_OK;
}

static tide_status strided_slice_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *is = tide_tensor_shape(in);
    int64_t spec[3][TIDE_SS_MAX_SPEC];
    int n[3];
    static const char *const names[3] = {"begin", "end", "strides"};
    for (int i = 0; i < 3; i++) {
        tide_status st = index_vector(ctx, i + 1, names[i], spec[i], TIDE_SS_MAX_SPEC, &n[i]);
        if (st != TIDE_OK)
            return st;
    }
    if (n[1] != n[0] || n[2] != n[0])
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "begin, end and strides must have the same length, got %d, %d "
                                 "and %d", n[0], n[1], n[2]);
    int64_t dense_begin[TIDE_MAX_RANK], dense_stride[TIDE_MAX_RANK];
    tide_shape processing, out;
    char msg[256], a[TIDE_SHAPE_STR_MAX];
    tide_status st = tide_array_strided_slice(is, n[0], spec[0], spec[1], spec[2],
                                              tide_kernel_state(ctx), dense_begin, dense_stride,
                                              &processing, &out, msg, sizeof msg);
    if (st != TIDE_OK)
        return tide_kernel_error(ctx, st, "%s (input shape %s)", msg, SHAPE_STR(is, a));
    if (tide_shape_num_elements(&out) == 0)
        return alloc_output(ctx, 0, &out) ? TIDE_OK : tide_kernel_status(ctx);
    gather_plan p = {.rank = is->rank};
    int64_t in_strides[TIDE_MAX_RANK];
    contiguous_strides(is, in_strides);
    for (int i = 0; i < is->rank; i++) {
        p.dims[i] = processing.dims[i];
        /* |stride| is only bounded by the dim when the size is > 1 */
        p.strides[i] = p.dims[i] > 1 ? dense_stride[i] * in_strides[i] : 0;
        p.base += dense_begin[i] * in_strides[i];
    }
    return gather_run(ctx, in, &p, &out);
}

/* ---------------------------------------------------------------- pieces: Concat, Pack, Split,
 * Unpack. The big tensor is `outer` rows; row o is piece 0's row o, then piece 1's, ... */

typedef struct piece_job {
    int n;
    char **pieces;       /* piece i's data */
    const size_t *bytes; /* bytes of piece i per row */
    char *whole;
    size_t row_bytes;
    int same_elem;       /* every piece is one element per row: its size class, else -1 */
} piece_job;

static void join_rows(int64_t b, int64_t e, void *arg)
{
    const piece_job *j = arg;
    if (j->same_elem >= 0) {
        joins[j->same_elem](j->whole, j->pieces, j->n, b, e);
        return;
    }
    for (int64_t o = b; o < e; o++) {
        char *d = j->whole + (size_t)o * j->row_bytes;
        for (int i = 0; i < j->n; i++) {
            memcpy(d, j->pieces[i] + (size_t)o * j->bytes[i], j->bytes[i]);
            d += j->bytes[i];
        }
    }
}

static void split_rows(int64_t b, int64_t e, void *arg)
{
    const piece_job *j = arg;
    if (j->same_elem >= 0) {
        splits[j->same_elem](j->whole, j->pieces, j->n, b, e);
        return;
    }
    for (int64_t o = b; o < e; o++) {
        const char *s = j->whole + (size_t)o * j->row_bytes;
        for (int i = 0; i < j->n; i++) {
            memcpy(j->pieces[i] + (size_t)o * j->bytes[i], s, j->bytes[i]);
            s += j->bytes[i];
        }
    }
}

/* Runs join (whole = output 0) or split (pieces = outputs) over `outer` rows. */
static void run_pieces(tide_kernel_ctx *ctx, piece_job *j, int64_t outer, size_t esize, bool join)
{
    j->row_bytes = 0;
    j->same_elem = size_class(esize);
    for (int i = 0; i < j->n; i++) {
        j->row_bytes += j->bytes[i];
        if (j->bytes[i] != esize)
            j->same_elem = -1;
    }
    double cost = (double)j->row_bytes * 0.06 + 4.0 * j->n;
    tide_kernel_parallel_for(ctx, outer, cost, join ? join_rows : split_rows, j);
}

/* Arrays for n pieces: on the stack when few, else one malloc (freed by pieces_free). */
typedef struct piece_arrays {
    char *local_ptrs[MAX_LOCAL_PIECES];
    size_t local_bytes[MAX_LOCAL_PIECES];
    tide_tensor *local_tensors[MAX_LOCAL_PIECES];
    char **ptrs;
    size_t *bytes;
    tide_tensor **tensors; /* split: the outputs (borrowed from the context) */
} piece_arrays;

static bool pieces_init(piece_arrays *a, int n)
{
    if (n <= MAX_LOCAL_PIECES) {
        a->ptrs = a->local_ptrs;
        a->bytes = a->local_bytes;
        a->tensors = a->local_tensors;
        return true;
    }
    a->ptrs = malloc((size_t)n * sizeof *a->ptrs);
    a->bytes = malloc((size_t)n * sizeof *a->bytes);
    a->tensors = malloc((size_t)n * sizeof *a->tensors);
    return a->ptrs && a->bytes && a->tensors;
}

static void pieces_free(piece_arrays *a)
{
    if (a->ptrs != a->local_ptrs)
        free(a->ptrs);
    if (a->bytes != a->local_bytes)
        free(a->bytes);
    if (a->tensors != a->local_tensors)
        free(a->tensors);
}

/* Input i must have ref's rank and, unless skip is RANKS_ONLY, its shape except on dimension
 * `skip` (-1: none). */
#define RANKS_ONLY (-2)
static tide_status check_like(tide_kernel_ctx *ctx, int i, int ref, int skip, const char *extra)
{
    const tide_shape *s = tide_tensor_shape(tide_kernel_input(ctx, i));
    const tide_shape *r = tide_tensor_shape(tide_kernel_input(ctx, ref));
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (s->rank != r->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "input %d has shape %s, of rank %d, but input %d has shape %s, "
                                 "of rank %d", i, SHAPE_STR(s, a), s->rank, ref, SHAPE_STR(r, b),
                                 r->rank);
    for (int d = 0; d < s->rank && skip != RANKS_ONLY; d++)
        if (d != skip && s->dims[d] != r->dims[d])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "input %d has shape %s, which does not match input %d's "
                                     "shape %s in dimension %d%s", i, SHAPE_STR(s, a), ref,
                                     SHAPE_STR(r, b), d, extra);
    return TIDE_OK;
}

/* Joins inputs [first, first + n) into output 0 of shape `out`, each contributing its elements
 * from dimension `axis` on per row of `outer` rows. */
static tide_status join_inputs(tide_kernel_ctx *ctx, int first, int n, int axis, int64_t outer,
                               const tide_shape *out)
{
    tide_tensor *o = alloc_output(ctx, 0, out);
    if (!o)
        return tide_kernel_status(ctx);
    if (tide_tensor_num_elements(o) == 0)
        return TIDE_OK;
    piece_arrays pa;
    if (!pieces_init(&pa, n)) {
        pieces_free(&pa);
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    size_t esize = tide_dtype_size(tide_tensor_dtype(o));
    for (int i = 0; i < n; i++) {
        tide_tensor *t = tide_kernel_input(ctx, first + i);
        const tide_shape *s = tide_tensor_shape(t);
        pa.ptrs[i] = tide_tensor_data(t);
        pa.bytes[i] = (size_t)prod(s->dims, axis, s->rank) * esize;
    }
    piece_job j = {.n = n, .pieces = pa.ptrs, .bytes = pa.bytes, .whole = tide_tensor_data(o)};
    run_pieces(ctx, &j, outer, esize, true);
    pieces_free(&pa);
    return deepen_strings(ctx, o);
}

/* Piece `size` long along `axis` of shape s; unpack: the axis (of size 1) dropped. */
static tide_shape piece_shape(const tide_shape *s, int axis, int64_t size, bool unpack)
{
    tide_shape piece = *s;
    piece.dims[axis] = size;
    if (unpack) {
        piece.rank--;
        for (int d = axis; d < piece.rank; d++)
            piece.dims[d] = s->dims[d + 1];
    }
    return piece;
}

/* Splits input `in` along dimension `axis` into outputs [0, n), piece i `sizes[i]` long on the axis
 * (Split: all equal; SplitV: as given; Unpack: all 1 and the axis dropped): views when the rows
 * before the axis are one (outer == 1). */
static tide_status split_input(tide_kernel_ctx *ctx, tide_tensor *in, int n, int axis, const int64_t *sizes,
                               bool unpack)
{
    const tide_shape *s = tide_tensor_shape(in);
    int64_t outer = prod(s->dims, 0, axis), inner = prod(s->dims, axis + 1, s->rank), off = 0;
    tide_status st = TIDE_OK;
    if (outer == 1 || tide_shape_num_elements(s) == 0) {
        for (int i = 0; i < n && st == TIDE_OK; off += sizes[i] * inner, i++) {
            tide_shape piece = piece_shape(s, axis, sizes[i], unpack);
            if (tide_shape_num_elements(&piece) && outer == 1)
                st = set_view(ctx, i, in, off, &piece);
            else if (!alloc_output(ctx, i, &piece))
                st = tide_kernel_status(ctx);
        }
        return st;
    }
    piece_arrays pa;
    if (!pieces_init(&pa, n)) {
        pieces_free(&pa);
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    size_t esize = tide_dtype_size(tide_tensor_dtype(in));
    for (int i = 0; i < n && st == TIDE_OK; i++) {
        tide_shape piece = piece_shape(s, axis, sizes[i], unpack);
        pa.tensors[i] = alloc_output(ctx, i, &piece);
        if (!pa.tensors[i])
            st = tide_kernel_status(ctx);
        else
            pa.ptrs[i] = tide_tensor_data(pa.tensors[i]);
        pa.bytes[i] = (size_t)(sizes[i] * inner) * esize;
    }
    if (st == TIDE_OK) {
        piece_job j = {.n = n, .pieces = pa.ptrs, .bytes = pa.bytes, .whole = tide_tensor_data(in)};
        run_pieces(ctx, &j, outer, esize, false);
        for (int i = 0; i < n; i++) {
            if (st == TIDE_OK)
                st = deepen_strings(ctx, pa.tensors[i]);
            else if (tide_tensor_dtype(in) == TIDE_STRING) /* still shallow: forget them */
                memset(pa.ptrs[i], 0, tide_tensor_byte_size(pa.tensors[i]));
        }
    }
    pieces_free(&pa);
    return st;
}

/* ---------------------------------------------------------------- Concat and Pack */

/* Concatenates the n values from input `first` on along the scalar input `axis_input`: ConcatV2
 * (values, then the axis) and the legacy Concat (the axis, then the values). */
static tide_status concat_values(tide_kernel_ctx *ctx, int first, int n, int axis_input)
{
    int64_t axis;
    if (n < 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s needs at least one value",
                                 first ? "Concat" : "ConcatV2");
    tide_status st = index_scalar(ctx, axis_input, first ? "concat_dim" : "axis", &axis);
    if (st != TIDE_OK)
        return st;
    for (int i = first + 1; i < first + n && st == TIDE_OK; i++)
        st = check_like(ctx, i, first, RANKS_ONLY, "");
    if (st != TIDE_OK)
        return st;
    tide_shape out = *tide_tensor_shape(tide_kernel_input(ctx, first));
    if (out.rank == 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "cannot concatenate scalars (use Pack to stack them)");
    int64_t given = axis;
    if (!tide_array_normalize_axis(given, out.rank, &axis))
        return axis_error(ctx, given, out.rank, &out, "values");
    char extra[64];
    snprintf(extra, sizeof extra, " (concatenating on axis %lld)", (long long)axis);
    for (int i = first + 1; i < first + n && st == TIDE_OK; i++) {
        st = check_like(ctx, i, first, (int)axis, extra);
        int64_t d = tide_tensor_dim(tide_kernel_input(ctx, i), (int)axis);
        if (st == TIDE_OK && __builtin_add_overflow(out.dims[axis], d, &out.dims[axis]))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "concatenated size overflows");
    }
    if (st != TIDE_OK)
        return st;
    if (n == 1) {
        tide_kernel_set_output(ctx, 0, tide_kernel_input(ctx, first));
        return TIDE_OK;
    }
    int64_t outer = tide_shape_num_elements(&out) ? prod(out.dims, 0, (int)axis) : 0;
    return join_inputs(ctx, first, n, (int)axis, outer, &out);
}

static tide_status concat_v2_compute(tide_kernel_ctx *ctx)
{
    int n = tide_kernel_num_inputs(ctx) - 1;
    return concat_values(ctx, 0, n, n);
}

static tide_status concat_compute(tide_kernel_ctx *ctx)
{
    return concat_values(ctx, 1, tide_kernel_num_inputs(ctx) - 1, 0);
}

typedef struct axis_state {
    int64_t axis;
} axis_state;

static tide_status axis_init(tide_kernel_ctx *ctx, void **state)
{
    axis_state *s = calloc(1, sizeof *s);
    if (!s)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_attrs_get_int(tide_kernel_attrs(ctx), "axis", &s->axis);
    *state = s;
    return TIDE_OK;
}

static tide_status pack_compute(tide_kernel_ctx *ctx)
{
    int n = tide_kernel_num_inputs(ctx);
    if (n < 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "Pack needs at least one value");
    tide_tensor *first = tide_kernel_input(ctx, 0);
    const tide_shape *s = tide_tensor_shape(first);
    tide_status st = TIDE_OK;
    for (int i = 1; i < n && st == TIDE_OK; i++)
        st = check_like(ctx, i, 0, -1, "");
    if (st != TIDE_OK)
        return st;
    if (s->rank + 1 > TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "packing rank-%d values gives rank %d; at most %d is supported",
                                 s->rank, s->rank + 1, TIDE_MAX_RANK);
    int64_t given = ((const axis_state *)tide_kernel_state(ctx))->axis, axis;
    if (!tide_array_normalize_axis(given, s->rank + 1, &axis))
        return axis_error(ctx, given, s->rank + 1, s, "the packed result of values");
    tide_shape out = *s;
    out.rank = s->rank + 1;
    for (int d = s->rank; d > axis; d--)
        out.dims[d] = s->dims[d - 1];
    out.dims[axis] = n;
    if (n == 1)
        return set_view(ctx, 0, first, 0, &out);
    int64_t outer = tide_shape_num_elements(&out) ? prod(s->dims, 0, (int)axis) : 0;
    return join_inputs(ctx, 0, n, (int)axis, outer, &out);
}

/* ---------------------------------------------------------------- Split and Unpack */

static tide_status split_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *value = tide_kernel_input(ctx, 1);
    const tide_shape *s = tide_tensor_shape(value);
    int n = tide_kernel_num_outputs(ctx);
    int64_t given, axis;
    if (n < 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "num_split must be >= 1");
    tide_status st = index_scalar(ctx, 0, "axis", &given);
    if (st != TIDE_OK)
        return st;
    if (!tide_array_normalize_axis(given, s->rank, &axis))
        return axis_error(ctx, given, s->rank, s, "value");
    char a[TIDE_SHAPE_STR_MAX];
    if (s->dims[axis] % n)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "dimension %lld of value (shape %s) has size %lld, which does not "
                                 "split evenly into %d pieces", (long long)axis, SHAPE_STR(s, a),
                                 (long long)s->dims[axis], n);
    if (n == 1) {
        tide_kernel_set_output(ctx, 0, value);
        return TIDE_OK;
    }
    int64_t *sizes = malloc((size_t)n * sizeof *sizes);
    if (!sizes)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < n; i++)
        sizes[i] = s->dims[axis] / n;
    st = split_input(ctx, value, n, (int)axis, sizes, false);
    free(sizes);
    return st;
}

/* SplitV(value, size_splits, split_dim). */
static tide_status split_v_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *value = tide_kernel_input(ctx, 0);
    const tide_tensor *size_splits = tide_kernel_input(ctx, 1);
    const tide_shape *s = tide_tensor_shape(value);
    int n = tide_kernel_num_outputs(ctx);
    int64_t given, axis;
    char a[TIDE_SHAPE_STR_MAX], msg[TIDE_OP_MSG_MAX];
    tide_status st = index_scalar(ctx, 2, "split_dim", &given);
    if (st != TIDE_OK)
        return st;
    if (tide_tensor_rank(size_splits) != 1 || tide_tensor_num_elements(size_splits) != n)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "size_splits must be a vector of num_split = %d "
                                 "sizes, got shape %s", n, SHAPE_STR(tide_tensor_shape(size_splits), a));
    if (!tide_array_normalize_axis(given, s->rank, &axis))
        return axis_error(ctx, given, s->rank, s, "value");
    int64_t *sizes = malloc(2 * (size_t)n * sizeof *sizes);
    if (!sizes)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_op_index_values(size_splits, sizes, n);
    if (!tide_array_split_sizes(sizes, n, s->dims[axis], sizes + n, msg, sizeof msg))
        st = tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%s (value %s, split along dimension %lld)", msg,
                               SHAPE_STR(s, a), (long long)axis);
    else if (n == 1)
        tide_kernel_set_output(ctx, 0, value);
    else
        st = split_input(ctx, value, n, (int)axis, sizes + n, false);
    free(sizes);
    return st;
}

static tide_status unpack_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *value = tide_kernel_input(ctx, 0);
    const tide_shape *s = tide_tensor_shape(value);
    int n = tide_kernel_num_outputs(ctx);
    char a[TIDE_SHAPE_STR_MAX];
    if (s->rank == 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot unpack a scalar");
    int64_t given = ((const axis_state *)tide_kernel_state(ctx))->axis, axis;
    if (!tide_array_normalize_axis(given, s->rank, &axis))
        return axis_error(ctx, given, s->rank, s, "value");
    if (s->dims[axis] != n)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "num=%d but dimension %lld of value (shape %s) has size %lld", n,
                                 (long long)axis, SHAPE_STR(s, a), (long long)s->dims[axis]);
    int64_t *ones = malloc((size_t)(n ? n : 1) * sizeof *ones);
    if (!ones)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < n; i++)
        ones[i] = 1;
    tide_status st = split_input(ctx, value, n, (int)axis, ones, true);
    free(ones);
    return st;
}

/* ---------------------------------------------------------------- Tile */

typedef struct tile_plan {
    int rank;
    int64_t dims[TIDE_MAX_RANK], mult[TIDE_MAX_RANK];
    int64_t in_strides[TIDE_MAX_RANK], out_strides[TIDE_MAX_RANK]; /* elements */
    int64_t es;
    const char *src;
    char *dst;
    fill_fn fill;
} tile_plan;

/* dst holds `bytes`; makes it `times` copies in a row, doubling what is done with each memcpy. */
static void replicate(char *dst, size_t bytes, int64_t times)
{
    size_t total = bytes * (size_t)times, done = bytes;
    while (done < total) {
        size_t c = done < total - done ? done : total - done;
        memcpy(dst + done, dst, c);
        done += c;
    }
}

/* Writes the output block of dimension k (with its repeats) from the input block at src. */
static void tile_fill(const tile_plan *p, int k, char *dst, const char *src)
{
    if (k == p->rank - 1 && p->dims[k] == 1) { /* one element repeated: a fill */
        p->fill(dst, src, p->mult[k]);
        return;
    }
    if (k == p->rank - 1) {
        memcpy(dst, src, (size_t)(p->dims[k] * p->es));
    } else {
        for (int64_t i = 0; i < p->dims[k]; i++)
            tile_fill(p, k + 1, dst + i * p->out_strides[k] * p->es,
                      src + i * p->in_strides[k] * p->es);
    }
    replicate(dst, (size_t)(p->dims[k] * p->out_strides[k] * p->es), p->mult[k]);
}

static void tile_rows(int64_t b, int64_t e, void *arg)
{
    const tile_plan *p = arg;
    for (int64_t i = b; i < e; i++)
        tile_fill(p, 1, p->dst + i * p->out_strides[0] * p->es,
                  p->src + i * p->in_strides[0] * p->es);
}

/* Merges every dimension that is not repeated into its left neighbour (the output's element
 * order is the same), drops unrepeated size-1 dimensions, computes strides. */
static void tile_simplify(tile_plan *p)
{
    int r = 0;
    for (int i = 0; i < p->rank; i++) {
        if (p->mult[i] == 1 && r > 0) {
            p->dims[r - 1] *= p->dims[i];
        } else if (p->mult[i] != 1 || p->dims[i] != 1) {
            p->dims[r] = p->dims[i];
            p->mult[r++] = p->mult[i];
        }
    }
    p->rank = r;
    int64_t in = 1, out = 1;
    for (int i = r - 1; i >= 0; i--) {
        p->in_strides[i] = in;
        p->out_strides[i] = out;
        in *= p->dims[i];
        out *= p->dims[i] * p->mult[i];
    }
}

static tide_status tile_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *is = tide_tensor_shape(in);
    tile_plan p = {.rank = is->rank};
    int n;
    tide_status st = index_vector(ctx, 1, "multiples", p.mult, TIDE_MAX_RANK, &n);
    if (st != TIDE_OK)
        return st;
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (n != is->rank)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "multiples has %d entries but the input has rank %d (shape %s)", n,
                                 is->rank, SHAPE_STR(is, a));
    tide_shape out = *is;
    bool same = true;
    for (int i = 0; i < n; i++) {
        if (p.mult[i] < 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "multiples %s has a negative entry (input shape %s)",
                                     tide_op_format_values(p.mult, n, a, sizeof a), SHAPE_STR(is, b));
        if (__builtin_mul_overflow(is->dims[i], p.mult[i], &out.dims[i]))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "tiling shape %s by %s overflows",
                                     SHAPE_STR(is, a), tide_op_format_values(p.mult, n, b, sizeof b));
        p.dims[i] = is->dims[i];
        same &= p.mult[i] == 1;
    }
    if (same) {
        tide_kernel_set_output(ctx, 0, in);
        return TIDE_OK;
    }
    tide_tensor *o = alloc_output(ctx, 0, &out);
    if (!o || tide_tensor_num_elements(o) == 0)
        return tide_kernel_status(ctx);
    tile_simplify(&p);
    p.es = (int64_t)tide_dtype_size(tide_tensor_dtype(in));
    p.src = tide_tensor_data(in);
    p.dst = tide_tensor_data(o);
    p.fill = fills[size_class((size_t)p.es)];
    if (p.rank == 1) {
        tile_fill(&p, 0, p.dst, p.src);
    } else {
        tide_kernel_parallel_for(ctx, p.dims[0], (double)(p.out_strides[0] * p.es) * 0.06 + 10.0,
                                 tile_rows, &p);
        replicate(p.dst, (size_t)(p.dims[0] * p.out_strides[0] * p.es), p.mult[0]);
    }
    return deepen_strings(ctx, o);
}

/* ---------------------------------------------------------------- Pad and PadV2 */

typedef struct pad_plan {
    int rank;
    int64_t in[TIDE_MAX_RANK], before[TIDE_MAX_RANK], out[TIDE_MAX_RANK];
    int64_t in_strides[TIDE_MAX_RANK];
    int64_t es;
    const char *src;
    char *dst;
    const void *value; /* the fill element; NULL: zero bytes */
    fill_fn fill;
} pad_plan;

static void pad_fill(const pad_plan *p, char *dst, int64_t n)
{
    if (n > 0 && p->value)
        p->fill(dst, p->value, n);
    else if (n > 0)
        memset(dst, 0, (size_t)(n * p->es));
}

/* Output rows [b, e) (every dimension but the last): fill, copy, fill. */
static void pad_rows(int64_t b, int64_t e, void *arg)
{
    const pad_plan *p = arg;
    int last = p->rank - 1;
    int64_t idx[TIDE_MAX_RANK], r = b, len = p->out[last], es = p->es;
    for (int i = last - 1; i >= 0; i--) {
        idx[i] = r % p->out[i];
        r /= p->out[i];
    }
    for (int64_t row = b; row < e; row++) {
        char *d = p->dst + row * len * es;
        int64_t off = 0;
        bool inside = true;
        for (int i = 0; i < last && inside; i++) {
            int64_t j = idx[i] - p->before[i];
            inside = j >= 0 && j < p->in[i];
            off += j * p->in_strides[i];
        }
        if (!inside) {
            pad_fill(p, d, len);
        } else {
            int64_t pre = p->before[last], n = p->in[last];
            pad_fill(p, d, pre);
            memcpy(d + pre * es, p->src + off * es, (size_t)(n * es));
            pad_fill(p, d + (pre + n) * es, len - pre - n);
        }
        for (int i = last - 1; i >= 0 && ++idx[i] == p->out[i]; i--)
            idx[i] = 0;
    }
}

/* Merges every unpadded dimension into its left neighbour. */
static void pad_simplify(pad_plan *p)
{
    int r = 0;
    for (int i = 0; i < p->rank; i++) {
        bool unpadded = p->before[i] == 0 && p->out[i] == p->in[i];
        if (unpadded && r > 0) {
            p->in[r - 1] *= p->in[i];
            p->before[r - 1] *= p->in[i];
            p->out[r - 1] *= p->in[i];
        } else {
            p->in[r] = p->in[i];
            p->before[r] = p->before[i];
            p->out[r++] = p->out[i];
        }
    }
    p->rank = r;
    tide_shape s = tide_shape_make(r, p->in);
    contiguous_strides(&s, p->in_strides);
}

static tide_status pad_compute(tide_kernel_ctx *ctx)
{
    tide_tensor *in = tide_kernel_input(ctx, 0);
    const tide_shape *is = tide_tensor_shape(in);
    const tide_tensor *pt = tide_kernel_input(ctx, 1);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_rank(pt) != 2 || tide_tensor_dim(pt, 0) != is->rank ||
        tide_tensor_dim(pt, 1) != 2)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "paddings must have shape [rank, 2]; got %s for an input of "
                                 "shape %s", SHAPE_STR(tide_tensor_shape(pt), a), SHAPE_STR(is, b));
    const tide_tensor *cv = tide_kernel_num_inputs(ctx) > 2 ? tide_kernel_input(ctx, 2) : NULL;
    if (cv && tide_tensor_rank(cv) != 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                 "constant_values must be a scalar, got shape %s",
                                 SHAPE_STR(tide_tensor_shape(cv), a));
    int64_t pad[2 * TIDE_MAX_RANK];
    bool none = true;
    pad_plan p = {.rank = is->rank};
    tide_shape out = *is;
    tide_op_index_values(pt, pad, 2 * is->rank);
    for (int i = 0; i < 2 * is->rank; i++)
        none &= pad[i] == 0;
    for (int i = 0; i < is->rank; i++) {
        if (pad[2 * i] < 0 || pad[2 * i + 1] < 0)
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT,
                                     "paddings %s has a negative entry (input shape %s)",
                                     tide_op_format_values(pad, 2 * is->rank, a, sizeof a),
                                     SHAPE_STR(is, b));
        if (__builtin_add_overflow(is->dims[i], pad[2 * i], &out.dims[i]) ||
            __builtin_add_overflow(out.dims[i], pad[2 * i + 1], &out.dims[i]))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "padding shape %s by %s overflows",
                                     SHAPE_STR(is, a),
                                     tide_op_format_values(pad, 2 * is->rank, b, sizeof b));
        p.in[i] = is->dims[i];
        p.before[i] = pad[2 * i];
        p.out[i] = out.dims[i];
    }
    if (none) {
        tide_kernel_set_output(ctx, 0, in);
        return TIDE_OK;
    }
    tide_tensor *o = alloc_output(ctx, 0, &out);
    if (!o || tide_tensor_num_elements(o) == 0)
        return tide_kernel_status(ctx);
    pad_simplify(&p);
    p.es = (int64_t)tide_dtype_size(tide_tensor_dtype(in));
    p.src = tide_tensor_data(in);
    p.dst = tide_tensor_data(o);
    p.value = cv ? tide_tensor_data(cv) : NULL;
    p.fill = fills[size_class((size_t)p.es)];
    int64_t len = p.out[p.rank - 1];
    tide_kernel_parallel_for(ctx, tide_tensor_num_elements(o) / len,
                             (double)(len * p.es) * 0.06 + 10.0, pad_rows, &p);
    return deepen_strings(ctx, o);
}

/* ---------------------------------------------------------------- registration */

/* Transpose and Tile read scattered memory, worth a thread of their own when others are ready;
 * the rest are views or memcpy-like copies, cheapest run inline. */
static void register_array_kernels(void)
{
    static const tide_cpu_kernel kernels[] = {
        {"Reshape", reshape_compute, NULL, 0},
        {"Transpose", transpose_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"ConcatV2", concat_v2_compute, NULL, 0},
        {"Concat", concat_compute, NULL, 0},
        {"Split", split_compute, NULL, 0},
        {"SplitV", split_v_compute, NULL, 0},
        {"Slice", slice_compute, NULL, 0},
        {"StridedSlice", strided_slice_compute, strided_slice_init, 0},
        {"Pack", pack_compute, axis_init, 0},
        {"Unpack", unpack_compute, axis_init, 0},
        {"Tile", tile_compute, NULL, TIDE_KERNEL_EXPENSIVE},
        {"Pad", pad_compute, NULL, 0},
        {"PadV2", pad_compute, NULL, 0},
    };
    tide_cpu_register_kernels(kernels, sizeof kernels / sizeof kernels[0]);
}
TIDE_REGISTER(register_array_kernels)
