/* tide.h — the public C API of the tide engine, all of it: includes the headers split by concern.
 *
 *   tide_core.h      status and errors, dtypes, shapes, tensors, attrs, the engine and devices,
 *                    observers, graphs and nodes, sessions; the conventions every header follows
 *   tide_train.h     gradients, variables, initializers, optimizers
 *   tide_data.h      file readers (IDX, NPY, CSV, Fashion-MNIST) and batching
 *   tide_registry.h  the registered ops' names, help and signatures (for bindings and docs)
 *   tide_control_flow.h  conditionals and loops in a graph: cond, while_loop, closing a loop
 *   tide_debug.h     the step debugger's hook, the stopped step's view, tensor health summaries
 *   tide_queue.h     queues, queue runners and their coordinator (input pipelines)
 *
 * Writing ops and kernels is tide_op.h (it includes this header). Link with `pkg-config --libs tide`.
 */
#ifndef TIDE_H
#define TIDE_H

#include "tide_control_flow.h"
#include "tide_core.h"
#include "tide_debug.h"
#include "tide_data.h"
#include "tide_queue.h"
#include "tide_registry.h"
#include "tide_train.h"

#endif
