/* lua_node.c — graph nodes in Lua: node handles, one Lua function per registered op (generated from
 * the registry's signatures), arithmetic metamethods, and the functions that build the structural
 * parts (placeholder, constant, node, scope, device). Running graphs is lua_run.c.
 *
 * A node handle is a userdata "tide.node" naming one output of a node (index >= 0), or the node
 * itself (index -1) for ops without outputs such as NoOp. Handles are unique per output (a weak
 * table caches them), so they work as table keys: run(train, {[x] = images}). A handle dies when its
 * node does (the entry that made it failed and was rolled back, or :reset dropped the graph); using a
 * dead handle is an error, never a dangling pointer.
 *
 * Calling an op function: inputs are positional, in the op's order; a list input (Concat's values)
 * takes a Lua table; a trailing table with string keys holds the attrs plus `name` and `device`.
 * Inputs that are not nodes (numbers, tables, host tensors) become Const nodes, with the dtype the op
 * needs there: a fixed dtype, or the dtype of another input bound to the same type attr (so x + 1 is
 * float32 when x is), else inferred from the value. The training API (gradients, variables,
 * optimizers) is in lua_train.c.
 */
#include <stdlib.h>
#include <string.h>

#include "repl.h"

#define NODE_MT "tide.node"
#define HANDLES_KEY "tide.handles"   /* registry: weak table of live handles */
#define OPNAMES_KEY "tide.opnames"   /* registry: Lua function name -> op name */
#define REUSE_KEY "tide.reusable"    /* registry: fingerprint -> handle of a Const or summary to reuse */
#define PREFERRED_KEY "tide.preferred" /* registry: function -> the one of its names listings show */
#define REUSE_MAX_ELEMENTS 64        /* larger constants are not fingerprinted */
#define MAX_ARGS 12                  /* the size of tide_op_info's arrays */

typedef struct node_handle {
    tide_node *node;      /* NULL once dead */
    int index;            /* output, or -1 for the node itself */
    int id;               /* tide_node_id(node): survives the node for rollback checks */
    int generation;       /* repl->graph_generation when made */
    bool auto_named;      /* the binding chose the name: it may follow a Lua variable */
} node_handle;

/* ---------------------------------------------------------------- handles */

static node_handle *test_handle(lua_State *L, int idx)
{
    return luaL_testudata(L, idx, NODE_MT);
}

bool repl_is_node(lua_State *L, int idx) { return test_handle(L, idx) != NULL; }

static node_handle *check_live(lua_State *L, int idx)
{
    node_handle *h = test_handle(L, idx);
    if (!h)
        repl_raise(L, "expected a node, got a %s", luaL_typename(L, idx));
    if (!h->node || h->generation != repl_of(L)->graph_generation)
        repl_raise(L, "this node no longer exists (the entry that made it failed and was rolled back, "
                      "or :reset dropped the graph)");
    return h;
}

int repl_handle_output(lua_State *L, int idx, tide_output *out)
{
    node_handle *h = test_handle(L, idx);
    if (!h)
        return 0;
    if (!h->node || h->generation != repl_of(L)->graph_generation)
        return -1;
    *out = (tide_output){h->node, h->index};
    return 1;
}

tide_output repl_check_output(lua_State *L, int idx)
{
    node_handle *h = check_live(L, idx);
    return (tide_output){h->node, h->index};
}

/* The cache key of an output: the node's address offset by index + 1 (index >= -1 and far smaller
 * than a node struct, so keys of different outputs or nodes never collide). */
static void push_key(lua_State *L, tide_output out)
{
    lua_pushlightuserdata(L, (char *)out.node + (out.index + 1));
}

void repl_push_output(lua_State *L, tide_output out, bool auto_named)
{
    lua_getfield(L, LUA_REGISTRYINDEX, HANDLES_KEY);
    push_key(L, out);
    if (lua_rawget(L, -2) == LUA_TUSERDATA) {
        node_handle *h = lua_touserdata(L, -1);
        if (h->node == out.node && h->index == out.index && h->generation == repl_of(L)->graph_generation) {
            lua_remove(L, -2);
            return;
        }
    }
    lua_pop(L, 1);
    node_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    *h = (node_handle){out.node, out.index, tide_node_id(out.node), repl_of(L)->graph_generation, auto_named};
    luaL_setmetatable(L, NODE_MT);
    push_key(L, out);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
    lua_remove(L, -2);
}

void repl_kill_handles(lua_State *L, int first)
{
    lua_getfield(L, LUA_REGISTRYINDEX, HANDLES_KEY);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        node_handle *h = lua_touserdata(L, -1);
        if (h && (first < 0 || h->id >= first))
            h->node = NULL;
        lua_pop(L, 1);
    }
    if (first < 0) { /* a fresh table: the old keys are addresses that may be reused */
        lua_pop(L, 1);
        lua_newtable(L);
        lua_setfield(L, LUA_REGISTRYINDEX, REUSE_KEY);
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "v");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_setfield(L, LUA_REGISTRYINDEX, HANDLES_KEY);
        return;
    }
    lua_pop(L, 1);
}

static bool name_is_free_identifier(const char *name)
{
    if (!name[0] || strlen(name) > 200)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return false;
    return true;
}

/* Renames `node` to scope prefix + name, and every node created by this entry under "old/" to
 * "prefix name/...". Best effort: stops quietly at the first conflict. */
void repl_name_after_variable(lua_State *L, int idx, const char *name)
{
    repl *r = repl_of(L);
    node_handle *h = test_handle(L, idx);
    if (!h || !h->node || !h->auto_named || h->generation != r->graph_generation || h->id < r->first_node ||
        tide_node_num_outputs(h->node) > 1 || !name_is_free_identifier(name))
        return;
    const char *old = tide_node_name(h->node);
    const char *slash = strrchr(old, '/');
    size_t prefix_len = slash ? (size_t)(slash - old + 1) : 0;
    size_t old_len = strlen(old);
    char *old_copy = strdup(old), *wanted = malloc(prefix_len + strlen(name) + 1);
    if (!old_copy || !wanted)
        goto out;
    memcpy(wanted, old, prefix_len);
    strcpy(wanted + prefix_len, name);
    if (tide_graph_node(r->graph, wanted) || tide_graph_rename_node(r->graph, h->node, wanted, NULL) != TIDE_OK)
        goto out;
    h->auto_named = false;
    int n = tide_graph_num_nodes(r->graph);
    for (int i = r->first_node; i < n; i++) { /* the nodes under the old name's scope ("variable/init") */
        tide_node *c = tide_graph_node_at(r->graph, i);
        const char *cn = tide_node_name(c);
        if (strncmp(cn, old_copy, old_len) != 0 || cn[old_len] != '/')
            continue;
        char *renamed = malloc(strlen(wanted) + strlen(cn + old_len) + 1);
        if (!renamed)
            break;
        strcpy(renamed, wanted);
        strcat(renamed, cn + old_len);
        tide_status st = tide_graph_rename_node(r->graph, c, renamed, NULL);
        free(renamed);
        if (st != TIDE_OK)
            break;
    }
out:
    free(old_copy);
    free(wanted);
}

