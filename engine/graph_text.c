/* graph_text.c — the graph text format (docs/graph-text-format.md): one node per line,
 *
 *   name = Op(input, input:1, [list, of, inputs], ^control, attr=value, ...) @"/device:spec"
 *
 * Writing emits nodes in creation order with every attr; reading accepts nodes in any order (inputs may
 * be defined later in the text or already be in the graph), adds them in dependency order and is
 * atomic: on any error (syntax, unknown op/input/attr, type, shape, cycle) the graph is rolled back to
 * exactly what it was. Attr values are parsed generically, then converted by the op's attr types.
 * A loop's back edge (a Merge's input from a NextIteration of the text not yet added) is the one input
 * the dependency order does not follow: the Merge is built with a stand-in (its first other input) and
 * the loop closed (tide_graph_close_loop) once every node is in; any other cycle is an error.
 *
 * What reading guards against: the dependency order is found by an explicit stack, not recursion, so
 * a million nodes in reverse order cannot overflow the C stack; a number that does not fit its type
 * (an int32 element, an int64 attr, an output index, a float32 that would become inf) is an error,
 * never wrapped; a tensor literal is parsed straight into its tensor, whose size is checked against
 * what the rest of the text could hold before it is allocated, so a few bytes cannot claim gigabytes;
 * a generic list holds at most LIST_MAX items (large data belong in tensor(...)). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- writing */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *t, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, t, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_str(sbuf *b, const char *t) { sb_put(b, t, strlen(t)); }

static void sb_fmt(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof tmp) {
        sb_put(b, tmp, (size_t)n);
        return;
    }
    char *big = NULL;
    va_start(ap, fmt);
    if (vasprintf(&big, fmt, ap) >= 0)
        sb_str(b, big);
    va_end(ap);
    free(big);
}

static void sb_quoted(sbuf *b, const char *s, size_t len)
{
    sb_str(b, "\"");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            sb_fmt(b, "\\%c", c);
        else if (c == '\n')
            sb_str(b, "\\n");
        else if (c == '\t')
            sb_str(b, "\\t");
        else if (c < 32 || c >= 127)
            sb_fmt(b, "\\x%02x", c);
        else
            sb_put(b, (const char *)&c, 1);
    }
    sb_str(b, "\"");
}

