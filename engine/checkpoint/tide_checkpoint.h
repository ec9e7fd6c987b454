/* tide_checkpoint.h — checkpoints (docs/checkpoints.md): variables saved to and restored from .npz
 * files (a zip of .npy files, one per tensor, readable by numpy.load), written atomically; the
 * SaveV2 and RestoreV2 ops; and a saver (TensorFlow's tf.train.Saver): save with a global step,
 * keep the last N, find the latest, restore all or some variables with clear errors.
 *
 * The library tide_checkpoint (engine/checkpoint/) is written against the public API only and is the
 * only part of tide that links libzip; libtide.so includes it. The conventions of tide_core.h hold. */
#ifndef TIDE_CHECKPOINT_H
#define TIDE_CHECKPOINT_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- .npz files */

/* Writes the tensors as NAME.npy entries of a zip (stored, not compressed: numpy.savez's layout) to
 * path atomically: libzip writes the archive into a temporary file beside path ("PATH.tmp-PID@HOST",
 * reading the tensors where they are, in large writes on a writer thread), fsync, rename over path,
 * fsync of the directory. A crash at any point leaves the old file or the new one, complete; the
 * temporary files that killed saves left in path's directory are deleted first (those of this
 * machine's processes that no longer run). Names must be unique and non-empty; the dtypes those of
 * .npy (not string, bfloat16). */
tide_status tide_npz_write(const char *path, const char *const *names, tide_tensor *const *tensors, int n,
                           tide_error *err);

typedef struct tide_npz tide_npz;
/* Opens an .npz for reading (its entries' names are listed at once). */
tide_npz *tide_npz_open(const char *path, tide_error *err);
int tide_npz_count(const tide_npz *z);
const char *tide_npz_name(const tide_npz *z, int i); /* without ".npy"; borrowed */
/* The dtype and shape of tensor name, from its header (NOT_FOUND naming the file and what it holds). */
tide_status tide_npz_describe(const tide_npz *z, const char *name, tide_dtype *dtype, tide_shape *shape,
                              tide_error *err);
/* The tensor name (NOT_FOUND naming the file and what it holds when absent). New reference. */
tide_tensor *tide_npz_read(tide_npz *z, const char *name, tide_error *err);
void tide_npz_close(tide_npz *z);

/* ---------------------------------------------------------------- the saver */

typedef struct tide_saver_options {
    int max_to_keep;            /* checkpoints kept per directory, the newest: 0 -> 5; < 0: all */
    const char *scope;          /* the name scope of its nodes: NULL -> "save" (made unique) */
} tide_saver_options;

typedef struct tide_saver tide_saver;

/* A saver of the Variable nodes vars (n of them; n == 0: every Variable of g, trainable or not, as
 * TensorFlow's default). A tensor's name in the checkpoint is its Variable node's name. It adds
 * its SaveV2 and RestoreV2 nodes to g once. */
tide_saver *tide_saver_new(tide_graph *g, tide_node *const *vars, int n, const tide_saver_options *opts,
                           tide_error *err);
/* Saves the variables' current values (a run of session) to PREFIX.npz, or PREFIX-STEP.npz when
 * global_step >= 0, then records it in the directory's "checkpoint" file (TensorFlow's text format:
 * model_checkpoint_path and all_model_checkpoint_paths) and deletes the checkpoints beyond
 * max_to_keep (those this directory's "checkpoint" file lists are counted, so keeping the last N
 * holds across processes). *path_out (may be NULL) gets the file written (malloc'd). */
tide_status tide_saver_save(tide_saver *s, tide_session *session, const char *prefix, int64_t global_step,
                            char **path_out, tide_error *err);
/* Restores the saver's variables from path (an .npz; ".npz" may be left out). A variable the file
 * lacks fails with NOT_FOUND naming it and what the file holds; a dtype or shape that differs from
 * the variable's fails naming both. Nothing is assigned unless everything matches. */
tide_status tide_saver_restore(tide_saver *s, tide_session *session, const char *path, tide_error *err);
void tide_saver_free(tide_saver *s);

/* The newest checkpoint the directory's "checkpoint" file names (malloc'd path), or NULL with
 * NOT_FOUND when there is none. */
char *tide_latest_checkpoint(const char *dir, tide_error *err);

#ifdef __cplusplus
}
#endif
#endif