/* ---------------------------------------------------------------- building nodes */

/* Pushes the handles of every output of a new node (or the node itself). */
static int push_outputs(lua_State *L, tide_node *n, bool auto_named)
{
    int k = tide_node_num_outputs(n);
    if (k == 0) {
        repl_push_output(L, (tide_output){n, -1}, auto_named);
        return 1;
    }
    luaL_checkstack(L, k, "too many outputs");
    for (int i = 0; i < k; i++)
        repl_push_output(L, (tide_output){n, i}, auto_named);
    return k;
}

/* ---------------------------------------------------------------- reusing identical nodes
 *
 * A loop that writes x * 2 or run({train, summary("loss", loss)}) would add a Const or a summary
 * node at every step. An unnamed Const (of at most REUSE_MAX_ELEMENTS elements) or summary that is
 * identical to an earlier one (same op, value or input and tag, scope and default device) reuses it
 * instead, as long as the earlier one is still unnamed (a node named after a global stays its own) and
 * was not built inside a cond or a loop (tied to its branch or iteration: remember_node).
 * The fingerprints map to handles in the registry table REUSE_KEY (emptied by :reset; a handle
 * whose node was rolled back is dead and ignored).
 */

/* Adds the parts every fingerprint has: the op, the scope new nodes get, the default device. */
static void fingerprint_start(lua_State *L, luaL_Buffer *b, const char *op)
{
    repl *r = repl_of(L);
    char *probe = tide_graph_unique_name(r->graph, "x");
    const char *slash = probe ? strrchr(probe, '/') : NULL;
    luaL_buffinit(L, b);
    luaL_addstring(b, op);
    luaL_addchar(b, '\0');
    if (slash)
        luaL_addlstring(b, probe, (size_t)(slash - probe));
    free(probe);
    luaL_addchar(b, '\0');
    luaL_addstring(b, r->default_device ? r->default_device : "");
    luaL_addchar(b, '\0');
}

/* Pushes the fingerprint of a Const holding t, or returns false (not reused: too large, strings). */
static bool push_const_fingerprint(lua_State *L, const tide_tensor *t)
{
    if (tide_tensor_num_elements(t) > REUSE_MAX_ELEMENTS || tide_tensor_dtype(t) == TIDE_STRING)
        return false;
    luaL_Buffer b;
    char shape[TIDE_SHAPE_STR_MAX];
    fingerprint_start(L, &b, "Const");
    luaL_addstring(&b, tide_dtype_name(tide_tensor_dtype(t)));
    luaL_addstring(&b, tide_shape_format(tide_tensor_shape(t), shape, sizeof shape));
    luaL_addlstring(&b, tide_tensor_data(t), tide_tensor_byte_size(t));
    luaL_pushresult(&b);
    return true;
}

/* Pushes the fingerprint of summary op `op` of input `in` with attr tag (the only attr given). */
static void push_summary_fingerprint(lua_State *L, const char *op, tide_output in, const char *tag)
{
    luaL_Buffer b;
    fingerprint_start(L, &b, op);
    lua_pushfstring(L, "%d:%d", tide_node_id(in.node), in.index);
    luaL_addvalue(&b);
    luaL_addchar(&b, '\0');
    luaL_addstring(&b, tag);
    luaL_pushresult(&b);
}

/* The live, still unnamed node remembered under the fingerprint at the top (popped), or NULL. */
static tide_node *reusable_node(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, REUSE_KEY);
    lua_insert(L, -2);
    lua_rawget(L, -2);
    node_handle *h = test_handle(L, -1);
    tide_node *n = h && h->node && h->generation == repl_of(L)->graph_generation && h->auto_named ? h->node : NULL;
    lua_pop(L, 2);
    return n;
}

/* Remembers n under the fingerprint at the top (popped) when n is what the fingerprint says: a node
 * built inside a cond or loop is tied to its branch or iteration by a control input (a constant) or
 * reads its input through a Switch or Enter (in: the input asked for), so it is never reused. */
static void remember_node(lua_State *L, tide_node *n, const tide_output *in)
{
    bool rewired = in && (tide_node_num_inputs(n) != 1 || tide_node_input(n, 0).node != in->node ||
                          tide_node_input(n, 0).index != in->index);
    if (tide_node_num_control_inputs(n) > 0 || rewired) {
        lua_pop(L, 1);
        return;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, REUSE_KEY);
    lua_insert(L, -2);
    repl_push_output(L, (tide_output){n, tide_node_num_outputs(n) ? 0 : -1}, true);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* A Const node holding t (consumed), or an identical unnamed one made earlier. NULL node with err set
 * on failure. */
static tide_node *make_const(lua_State *L, tide_tensor *t, tide_error *err)
{
    repl *r = repl_of(L);
    bool keyed = push_const_fingerprint(L, t);
    if (keyed) {
        lua_pushvalue(L, -1);
        tide_node *old = reusable_node(L);
        if (old) {
            lua_pop(L, 1);
            tide_tensor_release(t);
            return old;
        }
    }
    tide_node_builder *b = tide_node_builder_new(r->graph, "Const", NULL);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(t));
    tide_tensor_release(t);
    tide_node *n = tide_node_builder_finish(b, err);
    if (keyed && n)
        remember_node(L, n, NULL);
    else if (keyed)
        lua_pop(L, 1);
    return n;
}

/* The Lua value at idx as one input: a handle's output, or a new Const of dtype dt (INVALID: inferred). */
static bool to_input(lua_State *L, int idx, tide_dtype dt, tide_output *out, tide_error *err)
{
    node_handle *h = test_handle(L, idx);
    if (h) {
        if (!h->node || h->generation != repl_of(L)->graph_generation) {
            tide_error_set(err, TIDE_FAILED_PRECONDITION, "this node no longer exists (rolled back or :reset)");
            return false;
        }
        if (h->index < 0) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "node '%s' (%s) has no outputs to use as an input",
                           tide_node_name(h->node), tide_node_op(h->node));
            return false;
        }
        *out = (tide_output){h->node, h->index};
        return true;
    }
    tide_tensor *t = repl_tensor_from_lua(L, idx, dt, err);
    if (!t)
        return false;
    tide_node *c = make_const(L, t, err);
    *out = (tide_output){c, 0};
    return c != NULL;
}

