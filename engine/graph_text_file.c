/* graph_text_file.c — a graph text file into a graph (tide_graph_extend_file): the file is read whole
 * and handed to the graph text reader (graph_text.c), whose errors then name the file and line.
 *
 * What a file cannot do: be larger than the cap (max_bytes, else tide_input_max_bytes: a regular
 * file is refused by its size before anything is read, a pipe or device when the cap is passed), or
 * hold a NUL byte (refused in the chunk where it is read, so `:load /dev/zero` fails at once rather
 * than buffering gigabytes of zeros). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define TEXT_READ_CHUNK ((size_t)1 << 20)

static tide_status too_large(const char *path, uint64_t max_bytes, tide_error *err)
{
    char cap[32];
    return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,
                          "%s: the graph text file holds more than %s, " TIDE_INPUT_CAP_HINT,
                          path, tide_format_bytes(max_bytes, cap, sizeof cap));
}

/* The number of the line that p (in text) is on, from 1. */
static size_t count_lines(const char *text, const char *p)
{
    size_t line = 1;
    for (const char *nl = text; (nl = memchr(nl, '\n', (size_t)(p - nl))); nl++)
        line++;
    return line;
}

/* Reads the rest of fd into a NUL-terminated malloc'd *text, refusing NUL bytes and more than
 * max_bytes. size_hint: the file's size when it is a regular file, else 0. */
static tide_status read_text(int fd, const char *path, uint64_t max_bytes, size_t size_hint, char **text,
                             tide_error *err)
{
    size_t len = 0, cap = size_hint ? size_hint + 1 : TEXT_READ_CHUNK;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf)
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory reading the file", path);
        if (len == cap) {
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger)
                free(buf);
            buf = bigger;
            cap *= 2;
            continue;
        }
        ssize_t r = read(fd, buf + len, cap - len < TEXT_READ_CHUNK ? cap - len : TEXT_READ_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        tide_status st = TIDE_OK;
        const char *nul = r > 0 ? memchr(buf + len, 0, (size_t)r) : NULL;
        if (r < 0)
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: read error: %s", path, strerror(errno));
        else if (nul)
            st = tide_error_set(err, TIDE_INVALID_ARGUMENT,
                                "%s line %zu: a NUL byte, which no text file holds: this is not a graph text file",
                                path, count_lines(buf, nul));
        else if (len + (size_t)r > max_bytes)
            st = too_large(path, max_bytes, err);
        if (st != TIDE_OK) {
            free(buf);
            return st;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = 0;
    *text = buf;
    return TIDE_OK;
}

tide_status tide_graph_extend_file(tide_graph *g, const char *path, uint64_t max_bytes, tide_error *err)
{
    if (!g || !path)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_graph_extend_file: %s is NULL",
                              g ? "path" : "the graph");
    if (!max_bytes && tide_input_max_bytes(&max_bytes, err) != TIDE_OK)
        return TIDE_INVALID_ARGUMENT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT, "%s: %s", path,
                              strerror(errno));
    struct stat st;
    bool stated = fstat(fd, &st) == 0;
    bool regular = stated && S_ISREG(st.st_mode);
    tide_status status = TIDE_OK;
    char *text = NULL;
    if (stated && S_ISDIR(st.st_mode))
        status = tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: it is a directory, not a graph text file",
                                path);
    else if (regular && (uint64_t)st.st_size > max_bytes)
        status = too_large(path, max_bytes, err);
    else
        status = read_text(fd, path, max_bytes, regular ? (size_t)st.st_size : 0, &text, err);
    close(fd);
    if (status == TIDE_OK)
        status = tide__graph_extend_text_from(g, text, path, err);
    free(text);
    return status;
}
