/* fusion_run.c — runs a fused group (fusion.h): the kernel of a group's plan item.
 *
 * The fast path evaluates the members' own loops tile by tile: for each tile of the output (up to
 * 8 KiB, whole rows of a bias's length when they fit), every member in topological order
 * reads its operands' tiles — an external's slice, a scalar splatted into a tile, the bias repeated
 * along the tile, or an earlier member's register — and writes its register, the root writing the
 * output's slice. Registers are a few KiB and stay in L1, so the data is read once from memory and
 * the output written once; large outputs are split over the pool by tiles. Each loop is the one the
 * member's kernel runs unfused, over the same elements, so the results are the same bit for bit.
 *
 * When the externals' shapes at run time are not those the plan assumed, the group runs its members'
 * kernels one after the other (run_members), with references counted as the executor would, so the
 * results and errors are an unfused plan's (an error names the member that failed). */
#include <stdlib.h>
#include <string.h>

#include "fusion.h"

/* A tile's registers, splatted scalars and repeated biases live in one buffer on the running
 * thread's stack; a register is at most TILE_MAX_BYTES, and the tile is as long as that allows
 * (bench_fusion: 256-element tiles spent ~12 % of the group's instructions between the loops). */
#define TILE_BUFFER_BYTES ((size_t)64 << 10)
#define TILE_MAX_BYTES ((int64_t)8 << 10)

typedef struct tile_job {
    const tide_fusion *fu;
    const char *ext[TIDE_FUSION_MAX_EXTERNALS]; /* data of each external */
    char *out;
    int64_t size;          /* bytes per element */
    int64_t n;             /* output elements */
    int64_t channels;      /* the last dim when a bias is among the externals, else 0 */
    int64_t tile;          /* elements per tile (a multiple of channels when the bias is repeated) */
    int64_t tiles_per_row; /* a bias longer than a tile: tiles per row (a tile never crosses a row's end), else 0 */
} tile_job;

/* Where tile u starts and how long it is. */
static void tile_at(const tile_job *j, int64_t u, int64_t *start, int64_t *len)
{
    if (j->tiles_per_row) {
        int64_t row = u / j->tiles_per_row, col = (u % j->tiles_per_row) * j->tile;
        *start = row * j->channels + col;
        *len = j->channels - col < j->tile ? j->channels - col : j->tile;
    } else {
        *start = u * j->tile;
        *len = j->n - *start < j->tile ? j->n - *start : j->tile;
    }
}

static void run_loop(const fusion_member *mb, const char *x, const char *y, char *z, int64_t n)
{
    const tide_elementwise *ew = &mb->ew;
    if (ew->unary)
        ew->unary(x, z, n);
    else if (ew->unary_p)
        ew->unary_p(x, z, n, ew->param);
    else if (ew->binary)
        ew->binary(x, y, z, n);
    else
        ew->binary_p(x, y, z, n, ew->param);
}

/* Fills bytes [size, total) of at with copies of its first `size` bytes (doubling). */
static void repeat(char *at, int64_t size, int64_t total)
{
    for (int64_t have = size; have < total; have *= 2)
        memcpy(at + have, at, (size_t)(total - have < have ? total - have : have));
}

/* Tiles [begin, end): registers, splatted scalars and repeated biases in one buffer on this thread's
 * stack (only the part in use is touched). */
