/* graphdef_internal.h — what the files of the GraphDef library (engine/graphdef/) share:
 *   tide_graphdef.h  the public API
 *   pbtext.cc        the protobuf text format, through libprotobuf's TextFormat (C++ behind a C API)
 *   wire.c           reading and writing the encodings: format detection, a checked walk of the
 *                    binary wire format (depth, truncation) before protobuf-c unpacks it, files
 *   convert.c        dtypes, shapes, tensors and attr values between TensorFlow's messages and tide
 *   import.c         GraphDef -> tide graph (names, inputs, input maps, ops, atomicity)
 *   export.c         tide graph -> GraphDef
 */
#ifndef TIDE_GRAPHDEF_INTERNAL_H
#define TIDE_GRAPHDEF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tensorflow_graph.pb-c.h"
#include "tide_graphdef.h"

#define GRAPHDEF_UNUSED(x) ((void)(x))

/* ---------------------------------------------------------------- pbtext.cc */

/* The protobuf text of a tensorflow.GraphDef -> its binary encoding. On success *out (malloc'd) and
 * *out_len; on failure false and *message (malloc'd): "line L, column C: what". */
bool graphdef_text_to_binary(const char *text, size_t len, uint8_t **out, size_t *out_len,
                             char **message);
/* The binary encoding of a tensorflow.GraphDef -> protobuf text (malloc'd, NUL-terminated). */
bool graphdef_binary_to_text(const uint8_t *data, size_t len, char **out, size_t *out_len,
                             char **message);

/* ---------------------------------------------------------------- wire.c */

/* Parses data in the given format (AUTO: looks at the bytes) into a GraphDef (free it with
 * tensorflow__graph_def__free_unpacked(gd, NULL)). NULL with err set: what is wrong and where. */
Tensorflow__GraphDef *graphdef_parse(const void *data, size_t size, tide_graphdef_format format,
                                     const char *source, tide_error *err);
/* Encodes gd in format (BINARY or TEXT): *data malloc'd (TEXT: NUL-terminated, not counted). */
tide_status graphdef_serialize(const Tensorflow__GraphDef *gd, tide_graphdef_format format, void **data,
                               size_t *size, tide_error *err);
/* Reads a whole file (malloc'd, NUL-terminated, not counted in *size). */
tide_status graphdef_read_file(const char *path, void **data, size_t *size, tide_error *err);
/* Writes data to path through a temporary file renamed over it. */
tide_status graphdef_write_file(const char *path, const void *data, size_t size, tide_error *err);

/* ---------------------------------------------------------------- convert.c */

/* TensorFlow's DataType <-> tide's dtype. A reference type (DT_FLOAT_REF) maps to its value type.
 * TIDE_INVALID_DTYPE for a type tide lacks (quantized, resource, variant, uint32, uint64). */
tide_dtype graphdef_dtype_to_tide(int tf_type);
int graphdef_dtype_from_tide(tide_dtype dt);
/* "DT_FLOAT", "DT_QINT8", ... or "DataType 77". buf holds at least 32 bytes. */
const char *graphdef_dtype_name(int tf_type, char *buf, size_t size);

/* Messages built for export are allocated from a pool and freed together (protobuf-c's own free
 * is for what it unpacked). Every allocation is zeroed; after a failed one pool->oom is set and NULL
 * returned, and the pool stays usable (and freeable). */
typedef struct graphdef_pool {
    void **blocks;
    size_t count, cap;
    bool oom;
} graphdef_pool;

void *graphdef_pool_alloc(graphdef_pool *pool, size_t size);
char *graphdef_pool_strdup(graphdef_pool *pool, const char *s);
void graphdef_pool_free(graphdef_pool *pool);

/* A shape: false with err set when it has more than TIDE_MAX_RANK dims or a size below -1. */
bool graphdef_shape_to_tide(const Tensorflow__TensorShapeProto *p, tide_shape *out, tide_error *err);
Tensorflow__TensorShapeProto *graphdef_shape_from_tide(graphdef_pool *pool, const tide_shape *s);

/* A TensorProto -> a new tide tensor (tensor_content or the repeated value field of the dtype, a
 * short field repeating its last value as TensorFlow does). NULL with err set. */
tide_tensor *graphdef_tensor_to_tide(const Tensorflow__TensorProto *p, tide_error *err);
/* A TensorProto of t: scalars and strings in the value fields, other tensors in tensor_content, as
 * TensorFlow writes them. NULL when out of memory. */
Tensorflow__TensorProto *graphdef_tensor_from_tide(graphdef_pool *pool, const tide_tensor *t);

/* The double closest to the shortest decimal text of f ("0.1" for 0.1f): AttrValue.f holds floats,
 * tide's float attrs are doubles, and this keeps 0.1 read from a GraphDef equal to 0.1 typed in. */
double graphdef_float_to_double(float f);

/* Sets attr `name` of attrs from v. want is the attr's type in the op (TIDE_ATTR_NONE for an
 * annotation or an attr the op lacks: then the kind of v decides). False with err set ("attr 'x'
 * must be a bool, the GraphDef has an int"); the caller names the node. */
bool graphdef_attr_to_tide(const Tensorflow__AttrValue *v, tide_attr_type want, const char *name,
                           tide_attrs *attrs, tide_error *err);
/* An AttrValue of attr `name` of attrs; NULL when out of memory or the attr is absent. */
Tensorflow__AttrValue *graphdef_attr_from_tide(graphdef_pool *pool, const tide_attrs *attrs,
                                               const char *name);

#endif
