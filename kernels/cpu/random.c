/* random.c — placeholder until this family lands. */
typedef int tide_placeholder_random_cpu;
