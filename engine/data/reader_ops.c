/* reader_ops.c — the ReadRecords op and its CPU kernel: records (rows along the first dimension)
 * read from IDX, NPY and CSV files, a batch per run, for input pipelines (docs/queues.md): a queue
 * runner runs enqueue_many(q, read_records(...)) until the reader has gone through its epochs and
 * fails with OUT_OF_RANGE, which ends the runner's threads normally and closes the queue.
 *
 * The reader (its files, loaded whole on first use, and its position) is a resource of the engine's
 * containers (tide_kernel_resource), found by container and shared_name (the node's name when empty),
 * so that several runner threads, each in a session of its own, share one position and every record
 * is read once per epoch. The records of the files are aligned: all have the same number of rows.
 * A batch is a view of the loaded tensors (no copy) unless its dtype differs from the one asked
 * (dtypes), then it is cast (Fashion-MNIST's uint8 pixels to float32). Registered from tide_data,
 * so that the engine core links no zlib (IDX files may be gzipped). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tide_data.h"
#include "tide_op.h"

#define MAX_FILES 16

typedef struct reader {
    pthread_mutex_t lock;
    int num_files;
    tide_tensor *data[MAX_FILES];
    char *first_file;             /* for messages */
    int64_t rows, cursor, epoch, num_epochs;
} reader;


static void reader_destroy(void *object)
{
    reader *r = object;
    for (int i = 0; i < r->num_files; i++)
        tide_tensor_release(r->data[i]);
    free(r->first_file);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static const tide_resource_type reader_type = {.name = "reader", .destroy = reader_destroy};

typedef struct reader_args {
    const char *const *files;
    int num_files;
    const char *format;
    int64_t num_epochs;
} reader_args;

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static tide_tensor *load(const char *path, const char *format, tide_error *err)
{
    bool npy = strcmp(format, "npy") == 0 || (strcmp(format, "auto") == 0 && ends_with(path, ".npy"));
    bool csv = strcmp(format, "csv") == 0 || (strcmp(format, "auto") == 0 && ends_with(path, ".csv"));
    if (npy)
        return tide_read_npy(path, NULL, err);
    if (csv) {
        tide_csv_options o;
        tide_csv_options_init(&o);
        return tide_read_csv(path, &o, err);
    }
    return tide_read_idx(path, NULL, err);
}

static void *reader_make(void *arg, tide_error *err)
{
    const reader_args *a = arg;
    reader *r = calloc(1, sizeof *r);
    if (!r || !(r->first_file = strdup(a->files[0]))) {
        free(r);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    r->num_epochs = a->num_epochs;
    for (int i = 0; i < a->num_files; i++) {
        tide_tensor *t = load(a->files[i], a->format, err);
        if (t && tide_tensor_rank(t) < 1) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s holds a scalar: records are rows along a first dimension",
                           a->files[i]);
            tide_tensor_release(t);
            t = NULL;
        }
        if (t && i > 0 && tide_tensor_dim(t, 0) != r->rows) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s has %lld records but %s has %lld: the files of one reader "
                           "are read in step, record by record", a->files[i], (long long)tide_tensor_dim(t, 0),
                           a->files[0], (long long)r->rows);
            tide_tensor_release(t);
            t = NULL;
        }
        if (!t) {
            reader_destroy(r);
            return NULL;
        }
        r->data[r->num_files++] = t;
        r->rows = tide_tensor_dim(t, 0);
    }
    return r;
}

static tide_status check_attrs(tide_kernel_ctx *ctx, const char *const **files, int *n, int64_t *batch,
                               int64_t *epochs, const char **format)
{
    const tide_attrs *a = tide_kernel_attrs(ctx);
    if (!tide_attrs_get_string_list(a, "filenames", files, n) || *n < 1 || *n > MAX_FILES)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "filenames must list 1 to %d files", MAX_FILES);
    if (*n != tide_kernel_num_outputs(ctx))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "%d filenames but %d dtypes: one dtype per file", *n,
                                 tide_kernel_num_outputs(ctx));
    tide_attrs_get_int(a, "batch_size", batch);
    tide_attrs_get_int(a, "num_epochs", epochs);
    tide_attrs_get_string(a, "format", format);
    if (*batch < 1)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "batch_size must be >= 1, not %lld", (long long)*batch);
    if (*epochs < 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "num_epochs must be >= 0 (0: without end), not %lld",
                                 (long long)*epochs);
    if (strcmp(*format, "auto") && strcmp(*format, "idx") && strcmp(*format, "npy") && strcmp(*format, "csv"))
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "format must be 'auto', 'idx', 'npy' or 'csv', not '%s'",
                                 *format);
    return TIDE_OK;
}

