/* shape.c — tensor shapes with unknown dimensions: construction, comparison, broadcasting, text. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

tide_shape tide_shape_make(int rank, const int64_t *dims)
{
    tide_shape s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    for (int i = 0; i < rank && i < TIDE_MAX_RANK; i++)
        s.dims[i] = dims[i];
    return s;
}

tide_shape tide_shape_scalar(void)
{
    return tide_shape_make(0, NULL);
}

tide_shape tide_shape_unknown(void)
{
    tide_shape s = tide_shape_make(0, NULL);
    s.rank = -1;
    return s;
}

tide_shape tide_shape_vector(int64_t n)
{
    return tide_shape_make(1, &n);
}

tide_shape tide_shape_matrix(int64_t rows, int64_t cols)
{
    int64_t d[2] = {rows, cols};
    return tide_shape_make(2, d);
}

bool tide_shape_is_fully_defined(const tide_shape *s)
{
    if (s->rank < 0)
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0)
            return false;
    return true;
}

int64_t tide_shape_num_elements(const tide_shape *s)
{
    if (!tide_shape_is_fully_defined(s))
        return -1;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] == 0)
            return 0;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (n > INT64_MAX / s->dims[i])
            return -1; /* not representable */
        n *= s->dims[i];
    }
    return n;
}

bool tide_shape_equal(const tide_shape *a, const tide_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

bool tide_shape_compatible(const tide_shape *expected, const tide_shape *actual)
{
    if (expected->rank < 0 || actual->rank < 0)
        return true;
    if (expected->rank != actual->rank)
        return false;
    for (int i = 0; i < expected->rank; i++)
        if (expected->dims[i] >= 0 && actual->dims[i] >= 0 && expected->dims[i] != actual->dims[i])
            return false;
    return true;
}

tide_shape tide__shape_relax(const tide_shape *a, const tide_shape *b)
{
    if (a->rank < 0 || b->rank < 0 || a->rank != b->rank)
        return tide_shape_unknown();
    tide_shape s = *a;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            s.dims[i] = -1;
    return s;
}

char *tide_shape_format(const tide_shape *s, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (s->rank < 0) {
        snprintf(buf, size, "<unknown>");
        return buf;
    }
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, "[");
    for (int i = 0; i < s->rank && at < size; i++) {
        if (s->dims[i] < 0)
            at += (size_t)snprintf(buf + at, size - at, "%s?", i ? ", " : "");
        else
            at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "",
                                   (long long)s->dims[i]);
    }
    if (at < size)
        snprintf(buf + at, size - at, "]");
    return buf;
}

bool tide_shape_broadcast(const tide_shape *a, const tide_shape *b, tide_shape *out)
{
    if (a->rank < 0 || b->rank < 0) {
        *out = tide_shape_unknown();
        return true;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    tide_shape s = tide_shape_make(0, NULL);
    s.rank = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        int64_t d;
        if (da == db)
            d = da;
        else if (da == 1)
            d = db;
        else if (db == 1)
            d = da;
        else if (da < 0) /* unknown against a known size: that size, unless it is 1 */
            d = db != 1 ? db : -1;
        else if (db < 0)
            d = da != 1 ? da : -1;
        else
            return false;
        s.dims[i] = d;
    }
    *out = s;
    return true;
}
