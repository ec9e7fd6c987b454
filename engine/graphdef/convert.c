/* convert.c — values between TensorFlow's messages and tide: DataType and tide_dtype, TensorShapeProto
 * and tide_shape, TensorProto and tide_tensor, AttrValue and tide_attrs. Reading follows what
 * TensorFlow's own reader accepts (tensor_content, or the repeated field of the dtype where a short
 * field repeats its last value and an empty one means zeros); where TensorFlow would silently read
 * nothing (values in the field of another dtype) tide says so instead. Writing follows what
 * TensorFlow writes (scalars and strings in the value fields, other tensors in tensor_content). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphdef_internal.h"

/* ---------------------------------------------------------------- the pool of exported messages */

void *graphdef_pool_alloc(graphdef_pool *pool, size_t size)
{
    if (pool->count == pool->cap) {
        size_t cap = pool->cap ? 2 * pool->cap : 256;
        void **blocks = realloc(pool->blocks, cap * sizeof *blocks);
        if (!blocks) {
            pool->oom = true;
            return NULL;
        }
        pool->blocks = blocks;
        pool->cap = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (!p) {
        pool->oom = true;
        return NULL;
    }
    pool->blocks[pool->count++] = p;
    return p;
}

char *graphdef_pool_strdup(graphdef_pool *pool, const char *s)
{
    size_t n = strlen(s);
    char *c = graphdef_pool_alloc(pool, n + 1);
    if (c)
        memcpy(c, s, n);
    return c;
}

void graphdef_pool_free(graphdef_pool *pool)
{
    for (size_t i = 0; i < pool->count; i++)
        free(pool->blocks[i]);
    free(pool->blocks);
    memset(pool, 0, sizeof *pool);
}

/* ---------------------------------------------------------------- dtypes */

static const struct {
    int tf;
    tide_dtype tide;
} dtype_map[] = {
    {TENSORFLOW__DATA_TYPE__DT_FLOAT, TIDE_FLOAT32},       {TENSORFLOW__DATA_TYPE__DT_DOUBLE, TIDE_FLOAT64},
    {TENSORFLOW__DATA_TYPE__DT_INT32, TIDE_INT32},         {TENSORFLOW__DATA_TYPE__DT_UINT8, TIDE_UINT8},
    {TENSORFLOW__DATA_TYPE__DT_INT16, TIDE_INT16},         {TENSORFLOW__DATA_TYPE__DT_INT8, TIDE_INT8},
    {TENSORFLOW__DATA_TYPE__DT_STRING, TIDE_STRING},       {TENSORFLOW__DATA_TYPE__DT_COMPLEX64, TIDE_COMPLEX64},
    {TENSORFLOW__DATA_TYPE__DT_INT64, TIDE_INT64},         {TENSORFLOW__DATA_TYPE__DT_BOOL, TIDE_BOOL},
    {TENSORFLOW__DATA_TYPE__DT_BFLOAT16, TIDE_BFLOAT16},   {TENSORFLOW__DATA_TYPE__DT_UINT16, TIDE_UINT16},
    {TENSORFLOW__DATA_TYPE__DT_COMPLEX128, TIDE_COMPLEX128}, {TENSORFLOW__DATA_TYPE__DT_HALF, TIDE_FLOAT16},
};

tide_dtype graphdef_dtype_to_tide(int tf_type)
{
    if (tf_type > 100)
        tf_type -= 100; /* a reference type reads as its value type */
    for (size_t i = 0; i < sizeof dtype_map / sizeof *dtype_map; i++)
        if (dtype_map[i].tf == tf_type)
            return dtype_map[i].tide;
    return TIDE_INVALID_DTYPE;
}

int graphdef_dtype_from_tide(tide_dtype dt)
{
    for (size_t i = 0; i < sizeof dtype_map / sizeof *dtype_map; i++)
        if (dtype_map[i].tide == dt)
            return dtype_map[i].tf;
    return TENSORFLOW__DATA_TYPE__DT_INVALID;
}

const char *graphdef_dtype_name(int tf_type, char *buf, size_t size)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&tensorflow__data_type__descriptor, tf_type);
    if (v)
        snprintf(buf, size, "%s", v->name);
    else
        snprintf(buf, size, "DataType %d", tf_type);
    return buf;
}

/* "DT_UINT32 (tide has no such dtype)" */
static tide_status bad_dtype(tide_error *err, int tf_type, const char *what)
{
    char name[48];
    return tide_error_set(err, TIDE_UNIMPLEMENTED, "%s has dtype %s, which tide does not have (it has bool, "
                          "int8-64, uint8, uint16, half, bfloat16, float, double, complex64/128, string)",
                          what, graphdef_dtype_name(tf_type, name, sizeof name));
}

/* ---------------------------------------------------------------- shapes */

