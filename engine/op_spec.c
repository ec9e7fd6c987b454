/* op_spec.c — parses an op's spec strings ("x: T", "N: int >= 1", "T: {float32, int32}", ...) into
 * its definition. The grammar is documented in tide_op.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BIT(dt) (1u << (dt))
static const uint32_t REAL_TYPES = BIT(TIDE_INT8) | BIT(TIDE_INT16) | BIT(TIDE_INT32) |
                                   BIT(TIDE_INT64) | BIT(TIDE_UINT8) | BIT(TIDE_UINT16) |
                                   BIT(TIDE_FLOAT16) | BIT(TIDE_BFLOAT16) | BIT(TIDE_FLOAT32) |
                                   BIT(TIDE_FLOAT64);
static const uint32_t FLOAT_TYPES = BIT(TIDE_FLOAT16) | BIT(TIDE_BFLOAT16) | BIT(TIDE_FLOAT32) |
                                    BIT(TIDE_FLOAT64);
static const uint32_t INT_TYPES = BIT(TIDE_INT8) | BIT(TIDE_INT16) | BIT(TIDE_INT32) |
                                  BIT(TIDE_INT64) | BIT(TIDE_UINT8) | BIT(TIDE_UINT16);
static const uint32_t COMPLEX_TYPES = BIT(TIDE_COMPLEX64) | BIT(TIDE_COMPLEX128);

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

uint32_t tide__dtype_set_parse(const char *text)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *s = trim(buf);
    if (strcmp(s, "numbertype") == 0)
        return REAL_TYPES | COMPLEX_TYPES;
    if (strcmp(s, "realnumbertype") == 0)
        return REAL_TYPES;
    if (strcmp(s, "floattype") == 0)
        return FLOAT_TYPES;
    if (strcmp(s, "integertype") == 0)
        return INT_TYPES;
    if (strcmp(s, "alltypes") == 0)
        return (1u << TIDE_NUM_DTYPES) - 2;
    size_t n = strlen(s);
    if (n < 2 || s[0] != '{' || s[n - 1] != '}')
        return 0;
    s[n - 1] = 0;
    uint32_t set = 0;
    for (char *save = NULL, *tok = strtok_r(s + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tide_dtype dt = tide_dtype_from_name(trim(tok));
        if (dt == TIDE_INVALID_DTYPE)
            return 0;
        set |= BIT(dt);
    }
    return set;
}

static tide_status parse_arg(const char *op, const char *text, tide_arg_def *arg, tide_error *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *colon = strchr(buf, ':');
    if (!colon)
        return tide_error_set(err, TIDE_INTERNAL, "op %s: arg spec '%s' lacks ':'", op, text);
    *colon = 0;
    char *name = trim(buf), *type = trim(colon + 1);
    memset(arg, 0, sizeof *arg);
    arg->name = tide__strdup(name);
    char *star = strchr(type, '*');
    if (star) {
        *star = 0;
        arg->number_attr = tide__strdup(trim(type));
        type = trim(star + 1);
    }
    if (strncmp(type, "Ref(", 4) == 0 && type[strlen(type) - 1] == ')') {
        arg->is_ref = true;
        type[strlen(type) - 1] = 0;
        type = trim(type + 4);
    }
    tide_dtype dt = tide_dtype_from_name(type);
    if (dt != TIDE_INVALID_DTYPE)
        arg->fixed_dtype = dt;
    else if (isalpha((unsigned char)type[0]))
        arg->type_attr = tide__strdup(type);
    else
        return tide_error_set(err, TIDE_INTERNAL, "op %s: bad type in arg spec '%s'", op, text);
    return TIDE_OK;
}

static bool parse_int(const char *s, int64_t *v)
{
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end == s || *trim(end))
        return false;
    *v = x;
    return true;
}

/* Parses a default value literal for an attr of type t. */
static bool parse_default(tide_attr_type t, char *s, tide_attr_value *v)
{
    memset(v, 0, sizeof *v);
    v->type = t;
    switch (t) {
    case TIDE_ATTR_INT: return parse_int(s, &v->u.i);
    case TIDE_ATTR_FLOAT: {
        char *end;
        v->u.f = strtod(s, &end);
        return end != s && !*trim(end);
    }
    case TIDE_ATTR_BOOL:
        if (strcmp(s, "true") && strcmp(s, "false"))
            return false;
        v->u.b = strcmp(s, "true") == 0;
        return true;
    case TIDE_ATTR_STRING: {
        size_t n = strlen(s);
        if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
            return false;
        v->u.s = strndup(s + 1, n - 2);
        return v->u.s != NULL;
    }
    case TIDE_ATTR_TYPE:
        v->u.t = tide_dtype_from_name(s);
        return v->u.t != TIDE_INVALID_DTYPE;
    case TIDE_ATTR_SHAPE:
    case TIDE_ATTR_INT_LIST:
    case TIDE_ATTR_FLOAT_LIST: {
        if (t == TIDE_ATTR_SHAPE && strcmp(s, "*") == 0) { /* unknown rank */
            v->u.shape = tide_shape_unknown();
            return true;
        }
        size_t n = strlen(s);
        if (n < 2 || s[0] != '[' || s[n - 1] != ']')
            return false;
        s[n - 1] = 0;
        int64_t ints[64];
        double floats[64];
        int count = 0;
        for (char *save = NULL, *tok = strtok_r(s + 1, ",", &save); tok && count < 64;
             tok = strtok_r(NULL, ",", &save), count++) {
            tok = trim(tok);
            if (t == TIDE_ATTR_FLOAT_LIST)
                floats[count] = strtod(tok, NULL);
            else if (strcmp(tok, "?") == 0)
                ints[count] = -1;
            else if (!parse_int(tok, &ints[count]))
                return false;
        }
        if (t == TIDE_ATTR_SHAPE) {
            if (count > TIDE_MAX_RANK)
                return false;
            v->u.shape = tide_shape_make(count, ints);
        } else {
            size_t sz = t == TIDE_ATTR_INT_LIST ? sizeof(int64_t) : sizeof(double);
            v->u.list.items = malloc(count ? sz * (size_t)count : 1);
            if (!v->u.list.items)
                return false;
            memcpy(v->u.list.items, t == TIDE_ATTR_INT_LIST ? (void *)ints : (void *)floats,
                   sz * (size_t)count);
            v->u.list.n = count;
        }
        return true;
    }
    case TIDE_ATTR_STRING_LIST:
    case TIDE_ATTR_BOOL_LIST:
    case TIDE_ATTR_SHAPE_LIST:
    case TIDE_ATTR_TENSOR_LIST: /* only the empty list as a default */
        if (strcmp(trim(s), "[]") != 0)
            return false;
        v->u.list.items = malloc(1);
        v->u.list.n = 0;
        return v->u.list.items != NULL;
    default: return false;
    }
}

