/* random_ops.c — placeholder until this family lands. */
typedef int tide_placeholder_random_ops_ops;
