/* session.c — sessions: Run over a graph with a cache of prepared plans (one per feeds/fetches/targets
 * signature), a step counter, cancellation, and the observers' run callbacks. Plans stay valid as the
 * graph grows: a plan depends only on nodes reachable backwards from its fetches, which never change.
 * A plan that can never be found again is evicted: a fused plan made for an earlier observers' version
 * (observers come and go; the version only grows) and one made for nodes since rolled back; it is
 * freed once no run uses it. Several threads may Run on one session (or many sessions) at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "exec.h"
#include "step_capture.h"

struct tide_session {
    tide_engine *engine;
    tide_graph *graph;
    pthread_mutex_t lock;        /* guards the plan cache */
    tide_name_table *plans;      /* key -> tide_plan* */
    tide_plan **plan_list;
    int num_plans, cap_plans;
    atomic_llong step;
    atomic_int cancel_gen;
    atomic_bool closed;          /* tide_session_close: runs are refused */
    atomic_bool fusion;          /* plans fuse element-wise groups (when the engine's option allows) */
    atomic_bool capture;         /* steps may be captured and replayed (when the engine's option allows) */
    tide_step_capture *captured; /* the session's graph and its state (step_capture.c) */
    /* tide_session_warnings' view: rebuilt (under lock) when warnings were added since the last call;
     * earlier views are kept until the session is freed, as the contract promises their callers. */
    const char **warnings;
    int num_warnings;
    const char ***old_warnings;
    int num_old_warnings;
    char ***kept_warnings;       /* the warnings of evicted plans that a view may still list */
    int num_kept_warnings;
};

static atomic_ullong next_run_id = 1;

tide_session *tide_session_new(tide_engine *engine, tide_graph *g, const tide_session_options *opts,
                               tide_error *err)
{
    if (!engine || !g) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a session needs an engine and a graph");
        return NULL;
    }
    tide_session *s = calloc(1, sizeof *s);
    if (!s || !(s->plans = tide__names_new()) || !(s->captured = tide__capture_new())) {
        if (s)
            tide__names_free(s->plans);
        free(s);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    s->engine = engine;
    s->graph = g;
    tide__graph_retain(g); /* freeing the graph first leaves it to the session (tide_graph_free) */
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->step, opts ? opts->first_step : 0);
    atomic_init(&s->cancel_gen, 0);
    atomic_init(&s->closed, false);
    atomic_init(&s->fusion, !(opts && opts->no_fusion));
    atomic_init(&s->capture, !(opts && opts->no_capture));
    atomic_fetch_add(&engine->live_sessions, 1);
    return s;
}

void tide_session_free(tide_session *s)
{
    if (!s)
        return;
    tide__capture_free(s->captured); /* its graph points into the plans' kernels */
    for (int i = 0; i < s->num_plans; i++)
        tide__plan_free(s->plan_list[i]);
    free(s->plan_list);
    free(s->warnings);
    for (int i = 0; i < s->num_old_warnings; i++)
        free(s->old_warnings[i]);
    free(s->old_warnings);
    for (int i = 0; i < s->num_kept_warnings; i++) {
        for (int k = 0; s->kept_warnings[i][k]; k++)
            free(s->kept_warnings[i][k]);
        free(s->kept_warnings[i]);
    }
    free(s->kept_warnings);
    tide__names_free(s->plans);
    tide__graph_release(s->graph);
    pthread_mutex_destroy(&s->lock);
    atomic_fetch_sub(&s->engine->live_sessions, 1);
    free(s);
}

tide_graph *tide_session_graph(const tide_session *s) { return s->graph; }
tide_engine *tide_session_engine(const tide_session *s) { return s->engine; }
int64_t tide_session_step(const tide_session *s) { return atomic_load(&((tide_session *)s)->step); }
void tide_session_cancel(tide_session *s)
{
    atomic_fetch_add(&s->cancel_gen, 1);
    tide__watcher_poke(s->engine); /* wakes the kernels its runs have waiting (cancel.h) */
}

