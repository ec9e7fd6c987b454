/* bench_conv_error.c — the float32 error of the convolution algorithms on the tutorial CNN's second
 * layer (batch 100, 14x14x32 -> 64, 5x5 SAME, values uniform in [-0.5, 0.5) as bench_conv's), against a
 * double-precision reference: for each op (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter) and
 * algorithm ($TIDE_CONV_ALGO=auto, the default: Winograd where conv.c takes it; direct), the largest
 * absolute difference from the reference divided by the reference's largest magnitude
 * (conv2d<op>.<algo>.max_rel_err), and the ratio of the default's to the direct's
 * (conv2d<op>.error_vs_direct: 1 where both are the same algorithm). Not a timing: quick on any machine. */
#include <math.h>
#include <string.h>

#include "bench_engine.h"
#include "bench_util.h"
#include "tide.h"

enum { N = 100, H = 14, W = 14, C = 32, K = 64, R = 5, PAD = 2 };

static tide_tensor *random_tensor(const int64_t *dims, uint32_t seed, double **copy)
{
    tide_shape s = tide_shape_make(4, dims);
    tide_tensor *t = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
    float *d = tide_tensor_data(t);
    const int64_t n = tide_tensor_num_elements(t);
    *copy = malloc(sizeof **copy * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        d[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        (*copy)[i] = d[i];
    }
    return t;
}

static tide_tensor *sizes(const int64_t *d)
{
    const int32_t v[4] = {(int32_t)d[0], (int32_t)d[1], (int32_t)d[2], (int32_t)d[3]};
    tide_shape s = tide_shape_vector(4);
    return tide_tensor_new_copy(TIDE_INT32, &s, v, sizeof v, NULL);
}

/* The three ops' references in double: y [N][H][W][K], dx [N][H][W][C], dw [R][R][C][K]. */
static void reference(const double *x, const double *f, const double *dy, double *y, double *dx, double *dw)
{
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < H; oh++)
            for (int ow = 0; ow < W; ow++)
                for (int u = 0; u < R; u++)
                    for (int v = 0; v < R; v++) {
                        const int ih = oh + u - PAD, iw = ow + v - PAD;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                            continue;
                        const double *xp = x + ((n * H + ih) * W + iw) * C, *gp = dy + ((n * H + oh) * W + ow) * K;
                        double *yp = y + ((n * H + oh) * W + ow) * K, *dxp = dx + ((n * H + ih) * W + iw) * C;
                        for (int c = 0; c < C; c++) {
                            const double *fp = f + ((u * R + v) * C + c) * K;
                            double *wp = dw + ((u * R + v) * C + c) * K, sum = 0;
                            for (int k = 0; k < K; k++) {
                                yp[k] += xp[c] * fp[k];
                                wp[k] += xp[c] * gp[k];
                                sum += fp[k] * gp[k];
                            }
                            dxp[c] += sum;
                        }
                    }
}

/* max |got - want| / max |want|. */
static double max_rel_err(const tide_tensor *got, const double *want)
{
    const float *g = tide_tensor_data(got);
    double err = 0, scale = 0;
    for (int64_t i = 0; i < tide_tensor_num_elements(got); i++) {
        err = fmax(err, fabs(g[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    return err / scale;
}

int main(void)
{
    const int64_t xd[4] = {N, H, W, C}, fd[4] = {R, R, C, K}, yd[4] = {N, H, W, K};
    double *x, *f, *dy;
    tide_tensor *tx = random_tensor(xd, 1, &x), *tf = random_tensor(fd, 2, &f), *tdy = random_tensor(yd, 3, &dy);
    tide_tensor *xs = sizes(xd), *fs = sizes(fd);
    double *y = calloc(N * H * W * K, sizeof *y), *dx = calloc(N * H * W * C, sizeof *dx), *dw = calloc(R * R * C * K, sizeof *dw);
    reference(x, f, dy, y, dx, dw);
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(2, 0, 0);
    tide_attrs *a = tide_attrs_new();
    tide_attrs_set_int_list(a, "strides", (const int64_t[]){1, 1, 1, 1}, 4);
    tide_attrs_set_string(a, "padding", "SAME");
    static const char *const ops[3] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
    static const char *const names[3] = {"conv2d", "conv2d.backprop_input", "conv2d.backprop_filter"};
    tide_tensor *const inputs[3][3] = {{tx, tf}, {xs, tf, tdy}, {tx, fs, tdy}};
    const double *const want[3] = {y, dx, dw};
    static const char *const algos[2] = {"auto", "direct"};
    int rc = 0;
    for (int op = 0; op < 3; op++) {
        double rel[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            setenv("TIDE_CONV_ALGO", algos[k], 1);
            tide_tensor *out = NULL;
            int nout = 0;
            if (tide_engine_run_op(e, ops[op], inputs[op], op == 0 ? 2 : 3, a, &out, 1, &nout, err) != TIDE_OK) {
                fprintf(stderr, "%s: %s\n", ops[op], tide_error_message(err));
                rc = 1;
                continue;
            }
            rel[k] = max_rel_err(out, want[op]);
            tide_tensor_release(out);
            char name[96], extra[160];
            snprintf(name, sizeof name, "%s.%s.max_rel_err", names[op], algos[k]);
            snprintf(extra, sizeof extra, "\"op\": \"%s\", \"algo\": \"%s\", \"batch\": %d, \"input\": [%d, %d, %d, %d], "
                     "\"filter\": [%d, %d, %d, %d]", ops[op], algos[k], N, N, H, W, C, R, R, C, K);
            bench_emit(name, rel[k], "ratio", extra);
        }
        unsetenv("TIDE_CONV_ALGO");
        char name[96];
        snprintf(name, sizeof name, "%s.error_vs_direct", names[op]);
        if (rel[1] > 0)
            bench_emit(name, rel[0] / rel[1], "ratio", "\"what\": \"max_rel_err of the default algorithm / the direct's\"");
    }
    tide_tensor *all[] = {tx, tf, tdy, xs, fs};
    for (int i = 0; i < 5; i++)
        tide_tensor_release(all[i]);
    free(x), free(f), free(dy), free(y), free(dx), free(dw);
    tide_attrs_free(a);
    tide_engine_free(e);
    tide_error_free(err);
    return rc;
}
