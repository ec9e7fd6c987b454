/* csv.c — reading numeric CSV files into a [rows, columns] tensor of float32, float64, int32 or int64.
 *
 * What it reads: fields separated by a one-character delimiter; lines ending in \n or \r\n, the last
 * one possibly without a newline; spaces and tabs around a field; blank lines (skipped, as
 * numpy.loadtxt and pandas do); header lines to skip, or one auto-detected (the first non-blank line
 * when none of its fields is a number: a first row with one bad field is reported, not dropped);
 * gzip-compressed files (zlib reads both forms). Numbers are parsed in the "C" locale whatever the
 * process's locale is, so "1.5" is one and a half everywhere.
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
#include <zlib.h>

#include "tide_data.h"

#define CSV_READ_CHUNK (1u << 20)
#define FIELD_SHOWN_MAX 40

void tide_csv_options_init(tide_csv_options *opts)
{
    if (!opts)
        return;
    opts->delimiter = ',';
    opts->header = -1;
    opts->dtype = TIDE_FLOAT32;
}

/* ---------------------------------------------------------------- the file in memory */

/* Reads the whole (possibly compressed) file into a malloc'd, NUL-terminated buffer. */
static tide_status read_whole_file(const char *path, char **out, size_t *len, tide_error *err)
{
    errno = 0;
    gzFile gz = gzopen(path, "rbe");
    if (!gz)
        return tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT,
                              "cannot open CSV file %s: %s", path, errno ? strerror(errno) : "out of memory");
    gzbuffer(gz, 256u << 10);
    size_t cap = CSV_READ_CHUNK, n = 0;
    char *buf = malloc(cap + 1);
    tide_status st = TIDE_OK;
    for (;;) {
        if (!buf) {
            st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory reading the file", path);
            break;
        }
        if (n == cap) {
            char *bigger = cap <= SIZE_MAX / 2 - 1 ? realloc(buf, cap * 2 + 1) : NULL;
            if (!bigger) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t want = cap - n < CSV_READ_CHUNK ? cap - n : CSV_READ_CHUNK;
        int r = gzread(gz, buf + n, (unsigned)want);
        if (r < 0) {
            int code;
            const char *msg = gzerror(gz, &code);
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot read CSV file %s: %s", path,
                                code == Z_ERRNO ? strerror(errno) : msg);
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    gzclose(gz);
    if (st != TIDE_OK) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return TIDE_OK;
}

/* ---------------------------------------------------------------- fields */

/* The reader's state: where it is, what it has collected. */
typedef struct csv_reader {
    const char *path;
    tide_csv_options opts;
    locale_t c_locale;
    int64_t line;          /* current line number, from 1 */
    int64_t columns;       /* of the first data row; 0 before it */
    int64_t columns_line;  /* where that row was */
    int64_t rows;
    unsigned char *values; /* rows * columns elements of opts.dtype */
    size_t count, cap;     /* elements */
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

static tide_status grow_values(csv_reader *r)
{
    size_t esize = tide_dtype_size(r->opts.dtype);
    size_t cap = r->cap ? r->cap * 2 : 1024;
    unsigned char *bigger = cap <= SIZE_MAX / esize ? realloc(r->values, cap * esize) : NULL;
    if (!bigger)
        return tide_error_set(r->err, TIDE_RESOURCE_EXHAUSTED, "%s line %lld: out of memory", r->path,
                              (long long)r->line);
    r->values = bigger;
    r->cap = cap;
    return TIDE_OK;
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
    if (r->count == r->cap && grow_values(r) != TIDE_OK)
        return TIDE_RESOURCE_EXHAUSTED;
    void *slot = r->values + r->count * tide_dtype_size(r->opts.dtype);
    tide_status st = parse_value(r, field, len, column, slot);
    if (st == TIDE_OK)
        r->count++;
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

/* Walks the lines of text: skips the header lines, detects one if asked, reads the rows. */
static tide_status read_lines(csv_reader *r, char *text, size_t len)
{
    char *end_of_text = text + len;
    bool detect_header = r->opts.header == -1;
    for (char *p = text; p < end_of_text; r->line++) {
        char *nl = memchr(p, '\n', (size_t)(end_of_text - p));
        char *line_end = nl ? nl : end_of_text;
        char *next = nl ? nl + 1 : end_of_text;
        if (line_end > p && line_end[-1] == '\r')
            line_end--;
        bool skip = r->line <= r->opts.header || line_is_blank(p, line_end);
        if (!skip && detect_header) {
            detect_header = false;
            bool any_number = false;
            for_each_field(r, p, line_end, note_number, &any_number);
            skip = !any_number;
        }
        if (!skip) {
            tide_status st = read_row(r, p, line_end);
            if (st != TIDE_OK)
                return st;
        }
        p = next;
    }
    return TIDE_OK;
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

static tide_tensor *make_tensor(csv_reader *r)
{
    if (!r->rows) {
        tide_error_set(r->err, TIDE_INVALID_ARGUMENT, "%s: no data rows", r->path);
        return NULL;
    }
    tide_shape shape = tide_shape_matrix(r->rows, r->columns);
    return tide_tensor_new_copy(r->opts.dtype, &shape, r->values,
                                r->count * tide_dtype_size(r->opts.dtype), r->err);
}

tide_tensor *tide_read_csv(const char *path, const tide_csv_options *opts, tide_error *err)
{
    csv_reader r = {.path = path, .line = 1, .err = err};
    tide_csv_options_init(&r.opts);
    if (opts)
        r.opts = *opts;
    if (!path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_read_csv: path is NULL");
        return NULL;
    }
    if (check_options(path, &r.opts, err) != TIDE_OK)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    if (read_whole_file(path, &text, &len, err) != TIDE_OK)
        return NULL;
    tide_tensor *t = NULL;
    r.c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!r.c_locale)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: cannot create the C locale", path);
    else if (read_lines(&r, text, len) == TIDE_OK)
        t = make_tensor(&r);
    if (r.c_locale)
        freelocale(r.c_locale);
    free(r.values);
    free(text);
    return t;
}
