/* repl_check.h — what the in-process REPL tests (test_debugger_web.c, test_debugger_keep.c) share: a
 * quiet REPL on 2 threads with no run log, entries evaluated as the prompt evaluates them, and
 * "ok N - ..." / "FAIL N - ..." lines counted for the exit status. Header-only: one test per program. */
#ifndef TIDE_TEST_REPL_CHECK_H
#define TIDE_TEST_REPL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "debugger.h"

static int checks, failures;

/* Prints "ok N - what", or "FAIL N - what: detail" (detail may be NULL), and counts a failure. */
static inline void check(const char *what, bool ok, const char *detail)
{
    checks++;
    if (!ok)
        failures++;
    printf("%s %d - %s%s%s\n", ok ? "ok" : "FAIL", checks, what, ok || !detail ? "" : ": ", ok || !detail ? "" : detail);
    fflush(stdout);
}

/* The same, with the two figures compared in the detail of a failure: "(a, b)". */
static inline void check_figures(const char *what, bool ok, long long a, long long b)
{
    char detail[64];
    snprintf(detail, sizeof detail, "(%lld, %lld)", a, b);
    check(what, ok, detail);
}

/* Evaluates one entry as the prompt would; true when it ran without an error. */
static inline bool eval(repl *r, const char *entry) { return repl_eval(r, entry, "test") == REPL_DONE; }

/* A quiet REPL with 2 threads and no run log; NULL (the message printed) when it cannot be made. */
static inline repl *check_repl_new(void)
{
    repl_options o = {.num_threads = 2, .log_off_reason = "test", .quiet = true};
    tide_error *err = tide_error_new();
    repl *r = repl_new(&o, err);
    if (!r)
        fprintf(stderr, "repl_new: %s\n", tide_error_message(err));
    tide_error_free(err);
    return r;
}

/* Frees r, prints the count of checks and failures, and returns the exit status (1 on any failure). */
static inline int check_finish(repl *r)
{
    repl_free(r);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

#endif
