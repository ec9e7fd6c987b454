/* device_copy.c — copies of tensors between memory spaces (tide_device.h): host to device, device to
 * host, device to device, asynchronous on the devices' copy streams, with a callback when done, and
 * waiting versions on top. The _Recv kernel uses them for every transfer into or out of an
 * accelerator (cross-device edges, feeds, fetches: the plan makes the transfers), the executor for
 * the host copies observers get (timed in traced steps, as the _Recv's are), and programs through tide_tensor_to_host and
 * tide_engine_copy_to_device.
 *
 * Ordering: a copy out of a device waits (through the device's compute_done event, recorded on its
 * compute stream when the copy is asked for) for the work already queued there, so on a device whose
 * kernels run in stream order the copy reads the finished value; a copy into a device runs on the
 * destination's host_to_device stream and the tensor is handed over only when it ran. Between devices
 * of one type the source's device_to_device stream copies directly; between types (a GPU and the
 * simulated device) the tensor goes through host memory, in two copies. The source is held until
 * the copy has run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct copy_job {
    tide_tensor *src;            /* held until the copy ran */
    tide_tensor *dst;            /* the copy (handed to done) */
    tide_device *final;          /* two hops: where the host copy goes next; NULL otherwise */
    tide_copy_done done;
    void *arg;
    tide_device_span *span;      /* a traced _Recv's: which stream ran the copy, and when; else NULL */
} copy_job;

static bool in_host_memory(const tide_tensor *t)
{
    return !t->buf->type || t->buf->type->host_visible;
}

bool tide_device_can_read(const tide_device *d, const tide_tensor *t)
{
    if (t == tide__dead)
        return true;
    return in_host_memory(t) ? !d || d->host_visible : t->buf->device == d;
}

static void fail_job(copy_job *job, tide_status st, const char *message)
{
    tide_copy_done done = job->done;
    void *arg = job->arg;
    tide_tensor_release(job->src);
    tide_tensor_release(job->dst);
    free(job);
    done(arg, st, NULL, message);
}

/* On the copy's stream, just before the copy (traced copies only). */
static void copy_started(void *p)
{
    copy_job *job = p;
    job->span->start_ns = tide__now_ns();
}

static void copy_finished(void *p)
{
    copy_job *job = p;
    tide_tensor *dst = job->dst;
    tide_device_span *span = job->span;
    tide_device *next = job->final;
    tide_copy_done done = job->done;
    void *arg = job->arg;
    tide_tensor_release(job->src);
    free(job);
    if (span && span->start_ns) /* written before done: the step reads it once the _Recv completed */
        span->end_ns = tide__now_ns();
    if (next) { /* the first hop of a copy between device types (the one timed): from host memory on */
        tide_tensor_copy_to_device_async(dst, next, done, arg);
        tide_tensor_release(dst);
        return;
    }
    done(arg, TIDE_OK, dst, NULL);
}

/* A destination tensor in d's memory (NULL d: host memory no device accounts). */
static tide_tensor *allocate_on(tide_device *d, const tide_tensor *like, tide_error *err)
{
    if (!d)
        return tide__tensor_alloc(like->dtype, &like->shape, false, err);
    if (d->allocator) /* written by a copy stream: only blocks the compute stream is done with */
        return tide__device_tensor_alloc_for(d, like->dtype, &like->shape, false, err);
    return d->ops->allocate(d, like->dtype, &like->shape, false, err);
}

/* Orders work launched on `stream` (of device d) after the work already on d's compute stream. */
static tide_status after_compute(tide_device *d, tide_stream *stream, tide_error *err)
{
    if (!d->compute_done || !d->streams[TIDE_STREAM_COMPUTE])
        return TIDE_OK;
    pthread_mutex_lock(&d->event_lock);
    tide_status st = tide_event_record(d->compute_done, d->streams[TIDE_STREAM_COMPUTE], err);
    if (st == TIDE_OK)
        st = tide_stream_wait_event(stream, d->compute_done, err);
    pthread_mutex_unlock(&d->event_lock);
    return st;
}

/* The lane names of copies (tide_node_timing.stream), by kind. */
static const char *copy_lane(tide_copy_kind kind)
{
    switch (kind) {
    case TIDE_COPY_HOST_TO_DEVICE: return "copy h2d";
    case TIDE_COPY_DEVICE_TO_HOST: return "copy d2h";
    default: return "copy d2d";
    }
}

/* Launches the copy of job on stream (NULL: copies at once on this thread), then copy_finished. A
 * traced copy (job->span) first launches copy_started on the stream and names the stream's lane. */
static void launch(copy_job *job, tide_stream *stream, tide_copy_kind kind, tide_device *src_device)
{
    tide_error *err = tide_error_new();
    size_t bytes = tide_tensor_byte_size(job->src);
    void *dst = (char *)job->dst->buf->data + job->dst->offset;
    const void *src = (const char *)job->src->buf->data + job->src->offset;
    tide_status st = TIDE_OK;
    if (stream && src_device)
        st = after_compute(src_device, stream, err);
    if (!stream)
        job->span = NULL;
    if (st == TIDE_OK && job->span) {
        *job->span = (tide_device_span){.stream = copy_lane(kind), .device = stream->device->name};
        st = tide_stream_launch(stream, copy_started, job, err);
    }
    if (st == TIDE_OK && stream)
        st = tide_stream_memcpy_async(stream, kind, dst, src, bytes, err);
    else if (st == TIDE_OK && bytes)
        memcpy(dst, src, bytes);
    if (st == TIDE_OK && stream)
        st = tide_stream_launch(stream, copy_finished, job, err);
    else if (st == TIDE_OK)
        copy_finished(job);
    if (st != TIDE_OK)
        fail_job(job, st, tide_error_message(err));
    tide_error_free(err);
}

