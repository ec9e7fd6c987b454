/* wire.c — getting a GraphDef's bytes in and out: files, the format (from the extension or the bytes),
 * the text format through pbtext.cc, and the binary wire format through protobuf-c.
 *
 * Before protobuf-c unpacks binary data, a walk over the wire format checks it with the same
 * descriptors protobuf-c uses: every length inside its message, every tag well formed, nested
 * messages at most GRAPHDEF_MAX_DEPTH deep (protobuf-c recurses without a limit, and a crafted file
 * of a few megabytes could otherwise exhaust the stack). Its messages say where the data is wrong
 * ("at byte 1234, in GraphDef.node[3].attr[1]: the data ends inside a field of 50 bytes"), which is
 * what a user with a truncated or corrupted file needs. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graphdef_internal.h"

#define GRAPHDEF_MAX_DEPTH 100  /* libprotobuf's default recursion limit */
#define GRAPHDEF_MAX_FILE ((size_t)2 << 30)

/* ---------------------------------------------------------------- formats */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

tide_graphdef_format tide_graphdef_format_of_path(const char *path)
{
    if (!path)
        return TIDE_GRAPHDEF_AUTO;
    static const char *const text[] = {".pbtxt", ".pbtext", ".prototxt", ".txt"};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++)
        if (ends_with(path, text[i]))
            return TIDE_GRAPHDEF_TEXT;
    if (ends_with(path, ".pb") || ends_with(path, ".graphdef"))
        return TIDE_GRAPHDEF_BINARY;
    return TIDE_GRAPHDEF_AUTO;
}

int tide_graphdef_format_from_name(const char *name)
{
    if (!name)
        return -1;
    if (!strcmp(name, "binary") || !strcmp(name, "pb"))
        return TIDE_GRAPHDEF_BINARY;
    if (!strcmp(name, "text") || !strcmp(name, "pbtxt"))
        return TIDE_GRAPHDEF_TEXT;
    if (!strcmp(name, "auto"))
        return TIDE_GRAPHDEF_AUTO;
    return -1;
}

/* Text starts (after blanks) with a comment or a field name, and holds no NUL or control bytes in
 * its first kilobyte; a binary GraphDef starts with field 1, 2, 3 or 4's tag (0x0a, 0x12, 0x18, 0x22). */
static bool looks_like_text(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n && isspace(p[i]))
        i++;
    if (i == n)
        return true; /* empty text is an empty GraphDef too */
    if (p[i] != '#' && !isalpha(p[i]))
        return false;
    for (size_t k = 0; k < n && k < 1024; k++)
        if (p[k] < 32 && !isspace(p[k]))
            return false;
    return true;
}

/* ---------------------------------------------------------------- the checked walk */

typedef struct walker {
    const uint8_t *start;
    char path[512];       /* "GraphDef.node[3].attr[1]" of the message being walked */
    char why[256];
    size_t where;         /* byte offset of the problem */
} walker;

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static bool walk_fail(walker *w, const uint8_t *at, const char *why)
{
    w->where = (size_t)(at - w->start);
    snprintf(w->why, sizeof w->why, "%s", why);
    return false;
}

static bool walk_message(walker *w, const uint8_t *p, const uint8_t *end,
                         const ProtobufCMessageDescriptor *desc, int depth);

/* One length-delimited field: a nested message is walked, anything else only bounded. */
static bool walk_bytes(walker *w, const uint8_t *p, const uint8_t *end, const ProtobufCFieldDescriptor *f,
                       unsigned *counts, const ProtobufCMessageDescriptor *desc, int depth)
{
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return true;
    size_t at = strlen(w->path);
    unsigned index = counts[f - desc->fields]++;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        snprintf(w->path + at, sizeof w->path - at, ".%s[%u]", f->name, index);
    else
        snprintf(w->path + at, sizeof w->path - at, ".%s", f->name);
    if (!walk_message(w, p, end, f->descriptor, depth + 1))
        return false;
    w->path[at] = 0;
    return true;
}

static bool walk_message(walker *w, const uint8_t *p, const uint8_t *end,
                         const ProtobufCMessageDescriptor *desc, int depth)
{
    if (depth > GRAPHDEF_MAX_DEPTH)
        return walk_fail(w, p, "messages nested more than 100 deep");
    unsigned counts[64] = {0};
    if (desc->n_fields > 64)
        return walk_fail(w, p, "internal: a message with more than 64 fields");
    while (p < end) {
        const uint8_t *field_start = p;
        uint64_t key, len;
        if (!read_varint(&p, end, &key))
            return walk_fail(w, field_start, "the data ends inside a field's tag (truncated?)");
        uint32_t number = (uint32_t)(key >> 3);
        if (number == 0 || key >> 3 > 536870911u)
            return walk_fail(w, field_start, "a field number of 0 or beyond 2^29 (corrupted data?)");
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, number);
        switch (key & 7) {
        case 0:
            if (!read_varint(&p, end, &len))
                return walk_fail(w, field_start, "the data ends inside a number (truncated?)");
            break;
        case 1:
        case 5: {
            size_t n = (key & 7) == 1 ? 8 : 4;
            if ((size_t)(end - p) < n)
                return walk_fail(w, field_start, "the data ends inside a fixed-size number (truncated?)");
            p += n;
            break;
        }
        case 2: {
            if (!read_varint(&p, end, &len))
                return walk_fail(w, field_start, "the data ends inside a field's length (truncated?)");
            if (len > (uint64_t)(end - p)) {
                char why[160];
                snprintf(why, sizeof why, "a field of %llu bytes where %zu remain (truncated?)",
                         (unsigned long long)len, (size_t)(end - p));
                return walk_fail(w, field_start, why);
            }
            if (!walk_bytes(w, p, p + len, f, counts, desc, depth))
                return false;
            p += len;
            break;
        }
        default:
            return walk_fail(w, field_start, "a field of wire type 3, 4, 6 or 7 (not a GraphDef, or corrupted)");
        }
    }
    return true;
}