static void run_tiles(int64_t begin, int64_t end, void *arg)
{
    const tile_job *j = arg;
    const tide_fusion *fu = j->fu;
    int64_t tile_bytes = j->tile * j->size;
    _Alignas(64) char buf[TILE_BUFFER_BYTES];
    const char *fixed[TIDE_FUSION_MAX_EXTERNALS] = {0}; /* scalars and (short) biases, laid along a tile */
    char *at = buf + fu->num_regs * tile_bytes;
    for (int e = 0; e < fu->num_ext; e++) {
        if (fu->ext_kind[e] == FUSION_SCALAR) {
            memcpy(at, j->ext[e], (size_t)j->size);
            repeat(at, j->size, tile_bytes);
        } else if (fu->ext_kind[e] == FUSION_BIAS && !j->tiles_per_row) {
            memcpy(at, j->ext[e], (size_t)(j->channels * j->size));
            repeat(at, j->channels * j->size, tile_bytes);
        } else {
            continue;
        }
        fixed[e] = at;
        at += tile_bytes;
    }
    for (int64_t u = begin; u < end; u++) {
        int64_t start, len;
        tile_at(j, u, &start, &len);
        const char *val[TIDE_FUSION_MAX_EXTERNALS + TIDE_FUSION_MAX_MEMBERS];
        for (int e = 0; e < fu->num_ext; e++)
            val[e] = fixed[e] ? fixed[e]
                     : fu->ext_kind[e] == FUSION_BIAS ? j->ext[e] + (start % j->channels) * j->size
                                                      : j->ext[e] + start * j->size;
        for (int m = 0; m < fu->num_members; m++) {
            const fusion_member *mb = &fu->members[m];
            char *z = mb->reg < 0 ? j->out + start * j->size : buf + mb->reg * tile_bytes;
            run_loop(mb, val[mb->in[0]], mb->num_in > 1 ? val[mb->in[1]] : NULL, z, len);
            val[fu->num_ext + m] = z;
        }
    }
}

/* The tile of a job (j->n, size and channels set): as long as TILE_MAX_BYTES allows and the buffer
 * holds the group's registers, scalars and biases; a multiple of the bias's length when it fits,
 * else tiles split each row. */
static void choose_tile(tile_job *j)
{
    const tide_fusion *fu = j->fu;
    int64_t buffers = fu->num_regs;
    for (int e = 0; e < fu->num_ext; e++)
        buffers += fu->ext_kind[e] != FUSION_FULL;
    int64_t tile = TILE_MAX_BYTES / j->size;
    if (buffers > 0 && (int64_t)TILE_BUFFER_BYTES / (buffers * j->size) < tile)
        tile = (int64_t)TILE_BUFFER_BYTES / (buffers * j->size);
    tile = tile / 16 * 16; /* whole vectors */
    if (j->channels > 0 && j->channels <= tile) {
        j->tile = tile / j->channels * j->channels;
    } else {
        j->tile = tile;
        if (j->channels > 0)
            j->tiles_per_row = (j->channels + tile - 1) / tile;
    }
}

/* The output's shape when the externals are what the plan assumed (false otherwise); *channels: the
 * bias length (0 without one). */
static bool check_shapes(const tide_kernel_ctx *ctx, const tide_fusion *fu, tide_shape *out, int64_t *channels)
{
    const tide_shape *full = NULL;
    for (int e = 0; e < fu->num_ext; e++) {
        const tide_tensor *t = ctx->inputs[e];
        if (!t || t == tide__dead || t->dtype != fu->dtype)
            return false;
        if (fu->ext_kind[e] == FUSION_FULL) {
            if (full && !tide_shape_equal(full, &t->shape))
                return false;
            full = &t->shape;
        }
    }
    if (!full || full->rank < 1)
        return false;
    *channels = 0;
    for (int e = 0; e < fu->num_ext; e++) {
        const tide_tensor *t = ctx->inputs[e];
        if (fu->ext_kind[e] == FUSION_SCALAR && t->num_elements != 1)
            return false;
        if (fu->ext_kind[e] == FUSION_BIAS &&
            (t->shape.rank != 1 || full->rank < 2 || t->shape.dims[0] != full->dims[full->rank - 1]))
            return false;
        if (fu->ext_kind[e] == FUSION_BIAS)
            *channels = t->shape.dims[0];
    }
    *out = *full;
    return true;
}

/* The fallback: each member's kernel in turn. An external is passed with an extra reference (the
 * item's slot keeps its own), a member's value with one reference per input slot plus the group's
 * while a later member still reads it: a kernel writes over an input only when nobody else holds it,
 * as unfused. */
