/* viz_plan.h — the drawing plan of a graph version (plan.c): scopes, items (what becomes a Graphviz
 * node), merged edges. graph_svg.c draws a plan. Private to viz/. */
#ifndef TIDE_VIZ_PLAN_H
#define TIDE_VIZ_PLAN_H

#include "viz_internal.h"

#define VZ_ROOT (-1)         /* the top level: no cluster */
#define VZ_AUX_CLUSTER (-2)  /* the "auxiliary" cluster */

typedef struct vz_imap {     /* int64 (>= 0) -> int */
    int64_t *keys;           /* -1: empty slot */
    int *values;
    size_t cap, count;
} vz_imap;

typedef struct vz_scope {
    char *name;              /* full scope name, "tower0/dense" */
    int parent;              /* enclosing scope, or VZ_ROOT */
    bool expanded;
    int nodes;               /* when collapsed and outermost: the nodes it stands for */
    int item;                /* its item when drawn collapsed (more than one node), else -1 */
    int device_index;        /* its nodes' majority device (-1: unplaced) */
    int64_t max_time_ns;     /* its slowest node's time, -1 when none timed */
    void *cluster;           /* graph_svg.c: its Graphviz subgraph once made */
} vz_scope;

typedef enum vz_item_kind { VZ_ITEM_NODE = 0, VZ_ITEM_SCOPE = 1, VZ_ITEM_STUB = 2 } vz_item_kind;

typedef struct vz_item {
    vz_item_kind kind;
    int node;                /* NODE: the node; STUB: the aux node it stands for; else -1 */
    int scope;               /* SCOPE: the collapsed scope; else -1 */
    int consumer;            /* STUB: the item it feeds */
    int cluster;             /* the expanded scope it is drawn in, VZ_ROOT or VZ_AUX_CLUSTER */
    void *gv;                /* graph_svg.c: its Graphviz node */
} vz_item;

typedef struct vz_edge {
    int from, to;            /* items */
    int count;               /* node-level edges merged into it */
    bool data;               /* at least one is a data edge (else all are control edges: dashed) */
} vz_edge;

typedef struct vz_plan {
    const vz_model *m;
    tide_viz_color color;
    vz_scope *scopes;
    int num_scopes, cap_scopes;
    vz_map scope_by_name;
    vz_item *items;
    int num_items, cap_items;
    vz_edge *edges;
    int num_edges, cap_edges;
    vz_imap edge_by_pair, stub_by_pair;
    int *node_scope;         /* per node: its innermost scope or VZ_ROOT */
    int *node_item;          /* per node: the item that draws it */
    int *node_collapsed;     /* per node: the outermost collapsed scope holding it, or VZ_ROOT */
    bool *is_aux;
    bool any_aux;
    int highlight_item;      /* -1: none */
    int highlight_cluster;   /* an expanded scope to outline, or VZ_ROOT */
} vz_plan;

/* Plans the drawing of model m with options o (already checked). On failure the plan must still
 * be freed. */
tide_status vz_plan_build(vz_plan *p, const vz_model *m, const tide_viz_graph_options *o, tide_error *err);
void vz_plan_free(vz_plan *p);

#endif
