/* attrs.c — named, typed attribute values of ops (ints, floats, strings, dtypes, shapes, tensors,
 * lists), with deep copies so that a node's attrs are its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

tide_attrs *tide_attrs_new(void)
{
    return calloc(1, sizeof(tide_attrs));
}

void tide__attr_value_clear(tide_attr_value *v)
{
    switch (v->type) {
    case TIDE_ATTR_STRING: free(v->u.s); break;
    case TIDE_ATTR_TENSOR: tide_tensor_release(v->u.tensor); break;
    case TIDE_ATTR_STRING_LIST:
        for (int i = 0; v->u.list.items && i < v->u.list.n; i++)
            free(((char **)v->u.list.items)[i]);
        free(v->u.list.items);
        break;
    case TIDE_ATTR_TENSOR_LIST:
        for (int i = 0; v->u.list.items && i < v->u.list.n; i++)
            tide_tensor_release(((tide_tensor **)v->u.list.items)[i]);
        free(v->u.list.items);
        break;
    default:
        if (tide__attr_type_is_list(v->type))
            free(v->u.list.items);
        break;
    }
    memset(v, 0, sizeof *v);
}

bool tide__attr_type_is_list(tide_attr_type t)
{
    return (t >= TIDE_ATTR_INT_LIST && t <= TIDE_ATTR_TYPE_LIST) ||
           (t >= TIDE_ATTR_STRING_LIST && t <= TIDE_ATTR_TENSOR_LIST);
}

static size_t list_item_size(tide_attr_type t)
{
    switch (t) {
    case TIDE_ATTR_INT_LIST: return sizeof(int64_t);
    case TIDE_ATTR_FLOAT_LIST: return sizeof(double);
    case TIDE_ATTR_STRING_LIST: return sizeof(char *);
    case TIDE_ATTR_BOOL_LIST: return sizeof(bool);
    case TIDE_ATTR_SHAPE_LIST: return sizeof(tide_shape);
    case TIDE_ATTR_TENSOR_LIST: return sizeof(tide_tensor *);
    default: return sizeof(tide_dtype);
    }
}

void tide__attr_value_copy(tide_attr_value *dst, const tide_attr_value *src)
{
    *dst = *src;
    switch (src->type) {
    case TIDE_ATTR_STRING: dst->u.s = tide__strdup(src->u.s); break;
    case TIDE_ATTR_TENSOR: tide_tensor_retain(src->u.tensor); break;
    default: {
        if (!tide__attr_type_is_list(src->type))
            break;
        size_t bytes = list_item_size(src->type) * (size_t)src->u.list.n;
        dst->u.list.items = malloc(bytes ? bytes : 1);
        if (!dst->u.list.items) {
            dst->u.list.n = 0; /* out of memory: an empty list rather than a shared one */
            break;
        }
        if (bytes)
            memcpy(dst->u.list.items, src->u.list.items, bytes);
        for (int i = 0; src->type == TIDE_ATTR_STRING_LIST && i < src->u.list.n; i++) {
            const char *item = ((char *const *)src->u.list.items)[i];
            ((char **)dst->u.list.items)[i] = tide__strdup(item ? item : "");
        }
        for (int i = 0; src->type == TIDE_ATTR_TENSOR_LIST && i < src->u.list.n; i++)
            tide_tensor_retain(((tide_tensor *const *)src->u.list.items)[i]);
        break;
    }
    }
}

void tide_attrs_free(tide_attrs *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->count; i++) {
        free(a->items[i].name);
        tide__attr_value_clear(&a->items[i].value);
    }
    free(a->items);
    free(a);
}

tide_attrs *tide_attrs_clone(const tide_attrs *a)
{
    tide_attrs *c = tide_attrs_new();
    if (!c || !a)
        return c;
    for (int i = 0; i < a->count; i++)
        tide__attrs_set_value(c, a->items[i].name, &a->items[i].value);
    return c;
}

void tide_attrs_merge(tide_attrs *dst, const tide_attrs *src)
{
    for (int i = 0; src && i < src->count; i++)
        tide__attrs_set_value(dst, src->items[i].name, &src->items[i].value);
}

