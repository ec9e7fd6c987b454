/* main.c — the `tide` program: reads the options, opens the REPL (repl.c) and picks the mode: a
 * script (`tide FILE.lua args`), statements (`tide -e 'print(1)'`), the interactive prompt when stdin
 * is a terminal, or entries read from a pipe; or, as `tide serve FILE.db`, only the web views of a run
 * log (web/web.h) until SIGINT or SIGTERM. `--web` starts the same server on the REPL's own log (the
 * `:web` command). The exit status is 0, or 1 when a statement failed (or the server could not start),
 * 2 for bad options, 3 when a script (or -e, or piped statements) ran but its run log lost records
 * (told on stderr; --log-best-effort makes that 0), 130 when Ctrl-C stopped a script or -e statements. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphdef_repl.h"
#include "repl.h"
#include "stop_signals.h"
#include "tide_config.h"
#include "web.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tide [options] [FILE.lua [ARGS...]]\n"
            "       tide serve FILE.db [--port N] [--bind ADDR] [limits]\n"
            "       tide run-graph FILE.pb --fetch NAME [--feed NAME=FILE.npy]... (--help)\n"
            "\n"
            "tide is a TensorFlow-style dataflow engine driven from Lua. Without FILE it starts the\n"
            "interactive prompt (or, when stdin is not a terminal, reads statements from it).\n"
            "\n"
            "  FILE.lua [ARGS]   run a script; ARGS are in the table `arg` (arg[0] is FILE)\n"
            "  -e STATEMENT      run STATEMENT (may be repeated), then exit unless -i\n"
            "  -i                enter the prompt after the script or -e statements\n"
            "  --debug           a debugger prompt wherever a breakpoint stops a run (dbg.break_at,\n"
            "                    dbg.on_bad; docs/debugger.md), read from stdin even when it is\n"
            "                    not a terminal\n"
            "  --threads N       executor threads (default: one per core, or $TIDE_THREADS)\n"
            "  --devices N       virtual CPU devices /cpu:0../cpu:N-1 (default 1, or $TIDE_CPU_DEVICES)\n"
            "  --log FILE        record sessions, graphs and runs in the run log FILE (SQLite,\n"
            "                    docs/run-log.md); default ./tide-runs.db, or $TIDE_LOG\n"
            "  --no-log          no run log (also TIDE_LOG=\"\")\n"
            "  --log-best-effort a script whose run log cannot open, or loses records (a full\n"
            "                    disk, a failed write), runs on and exits 0; without it such a\n"
            "                    script does not start, or exits with status 3. Losses are\n"
            "                    reported on stderr either way (docs/run-log.md)\n"
            "  --web             serve the run log's browser views while tide runs (:web; docs/web.md)\n"
            "  --port N          the port of --web (default 6006; 0: any free port)\n"
            "  -q, --quiet       no banner\n"
            "  -h, --help        this help\n"
            "  --version         the version\n"
            "\n"
            "`tide serve FILE.db` serves the browser views of the run log FILE.db (runs, graph,\n"
            "timeline, tensors) at http://127.0.0.1:6006/ until Ctrl-C: --port N (0: any free\n"
            "port), --bind ADDR to listen on another address than 127.0.0.1. Limits (docs/web.md):\n"
            "--max-connections N (1000), --max-per-address N (64), --header-timeout SECONDS (10).\n"
            "\n"
            "Exit status: 0; 1 when a statement failed; 2 for bad options; 3 when the run log lost\n"
            "records and --log-best-effort was not given (scripts, -e and piped statements only);\n"
            "130 when Ctrl-C stopped a script or -e statements.\n"
            "\n"
            "At the prompt, :help lists the commands and docs/repl.md is the tutorial.\n");
}

static int parse_count(const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < lo || n > hi) {
        fprintf(stderr, "tide: %s wants a number from %d to %d, not '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Seconds (a decimal number) as milliseconds, from 1 ms to an hour. */
static int parse_seconds_ms(const char *opt, const char *v, int *ms)
{
    char *end;
    double s = strtod(v, &end);
    if (!*v || *end || !(s >= 0.001 && s <= 3600)) {
        fprintf(stderr, "tide: %s wants seconds from 0.001 to 3600, not '%s'\n", opt, v);
        return -1;
    }
    *ms = (int)(s * 1000 + 0.5);
    return 0;
}

