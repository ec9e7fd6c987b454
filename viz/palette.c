/* palette.c — one colour per device, the same on every page: a session's palette is the devices it
 * declared (sessions.devices) in natural name order ("/cpu:2" before "/cpu:10"), then any other device
 * seen in what is drawn, in natural order after them; colour k of the palette is the k-th of the fixed
 * list in colors.c. The graph (model.c), the timeline's lanes (timeline.c) and /api/devices (the
 * pages' tables and the node panel) all take their colours from here. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "viz_internal.h"

static int cmp_names(const void *a, const void *b)
{
    return vz_natural_cmp(*(char *const *)a, *(char *const *)b);
}

static bool add_name(void *user, const char *s)
{
    vz_palette *p = user;
    if (!s || !s[0] || vz_palette_index(p, s) >= 0)
        return true;
    char **d = realloc(p->devices, (size_t)(p->num + 1) * sizeof *d);
    if (!d)
        return false;
    p->devices = d;
    if (!(d[p->num] = strdup(s)))
        return false;
    p->num++;
    return true;
}

tide_status vz_palette_load(vz_palette *p, const char *db_path, int64_t session, tide_error *err)
{
    memset(p, 0, sizeof *p);
    tide_store_table *t = vz_query(db_path, TIDE_STORE_Q_SESSION_DEVICES, &session, 1, 1, err);
    if (!t)
        return err ? tide_error_code(err) : TIDE_INTERNAL;
    bool ok = tide_store_table_num_rows(t) == 0 || tide_store_table_is_null(t, 0, 0) ||
              vz_json_strings(tide_store_table_cell(t, 0, 0), add_name, p);
    tide_store_table_free(t);
    if (!ok)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory reading the devices of session %" PRId64,
                              session);
    if (p->num > 1)
        qsort(p->devices, (size_t)p->num, sizeof *p->devices, cmp_names);
    p->num_declared = p->num;
    return TIDE_OK;
}

int vz_palette_index(const vz_palette *p, const char *device)
{
    for (int i = 0; device && device[0] && i < p->num; i++)
        if (strcmp(p->devices[i], device) == 0)
            return i;
    return -1;
}

bool vz_palette_add(vz_palette *p, const char *device)
{
    return add_name(p, device);
}

void vz_palette_finish(vz_palette *p)
{
    if (p->num - p->num_declared > 1)
        qsort(p->devices + p->num_declared, (size_t)(p->num - p->num_declared), sizeof *p->devices, cmp_names);
}

void vz_palette_free(vz_palette *p)
{
    for (int i = 0; i < p->num; i++)
        free(p->devices[i]);
    free(p->devices);
    memset(p, 0, sizeof *p);
}

/* {"session":S,"devices":[{"device":"/cpu:0","color":"#4e79a7"},...]} of one session. */
static tide_status session_json(tide_json *j, const char *db_path, int64_t session, tide_error *err)
{
    vz_palette p;
    tide_status st = vz_palette_load(&p, db_path, session, err);
    if (st != TIDE_OK) {
        vz_palette_free(&p);
        return st;
    }
    char dev[128];
    tide_json_begin_object(j);
    tide_json_key(j, "session");
    tide_json_int(j, session);
    tide_json_key(j, "devices");
    tide_json_begin_array(j);
    for (int i = 0; i < p.num; i++) {
        tide_json_begin_object(j);
        tide_json_key(j, "device");
        tide_json_string(j, tide_device_short_name(p.devices[i], dev, sizeof dev));
        tide_json_key(j, "color");
        tide_json_string(j, vz_device_color(i));
        tide_json_end_object(j);
    }
    tide_json_end_array(j);
    tide_json_end_object(j);
    vz_palette_free(&p);
    return TIDE_OK;
}

char *tide_viz_devices_json(const char *db_path, int64_t session, size_t *len, tide_error *err)
{
    if (!db_path || session < 0) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "devices: %s", db_path ? "session must be >= 0" : "no run log");
        return NULL;
    }
    tide_store_table *t = vz_query(db_path, session ? TIDE_STORE_Q_SESSION_EXISTS : TIDE_STORE_Q_SESSION_IDS,
                                   &session, session ? 1 : 0, 1 << 20, err);
    if (!t)
        return NULL;
    if (session && tide_store_table_num_rows(t) == 0) {
        tide_store_table_free(t);
        tide_error_set(err, TIDE_NOT_FOUND, "run log %s has no session %" PRId64, db_path, session);
        return NULL;
    }
    tide_json j;
    tide_json_init(&j);
    tide_json_begin_object(&j);
    tide_json_key(&j, "unplaced");
    tide_json_string(&j, VZ_UNPLACED_COLOR);
    tide_json_key(&j, "sessions");
    tide_json_begin_array(&j);
    tide_status st = TIDE_OK;
    for (int r = 0; st == TIDE_OK && r < tide_store_table_num_rows(t); r++)
        st = session_json(&j, db_path, vz_cell_int(t, r, 0), err);
    tide_store_table_free(t);
    tide_json_end_array(&j);
    tide_json_end_object(&j);
    if (st != TIDE_OK) {
        tide_json_free(&j);
        return NULL;
    }
    char *s = tide_json_take(&j, len);
    if (!s)
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory writing the devices");
    return s;
}