static void sb_double(sbuf *b, double v, bool is_f32)
{
    if (isnan(v))
        sb_str(b, "nan");
    else if (isinf(v))
        sb_str(b, v < 0 ? "-inf" : "inf");
    else {
        /* The shortest text that reads back to the same value: 0.1, not 0.100000001. */
        char tmp[64];
        for (int digits = is_f32 ? 6 : 15; digits <= (is_f32 ? 9 : 17); digits++) {
            snprintf(tmp, sizeof tmp, "%.*g", digits, v);
            if (is_f32 ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
                break;
        }
        sb_str(b, tmp);
        if (!strpbrk(tmp, ".en"))
            sb_str(b, ".0"); /* keep floats recognisable */
    }
}

static void sb_shape(sbuf *b, const tide_shape *s)
{
    if (s->rank < 0) {
        sb_str(b, "*");
        return;
    }
    sb_str(b, "[");
    for (int i = 0; i < s->rank; i++) {
        if (i)
            sb_str(b, ", ");
        if (s->dims[i] < 0)
            sb_str(b, "?");
        else
            sb_fmt(b, "%lld", (long long)s->dims[i]);
    }
    sb_str(b, "]");
}

static void sb_tensor(sbuf *b, const tide_tensor *t)
{
    sb_fmt(b, "tensor(%s, ", tide_dtype_name(t->dtype));
    sb_shape(b, &t->shape);
    sb_str(b, ", [");
    const char *data = tide_tensor_data(t);
    int64_t n = t->num_elements;
    for (int64_t i = 0; i < n; i++) {
        if (i)
            sb_str(b, ", ");
        switch (t->dtype) {
        case TIDE_STRING: {
            size_t len;
            const char *s = tide_tensor_string_get(t, i, &len);
            sb_quoted(b, s, len);
            break;
        }
        case TIDE_BOOL: sb_str(b, data[i] ? "true" : "false"); break;
        case TIDE_COMPLEX64:
            sb_double(b, ((const float *)data)[2 * i], true);
            sb_str(b, ", ");
            sb_double(b, ((const float *)data)[2 * i + 1], true);
            break;
        case TIDE_COMPLEX128:
            sb_double(b, ((const double *)data)[2 * i], false);
            sb_str(b, ", ");
            sb_double(b, ((const double *)data)[2 * i + 1], false);
            break;
        case TIDE_INT64: sb_fmt(b, "%lld", (long long)((const int64_t *)data)[i]); break;
        default:
            if (tide_dtype_is_float(t->dtype))
                sb_double(b, tide_tensor_get_f64(t, i), t->dtype != TIDE_FLOAT64);
            else
                sb_fmt(b, "%.0f", tide_tensor_get_f64(t, i));
        }
    }
    sb_str(b, "])");
}

/* Item i of a list attr's items, written as the attr of its kind would be. */
static void sb_list_item(sbuf *b, tide_attr_type list, const void *items, int i)
{
    switch (list) {
    case TIDE_ATTR_INT_LIST: sb_fmt(b, "%lld", (long long)((const int64_t *)items)[i]); break;
    case TIDE_ATTR_FLOAT_LIST: sb_double(b, ((const double *)items)[i], false); break;
    case TIDE_ATTR_TYPE_LIST: sb_str(b, tide_dtype_name(((const tide_dtype *)items)[i])); break;
    case TIDE_ATTR_STRING_LIST: {
        const char *item = ((char *const *)items)[i];
        sb_quoted(b, item, strlen(item));
        break;
    }
    case TIDE_ATTR_BOOL_LIST: sb_str(b, ((const bool *)items)[i] ? "true" : "false"); break;
    case TIDE_ATTR_SHAPE_LIST: sb_shape(b, &((const tide_shape *)items)[i]); break;
    case TIDE_ATTR_TENSOR_LIST: sb_tensor(b, ((tide_tensor *const *)items)[i]); break;
    default: sb_str(b, "?"); break;
    }
}

static void sb_attr(sbuf *b, const tide_attr_value *v)
{
    switch (v->type) {
    case TIDE_ATTR_INT: sb_fmt(b, "%lld", (long long)v->u.i); break;
    case TIDE_ATTR_FLOAT: sb_double(b, v->u.f, false); break;
    case TIDE_ATTR_BOOL: sb_str(b, v->u.b ? "true" : "false"); break;
    case TIDE_ATTR_STRING: sb_quoted(b, v->u.s, strlen(v->u.s)); break;
    case TIDE_ATTR_TYPE: sb_str(b, tide_dtype_name(v->u.t)); break;
    case TIDE_ATTR_SHAPE: sb_shape(b, &v->u.shape); break;
    case TIDE_ATTR_TENSOR: sb_tensor(b, v->u.tensor); break;
    default:
        if (!tide__attr_type_is_list(v->type)) {
            sb_str(b, "?");
            break;
        }
        sb_str(b, "[");
        for (int i = 0; i < v->u.list.n; i++) {
            if (i)
                sb_str(b, ", ");
            sb_list_item(b, v->type, v->u.list.items, i);
        }
        sb_str(b, "]");
        break;
    }
}

static void sb_input(sbuf *b, tide_output in)
{
    sb_str(b, in.node->name);
    if (in.index)
        sb_fmt(b, ":%d", in.index);
}

static void write_node(sbuf *b, const tide_node *n)
{
    sb_fmt(b, "%s = %s(", n->name, n->op->name);
    bool first = true;
    for (int a = 0; a < n->op->num_inputs; a++) {
        if (!first)
            sb_str(b, ", ");
        first = false;
        bool list = n->op->inputs[a].number_attr != NULL;
        if (list)
            sb_str(b, "[");
        for (int i = n->arg_start[a]; i < n->arg_start[a + 1]; i++) {
            if (i > n->arg_start[a])
                sb_str(b, ", ");
            sb_input(b, n->inputs[i]);
        }
        if (list)
            sb_str(b, "]");
    }
    for (int i = 0; i < n->num_control; i++) {
        sb_str(b, first ? "^" : ", ^");
        first = false;
        sb_str(b, n->control[i]->name);
    }
    for (int i = 0; i < n->op->num_attrs; i++) {
        const tide_attr_value *v = tide__attrs_find(n->attrs, n->op->attrs[i].name);
        if (!v)
            continue;
        sb_str(b, first ? "" : ", ");
        first = false;
        sb_fmt(b, "%s=", n->op->attrs[i].name);
        sb_attr(b, v);
    }
    /* "_" annotations, which no op defines, by name: the text does not depend on the order they were
     * set in (a GraphDef keeps attrs sorted by name, so a graph reads back from one as the same text). */
    for (const char *last = ""; ; ) {
        int next = -1;
        for (int i = 0; i < n->attrs->count; i++) {
            const char *name = n->attrs->items[i].name;
            if (name[0] == '_' && strcmp(name, last) > 0 && (next < 0 || strcmp(name, n->attrs->items[next].name) < 0))
                next = i;
        }
        if (next < 0)
            break;
        last = n->attrs->items[next].name;
        sb_str(b, first ? "" : ", ");
        first = false;
        sb_fmt(b, "%s=", last);
        sb_attr(b, &n->attrs->items[next].value);
    }
    sb_str(b, ")");
    if (n->requested_device[0]) {
        sb_str(b, " @");
        sb_quoted(b, n->requested_device, strlen(n->requested_device));
    }
    sb_str(b, "\n");
}

char *tide_graph_to_text(const tide_graph *g, tide_error *err)
{
    sbuf b = {0};
    sb_fmt(&b, "# tide graph v1: %d nodes\n", g->num_nodes);
    for (int i = 0; i < g->num_nodes; i++)
        write_node(&b, g->nodes[i]);
    if (b.oom) {
        free(b.s);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory writing the graph");
        return NULL;
    }
    return b.s;
}

char *tide_node_to_text(const tide_node *n)
{
    sbuf b = {0};
    write_node(&b, n);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* ---------------------------------------------------------------- reading: generic values */

#define LIST_MAX (1 << 20)   /* items in one generic list */
#define DEPTH_MAX 16         /* nesting of values */

typedef enum gv_kind { GV_NUMBER, GV_WORD, GV_STRING, GV_LIST, GV_STAR, GV_QMARK, GV_TENSOR } gv_kind;

typedef struct gvalue {
    gv_kind kind;
    char *text;               /* NUMBER, WORD, STRING (decoded, may hold NULs: len) */
    size_t len;
    struct gvalue *items;     /* LIST */
    int n, cap;
    tide_tensor *tensor;      /* TENSOR */
} gvalue;

static void gv_clear(gvalue *v)
{
    free(v->text);
    for (int i = 0; i < v->n; i++)
        gv_clear(&v->items[i]);
    free(v->items);
    tide_tensor_release(v->tensor);
    memset(v, 0, sizeof *v);
}

typedef struct parser {
    const char *p, *end;      /* end: the text's terminating NUL */
    const char *source;       /* "graph text", or the file's path: messages say "SOURCE line N" */
    int line;
    tide_error *err;
    tide_arena *arena;        /* the names and references of the lines read (the reader's) */
} parser;

/* The code of a failure recorded in err, which may be NULL (then all that is known is that it failed). */
static tide_status failure_code(const tide_error *err)
{
    tide_status code = tide_error_code(err);
    return code != TIDE_OK ? code : TIDE_INVALID_ARGUMENT;
}

static tide_status perr(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tide_status perr(parser *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tide__error_vset(ps->err, TIDE_INVALID_ARGUMENT, fmt, ap);
    va_end(ap);
    tide__error_prefix(ps->err, "%s line %d", ps->source, ps->line);
    return TIDE_INVALID_ARGUMENT;
}

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '/' || c == '-' || c == '.';
}

static tide_status parse_string(parser *ps, gvalue *v)
{
    const char *p = ps->p + 1;
    size_t cap = 16, len = 0;
    char *out = malloc(cap);
    while (out && *p && *p != '"' && *p != '\n') {
        char c = *p++;
        if (c == '\\') {
            char e = *p++;
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == 'x' && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1])) {
                char hex[3] = {p[0], p[1], 0};
                c = (char)strtol(hex, NULL, 16);
                p += 2;
            } else if (e == '"' || e == '\\') c = e;
            else {
                free(out);
                return perr(ps, "bad escape '\\%c' in a string", e ? e : '0');
            }
        }
        if (len + 2 > cap) {
            char *grown = realloc(out, cap *= 2);
            if (!grown)
                break;
            out = grown;
        }
        out[len++] = c;
    }
    if (!out || *p != '"') {
        free(out);
        return perr(ps, "unterminated string");
    }
    out[len] = 0;
    v->kind = GV_STRING;
    v->text = out;
    v->len = len;
    ps->p = p + 1;
    return TIDE_OK;
}

static tide_status parse_value(parser *ps, gvalue *v, int depth);
static tide_status parse_tensor(parser *ps, gvalue *v, int depth);

static tide_status parse_list(parser *ps, gvalue *v, char close, int depth)
{
    v->kind = GV_LIST;
    ps->p++;
    skip_ws(ps);
    while (*ps->p != close) {
        if (v->n == LIST_MAX)
            return perr(ps, "a list of more than %d values (write large data as tensor(DTYPE, [dims], "
                            "[values]))", LIST_MAX);
        if (v->n == v->cap) {
            int cap = v->cap ? 2 * v->cap : 8;
            gvalue *items = realloc(v->items, sizeof *items * (size_t)cap);
            if (!items)
                return perr(ps, "out of memory");
            v->items = items;
            v->cap = cap;
        }
        memset(&v->items[v->n], 0, sizeof *v->items);
        tide_status st = parse_value(ps, &v->items[v->n++], depth + 1);
        if (st != TIDE_OK)
            return st;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            skip_ws(ps);
        } else if (*ps->p != close) {
            return perr(ps, "expected ',' or '%c' in a list", close);
        }
    }
    ps->p++;
    return TIDE_OK;
}

