/* graph.c — in progress. */
typedef int tide_placeholder_graph;
