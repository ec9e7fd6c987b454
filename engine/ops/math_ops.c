/* math_ops.c — placeholder until this family lands. */
typedef int tide_placeholder_math_ops_ops;
