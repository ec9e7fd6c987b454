/* lua_data.c — data files and data sets for Lua: NPY, IDX and CSV files as host tensors,
 * Fashion-MNIST as two splits, and batches.
 *
 * A split (the train or test half of a data set, or dataset(images, labels) of any tensors) is a
 * table {images = tensor, labels = tensor} with the metatable "tide.split", whose methods are:
 *   split:size()             number of examples
 *   split:batch(n)           the next n examples of a shuffled pass, epoch after epoch, as
 *                            TensorFlow's next_batch (also split:next_batch(n))
 *   split:shuffle(seed)      restarts batch() with another seed (the default is fixed: runs repeat)
 *   split:batches(n [, opts]) an iterator over the split in order (views, no copy); {epochs = k}
 *                            goes over it k times (math.huge: without end)
 * fashion_mnist({one_hot = true}) gives labels as float32 one-hot rows, as TensorFlow's
 * read_data_sets(..., one_hot=True).
 * batch() keeps a tide_batcher in a weak table keyed by the split (so the split stays a plain table).
 * Every batch batch() returns has n rows: the remainder of an epoch is dropped, and since each epoch
 * draws a new order, different rows are left out each time.
 *
 * A batcher is a userdata "tide.batcher" (freed by __gc, or by __close when a generic for loop
 * ends); batches() returns it as the loop's closing value.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"
#include "tide_data.h"

#define BATCHER_MT "tide.batcher"
#define SPLIT_MT "tide.split"
#define SPLIT_STATE "tide.split_state" /* registry: split -> {seed = , batcher = } (weak keys) */
#define MAX_BATCH_TENSORS 16
#define DEFAULT_SEED 20170825          /* Fashion-MNIST's release date */

typedef struct batcher_box {
    tide_batcher *b; /* NULL once closed */
    int num;         /* tensors per batch */
    int64_t batch_size;
    int64_t epochs_left; /* an iterator's passes still to go, this one included */
    bool done;       /* an iterator's passes are over */
} batcher_box;


static const char *check_path(lua_State *L, int idx, const char *fn)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        repl_raise(L, "%s: expected a file path (a string) as argument %d, got %s", fn, idx,
                   luaL_typename(L, idx));
    return lua_tostring(L, idx);
}

/* Pushes t, or raises with err's message (nothing is held then). */
static int push_or_raise(lua_State *L, tide_tensor *t, const char *fn, tide_error *err)
{
    if (!t)
        return repl_raise(L, "%s: %s", fn, tide_error_message(err));
    repl_push_tensor(L, t);
    return 1;
}

/* ---------------------------------------------------------------- files */

static int l_load_npy(lua_State *L)
{
    const char *path = check_path(L, 1, "load_npy");
    tide_error *err = repl_scratch_error(L);
    return push_or_raise(L, tide_read_npy(path, NULL, err), "load_npy", err);
}

static int l_load_idx(lua_State *L)
{
    const char *path = check_path(L, 1, "load_idx");
    tide_error *err = repl_scratch_error(L);
    return push_or_raise(L, tide_read_idx(path, NULL, err), "load_idx", err);
}

static int l_save_npy(lua_State *L)
{
    const char *path = check_path(L, 1, "save_npy");
    if (lua_isnone(L, 2))
        return repl_raise(L, "save_npy: expected a tensor to save as argument 2");
    tide_error *err = repl_scratch_error(L);
    tide_tensor *t = repl_tensor_from_lua(L, 2, TIDE_INVALID_DTYPE, err);
    if (!t)
        return repl_raise(L, "save_npy: %s", tide_error_message(err));
    tide_status st = tide_write_npy(path, t, err);
    tide_tensor_release(t);
    if (st != TIDE_OK)
        return repl_raise(L, "save_npy: %s", tide_error_message(err));
    return 0;
}

static int64_t opt_integer(lua_State *L, int idx, const char *name, int64_t dflt, const char *fn)
{
    lua_getfield(L, idx, name);
    int ok = 1;
    int64_t v = lua_isnil(L, -1) ? dflt : (int64_t)lua_tointegerx(L, -1, &ok);
    if (!ok || (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TNUMBER))
        repl_raise(L, "%s: option %s must be an integer, got %s", fn, name, luaL_typename(L, -1));
    lua_pop(L, 1);
    return v;
}

