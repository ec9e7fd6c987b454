/* fault_vfs.c — the fault-injecting VFS shim of fault_vfs.h. Every file method forwards to the real
 * VFS's file (kept right after our struct, as SQLite's test_vfs.c does); xWrite, xSync, xLock and
 * xShmLock count their calls and fail the armed one(s); xWrite also charges the full-disk budget for the
 * bytes a write adds past the file's end. */
#include "fault_vfs.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct fault_file {
    sqlite3_file base;
    sqlite3_file *real; /* right after this struct */
} fault_file;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs shim;
static atomic_llong counts[FAULT_KINDS];
static atomic_llong injected;
static atomic_int armed_kind = -1;
static atomic_llong armed_nth;
static atomic_bool armed_persistent;
static atomic_llong budget_left; /* < 0: no budget */

static const int error_of[FAULT_KINDS] = {SQLITE_IOERR_WRITE, SQLITE_IOERR_FSYNC, SQLITE_IOERR_LOCK};

const char *fault_vfs_kind_name(fault_kind kind)
{
    static const char *const names[FAULT_KINDS] = {"write", "fsync", "lock"};
    return kind >= 0 && kind < FAULT_KINDS ? names[kind] : "?";
}

/* Counts one operation of kind; SQLITE_OK or the error to inject. */
static int count(fault_kind kind)
{
    int64_t n = atomic_fetch_add(&counts[kind], 1) + 1;
    if (atomic_load(&armed_kind) != (int)kind)
        return SQLITE_OK;
    int64_t nth = atomic_load(&armed_nth);
    if (n == nth || (n > nth && atomic_load(&armed_persistent))) {
        atomic_fetch_add(&injected, 1);
        return error_of[kind];
    }
    return SQLITE_OK;
}

static void reset_counts(void)
{
    for (int k = 0; k < FAULT_KINDS; k++)
        atomic_store(&counts[k], 0);
    atomic_store(&injected, 0);
}

void fault_vfs_arm(fault_kind kind, int64_t nth, bool persistent)
{
    reset_counts();
    atomic_store(&budget_left, -1);
    atomic_store(&armed_nth, nth);
    atomic_store(&armed_persistent, persistent);
    atomic_store(&armed_kind, (int)kind);
}

void fault_vfs_disk_budget(int64_t bytes)
{
    reset_counts();
    atomic_store(&armed_kind, -1);
    atomic_store(&budget_left, bytes > 0 ? bytes : -1);
}

void fault_vfs_disarm(void)
{
    atomic_store(&armed_kind, -1);
    atomic_store(&budget_left, -1);
    reset_counts();
}

int64_t fault_vfs_count(fault_kind kind) { return atomic_load(&counts[kind]); }
int64_t fault_vfs_injected(void) { return atomic_load(&injected); }

/* ---------------------------------------------------------------- file methods */

#define REAL(f) (((fault_file *)(f))->real)

static int f_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    return rc;
}

static int f_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    return REAL(f)->pMethods->xRead(REAL(f), buf, amt, off);
}

/* The full-disk budget: the bytes this write adds past the file's end, if they fit. */
static bool fits_budget(sqlite3_file *f, int amt, sqlite3_int64 off)
{
    if (atomic_load(&budget_left) < 0)
        return true;
    sqlite3_int64 size = 0;
    if (REAL(f)->pMethods->xFileSize(REAL(f), &size) != SQLITE_OK)
        return true;
    int64_t grow = off + amt > size ? off + amt - size : 0;
    if (grow == 0)
        return true;
    int64_t left = atomic_load(&budget_left);
    while (left >= grow)
        if (atomic_compare_exchange_weak(&budget_left, &left, left - grow))
            return true;
    return left < 0;
}

static int f_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    int rc = count(FAULT_WRITE);
    if (rc != SQLITE_OK)
        return rc;
    if (!fits_budget(f, amt, off)) {
        atomic_fetch_add(&injected, 1);
        return SQLITE_FULL;
    }
    return REAL(f)->pMethods->xWrite(REAL(f), buf, amt, off);
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size) { return REAL(f)->pMethods->xTruncate(REAL(f), size); }

static int f_sync(sqlite3_file *f, int flags)
{
    int rc = count(FAULT_SYNC);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int f_file_size(sqlite3_file *f, sqlite3_int64 *size) { return REAL(f)->pMethods->xFileSize(REAL(f), size); }

static int f_lock(sqlite3_file *f, int level)
{
    int rc = count(FAULT_LOCK);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xLock(REAL(f), level);
}

static int f_unlock(sqlite3_file *f, int level) { return REAL(f)->pMethods->xUnlock(REAL(f), level); }

static int f_check_reserved(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int f_file_control(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int f_sector_size(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }

static int f_device_characteristics(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int f_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, out);
}

static int f_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    /* only taking a lock can fail: an unlock that failed would leave SQLite's state inconsistent */
    if (flags & SQLITE_SHM_LOCK) {
        int rc = count(FAULT_LOCK);
        if (rc != SQLITE_OK)
            return rc;
    }
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}

static void f_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }

static int f_shm_unmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }

static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **out)
{
    return REAL(f)->pMethods->xFetch(REAL(f), off, amt, out);
}

static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), off, p); }

static const sqlite3_io_methods methods = {
    3, f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock, f_check_reserved,
    f_file_control, f_sector_size, f_device_characteristics, f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap,
    f_fetch, f_unfetch,
};

/* ---------------------------------------------------------------- the VFS */

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    (void)vfs;
    fault_file *f = (fault_file *)file;
    f->real = (sqlite3_file *)(f + 1);
    memset(f->real, 0, (size_t)real_vfs->szOsFile);
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    f->base.pMethods = f->real->pMethods ? &methods : NULL;
    return rc;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    (void)vfs;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *v_dl_open(sqlite3_vfs *vfs, const char *name)
{
    (void)vfs;
    return real_vfs->xDlOpen(real_vfs, name);
}

static void v_dl_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    real_vfs->xDlError(real_vfs, n, out);
}

static void (*v_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    (void)vfs;
    return real_vfs->xDlSym(real_vfs, h, sym);
}

static void v_dl_close(sqlite3_vfs *vfs, void *h)
{
    (void)vfs;
    real_vfs->xDlClose(real_vfs, h);
}

static int v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return real_vfs->xRandomness(real_vfs, n, out);
}

static int v_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return real_vfs->xSleep(real_vfs, us);
}

static int v_current_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return real_vfs->xCurrentTime(real_vfs, out);
}

static int v_get_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, out) : 0;
}

static int v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    (void)vfs;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

void fault_vfs_install(void)
{
    if (real_vfs)
        return;
    sqlite3_initialize();
    real_vfs = sqlite3_vfs_find(NULL);
    shim = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(fault_file) + real_vfs->szOsFile, .mxPathname = real_vfs->mxPathname,
        .zName = "tide-fault", .xOpen = v_open, .xDelete = v_delete, .xAccess = v_access,
        .xFullPathname = v_full_pathname, .xDlOpen = v_dl_open, .xDlError = v_dl_error, .xDlSym = v_dl_sym,
        .xDlClose = v_dl_close, .xRandomness = v_randomness, .xSleep = v_sleep, .xCurrentTime = v_current_time,
        .xGetLastError = v_get_last_error, .xCurrentTimeInt64 = v_current_time_int64,
    };
    fault_vfs_disarm();
    sqlite3_vfs_register(&shim, 1);
}