bool graphdef_shape_to_tide(const Tensorflow__TensorShapeProto *p, tide_shape *out, tide_error *err)
{
    if (!p) {
        *out = tide_shape_scalar();
        return true;
    }
    if (p->unknown_rank) {
        if (p->n_dim) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "a shape has unknown_rank set and %zu dims", p->n_dim);
            return false;
        }
        *out = tide_shape_unknown();
        return true;
    }
    if (p->n_dim > TIDE_MAX_RANK) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "a shape of rank %zu: tide's tensors have rank %d at most", p->n_dim,
                       TIDE_MAX_RANK);
        return false;
    }
    out->rank = (int)p->n_dim;
    for (size_t i = 0; i < p->n_dim; i++) {
        if (p->dim[i]->size < -1) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "a shape has dimension %zu of size %lld (sizes are >= 0, or -1 "
                           "for unknown)", i, (long long)p->dim[i]->size);
            return false;
        }
        out->dims[i] = p->dim[i]->size;
    }
    return true;
}

Tensorflow__TensorShapeProto *graphdef_shape_from_tide(graphdef_pool *pool, const tide_shape *s)
{
    Tensorflow__TensorShapeProto *p = graphdef_pool_alloc(pool, sizeof *p);
    if (!p)
        return NULL;
    tensorflow__tensor_shape_proto__init(p);
    if (s->rank < 0) {
        p->unknown_rank = true;
        return p;
    }
    p->n_dim = (size_t)s->rank;
    p->dim = graphdef_pool_alloc(pool, sizeof *p->dim * (size_t)s->rank);
    for (int i = 0; p->dim && i < s->rank; i++) {
        p->dim[i] = graphdef_pool_alloc(pool, sizeof *p->dim[i]);
        if (!p->dim[i])
            return NULL;
        tensorflow__tensor_shape_proto__dim__init(p->dim[i]);
        p->dim[i]->size = s->dims[i];
    }
    return p->dim || !s->rank ? p : NULL;
}

/* ---------------------------------------------------------------- tensors: reading */

/* The repeated field that holds values of dt, as (count, pointer); *per is 2 for complex pairs. */
static size_t value_field(const Tensorflow__TensorProto *p, tide_dtype dt, const void **vals, const char **field)
{
    switch (dt) {
    case TIDE_FLOAT32: *vals = p->float_val; *field = "float_val"; return p->n_float_val;
    case TIDE_FLOAT64: *vals = p->double_val; *field = "double_val"; return p->n_double_val;
    case TIDE_INT8: case TIDE_INT16: case TIDE_INT32: case TIDE_UINT8: case TIDE_UINT16:
        *vals = p->int_val; *field = "int_val"; return p->n_int_val;
    case TIDE_INT64: *vals = p->int64_val; *field = "int64_val"; return p->n_int64_val;
    case TIDE_BOOL: *vals = p->bool_val; *field = "bool_val"; return p->n_bool_val;
    case TIDE_FLOAT16: case TIDE_BFLOAT16: *vals = p->half_val; *field = "half_val"; return p->n_half_val;
    case TIDE_COMPLEX64: *vals = p->scomplex_val; *field = "scomplex_val"; return p->n_scomplex_val;
    case TIDE_COMPLEX128: *vals = p->dcomplex_val; *field = "dcomplex_val"; return p->n_dcomplex_val;
    case TIDE_STRING: *vals = p->string_val; *field = "string_val"; return p->n_string_val;
    default: *vals = NULL; *field = "?"; return 0;
    }
}

