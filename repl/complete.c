/* complete.c — tab completion at the prompt: what the word before the cursor can become.
 *
 * The word is the identifier-ish text that ends at the cursor: letters, digits, '_', and '.' or ':'
 * for fields and methods ("tide.mat", "t:res"). What it completes to depends on where it stands:
 *
 *   ":he|"                 a command name (the line starts with ':', the cursor is in its first word)
 *   ":help ma|"            commands, Lua globals, op functions
 *   ":info d|", ":nodes"   node names (with their scopes: "dense/MatMul"); also the debugger's :break,
 *                          :until, :print, :ni, :li, :lo, :set
 *   "tide.ma|", "t:re|"    the fields of the table (or the methods of the userdata's metatable) that
 *                          the text before the last '.' or ':' names; ':' lists functions only
 *   anything else          Lua keywords, the user's globals and _G
 *
 * Only names that evaluate are offered: a node is reached by the global it was assigned to (or
 * node("name")), so node names are offered only to the commands that take them. Candidates are
 * whole words that replace the word ("tide.matmul"), sorted and unique, one name per function
 * (matmul, not mat_mul too; sum, not reduce_sum too: repl_preferred_name). Completion
 * must never disturb the session: it reads Lua tables with raw accesses and lua_next only (no
 * metamethod, no Lua code), under lua_pcall in case memory runs out, and leaves the Lua stack as it
 * found it.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

/* A growing list of malloc'd strings. On out-of-memory the list stops growing (completion is a
 * convenience: fewer candidates are better than none). */
typedef struct cands {
    char **v;
    int n, cap;
} cands;

static void cands_add(cands *c, const char *head, size_t head_len, const char *tail)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        char **v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v)
            return;
        c->v = v;
        c->cap = cap;
    }
    size_t tail_len = strlen(tail);
    char *s = malloc(head_len + tail_len + 1);
    if (!s)
        return;
    memcpy(s, head, head_len);
    memcpy(s + head_len, tail, tail_len + 1);
    c->v[c->n++] = s;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts, removes duplicates, hands the array over (NULL when empty). */
static char **cands_finish(cands *c, int *count)
{
    if (c->n == 0) {
        free(c->v);
        *count = 0;
        return NULL;
    }
    qsort(c->v, (size_t)c->n, sizeof *c->v, compare_strings);
    int kept = 1;
    for (int i = 1; i < c->n; i++) {
        if (strcmp(c->v[i], c->v[kept - 1]) == 0)
            free(c->v[i]);
        else
            c->v[kept++] = c->v[i];
    }
    *count = kept;
    return c->v;
}

static bool starts_with(const char *s, const char *prefix, size_t len)
{
    return strncmp(s, prefix, len) == 0;
}

static bool is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

static bool is_word_char(char ch, bool slash)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == ':' || (slash && ch == '/');
}

/* ------------------------------------------------------------------ Lua tables */

/* Adds head + key for every string key of the table at idx that is an identifier starting with
 * prefix (keys starting with "__" only when the prefix starts with '_'); functions_only keeps the
 * keys whose values are functions. */
static void add_table_keys(lua_State *L, int idx, cands *c, const char *head, size_t head_len,
                           const char *prefix, bool functions_only)
{
    size_t prefix_len = strlen(prefix);
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        /* Only string keys: lua_tostring on a number key would convert it and derail lua_next. */
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *key = lua_tostring(L, -2);
            bool hidden = key[0] == '_' && key[1] == '_' && prefix[0] != '_';
            bool wanted = !functions_only || lua_type(L, -1) == LUA_TFUNCTION;
            if (wanted && !hidden && is_identifier(key) && starts_with(key, prefix, prefix_len))
                cands_add(c, head, head_len, key);
        }
        lua_pop(L, 1);
    }
}

/* Pushes the table of the methods of the value at idx: its metatable's __index when that is a table,
 * else the metatable's __methods or methods field (a table an __index function looks in: tensors and
 * node handles). False (nothing pushed) when there is none. */
