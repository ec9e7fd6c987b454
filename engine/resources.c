/* resources.c — resources other than variables in the engine's containers (white paper §4.7): queues
 * and readers, shared by every session of the engine that names them, typed by their kind, dropped
 * with their container (tide_engine_reset_container) or the engine. A resource outlives its
 * container while kernels still hold it; removal first tells it (a queue closes and cancels its
 * pending enqueues) so that nothing waits on it for ever. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

tide_resource *tide__resource_retain(tide_resource *r)
{
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void tide__resource_release(tide_resource *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    free(r->name);
    free(r->container);
    r->kind->destroy(r);
}

/* Room for one more resource in c (under the containers' lock). */
static bool reserve(tide_container *c)
{
    if (!c->resources && !(c->resources = tide__names_new()))
        return false;
    if (c->num_resources < c->cap_resources)
        return true;
    int cap = c->cap_resources ? c->cap_resources * 2 : 8;
    char **keys = realloc(c->resource_keys, sizeof *keys * (size_t)cap);
    if (!keys)
        return false;
    c->resource_keys = keys;
    c->cap_resources = cap;
    return true;
}

tide_resource *tide__engine_resource(tide_engine *e, const char *container, const char *name,
                                     const tide_resource_kind *kind,
                                     tide_resource *(*make)(void *arg, tide_error *err), void *arg,
                                     tide_error *err)
{
    pthread_mutex_lock(&e->containers_lock);
    tide_container *c = tide__find_container(e, container, make != NULL);
    tide_resource *r = c && c->resources ? tide__names_get(c->resources, name) : NULL;
    if (r && r->kind != kind) {
        pthread_mutex_unlock(&e->containers_lock);
        tide_error_set(err, TIDE_FAILED_PRECONDITION, "container '%s' holds a %s named '%s', not a %s",
                       container, r->kind->name, name, kind->name);
        return NULL;
    }
    if (r || !make) {
        tide__resource_retain(r);
        pthread_mutex_unlock(&e->containers_lock);
        if (!r)
            tide_error_set(err, TIDE_NOT_FOUND, "no %s named '%s' in container '%s' (was the container reset?)",
                           kind->name, name, container);
        return r;
    }
    if (!c || !reserve(c)) {
        pthread_mutex_unlock(&e->containers_lock);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory making %s '%s'", kind->name, name);
        return NULL;
    }
    r = make(arg, err); /* under the lock: two kernels making one resource at once get the same one */
    char *key = r ? tide__strdup(name) : NULL;
    if (r && (!key || !(r->name = tide__strdup(name)) || !(r->container = tide__strdup(container)))) {
        free(key);
        tide__resource_release(r);
        pthread_mutex_unlock(&e->containers_lock);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory making %s '%s'", kind->name, name);
        return NULL;
    }
    if (r) {
        c->resource_keys[c->num_resources++] = key;
        tide__names_put(c->resources, key, tide__resource_retain(r)); /* the container's reference */
    }
    pthread_mutex_unlock(&e->containers_lock);
    return r;
}

void tide__container_free_resources(tide_container *c)
{
    /* Look every resource up before freeing any key: the table probes through the other keys. */
    for (int i = 0; i < c->num_resources; i++) {
        tide_resource *r = tide__names_get(c->resources, c->resource_keys[i]);
        if (r->kind->removed)
            r->kind->removed(r);
    }
    for (int i = 0; i < c->num_resources; i++)
        tide__resource_release(tide__names_get(c->resources, c->resource_keys[i]));
    for (int i = 0; i < c->num_resources; i++)
        free(c->resource_keys[i]);
    free(c->resource_keys);
    tide__names_free(c->resources);
}

/* ---------------------------------------------------------------- resources of kernels outside the engine
 * (tide_op.h: tide_kernel_resource). A wrapper resource of one internal kind carries the caller's
 * type and object; the type is compared by pointer. */

typedef struct public_resource {
    tide_resource res;           /* first */
    const tide_resource_type *type;
    void *object;
} public_resource;

static void public_destroy(tide_resource *r)
{
    public_resource *p = (public_resource *)r;
    p->type->destroy(p->object);
    free(p);
}

static void public_removed(tide_resource *r)
{
    public_resource *p = (public_resource *)r;
    if (p->type->removed)
        p->type->removed(p->object);
}

static const tide_resource_kind public_kind = {.name = "resource", .destroy = public_destroy,
                                               .removed = public_removed};

typedef struct public_make {
    const tide_resource_type *type;
    void *(*make)(void *arg, tide_error *err);
    void *arg;
} public_make;

static tide_resource *make_public(void *arg, tide_error *err)
{
    public_make *m = arg;
    public_resource *p = calloc(1, sizeof *p);
    if (!p) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory making a %s", m->type->name);
        return NULL;
    }
    if (!(p->object = m->make(m->arg, err))) {
        free(p);
        return NULL;
    }
    atomic_init(&p->res.refs, 1);
    p->res.kind = &public_kind;
    p->type = m->type;
    return &p->res;
}

tide_resource_handle *tide_kernel_resource(tide_kernel_ctx *ctx, const char *container, const char *name,
                                           const tide_resource_type *type, void *(*make)(void *arg, tide_error *err),
                                           void *arg, void **object)
{
    *object = NULL;
    tide_engine *e = ctx->kn->engine;
    if (!e) {
        tide_kernel_error(ctx, TIDE_FAILED_PRECONDITION, "a %s lives in an engine's container: run it in a session",
                          type->name);
        return NULL;
    }
    public_make m = {type, make, arg};
    tide_error *err = tide_error_new();
    public_resource *p = (public_resource *)tide__engine_resource(e, container ? container : "", name, &public_kind,
                                                                  make ? make_public : NULL, &m, err);
    if (p && p->type != type) {
        tide_error_set(err, TIDE_FAILED_PRECONDITION, "container '%s' holds a %s named '%s', not a %s",
                       container ? container : "", p->type->name, name, type->name);
        tide__resource_release(&p->res);
        p = NULL;
    }
    if (!p)
        tide_kernel_error(ctx, tide_error_code(err), "%s", tide_error_message(err));
    tide_error_free(err);
    if (p)
        *object = p->object;
    return (tide_resource_handle *)p;
}

void tide_resource_release(tide_resource_handle *h) { tide__resource_release((tide_resource *)h); }
