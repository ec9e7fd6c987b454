/* atomic_file.c — replacing files atomically (atomic_file.h): a file is written under a temporary
 * name beside its target ("PATH.tmp-PID@HOST"), fsynced, renamed over the target, and the directory
 * fsynced. A process killed between the first and the third step leaves its temporary file; the
 * next save into that directory deletes such files once their process is gone (kill(pid, 0) fails
 * with ESRCH), only names of the two forms the checkpoint code writes, and only this machine's (a
 * directory on a shared file system may hold another machine's save in progress, whose process id
 * means nothing here). */
#include <ctype.h>
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
#define HOST_MAX 40

/* This machine's name as temporary names carry it (letters, digits, '.' and '-'; at most HOST_MAX). */
static void host_name(char out[HOST_MAX + 1])
{
    char raw[256] = "";
    gethostname(raw, sizeof raw - 1);
    size_t n = 0;
    for (const char *c = raw; *c && n < HOST_MAX; c++)
        if (isalnum((unsigned char)*c) || *c == '.' || *c == '-')
            out[n++] = *c;
    out[n] = '\0';
}

char *tide__ckpt_temp_name(const char *path)
{
    char host[HOST_MAX + 1];
    host_name(host);
    char *tmp = malloc(strlen(path) + sizeof TEMP_MARK + 24 + sizeof host);
    if (tmp)
        sprintf(tmp, "%s%s%ld@%s", path, TEMP_MARK, (long)getpid(), host);
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

/* The process id of a temporary file's name ("X.npz.tmp-PID@HOST" or "checkpoint.tmp-PID@HOST"; without
 * "@HOST", as earlier versions wrote them), or 0; *host gets where HOST starts (NULL without one). */
static long temporary_owner(const char *name, const char **host)
{
    const char *mark = strstr(name, TEMP_MARK);
    *host = NULL;
    if (!mark)
        return 0;
    while (strstr(mark + 1, TEMP_MARK))
        mark = strstr(mark + 1, TEMP_MARK);
    size_t stem = (size_t)(mark - name);
    bool ours = (stem == strlen("checkpoint") && strncmp(name, "checkpoint", stem) == 0) ||
                (stem > strlen(".npz") && strncmp(mark - strlen(".npz"), ".npz", strlen(".npz")) == 0);
    const char *digits = mark + strlen(TEMP_MARK);
    size_t len = strspn(digits, "0123456789");
    *host = digits[len] == '@' ? digits + len + 1 : NULL;
    if (!ours || !len || len > 9 || (digits[len] && !*host))
        return 0;
    return strtol(digits, NULL, 10);
}

int tide__ckpt_remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    char here[HOST_MAX + 1];
    host_name(here);
    for (struct dirent *e; (e = readdir(d));) {
        const char *host;
        long pid = temporary_owner(e->d_name, &host);
        if (pid <= 0 || (host && strcmp(host, here) != 0)) /* another machine's (a shared file system) */
            continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
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
