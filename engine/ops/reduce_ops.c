/* reduce_ops.c — placeholder until this family lands. */
typedef int tide_placeholder_reduce_ops_ops;
