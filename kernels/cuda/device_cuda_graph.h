/* device_cuda_graph.h — the gpu device type's capture functions (device_cuda_graph.c) for its table
 * in device_cuda.c. Never run on a GPU yet. */
#ifndef TIDE_DEVICE_CUDA_GRAPH_H
#define TIDE_DEVICE_CUDA_GRAPH_H

#include "../../engine/tide_device.h"

tide_status tide__gpu_capture_begin(tide_device *d, void *stream, tide_error *err);
void *tide__gpu_capture_end(tide_device *d, void *stream, tide_error *err);
tide_status tide__gpu_graph_launch(tide_device *d, void *graph, void *stream, tide_error *err);
tide_status tide__gpu_graph_result(tide_device *d, void *graph, tide_error *err);
void tide__gpu_graph_free(tide_device *d, void *graph);

#endif
