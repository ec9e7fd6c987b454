/* test_debugger.c — the engine side of the step debugger (tide_debug.h): stopping after a node, the
 * states of the other nodes at the stop, reading and overriding values (the fetched result reflects
 * the override), stepping node by node, aborting, the deadline standing still while stopped, other
 * branches running on while one is stopped, two devices (no deadlock with _Send/_Recv), a stop at one
 * iteration of a loop, detaching while callbacks run, health summaries against counts made here, the
 * non-finite check has_inf_or_nan uses, and an attached debugger leaving the executor its in-place
 * writes (the same peak memory as without one; a value written over is reported gone). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/graph_util.h"

static tide_output O(tide_node *n) { return (tide_output){n, 0}; }

static tide_node *op2(tide_graph *g, const char *op, const char *name, tide_output a, tide_output b)
{
    tide_node_builder *nb = tide_node_builder_new(g, op, name);
    tide_node_builder_add_input(nb, a);
    tide_node_builder_add_input(nb, b);
    return gu_finish(nb);
}

static float item(const tide_tensor *t) { return t ? *(const float *)tide_tensor_data(t) : NAN; }

static void sleep_ms(int ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL); }

/* A scripted debugger: stop at `stop_at` (before or after, by name; "*" with stepping), and at the stop
 * run `at_stop`, then answer `answer`. Records what it saw. */
typedef struct script {
    const char *stop_at;
    bool after;
    int64_t at_iteration;        /* -1: any */
    tide_debug_command answer;
    int steps_left;              /* answer STEP this many times, then `answer` */
    void (*at_stop)(struct script *s, tide_debug_step *step, const tide_debug_event *ev);
    tide_graph *g;
    /* seen */
    pthread_mutex_t lock;
    int checks, stops;
    char stopped_names[16][64];
    int64_t stopped_iterations[16];
    bool ok;
    int delay_ms;                /* in check: stay a while (for detaching under way) */
} script;

static bool watches_all(void *user, const tide_node *n)
{
    (void)user;
    (void)n;
    return true;
}

static bool watch_e(void *user, const tide_node *n)
{
    (void)user;
    return strcmp(tide_node_name(n), "e") == 0;
}

static tide_debug_action check(void *user, const tide_debug_event *ev)
{
    script *s = user;
    pthread_mutex_lock(&s->lock);
    s->checks++;
    pthread_mutex_unlock(&s->lock);
    if (s->delay_ms)
        sleep_ms(s->delay_ms);
    bool hit = s->stop_at && strcmp(tide_node_name(ev->node), s->stop_at) == 0 && ev->after == s->after &&
               (s->at_iteration < 0 || ev->at.iteration == s->at_iteration);
    return hit ? TIDE_DEBUG_PAUSE : TIDE_DEBUG_CONTINUE;
}

static tide_debug_command paused(void *user, tide_debug_step *step, const tide_debug_event *ev)
{
    script *s = user;
    if (s->stops < 16) {
        snprintf(s->stopped_names[s->stops], 64, "%s%s", tide_node_name(ev->node), ev->after ? "+" : "");
        s->stopped_iterations[s->stops] = ev->at.iteration;
    }
    s->stops++;
    if (s->at_stop)
        s->at_stop(s, step, ev);
    if (s->steps_left > 0) {
        s->steps_left--;
        return TIDE_DEBUG_STEP;
    }
    return s->answer;
}

static int attach(script *s)
{
    pthread_mutex_init(&s->lock, NULL);
    tide_debugger d = {.user = s, .watches = watches_all, .check = check, .paused = paused};
    tide_error *err = tide_error_new();
    int id = tide_engine_attach_debugger(th_engine(), &d, err);
    CU_ASSERT(id > 0);
    tide_error_free(err);
    return id;
}

/* x = 2, h = x * 3 (6), y = h + 1 (7), z = y * y (49), w = x - 1 (1) (an independent branch) */
typedef struct small {
    tide_graph *g;
    tide_node *x, *h, *y, *z, *w;
} small;

static small small_graph(void)
{
    small m = {tide_graph_new(), NULL, NULL, NULL, NULL, NULL};
    m.x = gu_scalar_f32(m.g, "x", 2);
    m.h = op2(m.g, "Mul", "h", O(m.x), O(gu_scalar_f32(m.g, "three", 3)));
    m.y = op2(m.g, "Add", "y", O(m.h), O(gu_scalar_f32(m.g, "one", 1)));
    m.z = op2(m.g, "Mul", "z", O(m.y), O(m.y));
    m.w = op2(m.g, "Sub", "w", O(m.x), O(gu_scalar_f32(m.g, "one_w", 1)));
    return m;
}

static small *current; /* the graph the at_stop functions look at */

