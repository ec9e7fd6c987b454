/* npy.c — NPY reader and writer (placeholder) */
