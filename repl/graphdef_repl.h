/* graphdef_repl.h — TensorFlow GraphDefs at the prompt and on the command line (docs/tensorflow.md),
 * on the library tide_graphdef (engine/graphdef/tide_graphdef.h):
 *   graphdef_repl.c  Lua's import_graph and export_graph, the :import and :export commands
 *   run_graph.c      `tide run-graph FILE.pb --fetch NAME --feed NAME=FILE.npy`
 */
#ifndef TIDE_REPL_GRAPHDEF_H
#define TIDE_REPL_GRAPHDEF_H

#include "repl.h"

/* Registers import_graph and export_graph (and their tide.help entries) into the table at the top. */
void repl_open_graphdef(lua_State *L);
/* :import FILE [SCOPE] and :export FILE [text|binary]; argv[0] is the command's name. */
repl_result repl_cmd_import(repl *r, int argc, char **argv);
repl_result repl_cmd_export(repl *r, int argc, char **argv);
/* `tide run-graph ...`: argv[0] is "run-graph". Returns the process's exit status. */
int repl_run_graph_main(int argc, char **argv);

#endif
