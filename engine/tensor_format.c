/* tensor_format.c — NumPy-style text of a tensor: nested brackets, aligned columns, elision of long
 * dimensions ("...") for large tensors. Used by the REPL, the demo and error messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct sbuf {
    char *s;
    size_t len, cap;
    bool failed;
} sbuf;

static void put(sbuf *b, const char *text, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void puts_(sbuf *b, const char *text)
{
    put(b, text, strlen(text));
}

static void format_elem(const tide_tensor *t, int64_t i, bool float_fixed, char *out, size_t size)
{
    const void *p = (const char *)tide_tensor_data(t) + (size_t)i * tide_dtype_size(t->dtype);
    switch (t->dtype) {
    case TIDE_BOOL: snprintf(out, size, "%s", *(const uint8_t *)p ? "true" : "false"); return;
    case TIDE_STRING: {
        size_t len;
        const char *s = tide_tensor_string_get(t, i, &len);
        snprintf(out, size, "\"%.*s\"", (int)(len > 40 ? 40 : len), s);
        return;
    }
    case TIDE_COMPLEX64:
        snprintf(out, size, "%g%+gj", ((const float *)p)[0], ((const float *)p)[1]);
        return;
    case TIDE_COMPLEX128:
        snprintf(out, size, "%g%+gj", ((const double *)p)[0], ((const double *)p)[1]);
        return;
    default: break;
    }
    double v = tide_tensor_get_f64(t, i);
    if (tide_dtype_is_float(t->dtype)) {
        if (isnan(v))
            snprintf(out, size, "nan");
        else if (isinf(v))
            snprintf(out, size, "%sinf", v < 0 ? "-" : "");
        else if (float_fixed)
            snprintf(out, size, "%.4f", v);
        else
            snprintf(out, size, "%.4e", v);
    } else {
        snprintf(out, size, "%.0f", v);
    }
}

typedef struct fmt_state {
    const tide_tensor *t;
    bool elide, float_fixed;
    int edge, width;
    int64_t strides[TIDE_MAX_RANK];
} fmt_state;

static void format_dim(sbuf *b, const fmt_state *st, int dim, int64_t base, int indent)
{
    const tide_tensor *t = st->t;
    int64_t n = t->shape.dims[dim];
    puts_(b, "[");
    for (int64_t k = 0; k < n; k++) {
        if (st->elide && n > 2 * st->edge && k == st->edge) {
            puts_(b, dim == t->shape.rank - 1 ? "..., " : "...,\n");
            if (dim != t->shape.rank - 1)
                for (int s = 0; s < indent + 1; s++)
                    puts_(b, " ");
            k = n - st->edge - 1;
            continue;
        }
        int64_t at = base + k * st->strides[dim];
        if (dim == t->shape.rank - 1) {
            char e[96];
            format_elem(t, at, st->float_fixed, e, sizeof e);
            char padded[128];
            snprintf(padded, sizeof padded, "%*s", st->width, e);
            puts_(b, padded);
            if (k + 1 < n)
                puts_(b, ", ");
        } else {
            format_dim(b, st, dim + 1, at, indent + 1);
            if (k + 1 < n) {
                puts_(b, ",");
                for (int r = dim; r < t->shape.rank - 1; r++)
                    puts_(b, "\n");
                for (int s = 0; s < indent + 1; s++)
                    puts_(b, " ");
            }
        }
    }
    puts_(b, "]");
}

char *tide_tensor_format(const tide_tensor *t, int64_t threshold, int edge)
{
    if (!tide_tensor_data(t)) /* device memory the host cannot read */
        return NULL;
    sbuf b = {0};
    fmt_state st = {.t = t, .edge = edge > 0 ? edge : 3};
    st.elide = threshold > 0 && t->num_elements > threshold;
    /* Fixed-point when every finite value is of moderate size, as NumPy does. */
    double maxabs = 0, minabs = INFINITY;
    for (int64_t i = 0; i < t->num_elements; i++) {
        double v = fabs(tide_tensor_get_f64(t, i));
        if (isfinite(v)) {
            if (v > maxabs)
                maxabs = v;
            if (v > 0 && v < minabs)
                minabs = v;
        }
    }
    st.float_fixed = maxabs < 1e8 && (minabs >= 1e-4 || minabs == INFINITY);
    for (int64_t i = 0; i < t->num_elements && t->dtype != TIDE_STRING; i++) { /* strings: no padding */
        char e[96];
        format_elem(t, i, st.float_fixed, e, sizeof e);
        int w = (int)strlen(e);
        if (w > st.width)
            st.width = w;
        if (st.elide && i > 4096)
            break; /* a sample is enough to size the columns */
    }
    if (t->num_elements == 0 && t->shape.rank > 0) {
        /* Nothing to print, however long the other dimensions are (a [1e12, 0] tensor is empty). */
        char shape[TIDE_SHAPE_STR_MAX];
        puts_(&b, "[]");
        if (t->shape.rank > 1) {
            puts_(&b, " (shape ");
            puts_(&b, tide_shape_format(&t->shape, shape, sizeof shape));
            puts_(&b, ")");
        }
    } else if (t->shape.rank == 0) {
        char e[96];
        format_elem(t, 0, st.float_fixed, e, sizeof e);
        puts_(&b, e);
    } else {
        int64_t stride = 1;
        for (int d = t->shape.rank - 1; d >= 0; d--) {
            st.strides[d] = stride;
            stride *= t->shape.dims[d];
        }
        format_dim(&b, &st, 0, 0, 0);
    }
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s ? b.s : strdup("");
}