void tide_tensor_copy_to_device_async(const tide_tensor *src, tide_device *dst, tide_copy_done done, void *arg)
{
    tide__tensor_copy_to_device_timed(src, dst, NULL, done, arg);
}

void tide__tensor_copy_to_device_timed(const tide_tensor *src, tide_device *dst, tide_device_span *span,
                                       tide_copy_done done, void *arg)
{
    bool from_host = in_host_memory(src), to_host = !dst || dst->host_visible;
    if (src == tide__dead || (from_host && to_host)) {
        done(arg, TIDE_OK, tide_tensor_retain((tide_tensor *)src), NULL);
        return;
    }
    tide_device *from = src->buf->device;
    if (!from_host && !to_host && from == dst) { /* already there */
        done(arg, TIDE_OK, tide_tensor_retain((tide_tensor *)src), NULL);
        return;
    }
    tide_error *err = tide_error_new();
    copy_job *job = NULL;
    if (src->dtype == TIDE_STRING)
        tide_error_set(err, TIDE_UNIMPLEMENTED, "string tensors do not go to device memory (%s)",
                       dst ? dst->name : "host");
    else if (!(job = calloc(1, sizeof *job)))
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    if (job) {
        *job = (copy_job){.src = tide_tensor_retain((tide_tensor *)src), .done = done, .arg = arg, .span = span};
        bool two_hops = !from_host && !to_host && from->ops != dst->ops;
        if (two_hops)
            job->final = dst;
        job->dst = allocate_on(two_hops ? NULL : dst, src, err);
    }
    if (!job || !job->dst) {
        tide_status st = tide_error_code(err) != TIDE_OK ? tide_error_code(err) : TIDE_RESOURCE_EXHAUSTED;
        if (job)
            fail_job(job, st, tide_error_message(err));
        else
            done(arg, st, NULL, tide_error_message(err));
        tide_error_free(err);
        return;
    }
    tide_error_free(err);
    if (from_host) /* into the device */
        launch(job, dst->streams[TIDE_STREAM_HOST_TO_DEVICE], TIDE_COPY_HOST_TO_DEVICE, NULL);
    else if (to_host || job->final) /* out of the device */
        launch(job, from->streams[TIDE_STREAM_DEVICE_TO_HOST], TIDE_COPY_DEVICE_TO_HOST, from);
    else
        launch(job, from->streams[TIDE_STREAM_DEVICE_TO_DEVICE], TIDE_COPY_DEVICE_TO_DEVICE, from);
}

/* ---------------------------------------------------------------- waiting for a copy */

typedef struct copy_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    tide_status status;
    tide_tensor *copy;
    char *message;
} copy_wait;

static void wake(void *arg, tide_status status, tide_tensor *copy, const char *message)
{
    copy_wait *w = arg;
    pthread_mutex_lock(&w->lock);
    w->status = status;
    w->copy = copy;
    w->message = message ? tide__strdup(message) : NULL;
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* tide_tensor_copy_to_device, its copy timed in span when not NULL (tide__tensor_copy_to_device_timed). */
static tide_tensor *copy_and_wait(const tide_tensor *src, tide_device *dst, tide_device_span *span, tide_error *err)
{
    copy_wait w = {.done = false};
    if (src && src != tide__dead && !in_host_memory(src))
        tide__device_count_host_wait(src->buf->device);
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    tide__tensor_copy_to_device_timed(src, dst, span, wake, &w);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    if (w.status != TIDE_OK)
        tide_error_set(err, w.status, "%s", w.message ? w.message : "the copy failed");
    free(w.message);
    return w.copy;
}

tide_tensor *tide_tensor_copy_to_device(const tide_tensor *src, tide_device *dst, tide_error *err)
{
    return copy_and_wait(src, dst, NULL, err);
}

tide_tensor *tide_tensor_to_host(const tide_tensor *t, tide_error *err)
{
    if (!t) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "no tensor (NULL)");
        return NULL;
    }
    return tide_tensor_copy_to_device(t, NULL, err);
}

tide_tensor *tide_engine_copy_to_device(tide_engine *e, const tide_tensor *t, int i, tide_error *err)
{
    if (!e || !t || i < 0 || i >= e->num_devices) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "copy to device %d: %s", i,
                       !e || !t ? "no engine or tensor (NULL)" : "no such device");
        return NULL;
    }
    return tide_tensor_copy_to_device(t, &e->devices[i], err);
}

tide_tensor *tide__tensor_for_host(const tide_tensor *t, const tide_node *node, tide_device_span *span)
{
    tide_error *err = tide_error_new();
    tide_tensor *host = copy_and_wait(t, NULL, span, err);
    if (!host)
        fprintf(stderr, "tide: an observer does not see the output of node '%s': %s\n", node ? node->name : "?",
                tide_error_message(err));
    tide_error_free(err);
    return host;
}
