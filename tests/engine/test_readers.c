/* test_readers.c — the ReadRecords op (engine/data/reader_ops.c, docs/queues.md): batches of records
 * from NPY, CSV and IDX files read in step, epochs then OUT_OF_RANGE, one position shared by sessions,
 * casts, errors; and an input pipeline: two queue runner threads read records into a queue (no
 * feeds) while the consumer dequeues batches until OUT_OF_RANGE, every record arriving once per epoch. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "graph_util.h"
#include "tide_data.h"

static char dir[64];

static void write_files(int rows)
{
    strcpy(dir, "/tmp/tide-readers-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    float *x = malloc(sizeof *x * (size_t)rows * 2);
    int32_t *y = malloc(sizeof *y * (size_t)rows);
    for (int i = 0; i < rows; i++) {
        x[2 * i] = (float)i;
        x[2 * i + 1] = (float)-i;
        y[i] = i;
    }
    tide_tensor *tx = th_f32(2, (int64_t[]){rows, 2}, x), *ty = th_i32(1, (int64_t[]){rows}, y);
    char path[128];
    tide_error *err = tide_error_new();
    snprintf(path, sizeof path, "%s/x.npy", dir);
    CU_ASSERT_EQUAL(tide_write_npy(path, tx, err), TIDE_OK);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    CU_ASSERT_EQUAL(tide_write_npy(path, ty, err), TIDE_OK);
    snprintf(path, sizeof path, "%s/y.csv", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < rows; i++)
        fprintf(f, "%d,%d\n", i, 2 * i);
    fclose(f);
    snprintf(path, sizeof path, "%s/short.npy", dir);
    tide_tensor *shorter = th_i32(1, (int64_t[]){rows - 1}, y);
    CU_ASSERT_EQUAL(tide_write_npy(path, shorter, err), TIDE_OK);
    tide_tensor_release(shorter);
    tide_tensor_release(tx);
    tide_tensor_release(ty);
    tide_error_free(err);
    free(x);
    free(y);
}

static tide_node *reader(tide_graph *g, const char *name, const char *const *files, const tide_dtype *dtypes, int n,
                         int64_t batch, int64_t epochs)
{
    char paths[4][128];
    const char *full[4];
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, files[i]);
        full[i] = paths[i];
    }
    tide_node_builder *b = tide_node_builder_new(g, "ReadRecords", name);
    tide_attrs *a = tide_node_builder_attrs(b);
    tide_attrs_set_string_list(a, "filenames", full, n);
    tide_attrs_set_type_list(a, "dtypes", dtypes, n);
    tide_attrs_set_int(a, "batch_size", batch);
    tide_attrs_set_int(a, "num_epochs", epochs);
    return gu_finish(b);
}

static void test_read_records(void)
{
    write_files(10);
    tide_graph *g = tide_graph_new();
    tide_node *r = reader(g, "xy", (const char *[]){"x.npy", "y.npy"}, (tide_dtype[]){TIDE_FLOAT32, TIDE_INT64}, 2, 4, 2);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL), *other = tide_session_new(th_engine(), g, NULL, NULL);
    tide_error *err = tide_error_new();
    int64_t expect_rows[] = {4, 4, 2, 4, 4, 2}, first[] = {0, 4, 8, 0, 4, 8};
    for (int k = 0; k < 6; k++) {
        tide_tensor *out[2] = {NULL, NULL};
        tide_output fetch[2] = {{r, 0}, {r, 1}};
        /* alternate sessions: one position for both */
        CU_ASSERT_EQUAL_FATAL(tide_session_run(k % 2 ? other : s, NULL, NULL, 0, fetch, 2, out, NULL, 0, NULL, err),
                              TIDE_OK);
        CU_ASSERT_EQUAL(tide_tensor_dim(out[0], 0), expect_rows[k]);
        CU_ASSERT_EQUAL(tide_tensor_dim(out[0], 1), 2);
        CU_ASSERT_EQUAL(tide_tensor_dtype(out[1]), TIDE_INT64); /* cast from the file's int32 */
        CU_ASSERT_EQUAL(((float *)tide_tensor_data(out[0]))[0], (float)first[k]);
        CU_ASSERT_EQUAL(((int64_t *)tide_tensor_data(out[1]))[expect_rows[k] - 1], first[k] + expect_rows[k] - 1);
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
    }
    tide_tensor *t;
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &(tide_output){r, 0}, 1, &t, NULL, 0, NULL, err),
                    TIDE_OUT_OF_RANGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "has read its 2 epochs of 10 records"));

    /* CSV (float32 rows), and errors: files out of step, a missing file. */
    tide_node *c = reader(g, "csv", (const char *[]){"y.csv"}, (tide_dtype[]){TIDE_FLOAT32}, 1, 3, 1);
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &(tide_output){c, 0}, 1, &t, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT(tide_tensor_dim(t, 0) == 3 && tide_tensor_dim(t, 1) == 2 && ((float *)tide_tensor_data(t))[5] == 4.0f);
    tide_tensor_release(t);
    tide_node *bad = reader(g, "bad", (const char *[]){"x.npy", "short.npy"}, (tide_dtype[]){TIDE_FLOAT32, TIDE_INT32},
                            2, 4, 1);
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &(tide_output){bad, 0}, 1, &t, NULL, 0, NULL, err),
                    TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "short.npy has 9 records but"));
    tide_node *missing = reader(g, "missing", (const char *[]){"nope.npy"}, (tide_dtype[]){TIDE_FLOAT32}, 1, 4, 1);
    CU_ASSERT_EQUAL(tide_session_run(s, NULL, NULL, 0, &(tide_output){missing, 0}, 1, &t, NULL, 0, NULL, err),
                    TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "nope.npy"));
    tide_session_free(other);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
}

