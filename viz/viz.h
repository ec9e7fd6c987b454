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
 * The graph drawing (the SVG conventions the pages rely on; plan.c has the passes):
 *   - every op node drawn is <g class="node" id="node:NAME"> with <title>NAME</title>, filled with its
 *     colour (fill="#rrggbb" on its shape);
 *   - training machinery is drawn as one box per group beside the model, in a cluster
 *     "cluster:__training__": <g class="node" id="group:gradients"> (the gradients), "group:optimizer"
 *     (the optimizer's updates, slots and hyper-parameters), "group:init" (the initialisers), labelled
 *     with their node count and the number of edges to and from the model, which are not drawn (so the
 *     forward path reads top to bottom); listing "group:NAME" among the expanded names dissolves a
 *     group into the drawing (expand_all opens every scope, not the groups);
 *   - a name scope is collapsed unless listed in `expanded` (or expand_all): it is drawn as one node
 *     <g class="node" id="scope:SCOPE"> (box3d, label "SCOPE" and "N nodes", the colour of its nodes'
 *     majority device, or of its slowest node's time bucket). A collapsed scope of a single node is
 *     drawn as that node. Expanded scopes are clusters <g class="cluster" id="cluster:SCOPE">;
 *   - repeated structures are one box: at least 5 siblings named base, base_1, base_2, ... (nodes or
 *     scopes, no edge between two of them) are <g class="node" id="series:SCOPE/base_*"> labelled
 *     "base_[1-999]" and "N nodes, collapsed"; listing "SCOPE/base_*" among the expanded names keeps
 *     them apart;
 *   - at most max_items items (nodes, boxes, stubs) are laid out: scopes are opened breadth first
 *     while they fit, a scope that does not fit stays collapsed, nodes of a level too large are
 *     bundled by op (<g class="node" id="ops:SCOPE/OP">, "N nodes, collapsed"), and the drawing's
 *     label (on top) says what the cap changed;
 *   - edges between drawn items are merged (one per pair, labelled with the count when > 1); control
 *     edges are dashed;
 *   - nodes with more than aux_degree consumers in the model are drawn apart in a cluster
 *     "cluster:__aux__" labelled "auxiliary", without their edges; each consumer drawn gets a small
 *     stub node id="stub:NAME@CONSUMER" (CONSUMER: the consumer's node or scope name, or the id of
 *     its box) with an edge to it;
 *   - the highlighted node or scope (or the box that holds it; the cluster of an open scope) is
 *     outlined in red by a <style> rule at the top of the SVG, so highlighting needs no new layout;
 *   - every name is XML-escaped.
 *
 * The device a node ran on (its colour): its device in node_timings of the chosen run, else in the
 * latest traced run of the session that timed it, else nodes.assigned_device, else "" (unplaced,
 * #d3d3d3). Device colours come from one palette per session (palette.c), the same for the graph, the
 * timeline and /api/devices: the session's declared devices in natural name order (/cpu:2 before
 * /cpu:10), then devices it did not declare, in name order: /cpu:0 #4e79a7, /cpu:1 #f28e2b,
 * /cpu:2 #59a14f, /cpu:3 #e15759, then #76b7b2 #edc948 #b07aa1 #ff9da7 #9c755f #bab0ac (and round
 * again). */
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
    bool expand_all;              /* every scope open (the training groups stay boxes) */
    tide_viz_color color;
    int64_t run;                  /* runs.id for device/time colours; 0: the latest traced run of
                                     the session */
    const char *highlight;        /* a node or scope to outline (search); NULL or "": none */
    int aux_degree;               /* nodes with more consumers than this are drawn apart; 0: 6 */
    int max_items;                /* items laid out at most (the cap); 0: 600 */
} tide_viz_graph_options;

/* Fills the defaults: latest session and version, all collapsed, device colours, no highlight. */
void tide_viz_graph_options_init(tide_viz_graph_options *o);

/* The graph as SVG. NULL with err: TIDE_NOT_FOUND for no such file/session/version/run, or a
 * highlight that names no node or scope; TIDE_INVALID_ARGUMENT for bad options (negative ids,
 * num_expanded < 0 or without a list, aux_degree < 0, an unknown colour mode); colour by time with
 * no traced run in the session is TIDE_NOT_FOUND. */
char *tide_viz_graph_svg(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err);

