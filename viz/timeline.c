/* timeline.c — a traced run's node timings as the timeline JSON of the pages (/api/timeline) and as
 * a Chrome trace (Trace Event Format, for Perfetto and chrome://tracing). Both share one reading of
 * the run: its lanes (one per device and executor thread, and one per device stream that ran kernels or
 * copies, "/sim:0 compute", "/sim:0 copy h2d": node_timings.lane; in device order, each device's
 * threads before its streams), its memory per device (runs.device_memory), times
 * relative to the run's earliest scheduled or start time, its transfers (each _Send paired with
 * the _Recv of the same tensor and destination, named by engine/plan.c "T/_send_to_cpuN" and
 * "T/_recv_on_cpuN"), and how long each asynchronous _Recv waited: a _Recv starts when its step
 * reaches it and ends when its value arrived, holding no thread meanwhile, so the part of its span
 * before its _Send ended is waiting, not work (all of it when the _Send is not in the run's
 * timings). A fused group's execution (docs/fusion.md) is its root's row; both outputs name the
 * members ("fused"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "viz_internal.h"

enum { C_NODE, C_OP, C_DEVICE, C_THREAD, C_SCHED, C_START, C_END, C_BYTES, C_SHAPES, C_FUSED };

typedef struct tl_lane {
    const char *device; /* full name (borrowed from the table) */
    int thread;         /* an executor thread's lane (-1: the caller's); ignored for a stream's */
    const char *stream; /* a device stream's lane: its name, "/sim:0 compute" (borrowed); NULL: a thread's */
    const char *color;  /* its device's colour in the session's palette (palette.c) */
} tl_lane;

typedef struct tl_transfer {
    int send, recv;     /* rows */
} tl_transfer;

typedef struct tl_run {
    int64_t id, session, step, wall_ns, peak_bytes;
    bool has_wall, traced, has_peak;
    tide_store_table *rows;
    tide_store_table *iterations; /* frame, iteration per row (NULL: none known) */
    tide_store_table *streams;    /* lane, launch_start_ns, launch_end_ns per row (NULL: none known) */
    tide_store_table *memory;     /* device, peak_bytes, held_bytes per device */
    int num_rows;
    int *lane_of;       /* per row */
    tl_lane *lanes;
    int num_lanes;
    int64_t t0;
    tl_transfer *transfers;
    int num_transfers;
    int64_t *wait_ns;   /* per row: the part of its span spent waiting (asynchronous _Recv), else 0 */
} tl_run;

static void tl_run_free(tl_run *r)
{
    tide_store_table_free(r->rows);
    tide_store_table_free(r->iterations);
    tide_store_table_free(r->streams);
    tide_store_table_free(r->memory);
    free(r->lane_of);
    free(r->lanes);
    free(r->transfers);
    free(r->wait_ns);
    memset(r, 0, sizeof *r);
}

static int cmp_lanes(const void *a, const void *b)
{
    const tl_lane *x = a, *y = b;
    int c = vz_natural_cmp(x->device, y->device);
    if (c || (x->stream != NULL) != (y->stream != NULL))
        return c ? c : x->stream ? 1 : -1;
    return x->stream ? vz_natural_cmp(x->stream, y->stream) : (x->thread > y->thread) - (x->thread < y->thread);
}

/* The lane of an executor thread (stream NULL) or of a device stream. */
static int find_lane(const tl_run *r, const char *device, int thread, const char *stream)
{
    for (int i = 0; i < r->num_lanes; i++) {
        const tl_lane *l = &r->lanes[i];
        if (stream ? l->stream && strcmp(l->stream, stream) == 0
                   : !l->stream && l->thread == thread && strcmp(l->device, device) == 0)
            return i;
    }
    return -1;
}

static const char *cell(const tl_run *r, int row, int col)
{
    const char *c = tide_store_table_cell(r->rows, row, col);
    return c && !tide_store_table_is_null(r->rows, row, col) ? c : "";
}

