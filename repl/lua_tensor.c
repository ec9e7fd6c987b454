/* lua_tensor.c — host tensors and dtypes for Lua.
 *
 * A host tensor is a userdata "tide.tensor" holding one reference to a tide_tensor (released by __gc
 * or __close). Tensors are built from Lua values (numbers, booleans, strings, rectangular nested
 * tables), indexed with Lua's 1-based convention as Torch7 does (t[i] is a row view or an element,
 * t:slice(i, j) rows i..j), reshaped without copying, and printed NumPy-style with elision. Their
 * arithmetic metamethods go to repl_arith (lua_node.c), shared with graph nodes.
 *
 * A dtype is a userdata "tide.dtype"; there is one per dtype, cached in the registry, so that
 * float32 == float32 also by identity.
 *
 * Building a tensor from a table takes three passes: the shape is read down the first elements, then
 * every table is checked against it (rectangular, no holes, no foreign keys) while the kinds of the
 * leaves are collected (which fixes the dtype), then the leaves are written in row-major order.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

#define TENSOR_MT "tide.tensor"
#define DTYPE_MT "tide.dtype"
#define DTYPE_CACHE "tide.dtypes" /* registry field: dtype value -> its unique userdata */

typedef struct tensor_box {
    tide_tensor *t; /* NULL once closed */
} tensor_box;

/* ---------------------------------------------------------------- small helpers */


/* The name of a Lua value's type for messages: __name for userdata ("tensor", "node"). */
static const char *type_name(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TUSERDATA && luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) {
        const char *name = lua_tostring(L, -1);
        lua_pop(L, 1); /* the string stays alive: it is a field of the metatable */
        return name;
    }
    return luaL_typename(L, idx);
}

static const char *shape_str(const tide_tensor *t, char *buf)
{
    return tide_shape_format(tide_tensor_shape(t), buf, TIDE_SHAPE_STR_MAX);
}

static bool is_numeric(tide_dtype dt)
{
    return tide_dtype_is_integer(dt) || tide_dtype_is_float(dt) || tide_dtype_is_complex(dt);
}

/* ---------------------------------------------------------------- userdata */

static int tensor_gc(lua_State *L)
{
    tensor_box *box = luaL_testudata(L, 1, TENSOR_MT);
    if (box) {
        tide_tensor_release(box->t);
        box->t = NULL;
    }
    return 0;
}

static void push_tensor_metatable(lua_State *L);

tide_tensor *repl_to_tensor(lua_State *L, int idx)
{
    tensor_box *box = luaL_testudata(L, idx, TENSOR_MT);
    return box ? box->t : NULL;
}

void repl_push_tensor(lua_State *L, tide_tensor *t)
{
    if (!t) {
        lua_pushnil(L);
        return;
    }
    tensor_box *box = lua_newuserdatauv(L, sizeof *box, 0);
    box->t = t;
    push_tensor_metatable(L);
    lua_setmetatable(L, -2);
}

static tide_dtype dtype_of_userdata(lua_State *L, int idx)
{
    tide_dtype *p = luaL_testudata(L, idx, DTYPE_MT);
    return p ? *p : TIDE_INVALID_DTYPE;
}

tide_dtype repl_to_dtype(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING)
        return tide_dtype_from_name(lua_tostring(L, idx));
    return dtype_of_userdata(L, idx);
}

static int dtype_tostring(lua_State *L)
{
    lua_pushstring(L, tide_dtype_name(dtype_of_userdata(L, 1)));
    return 1;
}

static int dtype_eq(lua_State *L)
{
    tide_dtype a = dtype_of_userdata(L, 1), b = dtype_of_userdata(L, 2);
    lua_pushboolean(L, a != TIDE_INVALID_DTYPE && a == b);
    return 1;
}

static void push_dtype_metatable(lua_State *L)
{
    if (luaL_newmetatable(L, DTYPE_MT)) {
        lua_pushcfunction(L, dtype_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_pushcfunction(L, dtype_eq);
        lua_setfield(L, -2, "__eq");
        lua_pushliteral(L, "dtype");
        lua_setfield(L, -2, "__name");
    }
}

void repl_push_dtype(lua_State *L, tide_dtype dt)
{
    if (!tide_dtype_name(dt)) {
        lua_pushnil(L);
        return;
    }
    if (lua_getfield(L, LUA_REGISTRYINDEX, DTYPE_CACHE) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, DTYPE_CACHE);
    }
    if (lua_rawgeti(L, -1, dt) == LUA_TNIL) {
        lua_pop(L, 1);
        tide_dtype *p = lua_newuserdatauv(L, sizeof *p, 0);
        *p = dt;
        push_dtype_metatable(L);
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, dt);
    }
    lua_remove(L, -2);
}

/* ---------------------------------------------------------------- shapes */

/* An integer from a Lua number (floats with an integral value too). */
static bool to_integer(lua_State *L, int idx, int64_t *out)
{
    int ok = 0;
    lua_Integer v = lua_tointegerx(L, idx, &ok);
    if (ok && lua_type(L, idx) == LUA_TNUMBER) {
        *out = (int64_t)v;
        return true;
    }
    return false;
}

/* A value for messages: 1.5, 'abc', a table, nil. Never converts the value in place. */
static const char *value_str(lua_State *L, int idx, char *buf, size_t size)
{
    if (lua_isinteger(L, idx))
        snprintf(buf, size, "%lld", (long long)lua_tointeger(L, idx));
    else if (lua_type(L, idx) == LUA_TNUMBER)
        snprintf(buf, size, "%.14g", lua_tonumber(L, idx));
    else if (lua_type(L, idx) == LUA_TSTRING)
        snprintf(buf, size, "'%.40s'", lua_tostring(L, idx));
    else if (lua_isnoneornil(L, idx))
        snprintf(buf, size, "nil");
    else
        snprintf(buf, size, "a %s", type_name(L, idx));
    return buf;
}