/* At the stop after h: h is stopped, its producers done, its consumers waiting; its value is 6; set
 * it to 10. */
static void inspect_and_override(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    s->ok = ev->after && ev->num_outputs == 1 && item(ev->outputs[0]) == 6.0f;
    s->ok &= tide_debug_step_node_state(step, current->h) == TIDE_DEBUG_STOPPED;
    s->ok &= tide_debug_step_node_state(step, current->x) == TIDE_DEBUG_DONE;
    s->ok &= tide_debug_step_node_state(step, current->z) == TIDE_DEBUG_WAITING;
    tide_tensor *v = NULL;
    tide_exec_point at;
    s->ok &= tide_debug_step_value(step, current->h, 0, &v, &at, NULL) == TIDE_OK && item(v) == 6.0f;
    tide_tensor_release(v);
    s->ok &= tide_debug_step_value(step, current->x, 0, &v, NULL, NULL) == TIDE_OK && item(v) == 2.0f;
    tide_tensor_release(v);
    tide_error *err = tide_error_new();
    s->ok &= tide_debug_step_value(step, current->z, 0, &v, NULL, err) == TIDE_NOT_FOUND && !v;
    s->ok &= strstr(tide_error_message(err), "not been computed yet") != NULL;
    float ten = 10;
    tide_tensor *t = th_f32(0, NULL, &ten);
    s->ok &= tide_debug_step_set_value(step, current->h, 0, t, err) == TIDE_OK;
    int32_t wrong = 1;
    tide_tensor *i = th_i32(0, NULL, &wrong);
    s->ok &= tide_debug_step_set_value(step, current->h, 0, i, err) == TIDE_INVALID_ARGUMENT; /* dtype */
    s->ok &= tide_debug_step_set_value(step, current->z, 0, t, err) == TIDE_FAILED_PRECONDITION; /* not here */
    s->ok &= tide_debug_step_value(step, current->h, 0, &v, NULL, NULL) == TIDE_OK && item(v) == 10.0f;
    tide_tensor_release(v);
    tide_tensor_release(t);
    tide_tensor_release(i);
    tide_error_free(err);
}

static void test_stop_inspect_override(void)
{
    small m = small_graph();
    current = &m;
    script s = {.stop_at = "h", .after = true, .at_iteration = -1, .at_stop = inspect_and_override};
    int id = attach(&s);
    tide_session *ses = tide_session_new(th_engine(), m.g, NULL, NULL);
    tide_tensor *z = gu_fetch(ses, m.z);
    CU_ASSERT_EQUAL(s.stops, 1);
    CU_ASSERT_TRUE(s.ok);
    CU_ASSERT_EQUAL(item(z), 121.0f); /* (10 + 1)^2: the override reached the consumers */
    tide_tensor_release(z);
    tide_engine_detach_debugger(th_engine(), id);
    z = gu_fetch(ses, m.z); /* detached: no stop, the real value */
    CU_ASSERT_EQUAL(item(z), 49.0f);
    CU_ASSERT_EQUAL(s.stops, 1);
    tide_tensor_release(z);
    tide_session_free(ses);
    tide_graph_free(m.g);
}

/* Stop before x, then step: every later execution stops once, in an order where a node comes after its
 * inputs; overriding an input at a stop before its reader changes what the reader computes. */
static void override_input(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    if (!ev->after && ev->node == current->y) {
        float five = 5;
        tide_tensor *t = th_f32(0, NULL, &five);
        s->ok = tide_debug_step_set_value(step, current->h, 0, t, NULL) == TIDE_OK; /* what y reads */
        tide_tensor_release(t);
    }
}

static void test_stepping(void)
{
    small m = small_graph();
    current = &m;
    script s = {.stop_at = "h", .after = false, .at_iteration = -1, .steps_left = 100, .at_stop = override_input};
    int id = attach(&s);
    tide_session *ses = tide_session_new(th_engine(), m.g, NULL, NULL);
    tide_output fetch[2] = {O(m.z), O(m.w)};
    tide_tensor *out[2] = {0};
    CU_ASSERT_EQUAL(tide_session_run(ses, NULL, NULL, 0, fetch, 2, out, NULL, 0, NULL, NULL), TIDE_OK);
    CU_ASSERT_TRUE(s.ok);
    CU_ASSERT_EQUAL(item(out[0]), 36.0f); /* y read 5 instead of 6: (5 + 1)^2 */
    CU_ASSERT_EQUAL(item(out[1]), 1.0f);
    /* The first stop is before h; then one stop per execution that starts after it. */
    CU_ASSERT_STRING_EQUAL(s.stopped_names[0], "h");
    int y_at = -1, z_at = -1;
    for (int i = 0; i < s.stops && i < 16; i++) {
        if (strcmp(s.stopped_names[i], "y") == 0)
            y_at = i;
        if (strcmp(s.stopped_names[i], "z") == 0)
            z_at = i;
    }
    CU_ASSERT_TRUE(y_at > 0 && z_at > y_at);
    tide_engine_detach_debugger(th_engine(), id);
    for (int i = 0; i < 2; i++)
        tide_tensor_release(out[i]);
    tide_session_free(ses);
    tide_graph_free(m.g);
}

