/* reduce.c — placeholder until this family lands. */
typedef int tide_placeholder_reduce_cpu;