static tide_status parse_value(parser *ps, gvalue *v, int depth)
{
    skip_ws(ps);
    memset(v, 0, sizeof *v);
    if (depth > DEPTH_MAX)
        return perr(ps, "values nested too deeply");
    char c = *ps->p;
    if (c == '"')
        return parse_string(ps, v);
    if (c == '[')
        return parse_list(ps, v, ']', depth);
    if (c == '*' || c == '?') {
        v->kind = c == '*' ? GV_STAR : GV_QMARK;
        ps->p++;
        return TIDE_OK;
    }
    const char *start = ps->p;
    if (c == '-' || c == '+' || isdigit((unsigned char)c) || c == '.') {
        ps->p++;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '.' ||
               ((*ps->p == '-' || *ps->p == '+') && (ps->p[-1] == 'e' || ps->p[-1] == 'E')))
            ps->p++;
        v->kind = GV_NUMBER;
        v->text = strndup(start, (size_t)(ps->p - start));
        return v->text ? TIDE_OK : perr(ps, "out of memory");
    }
    if (isalpha((unsigned char)c)) {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
            ps->p++;
        size_t len = (size_t)(ps->p - start);
        if (len == 6 && strncmp(start, "tensor", 6) == 0 && *ps->p == '(')
            return parse_tensor(ps, v, depth);
        v->kind = GV_WORD;
        v->text = strndup(start, len);
        return v->text ? TIDE_OK : perr(ps, "out of memory");
    }
    return perr(ps, "unexpected '%c' where a value was expected", c ? c : ' ');
}

/* ---------------------------------------------------------------- reading: values by attr type */

/* What a number literal gives: its value, or why not. */
typedef enum num_status { NUM_OK, NUM_BAD, NUM_RANGE } num_status;

static num_status gv_int(const gvalue *v, int64_t *out)
{
    if (v->kind != GV_NUMBER)
        return NUM_BAD;
    char *end;
    errno = 0;
    long long x = strtoll(v->text, &end, 10);
    if (end == v->text || *end)
        return NUM_BAD;
    if (errno == ERANGE)
        return NUM_RANGE;
    *out = x;
    return NUM_OK;
}

static num_status gv_double(const gvalue *v, double *out)
{
    if (v->kind == GV_WORD && (strcmp(v->text, "nan") == 0 || strcmp(v->text, "inf") == 0)) {
        *out = v->text[0] == 'n' ? NAN : INFINITY;
        return NUM_OK;
    }
    if (v->kind != GV_NUMBER)
        return NUM_BAD;
    if (strcmp(v->text, "-inf") == 0) {
        *out = -INFINITY;
        return NUM_OK;
    }
    char *end;
    errno = 0;
    *out = strtod(v->text, &end);
    if (end == v->text || *end)
        return NUM_BAD;
    return errno == ERANGE && isinf(*out) ? NUM_RANGE : NUM_OK; /* underflow to 0 or a denormal is fine */
}

/* NULL when v is a shape (written into *s), else why not. */
static const char *gv_shape(const gvalue *v, tide_shape *s)
{
    if (v->kind == GV_STAR) {
        *s = tide_shape_unknown();
        return NULL;
    }
    if (v->kind != GV_LIST)
        return "is not a shape ([dims] or *)";
    if (v->n > TIDE_MAX_RANK)
        return "has more than 8 dimensions (TIDE_MAX_RANK)";
    s->rank = v->n;
    for (int i = 0; i < v->n; i++) {
        num_status ns = v->items[i].kind == GV_QMARK ? NUM_OK : gv_int(&v->items[i], &s->dims[i]);
        if (v->items[i].kind == GV_QMARK)
            s->dims[i] = -1;
        else if (ns == NUM_RANGE)
            return "has a dimension too large for int64";
        else if (ns == NUM_BAD || s->dims[i] < -1)
            return "has a dimension that is not a size (a non-negative integer, or ?)";
    }
    return NULL;
}

/* The range of an integer dtype. */
static void int_range(tide_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case TIDE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case TIDE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case TIDE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case TIDE_UINT8: *lo = 0, *hi = UINT8_MAX; break;
    case TIDE_UINT16: *lo = 0, *hi = UINT16_MAX; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
    }
}

/* The element converters: true, or false with why[] saying what is wrong with the value. */
static bool int_element(const gvalue *v, tide_dtype dt, char *dst, char *why, size_t size)
{
    int64_t i, lo, hi;
    num_status ns = gv_int(v, &i);
    int_range(dt, &lo, &hi);
    if (ns == NUM_BAD) {
        snprintf(why, size, "is not an integer");
        return false;
    }
    if (ns == NUM_RANGE || i < lo || i > hi) {
        snprintf(why, size, "is out of the range of %s (%lld to %lld)", tide_dtype_name(dt), (long long)lo,
                 (long long)hi);
        return false;
    }
    switch (dt) {
    case TIDE_INT8: *(int8_t *)dst = (int8_t)i; break;
    case TIDE_INT16: *(int16_t *)dst = (int16_t)i; break;
    case TIDE_INT32: *(int32_t *)dst = (int32_t)i; break;
    case TIDE_UINT8: *(uint8_t *)dst = (uint8_t)i; break;
    case TIDE_UINT16: *(uint16_t *)dst = (uint16_t)i; break;
    default: *(int64_t *)dst = i; break;
    }
    return true;
}

static bool float_element(const gvalue *v, tide_dtype dt, char *dst, char *why, size_t size)
{
    double d;
    num_status ns = gv_double(v, &d);
    if (ns == NUM_BAD) {
        snprintf(why, size, "is not a number");
        return false;
    }
    float f = (float)d;
    bool overflow = ns == NUM_RANGE || (dt != TIDE_FLOAT64 && isfinite(d) && isinf(f));
    if (dt == TIDE_FLOAT16) {
        uint16_t h = tide_f32_to_f16(f);
        overflow |= isfinite(d) && isinf(tide_f16_to_f32(h));
        memcpy(dst, &h, 2);
    } else if (dt == TIDE_BFLOAT16) {
        uint16_t h = tide_f32_to_bf16(f);
        overflow |= isfinite(d) && isinf(tide_bf16_to_f32(h));
        memcpy(dst, &h, 2);
    } else if (dt == TIDE_FLOAT32) {
        memcpy(dst, &f, 4);
    } else {
        memcpy(dst, &d, 8);
    }
    if (overflow)
        snprintf(why, size, "is out of the range of %s (write inf for an infinity)", tide_dtype_name(dt));
    return !overflow;
}

