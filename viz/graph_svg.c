/* graph_svg.c — a drawing plan (plan.c) to SVG through Graphviz: cgraph objects with the ids, labels
 * and colours of the SVG conventions (viz.h), dot layout, rendered in memory (gvRenderData). Graphviz
 * keeps global state and is not thread-safe, so everything from agopen to agclose runs under one
 * process-wide mutex; loading and planning happen before it, outside. When the build links the
 * dot-layout and core plugins directly (TIDE_VIZ_BUILTIN_PLUGINS), the context uses them as builtins:
 * no plugin is loaded from disk, and text is measured with Graphviz's built-in font metrics. A build
 * without Graphviz (TIDE_VIZ_NO_GRAPHVIZ) answers TIDE_UNIMPLEMENTED. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_plan.h"

#if TIDE_VIZ_NO_GRAPHVIZ
char *tide_viz_graph_svg(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    (void)db_path;
    (void)o;
    (void)len;
    tide_error_set(err, TIDE_UNIMPLEMENTED, "graph drawing: this tide was built without Graphviz "
                   "(install libgraphviz-dev and reconfigure)");
    return NULL;
}
#else

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>

#if TIDE_VIZ_BUILTIN_PLUGINS
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
static lt_symlist_t builtins[] = {
    {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
    {NULL, NULL},
};
#endif

static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;
static char gv_error[512]; /* the last message Graphviz reported (under gv_lock) */

static int record_error(char *msg)
{
    snprintf(gv_error, sizeof gv_error, "%s", msg);
    size_t n = strlen(gv_error);
    while (n && (gv_error[n - 1] == '\n' || gv_error[n - 1] == ' '))
        gv_error[--n] = '\0';
    return 0;
}

/* The attributes set per object, declared once with their defaults. */
typedef struct gv_syms {
    Agsym_t *n_label, *n_id, *n_fill, *n_shape, *n_style, *n_color, *n_pen, *n_fontsize, *n_height, *n_margin;
    Agsym_t *e_label, *e_style;
    Agsym_t *g_label, *g_id, *g_style, *g_color, *g_pen;
} gv_syms;

static void declare(Agraph_t *g, gv_syms *s)
{
    agattr(g, AGRAPH, "rankdir", "TB");
    agattr(g, AGRAPH, "fontname", "Helvetica");
    agattr(g, AGRAPH, "fontsize", "13");
    agattr(g, AGRAPH, "nodesep", "0.25");
    agattr(g, AGRAPH, "ranksep", "0.4");
    agattr(g, AGRAPH, "labelloc", "t");
    /* A bound on dot's network simplex (ranks, then x coordinates): at most this many iterations per
       node, where the default is unbounded (a large training graph opened entirely spent minutes placing
       x coordinates). plan.c's layout cost keeps drawings well inside it. */
    agattr(g, AGRAPH, "nslimit", "4");
    agattr(g, AGRAPH, "nslimit1", "4");
    s->g_label = agattr(g, AGRAPH, "label", "");
    s->g_id = agattr(g, AGRAPH, "id", "");
    s->g_style = agattr(g, AGRAPH, "style", "rounded");
    s->g_color = agattr(g, AGRAPH, "color", "#888888");
    s->g_pen = agattr(g, AGRAPH, "penwidth", "1");
    agattr(g, AGNODE, "fontname", "Helvetica");
    s->n_fontsize = agattr(g, AGNODE, "fontsize", "12");
    s->n_label = agattr(g, AGNODE, "label", "");
    s->n_id = agattr(g, AGNODE, "id", "");
    s->n_fill = agattr(g, AGNODE, "fillcolor", VZ_UNPLACED_COLOR);
    s->n_shape = agattr(g, AGNODE, "shape", "ellipse");
    s->n_style = agattr(g, AGNODE, "style", "filled");
    s->n_color = agattr(g, AGNODE, "color", "#333333");
    s->n_pen = agattr(g, AGNODE, "penwidth", "1");
    s->n_height = agattr(g, AGNODE, "height", "0.4");
    s->n_margin = agattr(g, AGNODE, "margin", "0.08,0.04");
    agattr(g, AGEDGE, "arrowsize", "0.6");
    agattr(g, AGEDGE, "color", "#555555");
    agattr(g, AGEDGE, "fontsize", "10");
    /* Edge counts as xlabels: placed after the layout, where a label would be a virtual node in the
       ranks (slower), and would make Graphviz 2.43 free a cluster's edge twice on some graphs. */
    s->e_label = agattr(g, AGEDGE, "xlabel", "");
    s->e_style = agattr(g, AGEDGE, "style", "solid");
}