const tide_attr_value *tide__attrs_find(const tide_attrs *a, const char *name)
{
    if (!a)
        return NULL;
    for (int i = 0; i < a->count; i++)
        if (strcmp(a->items[i].name, name) == 0)
            return &a->items[i].value;
    return NULL;
}

void tide__attrs_set_value(tide_attrs *a, const char *name, const tide_attr_value *v)
{
    if (!a || !name)
        return;
    for (int i = 0; i < a->count; i++)
        if (strcmp(a->items[i].name, name) == 0) {
            tide_attr_value copy;
            tide__attr_value_copy(&copy, v);
            tide__attr_value_clear(&a->items[i].value);
            a->items[i].value = copy;
            return;
        }
    if (a->count == a->cap) {
        int cap = a->cap ? a->cap * 2 : 4;
        tide_attr_entry *items = realloc(a->items, (size_t)cap * sizeof *items);
        if (!items)
            return;
        a->items = items;
        a->cap = cap;
    }
    tide_attr_entry *e = &a->items[a->count++];
    e->name = tide__strdup(name);
    tide__attr_value_copy(&e->value, v);
}

#define SETTER(fn, ctype, tag, field)                                        \
    void fn(tide_attrs *a, const char *name, ctype v)                        \
    {                                                                        \
        tide_attr_value val = {.type = tag};                                 \
        val.u.field = v;                                                     \
        tide__attrs_set_value(a, name, &val);                                \
    }
SETTER(tide_attrs_set_int, int64_t, TIDE_ATTR_INT, i)
SETTER(tide_attrs_set_float, double, TIDE_ATTR_FLOAT, f)
SETTER(tide_attrs_set_bool, bool, TIDE_ATTR_BOOL, b)
SETTER(tide_attrs_set_type, tide_dtype, TIDE_ATTR_TYPE, t)
#undef SETTER

void tide_attrs_set_string(tide_attrs *a, const char *name, const char *v)
{
    tide_attr_value val = {.type = TIDE_ATTR_STRING};
    val.u.s = (char *)(v ? v : "");
    tide__attrs_set_value(a, name, &val);
}

void tide_attrs_set_shape(tide_attrs *a, const char *name, const tide_shape *v)
{
    tide_attr_value val = {.type = TIDE_ATTR_SHAPE};
    val.u.shape = *v;
    tide__attrs_set_value(a, name, &val);
}

void tide_attrs_set_tensor(tide_attrs *a, const char *name, tide_tensor *v)
{
    if (!v)
        return;
    tide_attr_value val = {.type = TIDE_ATTR_TENSOR};
    val.u.tensor = v;
    tide__attrs_set_value(a, name, &val);
}

static void set_list(tide_attrs *a, const char *name, tide_attr_type t, const void *v, int n)
{
    tide_attr_value val = {.type = t};
    val.u.list.items = (void *)v;
    val.u.list.n = n < 0 ? 0 : n;
    tide__attrs_set_value(a, name, &val);
}

void tide_attrs_set_int_list(tide_attrs *a, const char *name, const int64_t *v, int n)
{
    set_list(a, name, TIDE_ATTR_INT_LIST, v, n);
}

void tide_attrs_set_float_list(tide_attrs *a, const char *name, const double *v, int n)
{
    set_list(a, name, TIDE_ATTR_FLOAT_LIST, v, n);
}

void tide_attrs_set_type_list(tide_attrs *a, const char *name, const tide_dtype *v, int n)
{
    set_list(a, name, TIDE_ATTR_TYPE_LIST, v, n);
}

void tide_attrs_set_string_list(tide_attrs *a, const char *name, const char *const *v, int n)
{
    set_list(a, name, TIDE_ATTR_STRING_LIST, v, n); /* the copy duplicates every string */
}

void tide_attrs_set_bool_list(tide_attrs *a, const char *name, const bool *v, int n)
{
    set_list(a, name, TIDE_ATTR_BOOL_LIST, v, n);
}

void tide_attrs_set_shape_list(tide_attrs *a, const char *name, const tide_shape *v, int n)
{
    set_list(a, name, TIDE_ATTR_SHAPE_LIST, v, n);
}

