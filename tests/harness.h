/* harness.h — what every CUnit suite of tide shares: one engine per test process, tensor builders,
 * running one op both eagerly and through a graph session (the two results must agree), closeness
 * assertions, and a main() that runs the suites and exits non-zero on any failure. */
#ifndef TIDE_TEST_HARNESS_H
#define TIDE_TEST_HARNESS_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdio.h>

#include "tide.h"

/* The process-wide engine (2 threads, 1 CPU device), created on first use. */
tide_engine *th_engine(void);
/* A new engine with options o, for the caller to free. When it cannot be made, the engine's message is
 * printed and the test fails at once (a fatal assertion). */
tide_engine *th_engine_new(const tide_engine_options *o);
/* The same with 2 threads, the CPU and num_sim_devices simulated accelerators (/sim:0..), whose memory
 * is limited to device_memory_limit bytes each (0: no limit). */
tide_engine *th_sim_engine(int num_sim_devices, int64_t device_memory_limit);

/* Tensors from C arrays; dims may be NULL when rank is 0. Abort the test process on OOM only. */
tide_tensor *th_tensor(tide_dtype dt, int rank, const int64_t *dims, const void *data);
tide_tensor *th_f32(int rank, const int64_t *dims, const float *data);
tide_tensor *th_f64(int rank, const int64_t *dims, const double *data);
tide_tensor *th_i32(int rank, const int64_t *dims, const int32_t *data);
tide_tensor *th_i64(int rank, const int64_t *dims, const int64_t *data);
#define TH_DIMS(...) ((const int64_t[]){__VA_ARGS__})
/* A tensor of any dtype from doubles: bool v != 0; integers through int64 (then wrapped to the width);
 * float16/bfloat16 rounded from float; complex (v, imag * v); string the "%g" text of v. */
tide_tensor *th_from_doubles(tide_dtype dt, int rank, const int64_t *dims, const double *v, double imag);

/* Runs `op` on inputs with attrs (may be NULL): eagerly, and also as a graph (inputs fed through
 * Placeholders, outputs fetched) in a fresh session; checks the two agree exactly. Returns the status;
 * outputs[0..n) receive new references from the eager run (release them). On failure err (may be
 * NULL) has the message. */
tide_status th_run(const char *op, tide_tensor *const *inputs, int num_inputs, const tide_attrs *attrs,
                   tide_tensor **outputs, int num_outputs, tide_error *err);
/* Same, one output; NULL on failure (message printed when TIDE_TEST_VERBOSE is set). */
tide_tensor *th_run1(const char *op, tide_tensor *const *inputs, int num_inputs, const tide_attrs *attrs);

/* Asserts shape, dtype and values: |got - want| <= atol + rtol * |want| for every element
 * (exact for integers, bool and strings; NaN equals NaN). Prints the first mismatch. */
void th_assert_close_impl(const tide_tensor *got, const tide_tensor *want, double rtol, double atol,
                          const char *file, int line);
#define TH_ASSERT_CLOSE(got, want, rtol, atol) th_assert_close_impl(got, want, rtol, atol, __FILE__, __LINE__)
/* True when a and b (host-visible; NULL never matches) have the same dtype, shape and bytes. */
bool th_same_bits(const tide_tensor *a, const tide_tensor *b);
/* Asserts got has exactly these dims. */
void th_assert_shape_impl(const tide_tensor *got, int rank, const int64_t *dims, const char *file, int line);
#define TH_ASSERT_SHAPE(got, rank, dims) th_assert_shape_impl(got, rank, dims, __FILE__, __LINE__)
/* Asserts that running op fails with code and that the message contains `needle`. */
void th_assert_fails_impl(const char *op, tide_tensor *const *inputs, int n, const tide_attrs *attrs,
                          tide_status code, const char *needle, const char *file, int line);
#define TH_ASSERT_FAILS(op, inputs, n, attrs, code, needle) \
    th_assert_fails_impl(op, inputs, n, attrs, code, needle, __FILE__, __LINE__)

/* Graph-time checks. th_graph_of builds a graph from the text format (NULL, message printed, if that
 * fails); th_assert_output_shape checks the shape inferred for output `output` of node `node`;
 * th_assert_graph_fails checks that adding `line` to a graph of `base` fails with a message that
 * contains needle. */
tide_graph *th_graph_of(const char *text);
void th_assert_output_shape(tide_graph *g, const char *node, int output, int rank, const int64_t *dims);
void th_assert_graph_fails(const char *base, const char *line, const char *needle);

/* A deterministic pseudo-random double in [lo, hi) (xorshift; same sequence every run). */
double th_rand(double lo, double hi);

/* A watchdog for runs that may hang (tests/watchdog.c): between th_watch_start and th_watch_stop the
 * process is ended (status 3, with a message naming the run and every thread's state) when the run
 * is hung — for 10 s no thread of the process used CPU or was ready to run — or spinning — it used
 * more than 60 s of CPU. A slow, loaded machine does not fire it: waiting for a CPU is not hanging.
 * Not for runs that wait on something outside the process (timers, files). fmt names the run. */
void th_watch_start(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void th_watch_stop(void);
/* Changes the two limits (seconds) for the runs watched from now on; for the watchdog's own tests. */
void th_watch_limits(double hang_s, double cpu_s);

typedef struct th_test {
    const char *name;
    void (*fn)(void);
} th_test;
#define TH_TEST(fn) {#fn, fn}
#define TH_END {NULL, NULL}

/* Registers the suite, runs its tests, prints CUnit's summary and returns the exit status: 1 when any
 * test failed, else 77 (meson's SKIP) when every test that ran skipped itself, else 0.
 * $TIDE_TEST_ONLY and $TIDE_TEST_EXCEPT (comma-separated test names) choose the tests that run; a name
 * that is not a test of the suite is an error. */
int th_main(const char *suite, const th_test *tests);

/* Marks the running test as skipped (it cannot run here: a data set, a tool or a device is missing;
 * fmt says which and how to get it); the test then returns. A skip is never a pass: the suite prints
 * "skipped N of M tests: ..." and exits 77 when all its tests skipped. Tests that may skip get a meson
 * test of their own (optional_tests in tests/meson.build), so that the skip shows in meson's summary. */
void th_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
