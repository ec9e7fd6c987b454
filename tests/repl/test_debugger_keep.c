/* test_debugger_keep.c — the debugger's keep mode (repl/debugger_dump.c) in-process: what it holds is
 * released when it is switched off, or when the next run() starts, as the device's bytes in use show.
 *
 * A variable of 64 Ki floats, h = v * 2, y = sum(h). Without keep mode a run(y) leaves nothing held; with
 * `:keep on` the run's values stay (h's 256 KiB among them) and `:keep` says how many; the next run()
 * lets them go before it starts (so at most one run's values are held); `:keep off` releases them at
 * once; dbg.keep(false) too. Under the sanitizer build, LeakSanitizer checks that nothing is left.
 * Prints "ok N - ..." / "FAIL N - ..." lines; exits 1 on any failure. */
#include <string.h>

#include "repl_check.h"

static long long in_use(repl *r)
{
    int64_t bytes = 0;
    tide_engine_device_memory(r->engine, 0, &bytes, NULL);
    return (long long)bytes;
}

int main(void)
{
    repl *r = check_repl_new();
    if (!r)
        return 1;
    const long long h_bytes = 65536 * 4;
    bool ok = eval(r, "v = variable(random_uniform({65536}))") && eval(r, "h = v * 2.0") && eval(r, "y = sum(h)") &&
              eval(r, "run(init())") && eval(r, "run(y)");
    check("the graph runs", ok, NULL);
    long long base = in_use(r);
    ok = eval(r, "run(y)");
    check_figures("without keep mode a run leaves nothing held", ok && in_use(r) == base, in_use(r), base);
    ok = eval(r, ":keep on") && eval(r, "run(y)");
    long long kept = in_use(r);
    check_figures("keep mode: the run's values stay held (h among them)", ok && kept >= base + h_bytes, kept, base);
    ok = eval(r, "run(y)");
    check_figures("the next run lets the last one's values go first: one run's values held", ok && in_use(r) == kept,
                  in_use(r), kept);
    char msg[256];
    repl_debugger_keep_status(r->debugger, msg, sizeof msg);
    check("`:keep` says what is held", strstr(msg, "keep mode on: ") && strstr(msg, "values of step"), msg);
    ok = eval(r, ":keep off");
    check_figures("`:keep off` releases them at once", ok && in_use(r) == base, in_use(r), base);
    repl_debugger_keep_status(r->debugger, msg, sizeof msg);
    check("`:keep` then says it is off", strncmp(msg, "keep mode off", 13) == 0, msg);
    ok = eval(r, "assert(dbg.keep(true) == true)") && eval(r, "run(y)");
    check_figures("dbg.keep(true): held again", ok && in_use(r) >= base + h_bytes, in_use(r), base);
    ok = eval(r, "assert(dbg.keep(false) == false)");
    /* <, not ==: y's last value went too */
    check_figures("dbg.keep(false): released", ok && in_use(r) <= base, in_use(r), base);
    ok = eval(r, "run(y)");
    check_figures("off again: a run leaves nothing held", ok && in_use(r) == base, in_use(r), base);
    return check_finish(r);
}
