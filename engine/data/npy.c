/* npy.c — NumPy's .npy files (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor
 * version byte, a little-endian header length (2 bytes in version 1.0, 4 in 2.0 and 3.0), the header
 * — the text of a Python dict literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a final newline so that the data start 64-byte aligned — then the elements.
 *
 * Reading parses exactly that dict with a small strict parser (quoted keys, a quoted descr, True or
 * False, a tuple of non-negative integers; nothing is evaluated): any other header is an error that
 * names the file and the offending position. Big-endian data ('>' descrs) are byte-swapped. Fortran
 * order is accepted only where it is the same layout as C order (rank <= 1).
 *
 * Writing emits version 1.0 byte for byte as numpy.save does (same dict text, the spare spaces numpy
 * leaves for the first dimension to grow, padding to 64 bytes) into a temporary file beside the
 * target, which is renamed over it once complete: readers see the old file or the new one, never
 * half of one. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide_data.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_HEADER_MAX (1u << 20)   /* versions 2 and 3 could claim 4 GiB of header */
#define NPY_GROWTH_AXIS_DIGITS 21  /* numpy's GROWTH_AXIS_MAX_DIGITS */
#define MAX_DATA_BYTES ((uint64_t)INT64_MAX / 16)

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ORDER '<'
#else
#define HOST_ORDER '>'
#endif

/* ---------------------------------------------------------------- dtypes */

typedef struct npy_type {
    const char *code; /* descr without its byte-order character */
    tide_dtype dtype;
} npy_type;

static const npy_type npy_types[] = {
    {"b1", TIDE_BOOL},     {"i1", TIDE_INT8},    {"u1", TIDE_UINT8},   {"i2", TIDE_INT16},
    {"u2", TIDE_UINT16},   {"i4", TIDE_INT32},   {"i8", TIDE_INT64},   {"f2", TIDE_FLOAT16},
    {"f4", TIDE_FLOAT32},  {"f8", TIDE_FLOAT64}, {"c8", TIDE_COMPLEX64}, {"c16", TIDE_COMPLEX128},
};
#define NPY_KNOWN_CODES "b1 i1 u1 i2 u2 i4 i8 f2 f4 f8 c8 c16"

static const char *npy_code(tide_dtype dt)
{
    for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
        if (npy_types[i].dtype == dt)
            return npy_types[i].code;
    return NULL;
}

/* ---------------------------------------------------------------- byte order */

/* Swaps every unit of `unit` bytes in place (a complex element is two units). */
static void swap_units(void *data, uint64_t bytes, size_t unit)
{
    unsigned char *p = data;
    if (unit == 2)
        for (uint64_t i = 0; i < bytes; i += 2) {
            uint16_t v;
            memcpy(&v, p + i, 2);
            v = __builtin_bswap16(v);
            memcpy(p + i, &v, 2);
        }
    else if (unit == 4)
        for (uint64_t i = 0; i < bytes; i += 4) {
            uint32_t v;
            memcpy(&v, p + i, 4);
            v = __builtin_bswap32(v);
            memcpy(p + i, &v, 4);
        }
    else if (unit == 8)
        for (uint64_t i = 0; i < bytes; i += 8) {
            uint64_t v;
            memcpy(&v, p + i, 8);
            v = __builtin_bswap64(v);
            memcpy(p + i, &v, 8);
        }
}

/* ---------------------------------------------------------------- header parser */

typedef struct npy_header {
    char descr[16];
    bool fortran_order;
    tide_shape shape;
} npy_header;

/* A cursor over the header text; the first failure is recorded in err and sticks. */
typedef struct parser {
    const char *start, *p, *end;
    const char *path;
    bool allow_long_suffix; /* Python 2 wrote 3L: versions 1 and 2 may have it */
    tide_error *err;
    bool failed;
} parser;

static bool parse_fail(parser *ps, const char *what)
{
    if (ps->failed)
        return false;
    ps->failed = true;
    char shown[81];
    size_t n = 0;
    for (const char *q = ps->start; q < ps->end && n < sizeof shown - 1; q++)
        shown[n++] = *q >= 0x20 && *q < 0x7f ? *q : '?';
    shown[n] = 0;
    tide_error_set(ps->err, TIDE_INVALID_ARGUMENT,
                   "%s: malformed .npy header: %s at offset %td of \"%s%s\"", ps->path, what,
                   ps->p - ps->start, shown, ps->end - ps->start > 80 ? "..." : "");
    return false;
}