/* A value field other than the dtype's that holds values: TensorFlow would ignore it silently. */
static const char *stray_field(const Tensorflow__TensorProto *p, const char *own)
{
    const struct { const char *name; size_t n; } fields[] = {
        {"float_val", p->n_float_val},       {"double_val", p->n_double_val}, {"int_val", p->n_int_val},
        {"int64_val", p->n_int64_val},       {"bool_val", p->n_bool_val},     {"half_val", p->n_half_val},
        {"scomplex_val", p->n_scomplex_val}, {"dcomplex_val", p->n_dcomplex_val},
        {"string_val", p->n_string_val},     {"uint32_val", p->n_uint32_val}, {"uint64_val", p->n_uint64_val},
        {"resource_handle_val", p->n_resource_handle_val}, {"variant_val", p->n_variant_val},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (fields[i].n && strcmp(fields[i].name, own) != 0)
            return fields[i].name;
    return NULL;
}

/* Element k of the value field, stored into element i of t. False when an int does not fit. */
static bool store_value(tide_tensor *t, int64_t i, const void *vals, size_t k)
{
    char *data = tide_tensor_data(t);
    switch (tide_tensor_dtype(t)) {
    case TIDE_FLOAT32: ((float *)data)[i] = ((const float *)vals)[k]; return true;
    case TIDE_FLOAT64: ((double *)data)[i] = ((const double *)vals)[k]; return true;
    case TIDE_INT64: ((int64_t *)data)[i] = ((const int64_t *)vals)[k]; return true;
    case TIDE_BOOL: ((uint8_t *)data)[i] = ((const protobuf_c_boolean *)vals)[k] != 0; return true;
    case TIDE_COMPLEX64:
        ((float *)data)[2 * i] = ((const float *)vals)[2 * k];
        ((float *)data)[2 * i + 1] = ((const float *)vals)[2 * k + 1];
        return true;
    case TIDE_COMPLEX128:
        ((double *)data)[2 * i] = ((const double *)vals)[2 * k];
        ((double *)data)[2 * i + 1] = ((const double *)vals)[2 * k + 1];
        return true;
    default: break;
    }
    int32_t v = ((const int32_t *)vals)[k];
    switch (tide_tensor_dtype(t)) {
    case TIDE_INT32: ((int32_t *)data)[i] = v; return true;
    case TIDE_INT16: ((int16_t *)data)[i] = (int16_t)v; return v >= INT16_MIN && v <= INT16_MAX;
    case TIDE_INT8: ((int8_t *)data)[i] = (int8_t)v; return v >= INT8_MIN && v <= INT8_MAX;
    case TIDE_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; return v >= 0 && v <= UINT8_MAX;
    case TIDE_UINT16:
    case TIDE_FLOAT16:
    case TIDE_BFLOAT16: ((uint16_t *)data)[i] = (uint16_t)v; return v >= 0 && v <= UINT16_MAX;
    default: return false;
    }
}

/* TensorFlow's encoding of strings in tensor_content: every length as a varint32, then the bytes. */
static bool strings_from_content(tide_tensor *t, const ProtobufCBinaryData *c, tide_error *err)
{
    int64_t n = tide_tensor_num_elements(t);
    const uint8_t *p = c->data, *end = c->data + c->len;
    uint64_t *lens = calloc((size_t)n + 1, sizeof *lens);
    if (!lens) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return false;
    }
    bool ok = true;
    for (int64_t i = 0; ok && i < n; i++) {
        int shift = 0;
        for (;; shift += 7) {
            if (p == end || shift > 28) {
                ok = false;
                break;
            }
            uint8_t b = *p++;
            lens[i] |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
    }
    for (int64_t i = 0; ok && i < n; i++) {
        if (lens[i] > (uint64_t)(end - p)) {
            ok = false;
            break;
        }
        ok = tide_tensor_string_set(t, i, (const char *)p, (size_t)lens[i], err) == TIDE_OK;
        p += lens[i];
    }
    free(lens);
    if (ok && p != end) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a string tensor's tensor_content has %zu bytes after its %lld "
                       "strings", (size_t)(end - p), (long long)n);
        return false;
    }
    if (!ok && tide_error_code(err) == TIDE_OK)
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a string tensor's tensor_content (%zu bytes) does not hold %lld "
                       "strings", c->len, (long long)n);
    return ok;
}

static bool fill_from_content(tide_tensor *t, const ProtobufCBinaryData *c, tide_error *err)
{
    if (tide_tensor_dtype(t) == TIDE_STRING)
        return strings_from_content(t, c, err);
    size_t need = tide_tensor_byte_size(t);
    if (c->len != need) {
        char shape[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tensor_content has %zu bytes; a %s tensor of shape %s takes %zu",
                       c->len, tide_dtype_name(tide_tensor_dtype(t)),
                       tide_shape_format(tide_tensor_shape(t), shape, sizeof shape), need);
        return false;
    }
    if (need)
        memcpy(tide_tensor_data(t), c->data, need);
    return true;
}

static bool fill_from_values(tide_tensor *t, const Tensorflow__TensorProto *p, tide_error *err)
{
    tide_dtype dt = tide_tensor_dtype(t);
    const void *vals;
    const char *field;
    size_t count = value_field(p, dt, &vals, &field);
    const char *stray = stray_field(p, field);
    if (stray) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a %s tensor has values in %s (its values go in %s or "
                       "tensor_content)", tide_dtype_name(dt), stray, field);
        return false;
    }
    bool pairs = tide_dtype_is_complex(dt);
    if (pairs && count % 2) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s holds %zu numbers: complex values come in (real, imaginary) "
                       "pairs", field, count);
        return false;
    }
    if (pairs)
        count /= 2;
    int64_t n = tide_tensor_num_elements(t);
    if (count > (size_t)n) {
        char shape[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s holds %zu values for a tensor of shape %s (%lld elements)",
                       field, count, tide_shape_format(tide_tensor_shape(t), shape, sizeof shape), (long long)n);
        return false;
    }
    if (count == 0)
        return true; /* zeros, or empty strings */
    for (int64_t i = 0; i < n; i++) {
        size_t k = (size_t)i < count ? (size_t)i : count - 1; /* the last value fills the rest */
        if (dt == TIDE_STRING) {
            const ProtobufCBinaryData *s = &((const ProtobufCBinaryData *)vals)[k];
            if (tide_tensor_string_set(t, i, (const char *)s->data, s->len, err) != TIDE_OK)
                return false;
        } else if (!store_value(t, i, vals, k)) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s value %d does not fit a %s", field,
                           ((const int32_t *)vals)[k], tide_dtype_name(dt));
            return false;
        }
    }
    return true;
}

