/* queue.c — the queues themselves (queue.h has the rules): elements, the two lists of waiting
 * attempts served in order under the queue's lock, close, cancellation of waiting attempts, and the
 * batches a dequeue returns (padded for a PaddingFIFOQueue). The kernels (kernels/cpu/queue.c) only
 * find the queue and call in here.
 *
 * Ownership: an element is an array of num_components tensor references. An enqueue attempt holds
 * the elements it has still to add; a dequeue attempt the elements it has taken so far (put back at
 * the front if it fails). Whoever *claims* an attempt (under the queue's lock: the serving pass that
 * completes it, close, or its cancellation callback) finishes it, after the lock is released. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue.h"

typedef tide_tensor **element; /* num_components references */

typedef struct attempt {
    tide_queue *q;
    tide_kernel_ctx *ctx;
    int64_t token;               /* its cancellation callback (0: none) */
    bool is_enqueue;
    bool claimed;                /* someone finishes it (under q->lock) */
    bool inline_call;            /* finished inside its own compute_async */
    /* enqueue: elements still to add */
    element *pending;
    int64_t num_pending, next_pending;
    /* dequeue: n < 0 one element; else a batch of n (up_to: fewer once closed) */
    int64_t want;
    bool up_to;
    element *taken;
    int64_t num_taken;
    tide_status code;            /* how it ends (TIDE_OK: done) */
    char message[256];
    struct attempt *next;
} attempt;

typedef struct attempt_list {
    attempt *head, *tail;
} attempt_list;

struct tide_queue {
    tide_resource res;           /* first: the container holds it as a resource */
    tide_queue_config cfg;
    pthread_mutex_t lock;
    element *ring;               /* count elements from head, modulo cap */
    int64_t head, count, cap;
    bool closed, cancel_pending;
    uint64_t rng;                /* RandomShuffleQueue */
    attempt_list enqueuers, dequeuers;
};

static const char *kind_name(tide_queue_kind k)
{
    return k == TIDE_QUEUE_RANDOM_SHUFFLE ? "RandomShuffleQueue" : k == TIDE_QUEUE_PADDING_FIFO ? "PaddingFIFOQueue"
                                                                                                 : "FIFOQueue";
}

/* ---------------------------------------------------------------- elements */

static void element_free(const tide_queue *q, element e)
{
    if (!e)
        return;
    for (int i = 0; i < q->cfg.num_components; i++)
        tide_tensor_release(e[i]);
    free(e);
}

static bool ring_reserve(tide_queue *q)
{
    if (q->count < q->cap)
        return true;
    int64_t cap = q->cap ? q->cap * 2 : 16;
    element *ring = malloc(sizeof *ring * (size_t)cap);
    if (!ring)
        return false;
    for (int64_t i = 0; i < q->count; i++)
        ring[i] = q->ring[(q->head + i) % q->cap];
    free(q->ring);
    q->ring = ring;
    q->head = 0;
    q->cap = cap;
    return true;
}

static element *slot(tide_queue *q, int64_t i) { return &q->ring[(q->head + i) % q->cap]; }

