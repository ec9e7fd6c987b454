/* temp_db.h — a run-log file in a fresh temporary directory for store tests, and its removal (with
 * SQLite's -wal and -shm companions). Header-only. */
#ifndef TIDE_TEST_TEMP_DB_H
#define TIDE_TEST_TEMP_DB_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static char dir[64], db_path[128];

/* Sets db_path to DIR/runs.db in a new directory /tmp/<prefix>-XXXXXX. */
static inline void temp_db_new(const char *prefix)
{
    snprintf(dir, sizeof dir, "/tmp/%s-XXXXXX", prefix);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
}

/* The same in /dev/shm when it is there (a tmpfs: SQLite's fsyncs cost nothing), for tests that make
 * hundreds of logs; else in /tmp. */
static inline void temp_db_new_in_memory_fs(const char *prefix)
{
    const char *parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/%s-XXXXXX", parent, prefix);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
}

static inline void temp_db_remove(void)
{
    const char *suffix[3] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", db_path, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
}

#endif
