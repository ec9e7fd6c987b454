/* test_checkpoint.c — checkpoints (engine/checkpoint, docs/checkpoints.md): .npz round trips and
 * errors; the saver (save with a global step, keep the last N across savers, latest_checkpoint,
 * restore all or a subset, clear errors for missing names and dtype or shape mismatches that leave
 * the variables untouched); training resumed in a new process from the checkpoint of epoch 1 ends
 * with the same weights, bit for bit, as an uninterrupted run (one thread, same seeds); a saving
 * process killed with SIGKILL 20 times always leaves a latest checkpoint that loads complete; and
 * numpy.load reads a checkpoint (an optional test: it needs python3-numpy).
 *
 * The processes are this program again ($TIDE_CHECKPOINT_ROLE chooses the role: "train" or
 * "save_loop"), started with fork and exec so that each has an engine of its own. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness.h"
#include "atomic_file.h" /* tide__ckpt_temp_name: the temporary files' names */
#include "graph_util.h"
#include "tide_checkpoint.h"

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/tide-ckpt-XXXXXX";
    char *d = mkdtemp(tmpl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return strdup(d);
}

static void remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static bool exists(const char *dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

/* ---------------------------------------------------------------- .npz */

static void test_npz_round_trip_and_errors(void)
{
    char *dir = temp_dir(), path[512];
    snprintf(path, sizeof path, "%s/t.npz", dir);
    float w[6] = {1, -2, 3.5f, 4, 5, 6e-8f};
    int64_t step = 42;
    double d = 3.25;
    tide_tensor *t[3] = {th_f32(2, (int64_t[]){2, 3}, w), th_i64(0, NULL, &step), th_f64(1, (int64_t[]){1}, &d)};
    const char *names[3] = {"layer/W", "global_step", "d"};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_npz_write(path, names, t, 3, err), TIDE_OK);
    tide_npz *z = tide_npz_open(path, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(z);
    CU_ASSERT_EQUAL(tide_npz_count(z), 3);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL(tide_npz_name(z, i), names[i]);
        tide_tensor *back = tide_npz_read(z, names[i], err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(back);
        CU_ASSERT(tide_tensor_equal(back, t[i], false));
        tide_tensor_release(back);
    }
    tide_dtype dt;
    tide_shape shape;
    CU_ASSERT_EQUAL(tide_npz_describe(z, "layer/W", &dt, &shape, err), TIDE_OK);
    CU_ASSERT(dt == TIDE_FLOAT32 && shape.rank == 2 && shape.dims[0] == 2 && shape.dims[1] == 3);
    CU_ASSERT_PTR_NULL(tide_npz_read(z, "nope", err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "has no tensor 'nope' (it holds 3: 'layer/W', "
                                                            "'global_step', 'd')"));
    tide_npz_close(z);

    /* A name twice, a missing directory, a truncated file, a file that is not a zip. */
    const char *twice[2] = {"a", "a"};
    CU_ASSERT_EQUAL(tide_npz_write(path, twice, t, 2, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the name 'a' is given twice"));
    CU_ASSERT_NOT_EQUAL(tide_npz_write("/nonexistent-dir/x.npz", names, t, 3, err), TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "/nonexistent-dir/x.npz"));
    CU_ASSERT_EQUAL(truncate(path, 100), 0);
    CU_ASSERT_PTR_NULL(tide_npz_open(path, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), path));
    FILE *f = fopen(path, "w");
    fputs("not a zip", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(tide_npz_open(path, err));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "not a complete .npz file"));
    snprintf(path, sizeof path, "%s/absent.npz", dir);
    CU_ASSERT_PTR_NULL(tide_npz_open(path, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    for (int i = 0; i < 3; i++)
        tide_tensor_release(t[i]);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

/* Tensors larger than the writer's buffers (1 MB), between small ones: every byte and each entry's
 * header (rewritten with its CRC after its data) comes back; the sizes straddle buffer boundaries. */
static void test_npz_large_entries(void)
{
    char *dir = temp_dir(), path[512];
    snprintf(path, sizeof path, "%s/big.npz", dir);
    enum { N = 5 };
    int64_t lens[N] = {3 * 262144 + 7, 1, 262144, 5 * 262144 + 1001, 3};
    tide_tensor *t[N];
    const char *names[N] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < N; i++) {
        t[i] = tide_tensor_new(TIDE_FLOAT32, &(tide_shape){1, {lens[i]}}, NULL);
        float *p = tide_tensor_data(t[i]);
        for (int64_t k = 0; k < lens[i]; k++)
            p[k] = (float)(k % 9973) + 0.25f * (float)i;
    }
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_npz_write(path, names, t, N, err), TIDE_OK);
    tide_npz *z = tide_npz_open(path, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(z);
    for (int i = 0; i < N; i++) {
        tide_tensor *back = tide_npz_read(z, names[i], err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(back);
        CU_ASSERT(tide_tensor_equal(back, t[i], false));
        tide_tensor_release(back);
        tide_tensor_release(t[i]);
    }
    tide_npz_close(z);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

/* How many temporary files ("*.tmp-*") dir holds, each named on stderr. */
static int count_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int temporaries = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp-")) {
            fprintf(stderr, "left behind: %s\n", e->d_name);
            temporaries++;
        }
    closedir(d);
    return temporaries;
}

/* A write that fails part way (the file size limit: EFBIG) fails the save naming the file and the
 * reason, leaves the old file as it was and no temporary file. */
static void test_npz_write_error(void)
{
    char *dir = temp_dir(), path[512];
    snprintf(path, sizeof path, "%s/m.npz", dir);
    float small = 1;
    tide_tensor *old = th_f32(1, (int64_t[]){1}, &small);
    tide_tensor *big = tide_tensor_new(TIDE_FLOAT32, &(tide_shape){1, {1 << 20}}, NULL);
    memset(tide_tensor_data(big), 0, tide_tensor_byte_size(big));
    const char *name[1] = {"W"};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL_FATAL(tide_npz_write(path, name, &old, 1, err), TIDE_OK);
    struct rlimit was;
    CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &was), 0);
    void (*handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit cap = {1 << 20, was.rlim_max}; /* 1 MB: the 4 MB tensor does not fit */
    CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &cap), 0);
    tide_status st = tide_npz_write(path, name, &big, 1, err);
    setrlimit(RLIMIT_FSIZE, &was);
    signal(SIGXFSZ, handler);
    CU_ASSERT_NOT_EQUAL(st, TIDE_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), path));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), strerror(EFBIG)));
    tide_npz *z = tide_npz_open(path, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(z);
    tide_tensor *back = tide_npz_read(z, "W", err);
    CU_ASSERT(back && tide_tensor_equal(back, old, false));
    tide_tensor_release(back);
    tide_npz_close(z);
    CU_ASSERT_EQUAL(count_temporaries(dir), 0);
    tide_tensor_release(old);
    tide_tensor_release(big);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

static void touch(const char *dir, const char *file)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("partial", f);
    fclose(f);
}

