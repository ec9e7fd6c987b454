/* lua_checkpoint.c — checkpoints at the prompt (docs/checkpoints.md, engine/checkpoint):
 *
 *   s = saver({max_to_keep = 3})            -- every variable of the graph (or saver({W, b}, {...}))
 *   s:save("ckpt/model", {global_step = 100})   --> "ckpt/model-100.npz"
 *   s:restore(latest_checkpoint("ckpt"))
 *
 * A saver is a userdata "tide.saver" over the REPL's graph and default session (the saver's nodes are
 * added to the graph once). The REPL's :save-vars and :restore commands (commands.c) use a saver of
 * every variable made for the command. */
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "lua_checkpoint.h"
#include "tide_checkpoint.h"

#define SAVER_MT "tide.saver"

typedef struct saver_box {
    tide_saver *s;
    int generation; /* the graph generation it was made in (:reset drops the graph) */
} saver_box;

static saver_box *check_saver(lua_State *L, int idx)
{
    saver_box *b = luaL_checkudata(L, idx, SAVER_MT);
    if (!b->s || b->generation != repl_of(L)->graph_generation)
        repl_raise(L, "this saver belongs to a graph that :reset dropped: make a new one with saver()");
    return b;
}

static int saver_gc(lua_State *L)
{
    saver_box *b = luaL_checkudata(L, 1, SAVER_MT);
    tide_saver_free(b->s);
    b->s = NULL;
    return 0;
}

static int l_saver_save(lua_State *L)
{
    saver_box *b = check_saver(L, 1);
    const char *prefix = luaL_checkstring(L, 2);
    int64_t step = -1;
    if (!lua_isnoneornil(L, 3)) {
        static const char *const options[] = {"global_step", NULL};
        repl_check_options(L, 3, "save", options);
        lua_getfield(L, 3, "global_step");
        if (!lua_isnil(L, -1)) {
            if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
                return repl_raise(L, "save: global_step must be an integer >= 0");
            step = lua_tointeger(L, -1);
        }
        lua_pop(L, 1);
    }
    char *path = NULL;
    tide_error *err = repl_scratch_error(L);
    if (tide_saver_save(b->s, repl_of(L)->session, prefix, step, &path, err) != TIDE_OK)
        return repl_raise(L, "save: %s", tide_error_message(err));
    lua_pushstring(L, path);
    free(path);
    return 1;
}

static int l_saver_restore(lua_State *L)
{
    saver_box *b = check_saver(L, 1);
    if (lua_isnoneornil(L, 2))
        return repl_raise(L, "restore: no checkpoint given (latest_checkpoint(dir) returns nil when the "
                             "directory holds none)");
    const char *path = luaL_checkstring(L, 2);
    tide_error *err = repl_scratch_error(L);
    if (tide_saver_restore(b->s, repl_of(L)->session, path, err) != TIDE_OK)
        return repl_raise(L, "restore: %s", tide_error_message(err));
    return 0;
}

/* saver([vars] [, {max_to_keep = 5}]) */
static int l_saver(lua_State *L)
{
    repl *r = repl_of(L);
    int opts = 0, list = 0;
    if (lua_type(L, 1) == LUA_TTABLE && !repl_is_options_table(L, 1))
        list = 1;
    if (lua_type(L, list + 1) == LUA_TTABLE)
        opts = list + 1;
    tide_saver_options o = {0};
    if (opts) {
        static const char *const options[] = {"max_to_keep", NULL};
        repl_check_options(L, opts, "saver", options);
        lua_getfield(L, opts, "max_to_keep");
        if (!lua_isnil(L, -1)) {
            if (!lua_isinteger(L, -1))
                return repl_raise(L, "saver: max_to_keep must be an integer (0 or less: keep all)");
            o.max_to_keep = lua_tointeger(L, -1) <= 0 ? -1 : (int)lua_tointeger(L, -1);
        }
        lua_pop(L, 1);
    }
    int n = list ? (int)lua_rawlen(L, list) : 0;
    tide_node **vars = calloc((size_t)(n ? n : 1), sizeof *vars);
    if (!vars)
        return repl_raise(L, "saver: out of memory");
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, list, i + 1);
        if (!repl_is_node(L, -1)) {
            free(vars);
            return repl_raise(L, "saver: element %d of the list is a %s, not a variable", i + 1, luaL_typename(L, -1));
        }
        vars[i] = repl_check_output(L, -1).node;
        lua_pop(L, 1);
    }
    tide_error *err = repl_scratch_error(L);
    tide_saver *s = tide_saver_new(r->graph, vars, n, &o, err);
    free(vars);
    if (!s)
        return repl_raise(L, "saver: %s", tide_error_message(err));
    saver_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->s = s;
    b->generation = r->graph_generation;
    luaL_setmetatable(L, SAVER_MT);
    return 1;
}

