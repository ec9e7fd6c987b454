/* loop_stack.c — CPU kernels of _LoopStack, _LoopStackPush and _LoopStackPop
 * (engine/ops/loop_stack_ops.c). A stack lives in the buffer of its handle tensor: an int64 scalar
 * (its first field, a serial number, is what prints) whose deallocator frees the stack with its last
 * reference, at the end of the run at the latest. Push and pop accept only handles made here: every
 * live stack is in a table, checked before a handle's memory is trusted. Entries are kept by index
 * (the forward iteration), under the stack's lock, since iterations run in parallel. */
#include <stdlib.h>
#include <string.h>

#include "../../engine/internal.h"

typedef struct loop_stack {
    int64_t serial;           /* first: the handle's int64 value */
    pthread_mutex_t lock;
    tide_dtype elem_type;
    tide_tensor **items;      /* by index; NULL: empty; tide__dead: a dead value */
    int64_t cap;
} loop_stack;

/* Every live stack, to check handles against. */
static struct {
    pthread_mutex_t lock;
    loop_stack **items;
    int count, cap;
    int64_t next_serial;
} live = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool live_add(loop_stack *s)
{
    pthread_mutex_lock(&live.lock);
    bool ok = true;
    if (live.count == live.cap) {
        int cap = live.cap ? 2 * live.cap : 16;
        loop_stack **grown = realloc(live.items, sizeof *grown * (size_t)cap);
        if (grown) {
            live.items = grown;
            live.cap = cap;
        } else {
            ok = false;
        }
    }
    if (ok) {
        live.items[live.count++] = s;
        s->serial = ++live.next_serial;
    }
    pthread_mutex_unlock(&live.lock);
    return ok;
}

static void stack_free(void *data, size_t bytes, void *arg)
{
    (void)bytes;
    (void)arg;
    loop_stack *s = data;
    pthread_mutex_lock(&live.lock);
    for (int i = 0; i < live.count; i++)
        if (live.items[i] == s) {
            live.items[i] = live.items[--live.count];
            break;
        }
    pthread_mutex_unlock(&live.lock);
    for (int64_t i = 0; i < s->cap; i++)
        tide_tensor_release(s->items[i]);
    free(s->items);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The stack a handle names, or NULL (error recorded) when it names none. */
static loop_stack *stack_of(tide_kernel_ctx *ctx)
{
    const tide_tensor *h = tide_kernel_input(ctx, 0);
    loop_stack *s = h && tide_tensor_num_elements(h) == 1 ? tide_tensor_data(h) : NULL;
    pthread_mutex_lock(&live.lock);
    bool found = false;
    for (int i = 0; s && i < live.count && !found; i++)
        found = live.items[i] == s;
    pthread_mutex_unlock(&live.lock);
    if (!found)
        tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "input 'handle' is not a stack made by _LoopStack");
    return found ? s : NULL;
}

static tide_status stack_compute(tide_kernel_ctx *ctx)
{
    loop_stack *s = calloc(1, sizeof *s);
    if (!s)
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    tide_attrs_get_type(tide_kernel_attrs(ctx), "elem_type", &s->elem_type);
    pthread_mutex_init(&s->lock, NULL);
    tide_shape scalar = tide_shape_scalar();
    tide_tensor *h = live_add(s) ? tide_tensor_wrap(TIDE_INT64, &scalar, s, sizeof s->serial, stack_free, NULL, NULL) : NULL;
    if (!h) {
        stack_free(s, 0, NULL);
        return tide_kernel_error(ctx, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    }
    tide_kernel_set_output(ctx, 0, h);
    tide_tensor_release(h);
    return TIDE_OK;
}

static tide_status push_compute(tide_kernel_ctx *ctx)
{
    if (tide_kernel_input_is_dead(ctx, 1) || tide_kernel_input_is_dead(ctx, 0))
        return TIDE_OK; /* an iteration that does not run the body: nothing to keep */
    loop_stack *s = stack_of(ctx);
    if (!s)
        return tide_kernel_status(ctx);
    int64_t i = *(const int32_t *)tide_tensor_data(tide_kernel_input(ctx, 1));
    tide_tensor *v = tide_kernel_input_is_dead(ctx, 2) ? tide__dead : tide_kernel_input(ctx, 2);
    if (i < 0)
        return tide_kernel_error(ctx, TIDE_INVALID_ARGUMENT, "index %lld is negative", (long long)i);
    pthread_mutex_lock(&s->lock);
    tide_status st = TIDE_OK;
    if (i >= s->cap) {
        int64_t cap = s->cap ? s->cap : 16;
        while (cap <= i)
            cap *= 2;
        tide_tensor **grown = realloc(s->items, sizeof *grown * (size_t)cap);
        if (grown) {
            memset(grown + s->cap, 0, sizeof *grown * (size_t)(cap - s->cap));
            s->items = grown;
            s->cap = cap;
        } else {
            st = TIDE_RESOURCE_EXHAUSTED;
        }
    }
    if (st == TIDE_OK) {
        tide_tensor_release(s->items[i]);
        s->items[i] = tide_tensor_retain(v);
    }
    pthread_mutex_unlock(&s->lock);
    return st == TIDE_OK ? TIDE_OK : tide_kernel_error(ctx, st, "out of memory keeping iteration %lld", (long long)i);
}

static tide_status pop_compute(tide_kernel_ctx *ctx)
{
    loop_stack *s = stack_of(ctx);
    if (!s)
        return tide_kernel_status(ctx);
    int64_t i = *(const int32_t *)tide_tensor_data(tide_kernel_input(ctx, 1));
    pthread_mutex_lock(&s->lock);
    tide_tensor *v = i >= 0 && i < s->cap ? s->items[i] : NULL;
    if (v)
        s->items[i] = NULL;
    pthread_mutex_unlock(&s->lock);
    if (!v)
        return tide_kernel_error(ctx, TIDE_INTERNAL, "nothing was kept for iteration %lld", (long long)i);
    if (v == tide__dead)
        tide_kernel_set_output_dead(ctx, 0);
    else
        tide_kernel_set_output(ctx, 0, v);
    tide_tensor_release(v);
    return TIDE_OK;
}

static void register_loop_stack_kernels(void)
{
    /* Host only: a stack lives in its handle's buffer, which no copy to device memory may carry. */
    tide_kernel_register(&(tide_kernel_spec){.op = "_LoopStack", .device_type = "cpu", .flags = TIDE_KERNEL_HOST_ONLY,
                                              .compute = stack_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "_LoopStackPush", .device_type = "cpu",
                                              .flags = TIDE_KERNEL_SEES_DEAD | TIDE_KERNEL_HOST_ONLY,
                                              .compute = push_compute});
    tide_kernel_register(&(tide_kernel_spec){.op = "_LoopStackPop", .device_type = "cpu", .flags = TIDE_KERNEL_HOST_ONLY,
                                              .compute = pop_compute});
}
TIDE_REGISTER(register_loop_stack_kernels)
