/* api_tensor.c — the endpoints about logged tensors: /api/tensors (what a session logged),
 * /api/tensor (one output's statistics at a step), /api/tensor/values (its stored value, paged) and
 * /api/tensor/histograms (its histograms over steps, for TensorBoard's distributions and histograms)
 * and /api/images (the image summaries a session logged); api_curves.c has /api/tensor/history. docs/web.md has the JSON shapes.
 *
 * /api/tensor and /api/tensor/values decode the logged record with tide_store_query_tensor (the value
 * bit-equal to what the run produced); elements are written row-major, non-finite numbers as the
 * strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers), complex ones as [re, im]. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_internal.h"

#define VALUES_DEFAULT_LIMIT 1000
#define VALUES_MAX_LIMIT 100000

static void write_shape(tide_json *j, const tide_shape *s)
{
    tide_json_begin_array(j);
    for (int i = 0; i < s->rank; i++)
        tide_json_int(j, s->dims[i]);
    tide_json_end_array(j);
}

void web_tensor_json(tide_json *j, const tide_store_tensor *t)
{
    tide_json_begin_object(j);
    tide_json_key(j, "node");
    tide_json_string(j, t->node);
    tide_json_key(j, "output");
    tide_json_int(j, t->output);
    tide_json_key(j, "run");
    tide_json_int(j, t->run);
    tide_json_key(j, "session");
    tide_json_int(j, t->session);
    tide_json_key(j, "step");
    tide_json_int(j, t->step);
    tide_json_key(j, "dtype");
    tide_json_string(j, t->dtype_name);
    tide_json_key(j, "shape");
    write_shape(j, &t->shape);
    tide_json_key(j, "num_elements");
    tide_json_int(j, tide_shape_num_elements(&t->shape));
    const char *stats[] = {"min", "max", "mean", "std"};
    double values[] = {t->min, t->max, t->mean, t->std};
    for (int i = 0; i < 4; i++) {
        tide_json_key(j, stats[i]);
        if (t->has_stats)
            tide_json_double(j, values[i]);
        else
            tide_json_null(j);
    }
    tide_json_key(j, "nan_count");
    tide_json_int(j, t->nan_count);
    tide_json_key(j, "inf_count");
    tide_json_int(j, t->inf_count);
    tide_json_key(j, "histogram");
    if (t->has_stats && t->num_bins > 0) {
        tide_json_begin_object(j);
        tide_json_key(j, "min");
        tide_json_double(j, t->min);
        tide_json_key(j, "max");
        tide_json_double(j, t->max);
        tide_json_key(j, "counts");
        tide_json_begin_array(j);
        for (int i = 0; i < t->num_bins; i++)
            tide_json_int(j, t->histogram[i]);
        tide_json_end_array(j);
        tide_json_end_object(j);
    } else
        tide_json_null(j);
    tide_json_key(j, "has_value");
    tide_json_bool(j, t->value != NULL);
    tide_json_end_object(j);
}

/* node, output, session and step of the tensor endpoints. */
static bool tensor_args(web_request *rq, web_reply *out, const char **node, int64_t *output, int64_t *session,
                        int64_t *step)
{
    return web_arg_required(rq, out, "node", node) && web_arg_int(rq, out, "output", 0, 0, 1 << 20, output) &&
           web_arg_int(rq, out, "session", 0, 0, INT64_MAX, session) &&
           web_arg_int(rq, out, "step", -1, -1, INT64_MAX, step);
}

/* The logged record, or NULL with the reply set (404 when nothing matches). */
static tide_store_tensor *load_tensor(web_request *rq, web_reply *out, const char **node)
{
    int64_t output, session, step;
    if (!tensor_args(rq, out, node, &output, &session, &step))
        return NULL;
    tide_error *err = tide_error_new();
    tide_store_tensor *t = err ? tide_store_query_tensor(rq->db, *node, (int)output, session, step, err) : NULL;
    if (!t && err)
        web_reply_tide_error(rq, out, err);
    else if (!t)
        web_reply_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    tide_error_free(err);
    return t;
}