void tide_session_cancel_mark(const tide_session *s, tide_run_options *opts)
{
    opts->cancel_from_mark = true;
    opts->cancel_mark = atomic_load(&((tide_session *)s)->cancel_gen);
}

void tide_session_close(tide_session *s)
{
    if (!s)
        return;
    atomic_store(&s->closed, true);
    tide_session_cancel(s);
}

void tide_session_set_fusion(tide_session *s, bool on)
{
    if (s)
        atomic_store(&s->fusion, on);
}

bool tide_session_fusion_enabled(const tide_session *s)
{
    return s && s->engine->fusion && atomic_load(&((tide_session *)s)->fusion);
}

void tide_session_set_capture(tide_session *s, bool on)
{
    if (!s)
        return;
    atomic_store(&s->capture, on);
    if (!on)
        tide__capture_drop(s->captured);
}

bool tide_session_capture_enabled(const tide_session *s)
{
    return s && s->engine->capture && atomic_load(&((tide_session *)s)->capture);
}

void tide_session_capture_status(tide_session *s, tide_capture_status *out)
{
    if (out)
        tide__capture_status(s ? s->captured : NULL, out);
}

bool tide_session_is_closed(const tide_session *s)
{
    return atomic_load(&((tide_session *)s)->closed);
}

int tide_session_num_plans(const tide_session *s)
{
    pthread_mutex_lock(&((tide_session *)s)->lock);
    int n = s->num_plans;
    pthread_mutex_unlock(&((tide_session *)s)->lock);
    return n;
}

tide_status tide_session_extend(tide_session *s, const char *text, tide_error *err)
{
    return tide_graph_extend_text(s->graph, text, err);
}

/* The cache key: node ids and output indices of feeds, fetches and targets, in the caller's order.
 * A fused plan's key starts with the observers' version it was made for (fusion_version >= 0): which
 * nodes are watched decides what may be fused away, so a new watch makes a new plan. So does the
 * debugger's version (debug_version >= 0: a fused plan made while a debugger is attached): the nodes
 * its breakpoints can stop at are not fused away. */
static char *plan_key(const tide_graph *g, int fusion_version, int debug_version, const tide_feed *feeds, int nfeeds,
                      const tide_output *fetches, int nfetches, tide_node *const *targets, int ntargets)
{
    size_t cap = 48 + 24 * (size_t)(nfeeds + nfetches + ntargets);
    char *key = malloc(cap);
    if (!key)
        return NULL;
    key[0] = 0; /* a run with nothing to feed, fetch or run has the empty key */
    size_t at = 0;
    if (g->compress_transfers) /* the graph's transfer compression changes the plan */
        at += (size_t)snprintf(key, cap, "z,");
    if (fusion_version >= 0)
        at += (size_t)snprintf(key + at, cap - at, "F%d,", fusion_version);
    if (debug_version >= 0)
        at += (size_t)snprintf(key + at, cap - at, "D%d,", debug_version);
    for (int i = 0; i < nfeeds; i++)
        at += (size_t)snprintf(key + at, cap - at, "f%d:%d,", feeds[i].output.node ? feeds[i].output.node->id : -1,
                               feeds[i].output.index);
    for (int i = 0; i < nfetches; i++)
        at += (size_t)snprintf(key + at, cap - at, "o%d:%d,", fetches[i].node ? fetches[i].node->id : -1,
                               fetches[i].index);
    for (int i = 0; i < ntargets; i++)
        at += (size_t)snprintf(key + at, cap - at, "t%d,", targets[i] ? targets[i]->id : -1);
    return key;
}

/* A node pointer from an earlier graph state could alias a rolled-back one: check identity. */
static bool owned(const tide_graph *g, const tide_node *n)
{
    return n && n->id >= 0 && n->id < g->num_nodes && g->nodes[n->id] == n;
}

/* A copy of p's warnings list, NULL-terminated, that takes over the strings (p keeps none). */
static char **take_warnings(tide_plan *p)
{
    char **list = malloc(sizeof *list * ((size_t)p->num_warnings + 1));
    if (!list)
        return NULL;
    memcpy(list, p->warnings, sizeof *list * (size_t)p->num_warnings);
    list[p->num_warnings] = NULL;
    p->num_warnings = 0;
    return list;
}

