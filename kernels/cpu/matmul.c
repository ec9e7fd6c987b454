/* matmul.c — placeholder until this family lands. */
typedef int tide_placeholder_matmul_cpu;
