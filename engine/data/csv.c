/* csv.c — reading numeric CSV files into a [rows, columns] tensor of float32, float64, int32 or int64.
 *
 * What it reads: fields separated by a one-character delimiter; lines ending in \n or \r\n, the last
 * one possibly without a newline; spaces and tabs around a field; blank lines (skipped, as
 * numpy.loadtxt and pandas do); header lines to skip, or one auto-detected (the first non-blank line
 * when none of its fields is a number: a first row with one bad field is reported, not dropped);
 * gzip-compressed files (detected by content and verified whole by file_input: a cut or corrupt
 * stream is an error, not a shorter table). Numbers are parsed in the "C" locale whatever the
 * process's locale is, so "1.5" is one and a half everywhere.
 *
 * How much memory: the file is read as a stream, a chunk at a time, and parsed line by line; the
 * values go into chunks that grow geometrically, copied into the tensor (and freed one by one) at
 * the end. Besides the tensor, the reader holds its buffer (at least CSV_READ_CHUNK, more only for a
 * longer line) and one chunk of values. The bytes taken from the file are capped (max_bytes) and a
 * NUL byte, which no text file holds, is refused where it is read: load_csv("/dev/zero") fails at
 * once.
 *
 * What it rejects, naming the line and column (both counted from 1): empty fields, fields that are
 * not numbers of the dtype (an integer dtype takes no "1.5"), values out of the dtype's range, rows
 * with a different number of fields than the first. Quoted fields ("a,b" with the delimiter inside,
 * or a newline) are NOT supported: these are numeric tables, and a quote is reported as a field that
 * is not a number. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "file_input.h"

#define CSV_READ_CHUNK ((size_t)1 << 20)
#define FIELD_SHOWN_MAX 40
#define VALUES_FIRST_CHUNK ((size_t)1 << 10) /* elements */
#define VALUES_CHUNK_MAX ((size_t)1 << 22)   /* elements: 16 or 32 MiB */

void tide_csv_options_init(tide_csv_options *opts)
{
    if (!opts)
        return;
    opts->delimiter = ',';
    opts->header = -1;
    opts->dtype = TIDE_FLOAT32;
    opts->max_bytes = 0;
}

/* ---------------------------------------------------------------- fields */

/* The reader's state: where it is, what it has collected. */
typedef struct csv_reader {
    const char *path;
    tide_csv_options opts;
    locale_t c_locale;
    int64_t line;          /* current line number, from 1 */
    bool detect_header;    /* the first non-blank line is still to come and may be a header */
    int64_t columns;       /* of the first data row; 0 before it */
    int64_t columns_line;  /* where that row was */
    int64_t rows;
    unsigned char **chunks; /* the values, rows * columns elements of opts.dtype, in order */
    size_t *chunk_sizes;    /* elements each chunk holds (all full but the last) */
    int num_chunks, chunks_cap;
    size_t count;           /* elements stored */
    size_t in_chunk;        /* of them in the last chunk */
    tide_error *err;
} csv_reader;

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static tide_status field_error(csv_reader *r, int64_t column, const char *field, const char *why)
{
    size_t len = strlen(field);
    return tide_error_set(r->err, TIDE_INVALID_ARGUMENT, "%s line %lld, column %lld: \"%.*s%s\" %s",
                          r->path, (long long)r->line, (long long)column, FIELD_SHOWN_MAX, field,
                          len > FIELD_SHOWN_MAX ? "..." : "", why);
}

/* Parses the trimmed field of len bytes (NUL-terminated) as the reader's dtype into out. A NUL inside
 * the field stops strtod early, so "complete" means ending exactly at field + len. */