static bool shape_dim(lua_State *L, int idx, int i, int64_t *out, tide_error *err)
{
    char v[64];
    if (lua_type(L, idx) == LUA_TSTRING && strcmp(lua_tostring(L, idx), "?") == 0) {
        *out = -1;
        return true;
    }
    if (!to_integer(L, idx, out)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "dimension %d is %s, not an integer", i,
                       value_str(L, idx, v, sizeof v));
        return false;
    }
    if (*out < -1) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "dimension %d is %lld; a dimension is >= 0, or -1 (or \"?\") when unknown", i,
                       (long long)*out);
        return false;
    }
    return true;
}

/* {nil, 784}: the rank is the largest key (# is unreliable with holes), missing dims are -1. */
static bool shape_from_table(lua_State *L, int idx, tide_shape *out, tide_error *err)
{
    tide_shape s = {.rank = 0};
    for (int i = 0; i < TIDE_MAX_RANK; i++)
        s.dims[i] = -1;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int64_t key;
        if (!lua_isinteger(L, -2) || !to_integer(L, -2, &key) || key < 1 || key > TIDE_MAX_RANK) {
            char k[64];
            if (lua_isinteger(L, -2) && lua_tointeger(L, -2) > TIDE_MAX_RANK)
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "a shape has at most %d dimensions, "
                               "this one sets dimension %lld", TIDE_MAX_RANK,
                               (long long)lua_tointeger(L, -2));
            else
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "key %s is not a dimension index (1..%d)",
                               value_str(L, -2, k, sizeof k), TIDE_MAX_RANK);
            lua_pop(L, 2);
            return false;
        }
        if (!shape_dim(L, -1, (int)key, &s.dims[key - 1], err)) {
            lua_pop(L, 2);
            return false;
        }
        if ((int)key > s.rank)
            s.rank = (int)key;
        lua_pop(L, 1);
    }
    *out = s;
    return true;
}

static bool shape_from_tensor(const tide_tensor *t, tide_shape *out, tide_error *err)
{
    char buf[TIDE_SHAPE_STR_MAX];
    tide_dtype dt = tide_tensor_dtype(t);
    if (!tide_dtype_is_integer(dt) || tide_tensor_rank(t) > 1 || tide_tensor_num_elements(t) > TIDE_MAX_RANK) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a tensor given as a shape must be an integer "
                       "vector of at most %d elements, not %s %s", TIDE_MAX_RANK, tide_dtype_name(dt),
                       shape_str(t, buf));
        return false;
    }
    tide_shape s = {.rank = (int)tide_tensor_num_elements(t)};
    if (tide_tensor_rank(t) == 0)
        s.rank = 1;
    for (int i = 0; i < s.rank; i++) {
        s.dims[i] = (int64_t)tide_tensor_get_f64(t, i);
        if (dt == TIDE_INT64)
            s.dims[i] = ((const int64_t *)tide_tensor_data(t))[i];
        if (s.dims[i] < -1) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "dimension %d is %lld; a dimension is >= 0, "
                           "or -1 when unknown", i + 1, (long long)s.dims[i]);
            return false;
        }
    }
    *out = s;
    return true;
}

/* "[?, 784]" (as shapes print), "?, 784" or "[]": the dimensions, "?" or -1 when unknown. */
static bool shape_from_string(const char *text, tide_shape *out, tide_error *err)
{
    const char *p = text;
    while (*p == ' ')
        p++;
    bool bracket = *p == '[';
    p += bracket;
    tide_shape s = {.rank = 0};
    for (;;) {
        while (*p == ' ')
            p++;
        if (bracket && *p == ']' && s.rank == 0)
            break;
        if (s.rank == TIDE_MAX_RANK)
            goto bad;
        char *end = NULL;
        if (*p == '?') {
            s.dims[s.rank++] = -1;
            end = (char *)p + 1;
        } else {
            long long d = strtoll(p, &end, 10);
            if (end == p || d < -1)
                goto bad;
            s.dims[s.rank++] = d;
        }
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    if (bracket && *p++ != ']')
        goto bad;
    while (*p == ' ')
        p++;
    if (*p)
        goto bad;
    *out = s;
    return true;
bad:
    tide_error_set(err, TIDE_INVALID_ARGUMENT, "'%.60s' is not a shape: write it as shapes print, such as "
                   "\"[?, 784]\" (\"?\" or -1: unknown) or \"[]\" for a scalar", text);
    return false;
}

bool repl_to_shape(lua_State *L, int idx, tide_shape *out, tide_error *err)
{
    idx = lua_absindex(L, idx);
    if (!lua_checkstack(L, 4)) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of Lua stack");
        return false;
    }
    if (lua_type(L, idx) == LUA_TTABLE)
        return shape_from_table(L, idx, out, err);
    if (lua_type(L, idx) == LUA_TNUMBER) {
        int64_t n;
        if (!shape_dim(L, idx, 1, &n, err))
            return false;
        *out = tide_shape_vector(n);
        return true;
    }
    if (lua_type(L, idx) == LUA_TSTRING)
        return shape_from_string(lua_tostring(L, idx), out, err);
    tide_tensor *t = repl_to_tensor(L, idx);
    if (t)
        return shape_from_tensor(t, out, err);
    tide_error_set(err, TIDE_INVALID_ARGUMENT, "a shape is a table of dimensions such as {-1, 784} "
                   "(-1 or \"?\": unknown), a string such as \"[?, 784]\", an integer tensor, or one "
                   "integer; got %s", lua_isnoneornil(L, idx) ? "nil" : type_name(L, idx));
    return false;
}