/* s with every backslash doubled: Graphviz reads \N, \G, \n, \l... in labels and ids. Malloc'd. */
static char *gv_escape(const char *s)
{
    size_t n = strlen(s), extra = 0;
    for (size_t i = 0; i < n; i++)
        extra += s[i] == '\\';
    char *out = malloc(n + extra + 1);
    if (!out)
        return NULL;
    char *q = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            *q++ = '\\';
        *q++ = s[i];
    }
    *q = '\0';
    return out;
}

/* Sets attribute sym of obj to the escaped text of fmt's result. */
static bool set_text(void *obj, Agsym_t *sym, const char *fmt, const char *a, const char *b)
{
    char *ea = gv_escape(a), *eb = b ? gv_escape(b) : NULL, *text = NULL;
    bool ok = ea && (!b || eb) && asprintf(&text, fmt, ea, eb ? eb : "") >= 0;
    if (ok)
        agxset(obj, sym, text);
    free(ea);
    free(eb);
    free(text);
    return ok;
}

/* name relative to the expanded scope it is drawn in. */
static const char *relative(const vz_plan *p, const char *name, int cluster)
{
    if (cluster < 0)
        return name;
    const char *scope = p->scopes[cluster].name;
    size_t n = strlen(scope);
    return strncmp(name, scope, n) == 0 && name[n] == '/' ? name + n + 1 : name;
}

static const char *last_part(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash && slash[1] ? slash + 1 : name;
}

typedef struct draw_ctx {
    const vz_plan *p;
    vz_scope *scopes;        /* p->scopes, writable for the cluster pointers */
    Agraph_t *root, *aux, *side;
    gv_syms s;
} draw_ctx;

/* A side cluster (aux nodes, training groups), made on first use. */
static Agraph_t *side_cluster(draw_ctx *d, Agraph_t **slot, char *id, char *label)
{
    if (!*slot && (*slot = agsubg(d->root, id, 1)) != NULL) {
        agxset(*slot, d->s.g_label, label);
        agxset(*slot, d->s.g_id, id);
        agxset(*slot, d->s.g_style, "dashed,rounded");
    }
    return *slot;
}

/* The subgraph of expanded scope c (VZ_ROOT: the root), made with its parents on first use. */
static Agraph_t *cluster_of(draw_ctx *d, int c)
{
    if (c == VZ_ROOT)
        return d->root;
    if (c == VZ_AUX_CLUSTER)
        return side_cluster(d, &d->aux, "cluster:__aux__", "auxiliary");
    if (c == VZ_SIDE_CLUSTER)
        return side_cluster(d, &d->side, "cluster:__training__", "training");
    vz_scope *sc = &d->scopes[c];
    if (sc->cluster)
        return sc->cluster;
    Agraph_t *parent = cluster_of(d, sc->parent);
    vz_item as_scope = {.kind = VZ_ITEM_SCOPE, .scope = c};
    char *id = vz_item_id(d->p, &as_scope, true), *name = NULL;
    if (!parent || !id || asprintf(&name, "cluster:%s", id + strlen("scope:")) < 0) {
        free(id);
        return NULL;
    }
    free(id);
    Agraph_t *g = agsubg(parent, name, 1);
    bool ok = g && set_text(g, d->s.g_id, "%s%s", name, NULL) &&
              set_text(g, d->s.g_label, "%s%s", relative(d->p, sc->name, sc->parent), NULL);
    free(name);
    sc->cluster = ok ? g : NULL;
    return sc->cluster;
}

static const char *item_color(const vz_plan *p, const vz_item *it)
{
    const vz_model *m = p->m;
    if (it->kind == VZ_ITEM_NODE || it->kind == VZ_ITEM_STUB)
        return vz_node_color(m, &m->nodes[it->node], p->color);
    if (p->color == TIDE_VIZ_COLOR_TIME)
        return vz_time_color(vz_time_bucket(m, it->max_time_ns));
    return vz_device_color(it->device_index);
}