/* The loop frame of a row's execution, or NULL outside loops (or when the log does not say). */
static const char *frame_of(const tl_run *r, int row)
{
    if (!r->iterations || tide_store_table_is_null(r->iterations, row, 0))
        return NULL;
    return tide_store_table_cell(r->iterations, row, 0);
}

/* Writes "frame" and "iteration" of a row's execution inside a loop (nothing outside loops). */
static void iteration_json(tide_json *j, const tl_run *r, int row)
{
    const char *frame = frame_of(r, row);
    if (!frame)
        return;
    tide_json_key(j, "frame");
    tide_json_string(j, frame);
    tide_json_key(j, "iteration");
    tide_json_int(j, vz_cell_int(r->iterations, row, 1));
}

/* The device stream's lane a row ran in ("/sim:0 compute"), or NULL for an executor thread's. */
static const char *stream_of(const tl_run *r, int row)
{
    if (!r->streams || tide_store_table_is_null(r->streams, row, 0))
        return NULL;
    return tide_store_table_cell(r->streams, row, 0);
}

/* Whether a row is a copy between memory spaces: it ran in a copy stream's lane ("/sim:0 copy d2h": a
 * _Recv's copy, or an observer's host copy, op "_CopyToHost"). */
static bool is_copy(const tl_run *r, int row)
{
    const char *lane = stream_of(r, row);
    return lane && strstr(lane, " copy ") != NULL;
}

/* The full name of the device a stream's lane belongs to: a device of the run's rows whose short name
 * starts the lane ("/sim:0" of "/sim:0 copy d2h", which a _Recv on /cpu:0 ran in), else the row's. */
static const char *stream_device(const tl_run *r, int row, const char *stream)
{
    char shortname[128];
    size_t n = strcspn(stream, " ");
    for (int i = 0; i < r->num_rows; i++) {
        tide_device_short_name(cell(r, i, C_DEVICE), shortname, sizeof shortname);
        if (strlen(shortname) == n && strncmp(shortname, stream, n) == 0)
            return cell(r, i, C_DEVICE);
    }
    return cell(r, row, C_DEVICE);
}

static bool make_lanes(tl_run *r)
{
    r->lanes = malloc((size_t)(r->num_rows ? r->num_rows : 1) * sizeof *r->lanes);
    r->lane_of = malloc((size_t)(r->num_rows ? r->num_rows : 1) * sizeof *r->lane_of);
    if (!r->lanes || !r->lane_of)
        return false;
    for (int i = 0; i < r->num_rows; i++) {
        const char *dev = cell(r, i, C_DEVICE), *stream = stream_of(r, i);
        int thread = (int)vz_cell_int(r->rows, i, C_THREAD);
        if (find_lane(r, dev, thread, stream) < 0)
            r->lanes[r->num_lanes++] =
                (tl_lane){stream ? stream_device(r, i, stream) : dev, thread, stream, VZ_UNPLACED_COLOR};
    }
    qsort(r->lanes, (size_t)r->num_lanes, sizeof *r->lanes, cmp_lanes);
    for (int i = 0; i < r->num_rows; i++)
        r->lane_of[i] = find_lane(r, cell(r, i, C_DEVICE), (int)vz_cell_int(r->rows, i, C_THREAD), stream_of(r, i));
    return true;
}

