/* graph_text.c — in progress. */
#include "internal.h"
char *tide_graph_to_text(const tide_graph *g, tide_error *err) { (void)g; tide_error_set(err, TIDE_UNIMPLEMENTED, "not yet"); return NULL; }
tide_status tide_graph_extend_text(tide_graph *g, const char *text, tide_error *err) { (void)g; (void)text; return tide_error_set(err, TIDE_UNIMPLEMENTED, "not yet"); }
