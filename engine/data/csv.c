/* csv.c — CSV reader (placeholder) */