static bool opt_boolean(lua_State *L, int idx, const char *name, bool dflt, const char *fn)
{
    lua_getfield(L, idx, name);
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
        repl_raise(L, "%s: option %s must be true or false, got %s", fn, name, luaL_typename(L, -1));
    bool v = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

static void csv_options(lua_State *L, int idx, tide_csv_options *o)
{
    static const char *const names[] = {"delimiter", "header", "dtype", NULL};
    tide_csv_options_init(o);
    if (!repl_check_options(L, idx, "load_csv", names))
        return;
    lua_getfield(L, idx, "delimiter");
    if (!lua_isnil(L, -1)) {
        size_t len = 0;
        const char *d = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (!d || len != 1)
            repl_raise(L, "load_csv: delimiter must be a string of one character, such as \";\"");
        o->delimiter = d[0];
    }
    lua_pop(L, 1);
    int64_t header = opt_integer(L, idx, "header", o->header, "load_csv");
    if (header < -1 || header > 1000000)
        repl_raise(L, "load_csv: header must be the number of lines to skip, or -1 to detect one (got %lld)",
                   (long long)header);
    o->header = (int)header;
    lua_getfield(L, idx, "dtype");
    if (!lua_isnil(L, -1)) {
        o->dtype = repl_to_dtype(L, -1);
        if (o->dtype == TIDE_INVALID_DTYPE)
            repl_raise(L, "load_csv: option dtype must be a dtype such as float32, got %s",
                       lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
    }
    lua_pop(L, 1);
}

/* load_csv(path [, {delimiter = ",", header = -1, dtype = float32}]) */
static int l_load_csv(lua_State *L)
{
    const char *path = check_path(L, 1, "load_csv");
    tide_csv_options o;
    csv_options(L, 2, &o);
    tide_error *err = repl_scratch_error(L);
    return push_or_raise(L, tide_read_csv(path, &o, err), "load_csv", err);
}

/* ---------------------------------------------------------------- batchers */

static int batcher_gc(lua_State *L)
{
    batcher_box *box = luaL_testudata(L, 1, BATCHER_MT);
    if (box) {
        tide_batcher_free(box->b);
        box->b = NULL;
    }
    return 0;
}

static int batcher_tostring(lua_State *L)
{
    batcher_box *box = luaL_checkudata(L, 1, BATCHER_MT);
    if (!box->b)
        lua_pushliteral(L, "batcher (closed)");
    else
        lua_pushfstring(L, "batcher of %d tensors, batches of %I, epoch %I", box->num,
                        (lua_Integer)box->batch_size, (lua_Integer)tide_batcher_epoch(box->b));
    return 1;
}

/* Checks what tide_batcher_new would refuse, in the REPL's terms (tensors counted from 1). */
static void check_batchable(lua_State *L, tide_tensor *const *ts, int num, int64_t n, bool drop,
                            const char *fn)
{
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    if (n < 1)
        repl_raise(L, "%s: the batch size must be >= 1, got %lld", fn, (long long)n);
    for (int i = 0; i < num; i++) {
        if (tide_tensor_rank(ts[i]) == 0)
            repl_raise(L, "%s: tensor %d is a scalar; batching needs a first dimension", fn, i + 1);
        if (tide_tensor_dim(ts[i], 0) != tide_tensor_dim(ts[0], 0))
            repl_raise(L, "%s: the tensors must share their first dimension: tensor 1 is %s, tensor %d is %s",
                       fn, tide_shape_format(tide_tensor_shape(ts[0]), a, sizeof a), i + 1,
                       tide_shape_format(tide_tensor_shape(ts[i]), b, sizeof b));
    }
    int64_t rows = tide_tensor_dim(ts[0], 0);
    if (rows == 0)
        repl_raise(L, "%s: the tensors have no rows", fn);
    if (drop && rows < n)
        repl_raise(L, "%s: %lld rows make no full batch of %lld (drop_remainder is set)", fn,
                   (long long)rows, (long long)n);
}

/* Pushes a new batcher userdata over ts (borrowed; the batcher retains them). Raises on error. */
static batcher_box *push_batcher(lua_State *L, tide_tensor *const *ts, int num, int64_t n, bool shuffle,
                                 uint64_t seed, bool drop, const char *fn)
{
    check_batchable(L, ts, num, n, drop, fn);
    batcher_box *box = lua_newuserdatauv(L, sizeof *box, 0);
    memset(box, 0, sizeof *box);
    if (luaL_newmetatable(L, BATCHER_MT)) {
        lua_pushcfunction(L, batcher_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, batcher_gc);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, batcher_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_pushliteral(L, "batcher");
        lua_setfield(L, -2, "__name");
    }
    lua_setmetatable(L, -2);
    tide_error *err = repl_scratch_error(L);
    box->b = tide_batcher_new(ts, num, n, shuffle, seed, drop, err);
    if (!box->b)
        repl_raise(L, "%s: %s", fn, tide_error_message(err));
    box->num = num;
    box->batch_size = n;
    return box;
}

/* The next batch pushed (box->num values); false at the end of an epoch. Raises on failure. */
static bool next_batch(lua_State *L, batcher_box *box, const char *fn)
{
    tide_tensor *out[MAX_BATCH_TENSORS];
    tide_error *err = repl_scratch_error(L);
    if (!tide_batcher_next(box->b, out, err)) {
        if (tide_error_code(err) != TIDE_OK)
            repl_raise(L, "%s: %s", fn, tide_error_message(err));
        return false;
    }
    luaL_checkstack(L, box->num, fn);
    for (int i = 0; i < box->num; i++)
        repl_push_tensor(L, out[i]);
    return true;
}

/* The iterator a for loop calls: the next batch, or nil when the pass is over. */
static int batches_iter(lua_State *L)
{
    batcher_box *box = lua_touserdata(L, lua_upvalueindex(1));
    if (!box->b || box->done)
        return 0;
    /* At the end of a pass the batcher has started the next one (a new order when shuffling). */
    bool more = next_batch(L, box, "batches") || (--box->epochs_left > 0 && next_batch(L, box, "batches"));
    if (!more) {
        box->done = true;
        return 0;
    }
    return box->num;
}

typedef struct batch_opts {
    bool shuffle, drop;
    uint64_t seed;
    int64_t epochs;
} batch_opts;

/* The option epochs: a whole number >= 1, or math.huge for passes without end. */
static int64_t opt_epochs(lua_State *L, int idx, const char *fn)
{
    lua_getfield(L, idx, "epochs");
    int64_t epochs = 1;
    if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) == HUGE_VAL)
        epochs = INT64_MAX;
    else if (!lua_isnil(L, -1)) {
        int ok = 0;
        epochs = lua_type(L, -1) == LUA_TNUMBER ? (int64_t)lua_tointegerx(L, -1, &ok) : 0;
        if (!ok || epochs < 1)
            repl_raise(L, "%s: option epochs must be a whole number >= 1 (math.huge: without end), got %s", fn,
                       luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
    return epochs;
}

static batch_opts batches_options(lua_State *L, int idx, const char *fn)
{
    static const char *const names[] = {"shuffle", "seed", "drop_remainder", "epochs", NULL};
    batch_opts o = {false, false, 0, 1};
    if (repl_check_options(L, idx, fn, names)) {
        o.shuffle = opt_boolean(L, idx, "shuffle", false, fn);
        o.seed = (uint64_t)opt_integer(L, idx, "seed", 0, fn);
        o.drop = opt_boolean(L, idx, "drop_remainder", false, fn);
        o.epochs = opt_epochs(L, idx, fn);
    }
    return o;
}

/* Pushes the generic-for values: iterator, nil, nil, the batcher (closed when the loop ends). */
static int push_loop(lua_State *L, tide_tensor *const *ts, int num, int64_t n, batch_opts o, const char *fn)
{
    batcher_box *box = push_batcher(L, ts, num, n, o.shuffle, o.seed, o.drop, fn);
    box->epochs_left = o.epochs;
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, batches_iter, 1);
    lua_insert(L, -2);
    lua_pushnil(L);
    lua_insert(L, -2);
    lua_pushnil(L);
    lua_insert(L, -2);
    return 4;
}

static int64_t check_batch_size(lua_State *L, int idx, const char *fn)
{
    int ok = 0;
    lua_Integer n = lua_tointegerx(L, idx, &ok);
    if (!ok || lua_type(L, idx) != LUA_TNUMBER)
        repl_raise(L, "%s: the batch size must be an integer, got %s", fn, luaL_typename(L, idx));
    return (int64_t)n;
}

/* batches({t1, t2, ...}, n [, opts]): the tensors are read from the table (Lua values are converted);
 * they stay referenced by the table's userdata, and by the batcher. */
static int l_batches(lua_State *L)
{
    if (!lua_istable(L, 1))
        return repl_raise(L, "batches: expected a table of tensors sharing their first dimension, as "
                          "batches({images, labels}, 100), got %s", luaL_typename(L, 1));
    int64_t n = check_batch_size(L, 2, "batches");
    batch_opts o = batches_options(L, 3, "batches");
    int num = (int)lua_rawlen(L, 1);
    if (num < 1 || num > MAX_BATCH_TENSORS)
        return repl_raise(L, "batches: expected 1 to %d tensors in the table, got %d", MAX_BATCH_TENSORS, num);
    tide_tensor *ts[MAX_BATCH_TENSORS];
    for (int i = 0; i < num; i++) {
        lua_rawgeti(L, 1, i + 1);
        tide_error *err = repl_scratch_error(L);
        tide_tensor *t = repl_tensor_from_lua(L, -1, TIDE_INVALID_DTYPE, err);
        lua_pop(L, 1);
        if (!t)
            return repl_raise(L, "batches: tensor %d: %s", i + 1, tide_error_message(err));
        repl_push_tensor(L, t); /* Lua owns it now: raising below leaks nothing */
        ts[i] = t;
    }
    return push_loop(L, ts, num, n, o, "batches");
}

/* ---------------------------------------------------------------- splits */

/* The split's images and labels (borrowed; the split table holds them). Raises when missing. */
static void split_tensors(lua_State *L, int idx, const char *fn, tide_tensor **images, tide_tensor **labels)
{
    if (!lua_istable(L, idx))
        repl_raise(L, "%s: call it on a split, as data.train:%s(...)", fn, fn);
    lua_getfield(L, idx, "images");
    lua_getfield(L, idx, "labels");
    *images = repl_to_tensor(L, -2);
    *labels = repl_to_tensor(L, -1);
    lua_pop(L, 2); /* the split table keeps both alive */
    if (!*images || !*labels)
        repl_raise(L, "%s: the split's images and labels must be tensors", fn);
}

/* Pushes the split's state table {seed =, batcher =}, made on first use. */
static void push_split_state(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, LUA_REGISTRYINDEX, SPLIT_STATE) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, SPLIT_STATE);
    }
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 2);
        lua_pushinteger(L, DEFAULT_SEED);
        lua_setfield(L, -2, "seed");
        lua_pushvalue(L, idx);
        lua_pushvalue(L, -2);
        lua_rawset(L, -4);
    }
    lua_remove(L, -2);
}

