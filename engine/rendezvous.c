/* rendezvous.c — the in-process rendezvous: where a Send leaves a tensor and the matching Recv picks
 * it up, by reference (the contract is in rendezvous.h).
 *
 * Layout. RV_SHARDS shards, chosen by the step id, so that everything of one step (its transfers and
 * its abort record) lives under one mutex: abort and end_step touch one shard, and concurrent steps
 * rarely share a lock. A shard holds a short list of live steps; a step holds a hash table of its
 * keys (source device, destination device, tensor name; the step is the table). One Send/Recv pair
 * costs one lock round each, one hash of the key, and one small allocation (the entry, made by
 * whichever side comes first); the tensor is never copied.
 *
 * An entry's life within its step (drawn as a state machine):
 *
 *     (absent) --Send--> SENT    --Recv--> DONE
 *     (absent) --Recv--> WAITING --Send--> DONE
 *
 * DONE entries stay until end_step, so a second Send (or Recv) of a key in one step fails with
 * ALREADY_EXISTS even after the first transfer completed. Abort empties its step's table at once:
 * waiting Recvs complete with the error, unreceived values are released, and the step keeps only its
 * status and message, which every later Send or Recv of the step gets.
 *
 * Invariants (checked by rv_step_check in debug builds, at abort and end_step):
 *  1. step->count == the number of entries in the step's buckets
 *  2. step->live == the number of SENT or WAITING entries among them; shard->pending == the sum of
 *     live over the shard's steps (tide__rendezvous_pending adds up the shards)
 *  3. an aborted step (status != TIDE_OK) has no entries
 *
 * Callbacks are always called after the shard's lock is released, exactly once per Recv.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous.h"

#define RV_SHARDS 16          /* a power of two */
#define RV_INITIAL_BUCKETS 16 /* a power of two */

typedef enum rv_state { RV_SENT = 1, RV_WAITING = 2, RV_DONE = 3 } rv_state;

typedef struct rv_entry {
    struct rv_entry *next;    /* bucket chain; after detaching, the list being completed */
    uint64_t hash;
    rv_state state;
    tide_tensor *value;       /* SENT: the reference the entry holds */
    tide_recv_done done;      /* WAITING: the Recv's callback */
    void *arg;
    int64_t iteration;
    uint32_t len[4];          /* of src, dst, tensor, frame */
    char key[];               /* "src\0dst\0tensor\0frame\0" */
} rv_entry;

typedef struct rv_step {
    struct rv_step *next;
    uint64_t id;
    tide_status status;       /* TIDE_OK until aborted */
    char *message;            /* the abort's message (NULL: out of memory, a fixed text is used) */
    int count, live, nbuckets;
    rv_entry **buckets;
} rv_step;

typedef struct rv_shard {
    _Alignas(64) pthread_mutex_t lock; /* one cache line per shard at least: no false sharing */
    rv_step *steps;
    int pending;              /* SENT + WAITING entries of this shard's steps */
} rv_shard;

struct tide_rendezvous {
    rv_shard shards[RV_SHARDS];
};

/* A key as looked up: its parts, their lengths and its hash. */
typedef struct rv_probe {
    const char *part[4];
    uint32_t len[4];
    int64_t iteration;
    uint64_t hash;
} rv_probe;

static const char ABORT_FALLBACK[] = "the step was aborted";

/* ---------------------------------------------------------------- keys */

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w ^ (uint64_t)n << 56) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 32);
}

/* MurmurHash3's finaliser: every input bit reaches the low bits that pick a bucket. */
static uint64_t hash_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* False when a part is missing or absurdly long. */
static bool probe_init(rv_probe *p, const tide_rendezvous_key *key)
{
    p->part[0] = key->src_device;
    p->part[1] = key->dst_device;
    p->part[2] = key->tensor;
    p->part[3] = key->frame ? key->frame : "";
    p->iteration = key->iteration;
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)key->iteration * 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 4; i++) {
        if (!p->part[i])
            return false;
        size_t n = strlen(p->part[i]);
        if (n > 65535)
            return false;
        p->len[i] = (uint32_t)n;
        /* Device names share long prefixes ("/job:localhost/replica:0/task:0/device:"): their last
         * 16 bytes tell them apart; equal keys still compare every byte. */
        size_t skip = i < 2 && n > 16 ? n - 16 : 0;
        h = hash_bytes(h, p->part[i] + skip, n - skip);
    }
    p->hash = hash_mix(h);
    return true;
}

