/* export.c — a tide graph as a GraphDef, written the way TensorFlow 1.x writes one: nodes in creation
 * order, inputs "node" / "node:1" then control inputs "^node", the requested device, every attr
 * (defaults included) with map entries sorted by key, `_colocate_with` as `_class: ["loc:@node"]`,
 * optionally `_output_shapes`, and a VersionDef. tide's Variable is written as VariableV2 (the same op
 * under TensorFlow 1.x's current name) and RandomNormal as RandomStandardNormal (TensorFlow's name of
 * that op); importing maps them back, so an exported graph reads back as the same graph. The messages are built in a pool (convert.c) and borrow tensor data and strings from the
 * graph until they are encoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphdef_internal.h"

static const struct {
    const char *tide, *tf;
} export_names[] = {
    {"Variable", "VariableV2"},
    {"RandomNormal", "RandomStandardNormal"},
};

void tide_graphdef_export_options_init(tide_graphdef_export_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->output_shapes = true;
}

static const char *tf_op_name(const char *op)
{
    for (size_t i = 0; i < sizeof export_names / sizeof *export_names; i++)
        if (strcmp(export_names[i].tide, op) == 0)
            return export_names[i].tf;
    return op;
}

static char *input_name(graphdef_pool *pool, const char *prefix, const char *node, int index)
{
    char *s = NULL;
    int n = index ? asprintf(&s, "%s%s:%d", prefix, node, index) : asprintf(&s, "%s%s", prefix, node);
    if (n < 0)
        return NULL;
    char *copy = graphdef_pool_strdup(pool, s);
    free(s);
    return copy;
}

static Tensorflow__NodeDef__AttrEntry *new_entry(graphdef_pool *pool, const char *key, Tensorflow__AttrValue *v)
{
    Tensorflow__NodeDef__AttrEntry *e = graphdef_pool_alloc(pool, sizeof *e);
    if (!e || !v)
        return NULL;
    tensorflow__node_def__attr_entry__init(e);
    e->key = graphdef_pool_strdup(pool, key);
    e->value = v;
    return e->key ? e : NULL;
}

/* `_colocate_with = "x"` -> `_class: list { s: "loc:@x" }` */
static Tensorflow__AttrValue *colocation_class(graphdef_pool *pool, const tide_attrs *attrs)
{
    const char *target = NULL;
    tide_attrs_get_string(attrs, "_colocate_with", &target);
    Tensorflow__AttrValue *v = graphdef_pool_alloc(pool, sizeof *v);
    Tensorflow__AttrValue__ListValue *l = graphdef_pool_alloc(pool, sizeof *l);
    ProtobufCBinaryData *s = graphdef_pool_alloc(pool, sizeof *s);
    char *loc = NULL;
    if (!v || !l || !s || !target || asprintf(&loc, "loc:@%s", target) < 0)
        return NULL;
    tensorflow__attr_value__init(v);
    tensorflow__attr_value__list_value__init(l);
    s->data = (uint8_t *)graphdef_pool_strdup(pool, loc);
    s->len = strlen(loc);
    free(loc);
    l->s = s;
    l->n_s = 1;
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    v->list = l;
    return s->data ? v : NULL;
}

/* `_output_shapes`: the shapes tide inferred for every output. */
static Tensorflow__AttrValue *output_shapes(graphdef_pool *pool, const tide_node *n)
{
    Tensorflow__AttrValue *v = graphdef_pool_alloc(pool, sizeof *v);
    Tensorflow__AttrValue__ListValue *l = graphdef_pool_alloc(pool, sizeof *l);
    int outputs = tide_node_num_outputs(n);
    Tensorflow__TensorShapeProto **shapes = graphdef_pool_alloc(pool, sizeof *shapes * (size_t)outputs);
    if (!v || !l || !shapes)
        return NULL;
    tensorflow__attr_value__init(v);
    tensorflow__attr_value__list_value__init(l);
    for (int i = 0; i < outputs; i++) {
        tide_shape s = tide_node_output_shape(n, i);
        if (!(shapes[i] = graphdef_shape_from_tide(pool, &s)))
            return NULL;
    }
    l->shape = shapes;
    l->n_shape = (size_t)outputs;
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    v->list = l;
    return v;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp((*(Tensorflow__NodeDef__AttrEntry *const *)a)->key, (*(Tensorflow__NodeDef__AttrEntry *const *)b)->key);
}

