/* saver.c — the saver (tide_checkpoint.h; TensorFlow's tf.train.Saver): a SaveV2 node over the
 * variables and a RestoreV2 node feeding one Assign per variable, built once into the graph; the
 * directory's "checkpoint" state file (TensorFlow's text format) that names the latest checkpoint and
 * the ones kept; keep-the-last-N; latest_checkpoint. Restores check names, dtypes and shapes against
 * the file's headers before assigning anything, so a mismatch leaves every variable as it was. The
 * state file is replaced atomically (temporary file, fsync, rename, fsync of the directory) after the
 * checkpoint itself is complete on disk, and old checkpoints are deleted only after that: at any
 * instant the state file names complete files. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "tide_checkpoint.h"

void tide__checkpoint_ops_linked(void); /* checkpoint_ops.c: links the ops with the saver */

#define STATE_FILE "checkpoint"
#define MAX_KEPT_LISTED 1024

struct tide_saver {
    tide_graph *graph;
    int n;
    tide_node **vars;
    char **names;                /* the checkpoint's tensor names: the variables' node names */
    tide_node *filename, *save, *restore_all;
    int max_to_keep;
};

/* ---------------------------------------------------------------- building */

static tide_node *string_const(tide_graph *g, const char *name, const char *const *v, int n, tide_error *err)
{
    tide_tensor *t = tide_tensor_new(TIDE_STRING, &(tide_shape){.rank = 1, .dims = {n}}, err);
    for (int i = 0; t && i < n; i++)
        if (tide_tensor_string_set(t, i, v[i], strlen(v[i]), err) != TIDE_OK) {
            tide_tensor_release(t);
            t = NULL;
        }
    if (!t)
        return NULL;
    tide_node_builder *b = tide_node_builder_new(g, "Const", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_STRING);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_tensor_release(t);
    return tide_node_builder_finish(b, err);
}

/* A free scope: "save", else "save_1", "save_2"... */
static void free_scope(tide_graph *g, const char *base, char *out, size_t size)
{
    char probe[300];
    for (int k = 0;; k++) {
        if (k)
            snprintf(out, size, "%s_%d", base, k);
        else
            snprintf(out, size, "%s", base);
        snprintf(probe, sizeof probe, "%s/filename", out);
        if (!tide_graph_node(g, probe))
            return;
    }
}

