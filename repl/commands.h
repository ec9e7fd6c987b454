/* commands.h — what commands.c (the command table and dispatch) and log_commands.c (the run-log
 * commands) share: the handlers of the run-log commands. A handler gets the command's words (argv[0]
 * is the command name without ':') and returns REPL_DONE, REPL_FAILED or REPL_QUIT. */
#ifndef TIDE_REPL_COMMANDS_H
#define TIDE_REPL_COMMANDS_H

#include "repl.h"

/* One ':' command (a row of a command table: commands.c's, debugger_commands.c's). */
typedef struct repl_command_entry {
    const char *name;
    const char *alias;    /* a documented short form, or NULL */
    int min_args, max_args;
    const char *synopsis; /* the arguments, as usage shows them */
    const char *summary;  /* one line for :help */
    const char *help;     /* the long help for :help NAME */
    repl_result (*run)(repl *r, int argc, char **argv);
    bool whole_line;      /* its one argument is the rest of the line as typed (argc 1 when empty) */
} repl_command_entry;

repl_result repl_cmd_runs(repl *r, int argc, char **argv);
repl_result repl_cmd_run(repl *r, int argc, char **argv);
/* "  capture: the session's last step was replayed; a graph on /sim:0 holds ..." (log_commands.c). */
void repl_print_capture(repl *r);
repl_result repl_cmd_tensor(repl *r, int argc, char **argv);
repl_result repl_cmd_sql(repl *r, int argc, char **argv);
repl_result repl_cmd_trace(repl *r, int argc, char **argv);
repl_result repl_cmd_watch(repl *r, int argc, char **argv);
repl_result repl_cmd_unwatch(repl *r, int argc, char **argv);
repl_result repl_cmd_prune(repl *r, int argc, char **argv);
repl_result repl_cmd_log(repl *r, int argc, char **argv);
/* "~/x" -> "$HOME/x" (malloc'd); other paths copied. NULL when out of memory. */
char *repl_expand_path(const char *path);
/* Commits what the store has queued (a failure is a warning on stderr); r->err is left clear. */
void repl_log_flush(repl *r);

#endif
