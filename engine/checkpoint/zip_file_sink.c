/* zip_file_sink.c — the output of an archive libzip writes (zip_file_sink.h): a writable libzip source
 * (zip_source_function) over an open file. libzip hands it the archive 8 KB at a time (zip_close's
 * copy buffer), each chunk read from the tensors and CRC-32'd on the calling thread; the sink gathers
 * the chunks into BUFFER_SIZE buffers, and a writer thread of its own pwrite()s each full buffer while
 * libzip fills the next, so that the kernel's copy into the page cache overlaps the reading and the
 * CRC instead of following them. Nothing holds the whole archive in memory (NUM_BUFFERS buffers).
 *
 * libzip writes sequentially except after each entry's data, when it seeks back to rewrite that entry's
 * local header (now with its CRC) and returns to the end. A seek ends the buffer being filled; buffers
 * are written in the order they were filled (one writer, FIFO), so a rewritten header lands after the
 * bytes it replaces. The ring:
 *
 *   filling (producer: libzip's thread)  ->  queued (count of them: `queued`)  ->  written (writer)
 *
 * buffers[head] is the one being filled; the `queued` buffers before it, from tail on, wait for the
 * writer; the producer waits when every buffer is queued. A failed write is remembered (errno) and
 * the rest are skipped; the commit reports it. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zip_file_sink.h"

#define BUFFER_SIZE (1u << 20)
#define NUM_BUFFERS 4

typedef struct sink_buffer {
    char *data;
    size_t len;
    zip_uint64_t offset; /* in the file */
} sink_buffer;

typedef struct sink {
    int fd;
    int *write_errno;         /* the caller's */
    zip_error_t error;
    zip_uint64_t position;    /* where the next byte libzip writes goes */
    zip_uint64_t end;         /* the file's length so far */
    sink_buffer buffers[NUM_BUFFERS];
    int head, tail, queued;   /* the ring (above); guarded by lock */
    bool writer_running, stopping, discard;
    int failed;               /* errno of a failed pwrite; guarded by lock */
    pthread_t writer;
    pthread_mutex_t lock;
    pthread_cond_t changed;   /* a buffer was queued or written, or the writer should stop */
} sink;

/* ---------------------------------------------------------------- the writer thread */

static int pwrite_all(int fd, const char *p, size_t n, zip_uint64_t offset)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)offset);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
        offset += (zip_uint64_t)w;
    }
    return 0;
}

static void *writer_main(void *arg)
{
    sink *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->queued && !s->stopping)
            pthread_cond_wait(&s->changed, &s->lock);
        if (!s->queued)
            break; /* stopping, and everything queued is written */
        sink_buffer *b = &s->buffers[s->tail];
        bool skip = s->failed || s->discard;
        pthread_mutex_unlock(&s->lock);
        int failed = skip ? 0 : pwrite_all(s->fd, b->data, b->len, b->offset);
        pthread_mutex_lock(&s->lock);
        if (failed && !s->failed)
            s->failed = failed;
        b->len = 0;
        s->tail = (s->tail + 1) % NUM_BUFFERS;
        s->queued--;
        pthread_cond_broadcast(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Ends the writer once what is queued is written (or dropped, with discard). */
static void stop_writer(sink *s, bool discard)
{
    if (!s->writer_running)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    s->discard = discard;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->writer, NULL);
    s->writer_running = false;
}

/* ---------------------------------------------------------------- the producer side */

