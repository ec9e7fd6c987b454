/* api_graph.c — the endpoints about graphs and traced runs: /api/graphs, /api/graph, /api/graph.svg,
 * /api/graph/legend, /api/node, /api/timeline and /api/trace.json (docs/web.md).
 *
 * /api/devices (the device colours the pages share) is here too.
 *
 * The drawings and the timeline come from viz/viz.h (Graphviz layouts are serialised there; SVGs are
 * cached here until the log changes, without their highlight, which is outlined on the cached drawing
 * with no new layout); this file turns query parameters into viz options, answers a bad one
 * with 400 naming it, and a viz error with its status (TIDE_NOT_FOUND -> 404). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz.h"
#include "web_internal.h"

#define MAX_EXPANDED 256       /* scopes in expand= */
#define MAX_TIMELINE_RUNS 8    /* runs in runs= */
#define MAX_ITEMS_LIMIT 5000   /* the largest cap max_items= may ask for */

/* The session of graph endpoints: absent or 0 is the latest session that logged a graph (as viz.h). */
static bool graph_session(web_request *rq, web_reply *out, int64_t *session)
{
    return web_arg_session_or_latest(rq, out, TIDE_STORE_Q_LATEST_GRAPH_SESSION, session);
}

void web_api_graphs(web_request *rq, web_reply *out)
{
    int64_t session;
    if (!graph_session(rq, out, &session))
        return;
    char b[24];
    const char *p[] = {web_itoa(b, session)};
    web_query_reply(rq, out, TIDE_STORE_Q_GRAPHS_JSON, p, 1, "no graphs");
}

/* The options of the graph endpoints from the query string. expanded (MAX_EXPANDED entries) and
 * names (the copy they point into) belong to the caller; free(*names) afterwards. */
