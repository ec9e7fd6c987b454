/* test_print_interrupt.c — the prompt printing a variable reads its value by a run (repl_print_value,
 * repl/lua_node.c); a Ctrl-C that lands after the entry's own code but before or during that read must
 * stop the entry as anywhere else ("interrupted (Ctrl-C)", nothing printed), not be dropped while the
 * value is printed and the entry reported done. The Ctrl-C is r->interrupted set as the SIGINT handler
 * sets it, just before the print; the print runs protected, as the prompt runs it.
 * Prints "ok N - ..." / "FAIL N - ..." lines; exits 1 on any failure. */
#include <string.h>

#include "repl_check.h"

static FILE *printed;

static int print_global_v(lua_State *L)
{
    repl_push_globals(L);
    lua_getfield(L, -1, "v");
    repl_print_value(L, lua_gettop(L), printed);
    return 0;
}

/* Prints v as the prompt does; returns what was printed (static), and the error message, if any, in
 * error (static too). */
static const char *print_v(repl *r, const char **error)
{
    static char text[512], message[256];
    printed = tmpfile();
    lua_pushcfunction(r->L, print_global_v);
    int st = lua_pcall(r->L, 0, 0, 0);
    snprintf(message, sizeof message, "%s", st == LUA_OK ? "" : lua_tostring(r->L, -1));
    if (st != LUA_OK)
        lua_pop(r->L, 1);
    rewind(printed);
    size_t n = fread(text, 1, sizeof text - 1, printed);
    text[n] = '\0';
    fclose(printed);
    *error = message;
    return text;
}

int main(void)
{
    repl *r = check_repl_new();
    if (!r)
        return 1;
    bool ok = eval(r, "v = variable(constant(3.5))") && eval(r, "run(init())");
    check("the variable is made and initialised", ok, NULL);
    const char *error, *text = print_v(r, &error);
    check("without a Ctrl-C its value is printed", strstr(text, "3.5") && !error[0], text);
    r->interrupted = 1; /* what on_sigint does: the Ctrl-C came after the entry's code, before the read */
    text = print_v(r, &error);
    check("a Ctrl-C before the read stops the print with the interrupted error", strstr(error, "interrupted (Ctrl-C)"),
          error);
    check("... and nothing is printed", !text[0], text);
    r->interrupted = 0;
    ok = eval(r, "v");
    check("the next entry prints the value again", ok, NULL);
    return check_finish(r);
}
