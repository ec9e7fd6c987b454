/* viz_internal.h — what the files of viz/ share: the graph model loaded from the run log (model.c),
 * colours and the device palette (colors.c), a name -> index hash table, and small text helpers.
 * Not installed; nothing outside viz/ includes it. */
#ifndef TIDE_VIZ_INTERNAL_H
#define TIDE_VIZ_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "viz.h"

#define VZ_UNPLACED_COLOR "#d3d3d3"
#define VZ_NUM_TIME_BUCKETS 5

/* ---------------------------------------------------------------- a string -> int hash table */

typedef struct vz_map {
    const char **keys; /* borrowed */
    int *values;
    size_t cap;        /* a power of two, or 0 */
    size_t count;
} vz_map;

bool vz_map_put(vz_map *m, const char *key, int value); /* replaces; false when out of memory */
int vz_map_get(const vz_map *m, const char *key);        /* -1 when absent */
void vz_map_free(vz_map *m);

/* ---------------------------------------------------------------- the device palette (palette.c) */

typedef struct vz_palette {
    char **devices;     /* full names: the session's declared devices in natural order, then others */
    int num_declared, num;
} vz_palette;

/* The session's declared devices; p must be freed even on failure. */
tide_status vz_palette_load(vz_palette *p, const char *db_path, int64_t session, tide_error *err);
/* The index (the colour, vz_device_color) of a full device name, -1 when absent or "". */
int vz_palette_index(const vz_palette *p, const char *device);
/* Adds a device not declared (nothing when present or ""); false when out of memory. Then
 * vz_palette_finish puts the added ones in natural order (after the declared ones). */
bool vz_palette_add(vz_palette *p, const char *device);
void vz_palette_finish(vz_palette *p);
void vz_palette_free(vz_palette *p);

/* ---------------------------------------------------------------- the graph model (model.c) */

typedef struct vz_node {
    const char *name, *op, *inputs_json, *controls_json, *attrs, *requested, *assigned; /* in the table */
    int *producers;     /* indices of the nodes it takes data from (-1: not in the graph) */
    int num_producers;
    int *controls;      /* indices of its control inputs */
    int num_controls;
    int num_consumers;  /* distinct nodes that take its data or control */
    const char *device; /* the effective full device name; "" when unplaced (borrowed) */
    int device_index;   /* its index in vz_model.devices; -1 when unplaced */
    int64_t time_ns;    /* kernel time in the colour run; -1 when not timed */
    /* The fused group it ran in, in the colour run (docs/fusion.md): its root's name and the members
     * ("h, r, out"); NULL when it ran by itself or there is no such run. Borrowed from a table. */
    const char *fused_root, *fused_members;
} vz_node;

typedef struct vz_model {
    const char *db_path;
    int64_t session, version, graph_id;
    int64_t run;                  /* the run for colours: the chosen one, else the latest traced; 0: none */
    vz_node *nodes;
    int num_nodes;
    vz_map by_name;
    vz_palette palette;           /* the session's devices, then others seen (palette.c) */
    int num_devices;              /* palette.num */
    bool any_unplaced;
    int64_t time_min_ns, time_max_ns; /* over the timed nodes of the graph; -1 when none */
    int num_fused_groups, num_fused_nodes; /* in the colour run: groups, and nodes in them */
    tide_store_table *tables[4];  /* the tables the strings above live in (nodes, timings) */
    int num_tables;
} vz_model;

/* Loads the graph version named by o (session, version, run) with every node's effective device and
 * its time in the colour run; validates o first. With o->color TIME the colour run must exist and be
 * traced (TIDE_NOT_FOUND otherwise). On failure m must still be freed (vz_model_free). */
tide_status vz_model_load(vz_model *m, const char *db_path, const tide_viz_graph_options *o, tide_error *err);
void vz_model_free(vz_model *m);

/* The outline of a node of a fused group (graph_svg.c, the legend). */
#define VZ_FUSED_COLOR "#e8590c"

/* The colour of a node in the mode; of a device index (-1: unplaced); of a time bucket (-1: not timed). */
const char *vz_device_color(int device_index);
const char *vz_time_color(int bucket);
int vz_time_bucket(const vz_model *m, int64_t time_ns);
const char *vz_node_color(const vz_model *m, const vz_node *n, tide_viz_color mode);

/* Natural order of device names (and of names with numbers generally): "cpu:2" < "cpu:10". */
int vz_natural_cmp(const char *a, const char *b);


/* Parses a JSON array of strings (as the run log writes nodes.inputs); calls fn for each string
 * (unescaped, NUL-terminated, valid until fn returns). Anything else is taken as an empty array. */
bool vz_json_strings(const char *json, bool (*fn)(void *user, const char *s), void *user);

/* ---------------------------------------------------------------- queries */

/* A named query of the run log (store_queries.h: viz/ writes no SQL) with up to 4 integer parameters. */
tide_store_table *vz_query(const char *db_path, tide_store_query_id q, const int64_t *params, int n, int max_rows,
                           tide_error *err);
int64_t vz_cell_int(const tide_store_table *t, int row, int col); /* 0 for NULL */

#endif