/* Pairs each _Send row with the _Recv row of the same name past the marker. */
static bool pair_transfers(tl_run *r)
{
    vz_map recvs = {0};
    bool ok = true;
    r->transfers = malloc((size_t)(r->num_rows ? r->num_rows : 1) * sizeof *r->transfers);
    if (!r->transfers)
        return false;
    /* inside a loop a transfer happens once per iteration: its ends are matched by frame and iteration too */
    char key[1024];
    for (int i = 0; ok && i < r->num_rows; i++)
        if (strcmp(cell(r, i, C_OP), "_Recv") == 0) {
            const char *frame = frame_of(r, i);
            snprintf(key, sizeof key, "%s@%s#%lld", cell(r, i, C_NODE), frame ? frame : "",
                     frame ? (long long)vz_cell_int(r->iterations, i, 1) : 0LL);
            ok = vz_map_put(&recvs, key, i);
        }
    for (int i = 0; ok && i < r->num_rows; i++) {
        const char *name = cell(r, i, C_NODE), *mark = strstr(name, "/_send_to_");
        if (strcmp(cell(r, i, C_OP), "_Send") != 0 || !mark)
            continue;
        char *want = NULL;
        if (asprintf(&want, "%.*s/_recv_on_%s", (int)(mark - name), name, mark + strlen("/_send_to_")) < 0) {
            ok = false;
            break;
        }
        const char *frame = frame_of(r, i);
        snprintf(key, sizeof key, "%s@%s#%lld", want, frame ? frame : "",
                 frame ? (long long)vz_cell_int(r->iterations, i, 1) : 0LL);
        int recv = vz_map_get(&recvs, key);
        if (recv >= 0)
            r->transfers[r->num_transfers++] = (tl_transfer){i, recv};
        free(want);
    }
    vz_map_free(&recvs);
    return ok;
}

/* Waiting per row: a _Recv waits from its start until its _Send ended (within its span), or its whole
 * span when its _Send is not in the run's timings. */
static bool find_waits(tl_run *r)
{
    if (!(r->wait_ns = calloc((size_t)(r->num_rows ? r->num_rows : 1), sizeof *r->wait_ns)))
        return false;
    for (int i = 0; i < r->num_rows; i++)
        if (strcmp(cell(r, i, C_OP), "_Recv") == 0)
            r->wait_ns[i] = vz_cell_int(r->rows, i, C_END) - vz_cell_int(r->rows, i, C_START);
    for (int t = 0; t < r->num_transfers; t++) {
        int send = r->transfers[t].send, recv = r->transfers[t].recv;
        int64_t start = vz_cell_int(r->rows, recv, C_START), end = vz_cell_int(r->rows, recv, C_END);
        int64_t until = vz_cell_int(r->rows, send, C_END);
        until = until < start ? start : until > end ? end : until;
        r->wait_ns[recv] = until - start;
    }
    for (int i = 0; i < r->num_rows; i++)
        if (r->wait_ns[i] < 0)
            r->wait_ns[i] = 0;
    return true;
}

/* The colour of each lane's device: the session's palette, then the run's other devices. */
static tide_status color_lanes(const char *db_path, tl_run *r, tide_error *err)
{
    vz_palette p;
    tide_status st = vz_palette_load(&p, db_path, r->session, err);
    bool ok = st == TIDE_OK;
    for (int i = 0; ok && i < r->num_lanes; i++)
        ok = vz_palette_add(&p, r->lanes[i].device);
    if (ok)
        vz_palette_finish(&p);
    for (int i = 0; ok && i < r->num_lanes; i++)
        r->lanes[i].color = vz_device_color(vz_palette_index(&p, r->lanes[i].device));
    vz_palette_free(&p);
    if (st == TIDE_OK && !ok)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory reading run %" PRId64, r->id);
    return st;
}

