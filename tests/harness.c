/* harness.c — shared test machinery (see harness.h). */
#include "harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static tide_engine *engine;

tide_engine *th_engine(void)
{
    if (!engine) {
        tide_error *err = tide_error_new();
        tide_engine_options o;
        tide_engine_options_init(&o);
        o.num_threads = 2;
        o.num_cpu_devices = 1;
        engine = tide_engine_new(&o, err);
        if (!engine) {
            fprintf(stderr, "cannot create engine: %s\n", tide_error_message(err));
            exit(1);
        }
        tide_error_free(err);
    }
    return engine;
}

tide_engine *th_engine_new(const tide_engine_options *o)
{
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(o, err);
    if (!e)
        fprintf(stderr, "engine: %s\n", tide_error_message(err));
    tide_error_free(err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    return e;
}

tide_engine *th_sim_engine(int num_sim_devices, int64_t device_memory_limit)
{
    tide_engine_options o;
    tide_engine_options_init(&o);
    o.num_threads = 2;
    o.num_sim_devices = num_sim_devices;
    o.device_memory_limit = device_memory_limit;
    return th_engine_new(&o);
}

bool th_same_bits(const tide_tensor *a, const tide_tensor *b)
{
    return a && b && tide_tensor_dtype(a) == tide_tensor_dtype(b) &&
           tide_shape_equal(tide_tensor_shape(a), tide_tensor_shape(b)) && tide_tensor_data(a) && tide_tensor_data(b) &&
           memcmp(tide_tensor_data(a), tide_tensor_data(b), tide_tensor_byte_size(a)) == 0;
}

tide_tensor *th_tensor(tide_dtype dt, int rank, const int64_t *dims, const void *data)
{
    tide_shape s = tide_shape_make(rank, dims);
    tide_error *err = tide_error_new();
    tide_tensor *t;
    if (data)
        t = tide_tensor_new_copy(dt, &s, data, (size_t)tide_shape_num_elements(&s) * tide_dtype_size(dt), err);
    else
        t = tide_tensor_new(dt, &s, err);
    if (!t) {
        fprintf(stderr, "th_tensor: %s\n", tide_error_message(err));
        exit(1);
    }
    tide_error_free(err);
    return t;
}

tide_tensor *th_from_doubles(tide_dtype dt, int rank, const int64_t *dims, const double *v, double imag)
{
    tide_tensor *t = th_tensor(dt, rank, dims, NULL);
    void *d = tide_tensor_data(t);
    for (int64_t i = 0; i < tide_tensor_num_elements(t); i++) {
        double x = v[i];
        int64_t k = x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : 0; /* no UB for values outside int64 */
        char buf[64];
        switch (dt) {
        case TIDE_BOOL: ((uint8_t *)d)[i] = x != 0; break;
        case TIDE_INT8: ((int8_t *)d)[i] = (int8_t)k; break;
        case TIDE_INT16: ((int16_t *)d)[i] = (int16_t)k; break;
        case TIDE_INT32: ((int32_t *)d)[i] = (int32_t)k; break;
        case TIDE_INT64: ((int64_t *)d)[i] = k; break;
        case TIDE_UINT8: ((uint8_t *)d)[i] = (uint8_t)k; break;
        case TIDE_UINT16: ((uint16_t *)d)[i] = (uint16_t)k; break;
        case TIDE_FLOAT16: ((uint16_t *)d)[i] = tide_f32_to_f16((float)x); break;
        case TIDE_BFLOAT16: ((uint16_t *)d)[i] = tide_f32_to_bf16((float)x); break;
        case TIDE_FLOAT32: ((float *)d)[i] = (float)x; break;
        case TIDE_FLOAT64: ((double *)d)[i] = x; break;
        case TIDE_COMPLEX64: ((float *)d)[2 * i] = (float)x, ((float *)d)[2 * i + 1] = (float)(imag * x); break;
        case TIDE_COMPLEX128: ((double *)d)[2 * i] = x, ((double *)d)[2 * i + 1] = imag * x; break;
        case TIDE_STRING:
            snprintf(buf, sizeof buf, "%g", x);
            tide_tensor_string_set(t, i, buf, strlen(buf), NULL);
            break;
        default: CU_FAIL("th_from_doubles: invalid dtype"); return t;
        }
    }
    return t;
}

tide_tensor *th_f32(int rank, const int64_t *dims, const float *data) { return th_tensor(TIDE_FLOAT32, rank, dims, data); }
tide_tensor *th_f64(int rank, const int64_t *dims, const double *data) { return th_tensor(TIDE_FLOAT64, rank, dims, data); }
tide_tensor *th_i32(int rank, const int64_t *dims, const int32_t *data) { return th_tensor(TIDE_INT32, rank, dims, data); }
tide_tensor *th_i64(int rank, const int64_t *dims, const int64_t *data) { return th_tensor(TIDE_INT64, rank, dims, data); }

/* The same op through a graph: inputs fed to Placeholders, outputs fetched, a fresh session. */
static tide_status run_graph(const char *op, tide_tensor *const *inputs, int n, const tide_attrs *attrs,
                             int num_outputs, tide_tensor **outs, tide_error *err)
{
    tide_graph *g = tide_graph_new();
    tide_status st = TIDE_OK;
    tide_feed *feeds = calloc((size_t)n + 1, sizeof *feeds);
    tide_output *ins = calloc((size_t)n + 1, sizeof *ins);
    for (int i = 0; i < n && st == TIDE_OK; i++) {
        tide_node_builder *b = tide_node_builder_new(g, "Placeholder", NULL);
        tide_attrs_set_type(tide_node_builder_attrs(b), "dtype", tide_tensor_dtype(inputs[i]));
        tide_node *p = tide_node_builder_finish(b, err);
        if (!p)
            st = tide_error_code(err);
        ins[i] = (tide_output){p, 0};
        feeds[i] = (tide_feed){{p, 0}, inputs[i]};
    }
    tide_node *node = NULL;
    if (st == TIDE_OK) {
        tide_node_builder *b = tide_node_builder_new(g, op, NULL);
        tide_node_builder_add_inputs_flat(b, ins, n);
        if (attrs)
            tide_attrs_merge(tide_node_builder_attrs(b), attrs);
        node = tide_node_builder_finish(b, err);
        if (!node)
            st = tide_error_code(err);
    }
    if (st == TIDE_OK) {
        tide_session *s = tide_session_new(th_engine(), g, NULL, err);
        tide_output *fetches = calloc((size_t)num_outputs + 1, sizeof *fetches);
        for (int i = 0; i < num_outputs; i++)
            fetches[i] = (tide_output){node, i};
        st = s ? tide_session_run(s, NULL, feeds, n, fetches, num_outputs, outs, NULL, 0, NULL, err)
               : tide_error_code(err);
        free(fetches);
        tide_session_free(s);
    }
    free(feeds);
    free(ins);
    tide_graph_free(g);
    return st;
}

tide_status th_run(const char *op, tide_tensor *const *inputs, int num_inputs, const tide_attrs *attrs,
                   tide_tensor **outputs, int num_outputs, tide_error *err)
{
    int got = 0;
    tide_status st = tide_engine_run_op(th_engine(), op, inputs, num_inputs, attrs, outputs, num_outputs,
                                        &got, err);
    if (st != TIDE_OK)
        return st;
    tide_tensor *graph_outs[16] = {0};
    tide_error *gerr = tide_error_new();
    tide_status gst = got <= 16 ? run_graph(op, inputs, num_inputs, attrs, got, graph_outs, gerr) : TIDE_OK;
    if (gst != TIDE_OK) {
        fprintf(stderr, "graph path of %s failed where eager succeeded: %s\n", op, tide_error_message(gerr));
        CU_FAIL("graph path failed where the eager path succeeded");
    } else if (got <= 16) {
        for (int i = 0; i < got; i++) {
            if (!tide_tensor_equal(outputs[i], graph_outs[i], true)) {
                fprintf(stderr, "%s output %d differs between eager and graph runs\n", op, i);
                CU_FAIL("eager and graph results differ");
            }
            tide_tensor_release(graph_outs[i]);
        }
    }
    tide_error_free(gerr);
    for (int i = got; i < num_outputs; i++)
        outputs[i] = NULL;
    return st;
}

tide_tensor *th_run1(const char *op, tide_tensor *const *inputs, int num_inputs, const tide_attrs *attrs)
{
    tide_tensor *out[16] = {0};
    tide_error *err = tide_error_new();
    tide_status st = th_run(op, inputs, num_inputs, attrs, out, 16, err);
    if (st != TIDE_OK) {
        fprintf(stderr, "th_run1(%s): %s\n", op, tide_error_message(err));
        CU_FAIL("op failed");
    }
    tide_error_free(err);
    for (int i = 1; i < 16; i++)
        tide_tensor_release(out[i]);
    return st == TIDE_OK ? out[0] : NULL;
}

void th_assert_shape_impl(const tide_tensor *got, int rank, const int64_t *dims, const char *file, int line)
{
    if (!got) {
        CU_assertImplementation(CU_FALSE, (unsigned)line, "tensor is NULL", file, "", CU_FALSE);
        return;
    }
    tide_shape want = tide_shape_make(rank, dims);
    bool ok = tide_shape_equal(tide_tensor_shape(got), &want);
    if (!ok) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        fprintf(stderr, "%s:%d: shape %s, expected %s\n", file, line,
                tide_shape_format(tide_tensor_shape(got), a, sizeof a), tide_shape_format(&want, b, sizeof b));
    }
    CU_assertImplementation(ok, (unsigned)line, "shape matches", file, "", CU_FALSE);
}