/* ---------------------------------------------------------------- tensors from Lua values */

enum { K_INT = 1, K_FLOAT = 2, K_BOOL = 4, K_STRING = 8 };

typedef struct builder {
    lua_State *L;
    tide_error *err;
    tide_shape shape;
    int64_t path[TIDE_MAX_RANK]; /* 1-based index at each depth of the element being visited */
    const char *first_leaf;      /* the type of the first leaf ("number"), for messages */
    int kinds;                   /* K_* of the leaves seen */
    bool needs_int64;            /* an integer leaf does not fit in int32 */
    tide_tensor *t;              /* being filled */
    int64_t pos;                 /* its next element */
} builder;

/* "element 2" (depth 1), "element [2][1]" (deeper); first: the path of first elements instead. */
static const char *path_str(const builder *b, int depth, bool first, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "element ");
    if (depth == 1) {
        snprintf(buf + len, size - len, "%lld", first ? 1LL : (long long)b->path[0]);
        return buf;
    }
    for (int d = 0; d < depth && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "[%lld]", first ? 1LL : (long long)b->path[d]);
    return buf;
}

/* " (element [2][3])" for a leaf of a table, "" for a scalar: what follows the value in messages. */
static const char *where_str(const builder *b, char *buf, size_t size)
{
    char p[128];
    if (b->shape.rank == 0)
        return "";
    snprintf(buf, size, " (%s)", path_str(b, b->shape.rank, false, p, sizeof p));
    return buf;
}

/* The shape, read down the first elements. The value is at idx. */
static bool discover_shape(builder *b, int idx)
{
    lua_State *L = b->L;
    int rank = 0;
    lua_pushvalue(L, idx);
    while (lua_type(L, -1) == LUA_TTABLE) {
        if (rank == TIDE_MAX_RANK) {
            lua_pop(L, 1);
            tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "table nested deeper than %d (a tensor has at "
                           "most %d dimensions)", TIDE_MAX_RANK, TIDE_MAX_RANK);
            return false;
        }
        lua_Unsigned n = lua_rawlen(L, -1);
        b->shape.dims[rank++] = (int64_t)n;
        if (n == 0)
            break;
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
    }
    b->first_leaf = lua_type(L, -1) == LUA_TTABLE ? "table" : type_name(L, -1);
    lua_pop(L, 1);
    b->shape.rank = rank;
    return true;
}

/* Every key of the table on top is an index 1..n. */
static bool check_keys(builder *b, int depth, int64_t n)
{
    lua_State *L = b->L;
    char p[128];
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        int64_t key;
        bool index = lua_isinteger(L, -2) && to_integer(L, -2, &key);
        if (!index || key < 1 || key > n) {
            const char *what = depth == 0 ? "the table" : path_str(b, depth, false, p, sizeof p);
            if (index && key > n)
                tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "%s has holes: element %lld is nil but "
                               "element %lld is set", what, (long long)n + 1, (long long)key);
            else if (lua_type(L, -2) == LUA_TSTRING)
                tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "%s has a field '%s'; a tensor is built from "
                               "arrays (keys 1..n)", what, lua_tostring(L, -2));
            else
                tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "%s has a key that is not an index 1..n "
                               "(a %s)", what, type_name(L, -2));
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    return true;
}

/* Records the kind of the leaf on top of the stack. */
static bool classify_leaf(builder *b)
{
    lua_State *L = b->L;
    char w[160];
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, -1)) {
            lua_Integer v = lua_tointeger(L, -1);
            b->kinds |= K_INT;
            if (v < INT32_MIN || v > INT32_MAX)
                b->needs_int64 = true;
        } else {
            b->kinds |= K_FLOAT;
        }
        return true;
    case LUA_TBOOLEAN: b->kinds |= K_BOOL; return true;
    case LUA_TSTRING: b->kinds |= K_STRING; return true;
    default: break;
    }
    if (b->shape.rank == 0)
        tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "cannot make a tensor from %s%s",
                       lua_isnil(L, -1) ? "nil" : "a ", lua_isnil(L, -1) ? "" : type_name(L, -1));
    else
        tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "a table holds a %s%s; a tensor holds numbers, "
                       "booleans or strings", type_name(L, -1), where_str(b, w, sizeof w));
    return false;
}

static bool ragged(builder *b, int depth, const char *fmt_this, const char *fmt_first)
{
    char p1[128], p2[128];
    tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "ragged table: %s %s, %s %s",
                   path_str(b, depth, false, p1, sizeof p1), fmt_this,
                   path_str(b, depth, true, p2, sizeof p2), fmt_first);
    return false;
}

/* Checks the table on top (at `depth`; the outermost is 0) against the shape, and classifies its
 * leaves. */
