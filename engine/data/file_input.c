/* file_input.c — the bytes of one data file, gzip-compressed or not, verified (file_input.h says what
 * a reader gets).
 *
 * Compressed files go through zlib's inflate directly, not its gzread: gzread hides a stream cut
 * short (it reports "unexpected end of file" only through gzerror, after returning the bytes it had)
 * and skips whatever follows the last member, so a cut or padded file used to load with wrong data.
 * Here inflate (windowBits 15 + 16: gzip only) checks each member's header, its CRC-32 and its length
 * trailer; at the end of a member the next bytes must be another member's magic or nothing at all;
 * running out of input anywhere before the end of a member is a truncated file. inflateGetHeader
 * tells whether the cut fell inside a header.
 *
 * Input is read in chunks of IN_BUFFER bytes into `buf`; [next, next + avail) is what is left of it.
 * An uncompressed file's bytes come from there first, then from read() straight into the caller's
 * buffer. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file_input.h"

#define IN_BUFFER (256u << 10)
#define GZIP_WINDOW (15 + 16) /* 32 KiB window, gzip wrapper only */

struct file_input {
    const char *path, *what;
    int fd;
    bool compressed;
    bool eof;            /* read() returned 0 */
    bool done;           /* the end of the data was reached and verified */
    uint64_t max_bytes;
    uint64_t delivered;  /* bytes handed to the reader */
    uint64_t file_read;  /* bytes read from the file */
    int64_t plain_size;  /* st_size of an uncompressed regular file, else -1 */
    int64_t file_size;   /* st_size of a regular file, else -1 */
    unsigned char *buf, *next;
    size_t avail;
    z_stream z;
    gz_header head;      /* head.done: the current member's header was read whole */
    bool z_ready;
};

/* ---------------------------------------------------------------- raw input */

/* Moves what is left of the buffer to its front and reads more after it; sets eof at the end. */
static tide_status refill(file_input *in, tide_error *err)
{
    if (in->avail && in->next != in->buf)
        memmove(in->buf, in->next, in->avail);
    in->next = in->buf;
    while (!in->eof && in->avail < IN_BUFFER) {
        ssize_t r = read(in->fd, in->buf + in->avail, IN_BUFFER - in->avail);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: read error: %s", in->path,
                                  strerror(errno));
        if (r == 0)
            in->eof = true;
        in->avail += (size_t)r;
        in->file_read += (uint64_t)r;
        if (in->avail) /* enough to go on with: do not wait for a pipe to fill the buffer */
            break;
    }
    return TIDE_OK;
}

/* The offset in the file of the next byte not yet consumed. */
static uint64_t file_offset(const file_input *in)
{
    return in->file_read - in->avail;
}

/* How many of want bytes may be delivered before the cap: one more than the cap allows, so that the
 * reader learns the file is too large rather than seeing it cut at the cap. */
static size_t under_cap(const file_input *in, size_t want)
{
    uint64_t left = in->max_bytes - in->delivered;
    return left >= want ? want : (size_t)left + 1;
}

static tide_status check_cap(const file_input *in, tide_error *err)
{
    return in->delivered > in->max_bytes ? file_input_too_large(in, 0, err) : TIDE_OK;
}

static tide_status read_plain(file_input *in, unsigned char *out, size_t n, size_t *got,
                              tide_error *err)
{
    while (*got < n) {
        size_t want = under_cap(in, n - *got);
        size_t take = 0;
        if (in->avail) {
            take = in->avail < want ? in->avail : want;
            memcpy(out + *got, in->next, take);
            in->next += take;
            in->avail -= take;
        } else if (!in->eof) {
            ssize_t r = read(in->fd, out + *got, want < SSIZE_MAX ? want : SSIZE_MAX);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: read error: %s", in->path,
                                      strerror(errno));
            in->eof = r == 0;
            take = (size_t)r;
            in->file_read += take;
        } else {
            in->done = true;
            return TIDE_OK;
        }
        *got += take;
        in->delivered += take;
        if (check_cap(in, err) != TIDE_OK)
            return TIDE_RESOURCE_EXHAUSTED;
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- gzip */

static tide_status start_member(file_input *in, tide_error *err)
{
    int r = in->z_ready ? inflateReset(&in->z) : inflateInit2(&in->z, GZIP_WINDOW);
    if (r != Z_OK)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: cannot start decompressing: %s",
                              in->path, r == Z_MEM_ERROR ? "out of memory" : "zlib failed");
    in->z_ready = true;
    memset(&in->head, 0, sizeof in->head); /* extra, name, comment NULL: inflate keeps none */
    inflateGetHeader(&in->z, &in->head);
    return TIDE_OK;
}

