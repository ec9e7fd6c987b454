/* assets.h — the embedded pages: the table that web/embed_assets.py generates from the files of web/assets/ at build
 * time (name, content type, bytes), read by assets.c. */
#ifndef TIDE_WEB_ASSETS_H
#define TIDE_WEB_ASSETS_H

#include <stddef.h>

typedef struct web_asset {
    const char *name;         /* "graph.js" */
    const char *content_type; /* "text/javascript; charset=utf-8" */
    const unsigned char *data;
    size_t size;
} web_asset;

extern const web_asset web_assets[];
extern const int web_num_assets;

#endif
