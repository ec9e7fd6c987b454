/* viz_plan.h — the drawing plan of a graph version (plan.c, groups.c, series.c): which nodes are
 * training machinery (groups), the name scopes and which are drawn open, the repeated structures drawn
 * as one box (series), the items (what becomes a Graphviz node), the merged edges, and the cap on what
 * is laid out. graph_svg.c draws a plan. Private to viz/. */
#ifndef TIDE_VIZ_PLAN_H
#define TIDE_VIZ_PLAN_H

#include "viz_internal.h"

#define VZ_ROOT (-1)          /* the top level: no cluster */
#define VZ_AUX_CLUSTER (-2)   /* the "auxiliary" cluster */
#define VZ_SIDE_CLUSTER (-3)  /* the "training" cluster of the group boxes */

#define VZ_DEFAULT_MAX_ITEMS 600 /* items laid out at most (tide_viz_graph_options.max_items 0) */
#define VZ_SERIES_MIN 5          /* siblings named base_N that make a series */
#define VZ_MAX_LAYOUT_COST 20000  /* items + virtual nodes of long edges a layout may have (layout_cost.c) */
#define VZ_MIN_ITEMS 50          /* the cap is never lowered below this */

/* The training machinery drawn as one box each (groups.c has the rules). Values index arrays. */
typedef enum vz_group {
    VZ_GROUP_NONE = 0,
    VZ_GROUP_GRADIENTS = 1,
    VZ_GROUP_OPTIMIZER = 2,
    VZ_GROUP_INIT = 3,
} vz_group;
#define VZ_NUM_GROUPS 4

/* Sets group[i] for every node of m; false when out of memory. */
bool vz_classify_groups(const vz_model *m, unsigned char *group);
/* "gradients", "optimizer", "init": the name of a group in ids (group:NAME) and in expand lists. */
const char *vz_group_name(vz_group g);

typedef struct vz_imap {     /* int64 (>= 0) -> int */
    int64_t *keys;           /* -1: empty slot */
    int *values;
    size_t cap, count;
} vz_imap;

/* The slot of key (>= 0); NULL when out of memory. A new key's value is -1. */
int *vz_imap_slot(vz_imap *m, int64_t key);
void vz_imap_free(vz_imap *m);

typedef struct vz_scope {
    char *name;              /* full scope name, "tower0/dense" */
    int parent;              /* enclosing scope, or VZ_ROOT */
    int depth;               /* 0 for a top-level scope */
    bool requested;          /* listed in the expanded scopes (or expand_all) */
    bool expanded;           /* drawn open: requested and within the cap */
    bool capped;             /* requested but drawn collapsed: the cap was reached */
    int visible;             /* nodes of its subtree drawn in the model (not in a group, not aux) */
    int one_node;            /* a visible node of its subtree (the node itself when visible == 1) */
    int item;                /* its item when drawn collapsed, or -1 */
    int num_items;           /* items its contents make when open (series.c), -1 before counting */
    bool op_bundles;         /* its open contents bundle nodes by op (the cap) */
    void *cluster;           /* graph_svg.c: its Graphviz subgraph once made */
} vz_scope;

typedef enum vz_item_kind {
    VZ_ITEM_NODE = 0,   /* one node */
    VZ_ITEM_SCOPE = 1,  /* a collapsed scope */
    VZ_ITEM_STUB = 2,   /* an auxiliary node's stand-in next to one consumer */
    VZ_ITEM_SERIES = 3, /* siblings named base_N (nodes or scopes), one box */
    VZ_ITEM_OPS = 4,    /* the nodes of one op in a cluster too large to draw (the cap) */
    VZ_ITEM_GROUP = 5,  /* a training group */
} vz_item_kind;

typedef struct vz_item {
    vz_item_kind kind;
    int node;                /* NODE: the node; STUB: the aux node it stands for; else -1 */
    int scope;               /* SCOPE: the collapsed scope; else -1 */
    int consumer;            /* STUB: the item it feeds */
    int cluster;             /* the open scope it is drawn in, VZ_ROOT, VZ_AUX_CLUSTER or VZ_SIDE_CLUSTER */
    int group;               /* GROUP: its vz_group */
    char *key;               /* SERIES, OPS, GROUP: the id after "series:", "ops:", "group:" (malloc'd) */
    char *label;             /* SERIES, OPS, GROUP: the first line of the label (malloc'd) */
    int members;             /* SERIES: its entries; OPS: its nodes */
    int member_scopes;       /* SERIES: how many entries are scopes */
    int nodes;               /* the nodes it stands for (0 for a stub) */
    int device_index;        /* its nodes' majority device (-1: unplaced) */
    int64_t max_time_ns;     /* its slowest node's time, -1 when none timed */
    int in_edges, out_edges; /* GROUP: edges from and to nodes outside the group (not drawn) */
    void *gv;                /* graph_svg.c: its Graphviz node */
} vz_item;