static tide_status parse_attr(const char *op, const char *text, tide_attr_def *a, tide_error *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    memset(a, 0, sizeof *a);
    char *colon = strchr(buf, ':');
    if (!colon)
        return tide_error_set(err, TIDE_INTERNAL, "op %s: attr spec '%s' lacks ':'", op, text);
    *colon = 0;
    a->name = tide__strdup(trim(buf));
    char *type = colon + 1, *deflt = NULL;
    char *eq = type;
    while ((eq = strchr(eq, '=')) && eq > type && eq[-1] == '>') /* skip the '=' of ">=" */
        eq++;
    if (eq) {
        *eq = 0;
        deflt = trim(eq + 1);
    }
    char *ge = strstr(type, ">=");
    if (ge) {
        *ge = 0;
        if (!parse_int(trim(ge + 2), &a->min))
            return tide_error_set(err, TIDE_INTERNAL, "op %s: bad minimum in '%s'", op, text);
        a->has_min = true;
    }
    type = trim(type);
    static const struct {
        const char *name;
        tide_attr_type type;
    } kinds[] = {{"int", TIDE_ATTR_INT},         {"float", TIDE_ATTR_FLOAT},
                 {"bool", TIDE_ATTR_BOOL},       {"string", TIDE_ATTR_STRING},
                 {"type", TIDE_ATTR_TYPE},       {"shape", TIDE_ATTR_SHAPE},
                 {"tensor", TIDE_ATTR_TENSOR},   {"list(int)", TIDE_ATTR_INT_LIST},
                 {"list(float)", TIDE_ATTR_FLOAT_LIST}, {"list(type)", TIDE_ATTR_TYPE_LIST},
                 {"list(string)", TIDE_ATTR_STRING_LIST}, {"list(bool)", TIDE_ATTR_BOOL_LIST},
                 {"list(shape)", TIDE_ATTR_SHAPE_LIST}, {"list(tensor)", TIDE_ATTR_TENSOR_LIST}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(type, kinds[i].name) == 0)
            a->type = kinds[i].type;
    if (a->type == TIDE_ATTR_NONE) {
        a->allowed_dtypes = tide__dtype_set_parse(type);
        if (!a->allowed_dtypes)
            return tide_error_set(err, TIDE_INTERNAL, "op %s: unknown attr type in '%s'", op, text);
        a->type = TIDE_ATTR_TYPE;
    }
    if (deflt) {
        if (!parse_default(a->type, deflt, &a->default_value))
            return tide_error_set(err, TIDE_INTERNAL, "op %s: bad default in '%s'", op, text);
        a->has_default = true;
    }
    return TIDE_OK;
}