/* Loads run id. */
static tide_status load_run(const char *db_path, int64_t id, tl_run *r, tide_error *err)
{
    memset(r, 0, sizeof *r);
    r->id = id;
    if (!db_path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "timeline: the run log's path is required");
    tide_store_table *t = vz_query(db_path, TIDE_STORE_Q_RUN_BRIEF, &id, 1, 1, err);
    if (!t)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    bool found = tide_store_table_num_rows(t) > 0;
    if (found) {
        r->session = vz_cell_int(t, 0, 0);
        r->step = vz_cell_int(t, 0, 1);
        r->wall_ns = vz_cell_int(t, 0, 2);
        r->has_wall = !tide_store_table_is_null(t, 0, 2);
        r->traced = vz_cell_int(t, 0, 3) != 0;
        r->peak_bytes = vz_cell_int(t, 0, 4);
        r->has_peak = !tide_store_table_is_null(t, 0, 4);
    }
    tide_store_table_free(t);
    if (!found)
        return tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no run %" PRId64, db_path, id);
    r->rows = vz_query(db_path, TIDE_STORE_Q_RUN_TIMINGS, &id, 1, 1 << 24, err); /* shapes NULL before schema 3 */
    if (!r->rows)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    r->num_rows = tide_store_table_num_rows(r->rows);
    /* the same rows in the same order; a run whose timings were still arriving between the two reads
     * (counts differ) is shown without iterations rather than with wrong ones */
    r->iterations = vz_query(db_path, TIDE_STORE_Q_RUN_TIMING_ITERATIONS, &id, 1, 1 << 24, err);
    if (!r->iterations)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    if (tide_store_table_num_rows(r->iterations) != r->num_rows) {
        tide_store_table_free(r->iterations);
        r->iterations = NULL;
    }
    /* the device streams' lanes, read the same way (a mismatch: every row on its thread's lane) */
    r->streams = vz_query(db_path, TIDE_STORE_Q_RUN_TIMING_LANES, &id, 1, 1 << 24, err);
    if (!r->streams)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    if (tide_store_table_num_rows(r->streams) != r->num_rows) {
        tide_store_table_free(r->streams);
        r->streams = NULL;
    }
    r->memory = vz_query(db_path, TIDE_STORE_Q_RUN_DEVICE_MEMORY, &id, 1, 4096, err);
    if (!r->memory)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    r->t0 = INT64_MAX;
    for (int i = 0; i < r->num_rows; i++)
        for (int c = C_SCHED; c <= C_START; c++)
            if (!tide_store_table_is_null(r->rows, i, c) && vz_cell_int(r->rows, i, c) < r->t0)
                r->t0 = vz_cell_int(r->rows, i, c);
    if (r->t0 == INT64_MAX)
        r->t0 = 0;
    if (!make_lanes(r) || !pair_transfers(r) || !find_waits(r))
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory reading run %" PRId64, id);
    return color_lanes(db_path, r, err);
}

/* A time column of a row in µs from the run's start (null when NULL). */
static void time_us(tide_json *j, const tl_run *r, int row, int col)
{
    if (tide_store_table_is_null(r->rows, row, col))
        tide_json_null(j);
    else
        tide_json_double(j, (double)(vz_cell_int(r->rows, row, col) - r->t0) / 1000.0);
}

static char *lane_label(const tl_lane *l, char *buf, size_t size)
{
    char dev[128], thread[32];
    if (l->stream) { /* already "/sim:0 compute" */
        snprintf(buf, size, "%s", l->stream);
        return buf;
    }
    tide_device_short_name(l->device, dev, sizeof dev);
    if (l->thread < 0)
        snprintf(thread, sizeof thread, "caller");
    else
        snprintf(thread, sizeof thread, "thread %d", l->thread);
    snprintf(buf, size, "%s %s", dev, thread);
    return buf;
}

/* The run's memory per device: [{"device", "peak_bytes", "held_bytes"}] (empty when the log does not say). */
static void memory_json(tide_json *j, const tl_run *r)
{
    tide_json_begin_array(j);
    for (int i = 0; i < tide_store_table_num_rows(r->memory); i++) {
        tide_json_begin_object(j);
        tide_json_key(j, "device");
        tide_json_string(j, tide_store_table_cell(r->memory, i, 0));
        tide_json_key(j, "peak_bytes");
        tide_json_int(j, vz_cell_int(r->memory, i, 1));
        tide_json_key(j, "held_bytes");
        tide_json_int(j, vz_cell_int(r->memory, i, 2));
        tide_json_end_object(j);
    }
    tide_json_end_array(j);
}

/* A row that ran in a device stream's lane: when the host launched it (µs from the run's start), as
 * "launch_start_us" and "launch_end_us"; nothing for a row an executor thread ran. */
