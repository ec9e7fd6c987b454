/* math.c — placeholder until this family lands. */
typedef int tide_placeholder_math_cpu;