void web_api_tensor(web_request *rq, web_reply *out)
{
    const char *node;
    tide_store_tensor *t = load_tensor(rq, out, &node);
    if (!t)
        return;
    tide_json j;
    tide_json_init(&j);
    web_tensor_json(&j, t);
    tide_store_tensor_free(t);
    web_reply_builder(out, &j);
}

/* A floating-point element: a number with digits significant digits, or "NaN"/"Infinity"/"-Infinity". */
static void write_float(tide_json *j, double v, int digits)
{
    if (!isfinite(v))
        tide_json_double(j, v); /* the one encoding of non-finite numbers */
    else {
        char buf[40];
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        tide_json_raw(j, buf);
    }
}

static void write_element(tide_json *j, const tide_tensor *t, int64_t i)
{
    const void *d = tide_tensor_data(t);
    switch (tide_tensor_dtype(t)) {
    case TIDE_BOOL: tide_json_bool(j, ((const bool *)d)[i]); break;
    case TIDE_INT8: tide_json_int(j, ((const int8_t *)d)[i]); break;
    case TIDE_INT16: tide_json_int(j, ((const int16_t *)d)[i]); break;
    case TIDE_INT32: tide_json_int(j, ((const int32_t *)d)[i]); break;
    case TIDE_INT64: tide_json_int(j, ((const int64_t *)d)[i]); break;
    case TIDE_UINT8: tide_json_int(j, ((const uint8_t *)d)[i]); break;
    case TIDE_UINT16: tide_json_int(j, ((const uint16_t *)d)[i]); break;
    case TIDE_FLOAT16: write_float(j, tide_f16_to_f32(((const uint16_t *)d)[i]), 5); break;
    case TIDE_BFLOAT16: write_float(j, tide_bf16_to_f32(((const uint16_t *)d)[i]), 4); break;
    case TIDE_FLOAT32: write_float(j, ((const float *)d)[i], 9); break;
    case TIDE_FLOAT64: write_float(j, ((const double *)d)[i], 17); break;
    case TIDE_COMPLEX64:
    case TIDE_COMPLEX128: {
        bool c64 = tide_tensor_dtype(t) == TIDE_COMPLEX64;
        tide_json_begin_array(j);
        for (int k = 0; k < 2; k++)
            write_float(j, c64 ? ((const float *)d)[2 * i + k] : ((const double *)d)[2 * i + k], c64 ? 9 : 17);
        tide_json_end_array(j);
        break;
    }
    case TIDE_STRING: {
        size_t len = 0;
        const char *s = tide_tensor_string_get(t, i, &len);
        tide_json_string_n(j, s ? s : "", s ? len : 0);
        break;
    }
    default: tide_json_null(j); break;
    }
}

void web_api_tensor_values(web_request *rq, web_reply *out)
{
    int64_t offset, limit;
    if (!web_arg_int(rq, out, "offset", 0, 0, INT64_MAX, &offset) ||
        !web_arg_int(rq, out, "limit", VALUES_DEFAULT_LIMIT, 0, VALUES_MAX_LIMIT, &limit))
        return;
    const char *node;
    tide_store_tensor *t = load_tensor(rq, out, &node);
    if (!t)
        return;
    if (!t->value) {
        web_reply_error(out, MHD_HTTP_NOT_FOUND,
                        "the value of %.100s:%d at step %" PRId64 " was not stored (larger than the value cap, "
                        "pruned, or a string): only its statistics are in the log",
                        t->node, t->output, t->step);
        tide_store_tensor_free(t);
        return;
    }
    int64_t total = tide_tensor_num_elements(t->value);
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "shape");
    write_shape(&j, &t->shape);
    tide_json_key(&j, "dtype");
    tide_json_string(&j, t->dtype_name);
    tide_json_key(&j, "offset");
    tide_json_int(&j, offset);
    tide_json_key(&j, "limit");
    tide_json_int(&j, limit);
    tide_json_key(&j, "total");
    tide_json_int(&j, total);
    tide_json_key(&j, "values");
    tide_json_begin_array(&j);
    for (int64_t i = offset; i < total && i < offset + limit; i++)
        write_element(&j, t->value, i);
    tide_json_end_array(&j);
    tide_json_end_object(&j);
    tide_store_tensor_free(t);
    web_reply_builder(out, &j);
}