/* The dtype a Lua value would have as an input, without building anything (INVALID: not yet known). */
static tide_dtype value_dtype(lua_State *L, int idx)
{
    node_handle *h = test_handle(L, idx);
    if (h)
        return h->node && h->index >= 0 ? tide_node_output_dtype(h->node, h->index) : TIDE_INVALID_DTYPE;
    tide_tensor *t = repl_to_tensor(L, idx);
    return t ? tide_tensor_dtype(t) : TIDE_INVALID_DTYPE;
}


static bool is_empty_table(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        return false;
    lua_pushnil(L);
    if (!lua_next(L, idx))
        return true;
    lua_pop(L, 2);
    return false;
}

typedef struct type_binding {
    const char *attr;
    tide_dtype dtype;
} type_binding;

static tide_dtype bound_type(const type_binding *b, int n, const char *attr)
{
    for (int i = 0; attr && i < n; i++)
        if (strcmp(b[i].attr, attr) == 0)
            return b[i].dtype;
    return TIDE_INVALID_DTYPE;
}

static void bind_type(type_binding *b, int *n, const char *attr, tide_dtype dt)
{
    if (attr && dt != TIDE_INVALID_DTYPE && bound_type(b, *n, attr) == TIDE_INVALID_DTYPE && *n < 2 * MAX_ARGS)
        b[(*n)++] = (type_binding){attr, dt};
}

/* Sets attr `name` of the op from the Lua value at idx, converted to the declared type. */
static bool set_attr(lua_State *L, const tide_op_attr_info *a, int idx, tide_attrs *attrs, tide_error *err)
{
    int t = lua_type(L, idx);
    switch (a->type) {
    case TIDE_ATTR_INT:
        if (!lua_isinteger(L, idx) && !(t == LUA_TNUMBER && lua_tonumber(L, idx) == (double)(int64_t)lua_tonumber(L, idx)))
            break;
        tide_attrs_set_int(attrs, a->name, lua_isinteger(L, idx) ? lua_tointeger(L, idx) : (int64_t)lua_tonumber(L, idx));
        return true;
    case TIDE_ATTR_FLOAT:
        if (t != LUA_TNUMBER)
            break;
        tide_attrs_set_float(attrs, a->name, lua_tonumber(L, idx));
        return true;
    case TIDE_ATTR_BOOL:
        if (t != LUA_TBOOLEAN)
            break;
        tide_attrs_set_bool(attrs, a->name, lua_toboolean(L, idx));
        return true;
    case TIDE_ATTR_STRING:
        if (t != LUA_TSTRING)
            break;
        tide_attrs_set_string(attrs, a->name, lua_tostring(L, idx));
        return true;
    case TIDE_ATTR_TYPE: {
        tide_dtype dt = repl_to_dtype(L, idx);
        if (dt == TIDE_INVALID_DTYPE)
            break;
        tide_attrs_set_type(attrs, a->name, dt);
        return true;
    }
    case TIDE_ATTR_SHAPE: {
        tide_shape s;
        if (!repl_to_shape(L, idx, &s, err))
            return false;
        tide_attrs_set_shape(attrs, a->name, &s);
        return true;
    }
    case TIDE_ATTR_TENSOR: {
        tide_tensor *v = repl_tensor_from_lua(L, idx, TIDE_INVALID_DTYPE, err);
        if (!v)
            return false;
        tide_attrs_set_tensor(attrs, a->name, v);
        tide_tensor_release(v);
        return true;
    }
    case TIDE_ATTR_INT_LIST:
    case TIDE_ATTR_FLOAT_LIST:
    case TIDE_ATTR_TYPE_LIST: {
        if (t != LUA_TTABLE)
            break;
        int n = (int)lua_rawlen(L, idx);
        if (n > 64) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s': a list of at most 64 values", a->name);
            return false;
        }
        int64_t iv[64];
        double fv[64];
        tide_dtype tv[64];
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            bool ok = a->type == TIDE_ATTR_INT_LIST    ? lua_isinteger(L, -1)
                      : a->type == TIDE_ATTR_FLOAT_LIST ? lua_type(L, -1) == LUA_TNUMBER
                                                        : repl_to_dtype(L, -1) != TIDE_INVALID_DTYPE;
            if (ok) {
                iv[i] = lua_tointeger(L, -1);
                fv[i] = lua_tonumber(L, -1);
                tv[i] = a->type == TIDE_ATTR_TYPE_LIST ? repl_to_dtype(L, -1) : TIDE_INVALID_DTYPE;
            }
            lua_pop(L, 1);
            if (!ok) {
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s': element %d has the wrong type", a->name, i + 1);
                return false;
            }
        }
        if (a->type == TIDE_ATTR_INT_LIST)
            tide_attrs_set_int_list(attrs, a->name, iv, n);
        else if (a->type == TIDE_ATTR_FLOAT_LIST)
            tide_attrs_set_float_list(attrs, a->name, fv, n);
        else
            tide_attrs_set_type_list(attrs, a->name, tv, n);
        return true;
    }
    case TIDE_ATTR_STRING_LIST: { /* ReadRecords' filenames */
        if (t != LUA_TTABLE)
            break;
        int n = (int)lua_rawlen(L, idx);
        if (n > 64) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s': a list of at most 64 strings", a->name);
            return false;
        }
        const char *sv[64];
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            sv[i] = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL; /* the table keeps it alive */
            lua_pop(L, 1);
            if (!sv[i]) {
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s': element %d is not a string", a->name, i + 1);
                return false;
            }
        }
        tide_attrs_set_string_list(attrs, a->name, sv, n);
        return true;
    }
    default:
        break;
    }
    static const char *const wanted[] = {"?", "an integer", "a number", "a boolean", "a string", "a dtype",
                                         "a shape", "a tensor", "a list of integers", "a list of numbers",
                                         "a list of dtypes"};
    tide_error_set(err, TIDE_INVALID_ARGUMENT, "attr '%s' must be %s, not a %s", a->name,
                   a->type <= TIDE_ATTR_TYPE_LIST ? wanted[a->type]
                   : a->type == TIDE_ATTR_STRING_LIST ? "a list of strings" : "?", lua_typename(L, t));
    return false;
}

/* Reads the attrs table at idx into the builder's attrs; name/device go to *name / *device. */
static bool read_attrs(lua_State *L, const tide_op_info *info, int idx, tide_attrs *attrs, const char **name,
                       const char **device, tide_error *err)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: the attrs table mixes positional values with named ones",
                           info->name);
            return false;
        }
        const char *key = lua_tostring(L, -2);
        bool ok = true;
        if (strcmp(key, "name") == 0 || strcmp(key, "device") == 0) {
            if (lua_type(L, -1) != LUA_TSTRING) {
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: '%s' must be a string", info->name, key);
                ok = false;
            } else
                *(key[0] == 'n' ? name : device) = lua_tostring(L, -1); /* kept alive by the table */
        } else {
            const tide_op_attr_info *a = NULL;
            for (int i = 0; i < info->num_attrs; i++)
                if (strcmp(info->attrs[i].name, key) == 0)
                    a = &info->attrs[i];
            if (!a) {
                char known[512] = "";
                for (int i = 0; i < info->num_attrs; i++)
                    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", info->attrs[i].name);
                tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s has no attr '%s' (attrs: %s%sname, device)", info->name,
                               key, known, known[0] ? ", " : "");
                ok = false;
            } else
                ok = set_attr(L, a, lua_gettop(L), attrs, err);
        }
        lua_pop(L, 1);
        if (!ok) {
            lua_pop(L, 1);
            return false;
        }
    }
    return true;
}