tide_tensor *graphdef_tensor_to_tide(const Tensorflow__TensorProto *p, tide_error *err)
{
    tide_dtype dt = graphdef_dtype_to_tide(p->dtype);
    if (dt == TIDE_INVALID_DTYPE) {
        bad_dtype(err, p->dtype, "a tensor");
        return NULL;
    }
    tide_shape shape;
    if (!graphdef_shape_to_tide(p->tensor_shape, &shape, err))
        return NULL;
    if (!tide_shape_is_fully_defined(&shape) || tide_shape_num_elements(&shape) > ((int64_t)1 << 40)) {
        char s[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a tensor of shape %s: a tensor's shape must be known and "
                       "hold fewer than 2^40 elements", tide_shape_format(&shape, s, sizeof s));
        return NULL;
    }
    if (!p->tensor_content.len && tide_shape_num_elements(&shape) > ((int64_t)1 << 31)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a tensor of %lld elements filled from a value field: too large",
                       (long long)tide_shape_num_elements(&shape));
        return NULL;
    }
    tide_tensor *t = tide_tensor_new(dt, &shape, err);
    if (!t)
        return NULL;
    bool ok = p->tensor_content.len ? fill_from_content(t, &p->tensor_content, err) : fill_from_values(t, p, err);
    if (!ok) {
        tide_tensor_release(t);
        return NULL;
    }
    return t;
}

/* ---------------------------------------------------------------- tensors: writing */

/* The one value of a scalar in the dtype's field, as TensorFlow writes scalars. */
static bool scalar_value(graphdef_pool *pool, Tensorflow__TensorProto *p, const tide_tensor *t)
{
    const void *data = tide_tensor_data(t);
    tide_dtype dt = tide_tensor_dtype(t);
#define ONE(field, type, value)                                       \
    do {                                                              \
        p->field = graphdef_pool_alloc(pool, sizeof(type));           \
        if (!p->field)                                                \
            return false;                                             \
        p->field[0] = (type)(value);                                  \
        p->n_##field = 1;                                             \
    } while (0)
    switch (dt) {
    case TIDE_FLOAT32: ONE(float_val, float, *(const float *)data); break;
    case TIDE_FLOAT64: ONE(double_val, double, *(const double *)data); break;
    case TIDE_INT32: ONE(int_val, int32_t, *(const int32_t *)data); break;
    case TIDE_INT16: ONE(int_val, int32_t, *(const int16_t *)data); break;
    case TIDE_INT8: ONE(int_val, int32_t, *(const int8_t *)data); break;
    case TIDE_UINT8: ONE(int_val, int32_t, *(const uint8_t *)data); break;
    case TIDE_UINT16: ONE(int_val, int32_t, *(const uint16_t *)data); break;
    case TIDE_FLOAT16:
    case TIDE_BFLOAT16: ONE(half_val, int32_t, *(const uint16_t *)data); break;
    case TIDE_INT64: ONE(int64_val, int64_t, *(const int64_t *)data); break;
    case TIDE_BOOL: ONE(bool_val, protobuf_c_boolean, *(const uint8_t *)data != 0); break;
    case TIDE_COMPLEX64:
        p->scomplex_val = graphdef_pool_alloc(pool, 2 * sizeof(float));
        if (!p->scomplex_val)
            return false;
        memcpy(p->scomplex_val, data, 2 * sizeof(float));
        p->n_scomplex_val = 2;
        break;
    case TIDE_COMPLEX128:
        p->dcomplex_val = graphdef_pool_alloc(pool, 2 * sizeof(double));
        if (!p->dcomplex_val)
            return false;
        memcpy(p->dcomplex_val, data, 2 * sizeof(double));
        p->n_dcomplex_val = 2;
        break;
    default: return false;
    }
#undef ONE
    return true;
}

Tensorflow__TensorProto *graphdef_tensor_from_tide(graphdef_pool *pool, const tide_tensor *t)
{
    Tensorflow__TensorProto *p = graphdef_pool_alloc(pool, sizeof *p);
    if (!p)
        return NULL;
    tensorflow__tensor_proto__init(p);
    p->dtype = graphdef_dtype_from_tide(tide_tensor_dtype(t));
    p->tensor_shape = graphdef_shape_from_tide(pool, tide_tensor_shape(t));
    if (!p->tensor_shape)
        return NULL;
    int64_t n = tide_tensor_num_elements(t);
    if (tide_tensor_dtype(t) == TIDE_STRING) {
        p->string_val = graphdef_pool_alloc(pool, sizeof *p->string_val * (size_t)n);
        if (!p->string_val)
            return NULL;
        p->n_string_val = (size_t)n;
        for (int64_t i = 0; i < n; i++) {
            size_t len;
            const char *s = tide_tensor_string_get(t, i, &len);
            p->string_val[i].data = (uint8_t *)s; /* borrowed from t until the GraphDef is packed */
            p->string_val[i].len = len;
        }
    } else if (n == 1) {
        if (!scalar_value(pool, p, t))
            return NULL;
    } else if (n > 1) {
        p->tensor_content.data = tide_tensor_data(t); /* borrowed, as above */
        p->tensor_content.len = tide_tensor_byte_size(t);
    }
    return p;
}

/* ---------------------------------------------------------------- attr values */

double graphdef_float_to_double(float f)
{
    if (!isfinite(f))
        return (double)f;
    char text[48];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)f);
        if (strtof(text, NULL) == f)
            break;
    }
    return strtod(text, NULL);
}

