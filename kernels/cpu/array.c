/* array.c — placeholder until this family lands. */
typedef int tide_placeholder_array_cpu;