static void test_abort(void)
{
    small m = small_graph();
    script s = {.stop_at = "y", .after = true, .at_iteration = -1, .answer = TIDE_DEBUG_ABORT_RUN};
    int id = attach(&s);
    tide_session *ses = tide_session_new(th_engine(), m.g, NULL, NULL);
    tide_error *err = tide_error_new();
    tide_tensor *out = NULL;
    tide_output o = O(m.z);
    CU_ASSERT_EQUAL(tide_session_run(ses, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, err), TIDE_CANCELLED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "aborted in the debugger"));
    CU_ASSERT_PTR_NULL(out);
    tide_engine_detach_debugger(th_engine(), id);
    CU_ASSERT_EQUAL(tide_session_run(ses, NULL, NULL, 0, &o, 1, &out, NULL, 0, NULL, err), TIDE_OK);
    tide_tensor_release(out);
    tide_error_free(err);
    tide_session_free(ses);
    tide_graph_free(m.g);
}

/* A stop of 1.5 s in a run with a 1 s timeout: the clock stood still, the run succeeds. (The run's
 * own work, outside the stop, must fit in the 1 s: it takes a millisecond, and under a sanitizer on a
 * loaded machine well under a second; 150 ms was too little there.) */
static void linger(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)s, (void)step, (void)ev;
    sleep_ms(1500);
}

/* While h is stopped, the independent branch w runs to the end (waited for up to 120 s: on a loaded
 * machine under a sanitizer the worker that runs w may wait long for a CPU; a w that never ends while h
 * is stopped fails). */
static void wait_for_w(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)ev;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (tide_debug_step_node_state(step, current->w) == TIDE_DEBUG_DONE)
            break;
        sleep_ms(5);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 120);
    s->ok = tide_debug_step_node_state(step, current->w) == TIDE_DEBUG_DONE;
}

static void test_deadline_and_other_branches(void)
{
    small m = small_graph();
    current = &m;
    script s = {.stop_at = "h", .after = true, .at_iteration = -1, .at_stop = linger};
    int id = attach(&s);
    tide_session *ses = tide_session_new(th_engine(), m.g, NULL, NULL);
    tide_run_options opts = {.timeout_ms = 1000};
    tide_output fetch[2] = {O(m.z), O(m.w)};
    tide_tensor *out[2] = {0};
    tide_error *err = tide_error_new();
    tide_status st = tide_session_run(ses, &opts, NULL, 0, fetch, 2, out, NULL, 0, NULL, err);
    if (st != TIDE_OK)
        fprintf(stderr, "deadline: %s\n", tide_error_message(err));
    CU_ASSERT_EQUAL(st, TIDE_OK);
    CU_ASSERT_EQUAL(item(out[0]), 49.0f);
    for (int i = 0; i < 2; i++)
        tide_tensor_release(out[i]);
    s.at_stop = wait_for_w;
    s.ok = false;
    CU_ASSERT_EQUAL(tide_session_run(ses, NULL, NULL, 0, fetch, 2, out, NULL, 0, NULL, err), TIDE_OK);
    CU_ASSERT_TRUE(s.ok);
    for (int i = 0; i < 2; i++)
        tide_tensor_release(out[i]);
    tide_engine_detach_debugger(th_engine(), id);
    tide_error_free(err);
    tide_session_free(ses);
    tide_graph_free(m.g);
}

/* Two devices: h on /cpu:1, its consumer y on /cpu:0 (a transfer waits for h while it is stopped). */
static void test_two_devices(void)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_cpu_devices = 2;
    tide_engine *e2 = tide_engine_new(&o, NULL);
    tide_graph *g = tide_graph_new();
    tide_node *x = gu_scalar_f32(g, "x", 2);
    tide_graph_push_device(g, "/cpu:1");
    tide_node *h = op2(g, "Mul", "h", O(x), O(gu_scalar_f32(g, "three", 3)));
    tide_graph_pop_device(g);
    tide_graph_push_device(g, "/cpu:0");
    tide_node *y = op2(g, "Add", "y", O(h), O(gu_scalar_f32(g, "one", 1)));
    tide_graph_pop_device(g);
    script s = {.stop_at = "h", .after = true, .at_iteration = -1};
    pthread_mutex_init(&s.lock, NULL);
    tide_debugger d = {.user = &s, .watches = watches_all, .check = check, .paused = paused};
    int id = tide_engine_attach_debugger(e2, &d, NULL);
    tide_session *ses = tide_session_new(e2, g, NULL, NULL);
    for (int run = 0; run < 3; run++) {
        tide_tensor *v = gu_fetch(ses, y);
        CU_ASSERT_EQUAL(item(v), 7.0f);
        tide_tensor_release(v);
    }
    CU_ASSERT_EQUAL(s.stops, 3);
    tide_engine_detach_debugger(e2, id);
    tide_session_free(ses);
    tide_graph_free(g);
    tide_engine_free(e2);
}