static tide_status build(tide_saver *s, const char *scope, tide_error *err)
{
    tide_graph *g = s->graph;
    char sc[256], name[320];
    free_scope(g, scope, sc, sizeof sc);
    snprintf(name, sizeof name, "%s/filename", sc);
    tide_node_builder *b = tide_node_builder_new(g, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", TIDE_STRING);
    tide_shape scalar = tide_shape_scalar();
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &scalar);
    if (!(s->filename = tide_node_builder_finish(b, err)))
        return tide_error_code(err);
    const char **empty = calloc((size_t)s->n, sizeof *empty);
    tide_output *values = calloc((size_t)s->n, sizeof *values);
    tide_dtype *dtypes = calloc((size_t)s->n, sizeof *dtypes);
    if (!empty || !values || !dtypes) {
        free(empty);
        free(values);
        free(dtypes);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    for (int i = 0; i < s->n; i++) {
        empty[i] = "";
        values[i] = (tide_output){s->vars[i], 0};
        dtypes[i] = tide_node_output_dtype(s->vars[i], 0);
    }
    snprintf(name, sizeof name, "%s/tensor_names", sc);
    tide_node *names = string_const(g, name, (const char *const *)s->names, s->n, err);
    snprintf(name, sizeof name, "%s/shape_and_slices", sc);
    tide_node *slices = names ? string_const(g, name, empty, s->n, err) : NULL;
    tide_status st = slices ? TIDE_OK : tide_error_code(err);
    if (st == TIDE_OK) {
        snprintf(name, sizeof name, "%s/SaveV2", sc);
        b = tide_node_builder_new(g, "SaveV2", name);
        tide_node_builder_add_input(b, (tide_output){s->filename, 0});
        tide_node_builder_add_input(b, (tide_output){names, 0});
        tide_node_builder_add_input(b, (tide_output){slices, 0});
        tide_node_builder_add_input_list(b, values, s->n);
        s->save = tide_node_builder_finish(b, err);
        st = s->save ? TIDE_OK : tide_error_code(err);
    }
    tide_node *restore = NULL;
    if (st == TIDE_OK) {
        snprintf(name, sizeof name, "%s/RestoreV2", sc);
        b = tide_node_builder_new(g, "RestoreV2", name);
        tide_node_builder_add_input(b, (tide_output){s->filename, 0});
        tide_node_builder_add_input(b, (tide_output){names, 0});
        tide_node_builder_add_input(b, (tide_output){slices, 0});
        tide_attrs_set_type_list(tide_node_builder_attrs(b), "dtypes", dtypes, s->n);
        restore = tide_node_builder_finish(b, err);
        st = restore ? TIDE_OK : tide_error_code(err);
    }
    if (st == TIDE_OK) {
        snprintf(name, sizeof name, "%s/restore_all", sc);
        tide_node_builder *all = tide_node_builder_new(g, "NoOp", name);
        for (int i = 0; i < s->n && st == TIDE_OK; i++) {
            snprintf(name, sizeof name, "%s/Assign_%d", sc, i);
            b = tide_node_builder_new(g, "Assign", name);
            tide_node_builder_add_input(b, (tide_output){s->vars[i], 0});
            tide_node_builder_add_input(b, (tide_output){restore, i});
            tide_node *assign = tide_node_builder_finish(b, err);
            if (assign)
                tide_node_builder_add_control_input(all, assign);
            else
                st = tide_error_code(err);
        }
        if (st == TIDE_OK)
            st = (s->restore_all = tide_node_builder_finish(all, err)) ? TIDE_OK : tide_error_code(err);
        else
            tide_node_builder_free(all);
    }
    free(empty);
    free(values);
    free(dtypes);
    return st;
}

tide_saver *tide_saver_new(tide_graph *g, tide_node *const *vars, int n, const tide_saver_options *opts,
                           tide_error *err)
{
    tide__checkpoint_ops_linked();
    if (!g || n < 0 || (n && !vars)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_saver_new: a graph and n variables are needed");
        return NULL;
    }
    tide_saver *s = calloc(1, sizeof *s);
    if (!s) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    s->graph = g;
    s->max_to_keep = opts && opts->max_to_keep ? opts->max_to_keep : 5;
    int count = n ? n : tide_graph_variables(g, false, NULL, 0);
    s->vars = calloc((size_t)(count ? count : 1), sizeof *s->vars);
    s->names = calloc((size_t)(count ? count : 1), sizeof *s->names);
    if (!s->vars || !s->names) {
        tide_saver_free(s);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    if (n)
        memcpy(s->vars, vars, sizeof *vars * (size_t)n);
    else
        tide_graph_variables(g, false, s->vars, count);
    s->n = count;
    tide_status st = TIDE_OK;
    for (int i = 0; i < count && st == TIDE_OK; i++) {
        if (!s->vars[i] || strcmp(tide_node_op(s->vars[i]), "Variable") != 0)
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "a saver saves Variable nodes; %s%s%s is not one",
                                s->vars[i] ? "'" : "", s->vars[i] ? tide_node_name(s->vars[i]) : "NULL",
                                s->vars[i] ? "'" : "");
        else if (!(s->names[i] = strdup(tide_node_name(s->vars[i]))))
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (st == TIDE_OK && count == 0)
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "the graph has no variables to save");
    if (st == TIDE_OK)
        st = build(s, opts && opts->scope ? opts->scope : "save", err);
    if (st != TIDE_OK) {
        tide_saver_free(s);
        return NULL;
    }
    return s;
}

void tide_saver_free(tide_saver *s)
{
    if (!s)
        return;
    for (int i = 0; s->names && i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->vars);
    free(s);
}

/* ---------------------------------------------------------------- the state file */

typedef struct state {
    char *latest;                 /* as written: relative to the directory, or absolute */
    char **kept;                  /* oldest first */
    int num_kept;
} state;

static void state_clear(state *st)
{
    free(st->latest);
    for (int i = 0; i < st->num_kept; i++)
        free(st->kept[i]);
    free(st->kept);
    memset(st, 0, sizeof *st);
}

/* The quoted value of a line "key: \"value\"" (malloc'd), or NULL. */
static char *quoted(const char *line, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ':')
        return NULL;
    const char *open = strchr(line + k, '"');
    const char *close = open ? strrchr(open + 1, '"') : NULL;
    return close ? strndup(open + 1, (size_t)(close - open - 1)) : NULL;
}

