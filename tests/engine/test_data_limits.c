/* test_data_limits.c — what the data readers (engine/data) verify and what they refuse to read: gzip
 * streams checked whole (cut at every length, CRC-32 and length trailers, trailing garbage, several
 * members), the cut CSV and real Fashion-MNIST files cut by 4 bytes; the caps on what one file
 * may bring (the max_bytes options, $TIDE_MAX_INPUT_BYTES, 1 GiB), claims over the cap refused before
 * anything is allocated, /dev/zero refused at once, and a CSV read as a stream (its peak memory). */
#include <errno.h>
#include <stdio.h>

#include "data_fixtures.h"

/* A compressed file claiming more than the reader allocates unchecked (256 MiB), holding less: with
 * the cap out of the way it is counted before anything is allocated; under the default cap (1 GiB)
 * it is refused by the cap, at once. An uncompressed one is measured by its size first. */
static void test_idx_huge_claim(void)
{
    tide_error *err = tide_error_new();
    bytes b;
    build_idx(&b, 0x0E, 2, (uint32_t[]){100000, 100000}); /* 80 GB of float64 */
    put(&b, "12345678", 8);
    write_file(fx("huge.idx.gz"), b.data, b.n, true);
    const tide_read_options uncapped = {.max_bytes = UINT64_MAX};
    ASSERT_FAILED(tide_read_idx(fx("huge.idx.gz"), &uncapped, err), err, TIDE_INVALID_ARGUMENT,
                  "expected 80000000000 bytes", "file has 8");
    ASSERT_FAILED(tide_read_idx(fx("huge.idx.gz"), NULL, err), err, TIDE_RESOURCE_EXHAUSTED,
                  "holds 80000000012 bytes, more than 1 GiB after decompression", "TIDE_MAX_INPUT_BYTES",
                  "max_bytes");
    write_file(fx("huge.idx"), b.data, b.n, false);
    ASSERT_FAILED(tide_read_idx(fx("huge.idx"), NULL, err), err, TIDE_INVALID_ARGUMENT,
                  "expected 80000000000 bytes", "file has 8");
    tide_error_free(err);
}

/* ---------------------------------------------------------------- gzip, verified */