static const char *kind_name(const Tensorflow__AttrValue *v)
{
    switch (v->value_case) {
    case TENSORFLOW__ATTR_VALUE__VALUE_S: return "a string";
    case TENSORFLOW__ATTR_VALUE__VALUE_I: return "an int";
    case TENSORFLOW__ATTR_VALUE__VALUE_F: return "a float";
    case TENSORFLOW__ATTR_VALUE__VALUE_B: return "a bool";
    case TENSORFLOW__ATTR_VALUE__VALUE_TYPE: return "a type";
    case TENSORFLOW__ATTR_VALUE__VALUE_SHAPE: return "a shape";
    case TENSORFLOW__ATTR_VALUE__VALUE_TENSOR: return "a tensor";
    case TENSORFLOW__ATTR_VALUE__VALUE_FUNC: return "a function";
    case TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER: return "a placeholder";
    case TENSORFLOW__ATTR_VALUE__VALUE_LIST: {
        const Tensorflow__AttrValue__ListValue *l = v->list;
        int kinds = !!l->n_s + !!l->n_i + !!l->n_f + !!l->n_b + !!l->n_type + !!l->n_shape + !!l->n_tensor + !!l->n_func;
        if (kinds > 1)
            return "a list of values of several kinds";
        return l->n_s ? "a list(string)" : l->n_i ? "a list(int)" : l->n_f ? "a list(float)"
             : l->n_b ? "a list(bool)" : l->n_type ? "a list(type)" : l->n_shape ? "a list(shape)"
             : l->n_tensor ? "a list(tensor)" : l->n_func ? "a list(func)" : "an empty list";
    }
    default: return "no value";
    }
}

static const char *tide_kind_name(tide_attr_type t)
{
    switch (t) {
    case TIDE_ATTR_INT: return "an int";
    case TIDE_ATTR_FLOAT: return "a float";
    case TIDE_ATTR_BOOL: return "a bool";
    case TIDE_ATTR_STRING: return "a string";
    case TIDE_ATTR_TYPE: return "a type";
    case TIDE_ATTR_SHAPE: return "a shape";
    case TIDE_ATTR_TENSOR: return "a tensor";
    case TIDE_ATTR_INT_LIST: return "a list(int)";
    case TIDE_ATTR_FLOAT_LIST: return "a list(float)";
    case TIDE_ATTR_TYPE_LIST: return "a list(type)";
    case TIDE_ATTR_STRING_LIST: return "a list(string)";
    case TIDE_ATTR_BOOL_LIST: return "a list(bool)";
    case TIDE_ATTR_SHAPE_LIST: return "a list(shape)";
    case TIDE_ATTR_TENSOR_LIST: return "a list(tensor)";
    default: return "an attr";
    }
}

/* The tide attr type a value of the GraphDef reads as when nothing else says (annotations). */
static tide_attr_type natural_type(const Tensorflow__AttrValue *v)
{
    switch (v->value_case) {
    case TENSORFLOW__ATTR_VALUE__VALUE_S: return TIDE_ATTR_STRING;
    case TENSORFLOW__ATTR_VALUE__VALUE_I: return TIDE_ATTR_INT;
    case TENSORFLOW__ATTR_VALUE__VALUE_F: return TIDE_ATTR_FLOAT;
    case TENSORFLOW__ATTR_VALUE__VALUE_B: return TIDE_ATTR_BOOL;
    case TENSORFLOW__ATTR_VALUE__VALUE_TYPE: return TIDE_ATTR_TYPE;
    case TENSORFLOW__ATTR_VALUE__VALUE_SHAPE: return TIDE_ATTR_SHAPE;
    case TENSORFLOW__ATTR_VALUE__VALUE_TENSOR: return TIDE_ATTR_TENSOR;
    case TENSORFLOW__ATTR_VALUE__VALUE_LIST: {
        const Tensorflow__AttrValue__ListValue *l = v->list;
        return l->n_f ? TIDE_ATTR_FLOAT_LIST : l->n_type ? TIDE_ATTR_TYPE_LIST : l->n_s ? TIDE_ATTR_STRING_LIST
             : l->n_b ? TIDE_ATTR_BOOL_LIST : l->n_shape ? TIDE_ATTR_SHAPE_LIST : l->n_tensor ? TIDE_ATTR_TENSOR_LIST
             : l->n_func ? TIDE_ATTR_NONE
             : TIDE_ATTR_INT_LIST; /* list(int), or an empty list of any kind */
    }
    default: return TIDE_ATTR_NONE;
    }
}

/* The number of items of each field of a list, and of those of another field than the list kind's. */
static size_t list_count(const Tensorflow__AttrValue__ListValue *l, tide_attr_type kind, size_t *others)
{
    const struct { tide_attr_type kind; size_t n; } fields[] = {
        {TIDE_ATTR_INT_LIST, l->n_i},       {TIDE_ATTR_FLOAT_LIST, l->n_f},   {TIDE_ATTR_TYPE_LIST, l->n_type},
        {TIDE_ATTR_STRING_LIST, l->n_s},    {TIDE_ATTR_BOOL_LIST, l->n_b},    {TIDE_ATTR_SHAPE_LIST, l->n_shape},
        {TIDE_ATTR_TENSOR_LIST, l->n_tensor}, {TIDE_ATTR_NONE, l->n_func},
    };
    size_t own = 0;
    *others = 0;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        if (fields[i].kind == kind)
            own = fields[i].n;
        else
            *others += fields[i].n;
    }
    return own;
}