/* Element value v as dtype dt into dst. */
static bool gv_element(const gvalue *v, tide_dtype dt, char *dst, char *why, size_t size)
{
    if (dt == TIDE_BOOL) {
        bool ok = v->kind == GV_WORD && (!strcmp(v->text, "true") || !strcmp(v->text, "false"));
        if (ok)
            *(uint8_t *)dst = v->text[0] == 't';
        else
            snprintf(why, size, "is not a bool (true or false)");
        return ok;
    }
    if (tide_dtype_is_integer(dt))
        return int_element(v, dt, dst, why, size);
    return float_element(v, dt, dst, why, size);
}

/* Item i of a tensor literal's values into t (NULL: only counted). */
static bool store_item(tide_tensor *t, int64_t i, const gvalue *item, char *why, size_t size)
{
    if (!t)
        return true;
    tide_dtype dt = tide_tensor_dtype(t);
    char *data = tide_tensor_data(t);
    if (dt == TIDE_STRING) {
        bool ok = item->kind == GV_STRING && tide_tensor_string_set(t, i, item->text, item->len, NULL) == TIDE_OK;
        if (!ok)
            snprintf(why, size, "is not a quoted string");
        return ok;
    }
    if (tide_dtype_is_complex(dt)) { /* two items per element: real, imaginary */
        tide_dtype part = dt == TIDE_COMPLEX64 ? TIDE_FLOAT32 : TIDE_FLOAT64;
        return gv_element(item, part, data + (size_t)i * tide_dtype_size(part), why, size);
    }
    return gv_element(item, dt, data + (size_t)i * tide_dtype_size(dt), why, size);
}

/* The items of a tensor literal's value list ([ already consumed), into t (NULL: only counted);
 * *count receives how many there were. literal ("tensor(int32, [2])") names it in messages. */
static tide_status parse_tensor_items(parser *ps, tide_tensor *t, const char *literal, int64_t needed,
                                      int64_t *count, int depth)
{
    *count = 0;
    skip_ws(ps);
    while (*ps->p != ']') {
        gvalue item;
        char why[128];
        tide_status st = parse_value(ps, &item, depth + 1);
        if (st == TIDE_OK && *count < needed && !store_item(t, *count, &item, why, sizeof why))
            st = perr(ps, "%s value %lld: %.40s %s", literal, (long long)*count,
                      item.text ? item.text : item.kind == GV_LIST ? "[...]" : "?", why);
        gv_clear(&item);
        if (st != TIDE_OK)
            return st;
        ++*count;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            skip_ws(ps);
        } else if (*ps->p != ']') {
            return perr(ps, "expected ',' or ']' in the values of %s", literal);
        }
    }
    ps->p++;
    return TIDE_OK;
}

static tide_status expect_char(parser *ps, char c)
{
    skip_ws(ps);
    if (*ps->p != c)
        return perr(ps, "expected tensor(DTYPE, [dims], [values]): '%c' missing", c);
    ps->p++;
    return TIDE_OK;
}

/* tensor(DTYPE, [dims], [values]) (ps->p at the '('), parsed straight into v->tensor. Before the tensor
 * is allocated its number of values is checked against the most the rest of the text could hold (a
 * value and its comma take two bytes); a shape the text cannot fill is counted without storing, and
 * reported. */
static tide_status parse_tensor(parser *ps, gvalue *v, int depth)
{
    ps->p++;
    gvalue dtype_v, shape_v;
    tide_status st = parse_value(ps, &dtype_v, depth + 1); /* parse_value zeroes its value first */
    if (st != TIDE_OK) {
        gv_clear(&dtype_v); /* a list may have been half read */
        return st;
    }
    tide_dtype dt = dtype_v.kind == GV_WORD ? tide_dtype_from_name(dtype_v.text) : TIDE_INVALID_DTYPE;
    if (dt == TIDE_INVALID_DTYPE)
        st = perr(ps, "tensor(...): '%.40s' is not a dtype", dtype_v.text ? dtype_v.text : "?");
    gv_clear(&dtype_v);
    if (st != TIDE_OK || (st = expect_char(ps, ',')) != TIDE_OK)
        return st;
    if ((st = parse_value(ps, &shape_v, depth + 1)) != TIDE_OK) {
        gv_clear(&shape_v);
        return st;
    }
    tide_shape shape;
    const char *why = gv_shape(&shape_v, &shape);
    gv_clear(&shape_v);
    if (why || !tide_shape_is_fully_defined(&shape))
        return perr(ps, "tensor(%s, ...): the shape %s", tide_dtype_name(dt), why ? why : "is not fully defined");
    char shown[TIDE_SHAPE_STR_MAX], literal[TIDE_SHAPE_STR_MAX + 32];
    tide_shape_format(&shape, shown, sizeof shown);
    snprintf(literal, sizeof literal, "tensor(%s, %s)", tide_dtype_name(dt), shown);
    int64_t elements = tide_shape_num_elements(&shape), per = tide_dtype_is_complex(dt) ? 2 : 1;
    if (elements < 0 || elements > INT64_MAX / 2)
        return perr(ps, "%s: the shape is too large", literal);
    if ((st = expect_char(ps, ',')) != TIDE_OK || (st = expect_char(ps, '[')) != TIDE_OK)
        return st;
    int64_t needed = elements * per, count, room = (ps->end - ps->p) / 2 + 1;
    tide_tensor *t = needed <= room ? tide_tensor_new_uninitialized(dt, &shape, ps->err) : NULL;
    if (needed <= room && !t) {
        tide__error_prefix(ps->err, "%s line %d", ps->source, ps->line);
        return failure_code(ps->err);
    }
    st = parse_tensor_items(ps, t, literal, needed, &count, depth);
    if (st == TIDE_OK && count != needed)
        st = perr(ps, "%s needs %lld values, the list holds %lld", literal, (long long)needed, (long long)count);
    if (st == TIDE_OK)
        st = expect_char(ps, ')');
    if (st != TIDE_OK) {
        tide_tensor_release(t);
        return st;
    }
    v->kind = GV_TENSOR;
    v->tensor = t;
    return TIDE_OK;
}

static tide_status out_of_range(parser *ps, const char *what, const gvalue *v, const char *type)
{
    return perr(ps, "%s: %.40s is out of the range of %s", what, v->text ? v->text : "?", type);
}

static bool gv_bool(const gvalue *v, bool *out)
{
    if (v->kind != GV_WORD || (strcmp(v->text, "true") && strcmp(v->text, "false")))
        return false;
    *out = v->text[0] == 't';
    return true;
}

static bool gv_dtype(const gvalue *v, tide_dtype *out)
{
    return v->kind == GV_WORD && (*out = tide_dtype_from_name(v->text)) != TIDE_INVALID_DTYPE;
}