static void skip_space(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static bool accept(parser *ps, char c)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return true;
    }
    return false;
}

static bool expect(parser *ps, char c, const char *what)
{
    return accept(ps, c) || parse_fail(ps, what);
}

/* A Python string literal in ' or " quotes, without escapes or newlines, into out (size cap). */
static bool parse_string(parser *ps, char *out, size_t cap)
{
    skip_space(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return parse_fail(ps, "expected a quoted string");
    char quote = *ps->p++;
    const char *close = ps->p;
    while (close < ps->end && *close != quote && *close != '\n')
        close++;
    if (close == ps->end || *close != quote)
        return parse_fail(ps, "unterminated string");
    if (memchr(ps->p, '\\', (size_t)(close - ps->p)))
        return parse_fail(ps, "escapes in strings are not supported");
    if ((size_t)(close - ps->p) >= cap)
        return parse_fail(ps, "string too long");
    memcpy(out, ps->p, (size_t)(close - ps->p));
    out[close - ps->p] = 0;
    ps->p = close + 1;
    return true;
}

static bool parse_word(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
        ps->p += n;
        return true;
    }
    return false;
}

static bool parse_bool(parser *ps, bool *out)
{
    skip_space(ps);
    if (parse_word(ps, "True"))
        *out = true;
    else if (parse_word(ps, "False"))
        *out = false;
    else
        return parse_fail(ps, "expected True or False");
    return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool parse_dim(parser *ps, int64_t *out)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == '-')
        return parse_fail(ps, "negative dimension");
    if (ps->p >= ps->end || !is_digit(*ps->p))
        return parse_fail(ps, "expected a dimension (a non-negative integer)");
    int64_t v = 0;
    for (; ps->p < ps->end && is_digit(*ps->p); ps->p++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *ps->p - '0', &v))
            return parse_fail(ps, "dimension too large");
    if (ps->allow_long_suffix && ps->p < ps->end && *ps->p == 'L')
        ps->p++;
    *out = v;
    return true;
}

/* A tuple of dimensions: (), (n,), (n, m), (n, m,) — but not (n), which Python reads as an int. */
static bool parse_shape(parser *ps, tide_shape *shape)
{
    shape->rank = 0;
    if (!expect(ps, '(', "expected '(' to open the shape tuple"))
        return false;
    if (accept(ps, ')'))
        return true;
    for (;;) {
        if (shape->rank == TIDE_MAX_RANK)
            return parse_fail(ps, "more than 8 dimensions (tide's TIDE_MAX_RANK)");
        if (!parse_dim(ps, &shape->dims[shape->rank++]))
            return false;
        if (accept(ps, ')'))
            return shape->rank > 1 || parse_fail(ps, "a one-element shape needs a trailing comma");
        if (!expect(ps, ',', "expected ',' or ')' in the shape tuple"))
            return false;
        if (accept(ps, ')'))
            return true;
    }
}

/* One "'key': value" entry; `seen` flags catch duplicates and unknown keys. */
static bool parse_entry(parser *ps, npy_header *h, unsigned *seen)
{
    char key[32];
    const char *key_at = ps->p;
    if (!parse_string(ps, key, sizeof key) || !expect(ps, ':', "expected ':' after the key"))
        return false;
    unsigned bit = strcmp(key, "descr") == 0           ? 1u
                   : strcmp(key, "fortran_order") == 0 ? 2u
                   : strcmp(key, "shape") == 0         ? 4u
                                                       : 0u;
    if (!bit || (*seen & bit)) {
        ps->p = key_at;
        return parse_fail(ps, bit ? "duplicate key" : "unknown key (expected descr, fortran_order, shape)");
    }
    *seen |= bit;
    if (bit == 1) {
        skip_space(ps);
        if (ps->p < ps->end && (*ps->p == '[' || *ps->p == '('))
            return parse_fail(ps, "structured dtypes are not supported");
        return parse_string(ps, h->descr, sizeof h->descr);
    }
    if (bit == 2)
        return parse_bool(ps, &h->fortran_order);
    return parse_shape(ps, &h->shape);
}