/* `tide serve FILE.db [--port N] [--bind ADDR] [limits]`: argv[0] is "serve". Serves until SIGINT/SIGTERM. */
static int serve(int argc, char **argv)
{
    enum { OPT_PORT = 256, OPT_BIND, OPT_MAX_CONNECTIONS, OPT_MAX_PER_ADDRESS, OPT_HEADER_TIMEOUT };
    static const struct option longs[] = {
        {"port", required_argument, 0, OPT_PORT}, {"bind", required_argument, 0, OPT_BIND},
        {"max-connections", required_argument, 0, OPT_MAX_CONNECTIONS},
        {"max-per-address", required_argument, 0, OPT_MAX_PER_ADDRESS},
        {"header-timeout", required_argument, 0, OPT_HEADER_TIMEOUT},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    tide_web_options o;
    tide_web_options_init(&o);
    int c, port = 6006;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case OPT_PORT:
            if (parse_count("--port", optarg, 0, 65535, &port))
                return 2;
            break;
        case OPT_BIND: o.bind = optarg; break;
        case OPT_MAX_CONNECTIONS:
            if (parse_count("--max-connections", optarg, 1, 100000, &o.max_connections))
                return 2;
            break;
        case OPT_MAX_PER_ADDRESS:
            if (parse_count("--max-per-address", optarg, 1, 100000, &o.max_per_address))
                return 2;
            break;
        case OPT_HEADER_TIMEOUT:
            if (parse_seconds_ms("--header-timeout", optarg, &o.header_timeout_ms))
                return 2;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tide serve: give one run log: tide serve FILE.db [--port N] [--bind ADDR]\n");
        return 2;
    }
    o.db_path = argv[optind];
    o.port = port == 0 ? -1 : port;
    /* The server's threads inherit this mask: the signals wait for sigwait below. OpenBLAS's threads,
     * started when the library loaded, do not block them: one that gets a signal forwards it here (a
     * SIGTERM's default action there ended `tide serve` with status -15 about 1 time in 30). */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    repl_forward_signals(pthread_self(), &stop);
    tide_error *err = tide_error_new();
    tide_web *w = tide_web_start(&o, err);
    if (!w) {
        fprintf(stderr, "tide serve: %s\n", tide_error_message(err));
        tide_error_free(err);
        return 1;
    }
    tide_error_free(err);
    printf("tide: serving %s at %s\n", o.db_path, tide_web_url(w));
    fflush(stdout);
    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    tide_web_stop(w);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "serve") == 0)
        return serve(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "run-graph") == 0) /* a TensorFlow GraphDef: run_graph.c */
        return repl_run_graph_main(argc - 1, argv + 1);
    repl_options o = {.exit_on_second_interrupt = true};
    const char *statements[64];
    int nstatements = 0;
    bool interactive_after = false, no_log = false, web = false;
    int web_port = 6006;
    const char *log_path = getenv("TIDE_LOG");
    if (!log_path)
        log_path = "tide-runs.db";
    enum { OPT_THREADS = 256, OPT_DEVICES, OPT_LOG, OPT_NO_LOG, OPT_VERSION, OPT_WEB, OPT_PORT, OPT_BEST_EFFORT, OPT_DEBUG };
    static const struct option longs[] = {
        {"threads", required_argument, 0, OPT_THREADS}, {"devices", required_argument, 0, OPT_DEVICES},
        {"log", required_argument, 0, OPT_LOG},         {"no-log", no_argument, 0, OPT_NO_LOG},
        {"quiet", no_argument, 0, 'q'},                 {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, OPT_VERSION},       {"web", no_argument, 0, OPT_WEB},
        {"port", required_argument, 0, OPT_PORT},       {"log-best-effort", no_argument, 0, OPT_BEST_EFFORT},
        {"debug", no_argument, 0, OPT_DEBUG},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "+e:iqh", longs, NULL)) != -1) {
        switch (c) {
        case 'e':
            if (nstatements == 64) {
                fprintf(stderr, "tide: at most 64 -e statements\n");
                return 2;
            }
            statements[nstatements++] = optarg;
            break;
        case 'i': interactive_after = true; break;
        case 'q': o.quiet = true; break;
        case 'h': usage(stdout); return 0;
        case OPT_VERSION: printf("tide %s\n", TIDE_VERSION); return 0;
        case OPT_THREADS:
            if (parse_count("--threads", optarg, 1, 1024, &o.num_threads))
                return 2;
            break;
        case OPT_DEVICES:
            if (parse_count("--devices", optarg, 1, 64, &o.num_cpu_devices))
                return 2;
            break;
        case OPT_LOG: log_path = optarg; break;
        case OPT_NO_LOG: no_log = true; break;
        case OPT_BEST_EFFORT: o.log_best_effort = true; break;
        case OPT_DEBUG: o.debug = true; break;
        case OPT_WEB: web = true; break;
        case OPT_PORT:
            if (parse_count("--port", optarg, 0, 65535, &web_port))
                return 2;
            break;
        default: usage(stderr); return 2;
        }
    }
    if (web_port != 6006 && !web) {
        fprintf(stderr, "tide: --port goes with --web (or `tide serve FILE.db --port N`)\n");
        return 2;
    }
    const char *script = optind < argc ? argv[optind] : NULL;
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    o.interactive = tty && ((!script && !nstatements) || interactive_after);
    o.log_path = no_log || !log_path[0] ? NULL : log_path;

    if (!o.log_path)
        o.log_off_reason = "started with --no-log";
    tide_error *err = tide_error_new();
    repl *r = repl_new(&o, err);
    char reason[512];
    if (!r && o.log_path) {
        /* At the prompt a run log that cannot open is not worth refusing to start; a script asked for a
         * log it would not get, so it does not start unless --log-best-effort says it may. */
        if (!o.interactive && !o.log_best_effort) {
            fprintf(stderr, "tide: %s\ntide: nothing was run: give another --log FILE, --no-log, or "
                            "--log-best-effort to run without the log\n",
                    tide_error_message(err));
            tide_error_free(err);
            return 1;
        }
        fprintf(stderr, "tide: no run log: %s\n", tide_error_message(err));
        snprintf(reason, sizeof reason, "%s", tide_error_message(err));
        o.log_off_reason = reason;
        o.log_path = NULL;
        tide_error_clear(err);
        r = repl_new(&o, err);
    }
    if (!r) {
        fprintf(stderr, "tide: %s\n", tide_error_message(err));
        tide_error_free(err);
        return 1;
    }
    tide_error_free(err);
    int status = 0;
    if (web) { /* the server on the REPL's own log, as :web PORT */
        char command[32];
        snprintf(command, sizeof command, ":web %d", web_port);
        if (repl_eval(r, command, "(command line)") != REPL_DONE) {
            repl_free(r);
            return 1;
        }
    }
    for (int i = 0; i < nstatements && !r->quit; i++) {
        repl_result res = repl_eval(r, statements[i], "(command line)");
        if (res == REPL_INCOMPLETE)
            fprintf(stderr, "error: -e '%s': the statement is unfinished\n", statements[i]);
        if (res == REPL_INCOMPLETE || res == REPL_FAILED) {
            status = r->entry_interrupted ? REPL_INTERRUPTED_STATUS : 1;
            break;
        }
    }
    if (status == 0 && script && !r->quit)
        status = repl_run_script(r, script, argc - optind - 1, argv + optind + 1);
    if (r->quit)
        status = r->exit_status;
    else if (status == 0 && ((!script && !nstatements) || interactive_after)) {
        if (o.interactive) {
            if (!o.quiet)
                printf("tide %s — Lua %s.%s; %d device%s, %d threads. :help for commands, Ctrl-D to leave.\n",
                       TIDE_VERSION, LUA_VERSION_MAJOR, LUA_VERSION_MINOR, tide_engine_num_devices(r->engine),
                       tide_engine_num_devices(r->engine) == 1 ? "" : "s", tide_engine_num_threads(r->engine));
            status = repl_run_prompt(r);
        } else
            status = repl_run_stream(r, stdin, "stdin");
    }
    bool scripted = !o.interactive && (script || nstatements || !tty);
    if (repl_log_finish(r) && scripted && !o.log_best_effort && status == 0) {
        fprintf(stderr, "tide: exit status 3: the run log is incomplete (--log-best-effort would exit 0)\n");
        status = 3;
    }
    repl_free(r);
    return status;
}