static uint64_t next_random(tide_queue *q)
{
    uint64_t z = (q->rng += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Takes one element: the oldest, or for a random shuffle queue a random one. */
static element take_one(tide_queue *q)
{
    if (q->cfg.kind == TIDE_QUEUE_RANDOM_SHUFFLE && q->count > 1) {
        int64_t k = (int64_t)(next_random(q) % (uint64_t)q->count);
        element tmp = *slot(q, k);
        *slot(q, k) = *slot(q, 0);
        *slot(q, 0) = tmp;
    }
    element e = *slot(q, 0);
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return e;
}

/* Puts an element back at the front (a failed dequeue's). Room was there before it was taken. */
static void put_front(tide_queue *q, element e)
{
    q->head = (q->head + q->cap - 1) % q->cap;
    q->ring[q->head] = e;
    q->count++;
}

/* ---------------------------------------------------------------- attempts and serving */

static void list_append(attempt_list *l, attempt *a)
{
    a->next = NULL;
    if (l->tail)
        l->tail->next = a;
    else
        l->head = a;
    l->tail = a;
}

static void list_unlink(attempt_list *l, attempt *a)
{
    attempt *prev = NULL;
    for (attempt *at = l->head; at; prev = at, at = at->next)
        if (at == a) {
            if (prev)
                prev->next = a->next;
            else
                l->head = a->next;
            if (l->tail == a)
                l->tail = prev;
            return;
        }
}

/* Claims a (under the lock): unlinks it and records how it ends; done collects it for finishing. */
static void claim(tide_queue *q, attempt *a, attempt_list *done, tide_status code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void claim(tide_queue *q, attempt *a, attempt_list *done, tide_status code, const char *fmt, ...)
{
    list_unlink(a->is_enqueue ? &q->enqueuers : &q->dequeuers, a);
    a->claimed = true;
    a->code = code;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->message, sizeof a->message, fmt, ap);
        va_end(ap);
    }
    list_append(done, a);
}

/* A failed dequeue's elements go back to the front, in their order. */
static void give_back(tide_queue *q, attempt *a)
{
    for (int64_t i = a->num_taken; i-- > 0;)
        put_front(q, a->taken[i]);
    a->num_taken = 0;
}

/* Serves the first enqueue attempt; true when something changed. */
static bool serve_enqueue(tide_queue *q, attempt_list *done)
{
    attempt *a = q->enqueuers.head;
    if (!a)
        return false;
    bool moved = false;
    while (a->next_pending < a->num_pending && (q->cfg.capacity < 0 || q->count < q->cfg.capacity)) {
        if (!ring_reserve(q)) {
            claim(q, a, done, TIDE_RESOURCE_EXHAUSTED, "out of memory enqueueing into queue '%s'", q->res.name);
            return true;
        }
        q->ring[(q->head + q->count) % q->cap] = a->pending[a->next_pending];
        a->pending[a->next_pending++] = NULL;
        q->count++;
        moved = true;
    }
    if (a->next_pending == a->num_pending) {
        claim(q, a, done, TIDE_OK, NULL);
        return true;
    }
    return moved;
}

/* Serves the first dequeue attempt; true when something changed. */
static bool serve_dequeue(tide_queue *q, attempt_list *done)
{
    attempt *a = q->dequeuers.head;
    if (!a)
        return false;
    int64_t need = a->want < 0 ? 1 : a->want;
    /* While open, a random shuffle queue keeps min_after_dequeue elements for mixing. */
    int64_t keep = q->cfg.kind == TIDE_QUEUE_RANDOM_SHUFFLE && !q->closed ? q->cfg.min_after_dequeue : 0;
    bool moved = false;
    while (a->num_taken < need && q->count > keep) {
        a->taken[a->num_taken++] = take_one(q);
        moved = true;
    }
    if (a->num_taken == need) {
        claim(q, a, done, TIDE_OK, NULL);
        return true;
    }
    if (!q->closed)
        return moved;
    if (a->up_to && a->num_taken > 0) { /* the queue is closed and empty: a smaller batch */
        claim(q, a, done, TIDE_OK, NULL);
        return true;
    }
    give_back(q, a);
    claim(q, a, done, TIDE_OUT_OF_RANGE, "%s '%s' is closed and has insufficient elements (requested %lld, "
          "current size %lld)", kind_name(q->cfg.kind), q->res.name, (long long)need, (long long)(q->count));
    return true;
}

/* Serves both lists until nothing moves (an enqueue makes room for dequeues and the reverse). */
static void serve(tide_queue *q, attempt_list *done)
{
    bool moved = true;
    while (moved) {
        moved = false;
        while (serve_enqueue(q, done))
            moved = true;
        while (serve_dequeue(q, done))
            moved = true;
    }
}

/* ---------------------------------------------------------------- finishing */

/* Copies src (numbers) into a zero-filled dst whose dims (dst_dims, src's rank) are at least as
 * large, at the origin: row by row of the innermost dimension. */
static void copy_padded(const tide_tensor *src, char *dst, const int64_t *dst_dims, size_t elem)
{
    const tide_shape *s = tide_tensor_shape(src);
    int r = s->rank;
    int64_t rows = 1;
    for (int d = 0; d + 1 < r; d++)
        rows *= s->dims[d];
    int64_t inner = r ? s->dims[r - 1] : 1;
    const char *from = tide_tensor_data(src);
    for (int64_t row = 0; row < rows && inner > 0; row++) {
        int64_t at = 0, rest = row; /* the row's offset in dst, in elements */
        int64_t stride = r ? dst_dims[r - 1] : 1;
        for (int d = r - 2; d >= 0; d--) {
            at += (rest % s->dims[d]) * stride;
            rest /= s->dims[d];
            stride *= dst_dims[d];
        }
        memcpy(dst + (size_t)at * elem, from + (size_t)(row * inner) * elem, (size_t)inner * elem);
    }
}

/* Output i of a batch: the elements' component i stacked (padded to the largest for a padding queue). */
static tide_status batch_component(attempt *a, int i)
{
    tide_queue *q = a->q;
    tide_kernel_ctx *ctx = a->ctx;
    const tide_shape *first = tide_tensor_shape(a->taken[0][i]);
    tide_shape out = {.rank = first->rank + 1};
    out.dims[0] = a->num_taken;
    if (first->rank + 1 > TIDE_MAX_RANK)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "component %d of rank %d cannot be batched (at most "
                                 "rank %d)", i, first->rank, TIDE_MAX_RANK - 1);
    bool padded = false;
    for (int64_t k = 0; k < a->num_taken; k++) {
        const tide_shape *s = tide_tensor_shape(a->taken[k][i]);
        for (int d = 0; d < s->rank; d++) {
            if (k == 0 || s->dims[d] > out.dims[d + 1])
                out.dims[d + 1] = s->dims[d];
        }
        if (!tide_shape_equal(s, first)) {
            char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
            if (q->cfg.kind != TIDE_QUEUE_PADDING_FIFO || s->rank != first->rank)
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "cannot batch component %d: elements of "
                                         "shapes %s and %s (a PaddingFIFOQueue pads elements of one rank)", i,
                                         tide_shape_format(first, sa, sizeof sa), tide_shape_format(s, sb, sizeof sb));
            padded = true;
        }
    }
    tide_tensor *t = tide_kernel_alloc_output(ctx, i, &out, padded);
    if (!t)
        return tide_kernel_status(ctx);
    tide_dtype dt = tide_tensor_dtype(t);
    size_t elem = dt == TIDE_STRING ? 0 : tide_dtype_size(dt);
    tide_shape one = {.rank = out.rank - 1}; /* one element's place in the batch */
    memcpy(one.dims, out.dims + 1, sizeof one.dims[0] * (size_t)one.rank);
    int64_t per = tide_shape_num_elements(&one);
    for (int64_t k = 0; k < a->num_taken; k++) {
        tide_tensor *src = a->taken[k][i];
        if (dt == TIDE_STRING && !padded) {
            for (int64_t e = 0; e < per; e++) {
                size_t len;
                const char *bytes = tide_tensor_string_get(src, e, &len);
                tide_tensor_string_set(t, k * per + e, bytes, len, NULL);
            }
        } else if (dt == TIDE_STRING) {
            /* strings padded: element by element through the multi-index */
            const tide_shape *s = tide_tensor_shape(src);
            int64_t n = tide_tensor_num_elements(src);
            for (int64_t e = 0; e < n; e++) {
                int64_t at = 0, rest = e, stride = 1;
                for (int d = s->rank - 1; d >= 0; d--) {
                    at += (rest % s->dims[d]) * stride;
                    rest /= s->dims[d];
                    stride *= one.dims[d];
                }
                size_t len;
                const char *bytes = tide_tensor_string_get(src, e, &len);
                tide_tensor_string_set(t, k * per + at, bytes, len, NULL);
            }
        } else if (!padded) {
            memcpy((char *)tide_tensor_data(t) + (size_t)(k * per) * elem, tide_tensor_data(src),
                   (size_t)per * elem);
        } else {
            copy_padded(src, (char *)tide_tensor_data(t) + (size_t)(k * per) * elem, one.dims, elem);
        }
    }
    return TIDE_OK;
}