static char *join(const char *dir, const char *file)
{
    if (file[0] == '/')
        return strdup(file);
    char *out = malloc(strlen(dir) + strlen(file) + 2);
    if (out)
        sprintf(out, "%s/%s", dir, file);
    return out;
}

/* Reads dir's state file; a missing file is an empty state (TIDE_OK). */
static tide_status state_read(const char *dir, state *st, tide_error *err)
{
    memset(st, 0, sizeof *st);
    char *path = join(dir, STATE_FILE);
    FILE *f = path ? fopen(path, "re") : NULL;
    if (!f) {
        tide_status code = !path ? tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory")
                           : errno == ENOENT ? TIDE_OK
                                             : tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot read %s: %s", path,
                                                              strerror(errno));
        free(path);
        return code;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *v;
        if ((v = quoted(line, "model_checkpoint_path"))) {
            free(st->latest);
            st->latest = v;
        } else if ((v = quoted(line, "all_model_checkpoint_paths")) && st->num_kept < MAX_KEPT_LISTED) {
            char **grown = realloc(st->kept, sizeof *grown * (size_t)(st->num_kept + 1));
            if (!grown) {
                free(v);
                break;
            }
            st->kept = grown;
            st->kept[st->num_kept++] = v;
        } else {
            free(v);
        }
    }
    fclose(f);
    free(path);
    return TIDE_OK;
}

/* Replaces dir's state file atomically. */
static tide_status state_write(const char *dir, const state *st, tide_error *err)
{
    char *path = join(dir, STATE_FILE);
    char *tmp = path ? tide__ckpt_temp_name(path) : NULL;
    if (!tmp) {
        free(path);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    FILE *f = fopen(tmp, "we");
    bool ok = f != NULL;
    if (ok) {
        fprintf(f, "model_checkpoint_path: \"%s\"\n", st->latest);
        for (int i = 0; i < st->num_kept; i++)
            fprintf(f, "all_model_checkpoint_paths: \"%s\"\n", st->kept[i]);
        ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
        ok = fclose(f) == 0 && ok;
    }
    ok = ok && rename(tmp, path) == 0;
    tide_status code = ok ? TIDE_OK : tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write %s: %s", path,
                                                     strerror(errno));
    if (!ok)
        unlink(tmp);
    if (ok)
        code = tide__ckpt_fsync_directory(dir, err);
    free(tmp);
    free(path);
    return code;
}

/* Adds file (relative to dir) as the latest; deletes the oldest beyond max_to_keep. */
static tide_status state_add(const char *dir, const char *file, int max_to_keep, tide_error *err)
{
    state st;
    tide_status code = state_read(dir, &st, err);
    if (code != TIDE_OK)
        return code;
    for (int i = 0; i < st.num_kept; i++) /* saved again under the same name: it moves to the end */
        if (strcmp(st.kept[i], file) == 0) {
            free(st.kept[i]);
            memmove(st.kept + i, st.kept + i + 1, sizeof *st.kept * (size_t)(st.num_kept - i - 1));
            st.num_kept--;
            i--;
        }
    char **grown = realloc(st.kept, sizeof *grown * (size_t)(st.num_kept + 1));
    char *copy = strdup(file), *latest = strdup(file);
    if (!grown || !copy || !latest) {
        free(copy);
        free(latest);
        if (grown)
            st.kept = grown;
        state_clear(&st);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    st.kept = grown;
    st.kept[st.num_kept++] = copy;
    free(st.latest);
    st.latest = latest;
    int drop = max_to_keep > 0 && st.num_kept > max_to_keep ? st.num_kept - max_to_keep : 0;
    state kept = st;
    kept.kept += drop;
    kept.num_kept -= drop;
    code = state_write(dir, &kept, err);
    for (int i = 0; code == TIDE_OK && i < drop; i++) { /* only once the state no longer names them */
        char *old = join(dir, st.kept[i]);
        if (old && unlink(old) != 0 && errno != ENOENT)
            fprintf(stderr, "tide: could not delete the old checkpoint %s: %s\n", old, strerror(errno));
        free(old);
    }
    state_clear(&st);
    return code;
}

char *tide_latest_checkpoint(const char *dir, tide_error *err)
{
    state st;
    if (!dir) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_latest_checkpoint: dir is NULL");
        return NULL;
    }
    if (state_read(dir, &st, err) != TIDE_OK)
        return NULL;
    char *path = st.latest ? join(dir, st.latest) : NULL;
    if (!st.latest)
        tide_error_set(err, TIDE_NOT_FOUND, "no checkpoint in %s (no '%s' file naming one)", dir, STATE_FILE);
    else if (access(path, R_OK) != 0) {
        tide_error_set(err, TIDE_NOT_FOUND, "the latest checkpoint %s, named by %s/%s, cannot be read: %s", path, dir,
                       STATE_FILE, strerror(errno));
        free(path);
        path = NULL;
    }
    state_clear(&st);
    return path;
}