/* A stop in the third iteration of a loop: the event and the value say iteration 2. */
static tide_status lcond(tide_graph *g, void *user, const tide_output *v, int n, tide_output *pred, tide_error *err)
{
    (void)user, (void)n, (void)err;
    *pred = O(op2(g, "Less", NULL, v[0], O(gu_scalar_f32(g, NULL, 5))));
    return TIDE_OK;
}

static tide_status lbody(tide_graph *g, void *user, const tide_output *v, int n, tide_output *next, tide_error *err)
{
    (void)user, (void)n, (void)err;
    next[0] = O(op2(g, "Add", "step", v[0], O(gu_scalar_f32(g, NULL, 1))));
    return TIDE_OK;
}

static void value_in_loop(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    tide_tensor *v = NULL;
    tide_exec_point at;
    s->ok = tide_debug_step_value(step, ev->node, 0, &v, &at, NULL) == TIDE_OK && item(v) == 3.0f &&
            at.iteration == 2 && strcmp(at.frame, "while") == 0;
    tide_tensor_release(v);
}

static void test_stop_in_loop(void)
{
    tide_graph *g = tide_graph_new();
    tide_output init = O(gu_scalar_f32(g, "zero", 0)), res;
    CU_ASSERT_EQUAL(tide_while_loop(g, lcond, lbody, NULL, &init, 1, NULL, &res, NULL), TIDE_OK);
    script s = {.stop_at = "while/step", .after = true, .at_iteration = 2, .at_stop = value_in_loop};
    int id = attach(&s);
    tide_session *ses = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *v = gu_fetch(ses, res.node);
    CU_ASSERT_EQUAL(item(v), 5.0f);
    CU_ASSERT_EQUAL(s.stops, 1);
    CU_ASSERT_EQUAL(s.stopped_iterations[0], 2);
    CU_ASSERT_TRUE(s.ok);
    tide_tensor_release(v);
    tide_engine_detach_debugger(th_engine(), id);
    tide_session_free(ses);
    tide_graph_free(g);
}

/* Detaching while checks run: once detach returns, no check is running or will run. */
typedef struct runner {
    tide_session *s;
    tide_node *fetch;
    atomic_bool stop;
} runner;

static void *keep_running(void *arg)
{
    runner *r = arg;
    while (!atomic_load(&r->stop)) {
        tide_tensor *v = NULL;
        tide_output o = O(r->fetch);
        tide_session_run(r->s, NULL, NULL, 0, &o, 1, &v, NULL, 0, NULL, NULL);
        tide_tensor_release(v);
    }
    return NULL;
}

static void test_detach_waits(void)
{
    small m = small_graph();
    script s = {.at_iteration = -1, .delay_ms = 2};
    int id = attach(&s);
    runner r = {tide_session_new(th_engine(), m.g, NULL, NULL), m.z, false};
    pthread_t t;
    pthread_create(&t, NULL, keep_running, &r);
    for (int seen = 0; seen < 5;) {
        sleep_ms(1);
        pthread_mutex_lock(&s.lock);
        seen = s.checks;
        pthread_mutex_unlock(&s.lock);
    }
    tide_engine_detach_debugger(th_engine(), id);
    pthread_mutex_lock(&s.lock);
    int after_detach = s.checks;
    pthread_mutex_unlock(&s.lock);
    sleep_ms(50);
    pthread_mutex_lock(&s.lock);
    CU_ASSERT_EQUAL(s.checks, after_detach);
    pthread_mutex_unlock(&s.lock);
    atomic_store(&r.stop, true);
    pthread_join(t, NULL);
    tide_session_free(r.s);
    tide_graph_free(m.g);
}

/* What the debugger watches changes at a stop (a breakpoint set there): the rest of the same step
 * asks `watches` again, so z, watched only from the stop after h on, stops in that very step. */
typedef struct growing {
    atomic_bool watch_z;
    int stops;
    char stopped[4][16];
} growing;