static tide_status dequeue_outputs(attempt *a)
{
    int n = a->q->cfg.num_components;
    if (a->want < 0) {
        for (int i = 0; i < n; i++)
            tide_kernel_set_output(a->ctx, i, a->taken[0][i]);
        return TIDE_OK;
    }
    if (a->num_taken == 0) { /* dequeue_many(0): empty batches of the declared shapes */
        for (int i = 0; i < n; i++) {
            const tide_queue_config *c = &a->q->cfg;
            tide_shape s = {.rank = 1};
            if (c->num_shapes && tide_shape_is_fully_defined(&c->shapes[i]) && c->shapes[i].rank + 1 <= TIDE_MAX_RANK) {
                s.rank = c->shapes[i].rank + 1;
                memcpy(s.dims + 1, c->shapes[i].dims, sizeof s.dims[0] * (size_t)c->shapes[i].rank);
            }
            s.dims[0] = 0;
            if (!tide_kernel_alloc_output(a->ctx, i, &s, false))
                return tide_kernel_status(a->ctx);
        }
        return TIDE_OK;
    }
    for (int i = 0; i < n; i++) {
        tide_status st = batch_component(a, i);
        if (st != TIDE_OK)
            return st;
    }
    return TIDE_OK;
}

static void attempt_free(attempt *a)
{
    tide_queue *q = a->q;
    for (int64_t i = a->next_pending; i < a->num_pending; i++)
        element_free(q, a->pending[i]);
    for (int64_t i = 0; i < a->num_taken; i++)
        element_free(q, a->taken[i]);
    free(a->pending);
    free(a->taken);
    free(a);
    tide__queue_release(q);
}