static bool entry_matches(const rv_entry *e, const rv_probe *p)
{
    if (e->hash != p->hash || e->iteration != p->iteration)
        return false;
    const char *k = e->key;
    for (int i = 0; i < 4; i++) {
        if (e->len[i] != p->len[i] || memcmp(k, p->part[i], p->len[i]) != 0)
            return false;
        k += p->len[i] + 1;
    }
    return true;
}

static rv_entry *entry_new(const rv_probe *p)
{
    size_t n = (size_t)p->len[0] + p->len[1] + p->len[2] + p->len[3] + 4;
    rv_entry *e = malloc(sizeof *e + n);
    if (!e)
        return NULL;
    *e = (rv_entry){.hash = p->hash, .iteration = p->iteration};
    char *k = e->key;
    for (int i = 0; i < 4; i++) {
        e->len[i] = p->len[i];
        memcpy(k, p->part[i], p->len[i]);
        k[p->len[i]] = '\0';
        k += p->len[i] + 1;
    }
    return e;
}

/* "tensor 'x:0' from A to B" for messages. */
static void describe(char *buf, size_t size, const tide_rendezvous_key *key)
{
    if (key->frame && key->frame[0])
        snprintf(buf, size, "tensor '%s' from %s to %s in step %llu (frame %s, iteration %lld)",
                 key->tensor ? key->tensor : "(null)", key->src_device ? key->src_device : "(null)",
                 key->dst_device ? key->dst_device : "(null)", (unsigned long long)key->step, key->frame,
                 (long long)key->iteration);
    else
        snprintf(buf, size, "tensor '%s' from %s to %s in step %llu", key->tensor ? key->tensor : "(null)",
                 key->src_device ? key->src_device : "(null)", key->dst_device ? key->dst_device : "(null)",
                 (unsigned long long)key->step);
}

/* ---------------------------------------------------------------- steps (call with the shard locked) */

static rv_shard *shard_of(tide_rendezvous *r, uint64_t step)
{
    return &r->shards[(step * 0x9E3779B97F4A7C15ULL) >> 60 & (RV_SHARDS - 1)];
}