static void launch_json(tide_json *j, const tl_run *r, int row)
{
    if (!stream_of(r, row) || tide_store_table_is_null(r->streams, row, 1))
        return;
    tide_json_key(j, "launch_start_us");
    tide_json_double(j, (double)(vz_cell_int(r->streams, row, 1) - r->t0) / 1000.0);
    tide_json_key(j, "launch_end_us");
    tide_json_double(j, (double)(vz_cell_int(r->streams, row, 2) - r->t0) / 1000.0);
}

static void lane_json(tide_json *j, const tl_lane *l)
{
    char buf[192];
    tide_json_begin_object(j);
    tide_json_key(j, "device");
    tide_json_string(j, tide_device_short_name(l->device, buf, sizeof buf));
    tide_json_key(j, "thread");
    tide_json_int(j, l->stream ? -1 : l->thread);
    tide_json_key(j, "stream"); /* the device stream's name ("compute", "copy h2d"); null for a thread */
    if (l->stream)
        tide_json_string(j, l->stream + strcspn(l->stream, " ") + (l->stream[strcspn(l->stream, " ")] != '\0'));
    else
        tide_json_null(j);
    tide_json_key(j, "label");
    tide_json_string(j, lane_label(l, buf, sizeof buf));
    tide_json_key(j, "color");
    tide_json_string(j, l->color);
    tide_json_end_object(j);
}

static void run_json(tide_json *j, const tl_run *r)
{
    tide_json_begin_object(j);
    tide_json_key(j, "id");
    tide_json_int(j, r->id);
    tide_json_key(j, "session");
    if (r->session)
        tide_json_int(j, r->session);
    else
        tide_json_null(j);
    tide_json_key(j, "step");
    tide_json_int(j, r->step);
    tide_json_key(j, "wall_us");
    if (r->has_wall)
        tide_json_double(j, (double)r->wall_ns / 1000.0);
    else
        tide_json_null(j);
    tide_json_key(j, "traced");
    tide_json_bool(j, r->traced);
    tide_json_key(j, "peak_bytes");
    if (r->has_peak)
        tide_json_int(j, r->peak_bytes);
    else
        tide_json_null(j);
    tide_json_key(j, "device_memory");
    memory_json(j, r);
    tide_json_key(j, "lanes");
    tide_json_begin_array(j);
    for (int i = 0; i < r->num_lanes; i++)
        lane_json(j, &r->lanes[i]);
    tide_json_end_array(j);
    tide_json_key(j, "events");
    tide_json_begin_array(j);
    for (int i = 0; i < r->num_rows; i++) {
        tide_json_begin_object(j);
        tide_json_key(j, "node");
        tide_json_string(j, cell(r, i, C_NODE));
        tide_json_key(j, "op");
        tide_json_string(j, cell(r, i, C_OP));
        tide_json_key(j, "lane");
        tide_json_int(j, r->lane_of[i]);
        tide_json_key(j, "start_us");
        time_us(j, r, i, C_START);
        tide_json_key(j, "end_us");
        time_us(j, r, i, C_END);
        tide_json_key(j, "scheduled_us");
        time_us(j, r, i, C_SCHED);
        tide_json_key(j, "bytes");
        tide_json_int(j, vz_cell_int(r->rows, i, C_BYTES));
        tide_json_key(j, "async");
        tide_json_bool(j, strcmp(cell(r, i, C_OP), "_Recv") == 0);
        tide_json_key(j, "copy"); /* a copy between memory spaces, in a copy stream's lane */
        tide_json_bool(j, is_copy(r, i));
        tide_json_key(j, "wait_us");
        tide_json_double(j, (double)r->wait_ns[i] / 1000.0);
        tide_json_key(j, "shapes");
        if (tide_store_table_is_null(r->rows, i, C_SHAPES))
            tide_json_null(j);
        else
            tide_json_string(j, cell(r, i, C_SHAPES));
        tide_json_key(j, "fused"); /* a fused group's members (docs/fusion.md), null for a node run alone */
        if (tide_store_table_is_null(r->rows, i, C_FUSED))
            tide_json_null(j);
        else
            tide_json_string(j, cell(r, i, C_FUSED));
        iteration_json(j, r, i);
        launch_json(j, r, i);
        tide_json_end_object(j);
    }
    tide_json_end_array(j);
    tide_json_key(j, "transfers");
    tide_json_begin_array(j);
    for (int i = 0; i < r->num_transfers; i++) {
        const tl_transfer *t = &r->transfers[i];
        const char *name = cell(r, t->send, C_NODE);
        tide_json_begin_object(j);
        tide_json_key(j, "tensor");
        tide_json_string_n(j, name, (size_t)(strstr(name, "/_send_to_") - name));
        tide_json_key(j, "send_lane");
        tide_json_int(j, r->lane_of[t->send]);
        tide_json_key(j, "recv_lane");
        tide_json_int(j, r->lane_of[t->recv]);
        tide_json_key(j, "send_end_us");
        time_us(j, r, t->send, C_END);
        tide_json_key(j, "recv_end_us");
        time_us(j, r, t->recv, C_END);
        tide_json_end_object(j);
    }
    tide_json_end_array(j);
    tide_json_end_object(j);
}