/* The kind of an annotation ("_" attr, which no op types) from how its value is written. A list of
 * integers reads as list(int) (and [] as an empty one), a list holding '?' as a shape. A number too
 * large for its kind still has that kind (and is reported as out of its range). */
static tide_attr_type annotation_type(const gvalue *v)
{
    int64_t i;
    double d;
    bool b;
    tide_dtype dt;
    switch (v->kind) {
    case GV_STRING: return TIDE_ATTR_STRING;
    case GV_STAR: return TIDE_ATTR_SHAPE;
    case GV_TENSOR: return TIDE_ATTR_TENSOR;
    case GV_NUMBER:
    case GV_WORD:
        return gv_bool(v, &b) ? TIDE_ATTR_BOOL : gv_int(v, &i) != NUM_BAD ? TIDE_ATTR_INT
             : gv_double(v, &d) != NUM_BAD ? TIDE_ATTR_FLOAT : gv_dtype(v, &dt) ? TIDE_ATTR_TYPE : TIDE_ATTR_NONE;
    case GV_LIST: {
        if (v->n == 0)
            return TIDE_ATTR_INT_LIST;
        bool all_ints = true;
        for (int k = 0; k < v->n; k++) {
            if (v->items[k].kind == GV_QMARK)
                return TIDE_ATTR_SHAPE;
            all_ints &= gv_int(&v->items[k], &i) != NUM_BAD;
        }
        if (all_ints)
            return TIDE_ATTR_INT_LIST;
        switch (annotation_type(&v->items[0])) {
        case TIDE_ATTR_INT:
        case TIDE_ATTR_FLOAT: return TIDE_ATTR_FLOAT_LIST;
        case TIDE_ATTR_STRING: return TIDE_ATTR_STRING_LIST;
        case TIDE_ATTR_BOOL: return TIDE_ATTR_BOOL_LIST;
        case TIDE_ATTR_TYPE: return TIDE_ATTR_TYPE_LIST;
        case TIDE_ATTR_TENSOR: return TIDE_ATTR_TENSOR_LIST;
        case TIDE_ATTR_SHAPE:
        case TIDE_ATTR_INT_LIST: return TIDE_ATTR_SHAPE_LIST;
        default: return TIDE_ATTR_NONE;
        }
    }
    default: return TIDE_ATTR_NONE;
    }
}

typedef enum set_result { SET_OK, SET_WRONG_KIND, SET_FAILED } set_result;

/* A number of an int or float kind into *out: SET_OK, SET_WRONG_KIND (not such a number), or
 * SET_FAILED with the error set (a number out of the kind's range). what names the attr. */
static set_result set_number(parser *ps, const char *what, bool is_int, const gvalue *v, void *out)
{
    num_status ns = is_int ? gv_int(v, out) : gv_double(v, out);
    if (ns == NUM_RANGE) {
        out_of_range(ps, what, v, is_int ? "int64" : "float64");
        return SET_FAILED;
    }
    return ns == NUM_OK ? SET_OK : SET_WRONG_KIND;
}

/* A shape into *out, as set_number: a list that is no shape (a dimension too large, negative) is
 * reported. */
static set_result set_shape_value(parser *ps, const char *what, const gvalue *v, tide_shape *out)
{
    const char *why = gv_shape(v, out);
    if (why && v->kind == GV_LIST) {
        perr(ps, "%s: the shape %s", what, why);
        return SET_FAILED;
    }
    return why ? SET_WRONG_KIND : SET_OK;
}

/* Item it of a list of kind `type` into slot k of items. */
static set_result list_item(parser *ps, const char *what, tide_attr_type type, const gvalue *it, char *items, int k)
{
    bool ok;
    switch (type) {
    case TIDE_ATTR_INT_LIST: return set_number(ps, what, true, it, &((int64_t *)items)[k]);
    case TIDE_ATTR_FLOAT_LIST: return set_number(ps, what, false, it, &((double *)items)[k]);
    case TIDE_ATTR_SHAPE_LIST: return set_shape_value(ps, what, it, &((tide_shape *)items)[k]);
    case TIDE_ATTR_TYPE_LIST: ok = gv_dtype(it, &((tide_dtype *)items)[k]); break;
    case TIDE_ATTR_BOOL_LIST: ok = gv_bool(it, &((bool *)items)[k]); break;
    case TIDE_ATTR_STRING_LIST:
        ok = it->kind == GV_STRING;
        ((const char **)items)[k] = it->text;
        break;
    case TIDE_ATTR_TENSOR_LIST:
        ok = it->kind == GV_TENSOR;
        if (ok)
            ((tide_tensor **)items)[k] = tide_tensor_retain(it->tensor);
        break;
    default: ok = false; break;
    }
    return ok ? SET_OK : SET_WRONG_KIND;
}

/* A list attr of kind `type` from a list value: every item converted, or SET_WRONG_KIND. */
static set_result set_list(parser *ps, tide_attrs *attrs, const char *name, const char *what, tide_attr_type type,
                           const gvalue *v)
{
    if (v->kind != GV_LIST)
        return SET_WRONG_KIND;
    _Static_assert(sizeof(int64_t) >= sizeof(double) && sizeof(int64_t) >= sizeof(void *) &&
                   sizeof(int64_t) >= sizeof(tide_dtype), "an int64 holds any list item but a shape");
    char *items = calloc((size_t)v->n + 1, type == TIDE_ATTR_SHAPE_LIST ? sizeof(tide_shape) : sizeof(int64_t));
    if (!items) {
        perr(ps, "out of memory");
        return SET_FAILED;
    }
    set_result r = SET_OK;
    int k = 0;
    for (; k < v->n && r == SET_OK; k++)
        r = list_item(ps, what, type, &v->items[k], items, k);
    if (r == SET_OK) {
        switch (type) {
        case TIDE_ATTR_INT_LIST: tide_attrs_set_int_list(attrs, name, (const int64_t *)items, v->n); break;
        case TIDE_ATTR_FLOAT_LIST: tide_attrs_set_float_list(attrs, name, (const double *)items, v->n); break;
        case TIDE_ATTR_TYPE_LIST: tide_attrs_set_type_list(attrs, name, (const tide_dtype *)items, v->n); break;
        case TIDE_ATTR_BOOL_LIST: tide_attrs_set_bool_list(attrs, name, (const bool *)items, v->n); break;
        case TIDE_ATTR_SHAPE_LIST: tide_attrs_set_shape_list(attrs, name, (const tide_shape *)items, v->n); break;
        case TIDE_ATTR_STRING_LIST: tide_attrs_set_string_list(attrs, name, (const char *const *)items, v->n); break;
        default: tide_attrs_set_tensor_list(attrs, name, (tide_tensor *const *)items, v->n); break;
        }
    }
    for (int t = 0; type == TIDE_ATTR_TENSOR_LIST && t < k; t++)
        tide_tensor_release(((tide_tensor **)items)[t]);
    free(items);
    return r;
}

