/* debugger_view.c — what a stopped step shows (docs/debugger.md): :where (each node's state), :print
 * (a tensor of the step, NumPy-style slices, -s the health summary), :ni (one node), :li / :lo (inputs
 * and consumers, recursively), :set (replacing a value before its consumers read it).
 *
 * All of it runs on the main thread inside the engine's `paused`, through the stopped step's view
 * (tide_debug_step_*), which is valid only there.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "debugger.h"

#define PRINT_THRESHOLD 1000 /* :print elides tensors of more elements than this */
#define PRINT_EDGE 3
#define MAX_DEPTH 20         /* :li -r without -d */

/* ---------------------------------------------------------------- names */

/* "name:k" -> the node and k (0 without ":k"); NULL with msg. */
static const tide_node *parse_node_spec(repl_debugger *d, const char *spec, int *output, char *msg, size_t size)
{
    char name[512];
    snprintf(name, sizeof name, "%s", spec);
    *output = 0;
    const tide_node *n = repl_debugger_node(d, name);
    char *colon = strrchr(name, ':');
    if (!n && colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        *output = atoi(colon + 1);
        *colon = '\0';
        n = repl_debugger_node(d, name);
    }
    if (!n)
        snprintf(msg, size, "no node '%s' in the graph (:nodes lists them)", name);
    return n;
}

tide_tensor *repl_dbg_value(repl_debugger *d, const char *spec, char *msg, size_t size)
{
    int k;
    const tide_node *n = parse_node_spec(d, spec, &k, msg, size);
    if (!n)
        return NULL;
    if (!d->step) {
        snprintf(msg, size, "no step is stopped");
        return NULL;
    }
    tide_tensor *v = NULL;
    tide_error *err = tide_error_new();
    if (tide_debug_step_value(d->step, n, k, &v, NULL, err) != TIDE_OK)
        snprintf(msg, size, "%s%s", tide_error_message(err),
                 strstr(tide_error_message(err), "' is gone:") ? "; `:keep on` keeps every value from the next run on"
                                                               : "");
    tide_error_free(err);
    return v;
}

static const char *state_of(repl_debugger *d, const tide_node *n)
{
    return tide_debug_node_state_name(tide_debug_step_node_state(d->step, n));
}

/* ---------------------------------------------------------------- :where */

repl_result repl_dbg_where(repl_debugger *d, FILE *out)
{
    repl_debugger_print_stop(d, out);
    tide_graph *g = d->r->graph;
    int total = tide_graph_num_nodes(g), absent = 0;
    for (int i = 0; i < total; i++) {
        const tide_node *n = tide_graph_node_at(g, i);
        tide_debug_node_state s = tide_debug_step_node_state(d->step, n);
        if (s == TIDE_DEBUG_NOT_IN_STEP) {
            absent++;
            continue;
        }
        fprintf(out, "  %-16s %s (%s)\n", tide_debug_node_state_name(s), tide_node_name(n), tide_node_op(n));
    }
    if (absent)
        fprintf(out, "  %d node%s not in this step\n", absent, absent == 1 ? "" : "s");
    fprintf(out, "%lld node executions so far\n", (long long)tide_debug_step_executions(d->step));
    return REPL_DONE;
}

/* ---------------------------------------------------------------- slices */

typedef struct dim_slice {
    int64_t start, step, count;
    bool index; /* a single index: the dimension goes */
} dim_slice;

static bool parse_int(const char **s, int64_t *v, bool *given)
{
    while (**s == ' ')
        (*s)++;
    char *end;
    long long x = strtoll(*s, &end, 10);
    *given = end != *s;
    if (*given)
        *v = x;
    *s = end;
    while (**s == ' ')
        (*s)++;
    return true;
}