/* ---------------------------------------------------------------- histograms over steps */

tide_store_table *web_tensor_rows(web_request *rq, web_reply *out, tide_store_query_id q, const char *const *params,
                                  int n, const char *node, int64_t output, int64_t session)
{
    tide_store_table *t = web_query(rq, out, q, params, n, 1 << 24);
    if (t && tide_store_table_num_rows(t) == 0) {
        web_reply_error(out, MHD_HTTP_NOT_FOUND, "no logged values of %.100s:%" PRId64 "%s", node, output,
                        session ? " in that session" : " in the run log");
        tide_store_table_free(t);
        return NULL;
    }
    return t;
}

void web_tensor_doc_begin(tide_json *j, const char *node, int64_t output, const tide_store_table *t)
{
    tide_json_begin_object(j);
    tide_json_key(j, "node");
    tide_json_string(j, node);
    tide_json_key(j, "output");
    tide_json_int(j, output);
    tide_json_key(j, "session");
    if (tide_store_table_is_null(t, 0, 0))
        tide_json_null(j);
    else
        tide_json_int(j, strtoll(tide_store_table_cell(t, 0, 0), NULL, 10));
}

#define HISTOGRAM_STEPS_DEFAULT 100
#define HISTOGRAM_STEPS_MAX 1000

/* A REAL cell as a number, or null. */
static void write_real(tide_json *j, const tide_store_table *t, int row, int col)
{
    if (tide_store_table_is_null(t, row, col))
        tide_json_null(j);
    else
        tide_json_double(j, strtod(tide_store_table_cell(t, row, col), NULL));
}

/* A logged histogram (JSON written by the store: "[3,0,12]") as an array of counts; a damaged one as null. */
static void write_counts(tide_json *j, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n < 2 || text[0] != '[' || text[n - 1] != ']' || strspn(text + 1, "0123456789,") != n - 2)
        tide_json_null(j);
    else
        tide_json_raw(j, text);
}

/* One step's histogram: {"step","run","min","max","mean","nan_count","inf_count","counts"}. */
static void write_histogram_step(tide_json *j, const tide_store_table *t, int row)
{
    static const char *const keys[] = {"step", "run", "min", "max", "mean", "nan_count", "inf_count"};
    tide_json_begin_object(j);
    for (int k = 0; k < 7; k++) {
        tide_json_key(j, keys[k]);
        if (k < 2 || k > 4)
            tide_json_int(j, strtoll(tide_store_table_cell(t, row, k + 1), NULL, 10));
        else
            write_real(j, t, row, k + 1);
    }
    tide_json_key(j, "counts");
    write_counts(j, tide_store_table_is_null(t, row, 8) ? NULL : tide_store_table_cell(t, row, 8));
    tide_json_end_object(j);
}

/* /api/tensor/histograms: a logged tensor's histograms over its steps, at most max_steps of them
 * (evenly spaced, the first and the last kept), for the distributions and histograms charts. */