#define TL_MAX_RUNS 64

char *tide_viz_timeline_json(const char *db_path, const int64_t *runs, int n, size_t *len, tide_error *err)
{
    if (!runs || n < 1 || n > TL_MAX_RUNS) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "timeline: give 1 to %d runs, not %d", TL_MAX_RUNS, runs ? n : 0);
        return NULL;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "runs");
    tide_json_begin_array(&j);
    for (int i = 0; i < n; i++) {
        tl_run r;
        if (load_run(db_path, runs[i], &r, err) != TIDE_OK) {
            tl_run_free(&r);
            tide_json_free(&j);
            return NULL;
        }
        run_json(&j, &r);
        tl_run_free(&r);
    }
    tide_json_end_array(&j);
    tide_json_end_object(&j);
    char *s = tide_json_take(&j, len);
    if (!s)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory writing the timeline");
    return s;
}

/* ---------------------------------------------------------------- Chrome trace */

/* Trace processes are devices (pid 1, 2, ... in lane order), threads the executor threads (tid 0 for
 * the caller's thread, else thread + 1) and the device's streams (tid 1000, 1001, ... in lane order,
 * named "compute", "copy h2d"...). */
static int lane_pid(const tl_run *r, int lane)
{
    int pid = 1;
    for (int i = 1; i <= lane; i++)
        pid += strcmp(r->lanes[i].device, r->lanes[i - 1].device) != 0;
    return pid;
}

static int lane_tid(const tl_run *r, int lane)
{
    if (!r->lanes[lane].stream)
        return r->lanes[lane].thread < 0 ? 0 : r->lanes[lane].thread + 1;
    int k = 0;
    for (int i = lane - 1; i >= 0 && r->lanes[i].stream && strcmp(r->lanes[i].device, r->lanes[lane].device) == 0; i--)
        k++;
    return 1000 + k;
}

/* The trace process of a device (its short name), or -1 when none of the run's lanes is on it. */
static int device_pid(const tl_run *r, const char *short_device)
{
    char buf[128];
    for (int l = 0; l < r->num_lanes; l++)
        if (strcmp(tide_device_short_name(r->lanes[l].device, buf, sizeof buf), short_device) == 0)
            return lane_pid(r, l);
    return -1;
}

static void metadata(tide_json *j, const char *what, int pid, int tid, const char *name, int sort)
{
    tide_json_begin_object(j);
    tide_json_key(j, "name");
    tide_json_string(j, what);
    tide_json_key(j, "ph");
    tide_json_string(j, "M");
    tide_json_key(j, "pid");
    tide_json_int(j, pid);
    if (tid >= 0) {
        tide_json_key(j, "tid");
        tide_json_int(j, tid);
    }
    tide_json_key(j, "args");
    tide_json_begin_object(j);
    if (name) {
        tide_json_key(j, "name");
        tide_json_string(j, name);
    } else {
        tide_json_key(j, "sort_index");
        tide_json_int(j, sort);
    }
    tide_json_end_object(j);
    tide_json_end_object(j);
}