void tide_attrs_set_tensor_list(tide_attrs *a, const char *name, tide_tensor *const *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!v[i])
            return; /* as tide_attrs_set_tensor: no NULL tensors */
    set_list(a, name, TIDE_ATTR_TENSOR_LIST, v, n); /* the copy retains every tensor */
}

int tide_attrs_count(const tide_attrs *a)
{
    return a ? a->count : 0;
}

const char *tide_attrs_name_at(const tide_attrs *a, int i)
{
    return a && i >= 0 && i < a->count ? a->items[i].name : NULL;
}

tide_attr_type tide_attrs_type(const tide_attrs *a, const char *name)
{
    const tide_attr_value *v = tide__attrs_find(a, name);
    return v ? v->type : TIDE_ATTR_NONE;
}

#define GETTER(fn, ctype, tag, field)                                        \
    bool fn(const tide_attrs *a, const char *name, ctype *v)                 \
    {                                                                        \
        const tide_attr_value *val = tide__attrs_find(a, name);              \
        if (!val || val->type != tag)                                        \
            return false;                                                    \
        *v = val->u.field;                                                   \
        return true;                                                         \
    }
GETTER(tide_attrs_get_int, int64_t, TIDE_ATTR_INT, i)
GETTER(tide_attrs_get_bool, bool, TIDE_ATTR_BOOL, b)
GETTER(tide_attrs_get_type, tide_dtype, TIDE_ATTR_TYPE, t)
GETTER(tide_attrs_get_shape, tide_shape, TIDE_ATTR_SHAPE, shape)
GETTER(tide_attrs_get_tensor, tide_tensor *, TIDE_ATTR_TENSOR, tensor)
#undef GETTER

bool tide_attrs_get_float(const tide_attrs *a, const char *name, double *v)
{
    const tide_attr_value *val = tide__attrs_find(a, name);
    if (!val)
        return false;
    if (val->type == TIDE_ATTR_FLOAT)
        *v = val->u.f;
    else if (val->type == TIDE_ATTR_INT) /* an integer literal where a float is wanted */
        *v = (double)val->u.i;
    else
        return false;
    return true;
}

bool tide_attrs_get_string(const tide_attrs *a, const char *name, const char **v)
{
    const tide_attr_value *val = tide__attrs_find(a, name);
    if (!val || val->type != TIDE_ATTR_STRING)
        return false;
    *v = val->u.s;
    return true;
}

#define LIST_GETTER(fn, ctype, tag)                                              \
    bool fn(const tide_attrs *a, const char *name, const ctype **v, int *n)      \
    {                                                                            \
        const tide_attr_value *val = tide__attrs_find(a, name);                  \
        if (!val || val->type != tag)                                            \
            return false;                                                        \
        *v = (const ctype *)val->u.list.items;                                   \
        *n = val->u.list.n;                                                      \
        return true;                                                             \
    }
LIST_GETTER(tide_attrs_get_int_list, int64_t, TIDE_ATTR_INT_LIST)
LIST_GETTER(tide_attrs_get_float_list, double, TIDE_ATTR_FLOAT_LIST)
LIST_GETTER(tide_attrs_get_type_list, tide_dtype, TIDE_ATTR_TYPE_LIST)
LIST_GETTER(tide_attrs_get_string_list, char *const, TIDE_ATTR_STRING_LIST)
LIST_GETTER(tide_attrs_get_bool_list, bool, TIDE_ATTR_BOOL_LIST)
LIST_GETTER(tide_attrs_get_shape_list, tide_shape, TIDE_ATTR_SHAPE_LIST)
#undef LIST_GETTER

bool tide_attrs_get_tensor_list(const tide_attrs *a, const char *name, tide_tensor *const **v, int *n)
{
    const tide_attr_value *val = tide__attrs_find(a, name);
    if (!val || val->type != TIDE_ATTR_TENSOR_LIST)
        return false;
    *v = (tide_tensor *const *)val->u.list.items;
    *n = val->u.list.n;
    return true;
}

