/* step_capture.h — whole-step capture and replay (step_capture.c), between session.c (which runs
 * every step through tide__capture_run) and executor.c (which hands a capture step's outputs over).
 * docs/devices.md, "Whole-step capture", has the rules. */
#ifndef TIDE_STEP_CAPTURE_H
#define TIDE_STEP_CAPTURE_H

#include "exec.h"

typedef struct tide_step_capture tide_step_capture;

/* A session's capture state (one graph at most). NULL when out of memory. */
tide_step_capture *tide__capture_new(void);
/* Frees the graph and what it held; before the session's plans. */
void tide__capture_free(tide_step_capture *c);
/* Runs the step of a: eagerly (tide__step_run), captured, or replayed, as the rules say. on: the
 * session's and the engine's switch. */
tide_status tide__capture_run(tide_step_capture *c, bool on, tide_step_args *a, tide_step_stats **stats,
                              tide_error *err);
/* Drops the graph (the session's switch turned off). */
void tide__capture_drop(tide_step_capture *c);
void tide__capture_status(tide_step_capture *c, tide_capture_status *out);
/* executor.c, in a capture step: item it produced outs (held at their addresses for the graph). */
void tide__capture_outputs(tide_step_capture *c, const tide_exec_item *it, tide_tensor *const *outs);

#endif