/* Finishes a claimed attempt (no queue lock held). */
static void finish(attempt *a)
{
    tide_kernel_ctx *ctx = a->ctx;
    if (a->token)
        tide_kernel_forget_cancel(ctx, a->token); /* false: its callback runs, finds it claimed and returns */
    tide_status st = a->code;
    if (st != TIDE_OK)
        tide_kernel_error(ctx, st, "%s", a->message);
    else if (!a->is_enqueue)
        st = dequeue_outputs(a);
    bool inline_call = a->inline_call;
    attempt_free(a);
    if (inline_call)
        tide_kernel_done(ctx, st);
    else
        tide_kernel_done_later(ctx, st);
}

static void finish_all(attempt_list *done)
{
    for (attempt *a = done->head, *next; a; a = next) {
        next = a->next;
        finish(a);
    }
}

/* The step of a waiting attempt ended early (another node failed, cancel, close, timeout). */
static void attempt_cancelled(void *arg, tide_status code, const char *message)
{
    attempt *a = arg;
    tide_queue *q = a->q;
    attempt_list done = {0};
    pthread_mutex_lock(&q->lock);
    if (a->claimed) {
        pthread_mutex_unlock(&q->lock);
        return; /* completed meanwhile: its claimer finishes it */
    }
    give_back(q, a);
    claim(q, a, &done, code, "waiting to %s queue '%s': %s", a->is_enqueue ? "enqueue into" : "dequeue from",
          q->res.name, message);
    a->token = 0; /* this is its callback: finish must not wait for itself */
    serve(q, &done); /* what it gave back may serve others */
    pthread_mutex_unlock(&q->lock);
    finish_all(&done);
}