const char *tide__attr_type_name(tide_attr_type t)
{
    switch (t) {
    case TIDE_ATTR_NONE: return "none";
    case TIDE_ATTR_INT: return "int";
    case TIDE_ATTR_FLOAT: return "float";
    case TIDE_ATTR_BOOL: return "bool";
    case TIDE_ATTR_STRING: return "string";
    case TIDE_ATTR_TYPE: return "type";
    case TIDE_ATTR_SHAPE: return "shape";
    case TIDE_ATTR_TENSOR: return "tensor";
    case TIDE_ATTR_INT_LIST: return "list(int)";
    case TIDE_ATTR_FLOAT_LIST: return "list(float)";
    case TIDE_ATTR_TYPE_LIST: return "list(type)";
    case TIDE_ATTR_STRING_LIST: return "list(string)";
    case TIDE_ATTR_BOOL_LIST: return "list(bool)";
    case TIDE_ATTR_SHAPE_LIST: return "list(shape)";
    case TIDE_ATTR_TENSOR_LIST: return "list(tensor)";
    }
    return "?";
}

static bool tensors_equal(const tide_tensor *a, const tide_tensor *b)
{
    if (a == b)
        return true;
    if (!a || !b || tide_tensor_dtype(a) != tide_tensor_dtype(b) ||
        !tide_shape_equal(tide_tensor_shape(a), tide_tensor_shape(b)))
        return false;
    if (tide_tensor_dtype(a) == TIDE_STRING)
        return tide_tensor_equal(a, b, false);
    return memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}

/* Bit-for-bit equality of two attr values (so 0.0 and -0.0, or two NaNs with different payloads,
 * differ: merging nodes on such attrs must never change a result). */
static bool value_equal(const tide_attr_value *x, const tide_attr_value *y)
{
    if (x->type != y->type)
        return false;
    switch (x->type) {
    case TIDE_ATTR_INT: return x->u.i == y->u.i;
    case TIDE_ATTR_FLOAT: return memcmp(&x->u.f, &y->u.f, sizeof x->u.f) == 0;
    case TIDE_ATTR_BOOL: return x->u.b == y->u.b;
    case TIDE_ATTR_STRING: return strcmp(x->u.s ? x->u.s : "", y->u.s ? y->u.s : "") == 0;
    case TIDE_ATTR_TYPE: return x->u.t == y->u.t;
    case TIDE_ATTR_SHAPE:
        return x->u.shape.rank == y->u.shape.rank &&
               (x->u.shape.rank <= 0 ||
                memcmp(x->u.shape.dims, y->u.shape.dims, sizeof(int64_t) * (size_t)x->u.shape.rank) == 0);
    case TIDE_ATTR_TENSOR: return tensors_equal(x->u.tensor, y->u.tensor);
    case TIDE_ATTR_STRING_LIST:
    case TIDE_ATTR_TENSOR_LIST:
    case TIDE_ATTR_SHAPE_LIST:
        if (x->u.list.n != y->u.list.n)
            return false;
        for (int i = 0; i < x->u.list.n; i++) {
            bool same = x->type == TIDE_ATTR_STRING_LIST
                            ? strcmp(((char *const *)x->u.list.items)[i], ((char *const *)y->u.list.items)[i]) == 0
                        : x->type == TIDE_ATTR_TENSOR_LIST
                            ? tensors_equal(((tide_tensor *const *)x->u.list.items)[i],
                                            ((tide_tensor *const *)y->u.list.items)[i])
                            : tide_shape_equal(&((const tide_shape *)x->u.list.items)[i],
                                               &((const tide_shape *)y->u.list.items)[i]);
            if (!same)
                return false;
        }
        return true;
    default:
        if (!tide__attr_type_is_list(x->type))
            return true;
        return x->u.list.n == y->u.list.n &&
               (x->u.list.n == 0 ||
                memcmp(x->u.list.items, y->u.list.items, list_item_size(x->type) * (size_t)x->u.list.n) == 0);
    }
}

bool tide__attrs_equal(const tide_attrs *a, const tide_attrs *b)
{
    int na = a ? a->count : 0, nb = b ? b->count : 0;
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++) {
        const tide_attr_value *v = tide__attrs_find(b, a->items[i].name);
        if (!v || !value_equal(&a->items[i].value, v))
            return false;
    }
    return true;
}