static int split_size(lua_State *L)
{
    tide_tensor *images, *labels;
    split_tensors(L, 1, "size", &images, &labels);
    lua_pushinteger(L, tide_tensor_rank(images) ? tide_tensor_dim(images, 0) : 0);
    return 1;
}

/* split:batch(n): the next n examples of a shuffled pass; a new order each epoch. A batch size other
 * than the last call's starts a new batcher (a new pass, from the split's seed). */
static int split_batch(lua_State *L)
{
    tide_tensor *ts[2];
    split_tensors(L, 1, "batch", &ts[0], &ts[1]);
    int64_t n = check_batch_size(L, 2, "batch");
    lua_settop(L, 2);
    push_split_state(L, 1); /* index 3 */
    lua_getfield(L, 3, "batcher");
    batcher_box *box = luaL_testudata(L, -1, BATCHER_MT);
    if (!box || !box->b || box->batch_size != n) {
        lua_getfield(L, 3, "seed");
        uint64_t seed = (uint64_t)lua_tointeger(L, -1);
        lua_pop(L, 2);
        box = push_batcher(L, ts, 2, n, true, seed, true, "batch");
        lua_setfield(L, 3, "batcher");
    } else {
        lua_pop(L, 1);
    }
    if (!next_batch(L, box, "batch") && !next_batch(L, box, "batch")) /* the epoch ended: next one */
        return repl_raise(L, "batch: the batcher gave no batch");
    return 2;
}