typedef enum set_result { SET_OK, SET_WRONG_KIND, SET_FAILED } set_result;

/* "what: " before err's message. */
static void prefix_error(tide_error *err, const char *what)
{
    char *message = strdup(tide_error_message(err) ? tide_error_message(err) : "");
    if (message)
        tide_error_set(err, tide_error_code(err), "%s: %s", what, message);
    free(message);
}


/* Item k of a list of kind `kind` into items[k]; false with err set when it does not convert. */
static bool list_item(const Tensorflow__AttrValue__ListValue *l, tide_attr_type kind, size_t k, void *items,
                      const char *name, tide_error *err)
{
    char what[128];
    snprintf(what, sizeof what, "attr '%s' (element %zu)", name, k);
    switch (kind) {
    case TIDE_ATTR_INT_LIST: ((int64_t *)items)[k] = l->i[k]; return true;
    case TIDE_ATTR_FLOAT_LIST: ((double *)items)[k] = graphdef_float_to_double(l->f[k]); return true;
    case TIDE_ATTR_BOOL_LIST: ((bool *)items)[k] = l->b[k]; return true;
    case TIDE_ATTR_TYPE_LIST:
        if ((((tide_dtype *)items)[k] = graphdef_dtype_to_tide(l->type[k])) != TIDE_INVALID_DTYPE)
            return true;
        bad_dtype(err, l->type[k], what);
        return false;
    case TIDE_ATTR_STRING_LIST:
        if (l->s[k].len && memchr(l->s[k].data, 0, l->s[k].len)) {
            tide_error_set(err, TIDE_UNIMPLEMENTED, "%s is a string holding a NUL byte, which tide's string attrs "
                           "cannot hold", what);
            return false;
        }
        ((char **)items)[k] = strndup(l->s[k].len ? (const char *)l->s[k].data : "", l->s[k].len);
        if (!((char **)items)[k])
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return ((char **)items)[k] != NULL;
    case TIDE_ATTR_SHAPE_LIST:
        if (graphdef_shape_to_tide(l->shape[k], &((tide_shape *)items)[k], err))
            return true;
        prefix_error(err, what);
        return false;
    case TIDE_ATTR_TENSOR_LIST:
        if ((((tide_tensor **)items)[k] = graphdef_tensor_to_tide(l->tensor[k], err)))
            return true;
        prefix_error(err, what);
        return false;
    default: return false;
    }
}

static set_result set_list(const Tensorflow__AttrValue *v, tide_attr_type want, const char *name,
                           tide_attrs *attrs, tide_error *err)
{
    size_t others, n = list_count(v->list, want, &others);
    if (others)
        return SET_WRONG_KIND;
    if (n > 1u << 20) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s' is a list of %zu values: too long", name, n);
        return SET_FAILED;
    }
    void *items = calloc(n + 1, want == TIDE_ATTR_SHAPE_LIST ? sizeof(tide_shape) : sizeof(int64_t));
    if (!items) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return SET_FAILED;
    }
    size_t done = 0;
    while (done < n && list_item(v->list, want, done, items, name, err))
        done++;
    if (done == n) {
        switch (want) {
        case TIDE_ATTR_INT_LIST: tide_attrs_set_int_list(attrs, name, items, (int)n); break;
        case TIDE_ATTR_FLOAT_LIST: tide_attrs_set_float_list(attrs, name, items, (int)n); break;
        case TIDE_ATTR_TYPE_LIST: tide_attrs_set_type_list(attrs, name, items, (int)n); break;
        case TIDE_ATTR_BOOL_LIST: tide_attrs_set_bool_list(attrs, name, items, (int)n); break;
        case TIDE_ATTR_STRING_LIST: tide_attrs_set_string_list(attrs, name, items, (int)n); break;
        case TIDE_ATTR_SHAPE_LIST: tide_attrs_set_shape_list(attrs, name, items, (int)n); break;
        default: tide_attrs_set_tensor_list(attrs, name, items, (int)n); break;
        }
    }
    for (size_t k = 0; k < done && want == TIDE_ATTR_STRING_LIST; k++)
        free(((char **)items)[k]);
    for (size_t k = 0; k < done && want == TIDE_ATTR_TENSOR_LIST; k++)
        tide_tensor_release(((tide_tensor **)items)[k]);
    free(items);
    return done == n ? SET_OK : SET_FAILED;
}

static set_result set_string(const Tensorflow__AttrValue *v, const char *name, tide_attrs *attrs, tide_error *err)
{
    if (v->s.len && memchr(v->s.data, 0, v->s.len)) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "attr '%s' is a string holding a NUL byte, which tide's string "
                       "attrs cannot hold", name);
        return SET_FAILED;
    }
    char *s = malloc(v->s.len + 1);
    if (!s) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return SET_FAILED;
    }
    if (v->s.len)
        memcpy(s, v->s.data, v->s.len);
    s[v->s.len] = 0;
    tide_attrs_set_string(attrs, name, s);
    free(s);
    return SET_OK;
}

/* Sets the value when it is of the kind `want`: SET_WRONG_KIND (err untouched) when it is of another
 * kind, SET_FAILED with err set when a value of the right kind does not convert. */
