/* graph_text.c — in progress. */
typedef int tide_placeholder_graph_text;