void th_assert_close_impl(const tide_tensor *got, const tide_tensor *want, double rtol, double atol,
                          const char *file, int line)
{
    bool ok = got && want && tide_tensor_dtype(got) == tide_tensor_dtype(want) &&
              tide_shape_equal(tide_tensor_shape(got), tide_tensor_shape(want));
    if (!ok) {
        char a[TIDE_SHAPE_STR_MAX] = "-", b[TIDE_SHAPE_STR_MAX] = "-";
        if (got)
            tide_shape_format(tide_tensor_shape(got), a, sizeof a);
        if (want)
            tide_shape_format(tide_tensor_shape(want), b, sizeof b);
        fprintf(stderr, "%s:%d: got %s %s, expected %s %s\n", file, line,
                got ? tide_dtype_name(tide_tensor_dtype(got)) : "NULL", a,
                want ? tide_dtype_name(tide_tensor_dtype(want)) : "NULL", b);
    } else if (tide_tensor_dtype(got) == TIDE_STRING || tide_dtype_is_complex(tide_tensor_dtype(got))) {
        ok = tide_tensor_equal(got, want, true);
        if (!ok && tide_dtype_is_complex(tide_tensor_dtype(got)) && (rtol > 0 || atol > 0)) {
            /* compare complex part by part */
            size_t half = tide_dtype_size(tide_tensor_dtype(got)) / 2;
            int64_t n = tide_tensor_num_elements(got) * 2;
            ok = true;
            for (int64_t i = 0; i < n && ok; i++) {
                const char *pg = (const char *)tide_tensor_data(got) + (size_t)i * half;
                const char *pw = (const char *)tide_tensor_data(want) + (size_t)i * half;
                double x = half == 4 ? *(const float *)pg : *(const double *)pg;
                double y = half == 4 ? *(const float *)pw : *(const double *)pw;
                ok = fabs(x - y) <= atol + rtol * fabs(y);
            }
        }
        if (!ok)
            fprintf(stderr, "%s:%d: values differ\n", file, line);
    } else {
        int64_t n = tide_tensor_num_elements(got);
        bool exact = !tide_dtype_is_float(tide_tensor_dtype(got));
        for (int64_t i = 0; i < n; i++) {
            double x = tide_tensor_get_f64(got, i), y = tide_tensor_get_f64(want, i);
            bool same = (isnan(x) && isnan(y)) || x == y ||
                        (!exact && fabs(x - y) <= atol + rtol * fabs(y));
            if (!same) {
                fprintf(stderr, "%s:%d: element %lld is %.9g, expected %.9g (rtol %g, atol %g)\n", file, line,
                        (long long)i, x, y, rtol, atol);
                ok = false;
                break;
            }
        }
    }
    CU_assertImplementation(ok, (unsigned)line, "tensors close", file, "", CU_FALSE);
}