static bool parse_header(parser *ps, npy_header *h)
{
    unsigned seen = 0;
    if (!expect(ps, '{', "expected '{'"))
        return false;
    while (!accept(ps, '}')) {
        if (!parse_entry(ps, h, &seen))
            return false;
        if (!accept(ps, ',')) {
            if (!expect(ps, '}', "expected ',' or '}'"))
                return false;
            break;
        }
    }
    skip_space(ps);
    if (ps->p != ps->end)
        return parse_fail(ps, "unexpected text after the dict");
    if (seen != 7)
        return parse_fail(ps, !(seen & 1) ? "missing key 'descr'"
                              : !(seen & 2) ? "missing key 'fortran_order'"
                                            : "missing key 'shape'");
    return true;
}

/* ---------------------------------------------------------------- reading */

typedef struct npy_layout {
    tide_dtype dtype;
    bool swap;        /* file order differs from the host's */
    uint64_t bytes;   /* of data */
} npy_layout;

static tide_status resolve_descr(const char *path, const npy_header *h, npy_layout *lay,
                                 tide_error *err)
{
    const char *d = h->descr;
    char order = (*d == '<' || *d == '>' || *d == '|' || *d == '=') ? *d++ : '=';
    lay->dtype = TIDE_INVALID_DTYPE;
    for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
        if (strcmp(d, npy_types[i].code) == 0)
            lay->dtype = npy_types[i].dtype;
    if (lay->dtype == TIDE_INVALID_DTYPE)
        return tide_error_set(err, TIDE_UNIMPLEMENTED,
                              "%s: numpy dtype '%s' has no tide dtype (tide reads " NPY_KNOWN_CODES ")",
                              path, h->descr);
    lay->swap = (order == '<' || order == '>') && order != HOST_ORDER &&
                tide_dtype_size(lay->dtype) > 1;
    if (h->fortran_order && h->shape.rank > 1) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_error_set(err, TIDE_UNIMPLEMENTED,
                              "%s: Fortran-order (column-major) array of shape %s: tide reads C order; "
                              "save it with numpy.ascontiguousarray(a)",
                              path, tide_shape_format(&h->shape, buf, sizeof buf));
    }
    uint64_t bytes = tide_dtype_size(lay->dtype);
    bool overflow = false;
    for (int i = 0; i < h->shape.rank; i++)
        overflow |= __builtin_mul_overflow(bytes, (uint64_t)h->shape.dims[i], &bytes);
    if (overflow || bytes > MAX_DATA_BYTES) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: shape %s of %s is too large", path,
                              tide_shape_format(&h->shape, buf, sizeof buf), h->descr);
    }
    lay->bytes = bytes;
    return TIDE_OK;
}

static bool read_exact(FILE *f, void *buf, size_t n)
{
    return n == 0 || fread(buf, 1, n, f) == n;
}

/* Reads the magic, version and header text; fills h and *data_offset. */
static tide_status read_header(FILE *f, const char *path, npy_header *h, uint64_t *data_offset,
                               tide_error *err)
{
    unsigned char pre[12];
    if (!read_exact(f, pre, 10) || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: not a .npy file (no \\x93NUMPY magic)",
                              path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return tide_error_set(err, TIDE_UNIMPLEMENTED,
                              "%s: .npy format version %d.%d; tide reads 1.0, 2.0 and 3.0", path, major,
                              minor);
    uint64_t header_len = pre[8] | (uint64_t)pre[9] << 8;
    uint64_t prefix = 10;
    if (major >= 2) {
        if (!read_exact(f, pre + 10, 2))
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: truncated .npy header", path);
        header_len |= (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
        prefix = 12;
    }
    if (header_len > NPY_HEADER_MAX)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: .npy header of %llu bytes is too large",
                              path, (unsigned long long)header_len);
    char *text = malloc(header_len + 1);
    if (!text)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    tide_status st = TIDE_OK;
    if (!read_exact(f, text, header_len)) {
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT,
                            "%s: truncated .npy header (%llu bytes announced)", path,
                            (unsigned long long)header_len);
    } else {
        parser ps = {text, text, text + header_len, path, major <= 2, err, false};
        if (!parse_header(&ps, h))
            st = tide_error_code(err) ? tide_error_code(err) : TIDE_INVALID_ARGUMENT;
    }
    free(text);
    *data_offset = prefix + header_len;
    return st;
}

