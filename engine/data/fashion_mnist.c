/* fashion_mnist.c — loading Fashion-MNIST (Zalando's drop-in replacement for MNIST: 28x28 grey
 * images of clothing in 10 classes) from its four IDX files, as the Debian package
 * dataset-fashion-mnist installs them in /usr/share/datasets/fashion-mnist:
 *   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz
 *   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz
 * (the same names without .gz are accepted too). Images become float32 [N, 28, 28, 1] (NHWC with one
 * channel, as the convolution ops want them) scaled to [0, 1] by byte / 255; labels int32 [N] in 0..9.
 * Everything the files could get wrong is checked and named: dtypes, ranks, 28x28, matching counts,
 * label values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tide_data.h"

#define DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define ENV_DIR "TIDE_FASHION_MNIST"
#define SIDE 28
#define NUM_CLASSES 10

/* dir/name.gz if it exists, else dir/name (the reader then reports what is missing). */
static char *data_file(const char *dir, const char *name)
{
    struct stat st;
    char *path = NULL;
    if (asprintf(&path, "%s/%s.gz", dir, name) < 0)
        return NULL;
    if (stat(path, &st) == 0)
        return path;
    free(path);
    return asprintf(&path, "%s/%s", dir, name) < 0 ? NULL : path;
}

static tide_tensor *read_idx_file(const char *dir, const char *name, tide_error *err)
{
    char *path = data_file(dir, name);
    if (!path) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "Fashion-MNIST: out of memory");
        return NULL;
    }
    tide_tensor *t = tide_read_idx(path, NULL, err);
    free(path);
    return t;
}

/* uint8 [N, 28, 28] -> float32 [N, 28, 28, 1], byte / 255 (a table: exact and fast). */
static tide_tensor *images_to_float(const tide_tensor *raw, const char *name, tide_error *err)
{
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_dtype(raw) != TIDE_UINT8 || tide_tensor_rank(raw) != 3 ||
        tide_tensor_dim(raw, 1) != SIDE || tide_tensor_dim(raw, 2) != SIDE) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "Fashion-MNIST %s: expected uint8 images [N, 28, 28], the file holds %s %s", name,
                       tide_dtype_name(tide_tensor_dtype(raw)),
                       tide_shape_format(tide_tensor_shape(raw), buf, sizeof buf));
        return NULL;
    }
    tide_shape shape = tide_shape_make(4, (const int64_t[]){tide_tensor_dim(raw, 0), SIDE, SIDE, 1});
    tide_tensor *out = tide_tensor_new_uninitialized(TIDE_FLOAT32, &shape, err);
    if (!out)
        return NULL;
    float scale[256];
    for (int i = 0; i < 256; i++)
        scale[i] = (float)(i / 255.0);
    const uint8_t *src = tide_tensor_data(raw);
    float *dst = tide_tensor_data(out);
    for (int64_t i = 0, n = tide_tensor_num_elements(raw); i < n; i++)
        dst[i] = scale[src[i]];
    return out;
}

/* uint8 [N] with values 0..9 -> int32 [N]. */
static tide_tensor *labels_to_int(const tide_tensor *raw, const char *name, tide_error *err)
{
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_dtype(raw) != TIDE_UINT8 || tide_tensor_rank(raw) != 1) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "Fashion-MNIST %s: expected uint8 labels [N], the file holds %s %s", name,
                       tide_dtype_name(tide_tensor_dtype(raw)),
                       tide_shape_format(tide_tensor_shape(raw), buf, sizeof buf));
        return NULL;
    }
    const uint8_t *src = tide_tensor_data(raw);
    int64_t n = tide_tensor_num_elements(raw);
    for (int64_t i = 0; i < n; i++)
        if (src[i] >= NUM_CLASSES) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT,
                           "Fashion-MNIST %s: label %d at index %lld is outside 0..9", name, src[i],
                           (long long)i);
            return NULL;
        }
    tide_tensor *out = tide_tensor_new_uninitialized(TIDE_INT32, tide_tensor_shape(raw), err);
    if (!out)
        return NULL;
    int32_t *dst = tide_tensor_data(out);
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[i];
    return out;
}

/* Loads one split ("train" or "t10k") into *images and *labels (both NULL on failure). */
static tide_status load_split(const char *dir, const char *split, tide_tensor **images,
                              tide_tensor **labels, tide_error *err)
{
    char images_name[64], labels_name[64];
    snprintf(images_name, sizeof images_name, "%s-images-idx3-ubyte", split);
    snprintf(labels_name, sizeof labels_name, "%s-labels-idx1-ubyte", split);
    tide_error *local = tide_error_new(); /* keeps the code even when the caller passes no err */
    tide_tensor *raw_images = read_idx_file(dir, images_name, local);
    tide_tensor *raw_labels = raw_images ? read_idx_file(dir, labels_name, local) : NULL;
    if (raw_images && raw_labels) {
        if (tide_tensor_rank(raw_images) >= 1 && tide_tensor_rank(raw_labels) >= 1 &&
            tide_tensor_dim(raw_images, 0) != tide_tensor_dim(raw_labels, 0))
            tide_error_set(local, TIDE_INVALID_ARGUMENT,
                           "Fashion-MNIST in %s: %s has %lld images but %s has %lld labels", dir,
                           images_name, (long long)tide_tensor_dim(raw_images, 0), labels_name,
                           (long long)tide_tensor_dim(raw_labels, 0));
        else if ((*images = images_to_float(raw_images, images_name, local)))
            *labels = labels_to_int(raw_labels, labels_name, local);
    }
    tide_tensor_release(raw_images);
    tide_tensor_release(raw_labels);
    tide_status st = TIDE_OK;
    if (!*images || !*labels) {
        tide_tensor_release(*images);
        *images = NULL;
        st = local ? tide_error_code(local) : TIDE_RESOURCE_EXHAUSTED;
        if (local)
            tide_error_set(err, st, "%s", tide_error_message(local));
        else
            tide_error_set(err, st, "Fashion-MNIST: out of memory");
    }
    tide_error_free(local);
    return st;
}

static tide_status missing_directory(const char *dir, const char *why, tide_error *err)
{
    return tide_error_set(err, TIDE_NOT_FOUND,
                          "Fashion-MNIST directory %s: %s; install the Debian package "
                          "dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or set "
                          "$" ENV_DIR " to a directory holding its four files",
                          dir, why);
}

tide_status tide_fashion_mnist_load(const char *dir, tide_dataset *out, tide_error *err)
{
    if (!out)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_fashion_mnist_load: out is NULL");
    memset(out, 0, sizeof *out);
    const char *env = getenv(ENV_DIR);
    if (!dir)
        dir = env && *env ? env : DEFAULT_DIR;
    struct stat st;
    if (stat(dir, &st) != 0)
        return missing_directory(dir, strerror(errno), err);
    if (!S_ISDIR(st.st_mode))
        return missing_directory(dir, "not a directory", err);
    tide_status status = load_split(dir, "train", &out->train_images, &out->train_labels, err);
    if (status == TIDE_OK)
        status = load_split(dir, "t10k", &out->test_images, &out->test_labels, err);
    if (status != TIDE_OK)
        tide_dataset_release(out);
    return status;
}

void tide_dataset_release(tide_dataset *d)
{
    if (!d)
        return;
    tide_tensor_release(d->train_images);
    tide_tensor_release(d->train_labels);
    tide_tensor_release(d->test_images);
    tide_tensor_release(d->test_labels);
    memset(d, 0, sizeof *d);
}