/* ---------------------------------------------------------------- parsing and encoding */

static Tensorflow__GraphDef *parse_binary(const uint8_t *data, size_t size, const char *source, bool text_like,
                                          tide_error *err)
{
    walker w = {.start = data};
    snprintf(w.path, sizeof w.path, "GraphDef");
    if (!walk_message(&w, data, data + size, &tensorflow__graph_def__descriptor, 0)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: malformed binary GraphDef at byte %zu of %zu, in %s: %s%s",
                       source, w.where, size, w.path, w.why,
                       text_like ? " (it looks like text: name the file .pbtxt or ask for the text format)" : "");
        return NULL;
    }
    Tensorflow__GraphDef *gd = tensorflow__graph_def__unpack(NULL, size, data);
    if (!gd)
        tide_error_set(err, TIDE_INVALID_ARGUMENT,
                       "%s: malformed binary GraphDef (%zu bytes): a field holds a value of the wrong kind "
                       "(corrupted, or not a GraphDef)", source, size);
    return gd;
}

Tensorflow__GraphDef *graphdef_parse(const void *data, size_t size, tide_graphdef_format format,
                                     const char *source, tide_error *err)
{
    if (!source)
        source = "GraphDef";
    bool text_like = looks_like_text(data, size);
    if (format == TIDE_GRAPHDEF_AUTO)
        format = text_like ? TIDE_GRAPHDEF_TEXT : TIDE_GRAPHDEF_BINARY;
    if (format == TIDE_GRAPHDEF_BINARY)
        return parse_binary(data, size, source, text_like, err);
    uint8_t *bytes = NULL;
    size_t len = 0;
    char *message = NULL;
    if (!graphdef_text_to_binary(data, size, &bytes, &len, &message)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: malformed text GraphDef: %s%s", source,
                       message ? message : "out of memory",
                       text_like ? "" : " (it looks binary: name the file .pb or ask for the binary format)");
        free(message);
        return NULL;
    }
    Tensorflow__GraphDef *gd = parse_binary(bytes, len, source, false, err);
    free(bytes);
    return gd;
}

tide_status graphdef_serialize(const Tensorflow__GraphDef *gd, tide_graphdef_format format, void **data,
                               size_t *size, tide_error *err)
{
    *data = NULL;
    *size = 0;
    size_t len = tensorflow__graph_def__get_packed_size(gd);
    if (len > INT32_MAX)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,
                              "the GraphDef would take %zu bytes; protobuf allows 2 GiB at most", len);
    uint8_t *bytes = malloc(len + 1);
    if (!bytes)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory encoding a GraphDef of %zu bytes", len);
    tensorflow__graph_def__pack(gd, bytes);
    bytes[len] = 0;
    if (format != TIDE_GRAPHDEF_TEXT) {
        *data = bytes;
        *size = len;
        return TIDE_OK;
    }
    char *text = NULL, *message = NULL;
    size_t text_len = 0;
    bool ok = graphdef_binary_to_text(bytes, len, &text, &text_len, &message);
    free(bytes);
    if (!ok) {
        tide_error_set(err, TIDE_INTERNAL, "writing the GraphDef as text: %s", message ? message : "out of memory");
        free(message);
        return TIDE_INTERNAL;
    }
    *data = text;
    *size = text_len;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- files */

tide_status graphdef_read_file(const char *path, void **data, size_t *size, tide_error *err)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT,
                              "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "'%s' is not a regular file", path);
    }
    if ((size_t)st.st_size > GRAPHDEF_MAX_FILE) {
        fclose(f);
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "'%s' has %lld bytes; a GraphDef has 2 GiB at most",
                              path, (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory reading '%s' (%zu bytes)", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    bool failed = ferror(f);
    fclose(f);
    if (failed || got != n) {
        free(buf);
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "reading '%s' failed after %zu of %zu bytes", path, got, n);
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return TIDE_OK;
}

tide_status graphdef_write_file(const char *path, const void *data, size_t size, tide_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* renaming over a device or a folder: no */
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write '%s': it is not a regular file", path);
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    snprintf(tmp, len + 16, "%s.tmp%d", path, (int)getpid() % 100000);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        tide_status st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    bool ok = fwrite(data, 1, size, f) == size;
    ok = fflush(f) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        tide_status st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "writing '%s' failed: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return st;
    }
    free(tmp);
    return TIDE_OK;
}
