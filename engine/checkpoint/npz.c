/* npz.c — .npz files (numpy.savez's format: a zip archive of NAME.npy entries, stored) written with
 * libzip and read back. Writing is atomic: libzip writes the archive through a source of ours
 * (zip_file_sink.c) into a temporary file beside the target, in large writes on a writer thread,
 * reading each tensor's bytes where they are (no copy of the archive in memory); the file is fsynced,
 * renamed over the target, and the directory fsynced, so that a crash (kill -9, power loss) leaves
 * either the old file or the complete new one. Reading lists the entries and their dtypes and shapes
 * (from each .npy's header) when the file is opened, and reads one tensor at a time. The .npy encoding
 * is tide_data's (engine/data/npy.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include "atomic_file.h"
#include "tide_checkpoint.h"
#include "zip_file_sink.h"

#define NPY_SUFFIX ".npy"
#define HEADER_PEEK 4096 /* bytes of an entry read to describe it (numpy's headers are far shorter) */

typedef struct npz_entry {
    char *name;            /* without .npy */
    zip_uint64_t index, size;
    tide_dtype dtype;
    tide_shape shape;
} npz_entry;

struct tide_npz {
    char *path;
    zip_t *zip;
    npz_entry *entries;
    int count;
};

/* ---------------------------------------------------------------- writing */

static tide_status check_entries(const char *path, const char *const *names, tide_tensor *const *tensors, int n,
                                 tide_error *err)
{
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || !tensors[i])
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: entry %d has %s", path, i,
                                  tensors[i] ? "no name" : "no tensor");
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: the name '%s' is given twice", path, names[i]);
    }
    return TIDE_OK;
}

/* Adds the entries to an open archive, each a source over its .npy header and the tensor's own bytes;
 * prefixes[] receive the headers (freed by the caller after zip_close: libzip reads the fragments
 * only then). */
static tide_status add_entries(zip_t *z, const char *path, const char *const *names, tide_tensor *const *tensors,
                               int n, char **prefixes, tide_error *err)
{
    for (int i = 0; i < n; i++) {
        size_t len;
        tide_error *why = tide_error_new();
        prefixes[i] = tide_npy_prefix(tensors[i], &len, why);
        if (!prefixes[i]) {
            tide_status st = tide_error_set(err, tide_error_code(why), "%s: tensor '%s': %s", path, names[i],
                                            tide_error_message(why));
            tide_error_free(why);
            return st;
        }
        tide_error_free(why);
        zip_buffer_fragment_t parts[2] = {{(zip_uint8_t *)prefixes[i], len},
                                          {tide_tensor_data(tensors[i]), tide_tensor_byte_size(tensors[i])}};
        char *entry = malloc(strlen(names[i]) + sizeof NPY_SUFFIX);
        if (!entry)
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory", path);
        sprintf(entry, "%s%s", names[i], NPY_SUFFIX);
        zip_source_t *src = zip_source_buffer_fragment(z, parts, parts[1].length ? 2 : 1, 0);
        zip_int64_t index = src ? zip_file_add(z, entry, src, ZIP_FL_ENC_UTF_8) : -1;
        free(entry);
        if (index < 0) {
            if (src)
                zip_source_free(src);
            return tide_error_set(err, TIDE_INTERNAL, "%s: cannot add '%s': %s", path, names[i], zip_strerror(z));
        }
        if (zip_set_file_compression(z, (zip_uint64_t)index, ZIP_CM_STORE, 0) != 0)
            return tide_error_set(err, TIDE_INTERNAL, "%s: %s", path, zip_strerror(z));
    }
    return TIDE_OK;
}

/* Writes all of fd's bytes (EINTR and short writes continued). */
static bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Writes the archive into the open, empty file fd: libzip writes it through the file sink
 * (zip_file_sink.c), reading each tensor's bytes where they are. */
