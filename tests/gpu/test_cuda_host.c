/* test_cuda_host.c — what of the GPU kernels can be tested without a GPU (suite 'cuda', built where
 * nvcc is found, runs everywhere):
 *  - the index arithmetic the kernels run on the device (kernels/cuda/index_plan.h, compiled here as
 *    host C): the broadcasting plan against a naive multi-index walk, and element-wise Add, Sum over
 *    random axes and Transpose computed through the plans against the CPU kernels on random shapes;
 *  - padding and tiling through their plans against the CPU's Pad and Tile;
 *  - the Philox block of random.cu (philox_block.h) against the CPU's generator, bit for bit;
 *  - the direct pooling of pool.cu (pool_direct.h: where cuDNN cannot pad evenly) against the CPU's
 *    MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad on random geometries, ties and NaNs, bit for bit;
 *  - the registration: every entry of the kernel list names a registered op that now lists a gpu
 *    kernel, and the list covers the ops the brief requires. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/ops/conv_ops.h"
#include "../../kernels/cpu/philox.h"
#include "../../kernels/cuda/cuda_kernels.h"
#include "../../kernels/cuda/index_plan.h"
#include "../../kernels/cuda/philox_block.h"
#include "../../kernels/cuda/pool_direct.h"
#include "harness.h"

/* A random shape of rank 0..4 with dims 1..5. */
static tide_shape random_shape(void)
{
    tide_shape s = {(int)th_rand(0, 5), {0}};
    for (int k = 0; k < s.rank; k++)
        s.dims[k] = (int64_t)th_rand(1, 6);
    return s;
}

/* b derived from a so that they broadcast: some dims set to 1, some leading dims dropped. */
static tide_shape broadcast_partner(const tide_shape *a)
{
    tide_shape b = *a;
    int drop = a->rank ? (int)th_rand(0, a->rank + 1) : 0;
    b.rank = a->rank - drop;
    for (int k = 0; k < b.rank; k++) {
        b.dims[k] = a->dims[k + drop];
        if (th_rand(0, 1) < 0.4)
            b.dims[k] = 1;
    }
    return b;
}

static tide_tensor *random_f32(const tide_shape *s)
{
    int64_t n = tide_shape_num_elements(s);
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)th_rand(-4, 4);
    tide_tensor *t = th_f32(s->rank, s->dims, v);
    free(v);
    return t;
}

/* Offsets of output element i by a naive walk over the unmerged, right-aligned shapes. */
static void naive_offsets(const tide_shape *a, const tide_shape *b, const tide_shape *out, int64_t i, int64_t *oa,
                          int64_t *ob)
{
    int64_t coord[TIDE_MAX_RANK];
    for (int k = out->rank - 1; k >= 0; k--) {
        coord[k] = i % out->dims[k];
        i /= out->dims[k];
    }
    const tide_shape *in[2] = {a, b};
    int64_t *off[2] = {oa, ob};
    for (int s = 0; s < 2; s++) {
        int64_t o = 0;
        for (int k = 0; k < in[s]->rank; k++) {
            int64_t c = coord[k + out->rank - in[s]->rank];
            o = o * in[s]->dims[k] + (in[s]->dims[k] == 1 ? 0 : c);
        }
        *off[s] = o;
    }
}

