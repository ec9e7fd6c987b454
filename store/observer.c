/* observer.c — the store's engine observers. Their callbacks run on the engine's threads (the
 * caller's for run_started/run_ended, executor threads for node_finished/tensor_produced), so they
 * only copy what they need into a record — computing a watched tensor's statistics on the way — and
 * push it on the store's bounded queue (st_push lets a record wait for room when the queue is full, and
 * drops it, counted, when the writer made none in time). Before a run starts, the session's graph is logged if it changed
 * (graph_log.c). Every record that cannot be made (out of memory) is counted as lost. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* The logging policy: per-node timings of every trace_every-th step of each session. */
static bool wants_trace(void *user, const tide_run_info *run)
{
    const st_attachment *a = user;
    /* tide_store_set_trace_every may change it while engines run */
    int64_t every = __atomic_load_n(&a->store->opts.trace_every, __ATOMIC_RELAXED);
    return every > 0 && run->step % every == 0;
}

/* A record of kind `kind` that could not be made: counted, and said. */
static void lost_for_memory(tide_store *s, st_kind kind)
{
    st_note_dropped(s, kind, 1, false);
    st_note_error(s, false, "run log %s: out of memory making a record of %s", s->path,
                  tide_store_record_kind_name((tide_store_record_kind)st_kind_counted_as(kind)));
}

/* The dtypes and shapes the run fed, as a JSON array in its feeds' order: ["float32 [100, 784]", ...]
 * (what tells a training step from an evaluation of the same nodes on a test set). */
static char *feed_shapes(const tide_run_info *run)
{
    if (!run->feeds || run->num_feeds <= 0)
        return st_json_strings(NULL, 0);
    char **texts = calloc((size_t)run->num_feeds, sizeof *texts);
    if (!texts)
        return NULL;
    bool ok = true;
    for (int i = 0; ok && i < run->num_feeds; i++) {
        const tide_tensor *v = run->feeds[i].value;
        char shape[TIDE_SHAPE_STR_MAX] = "?", text[TIDE_SHAPE_STR_MAX + 32];
        if (v)
            tide_shape_format(tide_tensor_shape(v), shape, sizeof shape);
        snprintf(text, sizeof text, "%s %s", v ? tide_dtype_name(tide_tensor_dtype(v)) : "?", shape);
        ok = (texts[i] = st_strdup(text)) != NULL;
    }
    char *json = ok ? st_json_strings((const char *const *)texts, run->num_feeds) : NULL;
    for (int i = 0; i < run->num_feeds; i++)
        free(texts[i]);
    free(texts);
    return json;
}

static void run_started(void *user, const tide_run_info *run)
{
    st_attachment *a = user;
    st_graph_before_run(a->store, run);
    st_record *r = calloc(1, sizeof *r);
    if (!r) {
        lost_for_memory(a->store, ST_RUN_START);
        return;
    }
    r->kind = ST_RUN_START;
    r->run_id = run->run_id;
    r->session = run->session;
    r->step = run->step;
    r->u.run.started_at_ns = st_realtime_ns();
    r->u.run.traced = run->tracing;
    r->u.run.feeds = st_json_strings(run->feed_names, run->num_feeds);
    r->u.run.fetches = st_json_strings(run->fetch_names, run->num_fetches);
    r->u.run.targets = st_json_strings(run->target_names, run->num_targets);
    r->u.run.feed_shapes = feed_shapes(run);
    st_push(a->store, r);
}

/* The run's memory per device as runs.device_memory's JSON: [{"device": full name, "peak_bytes": N,
 * "held_bytes": N}, ...] in engine order; NULL when the engine did not say. */
static char *device_memory_json(const tide_run_info *run)
{
    if (!run->device_memory || run->num_devices <= 0)
        return NULL;
    st_buf b = {0};
    st_buf_puts(&b, "[");
    for (int i = 0; i < run->num_devices; i++) {
        const tide_run_device_memory *m = &run->device_memory[i];
        char numbers[96];
        st_buf_puts(&b, i ? ",{\"device\":" : "{\"device\":");
        st_buf_json_string(&b, m->device ? m->device : "");
        snprintf(numbers, sizeof numbers, ",\"peak_bytes\":%lld,\"held_bytes\":%lld}", (long long)m->peak_bytes,
                 (long long)m->held_bytes);
        st_buf_puts(&b, numbers);
    }
    st_buf_puts(&b, "]");
    return st_buf_take(&b);
}

/* A device stream's lane, "/sim:0 compute" (the device's short name and the stream), or NULL for a node an
 * executor thread ran. */
static char *lane_of(const tide_node_timing *t)
{
    if (!t->stream)
        return NULL;
    char device[128], lane[192];
    tide_device_short_name(t->stream_device ? t->stream_device : t->device ? t->device : "", device, sizeof device);
    snprintf(lane, sizeof lane, "%s %s", device, t->stream);
    return st_strdup(lane);
}

/* The end of a run carries everything the start did, so that a run whose start record was dropped
 * still gets its row. */