/* The temporary files of saves killed mid-write go at the next save into their directory, once their
 * process has ended; a live process's, this process's, another machine's (a shared file system) and
 * other files stay. */
static void test_stale_temporaries_removed(void)
{
    char *dir = temp_dir();
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    CU_ASSERT_EQUAL_FATAL(waitpid(dead, NULL, 0), dead);
    pid_t alive = fork();
    if (alive == 0) {
        pause();
        _exit(0);
    }
    char *mine = tide__ckpt_temp_name("x"); /* "x.tmp-PID@HOST": this machine's HOST */
    CU_ASSERT_PTR_NOT_NULL_FATAL(mine);
    const char *host = strchr(mine, '@') + 1;
    char stale_npz[128], stale_state[128], stale_old[64], live[128], own[128], elsewhere[128], other[128];
    snprintf(stale_npz, sizeof stale_npz, "model-3.npz.tmp-%ld@%s", (long)dead, host);
    snprintf(stale_state, sizeof stale_state, "checkpoint.tmp-%ld@%s", (long)dead, host);
    snprintf(stale_old, sizeof stale_old, "model-2.npz.tmp-%ld", (long)dead); /* as earlier versions named it */
    snprintf(live, sizeof live, "model-4.npz.tmp-%ld@%s", (long)alive, host);
    snprintf(own, sizeof own, "model-5.npz.tmp-%ld@%s", (long)getpid(), host);
    snprintf(elsewhere, sizeof elsewhere, "model-6.npz.tmp-%ld@not-%s", (long)dead, host);
    snprintf(other, sizeof other, "notes.txt.tmp-%ld@%s", (long)dead, host); /* not a name a save writes */
    const char *files[] = {stale_npz, stale_state, stale_old, live, own, elsewhere, other, "model.npz.tmp-12ab",
                           "checkpoint.tmp-"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        touch(dir, files[i]);
    free(mine);
    float w = 2;
    tide_tensor *t = th_f32(1, (int64_t[]){1}, &w);
    char path[512];
    snprintf(path, sizeof path, "%s/model-9.npz", dir);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_npz_write(path, (const char *[]){"W"}, &t, 1, err), TIDE_OK);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        CU_ASSERT_EQUAL(exists(dir, files[i]), i >= 3);
    CU_ASSERT_TRUE(exists(dir, "model-9.npz"));
    kill(alive, SIGKILL);
    waitpid(alive, NULL, 0);
    tide_tensor_release(t);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

/* ---------------------------------------------------------------- the saver */

typedef struct model {
    tide_graph *g;
    tide_node *W, *b, *step, *init, *set_w, *w_value;
    tide_session *s;
} model;

static tide_node *var_of(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims, double v)
{
    tide_error *err = tide_error_new();
    tide_initializer init;
    tide_initializer_init(&init, TIDE_INIT_CONSTANT);
    init.value = v;
    tide_shape s = tide_shape_make(rank, dims);
    tide_output value = tide_initializer_build(g, &init, dt, &s, err);
    tide_node *n = tide_variable_new(g, name, value, true, err);
    if (!n)
        fprintf(stderr, "variable: %s\n", tide_error_message(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    tide_error_free(err);
    return n;
}

/* W [rows, cols] float32, b [cols] float32, global_step int64; W can be set from a feed. */
static model model_new(tide_engine *e, int64_t rows, int64_t cols, double w0)
{
    model m = {.g = tide_graph_new()};
    m.W = var_of(m.g, "layer/W", TIDE_FLOAT32, 2, (int64_t[]){rows, cols}, w0);
    m.b = var_of(m.g, "layer/b", TIDE_FLOAT32, 1, (int64_t[]){cols}, 0.5);
    tide_error *err = tide_error_new();
    m.step = tide_global_step(m.g, err);
    m.init = tide_global_variables_initializer(m.g, err);
    m.w_value = gu_placeholder(m.g, "w_value", TIDE_FLOAT32, 2, (int64_t[]){rows, cols});
    m.set_w = gu_op(m.g, "Assign", "set_w", 2, (tide_node *[]){m.W, m.w_value});
    m.s = tide_session_new(e, m.g, NULL, err);
    CU_ASSERT_EQUAL_FATAL(gu_target(m.s, m.init, err), TIDE_OK);
    tide_error_free(err);
    return m;
}

static void model_free(model *m)
{
    tide_session_free(m->s);
    tide_graph_free(m->g);
}

static void set_w(model *m, float v)
{
    tide_shape s = tide_node_output_shape(m->W, 0);
    tide_tensor *t = tide_tensor_new(TIDE_FLOAT32, &s, NULL);
    float *p = tide_tensor_data(t);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++)
        p[i] = v + (float)i;
    tide_feed f = {{m->w_value, 0}, t};
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_session_run(m->s, NULL, &f, 1, NULL, 0, NULL, &m->set_w, 1, NULL, err), TIDE_OK);
    tide_error_free(err);
    tide_tensor_release(t);
}

static float w_first(model *m)
{
    tide_tensor *t = gu_fetch(m->s, m->W);
    float v = t ? ((float *)tide_tensor_data(t))[0] : -1;
    tide_tensor_release(t);
    return v;
}

static void test_saver(void)
{
    char *dir = temp_dir(), prefix[512];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    model m = model_new(th_engine(), 2, 3, 1.0);
    tide_error *err = tide_error_new();
    tide_saver_options o = {.max_to_keep = 3};
    tide_saver *sv = tide_saver_new(m.g, NULL, 0, &o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sv);
    char *path = NULL;
    for (int k = 1; k <= 7; k++) {
        set_w(&m, (float)k);
        CU_ASSERT_EQUAL_FATAL(tide_saver_save(sv, m.s, prefix, k * 10, k == 7 ? &path : NULL, err), TIDE_OK);
    }
    /* The last three are kept; the state file names the latest. */
    CU_ASSERT(!exists(dir, "model-40.npz") && exists(dir, "model-50.npz") && exists(dir, "model-70.npz"));
    char *latest = tide_latest_checkpoint(dir, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(latest);
    CU_ASSERT_STRING_EQUAL(latest, path);
    CU_ASSERT_PTR_NOT_NULL(strstr(latest, "model-70.npz"));
    /* A second saver (a new process would be the same) counts the checkpoints already listed. */
    tide_saver *again = tide_saver_new(m.g, NULL, 0, &o, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    CU_ASSERT_EQUAL(tide_saver_save(again, m.s, prefix, 80, NULL, err), TIDE_OK);
    CU_ASSERT(!exists(dir, "model-50.npz") && exists(dir, "model-60.npz") && exists(dir, "model-80.npz"));

    /* Restore: every variable back as saved. */
    set_w(&m, 100);
    CU_ASSERT_EQUAL(tide_saver_restore(sv, m.s, latest, err), TIDE_OK);
    CU_ASSERT_EQUAL(w_first(&m), 7.0f);
    char restore_60[600];
    snprintf(restore_60, sizeof restore_60, "%s/model-60", dir); /* ".npz" may be left out */
    CU_ASSERT_EQUAL(tide_saver_restore(sv, m.s, restore_60, err), TIDE_OK);
    CU_ASSERT_EQUAL(w_first(&m), 6.0f);

    /* A subset: only b, from a graph whose W has another shape. */
    model other = model_new(th_engine(), 3, 3, 9.0);
    tide_saver *only_b = tide_saver_new(other.g, &other.b, 1, NULL, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(only_b);
    CU_ASSERT_EQUAL(tide_saver_restore(only_b, other.s, latest, err), TIDE_OK);
    /* All of them: W's shape differs, and nothing is assigned (b keeps what it had). */
    tide_saver *all = tide_saver_new(other.g, NULL, 0, NULL, err);
    set_w(&other, 9);
    CU_ASSERT_EQUAL(tide_saver_restore(all, other.s, latest, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "cannot restore variable 'layer/W' from"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the checkpoint holds shape [2, 3], the variable is [3, 3]"));
    CU_ASSERT_EQUAL(w_first(&other), 9.0f);

    /* A variable the file lacks, and one of another dtype. */
    tide_graph *g3 = tide_graph_new();
    tide_node *extra = var_of(g3, "extra", TIDE_FLOAT32, 0, NULL, 1);
    tide_node *wrong = var_of(g3, "global_step", TIDE_FLOAT32, 0, NULL, 1);
    tide_session *s3 = tide_session_new(th_engine(), g3, NULL, err);
    tide_saver *sv3 = tide_saver_new(g3, &extra, 1, NULL, err);
    CU_ASSERT_EQUAL(tide_saver_restore(sv3, s3, latest, err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "has no tensor 'extra' (it holds 3: 'layer/W', 'layer/b', "
                                                            "'global_step')"));
    tide_saver *sv4 = tide_saver_new(g3, &wrong, 1, NULL, err);
    CU_ASSERT_EQUAL(tide_saver_restore(sv4, s3, latest, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "cannot restore variable 'global_step'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "the checkpoint holds int64, the variable is float32"));
    CU_ASSERT_EQUAL(tide_saver_restore(sv4, s3, "/nonexistent/model-1", err), TIDE_NOT_FOUND);
    CU_ASSERT_PTR_NULL(tide_latest_checkpoint("/nonexistent", err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_NOT_FOUND);
    /* Saving an uninitialised variable fails with the variable's message; nothing is recorded. */
    CU_ASSERT_EQUAL(tide_saver_save(sv3, s3, prefix, 90, NULL, err), TIDE_FAILED_PRECONDITION);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "uninitialized"));
    CU_ASSERT(!exists(dir, "model-90.npz"));
    char *still = tide_latest_checkpoint(dir, err);
    CU_ASSERT_PTR_NOT_NULL(strstr(still, "model-80.npz"));
    free(still);

    tide_saver_free(sv4);
    tide_saver_free(sv3);
    tide_session_free(s3);
    tide_graph_free(g3);
    tide_saver_free(all);
    tide_saver_free(only_b);
    model_free(&other);
    tide_saver_free(again);
    tide_saver_free(sv);
    free(latest);
    free(path);
    model_free(&m);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

/* ---------------------------------------------------------------- other processes */

/* Runs this program with role and args in the environment; returns its pid. */
static pid_t spawn(const char *role, const char *a1, const char *a2, const char *a3)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TIDE_CHECKPOINT_ROLE", role, 1);
        setenv("TIDE_CHECKPOINT_A1", a1, 1);
        setenv("TIDE_CHECKPOINT_A2", a2 ? a2 : "", 1);
        setenv("TIDE_CHECKPOINT_A3", a3 ? a3 : "", 1);
        execl("/proc/self/exe", "test_checkpoint", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Builders for the roles (other processes: no CUnit there, so no gu_* helpers). */
static tide_node *role_finish(tide_node_builder *b)
{
    tide_error *err = tide_error_new();
    tide_node *n = tide_node_builder_finish(b, err);
    if (!n) {
        fprintf(stderr, "role: building a node failed: %s\n", tide_error_message(err));
        exit(9);
    }
    tide_error_free(err);
    return n;
}

static tide_node *role_placeholder(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_shape s = tide_shape_make(rank, dims);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    return role_finish(b);
}

static tide_node *role_const(tide_graph *g, tide_tensor *value)
{
    tide_node_builder *b = tide_node_builder_new(g, "Const", NULL);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(value));
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", value);
    tide_tensor_release(value);
    return role_finish(b);
}

static tide_node *role_variable(tide_graph *g, const char *name, tide_dtype dt, int rank, const int64_t *dims)
{
    tide_node_builder *b = tide_node_builder_new(g, "Variable", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_shape s = tide_shape_make(rank, dims);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &s);
    return role_finish(b);
}

static tide_node *role_op2(tide_graph *g, const char *op, const char *name, tide_node *a, tide_node *b_)
{
    tide_node_builder *b = tide_node_builder_new(g, op, name);
    tide_node_builder_add_input(b, (tide_output){a, 0});
    tide_node_builder_add_input(b, (tide_output){b_, 0});
    return role_finish(b);
}

/* The training role: a two-layer network on fixed synthetic data, Adam (slot variables are saved
 * too), batches in a fixed order; trains epochs [from, to), restoring the latest checkpoint of dir
 * first when from > 0, then saves one (global step) and writes the final weights to dir/OUT.npz. */
enum { EXAMPLES = 256, FEATURES = 8, HIDDEN = 16, BATCH = 32 };

static void synthetic(float *x, float *y)
{
    uint32_t r = 12345;
    for (int i = 0; i < EXAMPLES; i++) {
        float sum = 0;
        for (int j = 0; j < FEATURES; j++) {
            r = r * 1664525u + 1013904223u;
            x[i * FEATURES + j] = (float)(r >> 8) / 16777216.0f - 0.5f;
            sum += x[i * FEATURES + j] * (float)(j + 1);
        }
        y[i] = sum > 0 ? 1.0f : 0.0f;
    }
}

static tide_output op2(tide_graph *g, const char *op, tide_output a, tide_output b, tide_error *err)
{
    tide_node_builder *nb = tide_node_builder_new(g, op, NULL);
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    return (tide_output){tide_node_builder_finish(nb, err), 0};
}

static int train_role(const char *dir, int from, int to, const char *out)
{
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(&(tide_engine_options){.num_threads = 1}, err);
    tide_graph *g = tide_graph_new();
    tide_graph_set_seed(g, 7);
    tide_node *x = role_placeholder(g, "x", TIDE_FLOAT32, 2, (int64_t[]){-1, FEATURES});
    tide_node *y = role_placeholder(g, "y", TIDE_FLOAT32, 2, (int64_t[]){-1, 1});
    tide_initializer glorot;
    tide_initializer_init(&glorot, TIDE_INIT_GLOROT_UNIFORM);
    tide_shape s1 = tide_shape_matrix(FEATURES, HIDDEN), s2 = tide_shape_matrix(HIDDEN, 1);
    tide_node *w1 = tide_variable_new(g, "w1", tide_initializer_build(g, &glorot, TIDE_FLOAT32, &s1, err), true, err);
    tide_node *w2 = tide_variable_new(g, "w2", tide_initializer_build(g, &glorot, TIDE_FLOAT32, &s2, err), true, err);
    tide_node_builder *relu = tide_node_builder_new(g, "Relu", NULL);
    tide_node_builder_add_input(relu, op2(g, "MatMul", (tide_output){x, 0}, (tide_output){w1, 0}, err));
    tide_output h = {tide_node_builder_finish(relu, err), 0};
    tide_output pred = op2(g, "MatMul", h, (tide_output){w2, 0}, err);
    tide_output diff = op2(g, "Sub", pred, (tide_output){y, 0}, err);
    tide_output sq = op2(g, "Mul", diff, diff, err);
    tide_node_builder *mean = tide_node_builder_new(g, "Sum", NULL);
    tide_node_builder_add_input(mean, sq);
    tide_node_builder_add_input(mean, (tide_output){role_const(g, th_i32(1, (int64_t[]){2}, (int32_t[]){0, 1})), 0});
    tide_output loss = {tide_node_builder_finish(mean, err), 0};
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_ADAM, 0.01);
    tide_node *train = tide_optimizer_minimize(g, &opt, loss, NULL, 0, tide_global_step(g, err), err);
    tide_node *init = tide_global_variables_initializer(g, err);
    tide_saver *sv = train && init ? tide_saver_new(g, NULL, 0, NULL, err) : NULL;
    tide_session *s = sv ? tide_session_new(e, g, NULL, err) : NULL;
    int code = s ? 0 : 2;
    if (s && tide_session_run(s, NULL, NULL, 0, NULL, 0, NULL, &init, 1, NULL, err) != TIDE_OK)
        code = 3;
    if (!code && from > 0) {
        char *latest = tide_latest_checkpoint(dir, err);
        if (!latest || tide_saver_restore(sv, s, latest, err) != TIDE_OK)
            code = 4;
        free(latest);
    }
    static float xs[EXAMPLES * FEATURES], ys[EXAMPLES];
    synthetic(xs, ys);
    for (int epoch = from; !code && epoch < to; epoch++)
        for (int b = 0; !code && b < EXAMPLES / BATCH; b++) {
            int k = (b * 5 + epoch * 3) % (EXAMPLES / BATCH); /* an order that differs per epoch */
            tide_tensor *bx = th_f32(2, (int64_t[]){BATCH, FEATURES}, xs + k * BATCH * FEATURES);
            tide_tensor *by = th_f32(2, (int64_t[]){BATCH, 1}, ys + k * BATCH);
            tide_feed feeds[2] = {{{x, 0}, bx}, {{y, 0}, by}};
            if (tide_session_run(s, NULL, feeds, 2, NULL, 0, NULL, &train, 1, NULL, err) != TIDE_OK)
                code = 5;
            tide_tensor_release(bx);
            tide_tensor_release(by);
        }
    char prefix[512], final[512];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    if (!code && tide_saver_save(sv, s, prefix, to, NULL, err) != TIDE_OK)
        code = 6;
    snprintf(final, sizeof final, "%s/%s", dir, out);
    if (!code && tide_saver_save(sv, s, final, -1, NULL, err) != TIDE_OK)
        code = 7;
    if (code)
        fprintf(stderr, "train role failed (%d): %s\n", code, tide_error_message(err));
    tide_session_free(s);
    tide_saver_free(sv);
    tide_graph_free(g);
    tide_engine_free(e);
    tide_error_free(err);
    return code;
}

/* Every tensor of a and b equal, bit for bit. */
static int npz_bits_differ(const char *a, const char *b)
{
    tide_error *err = tide_error_new();
    tide_npz *za = tide_npz_open(a, err), *zb = tide_npz_open(b, err);
    int differ = !za || !zb || tide_npz_count(za) != tide_npz_count(zb);
    for (int i = 0; !differ && i < tide_npz_count(za); i++) {
        tide_tensor *ta = tide_npz_read(za, tide_npz_name(za, i), err), *tb = tide_npz_read(zb, tide_npz_name(za, i), err);
        differ = !ta || !tb || tide_tensor_byte_size(ta) != tide_tensor_byte_size(tb) ||
                 memcmp(tide_tensor_data(ta), tide_tensor_data(tb), tide_tensor_byte_size(ta)) != 0;
        tide_tensor_release(ta);
        tide_tensor_release(tb);
    }
    int count = za ? tide_npz_count(za) : 0;
    tide_npz_close(za);
    tide_npz_close(zb);
    tide_error_free(err);
    return differ ? -1 : count;
}

static void test_resume_bit_for_bit(void)
{
    char *dir = temp_dir();
    CU_ASSERT_EQUAL_FATAL(wait_exit(spawn("train", dir, "0:2", "straight")), 0);
    CU_ASSERT_EQUAL_FATAL(wait_exit(spawn("train", dir, "0:1", "first")), 0);
    CU_ASSERT_EQUAL_FATAL(wait_exit(spawn("train", dir, "1:2", "resumed")), 0);
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s/straight.npz", dir);
    snprintf(b, sizeof b, "%s/resumed.npz", dir);
    snprintf(c, sizeof c, "%s/first.npz", dir);
    int n = npz_bits_differ(a, b);
    CU_ASSERT(n >= 7); /* w1, w2, their two Adam slots each, global_step, Adam's beta powers... */
    CU_ASSERT_EQUAL(npz_bits_differ(a, c), -1); /* after one epoch the weights did differ */
    remove_dir(dir);
    free(dir);
}

/* The save loop role: W [256, 256] all k and global_step k, saved as model-k with max_to_keep 3, for
 * k = 1, 2, ... until killed. */
static int save_loop_role(const char *dir)
{
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(&(tide_engine_options){.num_threads = 1}, err);
    tide_graph *g = tide_graph_new();
    tide_node *w = role_variable(g, "W", TIDE_FLOAT32, 2, (int64_t[]){256, 256});
    tide_node *step = role_variable(g, "step", TIDE_INT64, 0, NULL);
    tide_node *wv = role_placeholder(g, "wv", TIDE_FLOAT32, 2, (int64_t[]){256, 256});
    tide_node *sv_ = role_placeholder(g, "sv", TIDE_INT64, 0, NULL);
    tide_node *set_w = role_op2(g, "Assign", "set_w", w, wv);
    tide_node *set_s = role_op2(g, "Assign", "set_s", step, sv_);
    tide_node *both[2] = {set_w, set_s};
    tide_saver *saver = tide_saver_new(g, (tide_node *[]){w, step}, 2, &(tide_saver_options){.max_to_keep = 3}, err);
    tide_session *s = tide_session_new(e, g, NULL, err);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    tide_tensor *wt = tide_tensor_new(TIDE_FLOAT32, &(tide_shape){2, {256, 256}}, err);
    for (int64_t k = 1;; k++) {
        float *p = tide_tensor_data(wt);
        for (int i = 0; i < 256 * 256; i++)
            p[i] = (float)k;
        tide_tensor *st = tide_tensor_new_scalar(TIDE_INT64, &k, err);
        tide_feed f[2] = {{{wv, 0}, wt}, {{sv_, 0}, st}};
        if (tide_session_run(s, NULL, f, 2, NULL, 0, NULL, both, 2, NULL, err) != TIDE_OK ||
            tide_saver_save(saver, s, prefix, k, NULL, err) != TIDE_OK) {
            fprintf(stderr, "save loop: %s\n", tide_error_message(err));
            return 1;
        }
        tide_tensor_release(st);
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until the save loop pid has finished a save in this round (the latest checkpoint is no longer
 * `before`, which is NULL before the first round). Gives up after 120 s or when pid has exited (false
 * then); a loaded machine under a sanitizer may take seconds to start the child, no fixed sleep can. */
static bool wait_for_new_checkpoint(pid_t pid, const char *dir, const char *before)
{
    tide_error *err = tide_error_new();
    bool saved = false;
    for (int i = 0; i < 120000 && !saved; i++) {
        char *latest = tide_latest_checkpoint(dir, err);
        saved = latest && (!before || strcmp(latest, before) != 0);
        free(latest);
        if (!saved && waitpid(pid, NULL, WNOHANG) != 0)
            break;
        if (!saved)
            sleep_ms(1);
    }
    tide_error_free(err);
    return saved;
}

/* kill -9 in the middle of saving, 20 times: the latest checkpoint always loads, complete and
 * consistent (W all equal to the step saved with it). Each round waits for the child's first save
 * of that round, then kills it 0-200 ms later (each save takes a few ms: the kill lands anywhere in
 * one), so every round has a checkpoint to load however slowly the machine starts the child. */
static void test_kill_during_saves(void)
{
    char *dir = temp_dir();
    tide_graph *g = tide_graph_new();
    tide_node *w = gu_variable(g, "W", TIDE_FLOAT32, 2, (int64_t[]){256, 256}, NULL);
    tide_node *step = gu_variable(g, "step", TIDE_INT64, 0, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_saver *saver = tide_saver_new(g, (tide_node *[]){w, step}, 2, NULL, err);
    tide_session *s = tide_session_new(th_engine(), g, NULL, err);
    srand(2026);
    int64_t last = 0, loaded = 0;
    char *previous = NULL; /* the latest checkpoint after the round before */
    for (int round = 0; round < 20; round++) {
        pid_t pid = spawn("save_loop", dir, NULL, NULL);
        bool saved = wait_for_new_checkpoint(pid, dir, previous);
        if (!saved)
            fprintf(stderr, "round %d: the save loop wrote no checkpoint (it exited, or 120 s passed)\n", round);
        CU_ASSERT(saved);
        sleep_ms(rand() % 200);
        kill(pid, SIGKILL);
        CU_ASSERT_EQUAL(wait_exit(pid), 128 + SIGKILL);
        char *latest = tide_latest_checkpoint(dir, err);
        free(previous);
        previous = latest ? strdup(latest) : NULL;
        if (!latest) {
            fprintf(stderr, "round %d: %s\n", round, tide_error_message(err));
            CU_FAIL("no checkpoint to load after a save loop was killed");
            continue;
        }
        CU_ASSERT_EQUAL(tide_saver_restore(saver, s, latest, err), TIDE_OK);
        tide_tensor *tw = gu_fetch(s, w), *ts = gu_fetch(s, step);
        if (tw && ts) {
            int64_t k = *(int64_t *)tide_tensor_data(ts);
            const float *p = tide_tensor_data(tw);
            int wrong = 0;
            for (int i = 0; i < 256 * 256; i++)
                wrong += p[i] != (float)k;
            CU_ASSERT_EQUAL(wrong, 0);
            CU_ASSERT(k >= 1);
            last = k;
            loaded++;
        }
        tide_tensor_release(tw);
        tide_tensor_release(ts);
        free(latest);
    }
    free(previous);
    CU_ASSERT_EQUAL(loaded, 20);
    CU_ASSERT(last >= 1);
    /* The killed saves' temporary files go at the next save into the directory. */
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    CU_ASSERT_EQUAL(tide_saver_save(saver, s, prefix, last + 1, NULL, err), TIDE_OK);
    CU_ASSERT_EQUAL(count_temporaries(dir), 0);
    tide_session_free(s);
    tide_saver_free(saver);
    tide_graph_free(g);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

/* numpy.load reads a checkpoint: names, dtypes, shapes and values. */
static void test_numpy_reads_checkpoint(void)
{
    if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
        th_skip("needs /usr/bin/python3 with numpy (apt-get install python3-numpy)");
        return;
    }
    char *dir = temp_dir(), prefix[512];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    model m = model_new(th_engine(), 2, 3, 1.0);
    set_w(&m, 1.5f);
    tide_error *err = tide_error_new();
    tide_saver *sv = tide_saver_new(m.g, NULL, 0, NULL, err);
    char *path = NULL;
    CU_ASSERT_EQUAL_FATAL(tide_saver_save(sv, m.s, prefix, 3, &path, err), TIDE_OK);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import numpy as np, sys; z = np.load('%s'); "
             "assert sorted(z.files) == ['global_step', 'layer/W', 'layer/b'], z.files; "
             "W = z['layer/W']; assert W.dtype == np.float32 and W.shape == (2, 3), (W.dtype, W.shape); "
             "assert (W == np.arange(6, dtype=np.float32).reshape(2, 3) + 1.5).all(), W; "
             "assert (z['layer/b'] == 0.5).all() and z['global_step'].dtype == np.int64; print('numpy ok')\"",
             path);
    CU_ASSERT_EQUAL(system(cmd), 0);
    free(path);
    tide_saver_free(sv);
    model_free(&m);
    tide_error_free(err);
    remove_dir(dir);
    free(dir);
}

int main(void)
{
    const char *role = getenv("TIDE_CHECKPOINT_ROLE");
    if (role && strcmp(role, "train") == 0) {
        int from = 0, to = 0;
        sscanf(getenv("TIDE_CHECKPOINT_A2"), "%d:%d", &from, &to);
        return train_role(getenv("TIDE_CHECKPOINT_A1"), from, to, getenv("TIDE_CHECKPOINT_A3"));
    }
    if (role && strcmp(role, "save_loop") == 0)
        return save_loop_role(getenv("TIDE_CHECKPOINT_A1"));
    static const th_test tests[] = {TH_TEST(test_npz_round_trip_and_errors), TH_TEST(test_npz_large_entries),
                                    TH_TEST(test_npz_write_error), TH_TEST(test_stale_temporaries_removed),
                                    TH_TEST(test_saver),
                                    TH_TEST(test_resume_bit_for_bit), TH_TEST(test_kill_during_saves),
                                    TH_TEST(test_numpy_reads_checkpoint), TH_END};
    return th_main("checkpoint", tests);
}