static void describe_inputs(const tide_op_info *info, char *buf, size_t size)
{
    buf[0] = 0;
    for (int i = 0; i < info->num_inputs; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s%s", i ? ", " : "", info->inputs[i].name,
                 info->inputs[i].number_attr ? "={...}" : "");
}

/* Collects the inputs of op `info` from the Lua values at first..first+n-1 (flat, with group sizes in
 * counts): into ins as node outputs (Lua values become Const nodes), or, for an eager call (ins NULL),
 * into tensors as new references (*num of them made, also on failure: the caller releases them). */
static bool collect_inputs(lua_State *L, const tide_op_info *info, int first, tide_attrs *attrs, tide_output *ins,
                           tide_tensor **tensors, int *counts, int *num, tide_error *err)
{
    type_binding types[2 * MAX_ARGS];
    int ntypes = 0;
    for (int i = 0; i < info->num_attrs; i++) { /* dtypes given as attrs bind first */
        tide_dtype dt;
        if (info->attrs[i].type == TIDE_ATTR_TYPE && tide_attrs_get_type(attrs, info->attrs[i].name, &dt))
            bind_type(types, &ntypes, info->attrs[i].name, dt);
    }
    for (int i = 0; i < info->num_inputs; i++) { /* then the dtypes of nodes and host tensors */
        int idx = first + i;
        if (info->inputs[i].number_attr && lua_type(L, idx) == LUA_TTABLE && !test_handle(L, idx)) {
            int n = (int)lua_rawlen(L, idx);
            for (int k = 1; k <= n; k++) {
                lua_rawgeti(L, idx, k);
                bind_type(types, &ntypes, info->inputs[i].type_attr, value_dtype(L, -1));
                lua_pop(L, 1);
            }
        } else
            bind_type(types, &ntypes, info->inputs[i].type_attr, value_dtype(L, idx));
    }
    *num = 0;
    for (int i = 0; i < info->num_inputs; i++) {
        int idx = first + i;
        const tide_op_arg_info *a = &info->inputs[i];
        tide_dtype want = a->dtype != TIDE_INVALID_DTYPE ? a->dtype : bound_type(types, ntypes, a->type_attr);
        bool list = a->number_attr && lua_type(L, idx) == LUA_TTABLE && !test_handle(L, idx) && !repl_to_tensor(L, idx) &&
                    !repl_is_options_table(L, idx);
        int n = list ? (int)lua_rawlen(L, idx) : 1;
        if (*num + n > 256) {
            tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: more than 256 inputs", info->name);
            return false;
        }
        counts[i] = n;
        for (int k = 0; k < n; k++) {
            if (list)
                lua_rawgeti(L, idx, k + 1);
            int value = list ? lua_gettop(L) : idx;
            bool ok;
            tide_dtype got = TIDE_INVALID_DTYPE;
            if (ins) {
                ok = to_input(L, value, want, &ins[*num], err);
                got = ok ? tide_node_output_dtype(ins[*num].node, ins[*num].index) : got;
            } else {
                ok = (tensors[*num] = repl_tensor_from_lua(L, value, want, err)) != NULL;
                got = ok ? tide_tensor_dtype(tensors[*num]) : got;
            }
            if (list)
                lua_pop(L, 1);
            if (!ok) {
                char msg[600];
                snprintf(msg, sizeof msg, "%s", tide_error_message(err));
                tide_error_set(err, tide_error_code(err), "%s: input '%s'%s: %s", info->name, a->name,
                               list ? " (a list)" : "", msg);
                return false;
            }
            if (want == TIDE_INVALID_DTYPE) { /* the first inferred value fixes T for the rest */
                want = got;
                bind_type(types, &ntypes, a->type_attr, want);
            }
            (*num)++;
        }
    }
    return true;
}

/* Whether an op function call runs eagerly: no input is a node and one at least is a host tensor
 * (log(t), matmul(t, u), t + 1), as PyTorch computes at once. Numbers and tables alone make nodes
 * (matmul({{1}}, {{2}}) is a graph), and so does any node among the inputs. */
static bool is_eager_call(lua_State *L, const tide_op_info *info, int first)
{
    bool tensor = false;
    for (int i = 0; i < info->num_inputs; i++) {
        int idx = first + i;
        bool list = info->inputs[i].number_attr && lua_type(L, idx) == LUA_TTABLE && !repl_is_options_table(L, idx);
        int n = list ? (int)lua_rawlen(L, idx) : 1;
        for (int k = 1; k <= n; k++) {
            if (list)
                lua_rawgeti(L, idx, k);
            int v = list ? lua_gettop(L) : idx;
            bool node = test_handle(L, v) != NULL;
            tensor = tensor || repl_to_tensor(L, v) != NULL;
            if (list)
                lua_pop(L, 1);
            if (node)
                return false;
        }
    }
    return tensor;
}

/* Runs op `info` eagerly on the tensors and pushes its outputs as host tensors, or raises with err's
 * message. Releases the tensors, frees attrs and err. (name and device have no meaning there: no node
 * is made, and eager ops run on the engine's first CPU device.) */
static int finish_eager(lua_State *L, const tide_op_info *info, tide_tensor **ins, int num, tide_attrs *attrs,
                        bool ok, tide_error *err)
{
    tide_tensor *outs[MAX_ARGS] = {NULL};
    int produced = 0;
    if (ok)
        ok = tide_engine_run_op(repl_of(L)->engine, info->name, ins, num, attrs, outs, MAX_ARGS, &produced, err) ==
             TIDE_OK;
    tide_attrs_free(attrs);
    for (int i = 0; i < num; i++)
        tide_tensor_release(ins[i]);
    if (!ok) {
        for (int i = 0; i < produced; i++)
            tide_tensor_release(outs[i]);
        lua_pushstring(L, tide_error_message(err));
        tide_error_free(err);
        return repl_raise(L, "%s", lua_tostring(L, -1));
    }
    tide_error_free(err);
    luaL_checkstack(L, produced, "too many outputs");
    for (int i = 0; i < produced; i++)
        repl_push_tensor(L, outs[i]);
    return produced;
}

