/* highlight.c — the outline of a searched node or scope on a drawing already made: the item that draws
 * the name (the node, the collapsed scope, series or group box that holds it, or an open scope's
 * cluster) is found in the plan and a <style> rule naming its id is put at the top of the SVG. No new
 * layout is made, so the web server keeps one cached drawing for every highlight of a view (a layout of
 * a large graph takes seconds; a plan tens of milliseconds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_plan.h"

/* The SVG id of what outlines the plan's highlight ("node:x", "cluster:layer1"), malloc'd; NULL with
 * *none set when there is nothing to outline. */
static char *highlight_id(const vz_plan *p, bool *none)
{
    *none = false;
    if (p->highlight_item >= 0)
        return vz_item_id(p, &p->items[p->highlight_item], false);
    if (p->highlight_cluster >= 0) {
        char *id = NULL;
        return asprintf(&id, "cluster:%s", p->scopes[p->highlight_cluster].name) < 0 ? NULL : id;
    }
    *none = true;
    return NULL;
}

/* id as the text of a CSS string inside an XML element: CSS escapes for '\\' '"' and line breaks,
 * then XML's for '&' '<' '>'. Malloc'd. */
static char *css_string(const char *id)
{
    size_t n = strlen(id);
    char *out = malloc(n * 8 + 1), *q = out;
    if (!out)
        return NULL;
    for (const char *c = id; *c; c++) {
        if (*c == '\\' || *c == '"')
            q += sprintf(q, "\\%c", *c);
        else if (*c == '\n' || *c == '\r')
            q += sprintf(q, "\\%x ", (unsigned)*c);
        else if (*c == '&')
            q += sprintf(q, "&amp;");
        else if (*c == '<')
            q += sprintf(q, "&lt;");
        else if (*c == '>')
            q += sprintf(q, "&gt;");
        else
            *q++ = *c;
    }
    *q = '\0';
    return out;
}

char *vz_svg_highlight(const vz_plan *p, const char *svg, size_t len, size_t *out_len, tide_error *err)
{
    bool none;
    char *id = highlight_id(p, &none), *sel = id ? css_string(id) : NULL, *style = NULL, *out = NULL;
    const char *tag = strstr(svg, "<svg"), *end = tag ? strchr(tag, '>') : NULL;
    if (none || !end) { /* nothing to outline (or not an SVG of ours): the drawing as it is */
        free(id);
        out = malloc(len + 1);
        if (out) {
            memcpy(out, svg, len + 1);
            *out_len = len;
        }
        return out ? out : (tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory"), NULL);
    }
    int n = sel ? asprintf(&style, "\n<style>g[id=\"%s\"] > ellipse, g[id=\"%s\"] > polygon, g[id=\"%s\"] > path "
                                   "{ stroke: #ff0000; stroke-width: 3px; }</style>",
                           sel, sel, sel)
                : -1;
    size_t head = (size_t)(end + 1 - svg);
    if (n >= 0 && (out = malloc(len + (size_t)n + 1)) != NULL) {
        memcpy(out, svg, head);
        memcpy(out + head, style, (size_t)n);
        memcpy(out + head + n, svg + head, len - head + 1);
        *out_len = len + (size_t)n;
    } else {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory outlining '%s'", id);
    }
    free(id);
    free(sel);
    free(style);
    return out;
}

char *tide_viz_graph_highlight(const char *db_path, const tide_viz_graph_options *o, const char *svg, size_t len,
                               size_t *out_len, tide_error *err)
{
    vz_model m;
    vz_plan p;
    char *out = NULL;
    size_t n = 0;
    memset(&p, 0, sizeof p);
    if (!svg) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "graph highlight: no drawing given");
        return NULL;
    }
    if (vz_model_load(&m, db_path, o, err) == TIDE_OK && vz_plan_build(&p, &m, o, err) == TIDE_OK)
        out = vz_svg_highlight(&p, svg, len, &n, err);
    if (out && out_len)
        *out_len = n;
    vz_plan_free(&p);
    vz_model_free(&m);
    return out;
}