/* split:shuffle(seed): batch() starts a new pass in the order seed draws. */
static int split_shuffle(lua_State *L)
{
    tide_tensor *images, *labels;
    split_tensors(L, 1, "shuffle", &images, &labels);
    int ok = 0;
    lua_Integer seed = lua_tointegerx(L, 2, &ok);
    if (!ok || lua_type(L, 2) != LUA_TNUMBER)
        return repl_raise(L, "shuffle: the seed must be an integer, got %s", luaL_typename(L, 2));
    push_split_state(L, 1);
    lua_pushinteger(L, seed);
    lua_setfield(L, -2, "seed");
    lua_pushnil(L);
    lua_setfield(L, -2, "batcher");
    lua_settop(L, 1);
    return 1;
}

/* split:batches(n [, opts]): for x, y in split:batches(n) do ... end */
static int split_batches(lua_State *L)
{
    tide_tensor *ts[2];
    split_tensors(L, 1, "batches", &ts[0], &ts[1]);
    int64_t n = check_batch_size(L, 2, "batches");
    batch_opts o = batches_options(L, 3, "batches");
    return push_loop(L, ts, 2, n, o, "batches");
}

static int split_tostring(lua_State *L)
{
    tide_tensor *images, *labels;
    split_tensors(L, 1, "tostring", &images, &labels);
    char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
    lua_pushfstring(L, "split of %I examples: images %s %s, labels %s %s",
                    (lua_Integer)(tide_tensor_rank(images) ? tide_tensor_dim(images, 0) : 0),
                    tide_dtype_name(tide_tensor_dtype(images)),
                    tide_shape_format(tide_tensor_shape(images), a, sizeof a),
                    tide_dtype_name(tide_tensor_dtype(labels)),
                    tide_shape_format(tide_tensor_shape(labels), b, sizeof b));
    return 1;
}

