/* tide_data.h — reading data from files into tensors: IDX (MNIST's format), NumPy .npy, CSV, the
 * Fashion-MNIST data set, and batching over tensors that share their first dimension (engine/data).
 * Built on the public core API only (tensors and errors); nothing here touches graphs or sessions.
 * It is a library of its own, tide_data (engine/data/meson.build), the only part of tide that links
 * zlib: a program that calls these functions links it besides the engine. The conventions of
 * tide_core.h hold. */
#ifndef TIDE_DATA_H
#define TIDE_DATA_H

#include "tide_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- data (engine/data) */

/* What the readers verify: everything the format says, and a gzip-compressed file (IDX, CSV; detected
 * by content, not by the name) whole: its CRC-32 and length trailer, nothing cut, no garbage after
 * the last member. What they cap: the bytes taken from one file, counted after decompression
 * (max_bytes, else tide_input_max_bytes: $TIDE_MAX_INPUT_BYTES or 1 GiB), checked before anything
 * of that size is allocated where the header tells the size (IDX, NPY), and as the file is read
 * otherwise (CSV). Every failure names the file and what is wrong with it. */
typedef struct tide_read_options {
    uint64_t max_bytes; /* 0: tide_input_max_bytes() */
} tide_read_options;

/* IDX files (MNIST's format), gzip-compressed or not. The tensor has the file's element type
 * (uint8, int8, int16, int32, float32, float64) and dimensions. opts may be NULL (the defaults). */
tide_tensor *tide_read_idx(const char *path, const tide_read_options *opts, tide_error *err);
/* NumPy .npy files, format versions 1-3, little-endian, C order (bool, ints, uints up to 16 bits,
 * float16/32/64, complex64/128); not compressed. opts may be NULL. write emits version 1.0. */
tide_tensor *tide_read_npy(const char *path, const tide_read_options *opts, tide_error *err);
tide_status tide_write_npy(const char *path, const tide_tensor *t, tide_error *err);
/* The same from memory (a .npz's entry; name for messages). */
tide_tensor *tide_npy_from_bytes(const void *bytes, size_t size, const char *name, tide_error *err);
/* The dtype and shape a .npy's header announces, from its first bytes (the header is enough). */
tide_status tide_npy_describe(const void *bytes, size_t size, const char *name, tide_dtype *dtype, tide_shape *shape,
                              tide_error *err);
/* The version 1.0 prefix (magic and padded header) numpy writes before t's data, for writers that
 * place the data themselves (a .npz's entries: prefix, then tide_tensor_data(t)); malloc'd, *len
 * bytes, or NULL with err (a dtype .npy lacks). */
char *tide_npy_prefix(const tide_tensor *t, size_t *len, tide_error *err);

typedef struct tide_csv_options {
    char delimiter;     /* ',' */
    int header;         /* lines to skip first: 0; -1 detects one non-numeric header line (default) */
    tide_dtype dtype;   /* float32 */
    uint64_t max_bytes; /* the cap, as tide_read_options.max_bytes: 0 */
} tide_csv_options;
void tide_csv_options_init(tide_csv_options *opts);
/* A [rows, columns] tensor; every row must have the same number of fields. opts may be NULL. The
 * file is read as a stream: besides the tensor itself it takes about one line of memory. */
tide_tensor *tide_read_csv(const char *path, const tide_csv_options *opts, tide_error *err);

typedef struct tide_dataset {
    tide_tensor *train_images, *train_labels, *test_images, *test_labels;
} tide_dataset;
/* Fashion-MNIST from dir (NULL: $TIDE_FASHION_MNIST, else /usr/share/datasets/fashion-mnist, the
 * Debian package dataset-fashion-mnist): images float32 [N, 28, 28, 1] scaled to [0, 1], labels
 * int32 [N]; 60,000 training and 10,000 test examples. */
tide_status tide_fashion_mnist_load(const char *dir, tide_dataset *out, tide_error *err);
/* (*out is overwritten, not released: release an earlier data set with tide_dataset_release first.) */
void tide_dataset_release(tide_dataset *d); /* releases the four tensors, NULLs them */

/* Batches over num tensors sharing their first dimension. Without shuffle a batch is a view (no
 * copy); with shuffle the rows of one batch are gathered (the data set itself is never copied) in an
 * order drawn from seed, new each epoch. */
typedef struct tide_batcher tide_batcher;
tide_batcher *tide_batcher_new(tide_tensor *const *tensors, int num, int64_t batch_size, bool shuffle,
                               uint64_t seed, bool drop_remainder, tide_error *err);
/* Fills out[0..num) with new references to the next batch; returns false (out untouched) when the
 * epoch is over, after which the next call starts a new epoch, and also on failure (out of memory,
 * NULL arguments), which sets err and keeps the position so that a later call can retry. */
bool tide_batcher_next(tide_batcher *b, tide_tensor **out, tide_error *err);
int64_t tide_batcher_epoch(const tide_batcher *b); /* epochs completed */
int64_t tide_batcher_batches_per_epoch(const tide_batcher *b);
void tide_batcher_free(tide_batcher *b);

#ifdef __cplusplus
}
#endif
#endif
