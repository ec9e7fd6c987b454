/* device_graph.c — capture on any device (tide_device.h): the generic calls that hand a stream's
 * capture and a recorded graph's launches to the device type's table, with an error naming the device
 * when its type cannot capture. The engine's whole-step capture (step_capture.c) uses only these. */
#include <stdlib.h>

#include "internal.h"

struct tide_device_graph {
    tide_device *device;
    void *context; /* the type's own graph */
};

bool tide_device_can_capture(const tide_device *d)
{
    const tide_device_ops *o = d ? d->ops : NULL;
    return o && o->capture_begin && o->capture_end && o->graph_launch && o->graph_result && o->graph_free;
}

static tide_status cannot(const tide_device *d, tide_error *err)
{
    return tide_error_set(err, TIDE_UNIMPLEMENTED, "%s cannot capture work into a graph (its type, %s, has no "
                          "capture functions)", d->name, d->type);
}

tide_status tide_stream_capture_begin(tide_stream *s, tide_error *err)
{
    if (!tide_device_can_capture(s->device) || !s->context)
        return cannot(s->device, err);
    return s->device->ops->capture_begin(s->device, s->context, err);
}

tide_device_graph *tide_stream_capture_end(tide_stream *s, tide_error *err)
{
    if (!tide_device_can_capture(s->device) || !s->context) {
        cannot(s->device, err);
        return NULL;
    }
    tide_device_graph *g = calloc(1, sizeof *g);
    void *context = s->device->ops->capture_end(s->device, s->context, err); /* ends the capture either way */
    if (!context || !g) {
        if (context)
            s->device->ops->graph_free(s->device, context);
        if (!g && context)
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        free(g);
        return NULL;
    }
    g->device = s->device;
    g->context = context;
    return g;
}

tide_status tide_device_graph_launch(tide_device_graph *g, tide_stream *s, tide_error *err)
{
    if (s->device != g->device)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "a graph captured on %s cannot run on a stream of %s",
                              g->device->name, s->device->name);
    return g->device->ops->graph_launch(g->device, g->context, s->context, err);
}

tide_status tide_device_graph_result(tide_device_graph *g, tide_error *err)
{
    return g->device->ops->graph_result(g->device, g->context, err);
}

void tide_device_graph_free(tide_device_graph *g)
{
    if (!g)
        return;
    g->device->ops->graph_free(g->device, g->context);
    free(g);
}