static tide_status run_members(tide_kernel_ctx *ctx, const tide_fusion *fu)
{
    tide_tensor *vals[TIDE_FUSION_MAX_MEMBERS] = {0};
    int uses[TIDE_FUSION_MAX_MEMBERS] = {0};
    for (int m = 0; m < fu->num_members; m++)
        for (int i = 0; i < fu->members[m].num_in; i++)
            if (fu->members[m].in[i] >= fu->num_ext)
                uses[fu->members[m].in[i] - fu->num_ext]++;
    tide_status st = TIDE_OK;
    for (int m = 0; m < fu->num_members && st == TIDE_OK; m++) {
        const fusion_member *mb = &fu->members[m];
        tide_tensor *in[2] = {NULL, NULL}, *out[1] = {NULL};
        for (int i = 0; i < mb->num_in; i++) {
            int v = mb->in[i];
            in[i] = tide_tensor_retain(v < fu->num_ext ? ctx->inputs[v] : vals[v - fu->num_ext]);
        }
        for (int i = 0; i < mb->num_in; i++) {
            int v = mb->in[i] - fu->num_ext;
            if (v >= 0 && --uses[v] == 0) {
                tide_tensor_release(vals[v]);
                vals[v] = NULL;
            }
        }
        tide_kernel_ctx mc = {.kn = &mb->kn, .inputs = in, .outputs = out, .step = ctx->step, .iter = ctx->iter};
        tide_device *d = mb->kn.device;
        tide__kernel_ctx_returned(&mc, d->ops->compute(d, &mb->kn.kernel->spec, &mc));
        st = tide__kernel_ctx_finish(&mc);
        for (int i = 0; i < mb->num_in; i++)
            tide_tensor_release(in[i]);
        if (st != TIDE_OK) { /* the member's error, naming it, becomes the item's */
            tide_error_free(ctx->err);
            ctx->err = mc.err;
            ctx->status = st;
            tide_tensor_release(out[0]);
        } else if (m == fu->num_members - 1) {
            ctx->outputs[0] = out[0];
        } else {
            vals[m] = out[0];
        }
    }
    for (int m = 0; m < fu->num_members; m++)
        tide_tensor_release(vals[m]);
    return st;
}

tide_status tide__fusion_compute(tide_kernel_ctx *ctx)
{
    const tide_fusion *fu = tide_kernel_state(ctx);
    tide_shape shape;
    int64_t channels;
    if (!check_shapes(ctx, fu, &shape, &channels))
        return run_members(ctx, fu);
    int forward = -1; /* write over a full external nobody else holds (the tiles read it first) */
    for (int e = 0; e < fu->num_ext && forward < 0; e++)
        if (fu->ext_kind[e] == FUSION_FULL && tide_tensor_is_exclusive(ctx->inputs[e]))
            forward = e;
    tide_tensor *out = forward >= 0 ? tide_kernel_forward_or_alloc(ctx, forward, 0, &shape)
                                    : tide_kernel_alloc_output(ctx, 0, &shape, false);
    if (!out)
        return tide_kernel_status(ctx);
    tile_job j = {.fu = fu, .out = tide_tensor_data(out), .size = (int64_t)tide_dtype_size(fu->dtype),
                  .n = tide_shape_num_elements(&shape), .channels = channels};
    if (j.n == 0)
        return TIDE_OK;
    for (int e = 0; e < fu->num_ext; e++)
        j.ext[e] = tide_tensor_data(ctx->inputs[e]);
    choose_tile(&j);
    int64_t tiles = j.tiles_per_row ? j.n / channels * j.tiles_per_row : (j.n + j.tile - 1) / j.tile;
    tide_kernel_parallel_for(ctx, tiles, fu->cost * (double)j.tile, run_tiles, &j);
    return TIDE_OK;
}

void tide__fusion_free(void *state)
{
    tide_fusion *fu = state;
    if (!fu)
        return;
    for (int m = 0; fu->members && m < fu->num_members; m++) {
        tide__kernel_node_clear(&fu->members[m].kn);
        free(fu->members[m].kn.in_dtypes);
        free(fu->members[m].kn.ref_sources);
    }
    free(fu->members);
    free(fu->ext);
    free(fu->ext_kind);
    free(fu->members_text);
    free(fu);
}