/* One dimension's part ("a", "a:b", "a:b:c", ":") against its size n. */
static bool parse_dim(const char **s, int64_t n, dim_slice *ds, char *msg, size_t size)
{
    int64_t v[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    int parts = 0;
    for (;;) {
        parse_int(s, &v[parts], &given[parts]);
        parts++;
        if (**s != ':' || parts == 3)
            break;
        (*s)++;
    }
    if (parts == 1) {
        if (!given[0]) {
            snprintf(msg, size, "slice: an index or start:stop:step is missing");
            return false;
        }
        int64_t i = v[0] < 0 ? v[0] + n : v[0];
        if (i < 0 || i >= n) {
            snprintf(msg, size, "slice: index %lld is out of range for a dimension of %lld", (long long)v[0], (long long)n);
            return false;
        }
        *ds = (dim_slice){i, 1, 1, true};
        return true;
    }
    int64_t step = given[2] ? v[2] : 1;
    if (step == 0) {
        snprintf(msg, size, "slice: the step cannot be 0");
        return false;
    }
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    int64_t start = given[0] ? (v[0] < 0 ? v[0] + n : v[0]) : (step > 0 ? 0 : n - 1);
    int64_t stop = given[1] ? (v[1] < 0 ? v[1] + n : v[1]) : (step > 0 ? n : -1);
    start = start < lo ? lo : start > hi ? hi : start;
    if (given[1])
        stop = stop < lo ? lo : stop > hi ? hi : stop;
    int64_t count = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
    *ds = (dim_slice){start, step, count > 0 ? count : 0, false};
    return true;
}

/* t[text] with text "[...]" (NumPy's basic slicing); a new tensor, or NULL with msg. */
static tide_tensor *slice_tensor(const tide_tensor *t, const char *text, char *msg, size_t size)
{
    int rank = tide_tensor_rank(t);
    dim_slice ds[TIDE_MAX_RANK];
    const char *s = text + 1;
    int k = 0;
    while (*s && *s != ']') {
        if (k == rank) {
            snprintf(msg, size, "slice %s: too many indices for a tensor of rank %d", text, rank);
            return NULL;
        }
        if (!parse_dim(&s, tide_tensor_dim(t, k), &ds[k], msg, size))
            return NULL;
        k++;
        if (*s == ',')
            s++;
        else if (*s != ']') {
            snprintf(msg, size, "slice %s: unexpected '%c' (a slice is [start:stop:step, index, ...])", text, *s);
            return NULL;
        }
    }
    for (; k < rank; k++)
        ds[k] = (dim_slice){0, 1, tide_tensor_dim(t, k), false};
    if (tide_tensor_dtype(t) == TIDE_STRING) {
        snprintf(msg, size, "slice: string tensors are printed whole");
        return NULL;
    }
    int64_t dims[TIDE_MAX_RANK], total = 1;
    int out_rank = 0;
    for (int i = 0; i < rank; i++) {
        total *= ds[i].count;
        if (!ds[i].index)
            dims[out_rank++] = ds[i].count;
    }
    tide_shape shape = tide_shape_make(out_rank, dims);
    tide_tensor *r = tide_tensor_new(tide_tensor_dtype(t), &shape, NULL);
    if (!r) {
        snprintf(msg, size, "out of memory");
        return NULL;
    }
    size_t es = tide_dtype_size(tide_tensor_dtype(t));
    const char *src = tide_tensor_data(t);
    char *dst = tide_tensor_data(r);
    int64_t idx[TIDE_MAX_RANK] = {0};
    for (int64_t e = 0; e < total; e++) {
        int64_t flat = 0;
        for (int i = 0; i < rank; i++)
            flat = flat * tide_tensor_dim(t, i) + ds[i].start + idx[i] * ds[i].step;
        memcpy(dst + (size_t)e * es, src + (size_t)flat * es, es);
        for (int i = rank - 1; i >= 0; i--) {
            if (++idx[i] < ds[i].count)
                break;
            idx[i] = 0;
        }
    }
    return r;
}

/* ---------------------------------------------------------------- :print */

repl_result repl_dbg_print(repl_debugger *d, const char *args)
{
    char buf[1024], msg[512];
    snprintf(buf, sizeof buf, "%s", args);
    bool summary = false;
    char *flag = strstr(buf, "-s");
    if (flag && (flag == buf || flag[-1] == ' ') && (flag[2] == '\0' || flag[2] == ' ')) {
        summary = true;
        memset(flag, ' ', 2);
    }
    char *slice = strchr(buf, '[');
    if (slice) {
        char *close = strchr(slice, ']');
        if (!close) {
            fprintf(stderr, ":print: the slice %s is not closed with ']'\n", slice);
            return REPL_FAILED;
        }
        close[1] = '\0';
    }
    char name[512];
    if (sscanf(buf, " %511[^ [] ", name) != 1) {
        fputs("usage: :print NODE[:k] [SLICE] [-s]\n", stderr);
        return REPL_FAILED;
    }
    tide_tensor *v = repl_dbg_value(d, name, msg, sizeof msg);
    if (!v) {
        fprintf(stderr, ":print: %s\n", msg);
        return REPL_FAILED;
    }
    if (slice) {
        tide_tensor *part = slice_tensor(v, slice, msg, sizeof msg);
        tide_tensor_release(v);
        if (!part) {
            fprintf(stderr, ":print %s: %s\n", name, msg);
            return REPL_FAILED;
        }
        v = part;
    }
    if (summary) {
        repl_format_health(v, msg, sizeof msg);
        printf("%s%s: %s\n", name, slice ? slice : "", msg);
    } else {
        char shape[TIDE_SHAPE_STR_MAX];
        char *text = tide_tensor_format(v, PRINT_THRESHOLD, PRINT_EDGE);
        printf("%s%s %s%s =\n%s\n", name, slice ? slice : "", tide_dtype_name(tide_tensor_dtype(v)),
               tide_shape_format(tide_tensor_shape(v), shape, sizeof shape), text ? text : "(out of memory)");
        free(text);
    }
    tide_tensor_release(v);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :ni, :li, :lo */

repl_result repl_dbg_ni(repl_debugger *d, const char *name)
{
    char msg[512], line[512];
    int k;
    while (*name == ' ')
        name++;
    const tide_node *n = *name ? parse_node_spec(d, name, &k, msg, sizeof msg) : NULL;
    if (!n) {
        fprintf(stderr, ":ni: %s\n", *name ? msg : "a node is missing (:ni NODE)");
        return REPL_FAILED;
    }
    const char *dev = tide_node_assigned_device(n);
    printf("%s (%s) on %s: %s\n", tide_node_name(n), tide_node_op(n), dev ? dev : "(not placed)", state_of(d, n));
    for (int i = 0; i < tide_node_num_inputs(n); i++) {
        tide_output in = tide_node_input(n, i);
        printf("  input %d: %s:%d (%s)\n", i, tide_node_name(in.node), in.index, state_of(d, in.node));
    }
    for (int i = 0; i < tide_node_num_outputs(n); i++) {
        tide_tensor *v = NULL;
        if (tide_debug_step_value(d->step, n, i, &v, NULL, NULL) == TIDE_OK) {
            repl_format_health(v, line, sizeof line);
            tide_tensor_release(v);
        } else
            snprintf(line, sizeof line, "%s, not produced yet", tide_dtype_name(tide_node_output_dtype(n, i)));
        printf("  output %d: %s\n", i, line);
    }
    return REPL_DONE;
}

typedef struct walk {
    repl_debugger *d;
    const tide_node **seen;
    int num_seen, cap_seen;
    int max_depth;
    bool inputs, recursive;
} walk;

static bool walk_seen(walk *w, const tide_node *n)
{
    for (int i = 0; i < w->num_seen; i++)
        if (w->seen[i] == n)
            return true;
    if (w->num_seen == w->cap_seen) {
        int cap = w->cap_seen ? 2 * w->cap_seen : 32;
        const tide_node **grown = realloc(w->seen, sizeof *grown * (size_t)cap);
        if (!grown)
            return true;
        w->seen = grown;
        w->cap_seen = cap;
    }
    w->seen[w->num_seen++] = n;
    return false;
}

static void walk_print(walk *w, const tide_node *n, int depth)
{
    if (depth > w->max_depth)
        return;
    tide_graph *g = w->d->r->graph;
    if (w->inputs) {
        for (int i = 0; i < tide_node_num_inputs(n); i++) {
            tide_output in = tide_node_input(n, i);
            bool again = walk_seen(w, in.node);
            printf("%*s%s:%d (%s, %s)%s\n", 2 * depth, "", tide_node_name(in.node), in.index, tide_node_op(in.node),
                   state_of(w->d, in.node), again && w->recursive ? " (above)" : "");
            if (w->recursive && !again)
                walk_print(w, in.node, depth + 1);
        }
        return;
    }
    for (int c = 0; c < tide_graph_num_nodes(g); c++) {
        const tide_node *m = tide_graph_node_at(g, c);
        for (int i = 0; i < tide_node_num_inputs(m); i++) {
            if (tide_node_input(m, i).node != n)
                continue;
            bool again = walk_seen(w, m);
            printf("%*s%s (%s, %s) reads :%d as input %d%s\n", 2 * depth, "", tide_node_name(m), tide_node_op(m),
                   state_of(w->d, m), tide_node_input(m, i).index, i, again && w->recursive ? " (above)" : "");
            if (w->recursive && !again)
                walk_print(w, m, depth + 1);
            break;
        }
    }
}

repl_result repl_dbg_li(repl_debugger *d, const char *args, bool inputs)
{
    char buf[1024], msg[512];
    snprintf(buf, sizeof buf, "%s", args);
    walk w = {.d = d, .max_depth = MAX_DEPTH, .inputs = inputs};
    const char *name = NULL;
    for (char *t = strtok(buf, " \t"); t; t = strtok(NULL, " \t")) {
        if (strcmp(t, "-r") == 0)
            w.recursive = true;
        else if (strcmp(t, "-d") == 0 && inputs) {
            char *n = strtok(NULL, " \t");
            if (!n || atoi(n) < 1) {
                fputs(":li: -d takes a depth (1 or more)\n", stderr);
                return REPL_FAILED;
            }
            w.max_depth = atoi(n);
            w.recursive = true;
        } else if (!name && t[0] != '-')
            name = t;
        else {
            fprintf(stderr, "usage: :%s NODE%s (unexpected '%s')\n", inputs ? "li" : "lo",
                    inputs ? " [-r] [-d N]" : " [-r]", t);
            return REPL_FAILED;
        }
    }
    int k;
    const tide_node *n = name ? parse_node_spec(d, name, &k, msg, sizeof msg) : NULL;
    if (!n) {
        fprintf(stderr, ":%s: %s\n", inputs ? "li" : "lo", name ? msg : "a node is missing");
        return REPL_FAILED;
    }
    printf("%s of %s (%s, %s):\n", inputs ? "inputs" : "consumers", tide_node_name(n), tide_node_op(n), state_of(d, n));
    walk_seen(&w, n);
    if (!w.recursive)
        w.max_depth = 1;
    walk_print(&w, n, 1);
    free(w.seen);
    return REPL_DONE;
}

/* ---------------------------------------------------------------- :set */

repl_result repl_dbg_set(repl_debugger *d, const char *args)
{
    char name[512], msg[512];
    while (*args == ' ')
        args++;
    size_t len = strcspn(args, " \t");
    const char *value = args + len;
    while (*value == ' ' || *value == '\t')
        value++;
    if (len == 0 || len >= sizeof name || !*value) {
        fputs("usage: :set NODE[:k] VALUE (VALUE: a Lua expression)\n", stderr);
        return REPL_FAILED;
    }
    snprintf(name, sizeof name, "%.*s", (int)len, args);
    int k;
    const tide_node *n = parse_node_spec(d, name, &k, msg, sizeof msg);
    if (!n) {
        fprintf(stderr, ":set: %s\n", msg);
        return REPL_FAILED;
    }
    tide_dtype dt = k < tide_node_num_outputs(n) ? tide_node_output_dtype(n, k) : TIDE_INVALID_DTYPE;
    tide_tensor *old = NULL;
    if (tide_debug_step_value(d->step, n, k, &old, NULL, NULL) == TIDE_OK)
        dt = tide_tensor_dtype(old);
    tide_tensor_release(old);
    tide_tensor *v = repl_dbg_lua_tensor(d->r, value, dt, msg, sizeof msg);
    if (!v) {
        fprintf(stderr, ":set %s: %s\n", name, msg);
        return REPL_FAILED;
    }
    tide_error *err = tide_error_new();
    tide_status st = tide_debug_step_set_value(d->step, n, k, v, err);
    if (st != TIDE_OK)
        fprintf(stderr, ":set: %s\n", tide_error_message(err));
    else
        printf("%s:%d set\n", tide_node_name(n), k);
    tide_error_free(err);
    tide_tensor_release(v);
    return st == TIDE_OK ? REPL_DONE : REPL_FAILED;
}