/* Builds one node of op `op_name` from the Lua arguments first..first+nargs-1 and pushes its handles
 * (or, for an eager call on host tensors, runs it and pushes the resulting tensors). Raises a Lua
 * error on failure (after releasing everything). */
static int build_op(lua_State *L, const char *op_name, int first, int nargs)
{
    tide_op_info info;
    if (!tide_registry_op_info(op_name, &info))
        return repl_raise(L, "unknown op '%s'", op_name);
    repl *r = repl_of(L);
    int attrs_idx = 0;
    if (nargs > 0 && repl_is_options_table(L, first + nargs - 1))
        attrs_idx = first + --nargs;
    else if (nargs == info.num_inputs + 1 && lua_type(L, first + nargs - 1) == LUA_TTABLE)
        attrs_idx = first + --nargs; /* an empty or positional table in the attrs position */
    if (nargs != info.num_inputs) {
        char sig[400];
        describe_inputs(&info, sig, sizeof sig);
        return repl_raise(L, "%s takes %d input%s (%s) and an optional table of attrs; got %d argument%s", info.name,
                          info.num_inputs, info.num_inputs == 1 ? "" : "s", sig, nargs, nargs == 1 ? "" : "s");
    }
    tide_error *err = tide_error_new();
    tide_attrs *attrs = tide_attrs_new();
    const char *name = NULL, *device = NULL;
    tide_output ins[256];
    int counts[MAX_ARGS], num = 0;
    if (is_eager_call(L, &info, first)) {
        tide_tensor *tensors[256];
        bool ok = (!attrs_idx || read_attrs(L, &info, attrs_idx, attrs, &name, &device, err)) &&
                  collect_inputs(L, &info, first, attrs, NULL, tensors, counts, &num, err);
        return finish_eager(L, &info, tensors, num, attrs, ok, err);
    }
    bool ok = (!attrs_idx || read_attrs(L, &info, attrs_idx, attrs, &name, &device, err)) &&
              collect_inputs(L, &info, first, attrs, ins, NULL, counts, &num, err);
    tide_node *n = NULL;
    const char *tag = NULL;
    size_t op_len = strlen(info.name);
    bool summary = ok && !name && !device && num == 1 && op_len > 7 &&
                   strcmp(info.name + op_len - 7, "Summary") == 0 && tide_attrs_count(attrs) == 1 &&
                   tide_attrs_get_string(attrs, "tag", &tag);
    if (summary) { /* summary("loss", loss) inside a loop: one node */
        push_summary_fingerprint(L, info.name, ins[0], tag);
        lua_pushvalue(L, -1);
        tide_node *old = reusable_node(L);
        if (old) {
            lua_pop(L, 1);
            tide_attrs_free(attrs);
            tide_error_free(err);
            return push_outputs(L, old, true);
        }
    }
    if (ok) {
        tide_node_builder *b = tide_node_builder_new(r->graph, info.name, name);
        int at = 0;
        for (int i = 0; i < info.num_inputs; i++) {
            if (info.inputs[i].number_attr)
                tide_node_builder_add_input_list(b, ins + at, counts[i]);
            else
                tide_node_builder_add_input(b, ins[at]);
            at += counts[i];
        }
        tide_attrs_merge(tide_node_builder_attrs(b), attrs);
        if (device)
            tide_node_builder_set_device(b, device);
        n = tide_node_builder_finish(b, err);
    }
    tide_attrs_free(attrs);
    if (summary && n)
        remember_node(L, n, &ins[0]);
    else if (summary)
        lua_pop(L, 1);
    if (!n) {
        lua_pushstring(L, tide_error_message(err));
        tide_error_free(err);
        return repl_raise(L, "%s", lua_tostring(L, -1));
    }
    tide_error_free(err);
    return push_outputs(L, n, name == NULL);
}

static int op_function(lua_State *L)
{
    return build_op(L, lua_tostring(L, lua_upvalueindex(1)), 1, lua_gettop(L));
}

int repl_arith(lua_State *L, const char *op, int nargs)
{
    return build_op(L, op, 1, nargs); /* a node among the operands: a node; host values: eager */
}

/* ---------------------------------------------------------------- node methods */

static int node_tostring(lua_State *L)
{
    node_handle *h = test_handle(L, 1);
    if (!h || !h->node || h->generation != repl_of(L)->graph_generation) {
        lua_pushliteral(L, "<dead node>");
        return 1;
    }
    const char *dev = tide_node_assigned_device(h->node);
    if (!dev || !dev[0])
        dev = tide_node_requested_device(h->node);
    char dev_buf[256];
    dev = tide_device_short_name(dev, dev_buf, sizeof dev_buf);
    if (h->index < 0) {
        lua_pushfstring(L, "node %s (%s, no outputs)%s%s", tide_node_name(h->node), tide_node_op(h->node),
                        dev[0] ? " on " : "", dev);
        return 1;
    }
    char shape[TIDE_SHAPE_STR_MAX];
    tide_shape s = tide_node_output_shape(h->node, h->index);
    tide_shape_format(&s, shape, sizeof shape);
    const char *name = tide_node_name(h->node);
    if (tide_node_num_outputs(h->node) > 1)
        lua_pushfstring(L, "node %s:%d (%s) %s %s%s%s", name, h->index, tide_node_op(h->node),
                        tide_dtype_name(tide_node_output_dtype(h->node, h->index)), shape, dev[0] ? " on " : "", dev);
    else
        lua_pushfstring(L, "node %s (%s) %s %s%s%s", name, tide_node_op(h->node),
                        tide_dtype_name(tide_node_output_dtype(h->node, h->index)), shape, dev[0] ? " on " : "", dev);
    return 1;
}

static int node_name(lua_State *L)
{
    node_handle *h = check_live(L, 1);
    if (h->index > 0)
        lua_pushfstring(L, "%s:%d", tide_node_name(h->node), h->index);
    else
        lua_pushstring(L, tide_node_name(h->node));
    return 1;
}

static int node_op(lua_State *L)
{
    lua_pushstring(L, tide_node_op(check_live(L, 1)->node));
    return 1;
}

