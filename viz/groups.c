/* groups.c — which nodes of a graph are training machinery rather than the model: the gradients, the
 * optimizer's updates and the initialisers. The graph view draws each of these groups as one box beside
 * the forward path (plan.c), so that a training graph reads as its model, top to bottom, as TensorBoard
 * draws it; a click on a box dissolves it.
 *
 * The rules, in order (a node takes the first group whose rule it meets; gradients are named before the
 * optimizer grows, so that a gradient that feeds only an update stays a gradient):
 *   1. initialisers: a NoOp named "init" or "init_N" (the node init() returns), an Assign whose last
 *      name part is "init" (how tide names a variable's initialiser, "W/init"), and every node that
 *      feeds only initialisers (the initial value's ops: "W/Initializer/fill", a truncated normal);
 *      Variables and Placeholders never (a variable is the model's, its initialiser is not);
 *   2. optimizer: every Apply* op (ApplyAdam, ApplyGradientDescent, ...), every node in the scope that
 *      holds the update ops (the part of an Apply op's name before "update_": "Adam" of
 *      "Adam/update_W/ApplyAdam"), and every node whose consumers are all optimizer or initialiser
 *      nodes, at least one an optimizer node (slot variables "W/Adam_m", the global step);
 *   3. gradients: every node of a top-level scope "gradients" or "gradients_N" (engine/gradients.c).
 * A node in none of them is the model's (VZ_GROUP_NONE). The rules read only names, ops and edges, so
 * a graph that never trains has no group. */
#include <stdlib.h>
#include <string.h>

#include "viz_plan.h"

