/* logic_ops.c — placeholder until this family lands. */
typedef int tide_placeholder_logic_ops_ops;
