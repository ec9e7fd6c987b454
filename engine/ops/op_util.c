/* op_util.c — helpers shared by the op families' shape functions and their kernels: reading index
 * tensors and formatting index values (see op_util.h). */
#include <stdio.h>

#include "op_util.h"

int64_t tide_op_int_at(const tide_tensor *t, int64_t i)
{
    const void *d = tide_tensor_data(t);
    switch (tide_tensor_dtype(t)) {
    case TIDE_INT32: return ((const int32_t *)d)[i];
    case TIDE_INT64: return ((const int64_t *)d)[i];
    case TIDE_UINT8: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

int64_t tide_op_index_values(const tide_tensor *v, int64_t *out, int64_t cap)
{
    int64_t n = tide_tensor_num_elements(v);
    for (int64_t i = 0; i < n && i < cap; i++)
        out[i] = tide_op_int_at(v, i);
    return n;
}

char *tide_op_format_values(const int64_t *v, int64_t n, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "[");
    for (int64_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
    return buf;
}
