/* registry.c — the process-wide registry of op definitions and kernels. Ops and kernels register
 * from load-time constructors in any order; the first engine finalises the registry once (sorting
 * ops, attaching kernels, surfacing any registration error). After that it is read-only. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static struct {
    tide_op_def **ops;
    int num_ops, cap_ops;
    tide_kernel_def *pending_kernels;
    char *first_error;
    const char **names;              /* sorted, for tide_registry_op_names */
    tide_name_table *by_name;
    pthread_once_t once;
} reg = {.once = PTHREAD_ONCE_INIT};

static void record_error(const char *msg)
{
    if (!reg.first_error)
        reg.first_error = tide__strdup(msg);
}

void tide_op_register(const tide_op_spec *spec)
{
    tide_error *err = tide_error_new();
    tide_op_def *def = calloc(1, sizeof *def);
    if (!def || !err || tide__op_def_parse(spec, def, err) != TIDE_OK) {
        record_error(err ? tide_error_message(err) : "out of memory registering an op");
        if (def)
            tide__op_def_clear(def);
        free(def);
        tide_error_free(err);
        return;
    }
    tide_error_free(err);
    if (reg.num_ops == reg.cap_ops) {
        int cap = reg.cap_ops ? reg.cap_ops * 2 : 128;
        tide_op_def **ops = realloc(reg.ops, (size_t)cap * sizeof *ops);
        if (!ops) {
            record_error("out of memory registering ops");
            return;
        }
        reg.ops = ops;
        reg.cap_ops = cap;
    }
    reg.ops[reg.num_ops++] = def;
}

void tide_kernel_register(const tide_kernel_spec *spec)
{
    tide_kernel_def *k = calloc(1, sizeof *k);
    if (!k) {
        record_error("out of memory registering a kernel");
        return;
    }
    k->spec = *spec;
    k->op_name = tide__strdup(spec->op);
    k->device_type = tide__strdup(spec->device_type ? spec->device_type : "cpu");
    for (int i = 0; i < 4 && spec->constraints[i]; i++) {
        const char *c = spec->constraints[i], *colon = strchr(c, ':');
        uint32_t set = colon ? tide__dtype_set_parse(colon + 1) : 0;
        if (!set) {
            char msg[256];
            snprintf(msg, sizeof msg, "kernel for %s: bad constraint '%s'", spec->op, c);
            record_error(msg);
            continue;
        }
        k->constraints[k->num_constraints].attr = strndup(c, (size_t)(colon - c));
        k->constraints[k->num_constraints].allowed = set;
        k->num_constraints++;
    }
    if (!spec->compute && !spec->compute_async) {
        char msg[256];
        snprintf(msg, sizeof msg, "kernel for %s has no compute function", spec->op);
        record_error(msg);
    }
    /* Keep registration order within an op: append. */
    tide_kernel_def **at = &reg.pending_kernels;
    while (*at)
        at = &(*at)->next;
    *at = k;
}

static int cmp_ops(const void *a, const void *b)
{
    return strcmp((*(tide_op_def *const *)a)->name, (*(tide_op_def *const *)b)->name);
}

static void finalize(void)
{
    qsort(reg.ops, (size_t)reg.num_ops, sizeof *reg.ops, cmp_ops);
    reg.by_name = tide__names_new();
    reg.names = calloc((size_t)reg.num_ops + 1, sizeof *reg.names);
    if (!reg.by_name || !reg.names) {
        record_error("out of memory finalising the registry");
        return;
    }
    for (int i = 0; i < reg.num_ops; i++) {
        if (i > 0 && strcmp(reg.ops[i]->name, reg.ops[i - 1]->name) == 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "op %s registered twice", reg.ops[i]->name);
            record_error(msg);
        }
        reg.names[i] = reg.ops[i]->name;
        tide__names_put(reg.by_name, reg.ops[i]->name, reg.ops[i]);
        for (int k = 0; k < i && reg.ops[i]->alias; k++)
            if (reg.ops[k]->alias && strcmp(reg.ops[k]->alias, reg.ops[i]->alias) == 0) {
                char msg[256];
                snprintf(msg, sizeof msg, "ops %s and %s both claim the alias %s", reg.ops[k]->name,
                         reg.ops[i]->name, reg.ops[i]->alias);
                record_error(msg);
            }
    }
    for (tide_kernel_def *k = reg.pending_kernels, *next; k; k = next) {
        next = k->next;
        k->next = NULL;
        tide_op_def *op = tide__names_get(reg.by_name, k->op_name);
        if (!op) {
            char msg[256];
            snprintf(msg, sizeof msg, "kernel registered for unknown op %s", k->op_name);
            record_error(msg);
            continue;
        }
        tide_kernel_def **at = &op->kernels;
        while (*at)
            at = &(*at)->next;
        *at = k;
    }
    reg.pending_kernels = NULL;
    tide__sim_add_kernels(reg.ops, reg.num_ops); /* the simulated device runs the CPU's kernels */
}

tide_status tide__registry_ready(tide_error *err)
{
    pthread_once(&reg.once, finalize);
    if (reg.first_error)
        return tide_error_set(err, TIDE_INTERNAL, "op registry: %s", reg.first_error);
    return TIDE_OK;
}