static tide_status truncated(const file_input *in, tide_error *err)
{
    if (!in->head.done)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: truncated gzip file: it ends inside a gzip header, after %llu bytes",
                              in->path, (unsigned long long)in->file_read);
    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                          "%s: truncated gzip file: it ends after %llu bytes, before the end of the "
                          "compressed data and its CRC-32/length trailer (%llu bytes decompressed)",
                          in->path, (unsigned long long)in->file_read,
                          (unsigned long long)in->delivered);
}

static tide_status corrupt(const file_input *in, int code, tide_error *err)
{
    const char *msg = in->z.msg ? in->z.msg : "";
    if (code == Z_MEM_ERROR)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory decompressing", in->path);
    if (strcmp(msg, "incorrect data check") == 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: corrupt gzip file: the CRC-32 in its trailer does not match the data",
                              in->path);
    if (strcmp(msg, "incorrect length check") == 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: corrupt gzip file: the length in its trailer does not match the data",
                              in->path);
    return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: corrupt gzip %s near byte %llu of the file: %s",
                          in->path, in->head.done ? "data" : "header",
                          (unsigned long long)file_offset(in), *msg ? msg : "inflate failed");
}

static tide_status trailing_garbage(const file_input *in, tide_error *err)
{
    uint64_t at = file_offset(in);
    if (in->file_size >= 0 && (uint64_t)in->file_size > at)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: %llu byte%s of trailing garbage after the gzip data, which end at byte "
                              "%llu (what follows is not another gzip member)",
                              in->path, (unsigned long long)((uint64_t)in->file_size - at),
                              (uint64_t)in->file_size - at == 1 ? "" : "s", (unsigned long long)at);
    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                          "%s: trailing garbage after the gzip data, which end at byte %llu (what "
                          "follows is not another gzip member)",
                          in->path, (unsigned long long)at);
}

/* After the end of a member: nothing more (the end of the data), or the magic of another member. */
static tide_status after_member(file_input *in, tide_error *err)
{
    for (;;) {
        if (in->avail < 2 && !in->eof) {
            tide_status st = refill(in, err);
            if (st != TIDE_OK)
                return st;
            continue;
        }
        if (in->avail == 0) {
            in->done = true;
            return TIDE_OK;
        }
        if (in->avail < 2 || in->next[0] != 0x1f || in->next[1] != 0x8b)
            return trailing_garbage(in, err);
        return start_member(in, err);
    }
}

static tide_status read_gzip(file_input *in, unsigned char *out, size_t n, size_t *got,
                             tide_error *err)
{
    while (*got < n && !in->done) {
        tide_status st = !in->avail && !in->eof ? refill(in, err) : TIDE_OK;
        if (st != TIDE_OK)
            return st;
        size_t want = under_cap(in, n - *got);
        in->z.next_in = in->next;
        in->z.avail_in = in->avail < UINT_MAX ? (unsigned)in->avail : UINT_MAX;
        in->z.next_out = out + *got;
        in->z.avail_out = want < UINT_MAX ? (unsigned)want : UINT_MAX;
        unsigned out_before = in->z.avail_out, in_before = in->z.avail_in;
        int r = inflate(&in->z, Z_NO_FLUSH);
        size_t produced = out_before - in->z.avail_out;
        in->next += in_before - in->z.avail_in;
        in->avail -= in_before - in->z.avail_in;
        *got += produced;
        in->delivered += produced;
        if (check_cap(in, err) != TIDE_OK)
            return TIDE_RESOURCE_EXHAUSTED;
        if (r == Z_STREAM_END) {
            if ((st = after_member(in, err)) != TIDE_OK)
                return st;
        } else if (r == Z_OK || r == Z_BUF_ERROR) { /* Z_BUF_ERROR: no progress without input */
            if (!produced && in->avail == 0 && in->eof)
                return truncated(in, err);
        } else {
            return corrupt(in, r, err);
        }
    }
    return TIDE_OK;
}