static tide_status write_archive(int fd, const char *path, const char *const *names, tide_tensor *const *tensors,
                                 int n, tide_error *err)
{
    zip_error_t ze;
    zip_error_init(&ze);
    int write_errno = 0;
    zip_source_t *sink = tide__zip_file_sink_new(fd, &write_errno, &ze);
    zip_t *z = sink ? zip_open_from_source(sink, ZIP_TRUNCATE, &ze) : NULL;
    char **prefixes = z ? calloc((size_t)n, sizeof *prefixes) : NULL;
    if (!prefixes) {
        tide_status st = tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot write %s: %s", path,
                                        z ? "out of memory" : zip_error_strerror(&ze));
        if (z)
            zip_discard(z); /* frees the sink too */
        else if (sink)
            zip_source_free(sink);
        zip_error_fini(&ze);
        return st;
    }
    zip_error_fini(&ze);
    tide_status st = add_entries(z, path, names, tensors, n, prefixes, err);
    if (st == TIDE_OK && zip_close(z) != 0)
        st = tide_error_set(err, write_errno == ENOSPC ? TIDE_RESOURCE_EXHAUSTED : TIDE_INVALID_ARGUMENT,
                            "cannot write %s: %s", path, write_errno ? strerror(write_errno) : zip_strerror(z));
    else if (st == TIDE_OK)
        z = NULL; /* closed and freed */
    if (z)
        zip_discard(z);
    for (int i = 0; i < n; i++)
        free(prefixes[i]);
    free(prefixes);
    return st;
}

static _Atomic int64_t last_phases[TIDE_NPZ_PHASES];

void tide__npz_last_phases(int64_t ns[TIDE_NPZ_PHASES])
{
    for (int i = 0; i < TIDE_NPZ_PHASES; i++)
        ns[i] = atomic_load(&last_phases[i]);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

tide_status tide_npz_write(const char *path, const char *const *names, tide_tensor *const *tensors, int n,
                           tide_error *err)
{
    if (!path || n < 0 || (n && (!names || !tensors)))
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_npz_write: a path and n names and tensors are needed");
    tide_status st = check_entries(path, names, tensors, n, err);
    if (st != TIDE_OK)
        return st;
    static const unsigned char empty_zip[22] = {0x50, 0x4b, 0x05, 0x06}; /* numpy's empty .npz */
    char *tmp = tide__ckpt_temp_name(path), *dir = tide__ckpt_directory_of(path);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    }
    tide__ckpt_remove_stale_temporaries(dir);
    int64_t t[TIDE_NPZ_PHASES + 1];
    t[0] = now_ns();
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        st = tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT, "cannot write %s: %s",
                            path, strerror(errno));
    else if (n > 0)
        st = write_archive(fd, path, names, tensors, n, err);
    else if (!write_all(fd, empty_zip, sizeof empty_zip))
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write %s: %s", path, strerror(errno));
    t[1] = now_ns();
    if (fd >= 0 && st == TIDE_OK && fsync(fd) != 0)
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot fsync %s: %s", tmp, strerror(errno));
    if (fd >= 0 && close(fd) != 0 && st == TIDE_OK)
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot write %s: %s", path, strerror(errno));
    t[2] = now_ns();
    if (st == TIDE_OK && rename(tmp, path) != 0)
        st = tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (st != TIDE_OK && fd >= 0)
        unlink(tmp);
    t[3] = now_ns();
    if (st == TIDE_OK)
        st = tide__ckpt_fsync_directory(dir, err);
    t[4] = now_ns();
    for (int i = 0; st == TIDE_OK && i < TIDE_NPZ_PHASES; i++)
        atomic_store(&last_phases[i], t[i + 1] - t[i]);
    free(tmp);
    free(dir);
    return st;
}

/* ---------------------------------------------------------------- reading */

/* Reads up to cap bytes of entry index into buf; the count read, or -1. */
static zip_int64_t read_entry(zip_t *z, zip_uint64_t index, void *buf, zip_uint64_t cap)
{
    zip_file_t *f = zip_fopen_index(z, index, 0);
    if (!f)
        return -1;
    zip_uint64_t got = 0;
    while (got < cap) {
        zip_int64_t r = zip_fread(f, (char *)buf + got, cap - got);
        if (r < 0) {
            zip_fclose(f);
            return -1;
        }
        if (r == 0)
            break;
        got += (zip_uint64_t)r;
    }
    zip_fclose(f);
    return (zip_int64_t)got;
}

static tide_status describe_entry(tide_npz *z, npz_entry *e, tide_error *err)
{
    char peek[HEADER_PEEK];
    zip_int64_t got = read_entry(z->zip, e->index, peek, sizeof peek < e->size ? sizeof peek : e->size);
    if (got < 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: cannot read entry '%s.npy': %s", z->path, e->name,
                              zip_strerror(z->zip));
    char *who = malloc(strlen(z->path) + strlen(e->name) + 8);
    if (!who)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    sprintf(who, "%s: '%s'", z->path, e->name);
    tide_status st = tide_npy_describe(peek, (size_t)got, who, &e->dtype, &e->shape, err);
    free(who);
    return st;
}