static int node_shape(lua_State *L)
{
    node_handle *h = check_live(L, 1);
    if (h->index < 0)
        return repl_raise(L, "node '%s' has no outputs, so no shape", tide_node_name(h->node));
    tide_shape s = tide_node_output_shape(h->node, h->index);
    if (s.rank < 0) {
        lua_pushnil(L); /* unknown rank */
        return 1;
    }
    lua_createtable(L, s.rank, 0);
    for (int i = 0; i < s.rank; i++) {
        lua_pushinteger(L, s.dims[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int node_dtype(lua_State *L)
{
    node_handle *h = check_live(L, 1);
    if (h->index < 0)
        return repl_raise(L, "node '%s' has no outputs, so no dtype", tide_node_name(h->node));
    repl_push_dtype(L, tide_node_output_dtype(h->node, h->index));
    return 1;
}

static int node_device(lua_State *L)
{
    node_handle *h = check_live(L, 1);
    const char *dev = tide_node_assigned_device(h->node);
    lua_pushstring(L, dev && dev[0] ? dev : tide_node_requested_device(h->node));
    return 1;
}

static int node_inputs(lua_State *L)
{
    node_handle *h = check_live(L, 1);
    int n = tide_node_num_inputs(h->node);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        repl_push_output(L, tide_node_input(h->node, i), false);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int node_eval(lua_State *L)
{
    check_live(L, 1);
    return repl_run(L, repl_of(L)->session, 1);
}

static int node_index_fn(lua_State *L)
{
    luaL_getmetafield(L, 1, "methods");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

/* ---------------------------------------------------------------- structure */

static int l_node(lua_State *L)
{
    tide_output o;
    const char *name = luaL_checkstring(L, 1);
    repl *r = repl_of(L);
    tide_node *n = tide_graph_node(r->graph, name);
    if (n && tide_node_num_outputs(n) == 0) {
        repl_push_output(L, (tide_output){n, -1}, false);
        return 1;
    }
    if (tide_graph_output(r->graph, name, &o, r->err) != TIDE_OK)
        return repl_raise(L, "%s", tide_error_message(r->err));
    repl_push_output(L, o, false);
    return 1;
}

/* scope(name, fn) / device(spec, fn): fn runs with the scope or default device pushed. */
static int with_pushed(lua_State *L, bool is_device)
{
    repl *r = repl_of(L);
    const char *what = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (r->scope_depth >= REPL_MAX_SCOPE_DEPTH)
        return repl_raise(L, "%s() nested more than %d deep", is_device ? "device" : "scope", REPL_MAX_SCOPE_DEPTH);
    if (is_device) {
        tide_device_spec spec;
        if (tide_device_spec_parse(what, &spec, r->err) != TIDE_OK)
            return repl_raise(L, "%s", tide_error_message(r->err));
        tide_graph_push_device(r->graph, what);
    } else {
        if (!what[0] || strchr(what, '/'))
            return repl_raise(L, "bad scope name '%s': one non-empty name without '/'", what);
        tide_graph_push_scope(r->graph, what);
    }
    lua_pushvalue(L, 2);
    r->scope_depth++;
    const char *outer_device = r->default_device;
    if (is_device)
        r->default_device = what; /* the string stays on the stack until fn returns */
    int st = lua_pcall(L, 0, LUA_MULTRET, 0);
    r->default_device = outer_device;
    r->scope_depth--;
    if (is_device)
        tide_graph_pop_device(r->graph);
    else
        tide_graph_pop_scope(r->graph);
    if (st != LUA_OK)
        return lua_error(L);
    return lua_gettop(L) - 2;
}

static int l_scope(lua_State *L) { return with_pushed(L, false); }
static int l_device(lua_State *L) { return with_pushed(L, true); }

/* The string option `key` of the options table at opt (NULL when absent); raises when not a string. */
static const char *string_option(lua_State *L, int opt, const char *key, const char *fn)
{
    if (lua_type(L, opt) != LUA_TTABLE)
        return NULL;
    lua_getfield(L, opt, key);
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
        repl_raise(L, "%s: option %s must be a string, not a %s", fn, key, luaL_typename(L, -1));
    const char *v = lua_tostring(L, -1); /* the table keeps it alive */
    lua_pop(L, 1);
    return v;
}

/* A node of op with attrs `dtype` and, for a Const, `value` (consumed) or, for a Placeholder, `shape`. */
static int finish_structural(lua_State *L, tide_node_builder *b, const char *device, bool auto_named)
{
    repl *r = repl_of(L);
    if (device)
        tide_node_builder_set_device(b, device);
    tide_node *n = tide_node_builder_finish(b, r->err);
    if (!n)
        return repl_raise(L, "%s", tide_error_message(r->err));
    return push_outputs(L, n, auto_named);
}

static int l_placeholder(lua_State *L)
{
    /* placeholder(dtype [, shape] [, {name=, device=}]) */
    static const char *const options[] = {"name", "device", NULL};
    tide_dtype dt = repl_to_dtype(L, 1);
    if (dt == TIDE_INVALID_DTYPE)
        return repl_raise(L, "placeholder(dtype [, shape] [, {name=...}]): the first argument must be a dtype "
                             "such as float32, not a %s", luaL_typename(L, 1));
    repl *r = repl_of(L);
    tide_shape shape = tide_shape_unknown();
    int opt = 2;
    if (is_empty_table(L, 2))
        return repl_raise(L, "placeholder: the shape {} is ambiguous: Lua reads {nil, nil} as {} (it drops "
                             "nils at the end of a table). Write unknown dimensions as -1 or \"?\" ({-1, -1}, "
                             "{\"?\", 784}, or the string \"[?, ?]\"), and a scalar as \"[]\"");
    if (!lua_isnoneornil(L, 2) && !repl_is_options_table(L, 2)) {
        if (!repl_to_shape(L, 2, &shape, r->err))
            return repl_raise(L, "placeholder: %s", tide_error_message(r->err));
        opt = 3;
    } else if (lua_isnil(L, 2))
        opt = 3;
    repl_check_options(L, opt, "placeholder", options);
    const char *name = string_option(L, opt, "name", "placeholder");
    const char *device = string_option(L, opt, "device", "placeholder");
    tide_node_builder *b = tide_node_builder_new(r->graph, "Placeholder", name);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", dt);
    tide_attrs_set_shape(tide_node_builder_attrs(b), "shape", &shape);
    return finish_structural(L, b, device, name == NULL);
}

/* The value of constant(value, dtype, {shape=}) given a shape, as TensorFlow's tf.constant fills it:
 * one value is repeated over the shape, as many values as the shape holds are reshaped to it.
 * Consumes t; NULL with err set otherwise. */
static tide_tensor *shaped_constant(repl *r, tide_tensor *t, const tide_shape *shape, tide_error *err)
{
    char want[TIDE_SHAPE_STR_MAX];
    tide_shape_format(shape, want, sizeof want);
    int64_t n = tide_shape_num_elements(shape), have = tide_tensor_num_elements(t);
    tide_tensor *out = NULL;
    if (n < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "option shape %s has unknown dimensions", want);
    } else if (have == n) {
        out = tide_tensor_reshape(t, shape, err);
    } else if (have == 1) {
        tide_tensor *scalar = tide_tensor_reshape(t, &(tide_shape){.rank = 0}, err);
        tide_tensor *dims = scalar ? tide_tensor_new(TIDE_INT64, &(tide_shape){.rank = 1, .dims = {shape->rank}}, err)
                                   : NULL;
        int produced = 0;
        if (dims) {
            memcpy(tide_tensor_data(dims), shape->dims, (size_t)shape->rank * sizeof(int64_t));
            tide_tensor *ins[2] = {dims, scalar};
            tide_engine_run_op(r->engine, "Fill", ins, 2, NULL, &out, 1, &produced, err);
        }
        tide_tensor_release(dims);
        tide_tensor_release(scalar);
    } else {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%lld values cannot fill shape %s: give one value (repeated) "
                       "or %lld", (long long)have, want, (long long)n);
    }
    tide_tensor_release(t);
    return out;
}

static int l_constant(lua_State *L)
{
    /* constant(value [, dtype] [, {name=, device=, shape=}]) */
    static const char *const options[] = {"name", "device", "shape", NULL};
    repl *r = repl_of(L);
    tide_dtype dt = lua_isnoneornil(L, 2) || repl_is_options_table(L, 2) ? TIDE_INVALID_DTYPE : repl_to_dtype(L, 2);
    if (!lua_isnoneornil(L, 2) && !repl_is_options_table(L, 2) && dt == TIDE_INVALID_DTYPE)
        return repl_raise(L, "constant(value [, dtype] [, {name=, shape=}]): the second argument must be a dtype "
                             "such as float32, not a %s", luaL_typename(L, 2));
    int opt = repl_is_options_table(L, 2) ? 2 : 3;
    bool has_options = repl_check_options(L, opt, "constant", options);
    const char *name = string_option(L, opt, "name", "constant");
    const char *device = string_option(L, opt, "device", "constant");
    tide_shape shape;
    bool shaped = has_options && lua_getfield(L, opt, "shape") != LUA_TNIL;
    if (shaped && !repl_to_shape(L, -1, &shape, r->err))
        return repl_raise(L, "constant: option shape: %s", tide_error_message(r->err));
    tide_tensor *t = repl_tensor_from_lua(L, 1, dt, r->err);
    if (t && shaped)
        t = shaped_constant(r, t, &shape, r->err);
    if (!t)
        return repl_raise(L, "constant: %s", tide_error_message(r->err));
    if (!name && !device) { /* constant(0.5) in a loop: one node */
        tide_node *n = make_const(L, t, r->err);
        if (!n)
            return repl_raise(L, "%s", tide_error_message(r->err));
        return push_outputs(L, n, true);
    }
    tide_node_builder *b = tide_node_builder_new(r->graph, "Const", name);
    tide_attrs_set_tensor(tide_node_builder_attrs(b), "value", t);
    tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(t));
    tide_tensor_release(t);
    return finish_structural(L, b, device, name == NULL);
}

/* ---------------------------------------------------------------- registration */

const char *repl_op_of_function(lua_State *L, const char *name)
{
    lua_getfield(L, LUA_REGISTRYINDEX, OPNAMES_KEY);
    lua_getfield(L, -1, name);
    const char *op = lua_tostring(L, -1); /* the string is also interned in the registry table */
    lua_pop(L, 2);
    return op;
}

/* "SparseSoftmaxCrossEntropyWithLogits" -> "sparse_softmax_cross_entropy_with_logits"; "Conv2D" ->
 * "conv2d"; "MatMul" -> "mat_mul". */
static void snake_case(const char *op, char *out, size_t size)
{
    size_t k = 0;
    for (size_t i = 0; op[i] && k + 2 < size; i++) {
        char c = op[i];
        bool upper = c >= 'A' && c <= 'Z';
        if (upper && i > 0) {
            char p = op[i - 1], n = op[i + 1];
            bool prev_lower = p >= 'a' && p <= 'z';
            bool prev_upper = p >= 'A' && p <= 'Z';
            bool next_lower = n >= 'a' && n <= 'z';
            if (prev_lower || (prev_upper && next_lower) || (p >= '0' && p <= '9' && next_lower))
                out[k++] = '_';
        }
        out[k++] = upper ? (char)(c - 'A' + 'a') : c;
    }
    out[k] = 0;
}

/* The name listings show for each op function (completion, :help's suggestions), among its aliases:
 * the op's declared alias, else TensorFlow's spelling (matmul, argmax), else the snake-case one. */
static void prefer_op_names(lua_State *L, int ops, const char *const *names, int n)
{
    static const char *const joined[] = {"matmul", "argmax", "argmin", NULL};
    lua_getfield(L, LUA_REGISTRYINDEX, PREFERRED_KEY);
    for (int i = 0; i < n; i++) {
        tide_op_info info;
        if (names[i][0] == '_' || !tide_registry_op_info(names[i], &info))
            continue;
        char lower[128], snake[160];
        snprintf(lower, sizeof lower, "%s", names[i]);
        for (char *c = lower; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        snake_case(names[i], snake, sizeof snake);
        const char *name = info.alias ? info.alias : snake;
        for (int k = 0; !info.alias && joined[k]; k++)
            if (strcmp(lower, joined[k]) == 0)
                name = lower;
        lua_getfield(L, ops, names[i]);
        lua_pushstring(L, name);
        lua_rawset(L, -3);
    }
    lua_pop(L, 1);
}

const char *repl_preferred_name(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TFUNCTION)
        return NULL;
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, PREFERRED_KEY);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    const char *name = lua_tostring(L, -1); /* the registry table keeps the string */
    lua_pop(L, 2);
    return name;
}

/* tide.prefer_name(fn, name): the prelude's aliases (sum and reduce_sum) list as name. */
static int l_prefer_name(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_checkstring(L, 2);
    lua_getfield(L, LUA_REGISTRYINDEX, PREFERRED_KEY);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_rawset(L, -3);
    return 0;
}

static void register_ops(lua_State *L, int module)
{
    const char *const *names;
    int n = tide_registry_op_names(&names);
    lua_newtable(L); /* tide.ops: CamelCase name -> function */
    int ops = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, OPNAMES_KEY);
    int opnames = lua_gettop(L);
    for (int i = 0; i < n; i++) {
        if (names[i][0] == '_')
            continue; /* internal ops (_Send, _Recv) are made by plans, not typed */
        lua_pushstring(L, names[i]);
        lua_pushcclosure(L, op_function, 1);
        char lower[128], snake[160];
        snprintf(lower, sizeof lower, "%s", names[i]);
        for (char *c = lower; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        snake_case(names[i], snake, sizeof snake);
        const char *aliases[2] = {lower, snake};
        for (int a = 0; a < 2; a++) {
            lua_pushvalue(L, -1);
            lua_setfield(L, module, aliases[a]);
            lua_pushstring(L, names[i]);
            lua_setfield(L, opnames, aliases[a]);
        }
        lua_setfield(L, ops, names[i]);
    }
    /* Declared aliases last: they win over names generated from other ops (`concat` is ConcatV2's,
     * not the legacy Concat's). */
    for (int i = 0; i < n; i++) {
        tide_op_info info;
        if (names[i][0] == '_' || !tide_registry_op_info(names[i], &info) || !info.alias)
            continue;
        lua_getfield(L, ops, names[i]);
        lua_setfield(L, module, info.alias);
        lua_pushstring(L, names[i]);
        lua_setfield(L, opnames, info.alias);
    }
    prefer_op_names(L, ops, names, n);
    lua_pop(L, 1);
    lua_setfield(L, module, "ops");
}

static const luaL_Reg node_methods[] = {
    {"name", node_name},   {"op", node_op},     {"shape", node_shape}, {"dtype", node_dtype},
    {"device", node_device}, {"inputs", node_inputs}, {"eval", node_eval}, {NULL, NULL},
};

#define ARITH(fn, op, n) \
    static int fn(lua_State *L) { return repl_arith(L, op, n); }
ARITH(node_add, "Add", 2)
ARITH(node_sub, "Sub", 2)
ARITH(node_mul, "Mul", 2)
ARITH(node_div, "Div", 2)
ARITH(node_pow, "Pow", 2)
ARITH(node_mod, "FloorMod", 2) /* Lua's % floors */
ARITH(node_unm, "Neg", 1)

static const luaL_Reg node_meta[] = {
    {"__tostring", node_tostring}, {"__index", node_index_fn}, {"__add", node_add}, {"__sub", node_sub},
    {"__mul", node_mul},           {"__div", node_div},        {"__pow", node_pow}, {"__mod", node_mod},
    {"__unm", node_unm},           {NULL, NULL},
};

static const luaL_Reg functions[] = {
    {"node", l_node},     {"scope", l_scope},     {"device", l_device},  {"placeholder", l_placeholder},
    {"constant", l_constant}, {"prefer_name", l_prefer_name}, {NULL, NULL},
};

void repl_open_nodes(lua_State *L)
{
    int module = lua_gettop(L);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, HANDLES_KEY);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, OPNAMES_KEY);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REUSE_KEY);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, PREFERRED_KEY);

    luaL_newmetatable(L, NODE_MT);
    luaL_setfuncs(L, node_meta, 0);
    luaL_newlib(L, node_methods);
    lua_setfield(L, -2, "methods");
    lua_pushliteral(L, "node");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);

    register_ops(L, module);
    lua_pushvalue(L, module);
    luaL_setfuncs(L, functions, 0);
    lua_pop(L, 1);
}

