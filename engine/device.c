/* device.c — device names: parsing full and partial specifications (/job:NAME/replica:N/task:N/
 * device:TYPE:N and the short forms /cpu:0, gpu:1, /sim:0, /device:CPU:*), matching a partial spec
 * against a full name, printing them, and the short names people read (/cpu:1); and the accounting
 * of a device's memory. The device types themselves: device_cpu.c, device_sim.c, kernels/cuda. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool parse_index(const char *s, int *out)
{
    if (strcmp(s, "*") == 0) {
        *out = -1;
        return true;
    }
    if (!*s)
        return false;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1 << 20)
        return false;
    *out = (int)v;
    return true;
}

static bool known_type(const char *t)
{
    return strcmp(t, "cpu") == 0 || strcmp(t, "gpu") == 0 || strcmp(t, "cuda") == 0 || strcmp(t, "sim") == 0;
}

static tide_status bad(const char *text, const char *why, tide_error *err)
{
    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                          "bad device specification '%s': %s (expected e.g. /cpu:0, /gpu:1, /sim:0, "
                          "/job:worker/task:1/device:cpu:0)", text, why);
}

static tide_status parse_type_index(const char *text, char *part, tide_device_spec *out,
                                    tide_error *err)
{
    char *colon = strchr(part, ':');
    if (colon)
        *colon = 0;
    for (char *c = part; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if (!known_type(part))
        return bad(text, "unknown device type", err);
    snprintf(out->type, sizeof out->type, "%s", strcmp(part, "cuda") == 0 ? "gpu" : part);
    if (colon && !parse_index(colon + 1, &out->index))
        return bad(text, "bad device index", err);
    return TIDE_OK;
}

tide_status tide_device_spec_parse(const char *text, tide_device_spec *out, tide_error *err)
{
    memset(out, 0, sizeof *out);
    out->replica = out->task = out->index = -1;
    if (!text)
        return TIDE_OK;
    size_t len = strlen(text);
    if (len >= 256)
        return bad(text, "too long", err);
    char buf[256];
    memcpy(buf, text, len + 1);
    char *save = NULL;
    for (char *part = strtok_r(buf, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        char *colon = strchr(part, ':');
        if (!colon)
            return bad(text, "each part needs a ':'", err);
        size_t klen = (size_t)(colon - part);
        const char *val = colon + 1;
        tide_status st = TIDE_OK;
        if (klen == 3 && strncmp(part, "job", 3) == 0) {
            if (!*val || strlen(val) >= sizeof out->job)
                return bad(text, "bad job name", err);
            snprintf(out->job, sizeof out->job, "%s", val);
        } else if (klen == 7 && strncmp(part, "replica", 7) == 0) {
            if (!parse_index(val, &out->replica))
                return bad(text, "bad replica", err);
        } else if (klen == 4 && strncmp(part, "task", 4) == 0) {
            if (!parse_index(val, &out->task))
                return bad(text, "bad task", err);
        } else if (klen == 6 && strncasecmp(part, "device", 6) == 0) {
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%s", val);
            st = parse_type_index(text, tmp, out, err);
        } else {
            st = parse_type_index(text, part, out, err);
        }
        if (st != TIDE_OK)
            return st;
    }
    return TIDE_OK;
}

bool tide_device_spec_matches(const tide_device_spec *spec, const tide_device_spec *full)
{
    if (spec->job[0] && strcmp(spec->job, full->job) != 0)
        return false;
    if (spec->replica >= 0 && spec->replica != full->replica)
        return false;
    if (spec->task >= 0 && spec->task != full->task)
        return false;
    if (spec->type[0] && strcmp(spec->type, full->type) != 0)
        return false;
    if (spec->index >= 0 && spec->index != full->index)
        return false;
    return true;
}

char *tide_device_spec_format(const tide_device_spec *spec, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    if (spec->job[0])
        at += (size_t)snprintf(buf + at, size - at, "/job:%s", spec->job);
    if (spec->replica >= 0 && at < size)
        at += (size_t)snprintf(buf + at, size - at, "/replica:%d", spec->replica);
    if (spec->task >= 0 && at < size)
        at += (size_t)snprintf(buf + at, size - at, "/task:%d", spec->task);
    if (spec->type[0] && at < size) {
        if (spec->index >= 0)
            snprintf(buf + at, size - at, "/device:%s:%d", spec->type, spec->index);
        else
            snprintf(buf + at, size - at, "/device:%s:*", spec->type);
    }
    return buf;
}

char *tide_device_short_name(const char *full, char *buf, size_t size)
{
    static const char local[] = "/job:localhost/replica:0/task:0";
    const char *s = full ? full : "";
    if (strncmp(s, local, sizeof local - 1) == 0 && (s[sizeof local - 1] == '/' || !s[sizeof local - 1]))
        s += sizeof local - 1;
    size_t n = 0;
    for (const char *p = s; *p && n + 1 < size;) {
        if (strncmp(p, "device:", 7) == 0 && (p == s || p[-1] == '/'))
            p += 7;
        else
            buf[n++] = *p++;
    }
    if (size)
        buf[n] = '\0';
    return buf;
}

/* ---------------------------------------------------------------- memory accounting */

void tide__device_account(tide_device *d, int64_t bytes)
{
    long long now = atomic_fetch_add_explicit(&d->bytes_in_use, bytes, memory_order_relaxed) + bytes;
    long long peak = atomic_load_explicit(&d->peak_bytes, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&d->peak_bytes, &peak, now, memory_order_relaxed,
                                                               memory_order_relaxed))
        ;
}