/* ---------------------------------------------------------------- the interface */

static file_input *open_failed(file_input *in, tide_error *err, tide_status code, const char *fmt,
                               const char *detail)
{
    tide_error_set(err, code, fmt, in->what, in->path, detail);
    file_input_close(in);
    return NULL;
}

file_input *file_input_open(const char *path, const char *what, uint64_t max_bytes, tide_error *err)
{
    if (!max_bytes && tide_input_max_bytes(&max_bytes, err) != TIDE_OK)
        return NULL;
    file_input *in = calloc(1, sizeof *in);
    unsigned char *buf = in ? malloc(IN_BUFFER) : NULL;
    if (!buf) {
        free(in);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot open %s %s: out of memory", what, path);
        return NULL;
    }
    *in = (file_input){.path = path, .what = what, .fd = -1, .max_bytes = max_bytes,
                       .plain_size = -1, .file_size = -1, .buf = buf, .next = buf};
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0)
        return open_failed(in, err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT,
                           "cannot open %s %s: %s", strerror(errno));
    struct stat st;
    bool stated = fstat(in->fd, &st) == 0;
    if (stated && S_ISDIR(st.st_mode))
        return open_failed(in, err, TIDE_INVALID_ARGUMENT, "cannot read %s %s: %s", "it is a directory");
    if (stated && S_ISREG(st.st_mode))
        in->file_size = st.st_size;
    while (in->avail < 2 && !in->eof) /* enough to see the gzip magic */
        if (refill(in, err) != TIDE_OK) {
            file_input_close(in);
            return NULL;
        }
    in->compressed = in->avail >= 2 && in->next[0] == 0x1f && in->next[1] == 0x8b;
    if (in->compressed && start_member(in, err) != TIDE_OK) {
        file_input_close(in);
        return NULL;
    }
    if (!in->compressed)
        in->plain_size = in->file_size;
    return in;
}

tide_status file_input_read(file_input *in, void *buf, size_t n, size_t *got, tide_error *err)
{
    *got = 0;
    if (in->done)
        return TIDE_OK;
    return in->compressed ? read_gzip(in, buf, n, got, err) : read_plain(in, buf, n, got, err);
}

tide_status file_input_skip_rest(file_input *in, uint64_t *count, tide_error *err)
{
    enum { SCRATCH = 64 << 10 };
    unsigned char *scratch = malloc(SCRATCH);
    *count = 0;
    if (!scratch)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory", in->path);
    tide_status st = TIDE_OK;
    size_t got;
    do {
        st = file_input_read(in, scratch, SCRATCH, &got, err);
        *count += got;
    } while (st == TIDE_OK && got == SCRATCH);
    free(scratch);
    return st;
}

bool file_input_is_compressed(const file_input *in) { return in->compressed; }
int64_t file_input_plain_size(const file_input *in) { return in->plain_size; }
uint64_t file_input_max_bytes(const file_input *in) { return in->max_bytes; }
const char *file_input_path(const file_input *in) { return in->path; }

tide_status file_input_too_large(const file_input *in, uint64_t wanted, tide_error *err)
{
    char cap[32], size[48] = "";
    tide_format_bytes(in->max_bytes, cap, sizeof cap);
    if (wanted)
        snprintf(size, sizeof size, "%llu bytes, ", (unsigned long long)wanted);
    return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED,
                          "%s %s holds %smore than %s%s, " TIDE_INPUT_CAP_HINT,
                          in->what, in->path, size, cap, in->compressed ? " after decompression" : "");
}

void file_input_close(file_input *in)
{
    if (!in)
        return;
    if (in->z_ready)
        inflateEnd(&in->z);
    if (in->fd >= 0)
        close(in->fd);
    free(in->buf);
    free(in);
}