const tide_op_def *tide__registry_find(const char *op)
{
    pthread_once(&reg.once, finalize);
    return reg.by_name && op ? tide__names_get(reg.by_name, op) : NULL;
}

int tide_registry_op_names(const char *const **names)
{
    pthread_once(&reg.once, finalize);
    *names = reg.names;
    return reg.names ? reg.num_ops : 0;
}

/* Case-insensitive edit distance (Levenshtein) of two names of up to 64 bytes (99 beyond): what the
 * "did you mean" suggestion for an unknown op ranks by. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    int row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = prev + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *tide__registry_suggest(const char *op, char *buf, size_t size)
{
    pthread_once(&reg.once, finalize);
    buf[0] = 0;
    int best = 99;
    const char *name = NULL;
    for (int i = 0; i < reg.num_ops; i++) {
        int d = edit_distance(op, reg.ops[i]->name);
        if (d < best) {
            best = d;
            name = reg.ops[i]->name;
        }
    }
    if (name && best <= 1 + (int)strlen(op) / 3)
        snprintf(buf, size, "; did you mean %s?", name);
    return buf;
}

const tide_kernel_def *tide__registry_kernel(const tide_op_def *op, const char *device_type,
                                             const tide_attrs *bound)
{
    for (const tide_kernel_def *k = op->kernels; k; k = k->next) {
        if (strcasecmp(k->device_type, device_type) != 0)
            continue;
        bool ok = true;
        for (int i = 0; i < k->num_constraints && ok; i++) {
            tide_dtype dt;
            ok = tide_attrs_get_type(bound, k->constraints[i].attr, &dt) &&
                 (k->constraints[i].allowed & (1u << dt));
        }
        if (ok)
            return k;
    }
    return NULL;
}

char *tide_registry_op_help(const char *name)
{
    const tide_op_def *op = tide__registry_find(name);
    if (!op)
        return NULL;
    char devices[64] = "";
    for (const tide_kernel_def *k = op->kernels; k; k = k->next)
        if (!k->wraps && !strstr(devices, k->device_type) && strlen(devices) + strlen(k->device_type) + 3 < sizeof devices) {
            strcat(devices, devices[0] ? ", " : "");
            strcat(devices, k->device_type);
        }
    char alias[96] = "";
    if (op->alias)
        snprintf(alias, sizeof alias, "- also called: `%s`\n", op->alias);
    return tide__asprintf("### %s\n\n`%s`\n\n%s%s%s%s- kernels: %s\n%s%s%s%s%s\n%s\n", op->name,
                          op->spec_text, op->attr_text[0] ? "- attrs: `" : "", op->attr_text,
                          op->attr_text[0] ? "`\n" : "", op->flags & TIDE_OP_STATEFUL ? "- stateful\n" : "",
                          devices[0] ? devices : "none",
                          op->flags & TIDE_OP_NOT_IN_TF
                              ? "- TensorFlow: no op of this name and signature (tide's own)\n"
                              : "- TensorFlow: the op of the same name\n",
                          op->tf_differences ? "- differs from TensorFlow: " : "",
                          op->tf_differences ? op->tf_differences : "", op->tf_differences ? "\n" : "",
                          alias, op->doc);
}

bool tide_registry_op_info(const char *name, tide_op_info *out)
{
    const tide_op_def *op = name ? tide__registry_find(name) : NULL;
    if (!op || !out)
        return false;
    memset(out, 0, sizeof *out);
    out->name = op->name;
    out->num_inputs = op->num_inputs;
    out->num_outputs = op->num_outputs;
    out->num_attrs = op->num_attrs;
    for (int i = 0; i < op->num_inputs + op->num_outputs; i++) {
        const tide_arg_def *a = i < op->num_inputs ? &op->inputs[i] : &op->outputs[i - op->num_inputs];
        tide_op_arg_info *o = i < op->num_inputs ? &out->inputs[i] : &out->outputs[i - op->num_inputs];
        *o = (tide_op_arg_info){a->name, a->fixed_dtype, a->type_attr, a->number_attr, a->is_ref};
    }
    for (int i = 0; i < op->num_attrs; i++) {
        const tide_attr_def *a = &op->attrs[i];
        bool inferred = false;
        for (int k = 0; k < op->num_inputs; k++)
            if ((op->inputs[k].type_attr && strcmp(op->inputs[k].type_attr, a->name) == 0) ||
                (op->inputs[k].number_attr && strcmp(op->inputs[k].number_attr, a->name) == 0))
                inferred = true;
        out->attrs[i] = (tide_op_attr_info){a->name, a->type, a->has_default, inferred};
    }
    out->stateful = op->flags & TIDE_OP_STATEFUL;
    out->signature = op->spec_text;
    out->doc = op->doc;
    out->in_tensorflow = !(op->flags & TIDE_OP_NOT_IN_TF);
    out->tf_differences = op->tf_differences;
    out->alias = op->alias;
    return true;
}
_Static_assert(TIDE_OP_MAX_ARGS <= 12 && TIDE_OP_MAX_ATTRS <= 12, "tide_op_info's arrays hold 12 entries");
