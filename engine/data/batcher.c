/* batcher.c — batching and shuffling (placeholder) */