static void run_ended(void *user, const tide_run_info *run, tide_status status, const char *message,
                      int64_t wall_ns)
{
    st_attachment *a = user;
    st_record *r = calloc(1, sizeof *r);
    if (!r) {
        lost_for_memory(a->store, ST_RUN_END);
        return;
    }
    r->kind = ST_RUN_END;
    r->run_id = run->run_id;
    r->session = run->session;
    r->step = run->step;
    r->u.run.started_at_ns = st_realtime_ns() - wall_ns;
    r->u.run.wall_ns = wall_ns;
    r->u.run.peak_bytes = run->peak_bytes;
    r->u.run.device_memory = device_memory_json(run);
    r->u.run.status = (int)status;
    r->u.run.traced = run->tracing;
    r->u.run.error = status == TIDE_OK ? NULL : st_strdup(message ? message : "");
    r->u.run.feeds = st_json_strings(run->feed_names, run->num_feeds);
    r->u.run.fetches = st_json_strings(run->fetch_names, run->num_fetches);
    r->u.run.targets = st_json_strings(run->target_names, run->num_targets);
    r->u.run.feed_shapes = feed_shapes(run);
    st_push(a->store, r);
}

static void node_finished(void *user, const tide_run_info *run, const tide_node_timing *t)
{
    st_attachment *a = user;
    st_record *r = calloc(1, sizeof *r);
    if (!r) {
        lost_for_memory(a->store, ST_TIMING);
        return;
    }
    r->kind = ST_TIMING;
    r->run_id = run->run_id;
    r->session = run->session;
    r->step = run->step;
    /* an observer's host copy (t->copy) is a row of its own, named after the tensor it copied */
    r->u.timing.node = st_strdup(t->copy ? t->copy : tide_node_name(t->node));
    r->u.timing.op = st_strdup(t->copy ? TIDE_COPY_TO_HOST_OP : tide_node_op(t->node));
    r->u.timing.device = st_strdup(t->device ? t->device : "");
    r->u.timing.thread = t->thread;
    r->u.timing.scheduled_ns = t->scheduled_ns;
    r->u.timing.start_ns = t->start_ns;
    r->u.timing.end_ns = t->end_ns;
    r->u.timing.output_bytes = (int64_t)t->output_bytes;
    r->u.timing.shapes = st_strdup(t->output_shapes);
    if (t->fused)
        r->u.timing.fused = st_strdup(t->fused);
    if ((r->u.timing.lane = lane_of(t))) {
        r->u.timing.launch_start_ns = t->launch_start_ns;
        r->u.timing.launch_end_ns = t->launch_end_ns;
    }
    if (t->frame && t->frame[0]) {
        r->u.timing.frame = st_strdup(t->frame);
        r->u.timing.iteration = t->iteration;
    }
    st_push(a->store, r);
}

static bool is_summary(const tide_node *node)
{
    return strcmp(tide_node_op(node), "ScalarSummary") == 0;
}

static bool is_image_summary(const tide_node *node)
{
    return strcmp(tide_node_op(node), "ImageSummary") == 0;
}

/* Watched nodes, every ScalarSummary (its value goes to the summaries table) and every ImageSummary
 * (its images go to the tensors table, kind 'image'). */
static bool wants_tensors(void *user, const tide_node *node)
{
    st_attachment *a = user;
    return is_summary(node) || is_image_summary(node) || st_is_watched(a->store, tide_node_name(node));
}

/* Statistics of the finite values (min, max, mean, population std, a histogram of ST_HIST_BINS
 * equal bins between min and max — all in the first bin when min == max) and NaN/Inf counts. */
static char *tensor_stats(const tide_tensor *t, st_record *r)
{
    int64_t n = tide_tensor_num_elements(t), finite = 0;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = tide_tensor_get_f64(t, i);
        if (isnan(x)) {
            r->u.tensor.nan_count++;
        } else if (isinf(x)) {
            r->u.tensor.inf_count++;
        } else {
            finite++;
            sum += x;
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
    }
    int64_t bins[ST_HIST_BINS] = {0};
    double mean = finite ? sum / (double)finite : 0, ss = 0;
    for (int64_t i = 0; finite && i < n; i++) {
        double x = tide_tensor_get_f64(t, i);
        if (!isfinite(x))
            continue;
        ss += (x - mean) * (x - mean);
        int b = hi > lo ? (int)((x - lo) / (hi - lo) * ST_HIST_BINS) : 0;
        bins[b < 0 ? 0 : b >= ST_HIST_BINS ? ST_HIST_BINS - 1 : b]++;
    }
    r->u.tensor.has_stats = finite > 0;
    r->u.tensor.min = lo;
    r->u.tensor.max = hi;
    r->u.tensor.mean = mean;
    r->u.tensor.std = finite ? sqrt(ss / (double)finite) : 0;
    char *json = malloc(ST_HIST_BINS * 22 + 4);
    if (!json)
        return NULL;
    size_t len = 0;
    json[len++] = '[';
    for (int b = 0; b < ST_HIST_BINS; b++)
        len += (size_t)sprintf(json + len, b ? ",%lld" : "%lld", (long long)bins[b]);
    json[len++] = ']';
    json[len] = '\0';
    return json;
}