/* Under s->lock: takes plan_list[index] out of the cache (and, when it maps its key, the table); it is
 * freed now, or by the last run still using it. Warnings a view lists stay with the session. */
static void evict(tide_session *s, int index)
{
    tide_plan *p = s->plan_list[index];
    s->plan_list[index] = s->plan_list[--s->num_plans];
    if (tide__names_get(s->plans, p->key) == p)
        tide__names_remove(s->plans, p->key);
    if (p->num_warnings)
        s->num_warnings = -1; /* the next view is made anew, without them */
    if (p->warnings_shown && p->num_warnings) {
        char ***kept = realloc(s->kept_warnings, sizeof *kept * ((size_t)s->num_kept_warnings + 1));
        char **list = kept ? take_warnings(p) : NULL;
        if (kept)
            s->kept_warnings = kept;
        if (list)
            s->kept_warnings[s->num_kept_warnings++] = list;
        else
            p->runs++; /* out of memory: the plan, and its warnings, stay until the session is freed */
    }
    p->evicted = true;
    if (p->runs == 0)
        tide__plan_free(p);
}

/* Under s->lock, p new in the cache (key p->key, made for fusion_version): evicts the plans no run can
 * find any more: one under the same key (made for nodes since rolled back), the fused plans of
 * earlier observers' versions, and those made for an earlier version of the debugger. */
static void evict_unreachable(tide_session *s, const tide_plan *p, tide_plan *same_key)
{
    int debug_version = atomic_load(&s->engine->debugger_version);
    for (int i = s->num_plans - 1; i >= 0; i--) {
        tide_plan *q = s->plan_list[i];
        if (q != p && (q == same_key || (q->fusion_version >= 0 && q->fusion_version < p->fusion_version) ||
                       (q->debug_version >= 0 && q->debug_version < debug_version)))
            evict(s, i);
    }
}

/* A run is done with p (from get_plan). */
static void release_plan(tide_session *s, tide_plan *p)
{
    pthread_mutex_lock(&s->lock);
    if (--p->runs == 0 && p->evicted)
        tide__plan_free(p);
    pthread_mutex_unlock(&s->lock);
}

/* fuse: the run's plan fuses element-wise groups (fusion on, and no debugger in keep mode is attached);
 * debugger: the run's (entry NULL: none), whose watched nodes stay unfused. The caller releases the plan
 * (release_plan) when its run is done. */
static tide_plan *get_plan(tide_session *s, bool fuse, const tide_debugger_slot *debugger, const tide_feed *feeds,
                           int nfeeds, const tide_output *fetches, int nfetches, tide_node *const *targets,
                           int ntargets, tide_error *err)
{
    int fusion_version = fuse ? atomic_load(&s->engine->observers_version) : -1;
    int debug_version = fuse && debugger->entry ? atomic_load(&s->engine->debugger_version) : -1;
    char *key = plan_key(s->graph, fusion_version, debug_version, feeds, nfeeds, fetches, nfetches, targets, ntargets);
    if (!key) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    tide_plan *p = tide__names_get(s->plans, key);
    bool valid = p != NULL;
    for (int i = 0; valid && i < nfeeds; i++)
        valid = owned(s->graph, feeds[i].output.node);
    for (int i = 0; valid && i < nfetches; i++)
        valid = owned(s->graph, fetches[i].node);
    for (int i = 0; valid && i < ntargets; i++)
        valid = owned(s->graph, targets[i]);
    if (!valid) {
        tide_plan *stale = p;
        p = tide__plan_build(s->engine, s->graph, feeds, nfeeds, fetches, nfetches, targets, ntargets, fuse,
                             debugger->entry ? debugger : NULL, err);
        if (p && s->num_plans == s->cap_plans) {
            int cap = s->cap_plans ? s->cap_plans * 2 : 8;
            tide_plan **list = realloc(s->plan_list, (size_t)cap * sizeof *list);
            if (list) {
                s->plan_list = list;
                s->cap_plans = cap;
            }
        }
        if (p && s->num_plans < s->cap_plans) {
            p->key = key;
            key = NULL;
            p->fusion_version = fusion_version;
            p->debug_version = debug_version;
            s->plan_list[s->num_plans++] = p;
            evict_unreachable(s, p, stale);
            tide__names_put(s->plans, p->key, p);
        } else if (p) {
            tide__plan_free(p);
            p = NULL;
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory caching a plan");
        }
    }
    if (p && __atomic_load_n(&s->engine->num_observers, __ATOMIC_ACQUIRE) > 0)
        tide__plan_update_observers(p, s->engine);
    if (p)
        p->runs++;
    pthread_mutex_unlock(&s->lock);
    free(key);
    return p;
}