/* Adds a to its list and serves; a that must wait registers its cancellation callback. */
static void start(tide_queue *q, attempt *a)
{
    attempt_list done = {0};
    a->inline_call = true;
    pthread_mutex_lock(&q->lock);
    if (a->is_enqueue && q->closed)
        claim(q, a, &done, TIDE_CANCELLED, "%s '%s' is closed", kind_name(q->cfg.kind), q->res.name);
    else {
        list_append(a->is_enqueue ? &q->enqueuers : &q->dequeuers, a);
        serve(q, &done);
    }
    if (!a->claimed) {
        a->inline_call = false;
        a->token = tide_kernel_on_cancel(a->ctx, attempt_cancelled, a);
        if (a->token == 0) { /* the step is ending, or this runs eagerly: the reason is recorded */
            give_back(q, a);
            claim(q, a, &done, tide_kernel_status(a->ctx), "%s", "");
            a->inline_call = true;
            serve(q, &done);
        }
    }
    pthread_mutex_unlock(&q->lock);
    /* Finish the others first: a's own completion may end its step and free what they touch. */
    bool own = false;
    for (attempt *d = done.head, *next; d; d = next) {
        next = d->next;
        if (d == a)
            own = true;
        else
            finish(d);
    }
    if (!own)
        return; /* it waits */
    if (a->code != TIDE_OK && a->message[0] == '\0') { /* refused by on_cancel: the error is recorded */
        tide_kernel_ctx *ctx = a->ctx;
        tide_status st = tide_kernel_status(ctx);
        attempt_free(a);
        tide_kernel_done(ctx, st);
    } else {
        finish(a);
    }
}

/* ---------------------------------------------------------------- the operations */

static bool fits(const tide_queue *q, int i, const tide_shape *s)
{
    return !q->cfg.num_shapes || tide_shape_compatible(&q->cfg.shapes[i], s);
}

/* The element made of the components (inputs from first), or of row `row` of each (many). */
static element make_element(tide_queue *q, tide_kernel_ctx *ctx, int first, int64_t row, bool many)
{
    element e = calloc((size_t)q->cfg.num_components, sizeof *e);
    if (!e) {
        tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory enqueueing");
        return NULL;
    }
    for (int i = 0; i < q->cfg.num_components; i++) {
        tide_tensor *t = tide_kernel_input(ctx, first + i);
        if (!many) {
            e[i] = tide_tensor_retain(t);
            continue;
        }
        const tide_shape *s = tide_tensor_shape(t);
        tide_shape inner = {.rank = s->rank - 1};
        memcpy(inner.dims, s->dims + 1, sizeof inner.dims[0] * (size_t)inner.rank);
        tide_error *err = tide_error_new();
        tide_tensor *rows = tide_tensor_slice(t, row, row + 1, err);
        e[i] = rows ? tide_tensor_reshape(rows, &inner, err) : NULL;
        tide_tensor_release(rows);
        if (!e[i]) {
            tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
            tide_error_free(err);
            element_free(q, e);
            return NULL;
        }
        tide_error_free(err);
    }
    return e;
}

