/* lua_checkpoint.h — checkpoints at the prompt (lua_checkpoint.c, docs/checkpoints.md), on the
 * library tide_checkpoint (engine/checkpoint/tide_checkpoint.h). */
#ifndef TIDE_REPL_CHECKPOINT_H
#define TIDE_REPL_CHECKPOINT_H

#include "repl.h"

/* Registers saver and latest_checkpoint (and their help) into the table at the top. */
void repl_open_checkpoint(lua_State *L);
/* :save-vars PATH (every variable's value to PATH.npz) and :restore PATH|DIR (from the file, or the
 * latest checkpoint of the directory); argv[0] is the command's name. */
repl_result repl_cmd_save_vars(repl *r, int argc, char **argv);
repl_result repl_cmd_restore(repl *r, int argc, char **argv);

#endif
