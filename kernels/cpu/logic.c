/* logic.c — placeholder until this family lands. */
typedef int tide_placeholder_logic_cpu;
