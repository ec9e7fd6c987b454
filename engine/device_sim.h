/* device_sim.h — what the simulated accelerator's files share: device_sim.c (memory, streams, events,
 * compute) and device_sim_graph.c (capture: recording a stream's kernels and replaying them). Nothing
 * else includes it. */
#ifndef TIDE_DEVICE_SIM_H
#define TIDE_DEVICE_SIM_H

#include "internal.h"

typedef struct sim_stream sim_stream;
typedef struct sim_graph sim_graph;

extern const tide_buffer_type tide__sim_memory;

/* device_sim.c: work of the device's own (a kernel, an event, a replay), which a capture allows. */
tide_status tide__sim_launch_device_work(tide_device *d, sim_stream *s, void (*fn)(void *arg), void *arg,
                                         tide_error *err);
tide_status tide__sim_stream_synchronize(tide_device *d, void *stream, tide_error *err);
/* The node whose replayed kernel faults ($TIDE_SIM_REPLAY_FAULT), or NULL. */
const char *tide__sim_replay_fault(tide_device *d);
/* The graph recording s now (NULL: none); setting one returns the previous. Under s's lock. */
sim_graph *tide__sim_stream_capture(sim_stream *s);
sim_graph *tide__sim_stream_set_capture(sim_stream *s, sim_graph *g);

/* device_sim_graph.c: on the stream's thread, after kernel k ran well in ctx: records it. */
void tide__sim_graph_record(sim_graph *g, tide_device *d, const tide_kernel_spec *k, const tide_kernel_ctx *ctx);
/* Under the stream's lock: the capture cannot be replayed, because of `why` (the first reason wins). */
void tide__sim_graph_refuse(sim_graph *g, const char *why);
/* The table's capture functions (tide_device.h). */
tide_status tide__sim_capture_begin(tide_device *d, void *stream, tide_error *err);
void *tide__sim_capture_end(tide_device *d, void *stream, tide_error *err);
tide_status tide__sim_graph_launch(tide_device *d, void *graph, void *stream, tide_error *err);
tide_status tide__sim_graph_result(tide_device *d, void *graph, tide_error *err);
void tide__sim_graph_free(tide_device *d, void *graph);

#endif