/* n with thousands separators ("4,001"). */
static char *count_text(int n, char *buf, size_t size)
{
    char digits[16];
    int len = snprintf(digits, sizeof digits, "%d", n < 0 ? 0 : n), k = 0;
    for (int i = 0; i < len && (size_t)k + 2 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return buf;
}

/* The second line of a box: what it stands for ("33 nodes", "1,000 nodes, collapsed"). */
static void box_count(const vz_item *it, char *buf, size_t size)
{
    char a[24], b[24];
    if (it->kind == VZ_ITEM_SERIES && it->member_scopes)
        snprintf(buf, size, "%s scopes, %s nodes, collapsed", count_text(it->members, a, sizeof a),
                 count_text(it->nodes, b, sizeof b));
    else if (it->kind == VZ_ITEM_GROUP)
        snprintf(buf, size, "%s nodes, collapsed\\n%d in \xc2\xb7 %d out", count_text(it->nodes, a, sizeof a),
                 it->in_edges, it->out_edges);
    else
        snprintf(buf, size, "%s node%s%s", count_text(it->nodes, a, sizeof a), it->nodes == 1 ? "" : "s",
                 it->kind == VZ_ITEM_SCOPE ? "" : ", collapsed");
}

/* A node's label: its name (relative to its scope) and op; a node of a fused group in the colour run
 * (docs/fusion.md) is outlined in VZ_FUSED_COLOR with a third line, "fused into ROOT" for a member and
 * "fused group of N" for the root, whose execution ran them all. */
static bool set_node_label(draw_ctx *d, Agnode_t *n, const vz_node *node, int cluster)
{
    const char *name = relative(d->p, node->name, cluster);
    if (!node->fused_root)
        return set_text(n, d->s.n_label, "%s\\n%s", name, node->op);
    agxset(n, d->s.n_color, VZ_FUSED_COLOR);
    agxset(n, d->s.n_pen, "3");
    int members = 1;
    for (const char *c = node->fused_members; *c; c++)
        members += *c == ',';
    char *ename = gv_escape(name), *eop = gv_escape(node->op), *eroot = gv_escape(node->fused_root), *text = NULL;
    bool root = strcmp(node->name, node->fused_root) == 0;
    bool ok = ename && eop && eroot &&
              (root ? asprintf(&text, "%s\\n%s\\nfused group of %d", ename, eop, members)
                    : asprintf(&text, "%s\\n%s\\nfused into %s", ename, eop, eroot)) >= 0;
    if (ok)
        agxset(n, d->s.n_label, text);
    free(ename);
    free(eop);
    free(eroot);
    free(text);
    return ok;
}

static bool set_item_label(draw_ctx *d, Agnode_t *n, const vz_item *it)
{
    static const char *const shapes[] = {"ellipse", "box3d", "box", "tab", "folder", "box"};
    const vz_plan *p = d->p;
    char count[96];
    agxset(n, d->s.n_shape, (char *)shapes[it->kind]);
    switch (it->kind) {
    case VZ_ITEM_NODE:
        return set_node_label(d, n, &p->m->nodes[it->node], it->cluster);
    case VZ_ITEM_STUB:
        agxset(n, d->s.n_style, "filled,dashed");
        agxset(n, d->s.n_fontsize, "9");
        agxset(n, d->s.n_height, "0.2");
        agxset(n, d->s.n_margin, "0.04,0.02");
        return set_text(n, d->s.n_label, "%s%s", last_part(p->m->nodes[it->node].name), NULL);
    case VZ_ITEM_GROUP:
        agxset(n, d->s.n_style, "filled,rounded,bold");
        break;
    default:
        break;
    }
    agxset(n, d->s.n_fontsize, "14");
    box_count(it, count, sizeof count);
    if (it->kind == VZ_ITEM_SCOPE)
        return set_text(n, d->s.n_label, "%s\\n%s", relative(p, p->scopes[it->scope].name, it->cluster), count);
    /* A series' or bundle's label is made here (from names: escaped like any label); the count line
       is ours (its "\n" are Graphviz line breaks). */
    char *label = gv_escape(it->label ? it->label : ""), *text = NULL;
    bool ok = label && asprintf(&text, "%s\\n%s", label, count) >= 0;
    if (ok)
        agxset(n, d->s.n_label, text);
    free(label);
    free(text);
    return ok;
}

static bool draw_item(draw_ctx *d, int i)
{
    vz_item *it = &d->p->items[i];
    Agraph_t *g = cluster_of(d, it->cluster);
    char *id = vz_item_id(d->p, it, true);
    /* The Graphviz name (the SVG <title>): the node's name for a node, else the id. */
    const char *key = id && it->kind == VZ_ITEM_NODE ? id + strlen("node:") : id;
    Agnode_t *n = g && id ? agnode(g, (char *)key, 1) : NULL;
    bool ok = n && set_text(n, d->s.n_id, "%s%s", id, NULL) && set_item_label(d, n, it);
    if (ok)
        agxset(n, d->s.n_fill, (char *)item_color(d->p, it));
    it->gv = n;
    free(id);
    return ok;
}

static bool draw_edges(draw_ctx *d)
{
    for (int i = 0; i < d->p->num_edges; i++) {
        const vz_edge *e = &d->p->edges[i];
        Agnode_t *from = d->p->items[e->from].gv, *to = d->p->items[e->to].gv;
        Agedge_t *edge = from && to ? agedge(d->root, from, to, NULL, 1) : NULL;
        if (!edge)
            return false;
        if (e->count > 1) {
            char count[16];
            snprintf(count, sizeof count, "%d", e->count);
            agxset(edge, d->s.e_label, count);
        }
        if (!e->data)
            agxset(edge, d->s.e_style, "dashed");
    }
    return true;
}

/* Builds, lays out and renders the plan. Called with gv_lock held. */
static char *render_locked(vz_plan *p, size_t *len, tide_error *err)
{
    gv_error[0] = '\0';
    agseterr(AGERR);
    agusererrf previous = agseterrf(record_error);
#if TIDE_VIZ_BUILTIN_PLUGINS
    GVC_t *gvc = gvContextPlugins(builtins, 0);
#else
    GVC_t *gvc = gvContext();
#endif
    draw_ctx d = {p, p->scopes, NULL, NULL, NULL, {0}};
    d.root = gvc ? agopen("tide", Agdirected, NULL) : NULL;
    char *notes = vz_plan_notes(p);
    bool ok = d.root != NULL && notes != NULL;
    if (ok) {
        declare(d.root, &d.s);
        ok = set_text(d.root, d.s.g_label, "%s%s", notes, NULL); /* the notes (the cap), on top */
    }
    free(notes);
    for (int i = 0; ok && i < p->num_items; i++)
        ok = draw_item(&d, i);
    ok = ok && draw_edges(&d);
    char *svg = NULL, *data = NULL;
    unsigned int n = 0;
    if (!ok) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "graphviz: could not build the graph%s%s",
                       gv_error[0] ? ": " : "", gv_error);
    } else if (gvLayout(gvc, d.root, "dot") != 0) {
        tide_error_set(err, TIDE_INTERNAL, "graphviz: the dot layout failed%s%s", gv_error[0] ? ": " : "", gv_error);
    } else {
        if (gvRenderData(gvc, d.root, "svg", &data, &n) != 0 || !data)
            tide_error_set(err, TIDE_INTERNAL, "graphviz: rendering SVG failed%s%s", gv_error[0] ? ": " : "",
                           gv_error);
        else if (!(svg = malloc((size_t)n + 1)))
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory rendering the graph");
        if (svg) {
            memcpy(svg, data, n);
            svg[n] = '\0';
            if (len)
                *len = n;
        }
        gvFreeRenderData(data);
        gvFreeLayout(gvc, d.root);
    }
    if (d.root)
        agclose(d.root);
    if (gvc)
        gvFreeContext(gvc);
    else
        tide_error_set(err, TIDE_INTERNAL, "graphviz: no context");
    agseterrf(previous);
    return svg;
}

char *tide_viz_graph_svg(const char *db_path, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    vz_model m;
    vz_plan p;
    char *svg = NULL;
    size_t n = 0;
    memset(&p, 0, sizeof p);
    if (vz_model_load(&m, db_path, o, err) == TIDE_OK && vz_plan_build(&p, &m, o, err) == TIDE_OK) {
        pthread_mutex_lock(&gv_lock);
        svg = render_locked(&p, &n, err);
        pthread_mutex_unlock(&gv_lock);
    }
    if (svg && o->highlight && o->highlight[0]) {
        char *marked = vz_svg_highlight(&p, svg, n, &n, err);
        free(svg);
        svg = marked;
    }
    if (svg && len)
        *len = n;
    vz_plan_free(&p);
    vz_model_free(&m);
    return svg;
}
#endif /* TIDE_VIZ_NO_GRAPHVIZ */