/* Queues the buffer being filled (if it holds anything) and waits for a free one. */
static void queue_filled(sink *s)
{
    if (!s->buffers[s->head].len)
        return;
    pthread_mutex_lock(&s->lock);
    s->queued++;
    s->head = (s->head + 1) % NUM_BUFFERS;
    pthread_cond_broadcast(&s->changed);
    while (s->queued == NUM_BUFFERS)
        pthread_cond_wait(&s->changed, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static zip_int64_t sink_write(sink *s, const char *data, zip_uint64_t len)
{
    zip_uint64_t done = 0;
    while (done < len) {
        sink_buffer *b = &s->buffers[s->head];
        if (!b->len)
            b->offset = s->position;
        size_t n = BUFFER_SIZE - b->len < len - done ? BUFFER_SIZE - b->len : (size_t)(len - done);
        memcpy(b->data + b->len, data + done, n);
        b->len += n;
        done += n;
        s->position += n;
        if (b->len == BUFFER_SIZE)
            queue_filled(s);
    }
    if (s->position > s->end)
        s->end = s->position;
    return (zip_int64_t)len;
}

static zip_int64_t sink_seek(sink *s, void *data, zip_uint64_t len)
{
    zip_int64_t to = zip_source_seek_compute_offset(s->position, s->end, data, len, &s->error);
    if (to < 0)
        return -1;
    if ((zip_uint64_t)to != s->position)
        queue_filled(s); /* the next write starts a buffer of its own at `to` */
    s->position = (zip_uint64_t)to;
    return 0;
}

static zip_int64_t sink_begin(sink *s)
{
    s->position = s->end = 0;
    s->stopping = s->discard = false;
    s->failed = 0;
    if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
        zip_error_set(&s->error, ZIP_ER_MEMORY, 0);
        return -1;
    }
    s->writer_running = true;
    return 0;
}

/* Writes what is left, waits for the writer; fails with the errno of a failed write. */
static zip_int64_t sink_commit(sink *s)
{
    queue_filled(s);
    stop_writer(s, false);
    if (s->failed) {
        *s->write_errno = s->failed;
        zip_error_set(&s->error, ZIP_ER_WRITE, s->failed);
        return -1;
    }
    return 0;
}

static zip_int64_t sink_callback(void *user, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    sink *s = user;
    switch (cmd) {
    case ZIP_SOURCE_SUPPORTS:
        return ZIP_SOURCE_SUPPORTS_WRITABLE;
    case ZIP_SOURCE_STAT: { /* an empty file: the archive starts from nothing (ZIP_TRUNCATE) */
        zip_stat_t *st = ZIP_SOURCE_GET_ARGS(zip_stat_t, data, len, &s->error);
        if (!st)
            return -1;
        zip_stat_init(st);
        st->size = 0;
        st->valid |= ZIP_STAT_SIZE;
        return 0;
    }
    case ZIP_SOURCE_OPEN:
    case ZIP_SOURCE_CLOSE:
    case ZIP_SOURCE_REMOVE:
    case ZIP_SOURCE_READ: /* nothing to read back: the archive is new */
    case ZIP_SOURCE_TELL:
        return 0;
    case ZIP_SOURCE_SEEK:
        return zip_source_seek_compute_offset(0, 0, data, len, &s->error) < 0 ? -1 : 0;
    case ZIP_SOURCE_BEGIN_WRITE:
        return sink_begin(s);
    case ZIP_SOURCE_WRITE:
        return sink_write(s, data, len);
    case ZIP_SOURCE_TELL_WRITE:
        return (zip_int64_t)s->position;
    case ZIP_SOURCE_SEEK_WRITE:
        return sink_seek(s, data, len);
    case ZIP_SOURCE_COMMIT_WRITE:
        return sink_commit(s);
    case ZIP_SOURCE_ROLLBACK_WRITE:
        stop_writer(s, true);
        return 0;
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&s->error, data, len);
    case ZIP_SOURCE_FREE:
        stop_writer(s, true);
        for (int i = 0; i < NUM_BUFFERS; i++)
            free(s->buffers[i].data);
        pthread_cond_destroy(&s->changed);
        pthread_mutex_destroy(&s->lock);
        zip_error_fini(&s->error);
        free(s);
        return 0;
    default:
        zip_error_set(&s->error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
}

zip_source_t *tide__zip_file_sink_new(int fd, int *write_errno, zip_error_t *error)
{
    *write_errno = 0;
    sink *s = calloc(1, sizeof *s);
    bool ok = s != NULL;
    for (int i = 0; ok && i < NUM_BUFFERS; i++)
        ok = (s->buffers[i].data = malloc(BUFFER_SIZE)) != NULL;
    if (!ok) {
        for (int i = 0; s && i < NUM_BUFFERS; i++)
            free(s->buffers[i].data);
        free(s);
        zip_error_set(error, ZIP_ER_MEMORY, 0);
        return NULL;
    }
    s->fd = fd;
    s->write_errno = write_errno;
    zip_error_init(&s->error);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    zip_source_t *src = zip_source_function_create(sink_callback, s, error);
    if (!src)
        sink_callback(s, NULL, 0, ZIP_SOURCE_FREE);
    return src;
}