static bool watch_h_then_z(void *user, const tide_node *n)
{
    growing *g = user;
    return strcmp(tide_node_name(n), "h") == 0 || (atomic_load(&g->watch_z) && strcmp(tide_node_name(n), "z") == 0);
}

static tide_debug_action pause_after(void *user, const tide_debug_event *ev)
{
    (void)user;
    return ev->after ? TIDE_DEBUG_PAUSE : TIDE_DEBUG_CONTINUE;
}

static tide_debug_command watch_more(void *user, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)step;
    growing *g = user;
    if (g->stops < 4)
        snprintf(g->stopped[g->stops], sizeof g->stopped[0], "%s", tide_node_name(ev->node));
    g->stops++;
    atomic_store(&g->watch_z, true);
    tide_engine_debugger_changed(th_engine());
    return TIDE_DEBUG_RESUME;
}

static void test_watches_change_at_stop(void)
{
    small m = small_graph();
    growing g = {.stops = 0};
    atomic_init(&g.watch_z, false);
    tide_debugger d = {.user = &g, .watches = watch_h_then_z, .check = pause_after, .paused = watch_more};
    int id = tide_engine_attach_debugger(th_engine(), &d, NULL);
    tide_session *ses = tide_session_new(th_engine(), m.g, NULL, NULL);
    tide_tensor *z = gu_fetch(ses, m.z);
    CU_ASSERT_EQUAL(item(z), 49.0f);
    CU_ASSERT_EQUAL(g.stops, 2);
    CU_ASSERT_STRING_EQUAL(g.stopped[0], "h");
    CU_ASSERT_STRING_EQUAL(g.stopped[1], "z");
    tide_tensor_release(z);
    tide_engine_detach_debugger(th_engine(), id);
    tide_session_free(ses);
    tide_graph_free(m.g);
}

