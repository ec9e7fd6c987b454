/* assets.c — the pages and static files of the web views, served from the table embedded at build
 * time (assets.h). Only names in that table are served, matched exactly, so no path ("..", "%2F",
 * "//") can reach the file system. Page URLs map to their HTML file: / -> index.html, /graph ->
 * graph.html, /timeline, /tensor, /compare, /debugger; /static/NAME is the asset NAME. */
#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "web_internal.h"

static const struct page {
    const char *path;
    const char *asset;
} pages[] = {
    {"/", "index.html"},          {"/index.html", "index.html"}, {"/graph", "graph.html"},
    {"/timeline", "timeline.html"}, {"/tensor", "tensor.html"},    {"/compare", "compare.html"}, {"/debugger", "debugger.html"},
};

static const web_asset *find_asset(const char *name)
{
    for (int i = 0; i < web_num_assets; i++)
        if (strcmp(web_assets[i].name, name) == 0)
            return &web_assets[i];
    return NULL;
}

bool web_asset_reply(const char *path, web_reply *out)
{
    const char *name = NULL;
    static const char prefix[] = "/static/";
    if (strncmp(path, prefix, sizeof prefix - 1) == 0)
        name = path + sizeof prefix - 1;
    for (size_t i = 0; !name && i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(path, pages[i].path) == 0)
            name = pages[i].asset;
    const web_asset *a = name ? find_asset(name) : NULL;
    if (!a)
        return false;
    free(out->body);
    out->body = NULL;
    out->status = MHD_HTTP_OK;
    out->content_type = a->content_type;
    out->static_body = a->data;
    out->len = a->size;
    out->cacheable = true;
    return true;
}