void web_api_tensor_histograms(web_request *rq, web_reply *out)
{
    const char *node;
    int64_t output, session, max;
    if (!web_arg_required(rq, out, "node", &node) || !web_arg_int(rq, out, "output", 0, 0, 1 << 20, &output) ||
        !web_arg_int(rq, out, "session", 0, 0, INT64_MAX, &session) ||
        !web_arg_int(rq, out, "max_steps", HISTOGRAM_STEPS_DEFAULT, 2, HISTOGRAM_STEPS_MAX, &max))
        return;
    char b[2][24];
    const char *p[] = {node, web_itoa(b[0], output), web_itoa(b[1], session)};
    tide_store_table *t = web_tensor_rows(rq, out, TIDE_STORE_Q_TENSOR_HISTOGRAMS, p, 3, node, output, session);
    if (!t)
        return;
    int n = tide_store_table_num_rows(t), kept = n < max ? n : (int)max;
    tide_json j;
    tide_json_init(&j);
    web_tensor_doc_begin(&j, node, output, t);
    tide_json_key(&j, "steps");
    tide_json_begin_array(&j);
    for (int k = 0; k < kept; k++) /* evenly spaced rows, the first and the last among them */
        write_histogram_step(&j, t, kept == 1 ? 0 : (int)((int64_t)k * (n - 1) / (kept - 1)));
    tide_json_end_array(&j);
    tide_json_key(&j, "total");
    tide_json_int(&j, n);
    tide_json_key(&j, "sampled");
    tide_json_bool(&j, kept < n);
    tide_json_end_object(&j);
    tide_store_table_free(t);
    web_reply_builder(out, &j);
}

/* ---------------------------------------------------------------- image summaries */

/* The tag of an ImageSummary from its attrs text ('tag="in\"put", max_images=3'): unescaped into buf. */
static const char *attr_tag(const char *attrs, char *buf, size_t size)
{
    const char *p = attrs ? strstr(attrs, "tag=\"") : NULL;
    size_t n = 0;
    for (p = p ? p + 5 : NULL; p && *p && *p != '"' && n + 1 < size; p++) {
        if (*p == '\\' && p[1])
            p++;
        buf[n++] = *p;
    }
    buf[n] = '\0';
    return buf;
}

/* A shape column's text ("[2, 8, 8, 1]") as a JSON array (it is one). */
static void write_shape_text(tide_json *j, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n >= 2 && text[0] == '[' && text[n - 1] == ']' && strspn(text + 1, "0123456789, ") == n - 2)
        tide_json_raw(j, text);
    else
        tide_json_null(j);
}

/* /api/images: the image summaries a session logged: {"session","images":[{"tag","node","count",
 * "first_step","last_step","shape","dtype"}]}. */
void web_api_images(web_request *rq, web_reply *out)
{
    int64_t session;
    if (!web_arg_session(rq, out, &session))
        return;
    char b[24];
    const char *p[] = {web_itoa(b, session)};
    tide_store_table *t = web_query(rq, out, TIDE_STORE_Q_IMAGE_SUMMARIES, p, 1, 10000);
    if (!t)
        return;
    static const char *const counts[] = {"count", "first_step", "last_step"};
    char tag[512];
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "session");
    tide_json_int(&j, session);
    tide_json_key(&j, "images");
    tide_json_begin_array(&j);
    for (int r = 0; r < tide_store_table_num_rows(t); r++) {
        const char *node = tide_store_table_cell(t, r, 0);
        tide_json_begin_object(&j);
        tide_json_key(&j, "tag");
        tide_json_string(&j, tide_store_table_is_null(t, r, 1) ? node : attr_tag(tide_store_table_cell(t, r, 1), tag, sizeof tag));
        tide_json_key(&j, "node");
        tide_json_string(&j, node);
        for (int k = 0; k < 3; k++) {
            tide_json_key(&j, counts[k]);
            tide_json_int(&j, strtoll(tide_store_table_cell(t, r, 2 + k), NULL, 10));
        }
        tide_json_key(&j, "shape");
        write_shape_text(&j, tide_store_table_cell(t, r, 6));
        tide_json_key(&j, "dtype");
        tide_json_string(&j, tide_store_table_cell(t, r, 7));
        tide_json_end_object(&j);
    }
    tide_json_end_array(&j);
    tide_json_end_object(&j);
    tide_store_table_free(t);
    web_reply_builder(out, &j);
}

void web_api_tensors(web_request *rq, web_reply *out)
{
    int64_t session;
    if (!web_arg_session(rq, out, &session))
        return;
    char b[24];
    const char *p[] = {web_itoa(b, session)};
    web_query_reply(rq, out, TIDE_STORE_Q_TENSORS_JSON, p, 1, "no tensors");
}
