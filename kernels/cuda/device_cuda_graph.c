/* device_cuda_graph.c — capture on the gpu device type (tide_device.h, "Capture"): CUDA graphs.
 * capture_begin starts cudaStreamBeginCapture on the stream in relaxed mode (the caching allocator
 * may still call cudaMalloc meanwhile; the engine holds every captured buffer for the graph's life),
 * capture_end ends it and instantiates the graph, graph_launch is cudaGraphLaunch. CUDA records work
 * without running it (capture_runs_work is false): the engine launches the graph once after the
 * capture to run the captured step. The capture functions are looked up in the CUDA runtime that
 * device_cuda.c opened (dlopen with RTLD_NOLOAD finds it), so this file adds no link dependency.
 *
 * NEVER RUN ON A GPU: no GPU was lent while it was written. docs/devices.md, "Whole-step capture",
 * says what is expected to stand in the way (kernels that synchronise the stream fail a capture). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "../../engine/internal.h"
#include "device_cuda_graph.h"

#define GRAPH_FUNCTIONS(X)                                                                                  \
    X(cudaSetDevice, (int))                                                                                 \
    X(cudaStreamBeginCapture, (cudaStream_t, enum cudaStreamCaptureMode))                                   \
    X(cudaStreamEndCapture, (cudaStream_t, cudaGraph_t *))                                                  \
    X(cudaGraphInstantiate, (cudaGraphExec_t *, cudaGraph_t, unsigned long long))                           \
    X(cudaGraphLaunch, (cudaGraphExec_t, cudaStream_t))                                                     \
    X(cudaGraphExecDestroy, (cudaGraphExec_t))                                                              \
    X(cudaGraphDestroy, (cudaGraph_t))

static struct {
    pthread_once_t once;
    bool ok;
    const char *(*error_string)(cudaError_t);
#define FIELD(name, args) cudaError_t (*name) args;
    GRAPH_FUNCTIONS(FIELD)
#undef FIELD
} g_rt = {.once = PTHREAD_ONCE_INIT};

static void find_functions(void)
{
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
    void *lib = NULL;
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib)
        return;
    bool ok = (*(void **)&g_rt.error_string = dlsym(lib, "cudaGetErrorString")) != NULL;
#define LOAD(name, args) ok = ok && (*(void **)&g_rt.name = dlsym(lib, #name)) != NULL;
    GRAPH_FUNCTIONS(LOAD)
#undef LOAD
    g_rt.ok = ok; /* the handle stays open as long as device_cuda.c's */
}

static tide_status runtime(const tide_device *d, tide_error *err)
{
    pthread_once(&g_rt.once, find_functions);
    if (!g_rt.ok)
        return tide_error_set(err, TIDE_UNIMPLEMENTED, "%s: the CUDA runtime has no graph functions",
                              tide_device_name(d));
    cudaError_t e = g_rt.cudaSetDevice(tide_device_ordinal(d));
    return e == cudaSuccess ? TIDE_OK
                            : tide_error_set(err, TIDE_INTERNAL, "cudaSetDevice on %s: %s", tide_device_name(d),
                                             g_rt.error_string(e));
}

static tide_status failed(tide_error *err, const tide_device *d, const char *call, cudaError_t e)
{
    char name[64];
    tide_device_short_name(tide_device_name(d), name, sizeof name);
    return tide_error_set(err, e == cudaErrorMemoryAllocation ? TIDE_RESOURCE_EXHAUSTED : TIDE_INTERNAL,
                          "%s on %s: %s", call, name, g_rt.error_string(e));
}

typedef struct gpu_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
} gpu_graph;

tide_status tide__gpu_capture_begin(tide_device *d, void *stream, tide_error *err)
{
    if (runtime(d, err) != TIDE_OK)
        return tide_error_code(err);
    cudaError_t e = g_rt.cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
    return e == cudaSuccess ? TIDE_OK : failed(err, d, "cudaStreamBeginCapture", e);
}

void *tide__gpu_capture_end(tide_device *d, void *stream, tide_error *err)
{
    if (runtime(d, err) != TIDE_OK)
        return NULL;
    gpu_graph *g = calloc(1, sizeof *g);
    cudaError_t e = g_rt.cudaStreamEndCapture(stream, g ? &g->graph : &(cudaGraph_t){0});
    if (!g || e != cudaSuccess) { /* an invalidated capture (a kernel synchronised...) says so here */
        if (!g)
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        else
            failed(err, d, "cudaStreamEndCapture", e);
        if (g && g->graph)
            g_rt.cudaGraphDestroy(g->graph);
        free(g);
        return NULL;
    }
    e = g_rt.cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (e != cudaSuccess) {
        failed(err, d, "cudaGraphInstantiate", e);
        g_rt.cudaGraphDestroy(g->graph);
        free(g);
        return NULL;
    }
    return g;
}

tide_status tide__gpu_graph_launch(tide_device *d, void *graph, void *stream, tide_error *err)
{
    if (runtime(d, err) != TIDE_OK)
        return tide_error_code(err);
    cudaError_t e = g_rt.cudaGraphLaunch(((gpu_graph *)graph)->exec, stream);
    return e == cudaSuccess ? TIDE_OK : failed(err, d, "cudaGraphLaunch", e);
}

/* A kernel's fault shows when the stream is synchronised (the engine reports that error); a launch's
 * failure was returned by the launch. */
tide_status tide__gpu_graph_result(tide_device *d, void *graph, tide_error *err)
{
    TIDE_UNUSED(d), TIDE_UNUSED(graph), TIDE_UNUSED(err);
    return TIDE_OK;
}

void tide__gpu_graph_free(tide_device *d, void *graph)
{
    gpu_graph *g = graph;
    if (!g)
        return;
    tide_error *err = tide_error_new();
    if (runtime(d, err) == TIDE_OK) {
        g_rt.cudaGraphExecDestroy(g->exec);
        g_rt.cudaGraphDestroy(g->graph);
    }
    tide_error_free(err);
    free(g);
}