static bool scan(builder *b, int depth)
{
    lua_State *L = b->L;
    int64_t n = (int64_t)lua_rawlen(L, -1);
    if (n != b->shape.dims[depth]) {
        char a[48], c[48];
        snprintf(a, sizeof a, "has %lld entr%s", (long long)n, n == 1 ? "y" : "ies");
        snprintf(c, sizeof c, "has %lld", (long long)b->shape.dims[depth]);
        return ragged(b, depth, a, c);
    }
    if (!check_keys(b, depth, n))
        return false;
    bool leaves = depth + 1 == b->shape.rank;
    for (int64_t i = 1; i <= n; i++) {
        b->path[depth] = i;
        int type = lua_rawgeti(L, -1, (lua_Integer)i);
        bool ok;
        if (type == LUA_TNIL) {
            char p[128];
            tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "%s has holes: %s is nil",
                           depth == 0 ? "the table" : "a table", path_str(b, depth + 1, false, p, sizeof p));
            ok = false;
        } else if (!leaves && type != LUA_TTABLE) {
            char a[64];
            snprintf(a, sizeof a, "is a %s", type_name(L, -1));
            ok = ragged(b, depth + 1, a, "is a table");
        } else if (leaves && type == LUA_TTABLE) {
            char c[64];
            snprintf(c, sizeof c, "is a %s", b->first_leaf);
            ok = ragged(b, depth + 1, "is a table", c);
        } else {
            ok = leaves ? classify_leaf(b) : scan(b, depth + 1);
        }
        lua_pop(L, 1);
        if (!ok)
            return false;
    }
    return true;
}

/* The dtype of the leaves, or an error when they mix kinds. */
static bool natural_dtype(builder *b, tide_dtype *out)
{
    int k = b->kinds;
    if ((k & K_STRING) && k != K_STRING) {
        tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "a table mixes strings and %s; a tensor has one "
                       "dtype", (k & K_BOOL) ? "booleans" : "numbers");
        return false;
    }
    if ((k & K_BOOL) && k != K_BOOL) {
        tide_error_set(b->err, TIDE_INVALID_ARGUMENT, "a table mixes booleans and numbers; a tensor has "
                       "one dtype (write 1 and 0, or cast)");
        return false;
    }
    *out = k == K_STRING ? TIDE_STRING
         : k == K_BOOL   ? TIDE_BOOL
         : (k & K_FLOAT) ? TIDE_FLOAT32
         : k == 0        ? TIDE_FLOAT32
         : b->needs_int64 ? TIDE_INT64 : TIDE_INT32;
    return true;
}

static bool int_range(tide_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case TIDE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return true;
    case TIDE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
    case TIDE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    case TIDE_INT64: *lo = INT64_MIN, *hi = INT64_MAX; return true;
    case TIDE_UINT8: *lo = 0, *hi = UINT8_MAX; return true;
    case TIDE_UINT16: *lo = 0, *hi = UINT16_MAX; return true;
    default: return false;
    }
}

static void store_int(tide_dtype dt, void *p, int64_t v)
{
    switch (dt) {
    case TIDE_INT8: *(int8_t *)p = (int8_t)v; break;
    case TIDE_INT16: *(int16_t *)p = (int16_t)v; break;
    case TIDE_INT32: *(int32_t *)p = (int32_t)v; break;
    case TIDE_INT64: *(int64_t *)p = v; break;
    case TIDE_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case TIDE_UINT16: *(uint16_t *)p = (uint16_t)v; break;
    default: break;
    }
}

static void store_float(tide_dtype dt, void *p, double v)
{
    switch (dt) {
    case TIDE_FLOAT16: *(uint16_t *)p = tide_f32_to_f16((float)v); break;
    case TIDE_BFLOAT16: *(uint16_t *)p = tide_f32_to_bf16((float)v); break;
    case TIDE_FLOAT32: *(float *)p = (float)v; break;
    case TIDE_FLOAT64: *(double *)p = v; break;
    case TIDE_COMPLEX64: ((float *)p)[0] = (float)v, ((float *)p)[1] = 0; break;
    case TIDE_COMPLEX128: ((double *)p)[0] = v, ((double *)p)[1] = 0; break;
    default: break;
    }
}

/* Writes the number on top into element b->pos of a numeric tensor. */
static bool put_number(builder *b)
{
    lua_State *L = b->L;
    tide_dtype dt = tide_tensor_dtype(b->t);
    void *p = (char *)tide_tensor_data(b->t) + (size_t)b->pos * tide_dtype_size(dt);
    int64_t lo, hi;
    char w[160], v[64];
    if (!int_range(dt, &lo, &hi)) {
        store_float(dt, p, lua_tonumber(L, -1));
        return true;
    }
    int64_t x;
    if (lua_isinteger(L, -1)) {
        x = (int64_t)lua_tointeger(L, -1);
    } else {
        double d = lua_tonumber(L, -1);
        if (d != floor(d) || !(d >= -0x1p63 && d < 0x1p63)) {
            tide_error_set(b->err, TIDE_OUT_OF_RANGE, "%s%s is not an integer: an %s tensor holds "
                           "integers (cast a float tensor to truncate)", value_str(L, -1, v, sizeof v),
                           where_str(b, w, sizeof w), tide_dtype_name(dt));
            return false;
        }
        x = (int64_t)d;
    }
    if (x < lo || x > hi) {
        tide_error_set(b->err, TIDE_OUT_OF_RANGE, "%lld%s does not fit in %s (%lld..%lld)", (long long)x,
                       where_str(b, w, sizeof w), tide_dtype_name(dt), (long long)lo, (long long)hi);
        return false;
    }
    store_int(dt, p, x);
    return true;
}

static bool put_leaf(builder *b)
{
    lua_State *L = b->L;
    bool ok = true;
    switch (tide_tensor_dtype(b->t)) {
    case TIDE_STRING: {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        ok = tide_tensor_string_set(b->t, b->pos, s, len, b->err) == TIDE_OK;
        break;
    }
    case TIDE_BOOL: ((uint8_t *)tide_tensor_data(b->t))[b->pos] = (uint8_t)lua_toboolean(L, -1); break;
    default: ok = put_number(b); break;
    }
    b->pos++;
    return ok;
}

