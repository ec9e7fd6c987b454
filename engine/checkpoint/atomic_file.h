/* atomic_file.h — what npz.c and saver.c share to replace files atomically: temporary names beside
 * the target, fsync of a directory, and the removal of the temporary files a killed save left.
 * Private to engine/checkpoint/. */
#ifndef TIDE_ATOMIC_FILE_H
#define TIDE_ATOMIC_FILE_H

#include "tide.h"

/* "PATH.tmp-PID", this process's temporary file for path (malloc'd; NULL when out of memory). */
char *tide__ckpt_temp_name(const char *path);

/* The directory that holds path (malloc'd; "." for a bare name; NULL when out of memory). */
char *tide__ckpt_directory_of(const char *path);

/* fsync of the directory dir, which makes the renames in it durable. */
tide_status tide__ckpt_fsync_directory(const char *dir, tide_error *err);

/* Deletes dir's temporary files of processes that no longer run: "NAME.npz.tmp-PID" and
 * "checkpoint.tmp-PID" (what a save killed mid-write leaves). Those of this process and of live ones
 * stay (they may be being written). A file that cannot be deleted is reported on stderr; nothing else
 * is touched. Returns how many were deleted. */
int tide__ckpt_remove_stale_temporaries(const char *dir);

#endif