/* ---------------------------------------------------------------- save and restore */

static tide_status run_with_filename(tide_saver *s, tide_session *session, const char *path, tide_node *target,
                                     tide_error *err)
{
    tide_tensor *name = tide_tensor_new(TIDE_STRING, &(tide_shape){.rank = 0}, err);
    if (!name || tide_tensor_string_set(name, 0, path, strlen(path), err) != TIDE_OK) {
        tide_tensor_release(name);
        return tide_error_code(err);
    }
    tide_feed feed = {{s->filename, 0}, name};
    tide_status st = tide_session_run(session, NULL, &feed, 1, NULL, 0, NULL, &target, 1, NULL, err);
    tide_tensor_release(name);
    return st;
}

tide_status tide_saver_save(tide_saver *s, tide_session *session, const char *prefix, int64_t global_step,
                            char **path_out, tide_error *err)
{
    if (path_out)
        *path_out = NULL;
    if (!s || !session || !prefix || !prefix[0])
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_saver_save: a saver, a session and a path are needed");
    size_t len = strlen(prefix);
    bool has_ext = len >= 4 && strcmp(prefix + len - 4, ".npz") == 0;
    char *path = malloc(len + 32);
    if (!path)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int base = (int)(has_ext ? len - 4 : len);
    if (global_step >= 0)
        sprintf(path, "%.*s-%lld.npz", base, prefix, (long long)global_step);
    else
        sprintf(path, "%.*s.npz", base, prefix);
    tide_status st = run_with_filename(s, session, path, s->save, err);
    if (st == TIDE_OK) {
        char *a = strdup(path), *b = strdup(path);
        st = a && b ? state_add(dirname(a), basename(b), s->max_to_keep, err)
                    : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        free(a);
        free(b);
    }
    if (st == TIDE_OK && path_out)
        *path_out = path;
    else
        free(path);
    return st;
}

/* Every variable is in the file with its dtype and a shape it accepts (nothing assigned otherwise). */
static tide_status check_file(const tide_saver *s, const char *path, tide_error *err)
{
    tide_npz *z = tide_npz_open(path, err);
    if (!z)
        return tide_error_code(err);
    tide_status st = TIDE_OK;
    for (int i = 0; i < s->n && st == TIDE_OK; i++) {
        tide_dtype dt, want = tide_node_output_dtype(s->vars[i], 0);
        tide_shape shape, declared = tide_shape_unknown();
        tide_attrs_get_shape(tide_node_attrs(s->vars[i]), "shape", &declared);
        st = tide_npz_describe(z, s->names[i], &dt, &shape, err);
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        if (st == TIDE_OK && dt != want)
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot restore variable '%s' from %s: the checkpoint "
                                "holds %s, the variable is %s", s->names[i], path, tide_dtype_name(dt),
                                tide_dtype_name(want));
        else if (st == TIDE_OK && !tide_shape_compatible(&declared, &shape))
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot restore variable '%s' from %s: the checkpoint "
                                "holds shape %s, the variable is %s", s->names[i], path,
                                tide_shape_format(&shape, a, sizeof a), tide_shape_format(&declared, b, sizeof b));
    }
    tide_npz_close(z);
    return st;
}

tide_status tide_saver_restore(tide_saver *s, tide_session *session, const char *path, tide_error *err)
{
    if (!s || !session || !path || !path[0])
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_saver_restore: a saver, a session and a path are "
                              "needed");
    size_t len = strlen(path);
    char *file = malloc(len + 5);
    if (!file)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    sprintf(file, "%s%s", path, len >= 4 && strcmp(path + len - 4, ".npz") == 0 ? "" : ".npz");
    tide_status st = check_file(s, file, err);
    if (st == TIDE_OK)
        st = run_with_filename(s, session, file, s->restore_all, err);
    free(file);
    return st;
}
