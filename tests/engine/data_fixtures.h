/* data_fixtures.h — what the data reader suites (test_data.c, test_data_limits.c) share: fixture files
 * in a fresh mkdtemp directory removed at exit, byte strings built by hand (big- and little-endian),
 * IDX headers, and ASSERT_FAILED (the call failed with this code and a message holding every needle).
 * Header-only: one suite per executable. */
#ifndef TIDE_TEST_DATA_FIXTURES_H
#define TIDE_TEST_DATA_FIXTURES_H

#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "harness.h"
#include "tide_data.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* True when the Debian package's Fashion-MNIST files are installed; else the test is skipped. */
static inline bool have_fashion_mnist(void)
{
    struct stat st;
    if (stat(FMNIST_DIR, &st) == 0)
        return true;
    th_skip(FMNIST_DIR " is absent; apt-get install dataset-fashion-mnist");
    return false;
}

static char fixture_root[64];

static inline int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static inline void remove_fixtures(void)
{
    if (fixture_root[0])
        nftw(fixture_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A path under the fixture directory (created on first use); valid until 16 more calls. */
static inline const char *fx(const char *name)
{
    static char ring[16][512];
    static int next;
    if (!fixture_root[0]) {
        strcpy(fixture_root, "/tmp/tide-test-data-XXXXXX");
        if (!mkdtemp(fixture_root)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_fixtures);
    }
    char *p = ring[next++ % 16];
    snprintf(p, 512, "%s/%s", fixture_root, name);
    return p;
}

static inline void write_file(const char *path, const void *data, size_t n, bool gzip)
{
    if (gzip) {
        gzFile gz = gzopen(path, "wb");
        CU_ASSERT_FATAL(gz != NULL);
        if (n)
            CU_ASSERT_EQUAL_FATAL(gzwrite(gz, data, (unsigned)n), (int)n);
        CU_ASSERT_EQUAL_FATAL(gzclose(gz), Z_OK);
        return;
    }
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT_EQUAL_FATAL(fwrite(data, 1, n, f), n);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
}

static inline void write_text(const char *path, const char *text) { write_file(path, text, strlen(text), false); }

/* A growable byte string for hand-built files. */
typedef struct bytes {
    unsigned char data[4096];
    size_t n;
} bytes;

static inline void put(bytes *b, const void *d, size_t n)
{
    CU_ASSERT_FATAL(b->n + n <= sizeof b->data);
    memcpy(b->data + b->n, d, n);
    b->n += n;
}

/* v as `size` bytes, most significant first. */
static inline void put_be(bytes *b, uint64_t v, int size)
{
    for (int i = size - 1; i >= 0; i--) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        put(b, &c, 1);
    }
}

static inline void put_le(bytes *b, uint64_t v, int size)
{
    for (int i = 0; i < size; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        put(b, &c, 1);
    }
}

/* Asserts that the call failed (returned NULL) with code and a message containing every needle. */
#define ASSERT_FAILED(obj, err, code, ...) \
    assert_failed((obj), (err), (code), __FILE__, __LINE__, __VA_ARGS__, NULL)
static inline void assert_failed(const void *obj, tide_error *err, tide_status code, const char *file, int line, ...)
{
    CU_ASSERT_PTR_NULL(obj);
    const char *msg = tide_error_message(err);
    if (tide_error_code(err) != code) {
        printf("\n%s:%d: expected %s, got %s: %s\n", file, line, tide_status_name(code),
               tide_status_name(tide_error_code(err)), msg);
        CU_FAIL("wrong error code");
    }
    va_list ap;
    va_start(ap, line);
    for (const char *needle; (needle = va_arg(ap, const char *));)
        if (!strstr(msg, needle)) {
            printf("\n%s:%d: message lacks \"%s\": %s\n", file, line, needle, msg);
            CU_FAIL("error message lacks an expected part");
        }
    va_end(ap);
    tide_error_clear(err);
}

static inline double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* An IDX header: magic with the type code, then the dimensions. */
static inline void build_idx(bytes *b, unsigned char code, int rank, const uint32_t *dims)
{
    b->n = 0;
    put(b, (unsigned char[]){0, 0, code, (unsigned char)rank}, 4);
    for (int i = 0; i < rank; i++)
        put_be(b, dims[i], 4);
}

#endif