static bool graph_options(web_request *rq, web_reply *out, tide_viz_graph_options *o, const char **expanded,
                          char **names)
{
    static const char *const colors[] = {"device", "time", NULL};
    const char *color, *expand;
    int64_t version, run, aux, max_items;
    tide_viz_graph_options_init(o);
    *names = NULL;
    if (!web_arg_int(rq, out, "session", 0, 0, INT64_MAX, &o->session) ||
        !web_arg_int(rq, out, "version", 0, 0, INT64_MAX, &version) ||
        !web_arg_run(rq, out, "run", false, &run) || !web_arg_choice(rq, out, "color", colors, &color) ||
        !web_arg_int(rq, out, "aux_degree", 0, 0, 1000000, &aux) ||
        !web_arg_int(rq, out, "max_items", 0, 0, MAX_ITEMS_LIMIT, &max_items))
        return false;
    const char *all = web_arg(rq, "expand_all");
    if (all && strcmp(all, "0") != 0 && strcmp(all, "1") != 0) {
        web_reply_error(out, MHD_HTTP_BAD_REQUEST, "parameter 'expand_all' must be 0 or 1, not '%.40s'", all);
        return false;
    }
    o->version = version;
    o->run = run;
    o->aux_degree = (int)aux;
    o->max_items = (int)max_items;
    o->expand_all = all && strcmp(all, "1") == 0;
    o->color = color && strcmp(color, "time") == 0 ? TIDE_VIZ_COLOR_TIME : TIDE_VIZ_COLOR_DEVICE;
    o->highlight = web_arg(rq, "highlight");
    if ((expand = web_arg(rq, "expand")) != NULL) {
        if (!(*names = strdup(expand))) {
            web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
            return false;
        }
        for (char *save = NULL, *s = strtok_r(*names, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            if (o->num_expanded == MAX_EXPANDED) {
                web_reply_error(out, MHD_HTTP_BAD_REQUEST, "parameter 'expand' lists more than %d scopes",
                                MAX_EXPANDED);
                return false;
            }
            expanded[o->num_expanded++] = s;
        }
        o->expanded = expanded;
    }
    return true;
}

/* The cache key of a drawing: the endpoint, its options but the highlight (outlined on the cached
 * drawing, without a new layout), and the state of the log that it depends on (the latest graph,
 * timing and run rows: a drawing of "the latest" changes with them). NULL when the state cannot be
 * read (no caching then). */
static char *cache_key(web_request *rq, const char *endpoint, const tide_viz_graph_options *o)
{
    char *state = NULL;
    web_reply scratch = {0};
    if (!web_query_value(rq, &scratch, TIDE_STORE_Q_LOG_STATE, NULL, 0, &state) || !state) {
        free(scratch.body);
        return NULL;
    }
    const char *expand = web_arg(rq, "expand");
    size_t size = strlen(state) + 200 + (expand ? strlen(expand) : 0);
    char *key = malloc(size);
    if (key)
        snprintf(key, size, "%s\x1f%s\x1f%" PRId64 "\x1f%" PRId64 "\x1f%" PRId64 "\x1f%d\x1f%d\x1f%d\x1f%d\x1f%s", endpoint,
                 state, o->session, o->version, o->run, (int)o->color, o->expand_all, o->aux_degree, o->max_items,
                 expand ? expand : "");
    free(state);
    return key;
}

/* The drawing of o without its highlight, from the cache or drawn (and cached). */
static char *plain_drawing(web_request *rq, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    tide_viz_graph_options plain = *o;
    plain.highlight = NULL;
    char *key = cache_key(rq, "graph.svg", &plain);
    char *svg = key ? web_cache_get(rq->w, key, len) : NULL;
    if (!svg && (svg = tide_viz_graph_svg(rq->db, &plain, len, err)) != NULL && key)
        web_cache_put(rq->w, key, svg, *len);
    free(key);
    return svg;
}

/* The drawing with the highlight outlined: a plan, no new layout. */
static char *draw_svg(web_request *rq, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    char *svg = plain_drawing(rq, o, len, err);
    if (!svg || !o->highlight || !o->highlight[0])
        return svg;
    char *marked = tide_viz_graph_highlight(rq->db, o, svg, *len, len, err);
    free(svg);
    return marked;
}

typedef char *(*graph_drawer)(web_request *rq, const tide_viz_graph_options *o, size_t *len, tide_error *err);

static char *draw_json(web_request *rq, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    return tide_viz_graph_json(rq->db, o, len, err);
}

static char *draw_legend(web_request *rq, const tide_viz_graph_options *o, size_t *len, tide_error *err)
{
    return tide_viz_graph_legend_json(rq->db, o, len, err);
}

/* Replies with text of type (taken over) or, when NULL, with err (out of memory when err is NULL). */
static void reply_viz(web_request *rq, web_reply *out, const char *type, char *text, size_t len, tide_error *err)
{
    if (text)
        web_reply_take(out, type, text, len);
    else if (err)
        web_reply_tide_error(rq, out, err);
    else
        web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
}

static void graph_reply(web_request *rq, web_reply *out, graph_drawer draw, const char *type)
{
    tide_viz_graph_options o;
    const char *expanded[MAX_EXPANDED];
    char *names = NULL;
    if (graph_options(rq, out, &o, expanded, &names)) {
        tide_error *err = tide_error_new();
        size_t len = 0;
        char *text = err ? draw(rq, &o, &len, err) : NULL; /* before len is read */
        reply_viz(rq, out, type, text, len, err);
        tide_error_free(err);
    }
    free(names);
}

void web_api_graph(web_request *rq, web_reply *out) { graph_reply(rq, out, draw_json, WEB_JSON_TYPE); }

void web_api_graph_svg(web_request *rq, web_reply *out)
{
    graph_reply(rq, out, draw_svg, "image/svg+xml; charset=utf-8");
}

void web_api_graph_legend(web_request *rq, web_reply *out) { graph_reply(rq, out, draw_legend, WEB_JSON_TYPE); }

/* The device colours of a session (or of all): the palette the graph and the timeline use. */
void web_api_devices(web_request *rq, web_reply *out)
{
    int64_t session;
    if (!web_arg_int(rq, out, "session", 0, 0, INT64_MAX, &session))
        return;
    tide_error *err = tide_error_new();
    size_t len = 0;
    char *text = err ? tide_viz_devices_json(rq->db, session, &len, err) : NULL;
    reply_viz(rq, out, WEB_JSON_TYPE, text, len, err);
    tide_error_free(err);
}

void web_api_node(web_request *rq, web_reply *out)
{
    const char *name;
    int64_t session, version, run;
    if (!web_arg_required(rq, out, "name", &name) || !graph_session(rq, out, &session) ||
        !web_arg_int(rq, out, "version", 0, 0, INT64_MAX, &version) || !web_arg_run(rq, out, "run", false, &run))
        return;
    char b[3][24];
    const char *p[] = {name, web_itoa(b[0], run), web_itoa(b[1], session), web_itoa(b[2], version)};
    char *text = NULL;
    if (!web_query_value(rq, out, TIDE_STORE_Q_NODE_JSON, p, 4, &text))
        return;
    if (!text) {
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "no node '%.100s' in graph version %" PRId64 " of session %" PRId64,
                        name, version, session);
        return;
    }
    /* The latest statistics of its output 0 (null when never logged), as member "tensor". */
    tide_error *err = tide_error_new();
    tide_store_tensor *t = err ? tide_store_query_tensor(rq->db, name, 0, session, -1, err) : NULL;
    tide_json j;
    tide_json_init(&j);
    if (t)
        web_tensor_json(&j, t);
    else
        tide_json_null(&j);
    tide_store_tensor_free(t);
    tide_error_free(err);
    size_t tlen = 0, nlen = strlen(text); /* text is SQLite's json_object: it ends with '}' */
    char *tensor = tide_json_take(&j, &tlen);
    char *doc = tensor ? malloc(nlen + tlen + 16) : NULL;
    size_t len = 0;
    if (doc)
        len = (size_t)sprintf(doc, "%.*s,\"tensor\":%s}", (int)(nlen - 1), text, tensor);
    free(tensor);
    free(text);
    web_reply_json(out, doc, len);
}