/* data gzip-compressed in memory (one member, as gzip writes it); malloc'd, *len bytes. */
static unsigned char *gzip_bytes(const void *data, size_t n, size_t *len)
{
    z_stream z = {0};
    CU_ASSERT_FATAL(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = deflateBound(&z, (uLong)n) + 32;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    CU_ASSERT_FATAL(deflate(&z, Z_FINISH) == Z_STREAM_END);
    *len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* An IDX file of 3000 uint8 values, gzip-compressed: its bytes and their compressed form. */
static unsigned char *gzipped_idx(bytes *b, size_t *len)
{
    build_idx(b, 0x08, 2, (uint32_t[]){30, 100});
    for (int i = 0; i < 3000; i++)
        put_be(b, (uint64_t)(i * 7919 % 251), 1);
    return gzip_bytes(b->data, b->n, len);
}

/* The compressed stream cut at every length, CRC-32 and length trailers that do not match, trailing
 * garbage: each is refused with the file's name (zcat refuses each too); concatenated members
 * (cat a.gz b.gz) read as one stream. Before, a cut stream loaded short or with wrong data. */
static void test_gzip_verified(void)
{
    tide_error *err = tide_error_new();
    bytes b;
    size_t len;
    unsigned char *gz = gzipped_idx(&b, &len);
    const char *path = fx("v.idx.gz");
    write_file(path, gz, len, false);
    tide_tensor *t = tide_read_idx(path, NULL, err);
    CU_ASSERT_FATAL(t != NULL);
    TH_ASSERT_SHAPE(t, 2, TH_DIMS(30, 100));
    CU_ASSERT_EQUAL(((uint8_t *)tide_tensor_data(t))[2999], 2999 * 7919 % 251);
    tide_tensor_release(t);
    int refused = 0;
    for (size_t cut = 2; cut < len; cut++) {
        write_file(path, gz, cut, false);
        t = tide_read_idx(path, NULL, err);
        refused += !t;
        if (t || !strstr(tide_error_message(err), path) || !strstr(tide_error_message(err), "truncated gzip file"))
            printf("\ncut at %zu of %zu: %s\n", cut, len, t ? "read" : tide_error_message(err));
        tide_tensor_release(t);
    }
    CU_ASSERT_EQUAL(refused, (int)len - 2);
    write_file(path, gz, 5, false);
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "truncated gzip file",
                  "inside a gzip header");
    write_file(path, gz, len - 4, false); /* the length trailer cut off */
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "truncated gzip file",
                  "CRC-32/length trailer");
    unsigned char *bad = malloc(len + 8);
    memcpy(bad, gz, len);
    bad[len - 8] ^= 1; /* the CRC-32 */
    write_file(path, bad, len, false);
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "the CRC-32 in its trailer");
    bad[len - 8] ^= 1;
    bad[len - 1] ^= 1; /* the length */
    write_file(path, bad, len, false);
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "the length in its trailer");
    bad[len - 1] ^= 1;
    memcpy(bad + len, "junk", 4);
    write_file(path, bad, len + 4, false);
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path,
                  "4 bytes of trailing garbage after the gzip data");
    memset(bad + len, 0, 8);
    write_file(path, bad, len + 8, false);
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "8 bytes of trailing garbage");
    memcpy(bad + len, "\x1f", 1);
    write_file(path, bad, len + 1, false); /* the first byte of a member's magic, and no more */
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "1 byte of trailing garbage");
    /* Corrupt deflate data: every byte of the body flipped in turn is refused, somehow. */
    int corrupt_refused = 0, corrupt_tried = 0;
    for (size_t i = 10; i < len - 8; i += 7, corrupt_tried++) {
        memcpy(bad, gz, len);
        bad[i] ^= 0x55;
        write_file(path, bad, len, false);
        t = tide_read_idx(path, NULL, err);
        corrupt_refused += !t;
        tide_tensor_release(t);
    }
    CU_ASSERT_EQUAL(corrupt_refused, corrupt_tried);
    /* Two members: the file's first 1000 bytes, then the rest. */
    size_t len1, len2;
    unsigned char *m1 = gzip_bytes(b.data, 1000, &len1), *m2 = gzip_bytes(b.data + 1000, b.n - 1000, &len2);
    unsigned char *both = malloc(len1 + len2);
    memcpy(both, m1, len1);
    memcpy(both + len1, m2, len2);
    write_file(path, both, len1 + len2, false);
    t = tide_read_idx(path, NULL, err);
    CU_ASSERT(t && tide_tensor_num_elements(t) == 3000 && ((uint8_t *)tide_tensor_data(t))[2999] == 2999 * 7919 % 251);
    tide_tensor_release(t);
    write_file(path, both, len1 + len2 - 1, false);
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "truncated gzip file");
    free(both);
    free(m1);
    free(m2);
    free(bad);
    free(gz);
    tide_error_free(err);
}

/* The reproduction: `seq 1 100000 | gzip | head -c 100000 > cut.csv.gz` loaded 45,690 rows. */
static void test_gzip_csv_cut(void)
{
    tide_error *err = tide_error_new();
    char *text = malloc(700000);
    size_t n = 0;
    for (int i = 1; i <= 100000; i++)
        n += (size_t)sprintf(text + n, "%d\n", i);
    size_t len;
    unsigned char *gz = gzip_bytes(text, n, &len);
    CU_ASSERT_FATAL(len > 100000);
    const char *path = fx("cut.csv.gz");
    write_file(path, gz, len, false);
    tide_tensor *t = tide_read_csv(path, NULL, err);
    CU_ASSERT(t && tide_tensor_dim(t, 0) == 100000 && ((float *)tide_tensor_data(t))[99999] == 100000.0f);
    tide_tensor_release(t);
    write_file(path, gz, 100000, false);
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "truncated gzip file");
    write_file(path, gz, len - 4, false);
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "truncated gzip file");
    memcpy(gz + len - 4, "\0\0\0\0", 4); /* a length of 0 */
    write_file(path, gz, len, false);
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "the length in its trailer");
    write_file(path, "\x1f\x8b\x08", 3, false); /* a gzip cut inside its header: it used to say "0 bytes" */
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_INVALID_ARGUMENT, path, "inside a gzip header");
    free(gz);
    free(text);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- caps on what is read */