static tide_status run_with_error(tide_session *s, const tide_run_options *opts, const tide_feed *feeds,
                                  int num_feeds, const tide_output *fetches, int num_fetches,
                                  tide_tensor **fetch_values, tide_node *const *targets, int num_targets,
                                  tide_step_stats **stats, tide_error *err);

/* An observed run's memory per device (tide_run_info.device_memory): the step fills in the peaks;
 * NULL when out of memory (the observers then get none). */
static tide_run_device_memory *device_memory_new(const tide_engine *e)
{
    tide_run_device_memory *m = calloc((size_t)e->num_devices + 1, sizeof *m);
    for (int i = 0; m && i < e->num_devices; i++)
        m[i].device = e->devices[i].name;
    return m;
}

/* At the run's end: what each device holds now, and the array into info for run_ended. */
static void device_memory_held(const tide_engine *e, tide_run_device_memory *m, tide_run_info *info)
{
    for (int i = 0; i < e->num_devices; i++)
        tide_engine_device_memory(e, i, &m[i].held_bytes, NULL);
    info->num_devices = e->num_devices;
    info->device_memory = m;
}

/* err may be NULL; the run's steps then still need an error object to report through (a failure
 * reported into no object must not read as success), so they get one of their own. */
tide_status tide_session_run(tide_session *s, const tide_run_options *opts, const tide_feed *feeds,
                             int num_feeds, const tide_output *fetches, int num_fetches,
                             tide_tensor **fetch_values, tide_node *const *targets, int num_targets,
                             tide_step_stats **stats, tide_error *err)
{
    tide_error *own = err ? NULL : tide_error_new();
    tide_status st = err || own ? run_with_error(s, opts, feeds, num_feeds, fetches, num_fetches, fetch_values,
                                                 targets, num_targets, stats, err ? err : own)
                                : TIDE_RESOURCE_EXHAUSTED;
    tide_error_free(own);
    return st;
}