/* An attr of kind `type` from v; what names it in messages. */
static set_result set_typed(parser *ps, tide_attrs *attrs, const char *name, const char *what, tide_attr_type type,
                            const gvalue *v)
{
    int64_t i;
    double d;
    bool b;
    tide_dtype dt;
    tide_shape s;
    set_result r;
    switch (type) {
    case TIDE_ATTR_INT:
        if ((r = set_number(ps, what, true, v, &i)) == SET_OK)
            tide_attrs_set_int(attrs, name, i);
        return r;
    case TIDE_ATTR_FLOAT:
        if ((r = set_number(ps, what, false, v, &d)) == SET_OK)
            tide_attrs_set_float(attrs, name, d);
        return r;
    case TIDE_ATTR_BOOL:
        if (!gv_bool(v, &b)) return SET_WRONG_KIND;
        tide_attrs_set_bool(attrs, name, b);
        return SET_OK;
    case TIDE_ATTR_STRING:
        if (v->kind != GV_STRING) return SET_WRONG_KIND;
        tide_attrs_set_string(attrs, name, v->text);
        return SET_OK;
    case TIDE_ATTR_TYPE:
        if (!gv_dtype(v, &dt)) return SET_WRONG_KIND;
        tide_attrs_set_type(attrs, name, dt);
        return SET_OK;
    case TIDE_ATTR_SHAPE:
        if ((r = set_shape_value(ps, what, v, &s)) == SET_OK)
            tide_attrs_set_shape(attrs, name, &s);
        return r;
    case TIDE_ATTR_TENSOR:
        if (v->kind != GV_TENSOR) return SET_WRONG_KIND;
        tide_attrs_set_tensor(attrs, name, v->tensor);
        return SET_OK;
    default: return tide__attr_type_is_list(type) ? set_list(ps, attrs, name, what, type, v) : SET_WRONG_KIND;
    }
}

static tide_status set_attr(parser *ps, tide_attrs *attrs, const tide_op_def *def, const char *name,
                            const gvalue *v)
{
    const tide_attr_def *ad = tide__op_attr_def(def, name);
    if (!ad && name[0] != '_')
        return perr(ps, "op %s has no attr '%s'", def->name, name);
    /* An annotation, which no op defines: its kind follows from how the value is written. */
    tide_attr_type type = ad ? ad->type : annotation_type(v);
    if (type == TIDE_ATTR_NONE)
        return perr(ps, "annotation %s: a value of no attr kind (a bool, number, string, dtype, shape, tensor or "
                    "a list of them)", name);
    char what[160];
    if (ad)
        snprintf(what, sizeof what, "attr %s of %s", name, def->name);
    else
        snprintf(what, sizeof what, "annotation %s", name);
    set_result r = set_typed(ps, attrs, name, what, type, v);
    if (r == SET_FAILED)
        return failure_code(ps->err);
    if (r == SET_WRONG_KIND)
        return perr(ps, "attr %s of %s must be a %s", name, def->name, tide__attr_type_name(type));
    return TIDE_OK;
}

/* ---------------------------------------------------------------- reading: nodes */

typedef struct ref {
    char *name;    /* in the reader's arena */
    int index;
    int group;     /* input group (list) number; -1 for control */
    bool back;     /* a loop's back edge: a Merge's input from a NextIteration of the text not yet added */
} ref;

typedef struct text_node {
    char *name;    /* in the reader's arena, as refs */
    const char *op; /* the op definition's name */
    char *device;
    int line;
    ref *refs;
    int num_refs, refs_cap, num_groups;
    tide_attrs *attrs; /* NULL until the line sets one */
    int state;     /* 0 unvisited, 1 on the stack of nodes being added, 2 added */
    int next_ref;  /* state 1: the first ref not yet known to be added */
} text_node;

static void text_node_clear(text_node *n)
{
    free(n->device);
    tide_attrs_free(n->attrs);
}

static tide_status parse_name(parser *ps, char **out)
{
    const char *start = ps->p;
    while (name_char(*ps->p))
        ps->p++;
    if (ps->p == start)
        return perr(ps, "expected a name");
    *out = tide__arena_strndup(ps->arena, start, (size_t)(ps->p - start));
    return *out ? TIDE_OK : perr(ps, "out of memory");
}

static tide_status add_ref(parser *ps, text_node *n, int group)
{
    ref r = {0};
    r.group = group;
    tide_status st = parse_name(ps, &r.name);
    if (st != TIDE_OK)
        return st;
    if (*ps->p == ':') { /* an output index: digits, at most INT_MAX */
        const char *digits = ++ps->p;
        bool too_large = false;
        for (; isdigit((unsigned char)*ps->p); ps->p++)
            too_large |= __builtin_mul_overflow(r.index, 10, &r.index) ||
                         __builtin_add_overflow(r.index, *ps->p - '0', &r.index);
        if (ps->p == digits || too_large) {
            ps->p = digits;
            int shown = (int)strspn(digits, "0123456789");
            return too_large ? perr(ps, "output index %.*s after '%s:' is too large", shown < 24 ? shown : 24,
                                    digits, r.name)
                             : perr(ps, "bad output index after '%s:' (a number from 0)", r.name);
        }
    }
    if (n->num_refs == n->refs_cap) { /* in the arena too: what doubling leaves behind is at most as large */
        int cap = n->refs_cap ? 2 * n->refs_cap : 2;
        ref *refs = tide__arena_alloc(ps->arena, sizeof *refs * (size_t)cap);
        if (!refs)
            return perr(ps, "out of memory");
        if (n->num_refs)
            memcpy(refs, n->refs, sizeof *refs * (size_t)n->num_refs);
        n->refs = refs;
        n->refs_cap = cap;
    }
    n->refs[n->num_refs++] = r;
    return TIDE_OK;
}

static tide_status parse_arg(parser *ps, text_node *n, const tide_op_def *def)
{
    skip_ws(ps);
    if (*ps->p == '^') {
        ps->p++;
        return add_ref(ps, n, -1);
    }
    if (*ps->p == '[') { /* a list input */
        ps->p++;
        int group = n->num_groups++;
        skip_ws(ps);
        while (*ps->p != ']') {
            tide_status st = add_ref(ps, n, group);
            if (st != TIDE_OK)
                return st;
            skip_ws(ps);
            if (*ps->p == ',') {
                ps->p++;
                skip_ws(ps);
            } else if (*ps->p != ']') {
                return perr(ps, "expected ',' or ']' in an input list");
            }
        }
        ps->p++;
        return TIDE_OK;
    }
    const char *save = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    const char *after = ps->p;
    skip_ws(ps);
    if (*ps->p == '=' && after > save) { /* attr=value */
        char *name = strndup(save, (size_t)(after - save));
        ps->p++;
        gvalue v = {0};
        tide_status st = name ? parse_value(ps, &v, 0) : perr(ps, "out of memory");
        if (st == TIDE_OK && !n->attrs && !(n->attrs = tide_attrs_new()))
            st = perr(ps, "out of memory");
        if (st == TIDE_OK)
            st = set_attr(ps, n->attrs, def, name, &v);
        gv_clear(&v);
        free(name);
        return st;
    }
    ps->p = save;
    return add_ref(ps, n, n->num_groups++);
}