static void test_broadcast_plan(void)
{
    for (int round = 0; round < 300; round++) {
        tide_shape a = random_shape(), b = broadcast_partner(&a);
        if (round % 2) {
            tide_shape t = a;
            a = b;
            b = t;
        }
        tide_bcast p;
        CU_ASSERT_FATAL(tide_bcast_plan(a.rank, a.dims, b.rank, b.dims, &p));
        tide_shape out;
        CU_ASSERT_FATAL(tide_shape_broadcast(&a, &b, &out));
        CU_ASSERT_EQUAL(p.num_elements, tide_shape_num_elements(&out));
        CU_ASSERT(p.rank <= out.rank);
        bool same = true;
        for (int64_t i = 0; i < p.num_elements; i++) {
            int64_t x, y, nx, ny;
            tide_bcast_offsets(&p, i, &x, &y);
            naive_offsets(&a, &b, &out, i, &nx, &ny);
            same &= x == nx && y == ny;
        }
        CU_ASSERT(same);
    }
    /* merging: [64, 128] + [128] walks two dims, equal shapes one, a scalar none */
    tide_bcast p;
    CU_ASSERT(tide_bcast_plan(2, TH_DIMS(64, 128), 1, TH_DIMS(128), &p) && p.rank == 2);
    CU_ASSERT(tide_bcast_plan(3, TH_DIMS(8, 8, 8), 3, TH_DIMS(8, 8, 8), &p) && p.rank == 1 && p.stride_a[0] == 1);
    CU_ASSERT(tide_bcast_plan(0, NULL, 0, NULL, &p) && p.rank == 0 && p.num_elements == 1);
    CU_ASSERT(!tide_bcast_plan(1, TH_DIMS(3), 1, TH_DIMS(4), &p));
}

