/* linalg_ops.c — placeholder until this family lands. */
typedef int tide_placeholder_linalg_ops_ops;