static tide_status parse_line(parser *ps, text_node *n)
{
    tide_status st = parse_name(ps, &n->name);
    if (st != TIDE_OK)
        return st;
    skip_ws(ps);
    if (*ps->p++ != '=')
        return perr(ps, "expected '=' after node name '%s'", n->name);
    skip_ws(ps);
    const char *start = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    char op[128]; /* longer than any op's name: cut, it is unknown */
    size_t op_len = (size_t)(ps->p - start) < sizeof op ? (size_t)(ps->p - start) : sizeof op - 1;
    memcpy(op, start, op_len);
    op[op_len] = 0;
    const tide_op_def *def = tide__registry_find(op);
    if (!def) {
        char hint[128];
        return perr(ps, "unknown op '%s'%s", op, tide__registry_suggest(op, hint, sizeof hint));
    }
    n->op = def->name;
    skip_ws(ps);
    if (*ps->p++ != '(')
        return perr(ps, "expected '(' after %s", n->op);
    skip_ws(ps);
    while (st == TIDE_OK && *ps->p != ')') {
        st = parse_arg(ps, n, def);
        skip_ws(ps);
        if (st == TIDE_OK && *ps->p == ',')
            ps->p++;
        else if (st == TIDE_OK && *ps->p != ')')
            st = perr(ps, "expected ',' or ')' in the arguments of %s", n->name);
    }
    if (st != TIDE_OK)
        return st;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == '@') {
        ps->p++;
        skip_ws(ps);
        gvalue v;
        if (*ps->p != '"' || parse_string(ps, &v) != TIDE_OK)
            return perr(ps, "expected a quoted device after '@'");
        n->device = v.text;
        skip_ws(ps);
    }
    if (*ps->p && *ps->p != '\n' && *ps->p != '#')
        return perr(ps, "unexpected text after the node: '%.20s'", ps->p);
    return TIDE_OK;
}

/* A loop's back edge, closed once every node is in the graph: input `input` of merge, built with a
 * stand-in (the Merge's first other input), becomes the NextIteration the ref names. */
typedef struct back_edge {
    const text_node *merge_text;
    tide_node *merge;
    int input;
    const ref *next;
} back_edge;

typedef struct reader {
    tide_graph *g;
    const char *source;  /* as parser.source */
    text_node *nodes;
    int count, cap;
    int *stack;          /* indices into nodes: the chain of nodes being added, each using the next */
    tide_name_table *by_name;
    back_edge *back;     /* the back edges met so far, closed last (close_loops) */
    int num_back, back_cap;
    tide_error *err;
    tide_arena arena;    /* the texts' names and refs */
} reader;

/* The node rf names, which is in the graph by now (or never was defined). */
static tide_status resolve(reader *r, const text_node *n, const ref *rf, tide_node **out)
{
    *out = tide_graph_node(r->g, rf->name);
    if (!*out)
        return tide_error_set(r->err, TIDE_NOT_FOUND, "%s line %d: node '%s' uses '%s', which is not defined",
                              r->source, n->line, n->name, rf->name);
    return TIDE_OK;
}

/* The stand-in for n's back edges: its first data input that is not one (NULL with an error if none). */
static tide_status back_edge_stand_in(reader *r, const text_node *n, tide_output *out)
{
    for (int i = 0; i < n->num_refs; i++)
        if (n->refs[i].group >= 0 && !n->refs[i].back) {
            out->index = n->refs[i].index;
            return resolve(r, n, &n->refs[i], &out->node);
        }
    return tide_error_set(r->err, TIDE_INVALID_ARGUMENT, "%s line %d: Merge '%s' has only NextIteration inputs: a "
                          "loop's Merge needs an input from outside the loop (an Enter)", r->source, n->line, n->name);
}

static tide_status note_back_edge(reader *r, const text_node *n, int input, const ref *next)
{
    if (r->num_back == r->back_cap) {
        int cap = r->back_cap ? 2 * r->back_cap : 8;
        back_edge *grown = realloc(r->back, sizeof *grown * (size_t)cap);
        if (!grown)
            return tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        r->back = grown;
        r->back_cap = cap;
    }
    r->back[r->num_back++] = (back_edge){n, NULL, input, next};
    return TIDE_OK;
}

/* Builds n, whose inputs are all in the graph but its back edges (which get a stand-in for now). */
static tide_status add_node(reader *r, text_node *n)
{
    tide_node_builder *b = tide_node_builder_new(r->g, n->op, n->name);
    tide_status st = TIDE_OK;
    tide_output few[8], stand_in = {0};
    tide_output *ins = n->num_refs <= 8 ? few : malloc(sizeof *ins * (size_t)n->num_refs);
    if (!ins)
        st = tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    int first_back = r->num_back, flat = 0;
    for (int group = 0; st == TIDE_OK && group < n->num_groups; group++) {
        int k = 0;
        for (int i = 0; st == TIDE_OK && i < n->num_refs; i++)
            if (n->refs[i].group == group && n->refs[i].back) {
                st = stand_in.node ? TIDE_OK : back_edge_stand_in(r, n, &stand_in);
                if (st == TIDE_OK)
                    st = note_back_edge(r, n, flat + k, &n->refs[i]);
                ins[k++] = stand_in;
            } else if (n->refs[i].group == group) {
                st = resolve(r, n, &n->refs[i], &ins[k].node);
                ins[k++].index = n->refs[i].index;
            }
        if (st == TIDE_OK)
            tide_node_builder_add_input_list(b, ins, k);
        flat += k;
    }
    if (ins != few)
        free(ins);
    for (int i = 0; st == TIDE_OK && i < n->num_refs; i++)
        if (n->refs[i].group < 0) {
            tide_node *c;
            st = resolve(r, n, &n->refs[i], &c);
            if (st == TIDE_OK)
                tide_node_builder_add_control_input(b, c);
        }
    if (st != TIDE_OK) {
        tide_node_builder_free(b);
        return st;
    }
    tide_attrs_merge(tide_node_builder_attrs(b), n->attrs);
    if (n->device)
        tide_node_builder_set_device(b, n->device);
    tide_node *built = tide_node_builder_finish(b, r->err);
    if (!built) {
        tide__error_prefix(r->err, "%s line %d", r->source, n->line);
        return failure_code(r->err);
    }
    for (int i = first_back; i < r->num_back; i++)
        r->back[i].merge = built;
    return TIDE_OK;
}