static void trace_metadata(tide_json *j, const tl_run *r)
{
    char buf[192];
    for (int l = 0; l < r->num_lanes; l++) {
        int pid = lane_pid(r, l), tid = lane_tid(r, l);
        if (l == 0 || lane_pid(r, l - 1) != pid) {
            metadata(j, "process_name", pid, -1, tide_device_short_name(r->lanes[l].device, buf, sizeof buf), 0);
            metadata(j, "process_sort_index", pid, -1, NULL, pid);
        }
        metadata(j, "thread_name", pid, tid, strchr(lane_label(&r->lanes[l], buf, sizeof buf), ' ') + 1, 0);
        metadata(j, "thread_sort_index", pid, tid, NULL, tid);
    }
}

static void counter(tide_json *j, const char *name, int pid, double ts, int64_t bytes)
{
    tide_json_begin_object(j);
    tide_json_key(j, "name");
    tide_json_string(j, name);
    tide_json_key(j, "ph");
    tide_json_string(j, "C");
    tide_json_key(j, "pid");
    tide_json_int(j, pid);
    tide_json_key(j, "ts");
    tide_json_double(j, ts);
    tide_json_key(j, "args");
    tide_json_begin_object(j);
    tide_json_key(j, "bytes");
    tide_json_int(j, bytes);
    tide_json_end_object(j);
    tide_json_end_object(j);
}

/* The run's memory per device as counter tracks of the device's process ("peak bytes", "held bytes"),
 * constant over the run: one value per run is what the log holds. A device none of the run's lanes is on
 * gets a process of its own after the others. */
static void memory_counters(tide_json *j, const tl_run *r, double end_us)
{
    int next_pid = r->num_lanes ? lane_pid(r, r->num_lanes - 1) + 1 : 1;
    for (int i = 0; i < tide_store_table_num_rows(r->memory); i++) {
        const char *device = tide_store_table_cell(r->memory, i, 0);
        int pid = device_pid(r, device);
        if (pid < 0) {
            pid = next_pid++;
            metadata(j, "process_name", pid, -1, device, 0);
            metadata(j, "process_sort_index", pid, -1, NULL, pid);
        }
        for (int k = 0; k < 2; k++) {
            counter(j, "peak bytes", pid, k ? end_us : 0, vz_cell_int(r->memory, i, 1));
            counter(j, "held bytes", pid, k ? end_us : 0, vz_cell_int(r->memory, i, 2));
        }
    }
}

static double row_us(const tl_run *r, int row, int col)
{
    return (double)(vz_cell_int(r->rows, row, col) - r->t0) / 1000.0;
}

static void slice(tide_json *j, const tl_run *r, int i)
{
    double start = row_us(r, i, C_START), end = row_us(r, i, C_END);
    tide_json_begin_object(j);
    tide_json_key(j, "name");
    tide_json_string(j, cell(r, i, C_NODE));
    tide_json_key(j, "cat");
    tide_json_string(j, cell(r, i, C_OP));
    tide_json_key(j, "ph");
    tide_json_string(j, "X");
    tide_json_key(j, "pid");
    tide_json_int(j, lane_pid(r, r->lane_of[i]));
    tide_json_key(j, "tid");
    tide_json_int(j, lane_tid(r, r->lane_of[i]));
    tide_json_key(j, "ts");
    tide_json_double(j, start);
    tide_json_key(j, "dur");
    tide_json_double(j, end > start ? end - start : 0);
    tide_json_key(j, "args");
    tide_json_begin_object(j);
    tide_json_key(j, "op");
    tide_json_string(j, cell(r, i, C_OP));
    tide_json_key(j, "bytes");
    tide_json_int(j, vz_cell_int(r->rows, i, C_BYTES));
    if (is_copy(r, i)) {
        tide_json_key(j, "copy");
        tide_json_bool(j, true);
    }
    if (r->wait_ns[i] > 0) {
        tide_json_key(j, "waiting_us");
        tide_json_double(j, (double)r->wait_ns[i] / 1000.0);
    }
    if (!tide_store_table_is_null(r->rows, i, C_SHAPES)) {
        tide_json_key(j, "shapes");
        tide_json_string(j, cell(r, i, C_SHAPES));
    }
    if (!tide_store_table_is_null(r->rows, i, C_FUSED)) {
        tide_json_key(j, "fused");
        tide_json_string(j, cell(r, i, C_FUSED));
    }
    iteration_json(j, r, i);
    launch_json(j, r, i);
    tide_json_end_object(j);
    tide_json_end_object(j);
}