static void test_health(void)
{
    float v[8] = {1, -2, 0, NAN, INFINITY, -INFINITY, 3, 0};
    tide_tensor *t = th_f32(1, TH_DIMS(8), v);
    tide_health h;
    CU_ASSERT_TRUE(tide_tensor_health(t, &h));
    CU_ASSERT_EQUAL(h.elements, 8);
    CU_ASSERT_EQUAL(h.nan, 1);
    CU_ASSERT_EQUAL(h.neg_inf, 1);
    CU_ASSERT_EQUAL(h.pos_inf, 1);
    CU_ASSERT_EQUAL(h.negative, 1);
    CU_ASSERT_EQUAL(h.zero, 2);
    CU_ASSERT_EQUAL(h.positive, 2);
    CU_ASSERT_DOUBLE_EQUAL(h.min, -2, 0);
    CU_ASSERT_DOUBLE_EQUAL(h.max, 3, 0);
    double mean = (1 - 2 + 0 + 3 + 0) / 5.0, var = 0;
    double finite[5] = {1, -2, 0, 3, 0};
    for (int i = 0; i < 5; i++)
        var += (finite[i] - mean) * (finite[i] - mean) / 5;
    CU_ASSERT_DOUBLE_EQUAL(h.mean, mean, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(h.std, sqrt(var), 1e-9);
    CU_ASSERT_TRUE(tide_health_bad(&h));
    tide_tensor_release(t);
    int32_t iv[3] = {-1, 0, 5};
    t = th_i32(1, TH_DIMS(3), iv);
    CU_ASSERT_TRUE(tide_tensor_health(t, &h));
    CU_ASSERT_FALSE(tide_health_bad(&h));
    CU_ASSERT_EQUAL(h.negative + h.zero + h.positive, 3);
    tide_tensor_release(t);
    double dv[2] = {NAN, 2};
    t = th_f64(1, TH_DIMS(2), dv);
    CU_ASSERT_TRUE(tide_tensor_health(t, &h) && h.nan == 1 && h.mean == 2);
    tide_tensor_release(t);
    CU_ASSERT_FALSE(tide_tensor_health(NULL, &h));
}


/* tide_tensor_has_inf_or_nan against each position of a bad element (the vector loop, unrolled 8
 * times over 16 floats with AVX-512, and its tails; TIDE_CPU_ISA=avx2|portable tests the others), every
 * float width, values that are large or tiny but finite, and the dtypes without infinities. */
static void test_has_inf_or_nan(void)
{
    static const int sizes[] = {127, 128, 129, 255, 256, 257, 300};
    float v[300];
    for (int s = 0; s < 68 + (int)(sizeof sizes / sizeof sizes[0]); s++)
        for (int bad = -1, n = s < 68 ? s : sizes[s - 68]; bad < n; bad++) {
            for (int i = 0; i < n; i++)
                v[i] = i % 3 == 0 ? FLT_MAX : i % 3 == 1 ? -FLT_MIN / 4 : -0.0f; /* finite extremes */
            if (bad >= 0)
                v[bad] = bad % 3 == 0 ? NAN : bad % 3 == 1 ? -INFINITY : INFINITY;
            tide_tensor *t = th_f32(1, TH_DIMS(n), v);
            if (tide_tensor_has_inf_or_nan(t) != (bad >= 0)) {
                fprintf(stderr, "float32[%d] with a bad element at %d: wrong answer\n", n, bad);
                CU_FAIL("has_inf_or_nan of a float32 tensor");
            }
            tide_tensor_release(t);
        }
    double d[5] = {DBL_MAX, -DBL_MAX, 1e-310, 0, 1};
    tide_tensor *t = th_f64(1, TH_DIMS(5), d);
    CU_ASSERT_FALSE(tide_tensor_has_inf_or_nan(t));
    tide_tensor_release(t);
    d[3] = -INFINITY;
    t = th_f64(1, TH_DIMS(5), d);
    CU_ASSERT_TRUE(tide_tensor_has_inf_or_nan(t));
    tide_tensor_release(t);
    int64_t dims[1] = {9};
    tide_shape shape = tide_shape_make(1, dims);
    for (int half = 0; half < 2; half++) { /* float16: exponent 0x7c00; bfloat16: 0x7f80 */
        tide_tensor *h = tide_tensor_new(half ? TIDE_BFLOAT16 : TIDE_FLOAT16, &shape, NULL);
        uint16_t *bits = tide_tensor_data(h);
        for (int i = 0; i < 9; i++)
            bits[i] = half ? 0x7f7f : 0x7bff; /* the largest finite */
        CU_ASSERT_FALSE(tide_tensor_has_inf_or_nan(h));
        bits[8] = half ? 0xff80 : 0xfc00; /* -inf */
        CU_ASSERT_TRUE(tide_tensor_has_inf_or_nan(h));
        tide_tensor_release(h);
    }
    int32_t iv[3] = {-1, 0x7f800000, 5};
    t = th_i32(1, TH_DIMS(3), iv);
    CU_ASSERT_FALSE(tide_tensor_has_inf_or_nan(t)); /* an integer with the bits of +inf is a number */
    tide_tensor_release(t);
    CU_ASSERT_FALSE(tide_tensor_has_inf_or_nan(NULL));
}

/* A chain of element-wise nodes over 1 MiB (x = -1; a = -x, b = relu(a), c = -b, d = -c, e = -d),
 * each of which may write over its input: with a debugger attached, watching only e, the step's peak
 * memory is what it is without one plus e's input (kept for e's check: a watched node sees its inputs
 * as they were), and at the stop a value written over is reported gone while e's input is there. */
enum { CHAIN_N = 1 << 18 };
static tide_node *chain[6];

static void chain_values(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)ev;
    tide_tensor *v = NULL;
    tide_error *err = tide_error_new();
    s->ok = tide_debug_step_value(step, chain[1], 0, &v, NULL, err) == TIDE_NOT_FOUND && !v &&
            strstr(tide_error_message(err), "is gone") != NULL; /* a: b's Relu wrote over it */
    s->ok &= tide_debug_step_value(step, chain[4], 0, &v, NULL, NULL) == TIDE_OK && item(v) == 1.0f; /* e's input */
    tide_tensor_release(v);
    s->ok &= tide_debug_step_value(step, chain[5], 0, &v, NULL, NULL) == TIDE_OK && item(v) == -1.0f;
    tide_tensor_release(v);
    tide_error_free(err);
}

static int64_t chain_peak(tide_session *ses, float *first)
{
    tide_engine_reset_peak_memory(th_engine());
    tide_tensor *out = gu_fetch(ses, chain[5]);
    int64_t in_use = 0, peak = 0;
    CU_ASSERT_TRUE(tide_engine_device_memory(th_engine(), 0, &in_use, &peak));
    *first = item(out);
    tide_tensor_release(out);
    return peak;
}