static tide_status list_entries(tide_npz *z, tide_error *err)
{
    zip_int64_t n = zip_get_num_entries(z->zip, 0);
    z->entries = calloc((size_t)(n > 0 ? n : 1), sizeof *z->entries);
    if (!z->entries)
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t sb;
        if (zip_stat_index(z->zip, (zip_uint64_t)i, 0, &sb) != 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: %s", z->path, zip_strerror(z->zip));
        size_t len = strlen(sb.name);
        if (len <= strlen(NPY_SUFFIX) || strcmp(sb.name + len - strlen(NPY_SUFFIX), NPY_SUFFIX) != 0)
            continue; /* not a tensor (numpy.load ignores it too) */
        npz_entry *e = &z->entries[z->count++];
        e->name = strndup(sb.name, len - strlen(NPY_SUFFIX));
        e->index = (zip_uint64_t)i;
        e->size = sb.size;
        if (!e->name)
            return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        tide_status st = describe_entry(z, e, err);
        if (st != TIDE_OK)
            return st;
    }
    return TIDE_OK;
}

tide_npz *tide_npz_open(const char *path, tide_error *err)
{
    if (!path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_npz_open: path is NULL");
        return NULL;
    }
    int zerr = 0;
    zip_t *zip = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!zip) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        tide_error_set(err, zerr == ZIP_ER_NOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT,
                       "cannot open checkpoint %s: %s%s", path, zip_error_strerror(&ze),
                       zerr == ZIP_ER_NOZIP || zerr == ZIP_ER_INCONS ? " (not a complete .npz file)" : "");
        zip_error_fini(&ze);
        return NULL;
    }
    tide_npz *z = calloc(1, sizeof *z);
    if (!z || !(z->path = strdup(path))) {
        free(z);
        zip_discard(zip);
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    z->zip = zip;
    if (list_entries(z, err) != TIDE_OK) {
        tide_npz_close(z);
        return NULL;
    }
    return z;
}

int tide_npz_count(const tide_npz *z) { return z->count; }
const char *tide_npz_name(const tide_npz *z, int i) { return i >= 0 && i < z->count ? z->entries[i].name : NULL; }

static const npz_entry *find(const tide_npz *z, const char *name)
{
    for (int i = 0; i < z->count; i++)
        if (strcmp(z->entries[i].name, name) == 0)
            return &z->entries[i];
    return NULL;
}

/* NOT_FOUND for name, listing what the file holds (the first few). */
static tide_status not_found(const tide_npz *z, const char *name, tide_error *err)
{
    char held[512];
    size_t at = 0;
    held[0] = '\0';
    for (int i = 0; i < z->count && at < sizeof held - 64; i++)
        at += (size_t)snprintf(held + at, sizeof held - at, "%s'%s'", i ? ", " : "", z->entries[i].name);
    return tide_error_set(err, TIDE_NOT_FOUND, "checkpoint %s has no tensor '%s' (it holds %d: %s%s)", z->path, name,
                          z->count, z->count ? held : "nothing", at >= sizeof held - 64 ? ", ..." : "");
}

tide_status tide_npz_describe(const tide_npz *z, const char *name, tide_dtype *dtype, tide_shape *shape,
                              tide_error *err)
{
    const npz_entry *e = find(z, name);
    if (!e)
        return not_found(z, name, err);
    *dtype = e->dtype;
    *shape = e->shape;
    return TIDE_OK;
}

tide_tensor *tide_npz_read(tide_npz *z, const char *name, tide_error *err)
{
    const npz_entry *e = find(z, name);
    if (!e) {
        not_found(z, name, err);
        return NULL;
    }
    void *bytes = malloc(e->size ? e->size : 1);
    if (!bytes) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "%s: out of memory reading '%s' (%llu bytes)", z->path, name,
                       (unsigned long long)e->size);
        return NULL;
    }
    zip_int64_t got = read_entry(z->zip, e->index, bytes, e->size);
    tide_tensor *t = NULL;
    if (got != (zip_int64_t)e->size) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: cannot read '%s': %s", z->path, name,
                       got < 0 ? zip_strerror(z->zip) : "truncated");
    } else {
        char *who = malloc(strlen(z->path) + strlen(name) + 8);
        if (who) {
            sprintf(who, "%s: '%s'", z->path, name);
            t = tide_npy_from_bytes(bytes, (size_t)e->size, who, err);
            free(who);
        }
    }
    free(bytes);
    return t;
}

void tide_npz_close(tide_npz *z)
{
    if (!z)
        return;
    for (int i = 0; i < z->count; i++)
        free(z->entries[i].name);
    free(z->entries);
    if (z->zip)
        zip_discard(z->zip); /* read-only: nothing to write */
    free(z->path);
    free(z);
}