void web_api_timeline(web_request *rq, web_reply *out)
{
    int64_t runs[MAX_TIMELINE_RUNS];
    int n = 0;
    if (!web_arg_int_list(rq, out, "runs", MAX_TIMELINE_RUNS, runs, &n))
        return;
    if (n == 0) {
        int64_t run;
        if (!web_arg(rq, "run")) {
            web_reply_error(out, MHD_HTTP_BAD_REQUEST, "parameter 'run' (or 'runs') is required");
            return;
        }
        if (!web_arg_int(rq, out, "run", 0, 1, INT64_MAX, &run))
            return;
        runs[n++] = run;
    }
    tide_error *err = tide_error_new();
    size_t len = 0;
    char *text = err ? tide_viz_timeline_json(rq->db, runs, n, &len, err) : NULL;
    reply_viz(rq, out, WEB_JSON_TYPE, text, len, err);
    tide_error_free(err);
}

void web_api_trace(web_request *rq, web_reply *out)
{
    const char *s;
    int64_t run;
    if (!web_arg_required(rq, out, "run", &s) || !web_arg_int(rq, out, "run", 0, 1, INT64_MAX, &run))
        return;
    tide_error *err = tide_error_new();
    size_t len = 0;
    char *text = err ? tide_viz_chrome_trace(rq->db, run, &len, err) : NULL;
    if (text) {
        web_reply_json(out, text, len);
        snprintf(out->disposition, sizeof out->disposition, "attachment; filename=\"tide-run-%" PRId64 ".trace.json\"",
                 run);
    } else if (err)
        web_reply_tide_error(rq, out, err);
    else
        web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    tide_error_free(err);
}
