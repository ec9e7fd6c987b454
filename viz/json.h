/* json.h — a small JSON text builder shared by viz/ and web/: values are appended to a growing
 * buffer, commas are placed automatically, and every string is escaped (quotes, backslashes,
 * control characters, and '<', '>', '&', U+2028, U+2029 as \uXXXX so the text is also safe inside
 * HTML; invalid UTF-8 becomes U+FFFD), so any name from a run log can be written as is.
 *
 * Usage:
 *     tide_json j;
 *     tide_json_init(&j);
 *     tide_json_begin_object(&j);
 *     tide_json_key(&j, "name");   tide_json_string(&j, node_name);
 *     tide_json_key(&j, "inputs"); tide_json_raw(&j, "[\"x:0\"]");   (already JSON, e.g. nodes.inputs)
 *     tide_json_end_object(&j);
 *     size_t len; char *text = tide_json_take(&j, &len);   (malloc'd; NULL when out of memory)
 *
 * Errors are sticky: after an allocation failure or misuse (a key outside an object, unbalanced
 * ends, nesting deeper than TIDE_JSON_MAX_DEPTH) every call does nothing and tide_json_take returns
 * NULL (and frees the buffer). tide_json_failed tells whether that happened. A builder that is not
 * taken must be released with tide_json_free. Not thread-safe: one builder per thread. */
#ifndef TIDE_VIZ_JSON_H
#define TIDE_VIZ_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_JSON_MAX_DEPTH 64

typedef struct tide_json {
    char *p;             /* the text so far, NUL-terminated when p != NULL */
    size_t len, cap;
    bool failed;
    int depth;           /* open objects/arrays */
    bool after_key;      /* a key was written: the next value follows it without a comma */
    bool has_items[TIDE_JSON_MAX_DEPTH + 1]; /* whether the container at each depth has an item yet */
    bool is_object[TIDE_JSON_MAX_DEPTH + 1];
} tide_json;

void tide_json_init(tide_json *j);
/* Releases the buffer of a builder that will not be taken. */
void tide_json_free(tide_json *j);
bool tide_json_failed(const tide_json *j);

void tide_json_begin_object(tide_json *j);
void tide_json_end_object(tide_json *j);
void tide_json_begin_array(tide_json *j);
void tide_json_end_array(tide_json *j);
/* The key of the next member (inside an object only). */
void tide_json_key(tide_json *j, const char *key);

/* Values (as an array item, after a key, or as the whole document). s NULL is written as null. */
void tide_json_string(tide_json *j, const char *s);
void tide_json_string_n(tide_json *j, const char *s, size_t n);
void tide_json_int(tide_json *j, int64_t v);
/* Finite numbers with up to 17 significant digits (as few as read back the same double); JSON has no
 * NaN nor infinities: they are written as the strings "NaN", "Infinity" and "-Infinity" (tide's one
 * encoding of non-finite numbers in JSON, docs/web.md). */
void tide_json_double(tide_json *j, double v);
void tide_json_bool(tide_json *j, bool v);
void tide_json_null(tide_json *j);
/* Text that is already one JSON value (trusted: not checked), e.g. a JSON column of the run log. */
void tide_json_raw(tide_json *j, const char *json);

/* The document (malloc'd, NUL-terminated; *len, when len is not NULL, receives its length) and
 * the builder is reset. NULL when the builder failed or containers are still open. */
char *tide_json_take(tide_json *j, size_t *len);

/* s as one quoted, escaped JSON string (malloc'd; NULL when out of memory). s NULL gives "null". */
char *tide_json_quote(const char *s);

#ifdef __cplusplus
}
#endif
#endif
