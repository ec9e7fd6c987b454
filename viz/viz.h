/* viz.h — drawing from the run log (store/): a graph version as SVG through Graphviz (cgraph + gvc,
 * dot layout, rendered in memory), its colour legend, the timelines of traced runs as JSON, and a run
 * as a Chrome trace (Trace Event Format). The web server (web/) serves these; docs/web.md describes
 * the pages and the JSON shapes.
 *
 * Conventions are tide.h's and store.h's: every call reads the log through its own read-only
 * connection (so any thread, while writers write), returns a malloc'd NUL-terminated text that the
 * caller frees (its length in *len when len is not NULL), or NULL with err set: TIDE_NOT_FOUND for a
 * missing file or no such session/version/run/node, TIDE_INVALID_ARGUMENT for bad options, the
 * store's codes for a file that is not a run log. Graphviz is not thread-safe: layouts and renders
 * are serialised on one process-wide mutex (loading from the log is not).
 *
 * The graph drawing (the SVG conventions the pages rely on):
 *   - every op node drawn is <g class="node" id="node:NAME"> with <title>NAME</title>, filled with its
 *     colour (fill="#rrggbb" on its shape);
 *   - a name scope is collapsed unless listed in `expanded` (or expand_all): it is drawn as one node
 *     <g class="node" id="scope:SCOPE"> (box3d, label "SCOPE (N nodes)", the colour of its nodes'
 *     majority device, or of its slowest node's time bucket). A collapsed scope of a single node is
 *     drawn as that node. Expanded scopes are clusters <g class="cluster" id="cluster:SCOPE">;
 *   - edges between drawn items are merged (one per pair, labelled with the count when > 1); control
 *     edges are dashed;
 *   - nodes with more than aux_degree consumers are drawn apart in a cluster "cluster:__aux__"
 *     labelled "auxiliary", without their edges; each consumer drawn gets a small stub node
 *     id="stub:NAME@CONSUMER" (CONSUMER: the consumer's node or scope name) with an edge to it;
 *   - the highlighted node or scope (or the collapsed scope that holds it) is outlined in red,
 *     pen width 3;
 *   - every name is XML-escaped.
 *
 * The device a node ran on (its colour): its device in node_timings of the chosen run, else in the
 * latest traced run of the session that timed it, else nodes.assigned_device, else "" (unplaced,
 * #d3d3d3). Device colours come from a fixed palette in the order of the session's device names
 * (natural order: /cpu:2 before /cpu:10): /cpu:0 #4e79a7, /cpu:1 #f28e2b, /cpu:2 #59a14f,
 * /cpu:3 #e15759, then #76b7b2 #edc948 #b07aa1 #ff9da7 #9c755f #bab0ac (and round again). */
#ifndef TIDE_VIZ_H
#define TIDE_VIZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tide_viz_color { TIDE_VIZ_COLOR_DEVICE = 0, TIDE_VIZ_COLOR_TIME = 1 } tide_viz_color;

typedef struct tide_viz_graph_options {
    int64_t session;              /* sessions.id; 0: the latest session that logged a graph */
    int64_t version;              /* graph version; 0: the latest of that session */
    const char *const *expanded;  /* scopes drawn open ("layer1", "layer1/dense"); others collapsed;
                                     borrowed; names of scopes that do not exist are ignored */
    int num_expanded;
    bool expand_all;              /* every scope open */
    tide_viz_color color;
    int64_t run;                  /* runs.id for device/time colours; 0: the latest traced run of
                                     the session */
    const char *highlight;        /* a node or scope to outline (search); NULL or "": none */
    int aux_degree;               /* nodes with more consumers than this are drawn apart; 0: 6 */
} tide_viz_graph_options;

/* Fills the defaults: latest session and version, all collapsed, device colours, no highlight. */
void tide_viz_graph_options_init(tide_viz_graph_options *o);

/* The graph as SVG. NULL with err: TIDE_NOT_FOUND for no such file/session/version/run, or a
 * highlight that names no node or scope; TIDE_INVALID_ARGUMENT for bad options (negative ids,
 * num_expanded < 0 or without a list, aux_degree < 0, an unknown colour mode); colour by time with
 * no traced run in the session is TIDE_NOT_FOUND. */
char *tide_viz_graph_svg(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err);

/* The legend as JSON: {"mode":"device","entries":[{"label":"/cpu:0","color":"#4e79a7"},...]} with
 * one entry per device of the session (and "unplaced" when a node has no device), or
 * {"mode":"time","run":N,"entries":[...]}: five log-scale buckets of the run's node times
 * ("0-12 µs", "12-150 µs", ...) then "not timed" (#d3d3d3). Errors as tide_viz_graph_svg. */
char *tide_viz_graph_legend_json(const char *db_path, const tide_viz_graph_options *o, size_t *len,
                                 tide_error *err);

/* The graph's nodes as JSON, the answer of /api/graph:
 * {"session":S,"version":V,"graph_id":G,"run":R or null,"nodes":[{"name","op","inputs":[..],
 * "control_inputs":[..],"attrs","requested_device","device","color"}]} where device is the short
 * effective device ("/cpu:1", "" when unplaced) and color its colour. Uses session, version and run
 * of o (the rest is ignored). Errors as tide_viz_graph_svg. */
char *tide_viz_graph_json(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err);

/* Timelines of runs (runs.id; 1 <= n <= 64) as JSON:
 * {"runs":[{"id","step","wall_us","lanes":[{"device","thread","label"}],"events":[{"node","op",
 * "lane","start_us","end_us","scheduled_us","bytes"}],"transfers":[{"tensor","send_lane",
 * "recv_lane","send_end_us","recv_end_us"}]}]}. One lane per (device, thread) of the run's
 * node_timings, sorted by device (natural order) then thread; devices short ("/cpu:0"); label
 * "/cpu:0 thread 1" ("caller" for thread -1). Times are µs relative to the run's earliest
 * scheduled or start time; events in start order. A transfer pairs a _Send with the _Recv of the same
 * tensor and destination ("x:0/_send_to_cpu1" with "x:0/_recv_on_cpu1"). A run that was not traced has
 * no lanes and no events. TIDE_NOT_FOUND for a run that does not exist. */
char *tide_viz_timeline_json(const char *db_path, const int64_t *runs, int n, size_t *len, tide_error *err);

/* One run as Chrome trace JSON (opens in Perfetto and chrome://tracing): {"traceEvents":[...],
 * "displayTimeUnit":"ms"}: "M" events naming a process per device and a thread per executor thread,
 * an "X" event per node (ts and dur in µs from the run's start, args op and bytes), and a flow
 * ("s" at the _Send, "f" with "bp":"e" at its _Recv) per transfer. TIDE_NOT_FOUND for no such run
 * and for a run that was not traced (the message says which). */
char *tide_viz_chrome_trace(const char *db_path, int64_t run, size_t *len, tide_error *err);

#ifdef __cplusplus
}
#endif
#endif
