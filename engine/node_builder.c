/* node_builder.c — in progress. */
typedef int tide_placeholder_node_builder;