/* Writes the leaves of the table on top, row-major. */
static bool fill(builder *b, int depth)
{
    lua_State *L = b->L;
    for (int64_t i = 1; i <= b->shape.dims[depth]; i++) {
        b->path[depth] = i;
        lua_rawgeti(L, -1, (lua_Integer)i);
        bool ok = depth + 1 == b->shape.rank ? put_leaf(b) : fill(b, depth + 1);
        lua_pop(L, 1);
        if (!ok)
            return false;
    }
    return true;
}

/* The dtype to write the leaves in: dt itself for numbers into a numeric dtype, else the leaves'
 * own dtype (numbers at full precision), cast to dt afterwards. */
static tide_dtype fill_dtype(const builder *b, tide_dtype natural, tide_dtype dt)
{
    if (dt == TIDE_INVALID_DTYPE)
        return natural;
    bool numbers = (b->kinds & ~(K_INT | K_FLOAT)) == 0;
    if (numbers && is_numeric(dt))
        return dt;
    if (natural == TIDE_FLOAT32)
        return TIDE_FLOAT64;
    if (natural == TIDE_INT32)
        return TIDE_INT64;
    return natural;
}

static tide_tensor *build(builder *b, int idx, tide_dtype dt)
{
    lua_State *L = b->L;
    tide_dtype natural;
    if (!discover_shape(b, idx))
        return NULL;
    lua_pushvalue(L, idx);
    bool ok = b->shape.rank == 0 ? classify_leaf(b) : scan(b, 0);
    ok = ok && natural_dtype(b, &natural);
    if (ok) {
        tide_dtype fdt = fill_dtype(b, natural, dt);
        b->t = tide_tensor_new(fdt, &b->shape, b->err);
        ok = b->t && (b->shape.rank == 0 ? put_leaf(b) : fill(b, 0));
    }
    lua_pop(L, 1);
    if (!ok) {
        tide_tensor_release(b->t);
        return NULL;
    }
    if (dt != TIDE_INVALID_DTYPE && tide_tensor_dtype(b->t) != dt) {
        tide_tensor *cast = tide_tensor_cast(b->t, dt, b->err);
        tide_tensor_release(b->t);
        return cast;
    }
    return b->t;
}

tide_tensor *repl_tensor_from_lua(lua_State *L, int idx, tide_dtype dt, tide_error *err)
{
    idx = lua_absindex(L, idx);
    tide_tensor *t = repl_to_tensor(L, idx);
    if (t)
        return dt == TIDE_INVALID_DTYPE ? tide_tensor_retain(t) : tide_tensor_cast(t, dt, err);
    if (luaL_testudata(L, idx, TENSOR_MT)) {
        tide_error_set(err, TIDE_FAILED_PRECONDITION, "the tensor was closed");
        return NULL;
    }
    if (!lua_checkstack(L, 2 * TIDE_MAX_RANK + 8)) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of Lua stack building a tensor");
        return NULL;
    }
    builder b = {.L = L, .err = err};
    return build(&b, idx, dt);
}

/* ---------------------------------------------------------------- elements to Lua */

static void push_element(lua_State *L, const tide_tensor *t, int64_t i)
{
    const void *data = tide_tensor_data(t);
    switch (tide_tensor_dtype(t)) {
    case TIDE_BOOL: lua_pushboolean(L, ((const uint8_t *)data)[i]); return;
    case TIDE_INT8: lua_pushinteger(L, ((const int8_t *)data)[i]); return;
    case TIDE_INT16: lua_pushinteger(L, ((const int16_t *)data)[i]); return;
    case TIDE_INT32: lua_pushinteger(L, ((const int32_t *)data)[i]); return;
    case TIDE_INT64: lua_pushinteger(L, ((const int64_t *)data)[i]); return;
    case TIDE_UINT8: lua_pushinteger(L, ((const uint8_t *)data)[i]); return;
    case TIDE_UINT16: lua_pushinteger(L, ((const uint16_t *)data)[i]); return;
    case TIDE_STRING: {
        size_t len;
        const char *s = tide_tensor_string_get(t, i, &len);
        lua_pushlstring(L, s ? s : "", len);
        return;
    }
    case TIDE_COMPLEX64:
    case TIDE_COMPLEX128: {
        bool c64 = tide_tensor_dtype(t) == TIDE_COMPLEX64;
        lua_createtable(L, 2, 0);
        lua_pushnumber(L, c64 ? ((const float *)data)[2 * i] : ((const double *)data)[2 * i]);
        lua_rawseti(L, -2, 1);
        lua_pushnumber(L, c64 ? ((const float *)data)[2 * i + 1] : ((const double *)data)[2 * i + 1]);
        lua_rawseti(L, -2, 2);
        return;
    }
    default: lua_pushnumber(L, tide_tensor_get_f64(t, i)); return;
    }
}

/* Element i as a complex number (real types: imaginary part 0). */
static void complex_element(const tide_tensor *t, int64_t i, double *re, double *im)
{
    const void *data = tide_tensor_data(t);
    *im = 0;
    switch (tide_tensor_dtype(t)) {
    case TIDE_COMPLEX64:
        *re = ((const float *)data)[2 * i], *im = ((const float *)data)[2 * i + 1];
        return;
    case TIDE_COMPLEX128:
        *re = ((const double *)data)[2 * i], *im = ((const double *)data)[2 * i + 1];
        return;
    default: *re = tide_tensor_get_f64(t, i); return;
    }
}

/* ---------------------------------------------------------------- checking arguments */

