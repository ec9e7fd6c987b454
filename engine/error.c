/* error.c — the one error model: a caller-owned tide_error receives a status code and a message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct tide_error {
    tide_status code;
    char *message;
};

tide_error *tide_error_new(void)
{
    return calloc(1, sizeof(tide_error));
}

void tide_error_free(tide_error *err)
{
    if (!err)
        return;
    free(err->message);
    free(err);
}

tide_status tide_error_code(const tide_error *err)
{
    return err ? err->code : TIDE_OK;
}

const char *tide_error_message(const tide_error *err)
{
    return err && err->message ? err->message : "";
}

void tide_error_clear(tide_error *err)
{
    if (!err)
        return;
    free(err->message);
    err->message = NULL;
    err->code = TIDE_OK;
}

tide_status tide__error_vset(tide_error *err, tide_status code, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    free(err->message);
    err->message = msg;
    err->code = code;
    return code;
}

tide_status tide_error_set(tide_error *err, tide_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tide__error_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void tide__error_prefix(tide_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char *prefix = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&prefix, fmt, ap) < 0)
        prefix = NULL;
    va_end(ap);
    if (!prefix)
        return;
    char *msg = tide__asprintf("%s: %s", prefix, err->message ? err->message : "");
    free(prefix);
    if (msg) {
        free(err->message);
        err->message = msg;
    }
}

void tide__error_copy(tide_error *dst, const tide_error *src)
{
    if (!dst || !src || dst == src)
        return;
    tide_error_set(dst, src->code, "%s", tide_error_message(src));
}

const char *tide_status_name(tide_status code)
{
    switch (code) {
    case TIDE_OK: return "OK";
    case TIDE_CANCELLED: return "CANCELLED";
    case TIDE_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case TIDE_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case TIDE_NOT_FOUND: return "NOT_FOUND";
    case TIDE_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case TIDE_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case TIDE_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case TIDE_ABORTED: return "ABORTED";
    case TIDE_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case TIDE_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case TIDE_INTERNAL: return "INTERNAL";
    case TIDE_UNAVAILABLE: return "UNAVAILABLE";
    }
    return "UNKNOWN";
}

char *tide__strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *tide__asprintf(const char *fmt, ...)
{
    char *out = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&out, fmt, ap) < 0)
        out = NULL;
    va_end(ap);
    return out;
}

int64_t tide__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