static set_result set_value(const Tensorflow__AttrValue *v, tide_attr_type want, const char *name,
                            tide_attrs *attrs, tide_error *err)
{
    static const int case_of[] = {
        [TIDE_ATTR_INT] = TENSORFLOW__ATTR_VALUE__VALUE_I,       [TIDE_ATTR_FLOAT] = TENSORFLOW__ATTR_VALUE__VALUE_F,
        [TIDE_ATTR_BOOL] = TENSORFLOW__ATTR_VALUE__VALUE_B,      [TIDE_ATTR_STRING] = TENSORFLOW__ATTR_VALUE__VALUE_S,
        [TIDE_ATTR_TYPE] = TENSORFLOW__ATTR_VALUE__VALUE_TYPE,   [TIDE_ATTR_SHAPE] = TENSORFLOW__ATTR_VALUE__VALUE_SHAPE,
        [TIDE_ATTR_TENSOR] = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR, [TIDE_ATTR_INT_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST,
        [TIDE_ATTR_FLOAT_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST, [TIDE_ATTR_TYPE_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST,
        [TIDE_ATTR_STRING_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST, [TIDE_ATTR_BOOL_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST,
        [TIDE_ATTR_SHAPE_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST, [TIDE_ATTR_TENSOR_LIST] = TENSORFLOW__ATTR_VALUE__VALUE_LIST,
    };
    if ((size_t)want >= sizeof case_of / sizeof *case_of || !case_of[want] || (int)v->value_case != case_of[want])
        return SET_WRONG_KIND;
    char what[128];
    snprintf(what, sizeof what, "attr '%s'", name);
    switch (want) {
    case TIDE_ATTR_INT: tide_attrs_set_int(attrs, name, v->i); return SET_OK;
    case TIDE_ATTR_FLOAT: tide_attrs_set_float(attrs, name, graphdef_float_to_double(v->f)); return SET_OK;
    case TIDE_ATTR_BOOL: tide_attrs_set_bool(attrs, name, v->b); return SET_OK;
    case TIDE_ATTR_STRING: return set_string(v, name, attrs, err);
    case TIDE_ATTR_TYPE: {
        tide_dtype dt = graphdef_dtype_to_tide(v->type);
        if (dt == TIDE_INVALID_DTYPE) {
            bad_dtype(err, v->type, what);
            return SET_FAILED;
        }
        tide_attrs_set_type(attrs, name, dt);
        return SET_OK;
    }
    case TIDE_ATTR_SHAPE: {
        tide_shape s;
        if (!graphdef_shape_to_tide(v->shape, &s, err)) {
            prefix_error(err, what);
            return SET_FAILED;
        }
        tide_attrs_set_shape(attrs, name, &s);
        return SET_OK;
    }
    case TIDE_ATTR_TENSOR: {
        tide_tensor *t = graphdef_tensor_to_tide(v->tensor, err);
        if (!t) {
            prefix_error(err, what);
            return SET_FAILED;
        }
        tide_attrs_set_tensor(attrs, name, t);
        tide_tensor_release(t);
        return SET_OK;
    }
    default: return set_list(v, want, name, attrs, err);
    }
}

bool graphdef_attr_to_tide(const Tensorflow__AttrValue *v, tide_attr_type want, const char *name,
                           tide_attrs *attrs, tide_error *err)
{
    if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC ||
        (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && v->list->n_func)) {
        const char *fn = v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC ? v->func->name : v->list->func[0]->name;
        tide_error_set(err, TIDE_UNIMPLEMENTED, "attr '%s' is a function ('%s'): tide does not support functions",
                       name, fn);
        return false;
    }
    if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s' is the placeholder '%s', which only a function body "
                       "may hold", name, v->placeholder);
        return false;
    }
    if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s' has no value", name);
        return false;
    }
    tide_attr_type type = want != TIDE_ATTR_NONE ? want : natural_type(v);
    if (type == TIDE_ATTR_NONE) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "attr '%s' is %s, a kind of attr tide does not have", name,
                       kind_name(v));
        return false;
    }
    set_result r = set_value(v, type, name, attrs, err);
    if (r == SET_WRONG_KIND)
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s' must be %s, the GraphDef has %s", name,
                       tide_kind_name(type), kind_name(v));
    return r == SET_OK;
}

static Tensorflow__AttrValue__ListValue *new_list(graphdef_pool *pool)
{
    Tensorflow__AttrValue__ListValue *l = graphdef_pool_alloc(pool, sizeof *l);
    if (l)
        tensorflow__attr_value__list_value__init(l);
    return l;
}

