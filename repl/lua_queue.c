/* lua_queue.c — queues and input pipelines at the prompt (docs/queues.md, engine/tide_queue.h):
 *
 *   q = queue({dtypes = {float32, int32}, shapes = {{784}, {}}, capacity = 1000, kind = "shuffle",
 *              min_after_dequeue = 200, seed = 7})
 *   enq = enqueue_many(q, {images, labels})
 *   x, y = dequeue_many(q, 100)
 *   coord = coordinator()
 *   queue_runner({enq, enq}, {close = queue_close(q), cancel = queue_close(q, {cancel_pending_enqueues = true})}):start(coord)
 *   ... run(train, ...) until it fails with OUT_OF_RANGE ...
 *   coord:join()
 *
 * Queue ops are nodes as any other; a coordinator ("tide.coordinator") and a queue runner
 * ("tide.queue_runner") are userdata freed by __gc (a runner then stops and joins its threads). A
 * runner's threads run in sessions of their own over the REPL's engine and graph (each holds the
 * graph: :reset does not pull it from under them), so Ctrl-C interrupts the user's run, not them. */
#include <stdlib.h>
#include <string.h>

#include "repl.h"
#include "tide_queue.h"

#define COORD_MT "tide.coordinator"
#define RUNNER_MT "tide.queue_runner"
#define MAX_COMPONENTS 64

static tide_output queue_arg(lua_State *L, int idx, const char *fn)
{
    if (!repl_is_node(L, idx))
        repl_raise(L, "%s: argument %d must be a queue (from queue()), not a %s", fn, idx, luaL_typename(L, idx));
    return repl_check_output(L, idx);
}

static tide_node *finish_or_raise(lua_State *L, tide_node *n, const char *fn)
{
    if (!n)
        repl_raise(L, "%s: %s", fn, tide_error_message(repl_of(L)->err));
    return n;
}

/* ---------------------------------------------------------------- queue ops */

static int table_len_or_raise(lua_State *L, int idx, const char *key)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        repl_raise(L, "queue: %s must be a table (one entry per component), not a %s", key, luaL_typename(L, idx));
    int n = (int)lua_rawlen(L, idx);
    if (n < 1 || n > MAX_COMPONENTS)
        repl_raise(L, "queue: %s must list 1 to %d components", key, MAX_COMPONENTS);
    return n;
}