static void test_attached_writes_in_place(void)
{
    tide_graph *g = tide_graph_new();
    float *ones = malloc(sizeof(float) * CHAIN_N);
    for (int i = 0; i < CHAIN_N; i++)
        ones[i] = -1;
    tide_tensor *x = th_f32(1, TH_DIMS(CHAIN_N), ones);
    free(ones);
    chain[0] = gu_const(g, "x", x);
    const char *ops[5] = {"Neg", "Relu", "Neg", "Neg", "Neg"}, *names[5] = {"a", "b", "c", "d", "e"};
    for (int i = 1; i < 6; i++)
        chain[i] = gu_op(g, ops[i - 1], names[i - 1], 1, &chain[i - 1]);
    tide_session *ses = tide_session_new(th_engine(), g, NULL, NULL);
    float first = 0;
    chain_peak(ses, &first); /* the allocator's cache warmed */
    int64_t alone = chain_peak(ses, &first);
    CU_ASSERT_EQUAL(first, -1.0f);
    script s = {.stop_at = "e", .after = true, .at_iteration = -1, .at_stop = chain_values};
    pthread_mutex_init(&s.lock, NULL);
    tide_debugger d = {.user = &s, .watches = watch_e, .check = check, .paused = paused};
    int id = tide_engine_attach_debugger(th_engine(), &d, NULL);
    int64_t attached = chain_peak(ses, &first);
    CU_ASSERT_EQUAL(first, -1.0f);
    CU_ASSERT_EQUAL(s.stops, 1);
    CU_ASSERT_TRUE(s.ok);
    if (attached > alone + (int64_t)sizeof(float) * CHAIN_N + 4096) { /* e's input d is kept for its check */
        fprintf(stderr, "peak %lld bytes attached, %lld alone\n", (long long)attached, (long long)alone);
        CU_FAIL("an attached debugger kept values the kernels would have written over");
    }
    tide_engine_detach_debugger(th_engine(), id);
    tide_session_free(ses);
    tide_graph_free(g); /* x's reference went to the Const (gu_const consumes it) */
}

/* keep_values on the chain: nothing is let go, so at the stop after e the value b's Relu would have
 * written over (a) is there; `finished` sees every value of the step through each_value (x and a..e, in
 * plan order, the right values), cannot set one (nothing is stopped), and what it retains outlives the
 * step: the device's bytes in use come back down only when it is released. Without keep_values the same
 * callback sees a gone (not visited). */
typedef struct finished_seen {
    int calls, visited;
    bool ok;
    tide_tensor *a; /* retained by the callback */
} finished_seen;
static finished_seen fin;

static void chain_all_there(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)ev;
    tide_tensor *v = NULL;
    s->ok = tide_debug_step_value(step, chain[1], 0, &v, NULL, NULL) == TIDE_OK && item(v) == 1.0f;
    tide_tensor_release(v);
}

static void visit_chain(void *user, const tide_node *node, int output, tide_tensor *value, const tide_exec_point *at)
{
    (void)user;
    static const float want[6] = {-1, 1, 1, -1, 1, -1};
    int i = 0;
    while (i < 6 && chain[i] != node)
        i++;
    fin.ok &= i < 6 && i >= fin.visited && output == 0 && at && at->frame && !at->frame[0] && item(value) == want[i] &&
              tide_tensor_num_elements(value) == CHAIN_N;
    if (i == 1 && !fin.a)
        fin.a = tide_tensor_retain(value);
    fin.visited++;
}

static void chain_finished(void *user, tide_debug_step *step)
{
    (void)user;
    fin.calls++;
    tide_debug_step_each_value(step, visit_chain, NULL);
    float one = 1;
    tide_tensor *t = th_f32(0, NULL, &one);
    fin.ok &= tide_debug_step_set_value(step, chain[5], 0, t, NULL) != TIDE_OK;
    tide_tensor_release(t);
}

static int64_t bytes_in_use(void)
{
    int64_t in_use = 0;
    CU_ASSERT_TRUE(tide_engine_device_memory(th_engine(), 0, &in_use, NULL));
    return in_use;
}