/* Closes the back edges (tide_graph_close_loop), every node being in the graph now. */
static tide_status close_loops(reader *r)
{
    for (int i = 0; i < r->num_back; i++) {
        const back_edge *e = &r->back[i];
        tide_output next = {NULL, e->next->index};
        tide_status st = resolve(r, e->merge_text, e->next, &next.node);
        if (st == TIDE_OK && tide_graph_close_loop(r->g, e->merge, e->input, next, r->err) != TIDE_OK) {
            tide__error_prefix(r->err, "%s line %d", r->source, e->merge_text->line);
            st = failure_code(r->err);
        }
        if (st != TIDE_OK)
            return st;
    }
    return TIDE_OK;
}

/* The cycle closed by dep, which is on the stack at or below depth: "a -> b -> ... -> a", each node
 * using the next (at most CYCLE_SHOWN names of a longer one). */
static tide_status cycle_error(reader *r, int depth, const text_node *dep)
{
    enum { CYCLE_SHOWN = 8 };
    int from = depth - 1;
    while (&r->nodes[r->stack[from]] != dep)
        from--;
    int length = depth - from;
    char path[1024] = "";
    size_t used = 0;
    for (int i = from; i <= depth && used < sizeof path; i++) {
        const char *name = i == depth ? dep->name : r->nodes[r->stack[i]].name;
        if (length > CYCLE_SHOWN && i == from + CYCLE_SHOWN / 2) { /* the middle of a long cycle */
            name = "...";
            i = depth - CYCLE_SHOWN / 2;
        }
        used += (size_t)snprintf(path + used, sizeof path - used, "%s%s", name, i < depth ? " -> " : "");
    }
    return tide_error_set(r->err, TIDE_INVALID_ARGUMENT,
                          "%s line %d: the graph has a cycle of %d node%s: %s (each uses the next)", r->source,
                          dep->line, length, length == 1 ? "" : "s", path);
}

/* Adds nodes[root] after everything of the text it depends on: a depth-first walk over an explicit
 * stack (r->stack, as deep as the text is long), so that no chain of inputs can exhaust the C stack.
 * A node is pushed when first reached (state 1), and built and popped once all its refs are in the
 * graph (state 2); reaching a node that is on the stack closes a cycle. */
static tide_status add_in_order(reader *r, int root)
{
    int depth = 1;
    r->stack[0] = root;
    r->nodes[root].state = 1;
    r->nodes[root].next_ref = 0;
    while (depth) {
        text_node *n = &r->nodes[r->stack[depth - 1]], *dep = NULL;
        for (; n->next_ref < n->num_refs && !dep; n->next_ref++) {
            ref *rf = &n->refs[n->next_ref];
            text_node *d = tide__names_get(r->by_name, rf->name);
            rf->back = d && d->state != 2 && rf->group >= 0 && strcmp(n->op, "Merge") == 0 &&
                       strcmp(d->op, "NextIteration") == 0;
            if (rf->back)
                continue; /* a loop's back edge: the Merge is built first, the edge closed last */
            if (d && d->state == 1)
                return cycle_error(r, depth, d);
            if (d && d->state == 0)
                dep = d;
        }
        if (dep) {
            dep->state = 1;
            dep->next_ref = 0;
            r->stack[depth++] = (int)(dep - r->nodes);
            continue;
        }
        tide_status st = add_node(r, n);
        if (st != TIDE_OK)
            return st;
        n->state = 2;
        depth--;
    }
    return TIDE_OK;
}

static tide_status parse_all(reader *r, const char *text)
{
    parser ps = {.p = text, .end = text + strlen(text), .source = r->source, .line = 1, .err = r->err,
                 .arena = &r->arena};
    while (*ps.p) {
        skip_ws(&ps);
        if (*ps.p == '#' || *ps.p == '\n' || !*ps.p) {
            while (*ps.p && *ps.p != '\n')
                ps.p++;
        } else {
            if (r->count == r->cap) { /* grows geometrically: a 10,000-line text loads in linear time */
                if (r->cap > INT_MAX / 2)
                    return perr(&ps, "more than %d nodes", r->cap);
                int cap = r->cap ? 2 * r->cap : 64;
                text_node *nodes = realloc(r->nodes, sizeof *nodes * (size_t)cap);
                if (!nodes)
                    return tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
                r->nodes = nodes;
                r->cap = cap;
            }
            text_node *n = &r->nodes[r->count++];
            memset(n, 0, sizeof *n);
            n->line = ps.line;
            tide_status st = parse_line(&ps, n);
            if (st != TIDE_OK)
                return st;
            while (*ps.p && *ps.p != '\n')
                ps.p++;
        }
        if (*ps.p == '\n') {
            ps.p++;
            ps.line++;
        }
    }
    return TIDE_OK;
}

/* Names every node of the text in r->by_name; a name defined twice is an error. */
static tide_status index_names(reader *r)
{
    for (int i = 0; i < r->count; i++) {
        if (tide__names_get(r->by_name, r->nodes[i].name))
            return tide_error_set(r->err, TIDE_ALREADY_EXISTS, "%s line %d: node '%s' is defined twice",
                                  r->source, r->nodes[i].line, r->nodes[i].name);
        tide__names_put(r->by_name, r->nodes[i].name, &r->nodes[i]);
    }
    return TIDE_OK;
}

static tide_status extend_with_error(tide_graph *g, const char *text, const char *source, tide_error *err)
{
    if (!text)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph text is NULL");
    reader r = {.g = g, .source = source, .err = err, .by_name = tide__names_new()};
    int mark = g->num_nodes;
    tide_status st = r.by_name ? parse_all(&r, text) : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK && r.count && !(r.stack = malloc(sizeof *r.stack * (size_t)r.count)))
        st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (st == TIDE_OK)
        st = index_names(&r);
    for (int i = 0; st == TIDE_OK && i < r.count; i++)
        if (r.nodes[i].state == 0)
            st = add_in_order(&r, i);
    if (st == TIDE_OK)
        st = close_loops(&r);
    if (st != TIDE_OK)
        tide_graph_rollback(g, mark, NULL); /* new nodes were never planned: this cannot fail */
    for (int i = 0; i < r.count; i++)
        text_node_clear(&r.nodes[i]);
    free(r.nodes);
    free(r.stack);
    free(r.back);
    tide__names_free(r.by_name);
    tide__arena_free(&r.arena);
    return st;
}

/* err may be NULL: the reader reports through an error object of its own then (its steps pass a
 * failure on by the error's code, which must not read as success). */
tide_status tide__graph_extend_text_from(tide_graph *g, const char *text, const char *source, tide_error *err)
{
    tide_error *own = err ? NULL : tide_error_new();
    tide_status st = err || own ? extend_with_error(g, text, source, err ? err : own) : TIDE_RESOURCE_EXHAUSTED;
    tide_error_free(own);
    return st;
}

tide_status tide_graph_extend_text(tide_graph *g, const char *text, tide_error *err)
{
    return tide__graph_extend_text_from(g, text, "graph text", err);
}
