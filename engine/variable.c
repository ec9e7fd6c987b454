/* variable.c — variables and the named containers that hold them. A variable is a persistent,
 * lockable slot holding one tensor; it outlives runs and is shared by every session of the engine
 * that names it. Readers get the tensor itself (a snapshot: updates replace it, or write in place
 * only when nobody else holds it). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void tide_variable_lock(tide_variable *v) { pthread_mutex_lock(&v->lock); }
void tide_variable_unlock(tide_variable *v) { pthread_mutex_unlock(&v->lock); }
const char *tide_variable_name(const tide_variable *v) { return v->name; }
tide_dtype tide_variable_dtype(const tide_variable *v) { return v->dtype; }
tide_shape tide_variable_shape(const tide_variable *v) { return v->shape; }
tide_tensor *tide_variable_value(tide_variable *v) { return v->value; }

void tide_variable_set_value(tide_variable *v, tide_tensor *t)
{
    tide_tensor *old = v->value;
    v->value = tide_tensor_retain(t);
    tide_tensor_release(old);
}

void tide__variable_release(tide_variable *v)
{
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1)
        return;
    tide_tensor_release(v->value);
    pthread_mutex_destroy(&v->lock);
    free(v->name);
    free(v);
}

tide_container *tide__find_container(tide_engine *e, const char *name, bool create)
{
    for (tide_container *c = e->containers; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    if (!create)
        return NULL;
    tide_container *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->name = tide__strdup(name);
    c->vars = tide__names_new();
    if (!c->name || !c->vars) {
        free(c->name);
        tide__names_free(c->vars);
        free(c);
        return NULL;
    }
    c->next = e->containers;
    e->containers = c;
    return c;
}

tide_variable *tide__engine_variable(tide_engine *e, const char *container, const char *name,
                                     tide_dtype dt, const tide_shape *shape, bool create,
                                     bool redeclare, tide_error *err)
{
    pthread_mutex_lock(&e->containers_lock);
    tide_container *c = tide__find_container(e, container, create);
    tide_variable *v = c ? tide__names_get(c->vars, name) : NULL;
    if (v) {
        if (redeclare) { /* an Assign of this declaration replaces whatever another one left */
            pthread_mutex_lock(&v->lock);
            v->dtype = dt;
            v->shape = *shape;
            pthread_mutex_unlock(&v->lock);
        } else if (v->dtype != dt) {
            pthread_mutex_unlock(&e->containers_lock);
            tide_error_set(err, TIDE_FAILED_PRECONDITION,
                           "variable '%s' in container '%s' holds %s, but this node declares %s (another "
                           "graph declared it first): run its initializer to replace the value", name,
                           container, tide_dtype_name(v->dtype), tide_dtype_name(dt));
            return NULL;
        }
        atomic_fetch_add(&v->refs, 1);
        pthread_mutex_unlock(&e->containers_lock);
        return v;
    }
    if (!create || !c) {
        pthread_mutex_unlock(&e->containers_lock);
        tide_error_set(err, create ? TIDE_RESOURCE_EXHAUSTED : TIDE_NOT_FOUND,
                       create ? "out of memory creating variable '%s'" : "no variable '%s'", name);
        return NULL;
    }
    if (c->count == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        char **keys = realloc(c->keys, (size_t)cap * sizeof *keys);
        if (!keys) {
            pthread_mutex_unlock(&e->containers_lock);
            tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
            return NULL;
        }
        c->keys = keys;
        c->cap = cap;
    }
    v = calloc(1, sizeof *v);
    char *key = tide__strdup(name);
    if (!v || !key) {
        free(v);
        free(key);
        pthread_mutex_unlock(&e->containers_lock);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    atomic_init(&v->refs, 2); /* the container's and the caller's */
    pthread_mutex_init(&v->lock, NULL);
    v->name = tide__strdup(name);
    v->dtype = dt;
    v->shape = *shape;
    c->keys[c->count++] = key;
    tide__names_put(c->vars, key, v);
    pthread_mutex_unlock(&e->containers_lock);
    return v;
}

static void container_free(tide_container *c)
{
    tide__container_free_resources(c);
    /* Look every variable up before freeing any key: the table probes through the other keys. */
    for (int i = 0; i < c->count; i++)
        tide__variable_release(tide__names_get(c->vars, c->keys[i]));
    for (int i = 0; i < c->count; i++)
        free(c->keys[i]);
    free(c->keys);
    tide__names_free(c->vars);
    free(c->name);
    free(c);
}

tide_status tide_engine_reset_container(tide_engine *e, const char *container, tide_error *err)
{
    const char *name = container ? container : "";
    pthread_mutex_lock(&e->containers_lock);
    for (tide_container **at = &e->containers; *at; at = &(*at)->next)
        if (strcmp((*at)->name, name) == 0) {
            tide_container *c = *at;
            *at = c->next;
            pthread_mutex_unlock(&e->containers_lock);
            container_free(c); /* variables in use by running kernels live on until released */
            return TIDE_OK;
        }
    pthread_mutex_unlock(&e->containers_lock);
    if (name[0])
        return tide_error_set(err, TIDE_NOT_FOUND, "no container named '%s'", name);
    return TIDE_OK; /* the default container always exists, if only empty */
}

int tide_engine_container_size(tide_engine *e, const char *container)
{
    pthread_mutex_lock(&e->containers_lock);
    tide_container *c = tide__find_container(e, container ? container : "", false);
    int n = c ? c->count : 0;
    pthread_mutex_unlock(&e->containers_lock);
    return n;
}

void tide__engine_free_containers(tide_engine *e)
{
    while (e->containers) {
        tide_container *c = e->containers;
        e->containers = c->next;
        container_free(c);
    }
}
