/* colors.c — the colours of the graph views: the device palette (fixed, in device-name order, so a
 * device has one colour on every page), log-scale time buckets of a run's node times, the legend JSON
 * and the /api/graph JSON (each node with its effective device and colour). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "viz_plan.h"

static const char *const device_palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                             "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
/* Light to dark (ColorBrewer Reds, 5 classes). */
static const char *const time_palette[VZ_NUM_TIME_BUCKETS] = {"#fee5d9", "#fcae91", "#fb6a4a", "#de2d26",
                                                              "#a50f15"};

const char *vz_device_color(int device_index)
{
    if (device_index < 0)
        return VZ_UNPLACED_COLOR;
    return device_palette[device_index % (int)(sizeof device_palette / sizeof device_palette[0])];
}

const char *vz_time_color(int bucket)
{
    return bucket < 0 ? VZ_UNPLACED_COLOR : time_palette[bucket < VZ_NUM_TIME_BUCKETS ? bucket : VZ_NUM_TIME_BUCKETS - 1];
}

/* log10 of the smallest and largest node times (ns, at least 1), at least one decade apart. */
static void log_range(const vz_model *m, double *lo, double *hi)
{
    *lo = log10(m->time_min_ns > 1 ? (double)m->time_min_ns : 1.0);
    *hi = log10(m->time_max_ns > 1 ? (double)m->time_max_ns : 1.0);
    if (*hi - *lo < 1.0)
        *hi = *lo + 1.0;
}

int vz_time_bucket(const vz_model *m, int64_t time_ns)
{
    if (time_ns < 0 || m->time_max_ns < 0)
        return -1;
    double lo, hi;
    log_range(m, &lo, &hi);
    double x = log10(time_ns > 1 ? (double)time_ns : 1.0);
    int b = (int)floor((x - lo) / (hi - lo) * VZ_NUM_TIME_BUCKETS);
    return b < 0 ? 0 : b >= VZ_NUM_TIME_BUCKETS ? VZ_NUM_TIME_BUCKETS - 1 : b;
}

/* The bucket edges in ns (VZ_NUM_TIME_BUCKETS + 1 of them) and a bucket's label ("12-150 µs"). */
static void vz_time_edges(const vz_model *m, double *edges)
{
    double lo, hi;
    log_range(m, &lo, &hi);
    edges[0] = 0;
    for (int i = 1; i <= VZ_NUM_TIME_BUCKETS; i++)
        edges[i] = pow(10.0, lo + (hi - lo) * i / VZ_NUM_TIME_BUCKETS);
}

static void format_us(double ns, char *buf, size_t size)
{
    double us = ns / 1000.0;
    if (us == 0)
        snprintf(buf, size, "0");
    else if (us < 10)
        snprintf(buf, size, "%.1f", us);
    else
        snprintf(buf, size, "%.0f", us);
}

static void vz_time_label(const vz_model *m, int bucket, char *buf, size_t size)
{
    double edges[VZ_NUM_TIME_BUCKETS + 1];
    char a[32], b[32];
    vz_time_edges(m, edges);
    format_us(edges[bucket], a, sizeof a);
    format_us(edges[bucket + 1], b, sizeof b);
    snprintf(buf, size, "%s-%s \xc2\xb5s", a, b);
}

const char *vz_node_color(const vz_model *m, const vz_node *n, tide_viz_color mode)
{
    if (mode == TIDE_VIZ_COLOR_TIME)
        return vz_time_color(vz_time_bucket(m, n->time_ns));
    return vz_device_color(n->device_index);
}

static void legend_entry(tide_json *j, const char *label, const char *color)
{
    tide_json_begin_object(j);
    tide_json_key(j, "label");
    tide_json_string(j, label);
    tide_json_key(j, "color");
    tide_json_string(j, color);
    tide_json_end_object(j);
}

static char *take(tide_json *j, size_t *len, tide_error *err)
{
    char *s = tide_json_take(j, len);
    if (!s)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory writing JSON");
    return s;
}

/* What the drawing of these options shows: {"nodes","items","max_items","layout_cost","notes":[...],
 * "highlight"}. */
static void drawing_json(tide_json *j, const vz_plan *p)
{
    tide_json_key(j, "drawing");
    tide_json_begin_object(j);
    tide_json_key(j, "nodes");
    tide_json_int(j, p->m->num_nodes);
    tide_json_key(j, "items");
    tide_json_int(j, p->num_items);
    tide_json_key(j, "max_items");
    tide_json_int(j, p->max_items);
    tide_json_key(j, "layout_cost");
    tide_json_int(j, p->layout_cost);
    tide_json_key(j, "notes");
    tide_json_begin_array(j);
    char *notes = vz_plan_notes(p);
    for (char *line = notes, *nl; line && *line; line = nl ? nl + 1 : line + strlen(line)) {
        nl = strchr(line, '\n');
        tide_json_string_n(j, line, nl ? (size_t)(nl - line) : strlen(line));
    }
    free(notes);
    tide_json_end_array(j);
    tide_json_key(j, "highlight");
    char *id = NULL;
    if (p->highlight_item >= 0)
        id = vz_item_id(p, &p->items[p->highlight_item], false);
    else if (p->highlight_cluster >= 0 && asprintf(&id, "cluster:%s", p->scopes[p->highlight_cluster].name) < 0)
        id = NULL;
    tide_json_string(j, id); /* null when none */
    free(id);
    tide_json_end_object(j);
}