static tide_tensor *read_data(FILE *f, uint64_t size, const char *path, const npy_header *h,
                              const npy_layout *lay, uint64_t data_offset, uint64_t max_bytes, tide_error *err)
{
    uint64_t has = size > data_offset ? size - data_offset : 0;
    if (has != lay->bytes) {
        char buf[TIDE_SHAPE_STR_MAX];
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: %s: %s %s needs %llu bytes, file has %llu",
                       path, has < lay->bytes ? "truncated .npy data" : "trailing bytes in .npy file", h->descr, tide_shape_format(&h->shape, buf, sizeof buf),
                       (unsigned long long)lay->bytes, (unsigned long long)has);
        return NULL;
    }
    if (data_offset + lay->bytes > max_bytes) {
        char buf[TIDE_SHAPE_STR_MAX], cap[32];
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,
                       "%s: .npy file of %s %s holds %llu bytes, more than %s, " TIDE_INPUT_CAP_HINT,
                       path, h->descr, tide_shape_format(&h->shape, buf, sizeof buf),
                       (unsigned long long)(data_offset + lay->bytes),
                       tide_format_bytes(max_bytes, cap, sizeof cap));
        return NULL;
    }
    tide_tensor *t = tide_tensor_new_uninitialized(lay->dtype, &h->shape, err);
    if (!t)
        return NULL;
    void *data = tide_tensor_data(t);
    if (!read_exact(f, data, lay->bytes)) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: read error: %s", path,
                       ferror(f) ? strerror(errno) : "unexpected end of file");
        tide_tensor_release(t);
        return NULL;
    }
    if (lay->swap)
        swap_units(data, lay->bytes, tide_dtype_is_complex(lay->dtype) ? tide_dtype_size(lay->dtype) / 2
                                                                        : tide_dtype_size(lay->dtype));
    if (lay->dtype == TIDE_BOOL) /* numpy writes 0/1; anything else is true */
        for (unsigned char *b = data, *e = b + lay->bytes; b < e; b++)
            *b = *b != 0;
    return t;
}

/* A .npy of size bytes from f's current position (at its start); max_bytes caps its size. */
static tide_tensor *read_stream(FILE *f, uint64_t size, const char *path, uint64_t max_bytes, tide_error *err)
{
    npy_header h = {0};
    npy_layout lay = {0};
    uint64_t data_offset = 0;
    if (read_header(f, path, &h, &data_offset, err) != TIDE_OK || resolve_descr(path, &h, &lay, err) != TIDE_OK)
        return NULL;
    return read_data(f, size, path, &h, &lay, data_offset, max_bytes, err);
}

tide_tensor *tide_read_npy(const char *path, const tide_read_options *opts, tide_error *err)
{
    uint64_t max_bytes = opts ? opts->max_bytes : 0;
    if (!path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_read_npy: path is NULL");
        return NULL;
    }
    if (!max_bytes && tide_input_max_bytes(&max_bytes, err) != TIDE_OK)
        return NULL;
    FILE *f = fopen(path, "rbe");
    if (!f) {
        tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT,
                       "cannot open .npy file %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot read .npy file %s: it is a directory", path);
        return NULL;
    }
    tide_tensor *t = NULL;
    if (fstat(fileno(f), &sb) != 0)
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: %s", path, strerror(errno));
    else
        t = read_stream(f, (uint64_t)sb.st_size, path, max_bytes, err);
    fclose(f);
    return t;
}

tide_tensor *tide_npy_from_bytes(const void *bytes, size_t size, const char *name, tide_error *err)
{
    FILE *f = size ? fmemopen((void *)bytes, size, "rb") : NULL;
    if (!f) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: %s", name, size ? strerror(errno) : "not a .npy file (empty)");
        return NULL;
    }
    tide_tensor *t = read_stream(f, size, name, UINT64_MAX, err); /* in memory already */
    fclose(f);
    return t;
}

/* ---------------------------------------------------------------- writing */

/* The complete version 1.0 prefix (magic through the final '\n' of the padded header), as numpy
 * writes it; a malloc'd buffer of *len bytes, or NULL on OOM. */