void th_assert_fails_impl(const char *op, tide_tensor *const *inputs, int n, const tide_attrs *attrs,
                          tide_status code, const char *needle, const char *file, int line)
{
    tide_tensor *out[16] = {0};
    tide_error *err = tide_error_new();
    int got = 0;
    tide_status st = tide_engine_run_op(th_engine(), op, inputs, n, attrs, out, 16, &got, err);
    for (int i = 0; i < got; i++)
        tide_tensor_release(out[i]);
    bool ok = st == code && (!needle || strstr(tide_error_message(err), needle));
    if (!ok)
        fprintf(stderr, "%s:%d: %s: expected %s containing \"%s\", got %s: %s\n", file, line, op,
                tide_status_name(code), needle ? needle : "", tide_status_name(st), tide_error_message(err));
    CU_assertImplementation(ok, (unsigned)line, "op fails as expected", file, "", CU_FALSE);
    tide_error_free(err);
}

double th_rand(double lo, double hi)
{
    static uint64_t s = 0x9e3779b97f4a7c15ULL;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return lo + (hi - lo) * (double)(s >> 11) / 9007199254740992.0;
}

/* ---------------------------------------------------------------- running and skipping */

#define MAX_SKIPS 64
static struct {
    char test[80];
    char why[200];
} skips[MAX_SKIPS];
static int num_skips;
static bool current_skipped; /* the running test called th_skip */