/* The last part of a name ("a/b/init" -> "init"). */
static const char *last_part(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

/* s is base or base_N (N digits). */
static bool is_base_or_numbered(const char *s, size_t len, const char *base)
{
    size_t n = strlen(base);
    if (len < n || strncmp(s, base, n) != 0)
        return false;
    if (len == n)
        return true;
    if (s[n] != '_' || len == n + 1)
        return false;
    for (size_t i = n + 1; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool is_init_seed(const vz_node *n)
{
    const char *last = last_part(n->name);
    if (strcmp(n->op, "NoOp") == 0)
        return is_base_or_numbered(last, strlen(last), "init");
    return strcmp(n->op, "Assign") == 0 && strcmp(last, "init") == 0;
}

static bool is_apply(const vz_node *n)
{
    return strncmp(n->op, "Apply", 5) == 0 || strncmp(n->op, "ResourceApply", 13) == 0;
}

static bool in_gradients_scope(const vz_node *n)
{
    const char *slash = strchr(n->name, '/');
    return slash && is_base_or_numbered(n->name, (size_t)(slash - n->name), "gradients");
}

/* The distinct consumers of every node, as compressed rows: consumers of i are
 * list[start[i] .. start[i + 1]). */
typedef struct consumers {
    int *start, *list;
} consumers;

static bool build_consumers(const vz_model *m, consumers *c)
{
    int n = m->num_nodes;
    c->start = calloc((size_t)n + 2, sizeof *c->start);
    int *stamp = malloc((size_t)(n ? n : 1) * sizeof *stamp);
    if (!c->start || !stamp) {
        free(stamp);
        return false;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++)
            stamp[i] = -1;
        for (int i = 0; i < n; i++) {
            const vz_node *v = &m->nodes[i];
            for (int k = 0; k < v->num_producers + v->num_controls; k++) {
                int p = k < v->num_producers ? v->producers[k] : v->controls[k - v->num_producers];
                if (p < 0 || p == i || stamp[p] == i)
                    continue;
                stamp[p] = i;
                if (pass == 0)
                    c->start[p + 2]++;
                else
                    c->list[c->start[p + 1]++] = i;
            }
        }
        if (pass == 0) {
            for (int i = 0; i < n; i++)
                c->start[i + 2] += c->start[i + 1];
            if (!(c->list = malloc((size_t)(c->start[n + 1] ? c->start[n + 1] : 1) * sizeof *c->list)))
                break;
        }
    }
    free(stamp);
    return c->list != NULL; /* after pass 1, start[i] is the first consumer of i and start[n] the total */
}

/* Grows group g: a node joins when every consumer is in `within` groups and at least one in g. Runs
 * to the fixpoint with a work list (a node is looked at again when one of its consumers joins). */
static bool grow(const vz_model *m, const consumers *c, unsigned char *group, vz_group g, unsigned within,
                 bool (*eligible)(const vz_node *))
{
    int n = m->num_nodes, *work = malloc((size_t)(n ? n : 1) * sizeof *work), top = 0;
    if (!work)
        return false;
    for (int i = 0; i < n; i++)
        if (group[i] == g)
            work[top++] = i;
    while (top > 0) {
        const vz_node *v = &m->nodes[work[--top]];
        for (int k = 0; k < v->num_producers + v->num_controls; k++) {
            int p = k < v->num_producers ? v->producers[k] : v->controls[k - v->num_producers];
            if (p < 0 || group[p] != VZ_GROUP_NONE || !eligible(&m->nodes[p]))
                continue;
            bool all = true, any = false;
            for (int j = c->start[p]; all && j < c->start[p + 1]; j++) {
                all = (within >> group[c->list[j]]) & 1u;
                any |= group[c->list[j]] == g;
            }
            if (all && any) {
                group[p] = (unsigned char)g;
                work[top++] = p; /* each node is pushed once: it joins once */
            }
        }
    }
    free(work);
    return true;
}

static bool not_state(const vz_node *n)
{
    return strcmp(n->op, "Variable") != 0 && strcmp(n->op, "Placeholder") != 0;
}

static bool not_placeholder(const vz_node *n)
{
    return strcmp(n->op, "Placeholder") != 0;
}

/* The optimizer's scope of an Apply op: the part of its name before "/update_" (its length; 0 for an
 * update at the top level, "update_W/ApplyAdam"), or -1 when the name has no update part. */
static int optimizer_scope_len(const char *name)
{
    const char *update = strstr(name, "/update_");
    if (update)
        return (int)(update - name);
    return strncmp(name, "update_", 7) == 0 ? 0 : -1;
}

static bool in_scope(const char *name, const char *scope, int len)
{
    return len == 0 ? strncmp(name, "update_", 7) == 0 : strncmp(name, scope, (size_t)len) == 0 && name[len] == '/';
}

/* Marks every node of the optimizers' scopes not in a group yet (one scan per distinct scope). */
static void optimizer_scopes(const vz_model *m, unsigned char *group)
{
    const char *done[8];
    int done_len[8], num_done = 0;
    for (int i = 0; i < m->num_nodes; i++) {
        const char *name = m->nodes[i].name;
        int len = is_apply(&m->nodes[i]) ? optimizer_scope_len(name) : -1;
        bool seen = len < 0;
        for (int d = 0; !seen && d < num_done; d++)
            seen = done_len[d] == len && strncmp(done[d], name, (size_t)len) == 0;
        if (seen)
            continue;
        if (num_done < 8) {
            done[num_done] = name;
            done_len[num_done++] = len;
        }
        for (int j = 0; j < m->num_nodes; j++)
            if (group[j] == VZ_GROUP_NONE && in_scope(m->nodes[j].name, name, len))
                group[j] = VZ_GROUP_OPTIMIZER;
    }
}

bool vz_classify_groups(const vz_model *m, unsigned char *group)
{
    consumers c = {0};
    bool ok = build_consumers(m, &c);
    for (int i = 0; i < m->num_nodes; i++)
        group[i] = is_init_seed(&m->nodes[i]) ? VZ_GROUP_INIT : VZ_GROUP_NONE;
    ok = ok && grow(m, &c, group, VZ_GROUP_INIT, 1u << VZ_GROUP_INIT, not_state);
    /* Gradients before the optimizer grows, so that a gradient feeding only an update stays a gradient. */
    for (int i = 0; ok && i < m->num_nodes; i++)
        if (group[i] == VZ_GROUP_NONE && in_gradients_scope(&m->nodes[i]))
            group[i] = VZ_GROUP_GRADIENTS;
    bool any_apply = false;
    for (int i = 0; ok && i < m->num_nodes; i++)
        if (group[i] == VZ_GROUP_NONE && is_apply(&m->nodes[i])) {
            group[i] = VZ_GROUP_OPTIMIZER;
            any_apply = true;
        }
    if (ok && any_apply) {
        optimizer_scopes(m, group);
        ok = grow(m, &c, group, VZ_GROUP_OPTIMIZER, (1u << VZ_GROUP_OPTIMIZER) | (1u << VZ_GROUP_INIT),
                  not_placeholder);
    }
    free(c.start);
    free(c.list);
    return ok;
}