static bool push_index_table(lua_State *L, int idx)
{
    static const char *const fields[] = {"__index", "__methods", "methods"};
    if (!lua_getmetatable(L, idx))
        return false;
    for (int i = 0; i < 3; i++) {
        lua_pushstring(L, fields[i]);
        if (lua_rawget(L, -2) == LUA_TTABLE) {
            lua_remove(L, -2);
            return true;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return false;
}

/* The fields of the value at idx (a table's own keys, then its metatables' __index tables, a few
 * levels deep: methods of userdata, strings, objects). */
static void add_fields(lua_State *L, int idx, cands *c, const char *head, size_t head_len,
                       const char *prefix, bool functions_only)
{
    int top = lua_gettop(L);
    lua_pushvalue(L, idx);
    for (int depth = 0; depth < 8; depth++) {
        if (lua_type(L, -1) == LUA_TTABLE)
            add_table_keys(L, -1, c, head, head_len, prefix, functions_only);
        if (!push_index_table(L, -1))
            break;
    }
    lua_settop(L, top);
}

/* Pushes value[key] read raw: the table's own field, else its metatables' __index tables. Pushes nil
 * when there is none. */
static void push_field(lua_State *L, int idx, const char *key, size_t key_len)
{
    int top = lua_gettop(L);
    lua_pushvalue(L, idx);
    for (int depth = 0; depth < 8; depth++) {
        if (lua_type(L, -1) == LUA_TTABLE) {
            lua_pushlstring(L, key, key_len);
            if (lua_rawget(L, -2) != LUA_TNIL)
                break;
            lua_pop(L, 1);
        }
        if (!push_index_table(L, -1)) {
            lua_pushnil(L);
            break;
        }
    }
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
}

/* Pushes the global called name[0..len): the user's globals first, then _G. */
static void push_global(lua_State *L, const char *name, size_t len)
{
    repl_push_globals(L);
    lua_pushlstring(L, name, len);
    if (lua_rawget(L, -2) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
        lua_pushlstring(L, name, len);
        lua_rawget(L, -2);
        lua_remove(L, -2);
    }
    lua_remove(L, -2);
}

/* "a.b:c" with the cursor after 'c': the fields of a.b starting with "c", as "a.b:cxx". */
static void add_field_words(lua_State *L, const char *word, size_t len, cands *c)
{
    int top = lua_gettop(L);
    size_t last = len;
    while (last > 0 && word[last - 1] != '.' && word[last - 1] != ':')
        last--;
    /* word[0..last-1) is the object's path, word[last-1] the separator, the rest the prefix. */
    size_t i = 0;
    while (i < last - 1 && word[i] != '.' && word[i] != ':')
        i++;
    push_global(L, word, i);
    while (i < last - 1 && !lua_isnil(L, -1)) {
        size_t start = ++i;
        while (i < last - 1 && word[i] != '.' && word[i] != ':')
            i++;
        push_field(L, -1, word + start, i - start);
        lua_remove(L, -2);
    }
    if (!lua_isnil(L, -1)) {
        char prefix[256];
        size_t plen = len - last < sizeof prefix ? len - last : sizeof prefix - 1;
        memcpy(prefix, word + last, plen);
        prefix[plen] = '\0';
        add_fields(L, -1, c, word, last, prefix, word[last - 1] == ':');
    }
    lua_settop(L, top);
}

/* ------------------------------------------------------------------ word lists */

static const char *const keywords[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while", NULL,
};

static void add_list(const char *const *list, const char *prefix, size_t len, cands *c,
                     const char *head)
{
    for (int i = 0; list[i]; i++)
        if (starts_with(list[i], prefix, len))
            cands_add(c, head, strlen(head), list[i]);
}

static void add_globals(lua_State *L, const char *prefix, cands *c)
{
    repl_push_globals(L);
    add_table_keys(L, -1, c, "", 0, prefix, false);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    add_table_keys(L, -1, c, "", 0, prefix, false);
    lua_pop(L, 2);
}

/* The graph's node names starting with prefix (the arguments of :info, :nodes, :watch...). */
static void add_nodes(repl *r, const char *prefix, size_t len, cands *c)
{
    if (!r->graph)
        return;
    int n = tide_graph_num_nodes(r->graph);
    for (int i = 0; i < n; i++) {
        const char *name = tide_node_name(tide_graph_node_at(r->graph, i));
        if (name && starts_with(name, prefix, len))
            cands_add(c, "", 0, name);
    }
}

/* ------------------------------------------------------------------ entry point */

/* The length of the first word of a ':' line ("help" for ":help x"), and whether end is inside it. */
static size_t command_word(const char *line, int end, bool *cursor_inside)
{
    size_t n = 1;
    while (line[n] && !isspace((unsigned char)line[n]))
        n++;
    *cursor_inside = (size_t)end <= n;
    return n - 1;
}

/* What to look up in Lua tables, run under lua_pcall so that running out of memory there (the only
 * error raw accesses can raise) cannot escape: the candidates found until then are kept. */
typedef enum lookup { LOOKUP_GLOBALS, LOOKUP_HELP, LOOKUP_FIELDS, LOOKUP_ALIASES } lookup;

typedef struct query {
    lookup what;
    const char *prefix;
    size_t len;
    cands *c;
    bool *drop; /* LOOKUP_ALIASES: which candidates to drop */
} query;

/* Pushes the value a candidate word names ("matmul", "tide.mat_mul", "t:reshape"), read raw. */
static void push_word_value(lua_State *L, const char *word)
{
    size_t i = strcspn(word, ".:");
    push_global(L, word, i);
    while (word[i] && !lua_isnil(L, -1)) {
        size_t start = ++i;
        i += strcspn(word + i, ".:");
        push_field(L, -1, word + start, i - start);
        lua_remove(L, -2);
    }
}

static int compare_keys(const void *key, const void *elem)
{
    return strcmp(key, *(char *const *)elem);
}

/* Marks in drop the candidates that are aliases of another candidate (mat_mul when matmul is listed
 * too, and reduce_sum next to sum): a function's preferred name (repl_preferred_name) stays. The
 * candidates are sorted and unique. */
static void drop_aliases(lua_State *L, const cands *c, bool *drop)
{
    for (int k = 0; k < c->n; k++) {
        const char *word = c->v[k];
        push_word_value(L, word);
        const char *preferred = repl_preferred_name(L, -1);
        lua_pop(L, 1);
        size_t head = strlen(word);
        while (head > 0 && word[head - 1] != '.' && word[head - 1] != ':')
            head--;
        if (!preferred || strcmp(word + head, preferred) == 0)
            continue;
        char other[256];
        if (head + strlen(preferred) >= sizeof other)
            continue;
        memcpy(other, word, head);
        strcpy(other + head, preferred);
        drop[k] = bsearch(other, c->v, (size_t)c->n, sizeof *c->v, compare_keys) != NULL;
    }
}

static int lookup_protected(lua_State *L)
{
    query *q = lua_touserdata(L, 1);
    switch (q->what) {
    case LOOKUP_ALIASES:
        drop_aliases(L, q->c, q->drop);
        break;
    case LOOKUP_FIELDS:
        add_field_words(L, q->prefix, q->len, q->c);
        break;
    case LOOKUP_HELP:
        /* :help also knows the tide module's functions when they are not globals. */
        push_global(L, "tide", 4);
        if (lua_type(L, -1) == LUA_TTABLE)
            add_table_keys(L, -1, q->c, "", 0, q->prefix, false);
        lua_pop(L, 1);
        /* fallthrough */
    case LOOKUP_GLOBALS:
        add_globals(L, q->prefix, q->c);
        break;
    }
    return 0;
}

static void lookup_lua(lua_State *L, lookup what, const char *prefix, size_t len, cands *c, bool *drop)
{
    query q = {what, prefix, len, c, drop};
    int top = lua_gettop(L);
    if (!lua_checkstack(L, 2))
        return;
    lua_pushcfunction(L, lookup_protected);
    lua_pushlightuserdata(L, &q);
    lua_pcall(L, 1, 0, 0); /* an error is out of memory: keep what was found */
    lua_settop(L, top);
}

char **repl_complete(repl *r, const char *line, int end, int *count)
{
    cands c = {0};
    *count = 0;
    if (!r || !r->L || !line || end < 0 || (size_t)end > strlen(line))
        return NULL;

    /* Commands: the context is the first word of a ':' line. */
    bool command_line = line[0] == ':', in_first = false;
    size_t cmd_len = command_line ? command_word(line, end, &in_first) : 0;
    if (command_line && in_first) {
        add_list(repl_command_names(), line + 1, (size_t)end - 1, &c, ":");
        return cands_finish(&c, count);
    }
    static const char *const node_commands[] = {"info",  "nodes", "watch", "unwatch", "tensor", "break", "until",
                                                "print", "p",     "ni",    "li",      "lo",     "set",   NULL};
    bool node_arg = false;
    for (int i = 0; command_line && node_commands[i]; i++)
        node_arg |= cmd_len == strlen(node_commands[i]) && starts_with(line + 1, node_commands[i], cmd_len);
    bool help_arg = command_line && cmd_len == 4 && starts_with(line + 1, "help", 4);

    int start = end;
    while (start > 0 && is_word_char(line[start - 1], node_arg))
        start--;
    size_t len = (size_t)(end - start);
    char prefix[256];
    if (len >= sizeof prefix)
        return NULL;
    memcpy(prefix, line + start, len);
    prefix[len] = '\0';

    if (node_arg) {
        add_nodes(r, prefix, len, &c);
        return cands_finish(&c, count);
    }
    /* Lua: only names that evaluate (globals, fields, keywords), not node names that are no global
     * (node("name") reaches those), and one name per function. */
    if (strpbrk(prefix, ".:")) {
        lookup_lua(r->L, LOOKUP_FIELDS, prefix, len, &c, NULL);
    } else if (help_arg) {
        lookup_lua(r->L, LOOKUP_HELP, prefix, len, &c, NULL);
        add_list(repl_command_names(), prefix, len, &c, "");
    } else {
        lookup_lua(r->L, LOOKUP_GLOBALS, prefix, len, &c, NULL);
        add_list(keywords, prefix, len, &c, "");
    }
    char **words = cands_finish(&c, count);
    bool *drop = *count ? calloc((size_t)*count, sizeof *drop) : NULL;
    if (!drop) /* none, or out of memory: aliases stay listed */
        return words;
    c = (cands){words, *count, *count};
    lookup_lua(r->L, LOOKUP_ALIASES, NULL, 0, &c, drop);
    int kept = 0;
    for (int i = 0; i < c.n; i++) {
        if (!drop[i])
            c.v[kept++] = c.v[i];
        else
            free(c.v[i]);
    }
    free(drop);
    *count = kept; /* at least the preferred name of each dropped alias is kept */
    return c.v;
}