static void test_keep_values(void)
{
    tide_graph *g = tide_graph_new();
    float *ones = malloc(sizeof(float) * CHAIN_N);
    for (int i = 0; i < CHAIN_N; i++)
        ones[i] = -1;
    chain[0] = gu_const(g, "x", th_f32(1, TH_DIMS(CHAIN_N), ones));
    free(ones);
    const char *ops[5] = {"Neg", "Relu", "Neg", "Neg", "Neg"}, *names[5] = {"a", "b", "c", "d", "e"};
    for (int i = 1; i < 6; i++)
        chain[i] = gu_op(g, ops[i - 1], names[i - 1], 1, &chain[i - 1]);
    tide_session *ses = tide_session_new(th_engine(), g, NULL, NULL);
    tide_tensor *out = gu_fetch(ses, chain[5]); /* the constant made, the allocator's cache warmed */
    tide_tensor_release(out);
    int64_t before = bytes_in_use();
    script s = {.stop_at = "e", .after = true, .at_iteration = -1, .at_stop = chain_all_there};
    pthread_mutex_init(&s.lock, NULL);
    tide_debugger d = {.user = &s, .watches = watch_e, .check = check, .paused = paused, .keep_values = true,
                       .finished = chain_finished};
    fin.ok = true;
    int id = tide_engine_attach_debugger(th_engine(), &d, NULL);
    out = gu_fetch(ses, chain[5]);
    CU_ASSERT_EQUAL(item(out), -1.0f);
    tide_tensor_release(out);
    CU_ASSERT_EQUAL(s.stops, 1);
    CU_ASSERT_TRUE(s.ok);                 /* a was there at the stop */
    CU_ASSERT_EQUAL(fin.calls, 1);
    CU_ASSERT_EQUAL(fin.visited, 6);      /* x, a, b, c, d, e */
    CU_ASSERT_TRUE(fin.ok);
    CU_ASSERT_TRUE(fin.a != NULL);
    int64_t kept = bytes_in_use();
    CU_ASSERT_TRUE(kept >= before + (int64_t)sizeof(float) * CHAIN_N); /* a's buffer, held by the callback */
    tide_tensor_release(fin.a);
    fin.a = NULL;
    CU_ASSERT_EQUAL(bytes_in_use(), before);
    if (kept < before + (int64_t)sizeof(float) * CHAIN_N)
        fprintf(stderr, "in use: %lld before, %lld with a kept\n", (long long)before, (long long)kept);

    d.keep_values = false; /* a is let go before b runs: gone, not visited */
    s.stops = 0;
    fin = (finished_seen){.ok = true};
    id = tide_engine_attach_debugger(th_engine(), &d, NULL); /* replaces the one attached */
    out = gu_fetch(ses, chain[5]);
    CU_ASSERT_EQUAL(item(out), -1.0f);
    tide_tensor_release(out);
    CU_ASSERT_EQUAL(s.stops, 1);
    CU_ASSERT_FALSE(s.ok);
    CU_ASSERT_EQUAL(fin.calls, 1);
    CU_ASSERT_EQUAL(fin.visited, 3); /* x (the constant holds it), d (e's input, kept for its check), e */
    CU_ASSERT_TRUE(fin.ok);
    CU_ASSERT_TRUE(fin.a == NULL);
    tide_engine_detach_debugger(th_engine(), id);
    pthread_mutex_destroy(&s.lock);
    tide_session_free(ses);
    tide_graph_free(g);
}

/* A fed placeholder is in the step: at a stop its value is the one fed, and its state is done. */
static tide_node *fed_p;

static void fed_value(script *s, tide_debug_step *step, const tide_debug_event *ev)
{
    (void)ev;
    tide_tensor *v = NULL;
    s->ok = tide_debug_step_value(step, fed_p, 0, &v, NULL, NULL) == TIDE_OK && item(v) == 5.0f;
    tide_tensor_release(v);
    s->ok &= tide_debug_step_node_state(step, fed_p) == TIDE_DEBUG_DONE;
    s->ok &= tide_debug_step_value(step, fed_p, 1, &v, NULL, NULL) != TIDE_OK && !v; /* it has one output */
}

static void test_fed_placeholder(void)
{
    tide_graph *g = tide_graph_new();
    fed_p = gu_placeholder(g, "p", TIDE_FLOAT32, 0, NULL);
    tide_node *e = op2(g, "Mul", "e", O(fed_p), O(gu_scalar_f32(g, "three", 3)));
    script s = {.stop_at = "e", .after = true, .at_iteration = -1, .at_stop = fed_value};
    int id = attach(&s);
    tide_session *ses = tide_session_new(th_engine(), g, NULL, NULL);
    float five = 5;
    tide_tensor *fed = th_f32(0, NULL, &five), *out = NULL;
    tide_feed feed = {O(fed_p), fed};
    tide_output fetch = O(e);
    CU_ASSERT_EQUAL(tide_session_run(ses, NULL, &feed, 1, &fetch, 1, &out, NULL, 0, NULL, NULL), TIDE_OK);
    CU_ASSERT_EQUAL(item(out), 15.0f);
    CU_ASSERT_EQUAL(s.stops, 1);
    CU_ASSERT_TRUE(s.ok);
    tide_tensor_release(out);
    tide_tensor_release(fed);
    tide_engine_detach_debugger(th_engine(), id);
    tide_session_free(ses);
    tide_graph_free(g);
}

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_stop_inspect_override), TH_TEST(test_stepping), TH_TEST(test_abort),
                                    TH_TEST(test_deadline_and_other_branches), TH_TEST(test_two_devices),
                                    TH_TEST(test_stop_in_loop), TH_TEST(test_detach_waits), TH_TEST(test_health),
                                    TH_TEST(test_watches_change_at_stop), TH_TEST(test_has_inf_or_nan),
                                    TH_TEST(test_attached_writes_in_place), TH_TEST(test_fed_placeholder),
                                    TH_TEST(test_keep_values), TH_END};
    return th_main("debugger", tests);
}
