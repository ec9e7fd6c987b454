/* atomic_file.h — what npz.c and saver.c share to replace files atomically: temporary names beside
 * the target, fsync of a directory, and the removal of the temporary files a killed save left.
 * Private to engine/checkpoint/. */
#ifndef TIDE_ATOMIC_FILE_H
#define TIDE_ATOMIC_FILE_H

#include "tide.h"

/* "PATH.tmp-PID@HOST", this process's temporary file for path (HOST: this machine's name, letters,
 * digits, '.' and '-' of it; malloc'd; NULL when out of memory). */
char *tide__ckpt_temp_name(const char *path);

/* The directory that holds path (malloc'd; "." for a bare name; NULL when out of memory). */
char *tide__ckpt_directory_of(const char *path);

/* fsync of the directory dir, which makes the renames in it durable. */
tide_status tide__ckpt_fsync_directory(const char *dir, tide_error *err);

/* Deletes dir's temporary files of processes of this machine that no longer run: "NAME.npz.tmp-PID@HOST"
 * and "checkpoint.tmp-PID@HOST" (what a save killed mid-write leaves; also without "@HOST", as earlier
 * versions named them). Those of this process, of live ones and of other machines stay (they may be
 * being written). A file that cannot be deleted is reported on stderr; nothing else is touched.
 * Returns how many were deleted. */
int tide__ckpt_remove_stale_temporaries(const char *dir);

/* How long the phases of the last tide_npz_write in this process took, in nanoseconds (for
 * tests/bench/bench_checkpoint.c): the archive written into the temporary file, its fsync, the rename
 * over the target (which frees the old file's blocks), the directory's fsync. Written whole after each
 * successful write (atomically per field: concurrent writes may mix their phases). */
enum { TIDE_NPZ_ARCHIVE, TIDE_NPZ_FSYNC, TIDE_NPZ_RENAME, TIDE_NPZ_DIR_FSYNC, TIDE_NPZ_PHASES };
void tide__npz_last_phases(int64_t ns[TIDE_NPZ_PHASES]);

#endif
