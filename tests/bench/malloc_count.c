/* malloc_count.c — an LD_PRELOAD library for step_memory.py: counts the calls to malloc, calloc, realloc
 * and the aligned allocators of a whole process, and the bytes they ask for, and at exit appends one JSON
 * line with those counts and the process's minor page faults (getrusage) to $MALLOC_COUNT_OUT. Running a
 * program for two lengths and subtracting gives what each extra step allocates in steady state. The
 * counters are atomic (the engine allocates on its pool threads); glibc's __libc_* entry points do the
 * real work, so no dlsym bootstrapping is needed. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);

static atomic_llong calls, bytes;

static void count(size_t n)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes, (long long)n, memory_order_relaxed);
}

void *malloc(size_t n) { count(n); return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { count(k * n); return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { count(n); return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { count(n); return __libc_memalign(a, n); }
void *memalign(size_t a, size_t n) { count(n); return __libc_memalign(a, n); }

int posix_memalign(void **out, size_t a, size_t n)
{
    count(n);
    void *p = __libc_memalign(a, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("MALLOC_COUNT_OUT");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(f, "{\"allocations\": %lld, \"bytes\": %lld, \"minor_faults\": %ld}\n", atomic_load(&calls),
            atomic_load(&bytes), ru.ru_minflt);
    fclose(f);
}