static tide_status parse_value(csv_reader *r, const char *field, size_t len, int64_t column, void *out)
{
    char *end;
    const char *field_end = field + len;
    errno = 0;
    switch (r->opts.dtype) {
    case TIDE_FLOAT32: {
        float v = strtof_l(field, &end, r->c_locale);
        if (end == field || end != field_end)
            return field_error(r, column, field, "is not a number");
        if (errno == ERANGE && isinf(v))
            return field_error(r, column, field, "is out of the range of float32");
        memcpy(out, &v, sizeof v);
        return TIDE_OK;
    }
    case TIDE_FLOAT64: {
        double v = strtod_l(field, &end, r->c_locale);
        if (end == field || end != field_end)
            return field_error(r, column, field, "is not a number");
        if (errno == ERANGE && isinf(v))
            return field_error(r, column, field, "is out of the range of float64");
        memcpy(out, &v, sizeof v);
        return TIDE_OK;
    }
    default: {
        long long v = strtoll_l(field, &end, 10, r->c_locale);
        if (end == field || end != field_end)
            return field_error(r, column, field,
                               r->opts.dtype == TIDE_INT32 ? "is not an int32" : "is not an int64");
        if (r->opts.dtype == TIDE_INT32) {
            if (errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
                return field_error(r, column, field, "is out of the range of int32");
            int32_t v32 = (int32_t)v;
            memcpy(out, &v32, sizeof v32);
        } else {
            if (errno == ERANGE)
                return field_error(r, column, field, "is out of the range of int64");
            int64_t v64 = v;
            memcpy(out, &v64, sizeof v64);
        }
        return TIDE_OK;
    }
    }
}

/* Splits [begin, end) at the delimiter and calls fn on each trimmed, NUL-terminated field of len
 * bytes (the buffer is written to: a field's end becomes NUL while it is parsed). Stops at fn's first
 * failure. */
typedef tide_status (*field_fn)(csv_reader *r, char *field, size_t len, int64_t column, void *arg);

static tide_status for_each_field(csv_reader *r, char *begin, char *end, field_fn fn, void *arg)
{
    int64_t column = 1;
    for (char *p = begin;; column++) {
        char *stop = memchr(p, r->opts.delimiter, (size_t)(end - p));
        char *field_end = stop ? stop : end;
        char *a = p, *b = field_end;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        char saved = *b;
        *b = 0;
        tide_status st = fn(r, a, (size_t)(b - a), column, arg);
        *b = saved;
        if (st != TIDE_OK || !stop)
            return st;
        p = stop + 1;
    }
}

/* Sets *(bool *)arg when the field is a number. */
static tide_status note_number(csv_reader *r, char *field, size_t len, int64_t column, void *arg)
{
    (void)column;
    char *end;
    strtod_l(field, &end, r->c_locale);
    if (end != field && end == field + len)
        *(bool *)arg = true;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- values */

/* Makes room for one more value: a new chunk, twice the last one, up to VALUES_CHUNK_MAX. */
static tide_status grow_values(csv_reader *r)
{
    size_t n = r->num_chunks ? 2 * r->chunk_sizes[r->num_chunks - 1] : VALUES_FIRST_CHUNK;
    n = n < VALUES_CHUNK_MAX ? n : VALUES_CHUNK_MAX;
    if (r->num_chunks == r->chunks_cap) {
        int cap = r->chunks_cap ? 2 * r->chunks_cap : 16;
        unsigned char **chunks = realloc(r->chunks, sizeof *chunks * (size_t)cap);
        if (chunks)
            r->chunks = chunks;
        size_t *sizes = chunks ? realloc(r->chunk_sizes, sizeof *sizes * (size_t)cap) : NULL;
        if (sizes) {
            r->chunk_sizes = sizes;
            r->chunks_cap = cap;
        }
    }
    unsigned char *chunk = r->num_chunks < r->chunks_cap ? malloc(n * tide_dtype_size(r->opts.dtype)) : NULL;
    if (!chunk)
        return tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED, "%s line %lld: out of memory after %zu values",
                              r->path, (long long)r->line, r->count);
    r->chunks[r->num_chunks] = chunk;
    r->chunk_sizes[r->num_chunks++] = n;
    r->in_chunk = 0;
    return TIDE_OK;
}

static void free_values(csv_reader *r)
{
    for (int k = 0; k < r->num_chunks; k++)
        free(r->chunks[k]);
    free(r->chunks);
    free(r->chunk_sizes);
    r->chunks = NULL;
    r->chunk_sizes = NULL;
    r->num_chunks = r->chunks_cap = 0;
}

static tide_status store_field(csv_reader *r, char *field, size_t len, int64_t column, void *arg)
{
    int64_t *fields = arg;
    *fields = column;
    if (r->columns && column > r->columns)
        return tide_error_set(r->err, TIDE_INVALID_ARGUMENT,
                              "%s line %lld: more than %lld fields (line %lld has %lld); ragged rows "
                              "are not allowed",
                              r->path, (long long)r->line, (long long)r->columns,
                              (long long)r->columns_line, (long long)r->columns);
    if (!len)
        return field_error(r, column, field, "is empty");
    if ((!r->num_chunks || r->in_chunk == r->chunk_sizes[r->num_chunks - 1]) && grow_values(r) != TIDE_OK)
        return TIDE_RESOURCE_EXHAUSTED;
    void *slot = r->chunks[r->num_chunks - 1] + r->in_chunk * tide_dtype_size(r->opts.dtype);
    tide_status st = parse_value(r, field, len, column, slot);
    if (st == TIDE_OK) {
        r->count++;
        r->in_chunk++;
    }
    return st;
}

/* ---------------------------------------------------------------- lines */

static tide_status read_row(csv_reader *r, char *begin, char *end)
{
    int64_t fields = 0;
    tide_status st = for_each_field(r, begin, end, store_field, &fields);
    if (st != TIDE_OK)
        return st;
    if (!r->columns) {
        r->columns = fields;
        r->columns_line = r->line;
    } else if (fields != r->columns) {
        return tide_error_set(r->err, TIDE_INVALID_ARGUMENT,
                              "%s line %lld: %lld fields, but line %lld has %lld; ragged rows are not "
                              "allowed",
                              r->path, (long long)r->line, (long long)fields, (long long)r->columns_line,
                              (long long)r->columns);
    }
    r->rows++;
    return TIDE_OK;
}

static bool line_is_blank(const char *begin, const char *end)
{
    while (begin < end && is_blank(*begin))
        begin++;
    return begin == end;
}

/* One line, [p, line_end) (its newline excluded, a '\r' before it too): skipped (a header line,
 * blank), detected as the header, or a row. The byte at line_end may be written to. */
static tide_status read_line(csv_reader *r, char *p, char *line_end)
{
    if (line_end > p && line_end[-1] == '\r')
        line_end--;
    bool skip = r->line <= r->opts.header || line_is_blank(p, line_end);
    if (!skip && r->detect_header) {
        r->detect_header = false;
        bool any_number = false;
        for_each_field(r, p, line_end, note_number, &any_number);
        skip = !any_number;
    }
    return skip ? TIDE_OK : read_row(r, p, line_end);
}

/* A NUL byte at nul, in text whose first byte begins line r->line: which line and column it is in. */
static tide_status nul_error(csv_reader *r, const char *text, const char *nul)
{
    int64_t line = r->line, column = 1;
    for (const char *q = text; q < nul; q++) {
        if (*q == '\n') {
            line++;
            column = 1;
        } else if (*q == r->opts.delimiter) {
            column++;
        }
    }
    return tide_error_set(r->err, TIDE_INVALID_ARGUMENT,
                          "%s line %lld, column %lld: a NUL byte, which no text file holds: this is not a "
                          "CSV file",
                          r->path, (long long)line, (long long)column);
}

/* The text as a stream: a chunk at a time into buf, every complete line read, the incomplete last
 * one moved to the front for the next chunk (the buffer grows only for a line longer than it). */
static tide_status read_stream(csv_reader *r, file_input *in)
{
    size_t cap = CSV_READ_CHUNK, len = 0;
    char *buf = malloc(cap + 1);
    tide_status st = buf ? TIDE_OK : tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory", r->path);
    for (bool at_end = false; st == TIDE_OK && !at_end;) {
        if (len == cap) {
            char *bigger = cap < SIZE_MAX / 4 ? realloc(buf, 2 * cap + 1) : NULL;
            if (!bigger) {
                st = tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED,
                                    "%s line %lld: out of memory for a line of more than %zu bytes", r->path,
                                    (long long)r->line, cap);
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t want = cap - len, got;
        if ((st = file_input_read(in, buf + len, want, &got, r->err)) != TIDE_OK)
            break;
        at_end = got < want;
        const char *nul = memchr(buf + len, 0, got);
        if (nul) {
            st = nul_error(r, buf, nul);
            break;
        }
        char *p = buf, *end = buf + len + got;
        for (char *nl; st == TIDE_OK && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1, r->line++)
            st = read_line(r, p, nl);
        if (st == TIDE_OK && at_end && p < end) { /* the last line, without a newline */
            st = read_line(r, p, end);
            p = end;
        }
        len = (size_t)(end - p);
        memmove(buf, p, len);
    }
    free(buf);
    return st;
}

static tide_status check_options(const char *path, const tide_csv_options *o, tide_error *err)
{
    if (o->dtype != TIDE_FLOAT32 && o->dtype != TIDE_FLOAT64 && o->dtype != TIDE_INT32 &&
        o->dtype != TIDE_INT64)
        return tide_error_set(err, TIDE_UNIMPLEMENTED,
                              "reading CSV file %s as %s: tide_read_csv reads float32, float64, int32 "
                              "and int64",
                              path, tide_dtype_name(o->dtype) ? tide_dtype_name(o->dtype) : "invalid");
    char d = o->delimiter;
    if (d == 0 || d == '\n' || d == '\r' || (d >= '0' && d <= '9') || d == '.' || d == '+' || d == '-' ||
        (d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z'))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "reading CSV file %s: delimiter 0x%02x cannot separate numbers", path,
                              (unsigned char)d);
    if (o->header < -1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "reading CSV file %s: header = %d (use 0, a number of lines, or -1 to detect)",
                              path, o->header);
    return TIDE_OK;
}

/* The tensor from the chunks, each freed once copied. */
static tide_tensor *make_tensor(csv_reader *r)
{
    if (!r->rows) {
        tide_error_set(r->err, TIDE_INVALID_ARGUMENT, "%s: no data rows", r->path);
        return NULL;
    }
    tide_shape shape = tide_shape_matrix(r->rows, r->columns);
    tide_tensor *t = tide_tensor_new_uninitialized(r->opts.dtype, &shape, r->err);
    if (!t)
        return NULL;
    size_t esize = tide_dtype_size(r->opts.dtype), done = 0;
    unsigned char *data = tide_tensor_data(t);
    for (int k = 0; k < r->num_chunks; k++) {
        size_t n = k == r->num_chunks - 1 ? r->in_chunk : r->chunk_sizes[k];
        memcpy(data + done * esize, r->chunks[k], n * esize);
        done += n;
        free(r->chunks[k]);
        r->chunks[k] = NULL;
    }
    return t;
}

tide_tensor *tide_read_csv(const char *path, const tide_csv_options *opts, tide_error *err)
{
    csv_reader r = {.path = path, .line = 1, .err = err};
    tide_csv_options_init(&r.opts);
    if (opts)
        r.opts = *opts;
    r.detect_header = r.opts.header == -1;
    if (!path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_read_csv: path is NULL");
        return NULL;
    }
    if (check_options(path, &r.opts, err) != TIDE_OK)
        return NULL;
    file_input *in = file_input_open(path, "CSV file", r.opts.max_bytes, err);
    if (!in)
        return NULL;
    tide_tensor *t = NULL;
    r.c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!r.c_locale)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: cannot create the C locale", path);
    else if (read_stream(&r, in) == TIDE_OK)
        t = make_tensor(&r);
    if (r.c_locale)
        freelocale(r.c_locale);
    free_values(&r);
    file_input_close(in);
    return t;
}