/* ---------------------------------------------------------------- printing values */

/* A growing C string (printing values must not keep Lua buffers across stack use). */
typedef struct text_buf {
    char *data;
    size_t len, cap;
} text_buf;

static void text_add(text_buf *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *grown = realloc(t->data, cap);
        if (!grown)
            return;
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n + 1);
    t->len += n;
}

/* A table as a Lua constructor, nested tables one level deep, at most 20 entries: {2, 3},
 * {loss = 0.5, acc = {...}}. Other values as tostring gives them (strings quoted inside tables). */
static void format_value(lua_State *L, int idx, text_buf *out, int depth)
{
    idx = lua_absindex(L, idx);
    bool has_tostring = luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL;
    if (has_tostring)
        lua_pop(L, 1);
    if (lua_type(L, idx) != LUA_TTABLE || has_tostring || depth > 1) {
        if (lua_type(L, idx) == LUA_TSTRING && depth > 0)
            lua_pushfstring(L, "\"%s\"", lua_tostring(L, idx));
        else if (lua_type(L, idx) == LUA_TTABLE && !has_tostring)
            lua_pushliteral(L, "{...}");
        else
            luaL_tolstring(L, idx, NULL);
        text_add(out, lua_tostring(L, -1));
        lua_pop(L, 1);
        return;
    }
    text_add(out, "{");
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx), shown = 0;
    for (lua_Integer i = 1; i <= n && shown < 20; i++, shown++) {
        text_add(out, i > 1 ? ", " : "");
        lua_rawgeti(L, idx, i);
        format_value(L, -1, out, depth + 1);
        lua_pop(L, 1);
    }
    if (n > 20)
        shown = n;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        bool in_array = lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= n;
        if (!in_array && shown++ < 20) {
            text_add(out, shown > 1 ? ", " : "");
            if (lua_type(L, -2) == LUA_TSTRING) {
                text_add(out, lua_tostring(L, -2));
            } else {
                text_add(out, "[");
                format_value(L, -2, out, 2);
                text_add(out, "]");
            }
            text_add(out, " = ");
            format_value(L, -1, out, depth + 1);
        }
        lua_pop(L, 1);
    }
    text_add(out, shown > 20 ? ", ...}" : "}");
}

