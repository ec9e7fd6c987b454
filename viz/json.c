/* json.c — the JSON text builder of json.h: a growing buffer, automatic commas, escaped strings
 * (valid UTF-8 out whatever bytes come in). */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tide_json_init(tide_json *j)
{
    memset(j, 0, sizeof *j);
}

void tide_json_free(tide_json *j)
{
    if (!j)
        return;
    free(j->p);
    tide_json_init(j);
}

bool tide_json_failed(const tide_json *j)
{
    return j->failed;
}

static void fail(tide_json *j)
{
    j->failed = true;
}

static void put(tide_json *j, const char *s, size_t n)
{
    if (j->failed)
        return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *p = realloc(j->p, cap);
        if (!p) {
            fail(j);
            return;
        }
        j->p = p;
        j->cap = cap;
    }
    memcpy(j->p + j->len, s, n);
    j->len += n;
    j->p[j->len] = '\0';
}

static void puts_(tide_json *j, const char *s)
{
    put(j, s, strlen(s));
}

/* Before any value: the comma, and checks that a value may come here. */
static void before_value(tide_json *j)
{
    if (j->failed)
        return;
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0) {
        if (j->len > 0)
            fail(j); /* a second top-level value */
        return;
    }
    if (j->is_object[j->depth]) {
        fail(j); /* a member without a key */
        return;
    }
    if (j->has_items[j->depth])
        put(j, ",", 1);
    j->has_items[j->depth] = true;
}

static void begin(tide_json *j, bool object)
{
    before_value(j);
    if (j->failed)
        return;
    if (j->depth == TIDE_JSON_MAX_DEPTH) {
        fail(j);
        return;
    }
    j->depth++;
    j->has_items[j->depth] = false;
    j->is_object[j->depth] = object;
    put(j, object ? "{" : "[", 1);
}

static void end(tide_json *j, bool object)
{
    if (j->failed)
        return;
    if (j->depth == 0 || j->is_object[j->depth] != object || j->after_key) {
        fail(j);
        return;
    }
    j->depth--;
    put(j, object ? "}" : "]", 1);
}

void tide_json_begin_object(tide_json *j) { begin(j, true); }
void tide_json_end_object(tide_json *j) { end(j, true); }
void tide_json_begin_array(tide_json *j) { begin(j, false); }
void tide_json_end_array(tide_json *j) { end(j, false); }

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

static void put_escaped(tide_json *j, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    put(j, "\"", 1);
    size_t i = 0;
    while (i < n && !j->failed) {
        unsigned char c = s[i];
        char esc[8];
        size_t k = utf8_len(s + i, n - i);
        if (k == 0) {
            puts_(j, "\\ufffd");
            i++;
        } else if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(j, esc, 2);
            i++;
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            puts_(j, esc);
            i++;
        } else if (k == 3 && c == 0xe2 && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
            puts_(j, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029");
            i += 3;
        } else {
            put(j, str + i, k);
            i += k;
        }
    }
    put(j, "\"", 1);
}

void tide_json_key(tide_json *j, const char *key)
{
    if (j->failed)
        return;
    if (j->depth == 0 || !j->is_object[j->depth] || j->after_key || !key) {
        fail(j);
        return;
    }
    if (j->has_items[j->depth])
        put(j, ",", 1);
    j->has_items[j->depth] = true;
    put_escaped(j, key, strlen(key));
    put(j, ":", 1);
    j->after_key = true;
}

void tide_json_string_n(tide_json *j, const char *s, size_t n)
{
    before_value(j);
    if (s)
        put_escaped(j, s, n);
    else
        puts_(j, "null");
}

void tide_json_string(tide_json *j, const char *s)
{
    tide_json_string_n(j, s, s ? strlen(s) : 0);
}

void tide_json_int(tide_json *j, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    before_value(j);
    puts_(j, buf);
}

void tide_json_double(tide_json *j, double v)
{
    char buf[40];
    if (isnan(v))
        snprintf(buf, sizeof buf, "\"NaN\"");
    else if (isinf(v))
        snprintf(buf, sizeof buf, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, sizeof buf, "%.0f", v);
    else {
        snprintf(buf, sizeof buf, "%.15g", v); /* the shortest of 15 or 17 digits that reads back */
        if (strtod(buf, NULL) != v)
            snprintf(buf, sizeof buf, "%.17g", v);
    }
    before_value(j);
    puts_(j, buf);
}

void tide_json_bool(tide_json *j, bool v)
{
    before_value(j);
    puts_(j, v ? "true" : "false");
}

void tide_json_null(tide_json *j)
{
    before_value(j);
    puts_(j, "null");
}

void tide_json_raw(tide_json *j, const char *json)
{
    before_value(j);
    puts_(j, json ? json : "null");
}

char *tide_json_take(tide_json *j, size_t *len)
{
    if (j->failed || j->depth != 0 || j->after_key || !j->p) {
        tide_json_free(j);
        return NULL;
    }
    char *p = j->p;
    if (len)
        *len = j->len;
    tide_json_init(j);
    return p;
}

char *tide_json_quote(const char *s)
{
    tide_json j;
    tide_json_init(&j);
    tide_json_string(&j, s);
    return tide_json_take(&j, NULL);
}