static tide_status run_with_error(tide_session *s, const tide_run_options *opts, const tide_feed *feeds,
                                  int num_feeds, const tide_output *fetches, int num_fetches,
                                  tide_tensor **fetch_values, tide_node *const *targets, int num_targets,
                                  tide_step_stats **stats, tide_error *err)
{
    if (stats)
        *stats = NULL;
    if (!s)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "session is NULL");
    if (atomic_load(&s->closed))
        return tide_error_set(err, TIDE_FAILED_PRECONDITION, "the session is closed (tide_session_close): "
                              "it runs nothing any more");
    if (num_feeds < 0 || num_fetches < 0 || num_targets < 0 || (num_feeds && !feeds) ||
        (num_fetches && (!fetches || !fetch_values)) || (num_targets && !targets))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "Run: inconsistent feed/fetch/target arrays");
    for (int i = 0; i < num_fetches; i++)
        fetch_values[i] = NULL;
    tide_debugger_slot debugger; /* taken first: the nodes it watches are not fused away; in keep mode none is */
    tide__debugger_snapshot(s->engine, &debugger);
    bool fuse = tide_session_fusion_enabled(s) && !(debugger.entry && debugger.d.keep_values);
    tide_plan *p = get_plan(s, fuse, &debugger, feeds, num_feeds, fetches, num_fetches, targets, num_targets, err);
    if (!p) {
        tide__debugger_release(&debugger);
        return tide_error_code(err);
    }
    tide_step_args a = {.engine = s->engine, .session = s, .plan = p, .feeds = feeds,
                        .fetch_values = fetch_values, .opts = opts, .cancel_gen = &s->cancel_gen,
                        .cancel_at_start = opts && opts->cancel_from_mark ? opts->cancel_mark
                                                                          : atomic_load(&s->cancel_gen)};
    a.info = (tide_run_info){.run_id = atomic_fetch_add(&next_run_id, 1), .session = s,
                             .step = atomic_fetch_add(&s->step, 1), .num_feeds = num_feeds,
                             .num_fetches = num_fetches, .num_targets = num_targets,
                             .feed_names = (const char *const *)p->feed_names,
                             .fetch_names = (const char *const *)p->fetch_names,
                             .target_names = (const char *const *)p->target_names,
                             .tracing = opts && opts->trace, .feeds = feeds};
    a.peak_bytes = &a.info.peak_bytes;
    tide__observers_snapshot(s->engine, &a.observers, &a.num_observers);
    a.debugger = debugger;
    if (a.debugger.entry)
        tide__plan_update_debugger(p, s->engine, &a.debugger);
    for (int o = 0; o < a.num_observers && !a.info.tracing; o++)
        if (a.observers[o].obs.wants_trace && tide__observer_enter(&a.observers[o])) {
            a.info.tracing = a.observers[o].obs.wants_trace(a.observers[o].obs.user, &a.info);
            tide__observer_leave(&a.observers[o]);
        }
    int64_t t0 = a.num_observers ? tide__now_ns() : 0;
    for (int o = 0; o < a.num_observers; o++)
        TIDE__OBSERVE(&a.observers[o], run_started, &a.info);
    tide_run_device_memory *memory = a.num_observers ? device_memory_new(s->engine) : NULL;
    a.device_memory = memory;
    tide_status st = tide__capture_run(s->captured, tide_session_capture_enabled(s), &a, stats, err);
    int64_t wall = a.num_observers ? tide__now_ns() - t0 : 0;
    if (memory)
        device_memory_held(s->engine, memory, &a.info);
    for (int o = 0; o < a.num_observers; o++)
        TIDE__OBSERVE(&a.observers[o], run_ended, &a.info, st, st == TIDE_OK ? "" : tide_error_message(err), wall);
    tide__observers_release(a.observers, a.num_observers);
    free(memory);
    tide__debugger_release(&a.debugger);
    release_plan(s, p);
    return st;
}

/* A new view of every plan's warnings when some were added since the last one; the last view stays
 * valid (kept in old_warnings). Under s->lock. On failure (out of memory) the last view stays. */
static void refresh_warnings(tide_session *s)
{
    int n = 0;
    for (int i = 0; i < s->num_plans; i++)
        n += s->plan_list[i]->num_warnings;
    if (s->warnings && n == s->num_warnings)
        return;
    const char **view = malloc(sizeof *view * ((size_t)n + 1));
    const char ***old = s->warnings ? realloc(s->old_warnings, sizeof *old * ((size_t)s->num_old_warnings + 1)) : NULL;
    if (!view || (s->warnings && !old)) {
        free(view);
        return;
    }
    int k = 0;
    for (int i = 0; i < s->num_plans; i++) {
        for (int w = 0; w < s->plan_list[i]->num_warnings; w++)
            view[k++] = s->plan_list[i]->warnings[w];
        s->plan_list[i]->warnings_shown = true;
    }
    view[n] = NULL;
    if (s->warnings) {
        s->old_warnings = old;
        s->old_warnings[s->num_old_warnings++] = s->warnings;
    }
    s->warnings = view;
    s->num_warnings = n;
}

int tide_session_warnings(tide_session *s, const char *const **out)
{
    if (!s) {
        if (out)
            *out = NULL;
        return 0;
    }
    pthread_mutex_lock(&s->lock);
    refresh_warnings(s);
    const char *const *view = s->warnings;
    int n = view ? s->num_warnings : 0;
    pthread_mutex_unlock(&s->lock);
    if (out)
        *out = view;
    return n;
}
