/* tide_graphdef.h — TensorFlow GraphDefs in and out of tide graphs: the public API of the library
 * tide_graphdef (engine/graphdef/), which is built on the engine's public API only, so that the
 * engine itself does not link protobuf. docs/tensorflow.md is the user's guide.
 *
 * Formats: the binary protobuf encoding (`.pb`, read and written through protobuf-c) and the protobuf
 * text format (`.pbtxt`, through libprotobuf's TextFormat), both of the messages in
 * tensorflow_graph.proto (TensorFlow's names, field numbers and types).
 *
 * Importing is atomic, as every Extend: the GraphDef's nodes are all added or, on any error, none
 * (the graph is left exactly as it was). Unknown ops are named together in one error. Exported
 * graphs carry TensorFlow's attr conventions and a VersionDef, so TensorFlow 1.x, TensorBoard and
 * Netron read them; importing an exported graph gives back the same graph (the same graph text).
 *
 * Conventions of tide.h hold: a status and an optional tide_error last; arguments stay the caller's.
 */
#ifndef TIDE_GRAPHDEF_H
#define TIDE_GRAPHDEF_H

#include <stddef.h>

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tide_graphdef_format {
    TIDE_GRAPHDEF_AUTO = 0,   /* from the file's extension; reading an unknown one looks at the bytes */
    TIDE_GRAPHDEF_BINARY = 1, /* the protobuf wire format (.pb) */
    TIDE_GRAPHDEF_TEXT = 2,   /* the protobuf text format (.pbtxt) */
} tide_graphdef_format;

/* ".pbtxt", ".pbtext", ".prototxt", ".txt" -> TEXT; ".pb", ".graphdef" -> BINARY; else AUTO. */
tide_graphdef_format tide_graphdef_format_of_path(const char *path);
/* "binary", "pb" -> BINARY; "text", "pbtxt" -> TEXT; "auto" -> AUTO; -1 for anything else. */
int tide_graphdef_format_from_name(const char *name);

/* One entry of an input map (tf.import_graph_def's input_map): every use of the GraphDef's tensor
 * `name` ("node:1", or "node" for output 0) reads `value`, an output already in the graph, instead;
 * "^node" replaces the control input ^node by value.node. The mapped node itself is still imported
 * (a Placeholder stays, unused). Naming a node the GraphDef does not have is an error. */
typedef struct tide_graphdef_mapping {
    const char *name;
    tide_output value;
} tide_graphdef_mapping;

typedef struct tide_graphdef_import_options {
    tide_graphdef_format format;            /* AUTO */
    /* Prefix of every imported node's name ("scope/node"), also applied to colocation (`_class`).
     * NULL or "": none (the names are taken as they are, and must be free). The graph's current name
     * scope, if any is pushed, comes before it, as for every node built. */
    const char *scope;
    const tide_graphdef_mapping *input_map;
    int num_input_map;
    /* Drop the NodeDefs' device requests (tf.train.import_meta_graph's clear_devices): for a graph
     * written on a machine with devices this one lacks ("/device:GPU:0"). Colocation stays. */
    bool clear_devices;
} tide_graphdef_import_options;

void tide_graphdef_import_options_init(tide_graphdef_import_options *opts);

/* Adds the nodes of the GraphDef in data[0..size) to g (opts may be NULL). On failure g is unchanged
 * and err names the node, the op, the attr or the input involved (and, for a malformed encoding, the
 * line and column or the byte offset). source names the data in messages (a file name), may be NULL. */
tide_status tide_graphdef_import(tide_graph *g, const void *data, size_t size, const char *source,
                                 const tide_graphdef_import_options *opts, tide_error *err);
/* Reads path and imports it; the format comes from opts, else from the extension, else the bytes. */
tide_status tide_graphdef_import_file(tide_graph *g, const char *path,
                                      const tide_graphdef_import_options *opts, tide_error *err);

typedef struct tide_graphdef_export_options {
    tide_graphdef_format format;  /* AUTO: binary, or from the file's extension */
    /* Add `_output_shapes` (the shapes tide inferred, list(shape)) to every node, which TensorBoard
     * draws on the edges. Importing ignores the attr. Default true. */
    bool output_shapes;
} tide_graphdef_export_options;

void tide_graphdef_export_options_init(tide_graphdef_export_options *opts);

/* The GraphDef of every node of g, in creation order: *data (malloc'd, caller frees) and *size. For
 * TEXT the data is NUL-terminated (not counted in size). */
tide_status tide_graphdef_export(const tide_graph *g, const tide_graphdef_export_options *opts,
                                 void **data, size_t *size, tide_error *err);
/* Writes the GraphDef of g to path (atomically: a temporary file renamed over it). */
tide_status tide_graphdef_export_file(const tide_graph *g, const char *path,
                                      const tide_graphdef_export_options *opts, tide_error *err);

/* The GraphDef version (VersionDef.producer) that tide writes: a TensorFlow 1.x version, whose op
 * semantics tide follows. Reading does not check versions. */
#define TIDE_GRAPHDEF_PRODUCER 27

#ifdef __cplusplus
}
#endif
#endif
