/* fault_vfs.h — an SQLite VFS shim for fault injection (SQLite's own test approach, test_vfs.c): it
 * wraps the default VFS, becomes the default, and fails the Nth write, fsync or lock (file locks and
 * WAL shared-memory locks) counted from when it is armed, once or from then on; or it plays a full disk
 * (writes that would grow the files past a budget fail with SQLITE_FULL). Counters are atomic: the
 * store's writer thread does the I/O. */
#ifndef TIDE_TEST_FAULT_VFS_H
#define TIDE_TEST_FAULT_VFS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum fault_kind {
    FAULT_WRITE = 0, /* xWrite fails with SQLITE_IOERR_WRITE */
    FAULT_SYNC = 1,  /* xSync fails with SQLITE_IOERR_FSYNC */
    FAULT_LOCK = 2,  /* xLock or xShmLock fails with SQLITE_IOERR_LOCK */
    FAULT_KINDS = 3,
} fault_kind;

/* Registers the shim as the default VFS (once; later calls do nothing). */
void fault_vfs_install(void);
/* Fails the nth (1-based) operation of that kind from now on: only that one, or (persistent) every
 * one from it on. Resets the counts. */
void fault_vfs_arm(fault_kind kind, int64_t nth, bool persistent);
/* Plays a full disk: the files written through the shim from now on may grow by `bytes` in all (0: no
 * limit). Resets the counts. */
void fault_vfs_disk_budget(int64_t bytes);
/* No more faults. */
void fault_vfs_disarm(void);
/* Operations of a kind seen since the last arm/disarm/budget, and faults injected. */
int64_t fault_vfs_count(fault_kind kind);
int64_t fault_vfs_injected(void);
const char *fault_vfs_kind_name(fault_kind kind);

#endif
