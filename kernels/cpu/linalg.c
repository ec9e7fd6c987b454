/* linalg.c — placeholder until this family lands. */
typedef int tide_placeholder_linalg_cpu;
