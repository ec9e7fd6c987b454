/* input_limit.c — how many bytes tide takes from one input file, at most: the cap that keeps a small
 * or endless input (a gzip bomb, /dev/zero, a FIFO) from exhausting the machine. Every reader of a
 * file — the graph text (tide_graph_extend_file), the data readers (engine/data) — stops at the cap
 * with an error that names it and says how to raise it: the reader's own max_bytes option, or the
 * environment variable $TIDE_MAX_INPUT_BYTES for every reader at once. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ENV_MAX_INPUT_BYTES "TIDE_MAX_INPUT_BYTES"

/* "8G", "512M", "1073741824": digits, then an optional binary unit K, M, G or T (case-insensitive,
 * an optional "iB" or "B" after it). False when text is not such a size or it overflows. */
static bool parse_size(const char *text, uint64_t *out)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno == ERANGE)
        return false;
    static const char units[] = "KMGT";
    const char *unit = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    int shift = 0;
    if (unit) {
        shift = 10 * (int)(unit - units + 1);
        end++;
        if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
            end += 2;
        else if (*end == 'B' || *end == 'b')
            end++;
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

tide_status tide_input_max_bytes(uint64_t *max_bytes, tide_error *err)
{
    const char *env = getenv(ENV_MAX_INPUT_BYTES);
    uint64_t v = TIDE_DEFAULT_MAX_INPUT_BYTES;
    if (env && *env && (!parse_size(env, &v) || v == 0))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "$" ENV_MAX_INPUT_BYTES "='%.40s' is not a size: write a number of bytes, "
                              "or one with a unit K, M, G or T (binary: 8G is 8 GiB)",
                              env);
    if (max_bytes)
        *max_bytes = v;
    return TIDE_OK;
}

char *tide_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int unit = -1;
    for (int u = 5; u >= 0 && unit < 0; u--)
        if (bytes >= (uint64_t)1 << (10 * (u + 1)) && bytes % ((uint64_t)1 << (10 * (u + 1))) == 0)
            unit = u;
    if (unit >= 0)
        snprintf(buf, size, "%llu %s", (unsigned long long)(bytes >> (10 * (unit + 1))), units[unit]);
    else
        snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
    return buf;
}
