/* cast.c — placeholder until this family lands. */
typedef int tide_placeholder_cast_cpu;
