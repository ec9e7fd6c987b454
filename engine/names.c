/* names.c — a string-keyed hash table (open addressing, linear probing) for node and variable names.
 * Keys are borrowed: the caller keeps them alive while they are in the table. Each slot keeps its key's
 * hash: a probe compares hashes before it reads the key (another cache line; a table of a million names
 * is 24 MB), and growing the table moves slots without reading any key. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct slot {
    const char *key; /* NULL: empty; TOMBSTONE: removed */
    void *value;
    uint64_t hash; /* of key, while it is live */
} slot;

struct tide_name_table {
    size_t cap, used; /* used counts live keys and tombstones */
    slot *slots;
};

static const char TOMBSTONE[] = "";

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

tide_name_table *tide__names_new(void)
{
    tide_name_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 64;
    t->slots = calloc(t->cap, sizeof(slot));
    if (!t->slots) {
        free(t);
        return NULL;
    }
    return t;
}

void tide__names_free(tide_name_table *t)
{
    if (!t)
        return;
    free(t->slots);
    free(t);
}

/* The slot holding key (its hash given), else the empty slot that ends its probe sequence, or (for_insert)
 * the first tombstone met before it. */
static slot *find_slot(const tide_name_table *t, const char *key, uint64_t hash, bool for_insert)
{
    size_t mask = t->cap - 1, i = hash & mask;
    slot *first_free = NULL;
    for (;;) {
        slot *s = &t->slots[i];
        if (!s->key)
            return for_insert && first_free ? first_free : s;
        if (s->key == TOMBSTONE) {
            if (!first_free)
                first_free = s;
        } else if (s->hash == hash && strcmp(s->key, key) == 0) {
            return s;
        }
        i = (i + 1) & mask;
    }
}

void *tide__names_get(const tide_name_table *t, const char *name)
{
    slot *s = find_slot(t, name, hash_str(name), false);
    return s->key && s->key != TOMBSTONE ? s->value : NULL;
}

static void grow(tide_name_table *t)
{
    slot *old = t->slots;
    size_t old_cap = t->cap;
    slot *fresh = calloc(old_cap * 2, sizeof(slot));
    if (!fresh)
        return; /* keep probing the full-ish table; correctness holds while a NULL slot remains */
    t->slots = fresh;
    t->cap = old_cap * 2;
    t->used = 0;
    size_t mask = t->cap - 1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key && old[i].key != TOMBSTONE) { /* keys are distinct: the first empty slot is its place */
            size_t j = old[i].hash & mask;
            while (fresh[j].key)
                j = (j + 1) & mask;
            fresh[j] = old[i];
            t->used++;
        }
    free(old);
}

void tide__names_put(tide_name_table *t, const char *name, void *value)
{
    if ((t->used + 1) * 4 >= t->cap * 3)
        grow(t);
    uint64_t hash = hash_str(name);
    slot *s = find_slot(t, name, hash, true);
    if (!s->key || s->key == TOMBSTONE) {
        if (!s->key)
            t->used++;
        s->key = name;
        s->hash = hash;
    }
    s->value = value;
}

void tide__names_remove(tide_name_table *t, const char *name)
{
    slot *s = find_slot(t, name, hash_str(name), false);
    if (s->key && s->key != TOMBSTONE) {
        s->key = TOMBSTONE;
        s->value = NULL;
    }
}
