/* arena.c — many small allocations freed together: a bump allocator over chunks of 64 KiB (larger
 * requests get a chunk of their own). The graph text reader keeps the names and input references of
 * every line in one, so that a text of a million lines costs a few dozen allocations, not millions. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { CHUNK_BYTES = 64 * 1024 };

struct tide_arena_chunk {
    struct tide_arena_chunk *previous;
    size_t used, size;
    max_align_t data[]; /* size bytes */
};

void *tide__arena_alloc(tide_arena *a, size_t size)
{
    const size_t align = _Alignof(max_align_t);
    size = (size + align - 1) / align * align;
    struct tide_arena_chunk *c = a->chunk;
    if (!c || c->size - c->used < size) {
        size_t bytes = size > CHUNK_BYTES ? size : CHUNK_BYTES;
        c = malloc(sizeof *c + bytes);
        if (!c)
            return NULL;
        c->previous = a->chunk;
        c->used = 0;
        c->size = bytes;
        a->chunk = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

char *tide__arena_strndup(tide_arena *a, const char *s, size_t n)
{
    char *copy = tide__arena_alloc(a, n + 1);
    if (copy) {
        memcpy(copy, s, n);
        copy[n] = 0;
    }
    return copy;
}

void tide__arena_free(tide_arena *a)
{
    for (struct tide_arena_chunk *c = a->chunk, *previous; c; c = previous) {
        previous = c->previous;
        free(c);
    }
    a->chunk = NULL;
}