static bool add_attrs(graphdef_pool *pool, Tensorflow__NodeDef *d, const tide_node *n, bool shapes)
{
    const tide_attrs *attrs = tide_node_attrs(n);
    int count = tide_attrs_count(attrs);
    d->attr = graphdef_pool_alloc(pool, sizeof *d->attr * (size_t)(count + 1));
    if (!d->attr)
        return false;
    for (int i = 0; i < count; i++) {
        const char *name = tide_attrs_name_at(attrs, i);
        bool colocation = strcmp(name, "_colocate_with") == 0;
        Tensorflow__AttrValue *v = colocation ? colocation_class(pool, attrs) : graphdef_attr_from_tide(pool, attrs, name);
        if (!(d->attr[d->n_attr++] = new_entry(pool, colocation ? "_class" : name, v)))
            return false;
    }
    if (shapes && tide_node_num_outputs(n) > 0 &&
        !(d->attr[d->n_attr++] = new_entry(pool, "_output_shapes", output_shapes(pool, n))))
        return false;
    qsort(d->attr, d->n_attr, sizeof *d->attr, entry_cmp);
    return true;
}

static Tensorflow__NodeDef *node_def(graphdef_pool *pool, const tide_node *n, bool shapes)
{
    Tensorflow__NodeDef *d = graphdef_pool_alloc(pool, sizeof *d);
    if (!d)
        return NULL;
    tensorflow__node_def__init(d);
    d->name = graphdef_pool_strdup(pool, tide_node_name(n));
    d->op = graphdef_pool_strdup(pool, tf_op_name(tide_node_op(n)));
    d->device = graphdef_pool_strdup(pool, tide_node_requested_device(n));
    int data = tide_node_num_inputs(n), control = tide_node_num_control_inputs(n);
    d->input = graphdef_pool_alloc(pool, sizeof *d->input * (size_t)(data + control));
    if (!d->name || !d->op || !d->device || !d->input)
        return NULL;
    for (int i = 0; i < data; i++) {
        tide_output in = tide_node_input(n, i);
        if (!(d->input[d->n_input++] = input_name(pool, "", tide_node_name(in.node), in.index)))
            return NULL;
    }
    for (int i = 0; i < control; i++)
        if (!(d->input[d->n_input++] = input_name(pool, "^", tide_node_name(tide_node_control_input(n, i)), 0)))
            return NULL;
    return add_attrs(pool, d, n, shapes) ? d : NULL;
}

tide_status tide_graphdef_export(const tide_graph *g, const tide_graphdef_export_options *opts, void **data,
                                 size_t *size, tide_error *err)
{
    tide_graphdef_export_options defaults;
    if (!opts) {
        tide_graphdef_export_options_init(&defaults);
        opts = &defaults;
    }
    if (!data || !size)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "export: nowhere to put the GraphDef");
    *data = NULL;
    *size = 0;
    if (!g)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "export: no graph");
    graphdef_pool pool = {0};
    Tensorflow__GraphDef *gd = graphdef_pool_alloc(&pool, sizeof *gd);
    Tensorflow__VersionDef *versions = graphdef_pool_alloc(&pool, sizeof *versions);
    int count = tide_graph_num_nodes(g);
    Tensorflow__NodeDef **nodes = graphdef_pool_alloc(&pool, sizeof *nodes * (size_t)count);
    if (gd && versions && nodes) {
        tensorflow__graph_def__init(gd);
        tensorflow__version_def__init(versions);
        versions->producer = TIDE_GRAPHDEF_PRODUCER;
        gd->versions = versions;
        gd->node = nodes;
        for (int i = 0; i < count && !pool.oom; i++)
            if (!(nodes[gd->n_node++] = node_def(&pool, tide_graph_node_at(g, i), opts->output_shapes)))
                pool.oom = true;
    }
    tide_status st = pool.oom || !gd || !versions || !nodes
                         ? tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory exporting %d nodes", count)
                         : graphdef_serialize(gd, opts->format == TIDE_GRAPHDEF_TEXT ? TIDE_GRAPHDEF_TEXT
                                                                                    : TIDE_GRAPHDEF_BINARY,
                                              data, size, err);
    graphdef_pool_free(&pool);
    return st;
}

tide_status tide_graphdef_export_file(const tide_graph *g, const char *path, const tide_graphdef_export_options *opts,
                                      tide_error *err)
{
    if (!path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "export: no file named");
    tide_graphdef_export_options o;
    if (opts)
        o = *opts;
    else
        tide_graphdef_export_options_init(&o);
    if (o.format == TIDE_GRAPHDEF_AUTO)
        o.format = tide_graphdef_format_of_path(path);
    void *data;
    size_t size;
    tide_status st = tide_graphdef_export(g, &o, &data, &size, err);
    if (st == TIDE_OK)
        st = graphdef_write_file(path, data, size, err);
    free(data);
    return st;
}
