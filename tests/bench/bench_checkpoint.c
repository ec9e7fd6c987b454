/* bench_checkpoint.c — the cost of a checkpoint against the disk's (docs/checkpoints.md): a 100 MB
 * model (25 float32 variables of [1000, 1000]) saved by the saver against the same bytes written with
 * plain write() calls and fsynced. Like with like: each side replaces the 100 MB file of its previous
 * round (whose blocks the file system frees: the save's rename drops the old checkpoint, the plain
 * open's O_TRUNC the old file) and waits for its data to be on disk:
 *   save   a SaveV2 run: libzip writes the .npz into a temporary file, fsync, rename over the previous
 *          checkpoint, fsync of the directory; then the "checkpoint" state file is replaced the same
 *          way (temporary file, fsync, rename, fsync of the directory)
 *   write  open(O_TRUNC) of the previous file, one write() per variable (4 MB each), fsync
 * Interleaved pairs (save, write, write, save, ...: drift hits both), 6 pairs, median of the pairs'
 * ratios:
 *   checkpoint.save_ratio_vs_write   save time / write+fsync time (goal <= 1.5)
 *   checkpoint.save_ms               median save time, with the medians of its phases (archive_ms:
 *                                    libzip writing the .npz into the temporary file; fsync_ms;
 *                                    rename_ms, which frees the previous file; dir_fsync_ms; rest_ms:
 *                                    the rest, the SaveV2 run's overhead and the state file)
 *   checkpoint.write_ms              median write+fsync time, with the medians of its phases
 *                                    (open_ms: the truncation, write_only_ms, fsync_ms)
 * Files go to $TIDE_BENCH_DIR or the current directory (the build directory under meson: a real disk,
 * not a tmpfs where fsync costs nothing). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h" /* tide__npz_last_phases: the save's phases */
#include "bench_engine.h"
#include "bench_util.h"
#include "tide_checkpoint.h"

#define VARS 25
#define SIDE 1000
#define PAIRS 6

static void fail(const char *what, tide_error *err)
{
    fprintf(stderr, "bench_checkpoint: %s: %s\n", what, err ? tide_error_message(err) : "");
    exit(1);
}

typedef struct plain_times {
    double open, write, fsync; /* seconds */
} plain_times;

static plain_times plain_write(const char *path, tide_tensor *const *values)
{
    plain_times t;
    double t0 = bench_now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fail("open", NULL);
    double t1 = bench_now();
    for (int i = 0; i < VARS; i++) {
        const char *p = tide_tensor_data(values[i]);
        size_t left = tide_tensor_byte_size(values[i]);
        while (left) {
            ssize_t w = write(fd, p, left);
            if (w <= 0)
                fail("write", NULL);
            p += w;
            left -= (size_t)w;
        }
    }
    double t2 = bench_now();
    if (fsync(fd) != 0 || close(fd) != 0)
        fail("fsync", NULL);
    double t3 = bench_now();
    t.open = t1 - t0;
    t.write = t2 - t1;
    t.fsync = t3 - t2;
    return t;
}