static tide_tensor *check_tensor(lua_State *L, int idx, const char *fn)
{
    tensor_box *box = luaL_testudata(L, idx, TENSOR_MT);
    char v[64];
    if (!box && idx == 1)
        repl_raise(L, "%s: call it on a tensor, as t:%s(...) (got %s)", fn, fn, value_str(L, 1, v, sizeof v));
    else if (!box)
        repl_raise(L, "%s: argument %d must be a tensor, got %s", fn, idx - 1, value_str(L, idx, v, sizeof v));
    else if (!box->t)
        repl_raise(L, "%s: the tensor was closed", fn);
    return box ? box->t : NULL;
}

static tide_dtype check_dtype(lua_State *L, int idx, const char *fn)
{
    tide_dtype dt = repl_to_dtype(L, idx);
    if (dt != TIDE_INVALID_DTYPE)
        return dt;
    if (lua_type(L, idx) == LUA_TSTRING)
        repl_raise(L, "%s: unknown dtype '%s' (float32, float64, int32, int64, bool, string, ...)", fn,
                   lua_tostring(L, idx));
    repl_raise(L, "%s: expected a dtype (float32, int32, ...) or its name, got %s", fn,
               lua_isnone(L, idx) ? "no value" : type_name(L, idx));
    return TIDE_INVALID_DTYPE;
}

static int64_t check_integer(lua_State *L, int idx, const char *fn, const char *what)
{
    int64_t v = 0;
    char buf[64];
    if (!to_integer(L, idx, &v))
        repl_raise(L, "%s: %s must be an integer, got %s", fn, what, value_str(L, idx, buf, sizeof buf));
    return v;
}

/* Pushes a new tensor, or raises err's message (nothing is held when it does). */
static int push_result(lua_State *L, tide_tensor *t, const char *fn, tide_error *err)
{
    if (!t)
        return repl_raise(L, "%s: %s", fn, tide_error_message(err));
    repl_push_tensor(L, t);
    return 1;
}

/* A tensor from the value at idx (a tensor as is): a new reference; raises on failure. */
static tide_tensor *operand(lua_State *L, int idx, tide_dtype dt, const char *fn)
{
    tide_error *err = repl_scratch_error(L);
    tide_tensor *u = repl_tensor_from_lua(L, idx, dt, err);
    if (!u)
        repl_raise(L, "%s: %s", fn, tide_error_message(err));
    return u;
}

/* ---------------------------------------------------------------- methods */

static int m_shape(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "shape");
    int rank = tide_tensor_rank(t);
    lua_createtable(L, rank, 0);
    for (int i = 0; i < rank; i++) {
        lua_pushinteger(L, tide_tensor_dim(t, i));
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int m_dtype(lua_State *L)
{
    repl_push_dtype(L, tide_tensor_dtype(check_tensor(L, 1, "dtype")));
    return 1;
}

static int m_rank(lua_State *L)
{
    lua_pushinteger(L, tide_tensor_rank(check_tensor(L, 1, "rank")));
    return 1;
}

static int m_numel(lua_State *L)
{
    lua_pushinteger(L, tide_tensor_num_elements(check_tensor(L, 1, "numel")));
    return 1;
}

/* Rows [begin, end) as a view. */
static int push_rows(lua_State *L, tide_tensor *t, int64_t begin, int64_t end, const char *fn)
{
    tide_error *err = repl_scratch_error(L);
    return push_result(L, tide_tensor_slice(t, begin, end, err), fn, err);
}

/* t:slice(i [, j]): rows i..j inclusive, as string.sub counts them. */
static int m_slice(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "slice");
    if (tide_tensor_rank(t) == 0)
        return repl_raise(L, "slice: a scalar tensor has no rows to slice");
    int64_t n = tide_tensor_dim(t, 0);
    int64_t i = lua_isnoneornil(L, 2) ? 1 : check_integer(L, 2, "slice", "the first row");
    int64_t j = lua_isnoneornil(L, 3) ? -1 : check_integer(L, 3, "slice", "the last row");
    if (i < 0)
        i = i < -n ? 1 : n + i + 1;
    else if (i == 0)
        i = 1;
    if (j < 0)
        j = j < -n ? 0 : n + j + 1;
    else if (j > n)
        j = n;
    if (i > j) {
        int64_t at = i - 1 < n ? i - 1 : n;
        return push_rows(L, t, at, at, "slice");
    }
    return push_rows(L, t, i - 1, j, "slice");
}

static int m_reshape(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "reshape");
    tide_error *err = repl_scratch_error(L);
    tide_shape s;
    if (!repl_to_shape(L, 2, &s, err))
        return repl_raise(L, "reshape: %s", tide_error_message(err));
    return push_result(L, tide_tensor_reshape(t, &s, err), "reshape", err);
}

static void push_table(lua_State *L, const tide_tensor *t, int depth, int64_t *pos)
{
    const tide_shape *s = tide_tensor_shape(t);
    int64_t n = s->dims[depth];
    lua_createtable(L, n > INT32_MAX ? INT32_MAX : (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        if (depth + 1 == s->rank)
            push_element(L, t, (*pos)++);
        else
            push_table(L, t, depth + 1, pos);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static int m_totable(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "totable");
    luaL_checkstack(L, TIDE_MAX_RANK + 4, "totable");
    if (tide_tensor_rank(t) == 0) {
        push_element(L, t, 0);
        return 1;
    }
    int64_t pos = 0;
    push_table(L, t, 0, &pos);
    return 1;
}

static int m_item(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "item");
    char buf[TIDE_SHAPE_STR_MAX];
    if (tide_tensor_num_elements(t) != 1)
        return repl_raise(L, "item: the tensor has %lld elements (shape %s); item() takes a tensor of one "
                          "element", (long long)tide_tensor_num_elements(t), shape_str(t, buf));
    if (tide_dtype_is_complex(tide_tensor_dtype(t))) {
        double re, im;
        complex_element(t, 0, &re, &im);
        lua_pushnumber(L, re);
        lua_pushnumber(L, im);
        return 2;
    }
    push_element(L, t, 0);
    return 1;
}

static int m_cast(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "cast");
    tide_dtype dt = check_dtype(L, 2, "cast");
    tide_error *err = repl_scratch_error(L);
    return push_result(L, tide_tensor_cast(t, dt, err), "cast", err);
}