typedef struct vz_edge {
    int from, to;            /* items */
    int count;               /* node-level edges merged into it */
    bool data;               /* at least one is a data edge (else all are control edges: dashed) */
} vz_edge;

/* A cluster's entries (what its open contents are before series): visible nodes directly in it and
 * child scopes with visible nodes. An entry is a node index i (0 <= i < num_nodes) or num_nodes + s
 * for scope s. */
typedef struct vz_entries {
    int *start;              /* per cluster c (slot c + 1; slot 0: the root): entries start[c]..start[c+1] */
    int *list;
    int *series;             /* per entry: the index in vz_plan.series of its series, or -1 */
    int *pos;                /* per entry id: its position in list */
    int *pair_start, *pairs; /* per cluster: pairs of entries joined by an edge (2 ints each) */
} vz_entries;

typedef struct vz_series {   /* a candidate series or op bundle of one cluster */
    int cluster;
    vz_item_kind kind;       /* SERIES or OPS */
    char *base;              /* SERIES: the base name ("add" of add_1, add_2); OPS: the op */
    int members, member_scopes;
    long long lo, hi;        /* SERIES: the smallest and largest number; lo -1 when base itself is a member */
    bool uniform_op;         /* SERIES: every member is a node of one op (op names it) */
    const char *op;
    bool live;               /* made an item (a series of enough unconnected members) */
    int item;
} vz_series;

typedef struct vz_plan {
    const vz_model *m;
    tide_viz_color color;
    int max_items;           /* the cap this plan was made with */
    int asked_max_items;     /* the cap asked for (lowered when the layout would cost too much) */
    long long layout_cost;   /* items + virtual nodes (layout_cost.c) */
    vz_scope *scopes;
    int num_scopes, cap_scopes;
    vz_map scope_by_name;
    vz_map ungrouped;        /* series keys listed in expanded ("layer1/add_*"), borrowed */
    vz_item *items;
    int num_items, cap_items;
    vz_edge *edges;
    int num_edges, cap_edges;
    vz_imap edge_by_pair, stub_by_pair;
    vz_entries entries;
    vz_series *series;
    int num_series, cap_series;
    int *node_scope;         /* per node: its innermost scope or VZ_ROOT */
    int *node_item;          /* per node: the item that draws it */
    unsigned char *group;    /* per node: its vz_group (NONE when its group is dissolved) */
    bool *is_aux;
    bool any_aux;
    int group_item[VZ_NUM_GROUPS]; /* the item of each group drawn, or -1 */
    int used;                /* items counted against max_items */
    int stubs_dropped;       /* aux edges not drawn because of the cap */
    int num_capped;          /* scopes requested open but drawn collapsed */
    bool root_bundled;       /* the top level bundles nodes by op */
    int highlight_item;      /* -1: none */
    int highlight_cluster;   /* an expanded scope to outline, or VZ_ROOT */
} vz_plan;

/* Plans the drawing of model m with options o (already checked). On failure the plan must still
 * be freed. */
tide_status vz_plan_build(vz_plan *p, const vz_model *m, const tide_viz_graph_options *o, tide_error *err);
void vz_plan_free(vz_plan *p);

/* series.c: the entries of every cluster and the edges between siblings (once per plan), then the
 * items a scope's open contents make (SERIES candidates found, OPS bundles when op_bundles is set);
 * c is a scope or VZ_ROOT. False when out of memory. */
bool vz_entries_build(vz_plan *p);
bool vz_cluster_count(vz_plan *p, int c, bool op_bundles, int *items);
/* The series or op bundle an entry of cluster c is drawn in (-1: none), once counted. */
int vz_entry_series(const vz_plan *p, int c, int entry_pos);
/* The entry range of cluster c. */
void vz_cluster_range(const vz_plan *p, int c, int *begin, int *end);

/* The SVG id of item it ("node:NAME", "scope:NAME", "series:KEY", ...), malloc'd ('&' written
 * "&amp;" for Graphviz, see graph_svg.c); NULL when out of memory. */
char *vz_item_id(const vz_plan *p, const vz_item *it, bool for_graphviz);
/* layout_cost.c: the items of p plus the virtual nodes dot makes for edges spanning several ranks of
 * a longest-path ranking; -1 when out of memory. */
long long vz_plan_layout_cost(const vz_plan *p);

/* highlight.c: svg (len bytes, of this plan's drawing) with a <style> rule outlining the plan's
 * highlight in red at the top; a copy when there is none. Malloc'd, NULL with err when out of memory. */
char *vz_svg_highlight(const vz_plan *p, const char *svg, size_t len, size_t *out_len, tide_error *err);
/* The notes of a drawing (the cap, bundles), one per line, malloc'd ("" when none). */
char *vz_plan_notes(const vz_plan *p);

#endif