const tide_attr_def *tide__op_attr_def(const tide_op_def *def, const char *name)
{
    for (int i = 0; i < def->num_attrs; i++)
        if (strcmp(def->attrs[i].name, name) == 0)
            return &def->attrs[i];
    return NULL;
}

static tide_status check_arg_attrs(const tide_op_def *def, tide_arg_def *arg, tide_error *err)
{
    if (arg->type_attr) {
        const tide_attr_def *a = tide__op_attr_def(def, arg->type_attr);
        if (a && a->type == TIDE_ATTR_TYPE_LIST && !arg->number_attr && !arg->is_ref) {
            /* a type list: a list whose length the attr gives too (bindings see it as a list) */
            arg->type_list = true;
            arg->number_attr = tide__strdup(arg->type_attr);
            return arg->number_attr ? TIDE_OK : tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        }
        if (!a || a->type != TIDE_ATTR_TYPE)
            return tide_error_set(err, TIDE_INTERNAL, "op %s: arg %s uses undeclared type attr %s",
                                  def->name, arg->name, arg->type_attr);
    }
    if (arg->number_attr) {
        const tide_attr_def *a = tide__op_attr_def(def, arg->number_attr);
        if (!a || a->type != TIDE_ATTR_INT)
            return tide_error_set(err, TIDE_INTERNAL, "op %s: arg %s uses undeclared int attr %s",
                                  def->name, arg->name, arg->number_attr);
    }
    return TIDE_OK;
}