/* svg (len bytes and a NUL: a drawing of tide_viz_graph_svg with the same options but no highlight) with
 * o->highlight outlined, without a new layout; *out_len, when not NULL, receives the length. Errors as
 * tide_viz_graph_svg (TIDE_NOT_FOUND for a name that is no node or scope). */
char *tide_viz_graph_highlight(const char *db_path, const tide_viz_graph_options *o, const char *svg, size_t len,
                               size_t *out_len, tide_error *err);

/* The legend as JSON: {"mode":"device","entries":[{"label":"/cpu:0","color":"#4e79a7"},...]} with
 * one entry per device of the session (and "unplaced" when a node has no device), or
 * {"mode":"time","run":N,"entries":[...]}: five log-scale buckets of the run's node times
 * ("0-12 µs", "12-150 µs", ...) then "not timed" (#d3d3d3); both with "fused":{"groups","nodes",
 * "color"}: the fused groups of the colour run (docs/fusion.md), whose nodes the drawing outlines in
 * that colour with a third label line ("fused into ROOT", "fused group of N"). Errors as
 * tide_viz_graph_svg. */
char *tide_viz_graph_legend_json(const char *db_path, const tide_viz_graph_options *o, size_t *len,
                                 tide_error *err);

/* The graph's nodes as JSON, the answer of /api/graph:
 * {"session":S,"version":V,"graph_id":G,"run":R or null,"nodes":[{"name","op","inputs":[..],
 * "control_inputs":[..],"attrs","requested_device","device","color","fused"}]} where device is the short
 * effective device ("/cpu:1", "" when unplaced), color its colour and fused the root of the fused
 * group it ran in, in the colour run (null: by itself). Uses session, version and run
 * of o (the rest is ignored). Errors as tide_viz_graph_svg. */
char *tide_viz_graph_json(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err);

/* Timelines of runs (runs.id; 1 <= n <= 64) as JSON:
 * {"runs":[{"id","step","wall_us","lanes":[{"device","thread","label","color"}],"events":[{"node","op",
 * "lane","start_us","end_us","scheduled_us","bytes","async","wait_us","shapes","fused"}],"transfers":[{"tensor","send_lane",
 * "recv_lane","send_end_us","recv_end_us"}]}]}. One lane per (device, thread) of the run's
 * node_timings, sorted by device (natural order) then thread; devices short ("/cpu:0"); label
 * "/cpu:0 thread 1" ("caller" for thread -1); color its device's colour in the session's palette
 * (the graph's). Times are µs relative to the run's earliest
 * scheduled or start time; events in start order. A transfer pairs a _Send with the _Recv of the same
 * tensor and destination ("x:0/_send_to_cpu1" with "x:0/_recv_on_cpu1"). A run that was not traced has
 * no lanes and no events. async is true for a _Recv (it holds no thread while it waits); wait_us is the
 * part of its span it waited: until its _Send ended, or all of it when that _Send was not timed (0 for
 * every other event). fused names a fused group's members ("h, r, out", the event's node its root;
 * docs/fusion.md), null for a node that ran by itself. TIDE_NOT_FOUND for a run that does not exist. */
char *tide_viz_timeline_json(const char *db_path, const int64_t *runs, int n, size_t *len, tide_error *err);

/* One run as Chrome trace JSON (opens in Perfetto and chrome://tracing): {"traceEvents":[...],
 * "displayTimeUnit":"ms"}: "M" events naming a process per device and a thread per executor thread,
 * an "X" event per node (ts and dur in µs from the run's start, args op, bytes, shapes, for a fused
 * group fused (its members), and for a _Recv that waited, waiting_us), and a flow
 * ("s" at the _Send, "f" with "bp":"e" at its _Recv) per transfer. TIDE_NOT_FOUND for no such run
 * and for a run that was not traced (the message says which). */
char *tide_viz_chrome_trace(const char *db_path, int64_t run, size_t *len, tide_error *err);

/* The device colours of a session (session > 0) or of every session (0), as JSON:
 * {"unplaced":"#d3d3d3","sessions":[{"session":S,"devices":[{"device":"/cpu:0","color":"#4e79a7"},...]}]}
 * with the session's declared devices in palette order. TIDE_NOT_FOUND for no such session. */
char *tide_viz_devices_json(const char *db_path, int64_t session, size_t *len, tide_error *err);

#ifdef __cplusplus
}
#endif
#endif