/* Checks the components' count, dtypes and shapes against the queue; *num the elements they make. */
static tide_status check_components(tide_queue *q, tide_kernel_ctx *ctx, int first, bool many, int64_t *num)
{
    int n = tide_kernel_num_inputs(ctx) - first;
    if (n != q->cfg.num_components)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "queue '%s' takes elements of %d component%s, not %d",
                                 q->res.name, q->cfg.num_components, q->cfg.num_components == 1 ? "" : "s", n);
    *num = 1;
    for (int i = 0; i < n; i++) {
        tide_tensor *t = tide_kernel_input(ctx, first + i);
        char sa[TIDE_SHAPE_STR_MAX], sb[TIDE_SHAPE_STR_MAX];
        if (tide_tensor_dtype(t) != q->cfg.dtypes[i])
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "queue '%s': component %d has dtype %s, but the "
                                     "queue holds %s", q->res.name, i, tide_dtype_name(tide_tensor_dtype(t)),
                                     tide_dtype_name(q->cfg.dtypes[i]));
        const tide_shape *s = tide_tensor_shape(t);
        tide_shape elem = *s;
        if (many) {
            if (s->rank < 1)
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "queue '%s': enqueue_many's component %d is "
                                         "a scalar (it needs a batch: a first dimension)", q->res.name, i);
            if (i > 0 && s->dims[0] != *num)
                return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "queue '%s': enqueue_many's components have "
                                         "different first dimensions (%lld and %lld)", q->res.name,
                                         (long long)*num, (long long)s->dims[0]);
            *num = s->dims[0];
            elem.rank = s->rank - 1;
            memmove(elem.dims, s->dims + 1, sizeof elem.dims[0] * (size_t)elem.rank);
        }
        if (!fits(q, i, &elem))
            return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "queue '%s': component %d%s has shape %s, but the "
                                     "queue holds %s", q->res.name, i, many ? " (one row)" : "",
                                     tide_shape_format(&elem, sa, sizeof sa),
                                     tide_shape_format(&q->cfg.shapes[i], sb, sizeof sb));
    }
    return TIDE_OK;
}

static attempt *attempt_new(tide_queue *q, tide_kernel_ctx *ctx)
{
    attempt *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->q = (tide_queue *)tide__resource_retain(&q->res);
    a->ctx = ctx;
    return a;
}

void tide__queue_enqueue(tide_queue *q, tide_kernel_ctx *ctx, int first_input, bool many)
{
    int64_t num;
    tide_status st = check_components(q, ctx, first_input, many, &num);
    attempt *a = st == TIDE_OK ? attempt_new(q, ctx) : NULL;
    if (st == TIDE_OK && (!a || !(a->pending = calloc((size_t)(num ? num : 1), sizeof *a->pending))))
        st = tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory enqueueing %lld elements", (long long)num);
    for (int64_t r = 0; st == TIDE_OK && r < num; r++) {
        if (!(a->pending[r] = make_element(q, ctx, first_input, r, many)))
            st = tide_kernel_status(ctx);
        a->num_pending = r + 1;
    }
    if (st != TIDE_OK) {
        if (a)
            attempt_free(a);
        tide_kernel_done(ctx, st);
        return;
    }
    a->is_enqueue = true;
    start(q, a);
}

void tide__queue_dequeue(tide_queue *q, tide_kernel_ctx *ctx, int64_t n, bool up_to)
{
    attempt *a = attempt_new(q, ctx);
    if (a && !(a->taken = calloc((size_t)(n > 0 ? n : 1), sizeof *a->taken))) {
        attempt_free(a);
        a = NULL;
    }
    if (!a) {
        tide_kernel_done(ctx, tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory dequeueing"));
        return;
    }
    a->want = n;
    a->up_to = up_to;
    start(q, a);
}

void tide__queue_close(tide_queue *q, bool cancel_pending_enqueues)
{
    attempt_list done = {0};
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    if (cancel_pending_enqueues)
        while (q->enqueuers.head)
            claim(q, q->enqueuers.head, &done, TIDE_CANCELLED, "%s '%s' was closed with cancel_pending_enqueues "
                  "while this enqueue waited for room", kind_name(q->cfg.kind), q->res.name);
    serve(q, &done); /* dequeuers of what is left, then OUT_OF_RANGE */
    pthread_mutex_unlock(&q->lock);
    finish_all(&done);
}

int64_t tide__queue_size(tide_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int64_t n = q->count;
    pthread_mutex_unlock(&q->lock);
    return n;
}

bool tide__queue_is_closed(tide_queue *q)
{
    pthread_mutex_lock(&q->lock);
    bool closed = q->closed;
    pthread_mutex_unlock(&q->lock);
    return closed;
}

/* ---------------------------------------------------------------- the resource */

static void queue_destroy(tide_resource *r)
{
    tide_queue *q = (tide_queue *)r;
    for (int64_t i = 0; i < q->count; i++)
        element_free(q, *slot(q, i));
    free(q->ring);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

static void queue_removed(tide_resource *r) { tide__queue_close((tide_queue *)r, true); }

static const tide_resource_kind queue_kind = {.name = "queue", .destroy = queue_destroy, .removed = queue_removed};

static tide_resource *queue_make(void *arg, tide_error *err)
{
    const tide_queue_config *cfg = arg;
    tide_queue *q = calloc(1, sizeof *q);
    if (!q) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory making a queue");
        return NULL;
    }
    atomic_init(&q->res.refs, 1);
    q->res.kind = &queue_kind;
    q->cfg = *cfg;
    pthread_mutex_init(&q->lock, NULL);
    uint64_t seed = (uint64_t)cfg->seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)cfg->seed2;
    q->rng = cfg->seed || cfg->seed2 ? seed : (uint64_t)tide__now_ns() ^ (uint64_t)(uintptr_t)q;
    return &q->res;
}

