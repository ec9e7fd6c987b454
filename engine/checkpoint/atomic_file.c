/* atomic_file.c — replacing files atomically (atomic_file.h): a file is written under a temporary
 * name beside its target ("PATH.tmp-PID"), fsynced, renamed over the target, and the directory
 * fsynced. A process killed between the first and the third step leaves its temporary file; the
 * next save into that directory deletes such files once their process is gone (kill(pid, 0) fails
 * with ESRCH), and only names of the two forms the checkpoint code writes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"

#define TEMP_MARK ".tmp-"

char *tide__ckpt_temp_name(const char *path)
{
    char *tmp = malloc(strlen(path) + sizeof TEMP_MARK + 24);
    if (tmp)
        sprintf(tmp, "%s%s%ld", path, TEMP_MARK, (long)getpid());
    return tmp;
}

char *tide__ckpt_directory_of(const char *path)
{
    char *copy = strdup(path);
    char *dir = copy ? strdup(dirname(copy)) : NULL;
    free(copy);
    return dir;
}

tide_status tide__ckpt_fsync_directory(const char *dir, tide_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return tide_error_set(err, TIDE_INTERNAL, "cannot fsync the directory %s: %s", dir, strerror(saved));
    }
    close(fd);
    return TIDE_OK;
}

/* The process id of a temporary file's name ("X.npz.tmp-PID" or "checkpoint.tmp-PID"), or 0. */
static long temporary_owner(const char *name)
{
    const char *mark = strstr(name, TEMP_MARK);
    if (!mark)
        return 0;
    while (strstr(mark + 1, TEMP_MARK))
        mark = strstr(mark + 1, TEMP_MARK);
    size_t stem = (size_t)(mark - name);
    bool ours = (stem == strlen("checkpoint") && strncmp(name, "checkpoint", stem) == 0) ||
                (stem > strlen(".npz") && strncmp(mark - strlen(".npz"), ".npz", strlen(".npz")) == 0);
    const char *digits = mark + strlen(TEMP_MARK);
    if (!ours || !*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
        return 0;
    return strtol(digits, NULL, 10);
}

int tide__ckpt_remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = temporary_owner(e->d_name);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
        else if (errno != ENOENT)
            fprintf(stderr, "tide: could not delete %s/%s, left by a save that did not finish: %s\n", dir,
                    e->d_name, strerror(errno));
    }
    closedir(d);
    return removed;
}
