/* shape.c — placeholder until this family lands. */
typedef int tide_placeholder_shape_cpu;