/* Two runner threads read 1,000 records, 3 epochs, 7 at a time, into a shuffle queue; the consumer
 * dequeues batches of 50 (up_to at the end) until OUT_OF_RANGE: each record arrives 3 times. */
static void test_pipeline(void)
{
    enum { ROWS = 1000, EPOCHS = 3 };
    write_files(ROWS);
    tide_graph *g = tide_graph_new();
    tide_node *r = reader(g, "pipe", (const char *[]){"x.npy", "y.npy"}, (tide_dtype[]){TIDE_FLOAT32, TIDE_INT32}, 2, 7,
                          EPOCHS);
    tide_dtype dts[2] = {TIDE_FLOAT32, TIDE_INT32};
    tide_shape shapes[2] = {tide_shape_vector(2), tide_shape_scalar()};
    tide_queue_options o = {.kind = TIDE_QUEUE_RANDOM_SHUFFLE, .capacity = 200, .min_after_dequeue = 50, .seed = 5,
                            .num_components = 2, .dtypes = dts, .shapes = shapes, .name = "records"};
    tide_error *err = tide_error_new();
    tide_output q = tide_queue_new(g, &o, err);
    tide_node *enq = tide_queue_enqueue(g, q, (tide_output[]){{r, 0}, {r, 1}}, 2, true, err);
    tide_node *deq = tide_queue_dequeue(g, q, 50, true, err);
    tide_node *close = tide_queue_close(g, q, false, err), *cancel = tide_queue_close(g, q, true, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, NULL);
    tide_coordinator *c = tide_coordinator_new(err);
    tide_queue_runner *qr = tide_queue_runner_new((tide_node *[]){enq, enq}, 2, close, cancel, err);
    CU_ASSERT_EQUAL_FATAL(tide_queue_runner_start(qr, s, c, err), TIDE_OK);
    int *count = calloc(ROWS, sizeof *count);
    int64_t total = 0;
    for (;;) {
        tide_tensor *out[2] = {NULL, NULL};
        tide_output fetch[2] = {{deq, 0}, {deq, 1}};
        tide_status st = tide_session_run(s, NULL, NULL, 0, fetch, 2, out, NULL, 0, NULL, err);
        if (st != TIDE_OK) {
            CU_ASSERT_EQUAL(st, TIDE_OUT_OF_RANGE);
            break;
        }
        const float *x = tide_tensor_data(out[0]);
        const int32_t *y = tide_tensor_data(out[1]);
        for (int64_t i = 0; i < tide_tensor_dim(out[1], 0); i++) {
            CU_ASSERT_FATAL(y[i] >= 0 && y[i] < ROWS);
            CU_ASSERT(x[2 * i] == (float)y[i] && x[2 * i + 1] == (float)-y[i]); /* components stay together */
            count[y[i]]++;
            total++;
        }
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
    }
    CU_ASSERT_EQUAL(total, (int64_t)ROWS * EPOCHS);
    int wrong = 0;
    for (int i = 0; i < ROWS; i++)
        wrong += count[i] != EPOCHS;
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(tide_coordinator_join(c, err), TIDE_OK);
    free(count);
    tide_queue_runner_free(qr);
    tide_coordinator_free(c);
    tide_session_free(s);
    tide_graph_free(g);
    tide_error_free(err);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_read_records), TH_TEST(test_pipeline), TH_END};
    return th_main("readers", tests);
}