static rv_step *step_find(rv_shard *sh, uint64_t id)
{
    for (rv_step *s = sh->steps; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

static rv_step *step_new(uint64_t id)
{
    rv_step *s = calloc(1, sizeof *s);
    rv_entry **buckets = calloc(RV_INITIAL_BUCKETS, sizeof *buckets);
    if (!s || !buckets) {
        free(s);
        free(buckets);
        return NULL;
    }
    s->id = id;
    s->nbuckets = RV_INITIAL_BUCKETS;
    s->buckets = buckets;
    return s;
}

/* The step's record, made when missing; NULL when out of memory. */
static rv_step *step_get(rv_shard *sh, uint64_t id)
{
    rv_step *s = step_find(sh, id);
    if (!s && (s = step_new(id))) {
        s->next = sh->steps;
        sh->steps = s;
    }
    return s;
}

static void step_unlink(rv_shard *sh, rv_step *s)
{
    rv_step **link = &sh->steps;
    while (*link != s)
        link = &(*link)->next;
    *link = s->next;
}

static rv_entry *step_lookup(const rv_step *s, const rv_probe *p)
{
    for (rv_entry *e = s->buckets[p->hash & (uint64_t)(s->nbuckets - 1)]; e; e = e->next)
        if (entry_matches(e, p))
            return e;
    return NULL;
}

/* Doubles the table when it is full (a failed growth only makes chains longer). */
static void step_insert(rv_step *s, rv_entry *e)
{
    if (s->count >= s->nbuckets) {
        int n = s->nbuckets * 2;
        rv_entry **grown = calloc((size_t)n, sizeof *grown);
        if (grown) {
            for (int b = 0; b < s->nbuckets; b++)
                for (rv_entry *x = s->buckets[b], *next; x; x = next) {
                    next = x->next;
                    rv_entry **slot = &grown[x->hash & (uint64_t)(n - 1)];
                    x->next = *slot;
                    *slot = x;
                }
            free(s->buckets);
            s->buckets = grown;
            s->nbuckets = n;
        }
    }
    rv_entry **slot = &s->buckets[e->hash & (uint64_t)(s->nbuckets - 1)];
    e->next = *slot;
    *slot = e;
    s->count++;
}

/* Takes every entry out of the table: returns them as one list (linked by next). */
static rv_entry *step_detach_all(rv_step *s)
{
    rv_entry *list = NULL;
    for (int b = 0; b < s->nbuckets; b++) {
        for (rv_entry *e = s->buckets[b], *next; e; e = next) {
            next = e->next;
            e->next = list;
            list = e;
        }
        s->buckets[b] = NULL;
    }
    s->count = 0;
    return list;
}

#ifndef NDEBUG
/* Invariants 1-3 of the file comment, for one step. */
static bool rv_step_check(const rv_step *s)
{
    int count = 0, live = 0;
    for (int b = 0; b < s->nbuckets; b++)
        for (const rv_entry *e = s->buckets[b]; e; e = e->next) {
            count++;
            live += e->state != RV_DONE;
        }
    return count == s->count && live == s->live && (s->status == TIDE_OK || count == 0);
}
#endif

/* Completes (WAITING), releases (SENT) and frees a detached list; no lock held. */
static void complete_list(rv_entry *list, tide_status status, const char *message)
{
    for (rv_entry *e = list, *next; e; e = next) {
        next = e->next;
        if (e->state == RV_WAITING)
            e->done(e->arg, status, NULL, message);
        else if (e->state == RV_SENT)
            tide_tensor_release(e->value);
        free(e);
    }
}

static void step_free(rv_step *s)
{
    free(s->buckets);
    free(s->message);
    free(s);
}

/* ---------------------------------------------------------------- the five operations */

tide_rendezvous *tide__rendezvous_new(void)
{
    tide_rendezvous *r = aligned_alloc(64, sizeof *r);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    for (int i = 0; i < RV_SHARDS; i++)
        pthread_mutex_init(&r->shards[i].lock, NULL);
    return r;
}

void tide__rendezvous_free(tide_rendezvous *r)
{
    if (!r)
        return;
    for (int i = 0; i < RV_SHARDS; i++) {
        rv_shard *sh = &r->shards[i];
        pthread_mutex_lock(&sh->lock);
        rv_step *steps = sh->steps;
        sh->steps = NULL;
        sh->pending = 0;
        pthread_mutex_unlock(&sh->lock);
        for (rv_step *s = steps, *next; s; s = next) {
            next = s->next;
            complete_list(step_detach_all(s), TIDE_CANCELLED,
                          "the rendezvous was freed before the value was sent");
            step_free(s);
        }
        pthread_mutex_destroy(&sh->lock);
    }
    free(r);
}

tide_status tide__rendezvous_send(tide_rendezvous *r, const tide_rendezvous_key *key, tide_tensor *value,
                                  tide_error *err)
{
    rv_probe p;
    char what[512];
    if (!value || !probe_init(&p, key)) {
        describe(what, sizeof what, key);
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "bad Send of %s: %s", what,
                              value ? "a key part is missing or too long" : "no value");
    }
    rv_shard *sh = shard_of(r, key->step);
    pthread_mutex_lock(&sh->lock);
    rv_step *s = step_get(sh, key->step);
    rv_entry *e = s && s->status == TIDE_OK ? step_lookup(s, &p) : NULL;
    if (!e && s && s->status == TIDE_OK && (e = entry_new(&p))) { /* first: leave the value */
        e->state = RV_SENT;
        e->value = tide_tensor_retain(value);
        step_insert(s, e);
        s->live++;
        sh->pending++;
        pthread_mutex_unlock(&sh->lock);
        return TIDE_OK;
    }
    if (e && e->state == RV_WAITING) { /* second: complete the Recv on this thread */
        tide_recv_done done = e->done;
        void *arg = e->arg;
        e->state = RV_DONE;
        e->done = NULL;
        s->live--;
        sh->pending--;
        pthread_mutex_unlock(&sh->lock);
        done(arg, TIDE_OK, tide_tensor_retain(value), NULL);
        return TIDE_OK;
    }
    bool aborted = s && s->status != TIDE_OK;
    tide_status st = aborted ? tide_error_set(err, s->status, "%s", s->message ? s->message : ABORT_FALLBACK)
                     : e     ? TIDE_ALREADY_EXISTS
                             : TIDE_RESOURCE_EXHAUSTED; /* no step record or no entry */
    pthread_mutex_unlock(&sh->lock);
    if (aborted)
        return st;
    describe(what, sizeof what, key);
    return tide_error_set(err, st, st == TIDE_ALREADY_EXISTS ? "%s was already sent"
                                                             : "out of memory sending %s", what);
}

void tide__rendezvous_recv(tide_rendezvous *r, const tide_rendezvous_key *key, tide_recv_done done, void *arg)
{
    rv_probe p;
    char what[512], msg[640];
    if (!probe_init(&p, key)) {
        describe(what, sizeof what, key);
        snprintf(msg, sizeof msg, "bad Recv of %s: a key part is missing or too long", what);
        done(arg, TIDE_INVALID_ARGUMENT, NULL, msg);
        return;
    }
    rv_shard *sh = shard_of(r, key->step);
    pthread_mutex_lock(&sh->lock);
    rv_step *s = step_get(sh, key->step);
    rv_entry *e = s && s->status == TIDE_OK ? step_lookup(s, &p) : NULL;
    if (!e && s && s->status == TIDE_OK && (e = entry_new(&p))) { /* first: wait */
        e->state = RV_WAITING;
        e->done = done;
        e->arg = arg;
        step_insert(s, e);
        s->live++;
        sh->pending++;
        pthread_mutex_unlock(&sh->lock);
        return;
    }
    if (e && e->state == RV_SENT) { /* second: the value is here, hand over the entry's reference */
        tide_tensor *value = e->value;
        e->value = NULL;
        e->state = RV_DONE;
        s->live--;
        sh->pending--;
        pthread_mutex_unlock(&sh->lock);
        done(arg, TIDE_OK, value, NULL);
        return;
    }
    bool aborted = s && s->status != TIDE_OK;
    tide_status st = aborted ? s->status : e ? TIDE_ALREADY_EXISTS : TIDE_RESOURCE_EXHAUSTED;
    if (aborted)
        snprintf(msg, sizeof msg, "%s", s->message ? s->message : ABORT_FALLBACK);
    pthread_mutex_unlock(&sh->lock);
    if (!aborted) {
        describe(what, sizeof what, key);
        snprintf(msg, sizeof msg, st == TIDE_ALREADY_EXISTS ? "%s was already asked for by another Recv"
                                                            : "out of memory receiving %s", what);
    }
    done(arg, st, NULL, msg);
}

void tide__rendezvous_abort(tide_rendezvous *r, uint64_t step, tide_status status, const char *message)
{
    assert(status != TIDE_OK);
    if (status == TIDE_OK)
        status = TIDE_ABORTED;
    if (!message)
        message = ABORT_FALLBACK;
    /* Both made before locking: an abort must not be lost for want of memory. */
    char *stored = tide__strdup(message);
    rv_step *fresh = step_new(step);
    rv_shard *sh = shard_of(r, step);
    pthread_mutex_lock(&sh->lock);
    rv_step *s = step_find(sh, step);
    if (!s && fresh) {
        s = fresh;
        fresh = NULL;
        s->next = sh->steps;
        sh->steps = s;
    }
    rv_entry *list = NULL;
    if (s && s->status == TIDE_OK) { /* the first abort wins */
        s->status = status;
        s->message = stored;
        stored = NULL;
        list = step_detach_all(s);
        sh->pending -= s->live;
        s->live = 0;
        assert(rv_step_check(s));
    }
    pthread_mutex_unlock(&sh->lock);
    /* The step's own copy may go with a concurrent end_step: the callbacks get the caller's. */
    complete_list(list, status, message);
    free(stored);
    if (fresh)
        step_free(fresh);
}

void tide__rendezvous_end_step(tide_rendezvous *r, uint64_t step)
{
    rv_shard *sh = shard_of(r, step);
    pthread_mutex_lock(&sh->lock);
    rv_step *s = step_find(sh, step);
    if (s) {
        assert(rv_step_check(s));
        step_unlink(sh, s);
        sh->pending -= s->live;
    }
    pthread_mutex_unlock(&sh->lock);
    if (!s)
        return;
    char msg[96];
    snprintf(msg, sizeof msg, "step %llu ended before the value was sent", (unsigned long long)step);
    complete_list(step_detach_all(s), TIDE_CANCELLED, msg);
    step_free(s);
}

int tide__rendezvous_pending(tide_rendezvous *r)
{
    int n = 0;
    for (int i = 0; i < RV_SHARDS; i++) {
        pthread_mutex_lock(&r->shards[i].lock);
        n += r->shards[i].pending;
        pthread_mutex_unlock(&r->shards[i].lock);
    }
    return n;
}