/* Add through the plan (as elementwise.cu's kernels index) against the CPU's Add. */
static void test_add_through_plan(void)
{
    for (int round = 0; round < 100; round++) {
        tide_shape a = random_shape(), b = broadcast_partner(&a);
        tide_tensor *ta = random_f32(&a), *tb = random_f32(&b);
        tide_tensor *want = th_run1("Add", (tide_tensor *[]){ta, tb}, 2, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        tide_bcast p = {0};
        CU_ASSERT_FATAL(tide_bcast_plan(a.rank, a.dims, b.rank, b.dims, &p));
        float *z = malloc(sizeof *z * (size_t)(p.num_elements + 1));
        const float *x = tide_tensor_data(ta), *y = tide_tensor_data(tb);
        for (int64_t i = 0; i < p.num_elements; i++) {
            int64_t oa, ob;
            tide_bcast_offsets(&p, i, &oa, &ob);
            z[i] = x[oa] + y[ob];
        }
        tide_tensor *got = th_f32(tide_tensor_rank(want), tide_tensor_shape(want)->dims, z);
        TH_ASSERT_CLOSE(got, want, 0, 0);
        free(z);
        tide_tensor_release(got);
        tide_tensor_release(want);
        tide_tensor_release(ta);
        tide_tensor_release(tb);
    }
}

/* Sum over random axes through the reduction plan (as reduce.cu walks) against the CPU's Sum. */
static void test_sum_through_plan(void)
{
    for (int round = 0; round < 100; round++) {
        tide_shape s = random_shape();
        bool reduce[TIDE_PLAN_MAX_RANK] = {false};
        int32_t axes[TIDE_MAX_RANK];
        int n = 0;
        for (int k = 0; k < s.rank; k++)
            if (th_rand(0, 1) < 0.5) {
                reduce[k] = true;
                axes[n++] = k;
            }
        tide_tensor *x = random_f32(&s), *ax = th_i32(1, TH_DIMS(n), axes);
        tide_tensor *want = th_run1("Sum", (tide_tensor *[]){x, ax}, 2, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        tide_reduce_plan p;
        tide_plan_reduce(s.rank, s.dims, reduce, &p);
        CU_ASSERT_EQUAL(p.num_outputs, tide_tensor_num_elements(want));
        const float *v = tide_tensor_data(x);
        float *out = malloc(sizeof *out * (size_t)(p.num_outputs + 1));
        for (int64_t o = 0; o < p.num_outputs; o++) {
            const float *base = v + tide_walk_offset(&p.kept, o);
            double acc = 0;
            for (int64_t r = 0; r < p.reduce_size; r++)
                acc += base[tide_walk_offset(&p.reduced, r)];
            out[o] = (float)acc;
        }
        tide_tensor *got = th_f32(tide_tensor_rank(want), tide_tensor_shape(want)->dims, out);
        TH_ASSERT_CLOSE(got, want, 1e-6, 1e-6);
        free(out);
        tide_tensor_release(got);
        tide_tensor_release(want);
        tide_tensor_release(x);
        tide_tensor_release(ax);
    }
}

/* Transpose through the plan (as array.cu walks) against the CPU's Transpose, bit for bit. */
static void test_transpose_through_plan(void)
{
    for (int round = 0; round < 100; round++) {
        tide_shape s = random_shape();
        int64_t perm[TIDE_MAX_RANK];
        int32_t perm32[TIDE_MAX_RANK];
        for (int k = 0; k < s.rank; k++)
            perm[k] = k;
        for (int k = s.rank - 1; k > 0; k--) {
            int j = (int)th_rand(0, k + 1);
            int64_t t = perm[k];
            perm[k] = perm[j];
            perm[j] = t;
        }
        for (int k = 0; k < s.rank; k++)
            perm32[k] = (int32_t)perm[k];
        tide_tensor *x = random_f32(&s), *pt = th_i32(1, TH_DIMS(s.rank), perm32);
        tide_tensor *want = th_run1("Transpose", (tide_tensor *[]){x, pt}, 2, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        tide_walk w;
        tide_plan_transpose(s.rank, s.dims, perm, &w);
        int64_t n = tide_tensor_num_elements(x);
        float *out = malloc(sizeof *out * (size_t)(n + 1));
        const float *v = tide_tensor_data(x);
        for (int64_t i = 0; i < n; i++)
            out[i] = v[tide_walk_offset(&w, i)];
        tide_tensor *got = th_f32(tide_tensor_rank(want), tide_tensor_shape(want)->dims, out);
        TH_ASSERT_CLOSE(got, want, 0, 0);
        free(out);
        tide_tensor_release(got);
        tide_tensor_release(want);
        tide_tensor_release(x);
        tide_tensor_release(pt);
    }
}

/* Pad (random paddings) and Tile (random multiples) through their plans, as movement.cu's gather
 * kernel reads, against the CPU's Pad and Tile, bit for bit. */
static void test_pad_and_tile_through_plans(void)
{
    for (int round = 0; round < 200; round++) {
        tide_shape s = random_shape();
        bool tile = round % 2;
        int64_t a[TIDE_MAX_RANK], b[TIDE_MAX_RANK];
        int32_t spec[2 * TIDE_MAX_RANK];
        for (int k = 0; k < s.rank; k++) {
            a[k] = (int64_t)th_rand(0, 3);
            b[k] = (int64_t)th_rand(0, 3);
            if (tile)
                spec[k] = (int32_t)a[k];
            else
                spec[2 * k] = (int32_t)a[k], spec[2 * k + 1] = (int32_t)b[k];
        }
        tide_tensor *x = random_f32(&s);
        tide_tensor *arg = tile ? th_i32(1, TH_DIMS(s.rank), spec) : th_i32(2, TH_DIMS(s.rank, 2), spec);
        tide_tensor *want = th_run1(tile ? "Tile" : "Pad", (tide_tensor *[]){x, arg}, 2, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        tide_pad_plan pp;
        tide_tile_plan tp;
        if (tile)
            tide_plan_tile(s.rank, s.dims, a, &tp);
        else
            tide_plan_pad(s.rank, s.dims, a, b, &pp);
        int64_t n = tide_tensor_num_elements(want);
        float *out = malloc(sizeof *out * (size_t)(n + 1));
        const float *v = tide_tensor_data(x);
        for (int64_t i = 0; i < n; i++) {
            int64_t o = tile ? tide_tile_source(&tp, i) : tide_pad_source(&pp, i);
            out[i] = o < 0 ? 0.0f : v[o];
        }
        tide_tensor *got = th_f32(tide_tensor_rank(want), tide_tensor_shape(want)->dims, out);
        TH_ASSERT_CLOSE(got, want, 0, 0);
        free(out);
        tide_tensor_release(got);
        tide_tensor_release(want);
        tide_tensor_release(x);
        tide_tensor_release(arg);
    }
}

static void test_philox_block(void)
{
    bool same = true;
    for (int round = 0; round < 1000; round++) {
        tide_philox gen = {.key = {(uint32_t)th_rand(0, 4294967295.0), (uint32_t)th_rand(0, 4294967295.0)},
                           .stream = (uint64_t)th_rand(0, 1e18)};
        uint64_t block = (uint64_t)th_rand(0, 1e15);
        uint32_t want[4], got[4];
        tide_philox_block(&gen, block, want);
        tide_philox_block_at((tide_philox_key){gen.key[0], gen.key[1], gen.stream}, block, got);
        same &= memcmp(want, got, sizeof want) == 0 && tide_philox_unit(got[0]) == tide_philox_uniform_f32(want[0]);
    }
    CU_ASSERT(same);
}

/* 300 random pooling geometries (SAME and VALID, windows 1-4, strides 1-3, sizes 1-9: many with padding
 * cuDNN cannot place evenly), values drawn from few integers (ties) with a few NaNs: every element of
 * pool_direct.h's four ops is the CPU kernel's, bit for bit (NaN as NaN). */
static void test_direct_pooling(void)
{
    int bad = 0;
    for (int round = 0; round < 300 && !bad; round++) {
        int64_t dims[4] = {(int64_t)th_rand(1, 3), (int64_t)th_rand(1, 10), (int64_t)th_rand(1, 10), (int64_t)th_rand(1, 5)};
        int64_t kh = (int64_t)th_rand(1, 5), kw = (int64_t)th_rand(1, 5), sh = (int64_t)th_rand(1, 4),
                sw = (int64_t)th_rand(1, 4);
        bool same = th_rand(0, 1) < 0.7 || kh > dims[1] || kw > dims[2];
        tide_attrs *a = tide_attrs_new();
        tide_attrs_set_int_list(a, "ksize", TH_DIMS(1, kh, kw, 1), 4);
        tide_attrs_set_int_list(a, "strides", TH_DIMS(1, sh, sw, 1), 4);
        tide_attrs_set_string(a, "padding", same ? "SAME" : "VALID");
        tide_conv_window win;
        tide_conv_geometry g;
        char msg[256];
        CU_ASSERT_FATAL(tide_pool_read_attrs(a, &win, msg, sizeof msg) &&
                        tide_pool_geometry(&win, dims, NULL, "grad", &g, msg, sizeof msg));
        tide_pool_geo pg = {g.in_h, g.in_w, g.in_c, g.out_h, g.out_w, kh, kw, sh, sw, g.pad_top, g.pad_left};
        int64_t n_in = dims[0] * dims[1] * dims[2] * dims[3], n_out = g.batch * g.out_h * g.out_w * g.in_c;
        float *x = malloc(sizeof *x * (size_t)n_in), *dy = malloc(sizeof *dy * (size_t)n_out);
        for (int64_t i = 0; i < n_in; i++)
            x[i] = th_rand(0, 1) < 0.03 ? NAN : (float)floor(th_rand(-3, 3));
        for (int64_t i = 0; i < n_out; i++)
            dy[i] = (float)th_rand(-1, 1);
        tide_tensor *xt = th_f32(4, dims, x), *dyt = th_f32(4, TH_DIMS(g.batch, g.out_h, g.out_w, g.in_c), dy);
        tide_tensor *sizes = th_i32(1, TH_DIMS(4), (const int32_t[]){(int32_t)dims[0], (int32_t)dims[1],
                                                                      (int32_t)dims[2], (int32_t)dims[3]});
        tide_tensor *maxed = th_run1("MaxPool", &xt, 1, a), *avg = th_run1("AvgPool", &xt, 1, a);
        tide_tensor *mg_in[] = {xt, maxed, dyt}, *ag_in[] = {sizes, dyt};
        tide_tensor *mgrad = th_run1("MaxPoolGrad", mg_in, 3, a), *agrad = th_run1("AvgPoolGrad", ag_in, 2, a);
        CU_ASSERT_FATAL(maxed && avg && mgrad && agrad);
        const float *want[4] = {tide_tensor_data(maxed), tide_tensor_data(avg), tide_tensor_data(mgrad),
                                tide_tensor_data(agrad)};
        for (int op = 0; op < 4; op++)
            for (int64_t i = 0; i < (op < 2 ? n_out : n_in); i++) {
                float got = op < 2 ? tide_pool_forward_at(&pg, x, i, op == 0) : tide_pool_backward_at(&pg, x, dy, i, op == 2);
                if (!(got == want[op][i] && signbit(got) == signbit(want[op][i])) && !(isnan(got) && isnan(want[op][i]))) {
                    if (!bad++)
                        fprintf(stderr, "\nop %d element %lld: %g, the CPU %g (input %lld x %lld x %lld x %lld, window "
                                "%lld x %lld, strides %lld, %lld, %s)\n", op, (long long)i, got, want[op][i],
                                (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3],
                                (long long)kh, (long long)kw, (long long)sh, (long long)sw, same ? "SAME" : "VALID");
                }
            }
        tide_tensor *all[] = {xt, dyt, sizes, maxed, avg, mgrad, agrad};
        for (int k = 0; k < 7; k++)
            tide_tensor_release(all[k]);
        free(x);
        free(dy);
        tide_attrs_free(a);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_registration(void)
{
    const char *ops[128];
    int n = tide__cuda_kernel_ops(ops, 128);
    CU_ASSERT_FATAL(n > 0 && n <= 128);
    for (int i = 0; i < n; i++) {
        char *help = tide_registry_op_help(ops[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(help);
        const char *kernels = strstr(help, "- kernels: ");
        bool has_gpu = kernels && strstr(kernels, "gpu") && strchr(kernels, '\n') > strstr(kernels, "gpu");
        if (!has_gpu)
            fprintf(stderr, "%s lists no gpu kernel\n", ops[i]);
        CU_ASSERT(has_gpu);
        free(help);
    }
    static const char *const required[] = {"Add", "Mul", "Sub", "Relu", "ReluGrad", "Sum", "Mean", "Max", "MatMul",
                                           "BatchMatMul", "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter",
                                           "MaxPool", "AvgPool", "Softmax", "SoftmaxCrossEntropyWithLogits",
                                           "SparseSoftmaxCrossEntropyWithLogits", "ApplyGradientDescent", "ApplyAdam",
                                           "Cast", "Fill", "ZerosLike", "RandomUniform", "RandomNormal", "ConcatV2",
                                           "Slice", "Transpose", "GatherV2", "Reshape", "Shape", "FusedBatchNorm",
                                           "FusedBatchNormV3", "FusedBatchNormGrad", "FusedBatchNormGradV3",
                                           "StridedSlice", "ExpandDims", "Squeeze", "Tile", "Pad", "PadV2",
                                           "BroadcastTo", "Size", "Const", "MaxPoolGrad", "AvgPoolGrad", "Assign",
                                           "AssignAdd", "AssignSub", "Dropout"};
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
        bool listed = false;
        for (int i = 0; i < n; i++)
            listed |= strcmp(ops[i], required[r]) == 0;
        if (!listed)
            fprintf(stderr, "%s has no gpu kernel\n", required[r]);
        CU_ASSERT(listed);
    }
    /* the kernels without device code */
    static const char *const host_side[] = {"Variable", "Identity", "StopGradient", "NoOp"};
    for (size_t i = 0; i < sizeof host_side / sizeof host_side[0]; i++) {
        char *help = tide_registry_op_help(host_side[i]);
        const char *kernels = help ? strstr(help, "- kernels: ") : NULL;
        CU_ASSERT(kernels && strstr(kernels, "gpu") && strstr(kernels, "gpu") < strchr(kernels, '\n'));
        free(help);
    }
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_broadcast_plan), TH_TEST(test_add_through_plan),
                                    TH_TEST(test_sum_through_plan), TH_TEST(test_transpose_through_plan),
                                    TH_TEST(test_pad_and_tile_through_plans),
                                    TH_TEST(test_philox_block), TH_TEST(test_direct_pooling),
                                    TH_TEST(test_registration), TH_END};
    return th_main("cuda_host", tests);
}