char *tide_viz_graph_legend_json(const char *db_path, const tide_viz_graph_options *o, size_t *len,
                                 tide_error *err)
{
    vz_model m;
    vz_plan p;
    memset(&p, 0, sizeof p);
    if (vz_model_load(&m, db_path, o, err) != TIDE_OK || vz_plan_build(&p, &m, o, err) != TIDE_OK) {
        vz_plan_free(&p);
        vz_model_free(&m);
        return NULL;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "mode");
    tide_json_string(&j, o->color == TIDE_VIZ_COLOR_TIME ? "time" : "device");
    if (o->color == TIDE_VIZ_COLOR_TIME) {
        tide_json_key(&j, "run");
        tide_json_int(&j, m.run);
    }
    tide_json_key(&j, "entries");
    tide_json_begin_array(&j);
    char label[128];
    if (o->color == TIDE_VIZ_COLOR_TIME) {
        for (int b = 0; b < VZ_NUM_TIME_BUCKETS; b++) {
            vz_time_label(&m, b, label, sizeof label);
            legend_entry(&j, label, vz_time_color(b));
        }
        legend_entry(&j, "not timed", VZ_UNPLACED_COLOR);
    } else {
        for (int d = 0; d < m.num_devices; d++)
            legend_entry(&j, tide_device_short_name(m.palette.devices[d], label, sizeof label), vz_device_color(d));
        if (m.any_unplaced)
            legend_entry(&j, "unplaced", VZ_UNPLACED_COLOR);
    }
    tide_json_end_array(&j);
    tide_json_key(&j, "fused"); /* the colour run's fused groups, outlined in the drawing */
    tide_json_begin_object(&j);
    tide_json_key(&j, "groups");
    tide_json_int(&j, m.num_fused_groups);
    tide_json_key(&j, "nodes");
    tide_json_int(&j, m.num_fused_nodes);
    tide_json_key(&j, "color");
    tide_json_string(&j, VZ_FUSED_COLOR);
    tide_json_end_object(&j);
    drawing_json(&j, &p);
    tide_json_end_object(&j);
    vz_plan_free(&p);
    vz_model_free(&m);
    return take(&j, len, err);
}

static bool emit_string(void *user, const char *s)
{
    tide_json_string(user, s);
    return !tide_json_failed(user);
}

static void node_json(tide_json *j, const vz_model *m, const vz_node *n)
{
    char dev[128];
    tide_json_begin_object(j);
    tide_json_key(j, "name");
    tide_json_string(j, n->name);
    tide_json_key(j, "op");
    tide_json_string(j, n->op);
    /* inputs and control_inputs are JSON written by the store; re-encode them so that a damaged
       or hostile file cannot break the document. */
    const char *lists[2] = {n->inputs_json, n->controls_json};
    const char *keys[2] = {"inputs", "control_inputs"};
    for (int k = 0; k < 2; k++) {
        tide_json_key(j, keys[k]);
        tide_json_begin_array(j);
        vz_json_strings(lists[k], emit_string, j);
        tide_json_end_array(j);
    }
    tide_json_key(j, "attrs");
    tide_json_string(j, n->attrs);
    tide_json_key(j, "requested_device");
    tide_json_string(j, n->requested);
    tide_json_key(j, "device");
    tide_json_string(j, tide_device_short_name(n->device, dev, sizeof dev));
    tide_json_key(j, "color");
    tide_json_string(j, vz_node_color(m, n, TIDE_VIZ_COLOR_DEVICE));
    tide_json_key(j, "fused"); /* the root of the fused group it ran in (null: by itself) */
    tide_json_string(j, n->fused_root);
    tide_json_end_object(j);
}

char *tide_viz_graph_json(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    tide_viz_graph_options device_only;
    if (o) {
        device_only = *o;
        device_only.color = TIDE_VIZ_COLOR_DEVICE;
    }
    vz_model m;
    if (vz_model_load(&m, db_path, o ? &device_only : NULL, err) != TIDE_OK) {
        vz_model_free(&m);
        return NULL;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "session");
    tide_json_int(&j, m.session);
    tide_json_key(&j, "version");
    tide_json_int(&j, m.version);
    tide_json_key(&j, "graph_id");
    tide_json_int(&j, m.graph_id);
    tide_json_key(&j, "run");
    if (m.run)
        tide_json_int(&j, m.run);
    else
        tide_json_null(&j);
    tide_json_key(&j, "nodes");
    tide_json_begin_array(&j);
    for (int i = 0; i < m.num_nodes; i++)
        node_json(&j, &m, &m.nodes[i]);
    tide_json_end_array(&j);
    tide_json_end_object(&j);
    vz_model_free(&m);
    return take(&j, len, err);
}