/* A tensors row: statistics, and the value when it fits under the cap. kind: "watched" (a watched node's
 * output), "fetched" (a fetched value), "image" (an ImageSummary's images) or "dumped" (:dump). */
static void log_tensor(tide_store *s, const tide_run_info *run, const char *node, int output,
                       const tide_tensor *value, const char *kind, const tide_exec_point *at)
{
    st_record *r = calloc(1, sizeof *r);
    if (!r) {
        lost_for_memory(s, ST_TENSOR);
        return;
    }
    r->kind = ST_TENSOR;
    r->run_id = run->run_id;
    r->session = run->session;
    r->step = run->step;
    r->u.tensor.node = st_strdup(node);
    r->u.tensor.output = output;
    r->u.tensor.kind = kind;
    if (at && at->frame && at->frame[0]) {
        r->u.tensor.frame = st_strdup(at->frame);
        r->u.tensor.iteration = at->iteration;
    }
    tide_dtype dt = tide_tensor_dtype(value);
    r->u.tensor.dtype = st_strdup(tide_dtype_name(dt) ? tide_dtype_name(dt) : "invalid");
    char shape[TIDE_SHAPE_STR_MAX];
    r->u.tensor.shape = st_strdup(tide_shape_format(tide_tensor_shape(value), shape, sizeof shape));
    bool ok = r->u.tensor.node && r->u.tensor.dtype && r->u.tensor.shape;
    if (ok && dt != TIDE_STRING) {
        r->u.tensor.histogram = tensor_stats(value, r);
        size_t bytes = tide_tensor_byte_size(value);
        size_t cap = __atomic_load_n(&s->opts.value_cap_bytes, __ATOMIC_RELAXED); /* may change */
        if (cap > 0 && bytes <= cap) {
            r->u.tensor.value = malloc(bytes ? bytes : 1);
            r->u.tensor.value_len = bytes;
            if (r->u.tensor.value && bytes)
                memcpy(r->u.tensor.value, tide_tensor_data(value), bytes);
        }
        ok = r->u.tensor.histogram && (r->u.tensor.value || !r->u.tensor.value_len);
    }
    if (!ok) {
        st_record_free(r);
        lost_for_memory(s, ST_TENSOR);
        return;
    }
    st_push(s, r);
}

void tide_store_log_dumped(tide_store *s, const tide_run_info *run, const char *node, int output,
                           const tide_tensor *value, const tide_exec_point *at)
{
    if (s && run && node && value)
        log_tensor(s, run, node, output, value, "dumped", at);
}

static void log_summary(tide_store *s, const tide_run_info *run, const tide_node *node, const tide_tensor *value)
{
    const char *tag = NULL;
    st_record *r = calloc(1, sizeof *r);
    if (!r || !tide_attrs_get_string(tide_node_attrs(node), "tag", &tag) || tide_tensor_num_elements(value) != 1 ||
        !(r->u.summary.tag = st_strdup(tag))) {
        free(r);
        lost_for_memory(s, ST_SUMMARY);
        return;
    }
    r->kind = ST_SUMMARY;
    r->run_id = run->run_id;
    r->session = run->session;
    r->step = run->step;
    r->u.summary.value = tide_tensor_get_f64(value, 0);
    st_push(s, r);
}

static void tensor_produced(void *user, const tide_run_info *run, const tide_node *node, int output,
                            const tide_tensor *value, const tide_exec_point *at)
{
    st_attachment *a = user;
    if (is_summary(node))
        log_summary(a->store, run, node, value);
    if (is_image_summary(node))
        log_tensor(a->store, run, tide_node_name(node), output, value, "image", at);
    else if (st_is_watched(a->store, tide_node_name(node)))
        log_tensor(a->store, run, tide_node_name(node), output, value, "watched", at);
}

/* Every fetched value is logged (statistics; the value under the cap), named by its "node:index". */
static void tensor_fetched(void *user, const tide_run_info *run, int fetch, const tide_tensor *value)
{
    st_attachment *a = user;
    if (fetch < 0 || fetch >= run->num_fetches || !run->fetch_names || !run->fetch_names[fetch])
        return;
    char node[512];
    snprintf(node, sizeof node, "%s", run->fetch_names[fetch]);
    char *colon = strrchr(node, ':');
    int output = 0;
    if (colon) {
        output = atoi(colon + 1);
        *colon = 0;
    }
    log_tensor(a->store, run, node, output, value, "fetched", NULL);
}

tide_observer st_run_observer(st_attachment *a)
{
    return (tide_observer){.user = a, .wants_trace = wants_trace, .run_started = run_started,
                           .node_finished = node_finished, .run_ended = run_ended,
                           .tensor_fetched = tensor_fetched};
}

tide_observer st_tensor_observer(st_attachment *a)
{
    return (tide_observer){.user = a, .wants_tensors = wants_tensors, .tensor_produced = tensor_produced};
}
