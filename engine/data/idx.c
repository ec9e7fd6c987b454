/* idx.c — IDX reader (placeholder) */
