/* device_stream.c — streams and events on any device (tide_device.h): the generic calls that hand
 * the work to the device type's table, or, for a type without streams (the CPU: whatever it is asked
 * to do is done before the call returns), do it at once, so that the copies and the executor write
 * one path for every device. Also the facts of a device that backends read, and the thread's current
 * device (the device whose memory a thread may touch while it runs that device's work). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local tide_device *current_device;

tide_device *tide_device_current(void) { return current_device; }

tide_device *tide_device_set_current(tide_device *d)
{
    tide_device *previous = current_device;
    current_device = d;
    return previous;
}

/* ---------------------------------------------------------------- facts */

const char *tide_device_name(const tide_device *d) { return d->name; }
const char *tide_device_type(const tide_device *d) { return d->type; }
int tide_device_ordinal(const tide_device *d) { return d->ordinal; }
const tide_device_ops *tide_device_get_ops(const tide_device *d) { return d->ops; }
bool tide_device_host_visible(const tide_device *d) { return d->host_visible; }
int64_t tide_device_memory_limit(const tide_device *d) { return d->memory_limit; }
void *tide_device_context(const tide_device *d) { return d->context; }
void tide_device_set_context(tide_device *d, void *context) { d->context = context; }

tide_stream *tide_device_stream(const tide_device *d, tide_stream_role role)
{
    return (int)role >= 0 && role <= TIDE_STREAM_DEVICE_TO_DEVICE ? d->streams[role] : NULL;
}

tide_device *tide_kernel_device(const tide_kernel_ctx *ctx) { return ctx->kn->device; }

tide_stream *tide_kernel_stream(const tide_kernel_ctx *ctx)
{
    return ctx->kn->device ? ctx->kn->device->streams[TIDE_STREAM_COMPUTE] : NULL;
}

/* ---------------------------------------------------------------- streams */

tide_stream *tide_stream_new(tide_device *d, tide_error *err)
{
    tide_stream *s = calloc(1, sizeof *s);
    if (!s) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    s->device = d;
    if (d->ops->stream_new && !(s->context = d->ops->stream_new(d, err))) {
        free(s);
        return NULL;
    }
    return s;
}

void tide_stream_free(tide_stream *s)
{
    if (!s)
        return;
    if (s->context)
        s->device->ops->stream_free(s->device, s->context);
    free(s);
}

tide_device *tide_stream_device(const tide_stream *s) { return s->device; }
void *tide_stream_context(const tide_stream *s) { return s->context; }

tide_status tide_stream_launch(tide_stream *s, void (*fn)(void *arg), void *arg, tide_error *err)
{
    if (s->context)
        return s->device->ops->stream_launch(s->device, s->context, fn, arg, err);
    fn(arg);
    return TIDE_OK;
}

void tide__device_count_host_wait(tide_device *d)
{
    if (d)
        atomic_fetch_add_explicit(&d->host_waits, 1, memory_order_relaxed);
}

int64_t tide_device_host_waits(const tide_device *d)
{
    return d ? atomic_load_explicit(&d->host_waits, memory_order_relaxed) : 0;
}

/* A wait for the compute stream also tells the allocator which freed blocks it has passed. */
tide_status tide_stream_synchronize(tide_stream *s, tide_error *err)
{
    if (!s->context)
        return TIDE_OK;
    tide_device *d = s->device;
    bool compute = s == d->streams[TIDE_STREAM_COMPUTE];
    uint64_t upto = compute ? tide__allocator_begin_sync(d->allocator) : 0;
    tide__device_count_host_wait(d);
    tide_status st = d->ops->stream_synchronize(d, s->context, err);
    if (compute && st == TIDE_OK)
        tide__allocator_synchronized(d->allocator, upto);
    return st;
}

tide_status tide_stream_memcpy_async(tide_stream *s, tide_copy_kind kind, void *dst, const void *src, size_t bytes,
                                     tide_error *err)
{
    if (s->context)
        return s->device->ops->memcpy_async(s->device, s->context, kind, dst, src, bytes, err);
    if (bytes)
        memcpy(dst, src, bytes);
    return TIDE_OK;
}

/* ---------------------------------------------------------------- events */

tide_event *tide_event_new(tide_device *d, tide_error *err)
{
    tide_event *e = calloc(1, sizeof *e);
    if (!e) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    e->device = d;
    if (d->ops->event_new && !(e->context = d->ops->event_new(d, err))) {
        free(e);
        return NULL;
    }
    return e;
}

void tide_event_free(tide_event *e)
{
    if (!e)
        return;
    if (e->context)
        e->device->ops->event_free(e->device, e->context);
    free(e);
}

/* An event of a type without streams is complete as soon as it is recorded: the work before it ran. */
tide_status tide_event_record(tide_event *e, tide_stream *s, tide_error *err)
{
    if (e->device != s->device)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "an event of %s recorded on a stream of %s",
                              e->device->name, s->device->name);
    return e->context ? e->device->ops->event_record(e->device, e->context, s->context, err) : TIDE_OK;
}

/* A stream may wait for an event of another device: the event's device type says how (the simulated
 * device's events are host objects any of its streams can wait for; a stream of a type without
 * streams waits on the host at once). */
tide_status tide_stream_wait_event(tide_stream *s, tide_event *e, tide_error *err)
{
    if (!e->context)
        return TIDE_OK;
    if (!s->context || s->device->ops != e->device->ops)
        return tide_event_synchronize(e, err);
    return s->device->ops->stream_wait_event(s->device, s->context, e->context, err);
}

tide_status tide_event_synchronize(tide_event *e, tide_error *err)
{
    if (!e->context)
        return TIDE_OK;
    tide__device_count_host_wait(e->device);
    return e->device->ops->event_synchronize(e->device, e->context, err);
}

bool tide_event_query(tide_event *e)
{
    return !e->context || e->device->ops->event_query(e->device, e->context);
}

tide_status tide_device_synchronize(tide_device *d, tide_error *err)
{
    if (!d->ops->synchronize)
        return TIDE_OK;
    uint64_t upto = tide__allocator_begin_sync(d->allocator);
    tide__device_count_host_wait(d);
    tide_status st = d->ops->synchronize(d, err);
    if (st == TIDE_OK)
        tide__allocator_synchronized(d->allocator, upto);
    return st;
}