static char *npy_prefix(tide_dtype dt, const tide_shape *shape, size_t *len)
{
    char dict[512];
    char order = tide_dtype_size(dt) == 1 ? '|' : HOST_ORDER; /* numpy's "not applicable" */
    int n = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (", order,
                     npy_code(dt));
    for (int i = 0; i < shape->rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %lld" : "%lld", (long long)shape->dims[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", shape->rank == 1 ? "," : "");
    if (shape->rank > 0) { /* numpy's spare room for the first dimension to grow in place */
        int digits = snprintf(NULL, 0, "%lld", (long long)shape->dims[0]);
        for (int i = digits; i < NPY_GROWTH_AXIS_DIGITS; i++)
            dict[n++] = ' ';
    }
    size_t hlen = (size_t)n + 1; /* with the final '\n' */
    size_t pad = NPY_ALIGN - (NPY_MAGIC_LEN + 2 + 2 + hlen) % NPY_ALIGN;
    size_t header_len = hlen + pad;
    *len = NPY_MAGIC_LEN + 4 + header_len;
    char *out = malloc(*len);
    if (!out)
        return NULL;
    memcpy(out, NPY_MAGIC "\x01\x00", NPY_MAGIC_LEN + 2);
    out[8] = (char)(header_len & 0xff);
    out[9] = (char)(header_len >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', pad);
    out[*len - 1] = '\n';
    return out;
}

static bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n < ((size_t)1 << 30) ? n : ((size_t)1 << 30));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Creates a new, unique temporary file beside path; *tmp receives its malloc'd name. */
static int open_temp_beside(const char *path, char **tmp)
{
    static atomic_uint counter;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (asprintf(tmp, "%s.tmp-%d-%u", path, (int)getpid(), atomic_fetch_add(&counter, 1)) < 0) {
            *tmp = NULL;
            return -1;
        }
        int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
        free(*tmp);
        *tmp = NULL;
    }
    errno = EEXIST;
    return -1;
}

/* Writes prefix then data to a temporary file and renames it over path. */
static tide_status write_atomically(const char *path, const char *prefix, size_t prefix_len,
                                    const void *data, size_t bytes, tide_error *err)
{
    char *tmp = NULL;
    int fd = open_temp_beside(path, &tmp);
    if (fd < 0) {
        tide_status st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write %s: %s", path,
                                        tmp ? strerror(errno) : "out of memory");
        free(tmp);
        return st;
    }
    bool ok = write_all(fd, prefix, prefix_len) && write_all(fd, data, bytes) && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    tide_status st = TIDE_OK;
    if (!ok) {
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write %s: %s", path, strerror(saved));
        unlink(tmp);
    }
    free(tmp);
    return st;
}

tide_status tide_npy_describe(const void *bytes, size_t size, const char *name, tide_dtype *dtype, tide_shape *shape,
                              tide_error *err)
{
    FILE *f = size ? fmemopen((void *)bytes, size, "rb") : NULL;
    if (!f)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: %s", name,
                              size ? strerror(errno) : "not a .npy file (empty)");
    npy_header h = {0};
    npy_layout lay = {0};
    uint64_t data_offset = 0;
    tide_status st = read_header(f, name, &h, &data_offset, err);
    if (st == TIDE_OK)
        st = resolve_descr(name, &h, &lay, err);
    fclose(f);
    if (st == TIDE_OK) {
        *dtype = lay.dtype;
        *shape = h.shape;
    }
    return st;
}

char *tide_npy_prefix(const tide_tensor *t, size_t *len, tide_error *err)
{
    if (!npy_code(tide_tensor_dtype(t))) {
        tide_error_set(err, TIDE_UNIMPLEMENTED, "a %s tensor has no .npy dtype%s", tide_dtype_name(tide_tensor_dtype(t)),
                       tide_tensor_dtype(t) == TIDE_BFLOAT16 ? " (cast it to float32 first)" : "");
        return NULL;
    }
    char *prefix = npy_prefix(tide_tensor_dtype(t), tide_tensor_shape(t), len);
    if (!prefix)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    return prefix;
}

tide_status tide_write_npy(const char *path, const tide_tensor *t, tide_error *err)
{
    if (!path || !t)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_write_npy: %s is NULL",
                              path ? "the tensor" : "path");
    if (!npy_code(tide_tensor_dtype(t)))
        return tide_error_set(err, TIDE_UNIMPLEMENTED,
                              "cannot write a %s tensor to %s: .npy has no such dtype%s",
                              tide_dtype_name(tide_tensor_dtype(t)), path,
                              tide_tensor_dtype(t) == TIDE_BFLOAT16 ? " (cast it to float32 first)" : "");
    size_t prefix_len;
    char *prefix = npy_prefix(tide_tensor_dtype(t), tide_tensor_shape(t), &prefix_len);
    if (!prefix)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot write %s: out of memory", path);
    tide_status st = write_atomically(path, prefix, prefix_len, tide_tensor_data(t),
                                      tide_tensor_byte_size(t), err);
    free(prefix);
    return st;
}