static bool list_from_tide(graphdef_pool *pool, Tensorflow__AttrValue *v, const tide_attrs *attrs,
                           const char *name, tide_attr_type type)
{
    Tensorflow__AttrValue__ListValue *l = new_list(pool);
    if (!l)
        return false;
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    v->list = l;
    int n = 0;
    const void *items = NULL;
    switch (type) {
    case TIDE_ATTR_INT_LIST: tide_attrs_get_int_list(attrs, name, (const int64_t **)&items, &n); break;
    case TIDE_ATTR_FLOAT_LIST: tide_attrs_get_float_list(attrs, name, (const double **)&items, &n); break;
    case TIDE_ATTR_TYPE_LIST: tide_attrs_get_type_list(attrs, name, (const tide_dtype **)&items, &n); break;
    case TIDE_ATTR_STRING_LIST: tide_attrs_get_string_list(attrs, name, (const char *const **)&items, &n); break;
    case TIDE_ATTR_BOOL_LIST: tide_attrs_get_bool_list(attrs, name, (const bool **)&items, &n); break;
    case TIDE_ATTR_SHAPE_LIST: tide_attrs_get_shape_list(attrs, name, (const tide_shape **)&items, &n); break;
    case TIDE_ATTR_TENSOR_LIST: tide_attrs_get_tensor_list(attrs, name, (tide_tensor *const **)&items, &n); break;
    default: return false;
    }
    size_t count = (size_t)n;
    for (size_t k = 0; k < count; k++) {
        switch (type) {
        case TIDE_ATTR_INT_LIST:
            if (!k && !(l->i = graphdef_pool_alloc(pool, sizeof *l->i * count))) return false;
            l->i[k] = ((const int64_t *)items)[k];
            l->n_i = count;
            break;
        case TIDE_ATTR_FLOAT_LIST:
            if (!k && !(l->f = graphdef_pool_alloc(pool, sizeof *l->f * count))) return false;
            l->f[k] = (float)((const double *)items)[k];
            l->n_f = count;
            break;
        case TIDE_ATTR_TYPE_LIST:
            if (!k && !(l->type = graphdef_pool_alloc(pool, sizeof *l->type * count))) return false;
            l->type[k] = (Tensorflow__DataType)graphdef_dtype_from_tide(((const tide_dtype *)items)[k]);
            l->n_type = count;
            break;
        case TIDE_ATTR_BOOL_LIST:
            if (!k && !(l->b = graphdef_pool_alloc(pool, sizeof *l->b * count))) return false;
            l->b[k] = ((const bool *)items)[k];
            l->n_b = count;
            break;
        case TIDE_ATTR_STRING_LIST: {
            if (!k && !(l->s = graphdef_pool_alloc(pool, sizeof *l->s * count))) return false;
            const char *item = ((const char *const *)items)[k];
            l->s[k].data = (uint8_t *)item; /* borrowed from attrs until the GraphDef is packed */
            l->s[k].len = strlen(item);
            l->n_s = count;
            break;
        }
        case TIDE_ATTR_SHAPE_LIST:
            if (!k && !(l->shape = graphdef_pool_alloc(pool, sizeof *l->shape * count))) return false;
            if (!(l->shape[k] = graphdef_shape_from_tide(pool, &((const tide_shape *)items)[k]))) return false;
            l->n_shape = count;
            break;
        default:
            if (!k && !(l->tensor = graphdef_pool_alloc(pool, sizeof *l->tensor * count))) return false;
            if (!(l->tensor[k] = graphdef_tensor_from_tide(pool, ((tide_tensor *const *)items)[k]))) return false;
            l->n_tensor = count;
            break;
        }
    }
    return true;
}

Tensorflow__AttrValue *graphdef_attr_from_tide(graphdef_pool *pool, const tide_attrs *attrs, const char *name)
{
    tide_attr_type type = tide_attrs_type(attrs, name);
    if (type == TIDE_ATTR_NONE)
        return NULL;
    Tensorflow__AttrValue *v = graphdef_pool_alloc(pool, sizeof *v);
    if (!v)
        return NULL;
    tensorflow__attr_value__init(v);
    bool ok = true;
    switch (type) {
    case TIDE_ATTR_INT:
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
        tide_attrs_get_int(attrs, name, &v->i);
        break;
    case TIDE_ATTR_FLOAT: {
        double d = 0;
        tide_attrs_get_float(attrs, name, &d);
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_F;
        v->f = (float)d;
        break;
    }
    case TIDE_ATTR_BOOL: {
        bool b = false;
        tide_attrs_get_bool(attrs, name, &b);
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_B;
        v->b = b;
        break;
    }
    case TIDE_ATTR_STRING: {
        const char *s = "";
        tide_attrs_get_string(attrs, name, &s);
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
        v->s.data = (uint8_t *)s; /* borrowed from attrs until the GraphDef is packed */
        v->s.len = strlen(s);
        break;
    }
    case TIDE_ATTR_TYPE: {
        tide_dtype dt = TIDE_INVALID_DTYPE;
        tide_attrs_get_type(attrs, name, &dt);
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
        v->type = (Tensorflow__DataType)graphdef_dtype_from_tide(dt);
        break;
    }
    case TIDE_ATTR_SHAPE: {
        tide_shape s = tide_shape_unknown();
        tide_attrs_get_shape(attrs, name, &s);
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_SHAPE;
        ok = (v->shape = graphdef_shape_from_tide(pool, &s)) != NULL;
        break;
    }
    case TIDE_ATTR_TENSOR: {
        tide_tensor *t = NULL;
        tide_attrs_get_tensor(attrs, name, &t);
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
        ok = t && (v->tensor = graphdef_tensor_from_tide(pool, t)) != NULL;
        break;
    }
    default: ok = list_from_tide(pool, v, attrs, name, type); break;
    }
    return ok ? v : NULL;
}