static int m_copy(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "copy");
    tide_error *err = repl_scratch_error(L);
    return push_result(L, tide_tensor_copy(t, err), "copy", err);
}

/* t:equal(u [, nan_equal]): u a tensor (same dtype, shape and values) or a Lua value, made a tensor
 * of t's dtype (a value that does not fit that dtype is simply not equal). */
static int m_equal(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "equal");
    bool nan_equal = lua_toboolean(L, 3);
    tide_tensor *u = repl_to_tensor(L, 2);
    if (u) {
        lua_pushboolean(L, tide_tensor_equal(t, u, nan_equal));
        return 1;
    }
    tide_error *err = repl_scratch_error(L);
    u = repl_tensor_from_lua(L, 2, tide_tensor_dtype(t), err);
    if (!u) {
        if (tide_error_code(err) == TIDE_OUT_OF_RANGE) { /* a value t's dtype cannot hold */
            lua_pushboolean(L, false);
            return 1;
        }
        return repl_raise(L, "equal: %s", tide_error_message(err));
    }
    bool eq = tide_tensor_equal(t, u, nan_equal);
    tide_tensor_release(u);
    lua_pushboolean(L, eq);
    return 1;
}

/* The largest |t - u| of two numeric tensors of one shape (NaN if either holds a NaN). */
static bool max_abs_diff(const tide_tensor *t, const tide_tensor *u, double *out, char *why, size_t size)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (!is_numeric(tide_tensor_dtype(t)) || !is_numeric(tide_tensor_dtype(u))) {
        snprintf(why, size, "needs numeric tensors, got %s and %s", tide_dtype_name(tide_tensor_dtype(t)),
                 tide_dtype_name(tide_tensor_dtype(u)));
        return false;
    }
    if (!tide_shape_equal(tide_tensor_shape(t), tide_tensor_shape(u))) {
        snprintf(why, size, "shapes differ: %s and %s", shape_str(t, a), shape_str(u, b));
        return false;
    }
    double m = 0;
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        double re1, im1, re2, im2;
        complex_element(t, i, &re1, &im1);
        complex_element(u, i, &re2, &im2);
        double d = im1 == 0 && im2 == 0 ? fabs(re1 - re2) : hypot(re1 - re2, im1 - im2);
        if (isnan(d)) {
            m = NAN;
            break;
        }
        if (d > m)
            m = d;
    }
    *out = m;
    return true;
}

static int m_max_abs_diff(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "max_abs_diff");
    tide_tensor *u = operand(L, 2, TIDE_INVALID_DTYPE, "max_abs_diff");
    char why[2 * TIDE_SHAPE_STR_MAX + 64];
    double m;
    bool ok = max_abs_diff(t, u, &m, why, sizeof why);
    tide_tensor_release(u);
    if (!ok)
        return repl_raise(L, "max_abs_diff: %s", why);
    lua_pushnumber(L, m);
    return 1;
}

/* ---------------------------------------------------------------- metamethods */

/* t[i]: rank 1, the element; rank > 1, row i as a view. Negative i counts from the end. */
static int index_row(lua_State *L, tide_tensor *t)
{
    int64_t i = check_integer(L, 2, "index", "a tensor index");
    if (tide_tensor_rank(t) == 0)
        return repl_raise(L, "cannot index a scalar tensor (t[%lld]); use t:item()", (long long)i);
    int64_t n = tide_tensor_dim(t, 0);
    int64_t k = i < 0 ? n + i : i - 1;
    if (i == 0 || k < 0 || k >= n)
        return repl_raise(L, "index %lld is out of range for dimension 1 of size %lld (valid: 1..%lld, or "
                          "-%lld..-1 from the end)", (long long)i, (long long)n, (long long)n,
                          (long long)n);
    if (tide_tensor_rank(t) == 1) {
        push_element(L, t, k);
        return 1;
    }
    tide_error *err = repl_scratch_error(L);
    tide_tensor *row = tide_tensor_slice(t, k, k + 1, err);
    const tide_shape *s = tide_tensor_shape(t);
    tide_shape rs = tide_shape_make(s->rank - 1, s->dims + 1);
    tide_tensor *view = row ? tide_tensor_reshape(row, &rs, err) : NULL;
    tide_tensor_release(row);
    return push_result(L, view, "index", err);
}

static int tensor_index(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "index");
    if (lua_type(L, 2) == LUA_TSTRING) {
        lua_getfield(L, lua_upvalueindex(1), lua_tostring(L, 2));
        return 1;
    }
    if (lua_type(L, 2) == LUA_TNUMBER)
        return index_row(L, t);
    return repl_raise(L, "a tensor is indexed by an integer (t[1]) or a method name (t:shape()), not by "
                      "%s", type_name(L, 2));
}

static int tensor_newindex(lua_State *L)
{
    return repl_raise(L, "tensors are immutable: t[...] = v cannot change one; build a new tensor with "
                      "tensor{...}, or compute one (t + u, t:cast(...))");
}

