/* test_debugger_keep.c — the debugger's keep mode (repl/debugger_dump.c) in-process: what it holds is
 * released when it is switched off, or when the next run() starts, as the device's bytes in use show.
 *
 * A variable of 64 Ki floats, h = v * 2, y = sum(h). Without keep mode a run(y) leaves nothing held; with
 * `:keep on` the run's values stay (h's 256 KiB among them) and `:keep` says how many; the next run()
 * lets them go before it starts (so at most one run's values are held); `:keep off` releases them at
 * once; dbg.keep(false) too. Under the sanitizer build, LeakSanitizer checks that nothing is left.
 * Prints "ok N - ..." / "FAIL N - ..." lines; exits 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debugger.h"

static int checks, failures;

static void check(const char *what, bool ok, long long a, long long b)
{
    checks++;
    if (!ok)
        failures++;
    printf("%s %d - %s", ok ? "ok" : "FAIL", checks, what);
    if (!ok)
        printf(" (%lld, %lld)", a, b);
    printf("\n");
    fflush(stdout);
}

static bool eval(repl *r, const char *entry) { return repl_eval(r, entry, "test") == REPL_DONE; }

static long long in_use(repl *r)
{
    int64_t bytes = 0;
    tide_engine_device_memory(r->engine, 0, &bytes, NULL);
    return (long long)bytes;
}

int main(void)
{
    repl_options o = {.num_threads = 2, .log_off_reason = "test", .quiet = true};
    tide_error *err = tide_error_new();
    repl *r = repl_new(&o, err);
    if (!r) {
        fprintf(stderr, "repl_new: %s\n", tide_error_message(err));
        return 1;
    }
    const long long h_bytes = 65536 * 4;
    bool ok = eval(r, "v = variable(random_uniform({65536}))") && eval(r, "h = v * 2.0") && eval(r, "y = sum(h)") &&
              eval(r, "run(init())") && eval(r, "run(y)");
    check("the graph runs", ok, 0, 0);
    long long base = in_use(r);
    ok = eval(r, "run(y)");
    check("without keep mode a run leaves nothing held", ok && in_use(r) == base, in_use(r), base);
    ok = eval(r, ":keep on") && eval(r, "run(y)");
    long long kept = in_use(r);
    check("keep mode: the run's values stay held (h among them)", ok && kept >= base + h_bytes, kept, base);
    ok = eval(r, "run(y)");
    check("the next run lets the last one's values go first: one run's values held", ok && in_use(r) == kept,
          in_use(r), kept);
    char msg[256];
    repl_debugger_keep_status(r->debugger, msg, sizeof msg);
    check("`:keep` says what is held", strstr(msg, "keep mode on: ") && strstr(msg, "values of step"), 0, 0);
    ok = eval(r, ":keep off");
    check("`:keep off` releases them at once", ok && in_use(r) == base, in_use(r), base);
    repl_debugger_keep_status(r->debugger, msg, sizeof msg);
    check("`:keep` then says it is off", strncmp(msg, "keep mode off", 13) == 0, 0, 0);
    ok = eval(r, "assert(dbg.keep(true) == true)") && eval(r, "run(y)");
    check("dbg.keep(true): held again", ok && in_use(r) >= base + h_bytes, in_use(r), base);
    ok = eval(r, "assert(dbg.keep(false) == false)");
    check("dbg.keep(false): released", ok && in_use(r) <= base, in_use(r), base); /* < : y's last value went too */
    ok = eval(r, "run(y)");
    check("off again: a run leaves nothing held", ok && in_use(r) == base, in_use(r), base);
    repl_free(r);
    tide_error_free(err);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