static const luaL_Reg split_methods[] = {
    {"size", split_size},         {"batch", split_batch},     {"next_batch", split_batch},
    {"shuffle", split_shuffle},   {"batches", split_batches}, {NULL, NULL},
};

/* Replaces the tensors at images and labels (stack indices) by a split table holding them. */
static void make_split(lua_State *L, int images, int labels)
{
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, images);
    lua_setfield(L, -2, "images");
    lua_pushvalue(L, labels);
    lua_setfield(L, -2, "labels");
    if (luaL_newmetatable(L, SPLIT_MT)) {
        luaL_newlib(L, split_methods);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, split_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_pushliteral(L, "split");
        lua_setfield(L, -2, "__name");
    }
    lua_setmetatable(L, -2);
}

/* dataset(images, labels): a split over any two tensors of one first dimension, for batch(n),
 * next_batch(n) and batches(n). */
static int l_dataset(lua_State *L)
{
    tide_tensor *ts[2];
    lua_settop(L, 2);
    for (int i = 0; i < 2; i++) {
        tide_error *err = repl_scratch_error(L);
        ts[i] = repl_tensor_from_lua(L, i + 1, TIDE_INVALID_DTYPE, err);
        if (!ts[i])
            return repl_raise(L, "dataset(images, labels): %s: %s", i ? "labels" : "images", tide_error_message(err));
        repl_push_tensor(L, ts[i]); /* Lua owns it now: 3, 4 */
    }
    check_batchable(L, ts, 2, 1, false, "dataset");
    make_split(L, 3, 4);
    return 1;
}

/* The labels at idx as float32 one-hot rows of `depth` classes (replaced in place on the stack). */
static void one_hot_labels(lua_State *L, int idx, int depth)
{
    tide_tensor *labels = repl_to_tensor(L, idx);
    tide_error *err = repl_scratch_error(L);
    float on = 1, off = 0;
    int32_t d = depth;
    tide_tensor *in[4] = {labels, tide_tensor_new(TIDE_INT32, &(tide_shape){.rank = 0}, err),
                          tide_tensor_new(TIDE_FLOAT32, &(tide_shape){.rank = 0}, err),
                          tide_tensor_new(TIDE_FLOAT32, &(tide_shape){.rank = 0}, err)};
    tide_tensor *out = NULL;
    int produced = 0;
    if (in[1] && in[2] && in[3]) {
        memcpy(tide_tensor_data(in[1]), &d, sizeof d);
        memcpy(tide_tensor_data(in[2]), &on, sizeof on);
        memcpy(tide_tensor_data(in[3]), &off, sizeof off);
        tide_engine_run_op(repl_of(L)->engine, "OneHot", in, 4, NULL, &out, 1, &produced, err);
    }
    for (int i = 1; i < 4; i++)
        tide_tensor_release(in[i]);
    if (!out)
        repl_raise(L, "fashion_mnist: one-hot labels: %s", tide_error_message(err));
    repl_push_tensor(L, out);
    lua_replace(L, idx);
}

