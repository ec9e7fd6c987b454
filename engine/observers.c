/* observers.c — the engine's observers: adding and removing them, the snapshot each run takes, and
 * the guard around every callback.
 *
 * The contract (tide_core.h): once tide_engine_remove_observer returns, none of the observer's
 * callbacks is running and none will be called, even by runs that started before the removal. Each
 * observer is an entry shared (reference counted) by the engine's list and by the snapshots of the
 * runs in flight. A callback is made only between tide__observer_enter and tide__observer_leave,
 * which count the calls running; removal marks the entry removed and then waits until no call runs.
 * Both sides use sequentially consistent atomics (caller: calls++, then read removed; remover: set
 * removed, then read calls), so either the caller sees the mark and skips the call, or the remover
 * sees the call and waits for it. A callback may remove its own observer: the wait then leaves out
 * the calls of that observer running on the remover's own thread. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct tide_observer_entry {
    atomic_int refs;
    atomic_int calls;    /* callbacks running now */
    atomic_bool removed;
};

/* The entries whose callbacks this thread is running (a callback may run a session: calls nest). */
#define MAX_NESTED_CALLS 16
static _Thread_local const tide_observer_entry *calling[MAX_NESTED_CALLS];
static _Thread_local int num_calling;

static void entry_release(tide_observer_entry *entry)
{
    if (entry && atomic_fetch_sub(&entry->refs, 1) == 1)
        free(entry);
}

int tide_engine_add_observer(tide_engine *e, const tide_observer *obs, tide_error *err)
{
    if (!obs) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "observer is NULL");
        return 0;
    }
    tide_observer_entry *entry = calloc(1, sizeof *entry);
    pthread_mutex_lock(&e->observers_lock);
    tide_observer_slot *slots = entry ? realloc(e->observers, (size_t)(e->num_observers + 1) * sizeof *slots) : NULL;
    if (!slots) {
        pthread_mutex_unlock(&e->observers_lock);
        free(entry);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return 0;
    }
    atomic_init(&entry->refs, 1);
    e->observers = slots;
    int id = e->next_observer_id++;
    slots[e->num_observers] = (tide_observer_slot){id, *obs, entry};
    __atomic_store_n(&e->num_observers, e->num_observers + 1, __ATOMIC_RELEASE); /* read unlocked: snapshot */
    atomic_fetch_add(&e->observers_version, 1);
    pthread_mutex_unlock(&e->observers_lock);
    return id;
}

/* How many calls of entry this thread is inside. */
static int own_calls(const tide_observer_entry *entry)
{
    int n = 0;
    for (int i = 0; i < num_calling && i < MAX_NESTED_CALLS; i++)
        n += calling[i] == entry;
    return n;
}

/* ---------------------------------------------------------------- entries, also the debugger's */

tide_observer_entry *tide__entry_new(void)
{
    tide_observer_entry *entry = calloc(1, sizeof *entry);
    if (entry)
        atomic_init(&entry->refs, 1);
    return entry;
}

void tide__entry_retain(tide_observer_entry *entry)
{
    if (entry)
        atomic_fetch_add(&entry->refs, 1);
}

void tide__entry_release(tide_observer_entry *entry) { entry_release(entry); }

/* Marks the entry removed and waits until no call of it runs (but this thread's own). */
void tide__entry_retire(tide_observer_entry *entry)
{
    atomic_store(&entry->removed, true);
    int own = own_calls(entry);
    for (int spins = 0; atomic_load(&entry->calls) > own; spins++) {
        if (spins < 100)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, 50000}, NULL);
    }
}

bool tide__entry_enter(tide_observer_entry *entry)
{
    atomic_fetch_add(&entry->calls, 1);
    if (atomic_load(&entry->removed)) {
        atomic_fetch_sub(&entry->calls, 1);
        return false;
    }
    if (num_calling < MAX_NESTED_CALLS)
        calling[num_calling] = entry;
    num_calling++;
    return true;
}

void tide__entry_leave(tide_observer_entry *entry)
{
    num_calling--;
    atomic_fetch_sub(&entry->calls, 1);
}

/* ---------------------------------------------------------------- observers */

void tide_engine_remove_observer(tide_engine *e, int id)
{
    tide_observer_entry *entry = NULL;
    pthread_mutex_lock(&e->observers_lock);
    for (int i = 0; i < e->num_observers; i++)
        if (e->observers[i].id == id) {
            entry = e->observers[i].entry;
            memmove(&e->observers[i], &e->observers[i + 1],
                    (size_t)(e->num_observers - i - 1) * sizeof *e->observers);
            __atomic_store_n(&e->num_observers, e->num_observers - 1, __ATOMIC_RELEASE);
            atomic_fetch_add(&e->observers_version, 1);
            break;
        }
    pthread_mutex_unlock(&e->observers_lock);
    if (!entry)
        return;
    tide__entry_retire(entry);
    entry_release(entry);
}

void tide__observers_free(tide_engine *e)
{
    for (int i = 0; i < e->num_observers; i++)
        entry_release(e->observers[i].entry);
    free(e->observers);
    e->observers = NULL;
    e->num_observers = 0;
}

void tide__observers_snapshot(tide_engine *e, tide_observer_slot **slots, int *num)
{
    *slots = NULL;
    *num = 0;
    if (__atomic_load_n(&e->num_observers, __ATOMIC_ACQUIRE) == 0)
        return;
    pthread_mutex_lock(&e->observers_lock);
    if (e->num_observers > 0) {
        *slots = malloc(sizeof **slots * (size_t)e->num_observers);
        if (*slots) {
            memcpy(*slots, e->observers, sizeof **slots * (size_t)e->num_observers);
            *num = e->num_observers;
            for (int i = 0; i < *num; i++)
                atomic_fetch_add(&(*slots)[i].entry->refs, 1);
        }
    }
    pthread_mutex_unlock(&e->observers_lock);
}

void tide__observers_release(tide_observer_slot *slots, int num)
{
    for (int i = 0; i < num; i++)
        entry_release(slots[i].entry);
    free(slots);
}

bool tide__observer_enter(const tide_observer_slot *slot) { return tide__entry_enter(slot->entry); }
void tide__observer_leave(const tide_observer_slot *slot) { tide__entry_leave(slot->entry); }