/* One end of a flow, inside its slice (at the slice's middle), bound to the enclosing slice. */
static void flow(tide_json *j, const tl_run *r, int id, int row, bool start)
{
    double a = row_us(r, row, C_START), b = row_us(r, row, C_END);
    const char *name = cell(r, row, C_NODE);
    tide_json_begin_object(j);
    tide_json_key(j, "name");
    tide_json_string_n(j, name, (size_t)(strstr(name, start ? "/_send_to_" : "/_recv_on_") - name));
    tide_json_key(j, "cat");
    tide_json_string(j, "transfer");
    tide_json_key(j, "ph");
    tide_json_string(j, start ? "s" : "f");
    if (!start) {
        tide_json_key(j, "bp");
        tide_json_string(j, "e");
    }
    tide_json_key(j, "id");
    tide_json_int(j, id);
    tide_json_key(j, "pid");
    tide_json_int(j, lane_pid(r, r->lane_of[row]));
    tide_json_key(j, "tid");
    tide_json_int(j, lane_tid(r, r->lane_of[row]));
    tide_json_key(j, "ts");
    tide_json_double(j, b > a ? (a + b) / 2 : a);
    tide_json_end_object(j);
}

char *tide_viz_chrome_trace(const char *db_path, int64_t run, size_t *len, tide_error *err)
{
    tl_run r;
    if (load_run(db_path, run, &r, err) != TIDE_OK) {
        tl_run_free(&r);
        return NULL;
    }
    if (r.num_rows == 0) {
        tide_error_set(err, TIDE_NOT_FOUND, "run %" PRId64 " has no node timings: it was not traced%s", run,
                       r.traced ? " (or its timings were dropped)" : "");
        tl_run_free(&r);
        return NULL;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "traceEvents");
    tide_json_begin_array(&j);
    trace_metadata(&j, &r);
    for (int i = 0; i < r.num_rows; i++)
        slice(&j, &r, i);
    for (int t = 0; t < r.num_transfers; t++) {
        flow(&j, &r, t + 1, r.transfers[t].send, true);
        flow(&j, &r, t + 1, r.transfers[t].recv, false);
    }
    double end_us = r.has_wall ? (double)r.wall_ns / 1000.0 : 0;
    for (int i = 0; i < r.num_rows; i++)
        if (row_us(&r, i, C_END) > end_us)
            end_us = row_us(&r, i, C_END);
    memory_counters(&j, &r, end_us);
    tide_json_end_array(&j);
    tide_json_key(&j, "displayTimeUnit");
    tide_json_string(&j, "ms");
    tide_json_key(&j, "otherData");
    tide_json_begin_object(&j);
    tide_json_key(&j, "run");
    tide_json_int(&j, r.id);
    tide_json_key(&j, "step");
    tide_json_int(&j, r.step);
    if (r.has_peak) { /* the step's peak memory (runs.peak_bytes) */
        tide_json_key(&j, "peak_bytes");
        tide_json_int(&j, r.peak_bytes);
    }
    tide_json_end_object(&j);
    tide_json_end_object(&j);
    tl_run_free(&r);
    char *s = tide_json_take(&j, len);
    if (!s)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory writing the trace");
    return s;
}
