/* array_ops.c — placeholder until this family lands. */
typedef int tide_placeholder_array_ops_ops;
