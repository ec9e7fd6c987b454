/* names.c — a string-keyed hash table (open addressing, linear probing) for node and variable names.
 * Keys are borrowed: the caller keeps them alive while they are in the table. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct slot {
    const char *key; /* NULL: empty; TOMBSTONE: removed */
    void *value;
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

static slot *find_slot(const tide_name_table *t, const char *key, bool for_insert)
{
    size_t mask = t->cap - 1, i = hash_str(key) & mask;
    slot *first_free = NULL;
    for (;;) {
        slot *s = &t->slots[i];
        if (!s->key)
            return for_insert && first_free ? first_free : s;
        if (s->key == TOMBSTONE) {
            if (!first_free)
                first_free = s;
        } else if (strcmp(s->key, key) == 0) {
            return s;
        }
        i = (i + 1) & mask;
    }
}

void *tide__names_get(const tide_name_table *t, const char *name)
{
    slot *s = find_slot(t, name, false);
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
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key && old[i].key != TOMBSTONE) {
            slot *s = find_slot(t, old[i].key, true);
            *s = old[i];
            t->used++;
        }
    free(old);
}

void tide__names_put(tide_name_table *t, const char *name, void *value)
{
    if ((t->used + 1) * 4 >= t->cap * 3)
        grow(t);
    slot *s = find_slot(t, name, true);
    if (!s->key || s->key == TOMBSTONE) {
        if (!s->key)
            t->used++;
        s->key = name;
    }
    s->value = value;
}

void tide__names_remove(tide_name_table *t, const char *name)
{
    slot *s = find_slot(t, name, false);
    if (s->key && s->key != TOMBSTONE) {
        s->key = TOMBSTONE;
        s->value = NULL;
    }
}