/* Same dtypes and shapes (an existing queue opened by another node). */
static tide_status same_config(const tide_queue *q, const tide_queue_config *c, tide_error *err)
{
    const tide_queue_config *h = &q->cfg;
    bool same = h->kind == c->kind && h->num_components == c->num_components && h->num_shapes == c->num_shapes &&
                h->capacity == c->capacity;
    for (int i = 0; same && i < c->num_components; i++)
        same = h->dtypes[i] == c->dtypes[i] && (!c->num_shapes || tide_shape_equal(&h->shapes[i], &c->shapes[i]));
    if (same)
        return TIDE_OK;
    return tide_error_set(err, TIDE_INVALID_ARGUMENT, "queue '%s' of container '%s' exists as a %s of %d component%s "
                          "(capacity %lld%s) and cannot be opened as a %s of %d component%s (capacity %lld%s) "
                          "with other dtypes or shapes: give it another shared_name, or reset the container",
                          q->res.name, q->res.container, kind_name(h->kind), h->num_components,
                          h->num_components == 1 ? "" : "s", (long long)h->capacity, h->num_shapes ? ", shapes" : "",
                          kind_name(c->kind), c->num_components, c->num_components == 1 ? "" : "s",
                          (long long)c->capacity, c->num_shapes ? ", shapes" : "");
}

tide_queue *tide__queue_open(tide_engine *e, const char *container, const char *name, const tide_queue_config *cfg,
                             tide_error *err)
{
    tide_queue *q = (tide_queue *)tide__engine_resource(e, container, name, &queue_kind, queue_make,
                                                        (void *)cfg, err);
    if (q && same_config(q, cfg, err) != TIDE_OK) {
        tide__queue_release(q);
        return NULL;
    }
    return q;
}

void tide__queue_release(tide_queue *q)
{
    if (q)
        tide__resource_release(&q->res);
}

const tide_queue_config *tide__queue_config(const tide_queue *q) { return &q->cfg; }
const char *tide__queue_name(const tide_queue *q) { return q->res.name; }

tide_tensor *tide__queue_handle(const tide_queue *q, tide_error *err)
{
    size_t n = strlen(q->res.container) + 1 + strlen(q->res.name);
    char *text = malloc(n + 1);
    if (!text) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    snprintf(text, n + 1, "%s:%s", q->res.container, q->res.name);
    tide_tensor *t = tide_tensor_new(TIDE_STRING, &(tide_shape){.rank = 0}, err);
    if (t && tide_tensor_string_set(t, 0, text, n, err) != TIDE_OK) {
        tide_tensor_release(t);
        t = NULL;
    }
    free(text);
    return t;
}