/* Output i: rows [from, from + n) of the reader's file i, cast to the dtype asked for. */
static tide_status emit(tide_kernel_ctx *ctx, reader *r, int i, int64_t from, int64_t n)
{
    tide_error *err = tide_error_new();
    tide_tensor *rows = tide_tensor_slice(r->data[i], from, from + n, err);
    tide_tensor *out = rows ? tide_tensor_cast(rows, tide_kernel_output_dtype(ctx, i), err) : NULL;
    tide_tensor_release(rows);
    tide_status st = TIDE_OK;
    if (!out)
        st = tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    else
        tide_kernel_set_output(ctx, i, out);
    tide_tensor_release(out);
    tide_error_free(err);
    return st;
}

static tide_status read_records_compute(tide_kernel_ctx *ctx)
{
    const char *const *files;
    int n = 0;
    int64_t batch = 1, epochs = 1;
    const char *format = "auto", *container = "", *shared = "";
    tide_status st = check_attrs(ctx, &files, &n, &batch, &epochs, &format);
    if (st != TIDE_OK)
        return st;
    tide_attrs_get_string(tide_kernel_attrs(ctx), "container", &container);
    tide_attrs_get_string(tide_kernel_attrs(ctx), "shared_name", &shared);
    reader_args args = {files, n, format, epochs};
    void *object;
    tide_resource_handle *h = tide_kernel_resource(ctx, container, shared[0] ? shared : tide_kernel_node_name(ctx),
                                                   &reader_type, reader_make, &args, &object);
    if (!h)
        return tide_kernel_status(ctx);
    reader *r = object;
    pthread_mutex_lock(&r->lock);
    if (r->num_files != n) {
        pthread_mutex_unlock(&r->lock);
        tide_resource_release(h);
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "the reader of this name reads %d files, not %d",
                                 r->num_files, n);
    }
    if (r->rows == 0 || (r->num_epochs > 0 && r->epoch >= r->num_epochs)) {
        int64_t done = r->epoch;
        pthread_mutex_unlock(&r->lock);
        tide_resource_release(h);
        return tide_kernel_error(ctx, TIDE_OUT_OF_RANGE, "the reader of %s%s has read its %lld epoch%s of %lld "
                                 "records", files[0], n > 1 ? " (and the others)" : "", (long long)done,
                                 done == 1 ? "" : "s", (long long)r->rows);
    }
    int64_t from = r->cursor, take = r->rows - from < batch ? r->rows - from : batch;
    r->cursor += take;
    if (r->cursor == r->rows) {
        r->cursor = 0;
        r->epoch++;
    }
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < n && st == TIDE_OK; i++)
        st = emit(ctx, r, i, from, take); /* the loaded tensors never change: no lock needed */
    tide_resource_release(h);
    return st;
}

static void register_reader_ops(void)
{
    tide_op_register(&(tide_op_spec){
        .name = "ReadRecords",
        .outputs = {"records: dtypes"},
        .attrs = {"filenames: list(string)", "dtypes: list(type)", "format: string = 'auto'", "batch_size: int = 1",
                  "num_epochs: int = 1", "container: string = ''", "shared_name: string = ''"},
        .flags = TIDE_OP_STATEFUL | TIDE_OP_NOT_IN_TF,
        .doc = "Reads the next batch_size records (rows along the first dimension) of each file (IDX, gzipped or "
               "not; NPY; CSV, float32; format 'auto' goes by the extension), in step, cast to dtypes. A reader "
               "shared by name keeps one position for every session; after num_epochs passes (0: without end) "
               "it fails with OUT_OF_RANGE, which ends a queue runner normally. The last batch of an epoch may "
               "be smaller.",
    });
    tide_kernel_register(&(tide_kernel_spec){.op = "ReadRecords", .device_type = "cpu",
                                             .compute = read_records_compute});
}
TIDE_REGISTER(register_reader_ops)