static int l_queue(lua_State *L)
{
    static const char *const options[] = {"dtypes", "shapes", "capacity", "kind", "min_after_dequeue", "seed",
                                          "shared_name", "container", "name", NULL};
    if (!repl_check_options(L, 1, "queue", options))
        return repl_raise(L, "queue({dtypes = {...} [, shapes=, capacity=, kind='fifo'|'shuffle'|'padding', "
                             "min_after_dequeue=, seed=, shared_name=, container=, name=]})");
    tide_dtype dtypes[MAX_COMPONENTS];
    tide_shape shapes[MAX_COMPONENTS];
    tide_queue_options o = {.dtypes = dtypes};
    lua_getfield(L, 1, "dtypes");
    o.num_components = table_len_or_raise(L, -1, "dtypes");
    for (int i = 0; i < o.num_components; i++) {
        lua_rawgeti(L, -1, i + 1);
        dtypes[i] = repl_to_dtype(L, -1);
        if (dtypes[i] == TIDE_INVALID_DTYPE)
            return repl_raise(L, "queue: dtypes[%d] is not a dtype", i + 1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_getfield(L, 1, "shapes");
    if (!lua_isnil(L, -1)) {
        if (table_len_or_raise(L, -1, "shapes") != o.num_components)
            return repl_raise(L, "queue: shapes lists %d shapes for %d dtypes", (int)lua_rawlen(L, -1), o.num_components);
        for (int i = 0; i < o.num_components; i++) {
            lua_rawgeti(L, -1, i + 1);
            if (lua_type(L, -1) == LUA_TTABLE && lua_rawlen(L, -1) == 0)
                shapes[i] = tide_shape_scalar(); /* {} is a scalar element here: no dims */
            else if (!repl_to_shape(L, lua_gettop(L), &shapes[i], repl_scratch_error(L)))
                return repl_raise(L, "queue: shapes[%d]: %s", i + 1, tide_error_message(repl_of(L)->err));
            lua_pop(L, 1);
        }
        o.shapes = shapes;
    }
    lua_pop(L, 1);
    lua_getfield(L, 1, "kind");
    const char *kind = lua_isnil(L, -1) ? "fifo" : luaL_checkstring(L, -1);
    if (strcmp(kind, "fifo") == 0)
        o.kind = TIDE_QUEUE_FIFO;
    else if (strcmp(kind, "shuffle") == 0)
        o.kind = TIDE_QUEUE_RANDOM_SHUFFLE;
    else if (strcmp(kind, "padding") == 0)
        o.kind = TIDE_QUEUE_PADDING_FIFO;
    else
        return repl_raise(L, "queue: kind must be 'fifo', 'shuffle' or 'padding', not '%s'", kind);
    lua_pop(L, 1);
    const char *ints[3] = {"capacity", "min_after_dequeue", "seed"};
    int64_t *into[3] = {&o.capacity, &o.min_after_dequeue, &o.seed};
    for (int k = 0; k < 3; k++) {
        lua_getfield(L, 1, ints[k]);
        if (!lua_isnil(L, -1)) {
            if (!lua_isinteger(L, -1))
                return repl_raise(L, "queue: %s must be an integer, not a %s", ints[k], luaL_typename(L, -1));
            *into[k] = lua_tointeger(L, -1);
        }
        lua_pop(L, 1);
    }
    const char *strs[3] = {"shared_name", "container", "name"};
    const char **sinto[3] = {&o.shared_name, &o.container, &o.name};
    for (int k = 0; k < 3; k++) {
        lua_getfield(L, 1, strs[k]);
        *sinto[k] = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1); /* the options table keeps it alive */
        lua_pop(L, 1);
    }
    repl *r = repl_of(L);
    tide_error_clear(r->err);
    tide_output q = tide_queue_new(r->graph, &o, r->err);
    finish_or_raise(L, q.node, "queue");
    repl_push_output(L, q, o.name == NULL);
    return 1;
}

/* enqueue(q, values) / enqueue_many(q, values): values is one value or a table of them. */
static int enqueue_impl(lua_State *L, bool many, const char *fn)
{
    tide_output q = queue_arg(L, 1, fn);
    tide_output comps[MAX_COMPONENTS];
    bool single = lua_type(L, 2) != LUA_TTABLE || repl_is_node(L, 2);
    int n = single ? 1 : (int)lua_rawlen(L, 2);
    if (n < 1 || n > MAX_COMPONENTS)
        return repl_raise(L, "%s(q, values): values must be a value or a table of 1 to %d values", fn, MAX_COMPONENTS);
    for (int i = 0; i < n; i++) {
        if (!single)
            lua_rawgeti(L, 2, i + 1);
        int idx = single ? 2 : lua_gettop(L);
        if (!repl_is_node(L, idx))
            return repl_raise(L, "%s: component %d is a %s, not a node (make it a constant or placeholder)", fn, i + 1,
                              luaL_typename(L, idx));
        comps[i] = repl_check_output(L, idx);
        if (!single)
            lua_pop(L, 1);
    }
    repl *r = repl_of(L);
    tide_error_clear(r->err);
    tide_node *e = finish_or_raise(L, tide_queue_enqueue(r->graph, q, comps, n, many, r->err), fn);
    repl_push_output(L, (tide_output){e, -1}, true);
    return 1;
}

static int l_enqueue(lua_State *L) { return enqueue_impl(L, false, "enqueue"); }
static int l_enqueue_many(lua_State *L) { return enqueue_impl(L, true, "enqueue_many"); }

static int dequeue_impl(lua_State *L, bool batch, bool up_to, const char *fn)
{
    tide_output q = queue_arg(L, 1, fn);
    int64_t n = -1;
    if (batch) {
        if (!lua_isinteger(L, 2) || lua_tointeger(L, 2) < 0)
            return repl_raise(L, "%s(q, n): n must be an integer >= 0 (elements per batch)", fn);
        n = lua_tointeger(L, 2);
    }
    repl *r = repl_of(L);
    tide_error_clear(r->err);
    tide_node *d = finish_or_raise(L, tide_queue_dequeue(r->graph, q, n, up_to, r->err), fn);
    int outs = tide_node_num_outputs(d);
    luaL_checkstack(L, outs, "too many components");
    for (int i = 0; i < outs; i++)
        repl_push_output(L, (tide_output){d, i}, true);
    return outs;
}

static int l_dequeue(lua_State *L) { return dequeue_impl(L, false, false, "dequeue"); }
static int l_dequeue_many(lua_State *L) { return dequeue_impl(L, true, false, "dequeue_many"); }
static int l_dequeue_up_to(lua_State *L) { return dequeue_impl(L, true, true, "dequeue_up_to"); }

static int l_queue_close(lua_State *L)
{
    tide_output q = queue_arg(L, 1, "queue_close");
    bool cancel = false;
    static const char *const options[] = {"cancel_pending_enqueues", NULL};
    if (repl_check_options(L, 2, "queue_close", options)) {
        lua_getfield(L, 2, "cancel_pending_enqueues");
        cancel = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    repl *r = repl_of(L);
    tide_error_clear(r->err);
    tide_node *c = finish_or_raise(L, tide_queue_close(r->graph, q, cancel, r->err), "queue_close");
    repl_push_output(L, (tide_output){c, -1}, true);
    return 1;
}

static int l_queue_size(lua_State *L)
{
    tide_output q = queue_arg(L, 1, "queue_size");
    repl *r = repl_of(L);
    tide_error_clear(r->err);
    tide_output s = tide_queue_size(r->graph, q, r->err);
    finish_or_raise(L, s.node, "queue_size");
    repl_push_output(L, s, true);
    return 1;
}

/* ---------------------------------------------------------------- coordinator and runners */

typedef struct coord_box {
    tide_coordinator *c;
} coord_box;

typedef struct runner_box {
    tide_queue_runner *r;
} runner_box;

static tide_coordinator *check_coord(lua_State *L, int idx)
{
    return ((coord_box *)luaL_checkudata(L, idx, COORD_MT))->c;
}

static int l_coordinator(lua_State *L)
{
    coord_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->c = NULL;
    luaL_setmetatable(L, COORD_MT);
    if (!(b->c = tide_coordinator_new(repl_scratch_error(L))))
        return repl_raise(L, "coordinator: %s", tide_error_message(repl_of(L)->err));
    return 1;
}

static int coord_gc(lua_State *L)
{
    coord_box *b = luaL_checkudata(L, 1, COORD_MT);
    tide_coordinator_free(b->c); /* stops and joins its runners */
    b->c = NULL;
    return 0;
}

static int coord_request_stop(lua_State *L)
{
    tide_coordinator_request_stop(check_coord(L, 1), NULL);
    return 0;
}

static int coord_should_stop(lua_State *L)
{
    lua_pushboolean(L, tide_coordinator_should_stop(check_coord(L, 1)));
    return 1;
}

/* Stops the runners, waits for them and raises the error that stopped them, if any. */
static int coord_join(lua_State *L)
{
    tide_error *err = tide_error_new();
    tide_status st = tide_coordinator_join(check_coord(L, 1), err);
    if (st != TIDE_OK) {
        lua_pushfstring(L, "a queue runner stopped with: %s", tide_error_message(err));
        tide_error_free(err);
        return lua_error(L);
    }
    tide_error_free(err);
    return 0;
}

/* queue_runner(enqueue_ops [, {close = node, cancel = node}]) */
static int l_queue_runner(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bool single = repl_is_node(L, 1);
    int n = single ? 1 : (int)lua_rawlen(L, 1);
    if (n < 1 || n > 256)
        return repl_raise(L, "queue_runner(enqueue_ops [, {close=, cancel=}]): 1 to 256 enqueue ops");
    tide_node *ops[256];
    for (int i = 0; i < n; i++) {
        if (!single)
            lua_rawgeti(L, 1, i + 1);
        if (!repl_is_node(L, -1))
            return repl_raise(L, "queue_runner: enqueue op %d is a %s, not a node", i + 1, luaL_typename(L, -1));
        ops[i] = repl_check_output(L, -1).node;
        if (!single)
            lua_pop(L, 1);
    }
    tide_node *close = NULL, *cancel = NULL;
    static const char *const options[] = {"close", "cancel", NULL};
    if (repl_check_options(L, 2, "queue_runner", options)) {
        lua_getfield(L, 2, "close");
        close = lua_isnil(L, -1) ? NULL : repl_check_output(L, -1).node;
        lua_getfield(L, 2, "cancel");
        cancel = lua_isnil(L, -1) ? NULL : repl_check_output(L, -1).node;
        lua_pop(L, 2);
    }
    runner_box *b = lua_newuserdatauv(L, sizeof *b, 1);
    b->r = NULL;
    luaL_setmetatable(L, RUNNER_MT);
    if (!(b->r = tide_queue_runner_new(ops, n, close, cancel, repl_scratch_error(L))))
        return repl_raise(L, "queue_runner: %s", tide_error_message(repl_of(L)->err));
    return 1;
}

static int runner_gc(lua_State *L)
{
    runner_box *b = luaL_checkudata(L, 1, RUNNER_MT);
    tide_queue_runner_free(b->r);
    b->r = NULL;
    return 0;
}

static int runner_start(lua_State *L)
{
    runner_box *b = luaL_checkudata(L, 1, RUNNER_MT);
    tide_coordinator *c = check_coord(L, 2);
    repl *r = repl_of(L);
    tide_error_clear(r->err);
    if (tide_queue_runner_start(b->r, r->session, c, r->err) != TIDE_OK)
        return repl_raise(L, "start: %s", tide_error_message(r->err));
    lua_pushvalue(L, 2); /* the runner keeps its coordinator alive (it must outlive the threads) */
    lua_setiuservalue(L, 1, 1);
    lua_settop(L, 1);
    return 1;
}

static int runner_runs(lua_State *L)
{
    runner_box *b = luaL_checkudata(L, 1, RUNNER_MT);
    lua_pushinteger(L, tide_queue_runner_runs(b->r));
    return 1;
}

static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc)
{
    if (luaL_newmetatable(L, name)) {
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
}

void repl_open_queues(lua_State *L)
{
    static const luaL_Reg coord_methods[] = {{"request_stop", coord_request_stop}, {"should_stop", coord_should_stop},
                                             {"join", coord_join}, {NULL, NULL}};
    static const luaL_Reg runner_methods[] = {{"start", runner_start}, {"runs", runner_runs}, {NULL, NULL}};
    new_class(L, COORD_MT, coord_methods, coord_gc);
    new_class(L, RUNNER_MT, runner_methods, runner_gc);
    static const luaL_Reg fns[] = {{"queue", l_queue}, {"enqueue", l_enqueue}, {"enqueue_many", l_enqueue_many},
                                   {"dequeue", l_dequeue}, {"dequeue_many", l_dequeue_many},
                                   {"dequeue_up_to", l_dequeue_up_to}, {"queue_close", l_queue_close},
                                   {"queue_size", l_queue_size}, {"coordinator", l_coordinator},
                                   {"queue_runner", l_queue_runner}, {NULL, NULL}};
    static const char *const help[][2] = {
        {"queue", "queue({dtypes={...} [, shapes={...}, capacity=, kind='fifo'|'shuffle'|'padding', "
                  "min_after_dequeue=, seed=, shared_name=, container=, name=]})\n\nA queue in the graph "
                  "(FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue): elements of one tensor per dtype. Shared "
                  "by name across sessions. Blocked enqueues and dequeues hold no thread; Ctrl-C or a run's "
                  "timeout ends them (docs/queues.md). q = queue({dtypes = {float32}, shapes = {{784}}, "
                  "capacity = 100})"},
        {"enqueue", "enqueue(q, values)\n\nA node that adds one element (a value, or a table of one value per "
                    "component) to q, waiting while it is full. run(enqueue(q, {x}), {x = ...})"},
        {"enqueue_many", "enqueue_many(q, values)\n\nA node that adds the rows of each value (along the first "
                         "dimension) as elements."},
        {"dequeue", "dequeue(q)\n\nOne element: one node output per component. It waits while q is empty; once q "
                    "is closed and empty it fails with OUT_OF_RANGE."},
        {"dequeue_many", "dequeue_many(q, n)\n\nn elements stacked: [n, ...] per component. x, y = "
                         "dequeue_many(q, 100)"},
        {"dequeue_up_to", "dequeue_up_to(q, n)\n\nAs dequeue_many, but once q is closed returns the fewer "
                          "elements left."},
        {"queue_close", "queue_close(q [, {cancel_pending_enqueues=false}])\n\nA node that closes q: later "
                        "enqueues fail, dequeues drain it and then fail with OUT_OF_RANGE."},
        {"queue_size", "queue_size(q)\n\nThe number of elements in q (int32) when it runs."},
        {"coordinator", "coordinator()\n\nA coordinator (tf.train.Coordinator) for queue runners: "
                        "c:request_stop(), c:should_stop(), c:join() (stops and waits for the runners, raises the "
                        "error that stopped them)."},
        {"queue_runner", "queue_runner(enqueue_ops [, {close=, cancel=}])\n\nRuns the enqueue ops on "
                         "background threads (one per op) until the queue closes, the input runs out or the "
                         "coordinator stops: queue_runner({enq, enq}, {close = queue_close(q)}):start(coord). "
                         "r:runs() counts the enqueues done."},
    };
    repl_register(L, fns, help, sizeof help / sizeof help[0]);
}