/* A file of n copies of line. */
static void write_repeated(const char *path, const char *line, size_t n, bool gzip)
{
    size_t len = strlen(line);
    char *text = malloc(len * n + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(text + i * len, line, len);
    write_file(path, text, len * n, gzip);
    free(text);
}

/* No reader takes more than its cap from one file: the option, else $TIDE_MAX_INPUT_BYTES, else
 * 1 GiB; a NUL byte ends a CSV read at once (load_csv("/dev/zero") read until memory ran out). */
static void test_input_caps(void)
{
    tide_error *err = tide_error_new();
    const char *path = fx("cap.csv");
    write_repeated(path, "1\n", 100, false); /* 200 bytes */
    tide_csv_options o;
    tide_csv_options_init(&o);
    CU_ASSERT_EQUAL(o.max_bytes, 0);
    o.max_bytes = 100;
    ASSERT_FAILED(tide_read_csv(path, &o, err), err, TIDE_RESOURCE_EXHAUSTED, path, "more than 100 bytes",
                  "max_bytes", "TIDE_MAX_INPUT_BYTES");
    o.max_bytes = 200; /* exactly the file */
    tide_tensor *t = tide_read_csv(path, &o, err);
    CU_ASSERT(t && tide_tensor_dim(t, 0) == 100);
    tide_tensor_release(t);
    /* A gzip bomb: 8 MiB of text in a few KB, under a cap of 1 MiB. */
    const char *bomb = fx("bomb.csv.gz");
    write_repeated(bomb, "0\n", 4 << 20, true);
    struct stat st;
    CU_ASSERT(stat(bomb, &st) == 0 && st.st_size < 64 * 1024);
    o.max_bytes = 1 << 20;
    ASSERT_FAILED(tide_read_csv(bomb, &o, err), err, TIDE_RESOURCE_EXHAUSTED,
                  "more than 1 MiB after decompression");
    /* The environment variable, for every reader; a malformed one is an error naming it. */
    setenv("TIDE_MAX_INPUT_BYTES", "1K", 1);
    write_repeated(path, "1\n", 1000, false);
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_RESOURCE_EXHAUSTED, "more than 1 KiB");
    o.max_bytes = 4096; /* the option wins over the variable */
    t = tide_read_csv(path, &o, err);
    CU_ASSERT(t != NULL);
    tide_tensor_release(t);
    setenv("TIDE_MAX_INPUT_BYTES", "lots", 1);
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "$TIDE_MAX_INPUT_BYTES='lots'",
                  "not a size");
    ASSERT_FAILED(tide_read_idx(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "TIDE_MAX_INPUT_BYTES");
    ASSERT_FAILED(tide_read_npy(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "TIDE_MAX_INPUT_BYTES");
    unsetenv("TIDE_MAX_INPUT_BYTES");
    /* IDX: a claim over the cap is refused before anything is read or allocated. */
    bytes b;
    build_idx(&b, 0x08, 2, (uint32_t[]){65536, 32768}); /* 2 GiB of uint8 */
    put(&b, "12345678", 8);
    write_file(fx("claim.idx.gz"), b.data, b.n, true);
    ASSERT_FAILED(tide_read_idx(fx("claim.idx.gz"), NULL, err), err, TIDE_RESOURCE_EXHAUSTED,
                  "holds 2147483660 bytes, more than 1 GiB");
    build_idx(&b, 0x08, 1, (uint32_t[]){1000});
    for (int i = 0; i < 1000; i++)
        put_be(&b, (uint64_t)i, 1);
    write_file(fx("small.idx"), b.data, b.n, false);
    const tide_read_options small = {.max_bytes = 1000};
    ASSERT_FAILED(tide_read_idx(fx("small.idx"), &small, err), err, TIDE_RESOURCE_EXHAUSTED,
                  "holds 1008 bytes, more than 1000 bytes");
    const tide_read_options enough = {.max_bytes = 1008};
    t = tide_read_idx(fx("small.idx"), &enough, err);
    CU_ASSERT(t != NULL);
    tide_tensor_release(t);
    /* NPY: the same, from its header. */
    double values[500] = {0};
    tide_tensor *v = th_f64(1, TH_DIMS(500), values);
    CU_ASSERT_EQUAL_FATAL(tide_write_npy(fx("cap.npy"), v, err), TIDE_OK);
    ASSERT_FAILED(tide_read_npy(fx("cap.npy"), &small, err), err, TIDE_RESOURCE_EXHAUSTED, "cap.npy",
                  "more than 1000 bytes");
    tide_tensor_release(v);
    /* /dev/zero: refused at the first chunk, not read until memory runs out. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_FAILED(tide_read_csv("/dev/zero", NULL, err), err, TIDE_INVALID_ARGUMENT,
                  "/dev/zero line 1, column 1: a NUL byte");
    ASSERT_FAILED(tide_read_idx("/dev/zero", NULL, err), err, TIDE_INVALID_ARGUMENT, "unknown IDX type code 0x00");
    ASSERT_FAILED(tide_read_npy("/dev/zero", NULL, err), err, TIDE_INVALID_ARGUMENT, "not a .npy file");
    CU_ASSERT(seconds_since(&t0) < 2.0);
    tide_error_free(err);
}

/* The peak resident memory since the last reset_peak_rss (VmHWM; reset through clear_refs, Linux 4.0
 * and later); 0 when it cannot be known. */
static bool reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static size_t peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %zu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

/* A CSV is read as a stream: besides the tensor it takes a buffer and one chunk of values. 32 MiB of
 * text ("0\n" 16 Mi times, 33 KB compressed) give a 64 MiB tensor; the whole text in memory, values
 * grown by realloc and copied into the tensor cost 160 MiB and more before. */
static void test_csv_streams(void)
{
    tide_error *err = tide_error_new();
    const char *path = fx("stream.csv.gz");
    write_repeated(path, "0\n", 16 << 20, true);
    /* Not measured under ASan, whose quarantine keeps freed memory resident, nor with MALLOC_PERTURB_,
     * which writes every allocation whole (meson runs this test without it). */
    const char *perturb = getenv("MALLOC_PERTURB_");
    bool measured = !SANITIZED && (!perturb || !*perturb || !strcmp(perturb, "0")) && reset_peak_rss();
    size_t before = peak_rss();
    tide_tensor *t = tide_read_csv(path, NULL, err);
    size_t peak = peak_rss();
    CU_ASSERT_FATAL(t != NULL);
    TH_ASSERT_SHAPE(t, 2, TH_DIMS(16 << 20, 1));
    size_t tensor_bytes = tide_tensor_byte_size(t);
    printf("\n  (peak memory reading a 64 MiB tensor from 32 MiB of CSV text: %.1f MiB more%s) ",
           (double)(peak - before) / (1 << 20), measured ? "" : "; not checked here");
    if (measured)
        CU_ASSERT(peak - before < tensor_bytes + tensor_bytes / 2);
    tide_tensor_release(t);
    tide_error_free(err);
}

/* The real training files cut by 4 bytes (their length trailer) are refused, and so is the data set. */
static void test_fashion_mnist_cut(void)
{
    if (!have_fashion_mnist())
        return;
    struct stat st;
    tide_error *err = tide_error_new();
    const char *names[] = {"train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"};
    char dir[128], src[256], dst[256];
    snprintf(dir, sizeof dir, "%s", fx("fm-cut"));
    mkdir(dir, 0755);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(src, sizeof src, FMNIST_DIR "/%s.gz", names[i]);
        snprintf(dst, sizeof dst, "%s/%s.gz", dir, names[i]);
        FILE *in = fopen(src, "rb");
        CU_ASSERT_FATAL(in != NULL && stat(src, &st) == 0);
        unsigned char *data = malloc((size_t)st.st_size);
        CU_ASSERT_FATAL(fread(data, 1, (size_t)st.st_size, in) == (size_t)st.st_size);
        fclose(in);
        write_file(dst, data, (size_t)st.st_size - 4, false);
        free(data);
        ASSERT_FAILED(tide_read_idx(dst, NULL, err), err, TIDE_INVALID_ARGUMENT, dst, "truncated gzip file");
    }
    /* The whole data set from a directory whose training labels are cut. */
    const char *rest[] = {"train-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(src, sizeof src, FMNIST_DIR "/%s.gz", rest[i]);
        snprintf(dst, sizeof dst, "%s/%s.gz", dir, rest[i]);
        CU_ASSERT_EQUAL_FATAL(symlink(src, dst), 0);
    }
    snprintf(dst, sizeof dst, "%s/train-labels-idx1-ubyte.gz", dir);
    tide_dataset d;
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(dir, &d, err), TIDE_INVALID_ARGUMENT);
    ASSERT_FAILED(NULL, err, TIDE_INVALID_ARGUMENT, dst, "truncated gzip file");
    tide_error_free(err);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_idx_huge_claim), TH_TEST(test_gzip_verified), TH_TEST(test_gzip_csv_cut),
        TH_TEST(test_input_caps),     TH_TEST(test_csv_streams),   TH_TEST(test_fashion_mnist_cut),
        TH_END};
    return th_main("data_limits", tests);
}