static int tensor_len(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "#");
    if (tide_tensor_rank(t) == 0)
        return repl_raise(L, "# of a scalar tensor: it has no first dimension");
    lua_pushinteger(L, tide_tensor_dim(t, 0));
    return 1;
}

static int tensor_tostring(lua_State *L)
{
    tide_tensor *t = check_tensor(L, 1, "tostring");
    char *s = tide_tensor_format(t, 1000, 3);
    if (!s)
        return repl_raise(L, "tostring: out of memory formatting a tensor");
    lua_pushstring(L, s); /* may raise on out of memory: s would leak, a negligible case */
    free(s);
    return 1;
}

static int tensor_add(lua_State *L) { return repl_arith(L, "Add", 2); }
static int tensor_sub(lua_State *L) { return repl_arith(L, "Sub", 2); }
static int tensor_mul(lua_State *L) { return repl_arith(L, "Mul", 2); }
static int tensor_div(lua_State *L) { return repl_arith(L, "Div", 2); }
static int tensor_pow(lua_State *L) { return repl_arith(L, "Pow", 2); }
static int tensor_mod(lua_State *L) { return repl_arith(L, "FloorMod", 2); } /* Lua's % floors */

static int tensor_unm(lua_State *L)
{
    lua_settop(L, 1); /* Lua passes the operand twice */
    return repl_arith(L, "Neg", 1);
}

static const luaL_Reg tensor_methods[] = {
    {"shape", m_shape}, {"dtype", m_dtype}, {"rank", m_rank}, {"numel", m_numel},
    {"slice", m_slice}, {"reshape", m_reshape}, {"totable", m_totable}, {"item", m_item},
    {"cast", m_cast}, {"copy", m_copy}, {"equal", m_equal}, {"max_abs_diff", m_max_abs_diff},
    {NULL, NULL},
};

static const luaL_Reg tensor_metamethods[] = {
    {"__gc", tensor_gc}, {"__close", tensor_gc}, {"__newindex", tensor_newindex},
    {"__len", tensor_len}, {"__tostring", tensor_tostring},
    {"__add", tensor_add}, {"__sub", tensor_sub}, {"__mul", tensor_mul}, {"__div", tensor_div},
    {"__pow", tensor_pow}, {"__mod", tensor_mod}, {"__unm", tensor_unm},
    {NULL, NULL},
};

/* The metatable; made on first use. Its field __methods is the table of methods (for completion). */
static void push_tensor_metatable(lua_State *L)
{
    if (!luaL_newmetatable(L, TENSOR_MT))
        return;
    luaL_setfuncs(L, tensor_metamethods, 0);
    lua_pushliteral(L, "tensor");
    lua_setfield(L, -2, "__name");
    luaL_newlib(L, tensor_methods);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__methods");
    lua_pushcclosure(L, tensor_index, 1);
    lua_setfield(L, -2, "__index");
}

/* ---------------------------------------------------------------- module functions */

/* tensor(value [, dtype]) */
static int l_tensor(lua_State *L)
{
    if (lua_isnone(L, 1))
        return repl_raise(L, "tensor: expected a value: tensor{{1, 2}, {3, 4}} or tensor(value, dtype)");
    tide_dtype dt = lua_isnoneornil(L, 2) ? TIDE_INVALID_DTYPE : check_dtype(L, 2, "tensor");
    tide_error *err = repl_scratch_error(L);
    return push_result(L, repl_tensor_from_lua(L, 1, dt, err), "tensor", err);
}

static int l_is_tensor(lua_State *L)
{
    lua_pushboolean(L, luaL_testudata(L, 1, TENSOR_MT) != NULL);
    return 1;
}

static const tide_dtype all_dtypes[] = {
    TIDE_FLOAT32, TIDE_FLOAT64, TIDE_FLOAT16, TIDE_BFLOAT16, TIDE_INT8, TIDE_INT16, TIDE_INT32,
    TIDE_INT64, TIDE_UINT8, TIDE_UINT16, TIDE_BOOL, TIDE_COMPLEX64, TIDE_COMPLEX128, TIDE_STRING,
};

void repl_open_tensors(lua_State *L)
{
    push_tensor_metatable(L);
    lua_pop(L, 1);
    push_dtype_metatable(L);
    lua_pop(L, 1);
    for (size_t i = 0; i < sizeof all_dtypes / sizeof all_dtypes[0]; i++) {
        repl_push_dtype(L, all_dtypes[i]);
        lua_setfield(L, -2, tide_dtype_name(all_dtypes[i]));
    }
    lua_pushcfunction(L, l_tensor);
    lua_setfield(L, -2, "tensor");
    lua_pushcfunction(L, l_is_tensor);
    lua_setfield(L, -2, "is_tensor");
    luaL_getsubtable(L, -1, "help");
    lua_pushliteral(L, "tensor(value [, dtype])\n\nA host tensor from a number, a boolean, a string, a "
                    "tensor or nested tables of them (rectangular): tensor{{1, 2}, {3, 4}}. Without dtype, "
                    "integers give int32 (int64 when one does not fit), any float float32. Methods: "
                    "shape rank numel dtype slice reshape totable item cast copy equal max_abs_diff; "
                    "t[i] is row i (a view) or an element; #t the first dimension.");
    lua_setfield(L, -2, "tensor");
    lua_pushliteral(L, "is_tensor(v)\n\nTrue when v is a host tensor.");
    lua_setfield(L, -2, "is_tensor");
    lua_pop(L, 1);
}