void th_skip(const char *fmt, ...)
{
    CU_pTest t = CU_get_current_test();
    if (current_skipped || num_skips == MAX_SKIPS)
        return;
    current_skipped = true;
    snprintf(skips[num_skips].test, sizeof skips[num_skips].test, "%s", t && t->pName ? t->pName : "?");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(skips[num_skips].why, sizeof skips[num_skips].why, fmt, ap);
    va_end(ap);
    num_skips++;
}

/* CUnit's basic runner would call a skipped test "passed": the harness prints each test's outcome. */
static void on_test_start(const CU_pTest test, const CU_pSuite suite)
{
    (void)suite;
    current_skipped = false;
    printf("  Test: %s ...", test->pName);
    fflush(stdout);
}

static void on_test_complete(const CU_pTest test, const CU_pSuite suite, const CU_pFailureRecord failure)
{
    (void)test, (void)suite;
    if (failure) {
        printf("FAILED\n");
        int i = 1;
        for (CU_pFailureRecord f = failure; f; f = f->pNext)
            printf("    %d. %s:%u  - %s\n", i++, f->strFileName ? f->strFileName : "",
                   f->uiLineNumber, f->strCondition ? f->strCondition : "");
    } else if (current_skipped) {
        printf("SKIPPED (%s)\n", skips[num_skips - 1].why);
    } else {
        printf("passed\n");
    }
    fflush(stdout);
}

/* Is name one of the comma-separated names of list? */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

/* Every name of $var must be a test of the suite (a stale name would silently select nothing). */
static bool names_known(const char *var, const th_test *tests)
{
    const char *list = getenv(var);
    if (!list)
        return true;
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool found = false;
        for (const th_test *t = tests; t->name && !found; t++)
            found = strlen(t->name) == len && strncmp(t->name, p, len) == 0;
        if (!found && len > 0) {
            fprintf(stderr, "%s names '%.*s', which is not a test of this suite\n", var, (int)len, p);
            return false;
        }
        p += len + (end != NULL);
    }
    return true;
}

int th_main(const char *suite, const th_test *tests)
{
    if (!names_known("TIDE_TEST_ONLY", tests) || !names_known("TIDE_TEST_EXCEPT", tests))
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    const char *only = getenv("TIDE_TEST_ONLY"), *except = getenv("TIDE_TEST_EXCEPT");
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    int selected = 0;
    for (const th_test *t = tests; t->name; t++)
        if ((!only || listed(only, t->name)) && (!except || !listed(except, t->name))) {
            CU_add_test(s, t->name, t->fn);
            selected++;
        }
    printf("Suite: %s\n", suite);
    CU_set_test_start_handler(on_test_start);
    CU_set_test_complete_handler(on_test_complete);
    CU_run_all_tests();
    printf("\n");
    CU_print_run_results(stdout);
    printf("\n");
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    if (engine) {
        tide_engine_free(engine);
        engine = NULL;
    }
    if (num_skips) {
        printf("skipped %d of %d tests:", num_skips, selected);
        for (int i = 0; i < num_skips; i++)
            printf("%s %s (%s)", i ? ";" : "", skips[i].test, skips[i].why);
        printf("\n");
    }
    if (failed)
        return 1;
    return selected > 0 && num_skips == selected ? 77 : 0;
}

/* ---------------------------------------------------------------- graph-time checks */

tide_graph *th_graph_of(const char *text)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    if (tide_graph_extend_text(g, text, err) != TIDE_OK) {
        fprintf(stderr, "graph_of: %s\n", tide_error_message(err));
        tide_graph_free(g);
        g = NULL;
    }
    tide_error_free(err);
    return g;
}

void th_assert_output_shape(tide_graph *g, const char *node, int output, int rank, const int64_t *dims)
{
    tide_node *n = g ? tide_graph_node(g, node) : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    tide_shape got = tide_node_output_shape(n, output), want = tide_shape_make(rank, dims);
    if (!tide_shape_equal(&got, &want)) {
        char a[TIDE_SHAPE_STR_MAX], b[TIDE_SHAPE_STR_MAX];
        fprintf(stderr, "%s:%d: inferred %s, expected %s\n", node, output, tide_shape_format(&got, a, sizeof a),
                tide_shape_format(&want, b, sizeof b));
        CU_FAIL("inferred shape");
    }
}

void th_assert_graph_fails(const char *base, const char *line, const char *needle)
{
    tide_graph *g = th_graph_of(base);
    tide_error *err = tide_error_new();
    CU_ASSERT_EQUAL(tide_graph_extend_text(g, line, err), TIDE_INVALID_ARGUMENT);
    if (!strstr(tide_error_message(err), needle)) {
        fprintf(stderr, "expected \"%s\" in: %s\n", needle, tide_error_message(err));
        CU_FAIL("graph error message");
    }
    tide_error_free(err);
    tide_graph_free(g);
}