static bool is_variable(const tide_node *n)
{
    return strcmp(tide_node_op(n), "Variable") == 0;
}

void repl_print_value(lua_State *L, int idx, FILE *out)
{
    repl *r = repl_of(L);
    node_handle *h = test_handle(L, idx);
    if (h && h->node && h->generation == r->graph_generation && h->index == 0 && is_variable(h->node)) {
        tide_tensor *v = NULL;
        tide_output o = {h->node, 0};
        /* As run() does (lua_run.c): the cancel mark, then the Ctrl-C check, then the read; a Ctrl-C
         * from the mark on stops the entry here, not after the value is printed. */
        tide_run_options ro = {0};
        tide_session_cancel_mark(r->session, &ro);
        repl_check_interrupt(L);
        tide_error *err = tide_error_new();
        tide_status st = tide_session_run(r->session, &ro, NULL, 0, &o, 1, &v, NULL, 0, NULL, err);
        if (r->interrupted) { /* cancelled, or finished as the Ctrl-C came */
            tide_tensor_release(v);
            tide_error_free(err);
            repl_check_interrupt(L);
        }
        if (st == TIDE_OK) {
            char *text = tide_tensor_format(v, 1000, 3);
            luaL_tolstring(L, idx, NULL);
            fprintf(out, "%s =\n%s\n", lua_tostring(L, -1), text ? text : "?");
            lua_pop(L, 1);
            free(text);
            tide_tensor_release(v);
            tide_error_free(err);
            return;
        }
        luaL_tolstring(L, idx, NULL);
        if (strstr(tide_error_message(err), "uninitialized"))
            fprintf(out, "%s (not initialised: run(init()))\n", lua_tostring(L, -1));
        else /* a value of another declaration (:reset)... */
            fprintf(out, "%s (cannot read its value: %s)\n", lua_tostring(L, -1), tide_error_message(err));
        tide_error_free(err);
        lua_pop(L, 1);
        return;
    }
    text_buf text = {0};
    format_value(L, idx, &text, 0);
    fprintf(out, "%s\n", text.data ? text.data : "");
    free(text.data);
}