/* Keeps the spec text for help: "Op(in: T, ...) -> out: T" and "attr: type = default; ...". */
static tide_status describe(const tide_op_spec *spec, tide_op_def *def, tide_error *err)
{
    size_t len = strlen(spec->name) + 16;
    for (int i = 0; i < TIDE_OP_MAX_ARGS; i++)
        len += (spec->inputs[i] ? strlen(spec->inputs[i]) + 2 : 0) + (spec->outputs[i] ? strlen(spec->outputs[i]) + 2 : 0);
    size_t alen = 1;
    for (int i = 0; i < TIDE_OP_MAX_ATTRS; i++)
        alen += spec->attrs[i] ? strlen(spec->attrs[i]) + 2 : 0;
    def->spec_text = calloc(1, len);
    def->attr_text = calloc(1, alen);
    if (!def->spec_text || !def->attr_text)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    strcat(def->spec_text, spec->name);
    strcat(def->spec_text, "(");
    for (int i = 0; i < def->num_inputs; i++) {
        strcat(def->spec_text, i ? ", " : "");
        strcat(def->spec_text, spec->inputs[i]);
    }
    strcat(def->spec_text, ")");
    for (int i = 0; i < def->num_outputs; i++) {
        strcat(def->spec_text, i ? ", " : " -> ");
        strcat(def->spec_text, spec->outputs[i]);
    }
    for (int i = 0; i < def->num_attrs; i++) {
        strcat(def->attr_text, i ? "; " : "");
        strcat(def->attr_text, spec->attrs[i]);
    }
    return TIDE_OK;
}

tide_status tide__op_def_parse(const tide_op_spec *spec, tide_op_def *def, tide_error *err)
{
    memset(def, 0, sizeof *def);
    /* CamelCase; a leading '_' marks an internal op (_Send, _Recv) that plans make, not users */
    const char *camel = spec->name && spec->name[0] == '_' ? spec->name + 1 : spec->name;
    if (!camel || !isupper((unsigned char)camel[0]))
        return tide_error_set(err, TIDE_INTERNAL, "op name '%s' must be CamelCase",
                              spec->name ? spec->name : "(null)");
    def->name = tide__strdup(spec->name);
    def->flags = spec->flags;
    def->shape_fn = spec->shape_fn;
    def->doc = tide__strdup(spec->doc ? spec->doc : "");
    def->tf_differences = spec->tf_differences ? tide__strdup(spec->tf_differences) : NULL;
    def->alias = spec->alias ? tide__strdup(spec->alias) : NULL;
    tide_status st = TIDE_OK;
    for (int i = 0; i < TIDE_OP_MAX_ATTRS && spec->attrs[i] && st == TIDE_OK; i++, def->num_attrs++)
        st = parse_attr(def->name, spec->attrs[i], &def->attrs[i], err);
    for (int i = 0; i < TIDE_OP_MAX_ARGS && spec->inputs[i] && st == TIDE_OK; i++, def->num_inputs++)
        st = parse_arg(def->name, spec->inputs[i], &def->inputs[i], err);
    for (int i = 0; i < TIDE_OP_MAX_ARGS && spec->outputs[i] && st == TIDE_OK; i++, def->num_outputs++)
        st = parse_arg(def->name, spec->outputs[i], &def->outputs[i], err);
    for (int i = 0; i < def->num_inputs && st == TIDE_OK; i++)
        st = check_arg_attrs(def, &def->inputs[i], err);
    if (st == TIDE_OK)
        st = describe(spec, def, err);
    for (int i = 0; i < def->num_outputs && st == TIDE_OK; i++) {
        st = check_arg_attrs(def, &def->outputs[i], err);
        if (st == TIDE_OK && def->outputs[i].is_ref)
            st = tide_error_set(err, TIDE_INTERNAL, "op %s: outputs cannot be Ref", def->name);
    }
    return st;
}

static void clear_arg(tide_arg_def *a)
{
    free(a->name);
    free(a->type_attr);
    free(a->number_attr);
}

void tide__op_def_clear(tide_op_def *def)
{
    free(def->name);
    free(def->doc);
    free(def->tf_differences);
    free(def->alias);
    free(def->spec_text);
    free(def->attr_text);
    for (int i = 0; i < def->num_inputs; i++)
        clear_arg(&def->inputs[i]);
    for (int i = 0; i < def->num_outputs; i++)
        clear_arg(&def->outputs[i]);
    for (int i = 0; i < def->num_attrs; i++) {
        free(def->attrs[i].name);
        tide__attr_value_clear(&def->attrs[i].default_value);
    }
    memset(def, 0, sizeof *def);
}