static int l_latest_checkpoint(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    tide_error *err = repl_scratch_error(L);
    char *path = tide_latest_checkpoint(dir, err);
    if (!path) {
        if (tide_error_code(err) == TIDE_NOT_FOUND) {
            lua_pushnil(L);
            return 1;
        }
        return repl_raise(L, "latest_checkpoint: %s", tide_error_message(err));
    }
    lua_pushstring(L, path);
    free(path);
    return 1;
}

void repl_open_checkpoint(lua_State *L)
{
    if (luaL_newmetatable(L, SAVER_MT)) {
        static const luaL_Reg methods[] = {{"save", l_saver_save}, {"restore", l_saver_restore}, {NULL, NULL}};
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, saver_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {{"saver", l_saver}, {"latest_checkpoint", l_latest_checkpoint}, {NULL, NULL}};
    static const char *const help[][2] = {
        {"saver", "saver([vars] [, {max_to_keep=5}])\n\nA saver of the given variables (default: every variable "
                  "of the graph), tf.train.Saver: s:save(path [, {global_step=n}]) writes PATH.npz (PATH-n.npz) "
                  "atomically and returns it, keeping the newest max_to_keep in its directory (0: all); "
                  "s:restore(path) assigns the saved values, or fails naming a missing variable, a dtype or a "
                  "shape that differs (nothing assigned then). The file is an .npz numpy.load reads "
                  "(docs/checkpoints.md). s = saver(); s:save('ckpt/model', {global_step = 100})"},
        {"latest_checkpoint", "latest_checkpoint(dir)\n\nThe newest checkpoint the directory's 'checkpoint' file "
                              "names, or nil. saver():restore(latest_checkpoint('ckpt'))"},
    };
    repl_register(L, fns, help, sizeof help / sizeof help[0]);
}

/* ---------------------------------------------------------------- :save-vars and :restore */

/* The commands' saver of every variable, rebuilt when the graph or its variables changed. */
typedef struct command_saver_cache {
    tide_saver *s;
    tide_graph *graph;
    int generation, num_vars;
} command_saver_cache;
static command_saver_cache command_saver;

static tide_saver *saver_of_all(repl *r)
{
    int n = tide_graph_variables(r->graph, false, NULL, 0);
    if (command_saver.s && command_saver.graph == r->graph && command_saver.generation == r->graph_generation &&
        command_saver.num_vars == n)
        return command_saver.s;
    tide_saver_free(command_saver.s);
    command_saver.s = NULL;
    tide_error_clear(r->err);
    tide_saver *s = tide_saver_new(r->graph, NULL, 0, NULL, r->err);
    if (s)
        command_saver = (command_saver_cache){s, r->graph, r->graph_generation, n};
    return s;
}

repl_result repl_cmd_save_vars(repl *r, int argc, char **argv)
{
    (void)argc;
    tide_saver *s = saver_of_all(r);
    char *path = NULL;
    if (!s || tide_saver_save(s, r->session, argv[1], -1, &path, r->err) != TIDE_OK) {
        fprintf(stderr, "cannot save the variables: %s\n", tide_error_message(r->err));
        return REPL_FAILED;
    }
    printf("saved %d variable%s to %s\n", command_saver.num_vars, command_saver.num_vars == 1 ? "" : "s", path);
    free(path);
    return REPL_DONE;
}

repl_result repl_cmd_restore(repl *r, int argc, char **argv)
{
    (void)argc;
    struct stat sb;
    char *path = NULL;
    tide_error_clear(r->err);
    if (stat(argv[1], &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a directory: its latest checkpoint */
        path = tide_latest_checkpoint(argv[1], r->err);
        if (!path) {
            fprintf(stderr, "cannot restore: %s\n", tide_error_message(r->err));
            return REPL_FAILED;
        }
    }
    tide_saver *s = saver_of_all(r);
    if (!s || tide_saver_restore(s, r->session, path ? path : argv[1], r->err) != TIDE_OK) {
        fprintf(stderr, "cannot restore: %s (no variable was changed)\n", tide_error_message(r->err));
        free(path);
        return REPL_FAILED;
    }
    printf("restored %d variable%s from %s\n", command_saver.num_vars, command_saver.num_vars == 1 ? "" : "s",
           path ? path : argv[1]);
    free(path);
    return REPL_DONE;
}