int main(void)
{
    const char *dir = getenv("TIDE_BENCH_DIR") ? getenv("TIDE_BENCH_DIR") : ".";
    tide_error *err = tide_error_new();
    tide_engine *e = bench_engine_new(0, 0, 0);
    tide_graph *g = tide_graph_new();
    tide_node *vars[VARS];
    tide_tensor *values[VARS];
    tide_shape shape = tide_shape_matrix(SIDE, SIDE);
    for (int i = 0; i < VARS; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d/W", i);
        values[i] = tide_tensor_new(TIDE_FLOAT32, &shape, err);
        float *p = tide_tensor_data(values[i]);
        for (int k = 0; k < SIDE * SIDE; k++)
            p[k] = (float)(k % 1000) * 0.001f + (float)i;
        tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_FLOAT32);
        tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", values[i]);
        tide_node *c = tide_node_builder_finish(b, err);
        vars[i] = c ? tide_variable_new(g, name, (tide_output){c, 0}, true, err) : NULL;
        if (!vars[i])
            fail("graph", err);
    }
    tide_node *init = tide_global_variables_initializer(g, err);
    tide_session *s = tide_session_new(e, g, NULL, err);
    tide_saver *saver = tide_saver_new(g, vars, VARS, &(tide_saver_options){.max_to_keep = 1}, err);
    if (!init || !s || !saver || tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err) != TIDE_OK)
        fail("init", err);
    char prefix[512], plain[512];
    snprintf(prefix, sizeof prefix, "%s/bench_checkpoint_model", dir);
    snprintf(plain, sizeof plain, "%s/bench_checkpoint_plain.bin", dir);
    if (tide_saver_save(saver, s, prefix, -1, NULL, err) != TIDE_OK) /* each timed round replaces a file */
        fail("save", err);
    plain_write(plain, values);
    double save_s[PAIRS], write_s[PAIRS], ratio[PAIRS], open_s[PAIRS], write_only_s[PAIRS], fsync_s[PAIRS];
    double phase_ms[TIDE_NPZ_PHASES + 1][PAIRS]; /* the save's phases, then the rest */
    for (int i = 0; i < PAIRS; i++) {
        double sv = 0;
        plain_times wr = {0};
        for (int k = 0; k < 2; k++) {
            if ((i + k) % 2 == 0) {
                double t0 = bench_now();
                if (tide_saver_save(saver, s, prefix, -1, NULL, err) != TIDE_OK)
                    fail("save", err);
                sv = bench_now() - t0;
                int64_t ns[TIDE_NPZ_PHASES];
                tide__npz_last_phases(ns);
                double rest = sv * 1e3;
                for (int p = 0; p < TIDE_NPZ_PHASES; p++) {
                    phase_ms[p][i] = (double)ns[p] * 1e-6;
                    rest -= phase_ms[p][i];
                }
                phase_ms[TIDE_NPZ_PHASES][i] = rest;
            } else {
                wr = plain_write(plain, values);
            }
        }
        double w = wr.open + wr.write + wr.fsync;
        save_s[i] = sv * 1e3;
        write_s[i] = w * 1e3;
        open_s[i] = wr.open * 1e3;
        write_only_s[i] = wr.write * 1e3;
        fsync_s[i] = wr.fsync * 1e3;
        ratio[i] = sv / w;
    }
    char extra[900];
    const char *sides = "\"save\": \"SaveV2 (libzip .npz to a temporary file, fsync, rename over the previous "
                        "checkpoint, directory fsync) + the checkpoint state file (temporary, fsync, rename, "
                        "directory fsync)\", \"write\": \"open O_TRUNC of the previous file, 25 write() of 4 MB, "
                        "fsync\"";
    snprintf(extra, sizeof extra, "\"bytes\": %d, \"variables\": %d, \"pairs\": %d, %s", VARS * SIDE * SIDE * 4, VARS,
             PAIRS, sides);
    bench_emit("checkpoint.save_ratio_vs_write", bench_median(ratio, PAIRS), "ratio", extra);
    snprintf(extra, sizeof extra, "\"bytes\": %d, \"pairs\": %d, \"archive_ms\": %.1f, \"fsync_ms\": %.1f, "
             "\"rename_ms\": %.1f, \"dir_fsync_ms\": %.1f, \"rest_ms\": %.1f", VARS * SIDE * SIDE * 4, PAIRS,
             bench_median(phase_ms[TIDE_NPZ_ARCHIVE], PAIRS), bench_median(phase_ms[TIDE_NPZ_FSYNC], PAIRS),
             bench_median(phase_ms[TIDE_NPZ_RENAME], PAIRS), bench_median(phase_ms[TIDE_NPZ_DIR_FSYNC], PAIRS),
             bench_median(phase_ms[TIDE_NPZ_PHASES], PAIRS));
    bench_emit("checkpoint.save_ms", bench_median(save_s, PAIRS), "ms", extra);
    snprintf(extra, sizeof extra, "\"bytes\": %d, \"pairs\": %d, \"open_ms\": %.1f, \"write_only_ms\": %.1f, "
             "\"fsync_ms\": %.1f", VARS * SIDE * SIDE * 4, PAIRS, bench_median(open_s, PAIRS),
             bench_median(write_only_s, PAIRS), bench_median(fsync_s, PAIRS));
    bench_emit("checkpoint.write_ms", bench_median(write_s, PAIRS), "ms", extra);
    char path[600];
    snprintf(path, sizeof path, "%s.npz", prefix);
    unlink(path);
    unlink(plain);
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    unlink(path);
    tide_saver_free(saver);
    tide_session_free(s);
    for (int i = 0; i < VARS; i++)
        tide_tensor_release(values[i]);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
