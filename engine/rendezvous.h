/* rendezvous.h — where a Send leaves a tensor and the matching Recv picks it up (white paper §3.2.2).
 *
 * A partitioned plan replaces every edge between two devices by a Send on the source device and a
 * Recv on the destination device (one Recv per tensor and destination device). Both sides name the
 * transfer by the same key: (source device, destination device, tensor name "node:index", step id,
 * and inside a loop the frame instance and iteration); the step id is the run's unique id
 * (tide_run_info.run_id), so concurrent steps of one plan never mix, and each iteration of a loop has
 * its own key. A dead tensor (control flow) travels like any other. Whichever side comes first waits
 * in a table; the second completes the transfer.
 *
 *  - In-process, the tensor passes by reference: Recv receives the very tide_tensor Send gave (one
 *    more reference), no bytes are copied between CPU devices.
 *  - Recv is asynchronous: it gives a callback and returns at once; the callback runs when the value
 *    arrives (on the Send's thread, or immediately on the Recv's thread when the value was already
 *    there). No thread is held while a Recv waits.
 *  - Abort: tide__rendezvous_abort(step, status, message) completes every Recv of that step waiting
 *    now with the error, and makes every later Send or Recv of that step fail at once with it, so a
 *    step whose kernel failed on one device never hangs on another.
 *  - tide__rendezvous_end_step(step) forgets the step: values sent but never received are released,
 *    and the abort record is dropped. The executor calls it when a step has drained.
 *
 * Lifetimes and threads: every function is thread-safe. A callback must not call back into the
 * rendezvous for the same key. The rendezvous must outlive the steps that use it (the engine owns
 * one). A later remote rendezvous (MPI) implements the same five operations behind this interface.
 */
#ifndef TIDE_RENDEZVOUS_H
#define TIDE_RENDEZVOUS_H

#include "internal.h"

typedef struct tide_rendezvous tide_rendezvous;

typedef struct tide_rendezvous_key {
    const char *src_device;  /* full device names */
    const char *dst_device;
    const char *tensor;      /* "node:index" */
    uint64_t step;           /* tide_run_info.run_id */
    const char *frame;       /* inside a loop: the frame instance ("while:0/inner:3"); NULL or "" outside */
    int64_t iteration;       /* inside a loop: the iteration of that frame; 0 outside */
} tide_rendezvous_key;

/* Called once per Recv: status TIDE_OK with a new reference to the value (the callee owns it), or
 * the step's error (value NULL, message the abort's message). */
typedef void (*tide_recv_done)(void *arg, tide_status status, tide_tensor *value, const char *message);

tide_rendezvous *tide__rendezvous_new(void);
/* Releases whatever is still held (values never received); pending Recvs are completed with
 * TIDE_CANCELLED first. */
void tide__rendezvous_free(tide_rendezvous *r);

/* Hands value to the Recv of key (retains it; the caller keeps its own reference). Fails when the
 * step was aborted (its status and message in err), or with TIDE_ALREADY_EXISTS when key was
 * already sent in this step. */
tide_status tide__rendezvous_send(tide_rendezvous *r, const tide_rendezvous_key *key, tide_tensor *value,
                                  tide_error *err);
/* Asks for key's value: done(arg, ...) is called exactly once, possibly before this returns. */
void tide__rendezvous_recv(tide_rendezvous *r, const tide_rendezvous_key *key, tide_recv_done done, void *arg);
/* Fails the step: waiting Recvs complete with (status, message), later calls of the step fail. The
 * first abort of a step wins; status must not be TIDE_OK. */
void tide__rendezvous_abort(tide_rendezvous *r, uint64_t step, tide_status status, const char *message);
/* Forgets the step (see above). */
void tide__rendezvous_end_step(tide_rendezvous *r, uint64_t step);
/* For tests: entries currently held (values waiting for a Recv plus Recvs waiting for a value). */
int tide__rendezvous_pending(tide_rendezvous *r);

#endif