/* fashion_mnist([dir] [, {one_hot=false}]) -> {train = split, test = split} */
static int l_fashion_mnist(lua_State *L)
{
    static const char *const names[] = {"one_hot", NULL};
    int opts = lua_type(L, 1) == LUA_TTABLE ? 1 : 2;
    const char *dir = opts == 1 || lua_isnoneornil(L, 1) ? NULL : check_path(L, 1, "fashion_mnist");
    bool one_hot = repl_check_options(L, opts, "fashion_mnist", names) &&
                   opt_boolean(L, opts, "one_hot", false, "fashion_mnist");
    tide_dataset d;
    tide_error *err = repl_scratch_error(L);
    if (tide_fashion_mnist_load(dir, &d, err) != TIDE_OK)
        return repl_raise(L, "fashion_mnist: %s", tide_error_message(err));
    lua_settop(L, 1);
    if (!lua_checkstack(L, 8)) {
        tide_dataset_release(&d);
        return repl_raise(L, "fashion_mnist: out of Lua stack");
    }
    /* Lua owns the four tensors before anything else can raise. */
    repl_push_tensor(L, d.train_images); /* 2 */
    repl_push_tensor(L, d.train_labels); /* 3 */
    repl_push_tensor(L, d.test_images);  /* 4 */
    repl_push_tensor(L, d.test_labels);  /* 5 */
    if (one_hot) {
        one_hot_labels(L, 3, 10);
        one_hot_labels(L, 5, 10);
    }
    lua_createtable(L, 0, 2);
    make_split(L, 2, 3);
    lua_setfield(L, -2, "train");
    make_split(L, 4, 5);
    lua_setfield(L, -2, "test");
    return 1;
}

void repl_open_data(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"load_npy", l_load_npy}, {"save_npy", l_save_npy}, {"load_idx", l_load_idx},
        {"load_csv", l_load_csv}, {"fashion_mnist", l_fashion_mnist}, {"batches", l_batches},
        {"dataset", l_dataset},   {NULL, NULL},
    };
    static const char *const help[][2] = {
        {"load_npy", "load_npy(path)\n\nA tensor from a NumPy .npy file."},
        {"save_npy", "save_npy(path, t)\n\nWrites t (a tensor or nested tables) as a NumPy .npy file."},
        {"load_idx", "load_idx(path)\n\nA tensor from an IDX file (MNIST's format), gzip-compressed or not."},
        {"load_csv", "load_csv(path [, {delimiter=\",\", header=-1, dtype=float32}])\n\nA [rows, columns] "
                     "tensor from a CSV file; header: lines to skip, -1 detects one header line."},
        {"fashion_mnist", "fashion_mnist([dir] [, {one_hot=false}])\n\n{train = split, test = split}: images "
                          "float32 [N, 28, 28, 1] in [0, 1], labels int32 [N] (one_hot: float32 [N, 10]). "
                          "split:size(), split:batch(n) or split:next_batch(n) (the next shuffled batch, epoch "
                          "after epoch), split:shuffle(seed), split:batches(n [, opts]) (for loops)."},
        {"batches", "batches({t1, t2, ...}, n [, {shuffle=false, seed=0, drop_remainder=false, epochs=1}])\n\n"
                    "An iterator over batches of n rows: for x, y in batches({images, labels}, 100) do ... end. "
                    "epochs: how many passes (math.huge: without end; a shuffled pass draws a new order)."},
        {"dataset", "dataset(images, labels)\n\nA split over two tensors of one first dimension (rows): "
                    "d:batch(n) / d:next_batch(n), d:batches(n [, opts]), d:size(), as fashion_mnist's splits."},
        {"next_batch", "split:next_batch(n), also split:batch(n)\n\nThe next n examples (images, labels) of a "
                       "shuffled pass over a split (fashion_mnist's train or test, or dataset(x, y)), epoch after "
                       "epoch: a new order each epoch, and every batch has n rows (an epoch's remainder is left "
                       "out, other rows each time). split:shuffle(seed) restarts with another order."},
    };
    repl_register(L, fns, help, sizeof help / sizeof help[0]);
}