tide_queue *tide__queue_from_handle(tide_engine *e, const tide_tensor *handle, tide_error *err)
{
    if (tide_tensor_dtype(handle) != TIDE_STRING || tide_tensor_num_elements(handle) != 1) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "a queue handle is one string (a queue op's output)");
        return NULL;
    }
    size_t len;
    const char *text = tide_tensor_string_get(handle, 0, &len);
    const char *colon = memchr(text, ':', len);
    if (!colon) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "'%.*s' is not a queue handle (CONTAINER:NAME)", (int)len, text);
        return NULL;
    }
    char *container = strndup(text, (size_t)(colon - text));
    char *name = strndup(colon + 1, len - (size_t)(colon - text) - 1);
    tide_queue *q = container && name ? (tide_queue *)tide__engine_resource(e, container, name, &queue_kind, NULL,
                                                                           NULL, err)
                                      : NULL;
    if (!q && (!container || !name))
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    free(container);
    free(name);
    return q;
}

tide_status tide__queue_config_from_attrs(const tide_attrs *attrs, tide_queue_kind kind, tide_queue_config *cfg,
                                          tide_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    const tide_dtype *types;
    int n;
    if (!tide_attrs_get_type_list(attrs, "component_types", &types, &n) || n < 1)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "a queue needs component_types (at least one dtype)");
    if (n > TIDE_QUEUE_MAX_COMPONENTS)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "a queue holds at most %d components, not %d",
                              TIDE_QUEUE_MAX_COMPONENTS, n);
    cfg->num_components = n;
    memcpy(cfg->dtypes, types, sizeof *types * (size_t)n);
    const tide_shape *shapes;
    int num_shapes = 0;
    if (tide_attrs_get_shape_list(attrs, "shapes", &shapes, &num_shapes) && num_shapes) {
        if (num_shapes != n)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "shapes lists %d shape%s for %d component%s",
                                  num_shapes, num_shapes == 1 ? "" : "s", n, n == 1 ? "" : "s");
        for (int i = 0; i < n; i++) {
            char sb[TIDE_SHAPE_STR_MAX];
            if (kind != TIDE_QUEUE_PADDING_FIFO && !tide_shape_is_fully_defined(&shapes[i]))
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "component %d's shape %s is not fully defined "
                                      "(only a PaddingFIFOQueue takes unknown dimensions)", i,
                                      tide_shape_format(&shapes[i], sb, sizeof sb));
            if (shapes[i].rank < 0)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "component %d's shape has an unknown rank", i);
        }
        cfg->num_shapes = n;
        memcpy(cfg->shapes, shapes, sizeof *shapes * (size_t)n);
    } else if (kind == TIDE_QUEUE_PADDING_FIFO) {
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "a PaddingFIFOQueue needs shapes (one per component; "
                              "-1 for a dimension to pad)");
    }
    cfg->capacity = -1;
    tide_attrs_get_int(attrs, "capacity", &cfg->capacity);
    if (cfg->capacity == 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "capacity 0: the queue could hold nothing (a negative "
                              "capacity means no limit)");
    if (cfg->capacity < 0)
        cfg->capacity = -1;
    tide_attrs_get_int(attrs, "min_after_dequeue", &cfg->min_after_dequeue);
    tide_attrs_get_int(attrs, "seed", &cfg->seed);
    tide_attrs_get_int(attrs, "seed2", &cfg->seed2);
    if (cfg->min_after_dequeue < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "min_after_dequeue is %lld (it must be >= 0)",
                              (long long)cfg->min_after_dequeue);
    if (cfg->capacity > 0 && cfg->min_after_dequeue >= cfg->capacity)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "min_after_dequeue (%lld) must be below capacity (%lld): "
                              "no dequeue could ever run", (long long)cfg->min_after_dequeue,
                              (long long)cfg->capacity);
    return TIDE_OK;
}
