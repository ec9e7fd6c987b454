/* test_data.c — the data readers and the batcher (engine/data): IDX, NPY and CSV files, Fashion-MNIST,
 * mini-batches.
 *
 * Every fixture is written here, byte by byte, into a fresh mkdtemp directory (gzip through zlib's
 * gzopen "wb"), and expected values are computed independently of the readers: big-endian encodings
 * written out by hand, NPY headers as literal text, CSV values from literal tables. Malformed files
 * of every kind must fail with a message that names the file and says what is wrong; a mutation pass
 * over a valid NPY header checks that no malformed header crashes the parser. Where /usr/bin/python3
 * has numpy, files go both ways between tide and numpy (the headers must match numpy's byte for byte).
 * Fashion-MNIST is checked against the real files of the Debian package when they are installed
 * (raw bytes re-read here), and against small fake directories for the error cases. What the readers
 * verify of gzip streams and the caps on what they read are test_data_limits.c's. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "data_fixtures.h"

/* ---------------------------------------------------------------- IDX */

typedef struct idx_case {
    unsigned char code;
    tide_dtype dtype;
    int size;
    double values[6];
} idx_case;

static const idx_case idx_cases[] = {
    {0x08, TIDE_UINT8, 1, {0, 1, 127, 128, 255, 7}},
    {0x09, TIDE_INT8, 1, {0, -1, 127, -128, 5, -6}},
    {0x0B, TIDE_INT16, 2, {0, -1, 32767, -32768, 0x1234, -300}},
    {0x0C, TIDE_INT32, 4, {0, -1, 2147483647, -2147483648.0, 0x01020304, -70000}},
    {0x0D, TIDE_FLOAT32, 4, {0, -1.5, 3.25e10, 1e-20, 0.1, -7.75}},
    {0x0E, TIDE_FLOAT64, 8, {0, -1.5, 1e300, 0.1, -2.5e-300, 123456789.123}},
};

/* The IDX encoding of one value, written out per type. */
static void put_idx_value(bytes *b, const idx_case *c, double v)
{
    if (c->dtype == TIDE_FLOAT32) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        put_be(b, u, 4);
    } else if (c->dtype == TIDE_FLOAT64) {
        uint64_t u;
        memcpy(&u, &v, 8);
        put_be(b, u, 8);
    } else {
        put_be(b, (uint64_t)(int64_t)v, c->size);
    }
}


static void test_idx_every_type(void)
{
    tide_error *err = tide_error_new();
    for (size_t k = 0; k < sizeof idx_cases / sizeof *idx_cases; k++) {
        const idx_case *c = &idx_cases[k];
        bytes b;
        build_idx(&b, c->code, 2, (uint32_t[]){2, 3});
        for (int i = 0; i < 6; i++)
            put_idx_value(&b, c, c->values[i]);
        tide_tensor *want = th_from_doubles(c->dtype, 2, TH_DIMS(2, 3), c->values, 0);
        for (int gz = 0; gz < 2; gz++) {
            const char *path = fx(gz ? "every.idx.gz" : "every.idx");
            write_file(path, b.data, b.n, gz);
            tide_tensor *got = tide_read_idx(path, NULL, err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(got);
            CU_ASSERT_EQUAL(tide_tensor_dtype(got), c->dtype);
            TH_ASSERT_CLOSE(got, want, 0, 0);
            tide_tensor_release(got);
        }
        tide_tensor_release(want);
    }
    /* Ranks 1 and 8, and an empty dimension. */
    bytes b;
    build_idx(&b, 0x08, 1, (uint32_t[]){3});
    put(&b, "\x05\x06\x07", 3);
    write_file(fx("rank1.idx"), b.data, b.n, false);
    tide_tensor *t = tide_read_idx(fx("rank1.idx"), NULL, err);
    TH_ASSERT_SHAPE(t, 1, TH_DIMS(3));
    CU_ASSERT_EQUAL(((uint8_t *)tide_tensor_data(t))[2], 7);
    tide_tensor_release(t);
    build_idx(&b, 0x0C, 8, (uint32_t[]){1, 1, 1, 1, 1, 1, 1, 2});
    put_be(&b, 0xfffffffe, 4);
    put_be(&b, 0x00010000, 4);
    write_file(fx("rank8.idx.gz"), b.data, b.n, true);
    t = tide_read_idx(fx("rank8.idx.gz"), NULL, err);
    TH_ASSERT_SHAPE(t, 8, TH_DIMS(1, 1, 1, 1, 1, 1, 1, 2));
    CU_ASSERT_EQUAL(((int32_t *)tide_tensor_data(t))[0], -2);
    CU_ASSERT_EQUAL(((int32_t *)tide_tensor_data(t))[1], 65536);
    tide_tensor_release(t);
    build_idx(&b, 0x0D, 2, (uint32_t[]){0, 5});
    write_file(fx("empty.idx"), b.data, b.n, false);
    t = tide_read_idx(fx("empty.idx"), NULL, err);
    TH_ASSERT_SHAPE(t, 2, TH_DIMS(0, 5));
    tide_tensor_release(t);
    tide_error_free(err);
}

/* Writes b plain and gzipped, and asserts both fail with the needles. */
static void assert_idx_fails(const bytes *b, const char *name, const char *n1, const char *n2)
{
    tide_error *err = tide_error_new();
    for (int gz = 0; gz < 2; gz++) {
        char file[128];
        snprintf(file, sizeof file, "%s%s", name, gz ? ".gz" : "");
        const char *path = fx(file);
        write_file(path, b->data, b->n, gz);
        tide_tensor *t = tide_read_idx(path, NULL, err);
        ASSERT_FAILED(t, err, TIDE_INVALID_ARGUMENT, path, n1, n2 ? n2 : n1);
    }
    tide_error_free(err);
}

static void test_idx_malformed(void)
{
    tide_error *err = tide_error_new();
    const char *missing = fx("no-such-file.idx");
    ASSERT_FAILED(tide_read_idx(missing, NULL, err), err, TIDE_NOT_FOUND, missing, strerror(ENOENT));
    ASSERT_FAILED(tide_read_idx(fixture_root, NULL, err), err, TIDE_INVALID_ARGUMENT, "directory");
    ASSERT_FAILED(tide_read_idx(NULL, NULL, err), err, TIDE_INVALID_ARGUMENT, "NULL");

    bytes b = {.n = 0};
    put(&b, (unsigned char[]){1, 0, 8, 1, 0, 0, 0, 1, 9}, 9);
    assert_idx_fails(&b, "magic.idx", "magic bytes 01 00 08 01", NULL);
    b.n = 0;
    put(&b, "\0", 1);
    assert_idx_fails(&b, "short.idx", "has 1 byte", NULL);
    build_idx(&b, 0x0A, 1, (uint32_t[]){1});
    put(&b, "\0", 1);
    assert_idx_fails(&b, "type.idx", "unknown IDX type code 0x0a", NULL);
    build_idx(&b, 0x08, 0, NULL);
    assert_idx_fails(&b, "rank0.idx", "0 dimensions", NULL);
    build_idx(&b, 0x08, 9, (uint32_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    put(&b, "\0", 1);
    assert_idx_fails(&b, "rank9.idx", "9 dimensions", NULL);
    build_idx(&b, 0x0E, 3, (uint32_t[]){0xffffffffu, 0xffffffffu, 0xffffffffu});
    assert_idx_fails(&b, "overflow.idx", "too large", "[4294967295, 4294967295, 4294967295]");
    build_idx(&b, 0x0C, 2, (uint32_t[]){2, 3});
    b.n -= 2; /* the second dimension cut short */
    assert_idx_fails(&b, "cutheader.idx", "truncated IDX header", NULL);
    build_idx(&b, 0x0B, 1, (uint32_t[]){10});
    put(&b, "0123456789", 10);
    assert_idx_fails(&b, "truncated.idx", "expected 20 bytes of data", "file has 10");
    build_idx(&b, 0x08, 1, (uint32_t[]){4});
    put(&b, "abcdefg", 7);
    assert_idx_fails(&b, "trailing.idx", "3 bytes of trailing garbage", NULL);

    /* A compressed stream cut in the middle. */
    build_idx(&b, 0x08, 1, (uint32_t[]){2000});
    for (int i = 0; i < 2000; i++)
        put_be(&b, (uint64_t)(i * 7919 % 251), 1);
    write_file(fx("cut.gz"), b.data, b.n, true);
    struct stat st;
    CU_ASSERT_EQUAL_FATAL(stat(fx("cut.gz"), &st), 0);
    CU_ASSERT_EQUAL(truncate(fx("cut.gz"), st.st_size / 2), 0);
    ASSERT_FAILED(tide_read_idx(fx("cut.gz"), NULL, err), err, TIDE_INVALID_ARGUMENT, "truncated gzip file");
    /* A gzip header followed by garbage. */
    write_file(fx("corrupt.gz"), "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage!garbage!", 26, false);
    tide_tensor *t = tide_read_idx(fx("corrupt.gz"), NULL, err);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), fx("corrupt.gz")));
    tide_error_free(err);
}

/* ---------------------------------------------------------------- NPY */

static const tide_dtype npy_dtypes[] = {
    TIDE_BOOL,    TIDE_INT8,    TIDE_UINT8,   TIDE_INT16,     TIDE_UINT16,     TIDE_INT32,
    TIDE_INT64,   TIDE_FLOAT16, TIDE_FLOAT32, TIDE_FLOAT64,   TIDE_COMPLEX64, TIDE_COMPLEX128,
};
#define NUM_NPY_DTYPES (sizeof npy_dtypes / sizeof *npy_dtypes)

/* The test values: integers -3..7 (wrapped by unsigned dtypes), times 0.75 for float and complex
 * dtypes (exact in float16), imaginary part half the real one. Python's side uses the same rule. */
static tide_tensor *npy_values(tide_dtype dt, int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        v[i] = (double)(i * 7 % 11 - 3);
        if (tide_dtype_is_float(dt) || tide_dtype_is_complex(dt))
            v[i] *= 0.75;
    }
    tide_tensor *t = th_from_doubles(dt, rank, dims, v, 0.5);
    free(v);
    return t;
}

static void test_npy_round_trip(void)
{
    tide_error *err = tide_error_new();
    static const struct {
        int rank;
        int64_t dims[3];
    } shapes[] = {{0, {0}}, {1, {5}}, {2, {3, 4}}, {3, {2, 0, 3}}, {3, {2, 3, 2}}};
    for (size_t k = 0; k < NUM_NPY_DTYPES; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            tide_tensor *want = npy_values(npy_dtypes[k], shapes[s].rank, shapes[s].dims);
            const char *path = fx("round.npy");
            CU_ASSERT_EQUAL_FATAL(tide_write_npy(path, want, err), TIDE_OK);
            tide_tensor *got = tide_read_npy(path, NULL, err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(got);
            CU_ASSERT(tide_tensor_equal(got, want, true));
            /* 64-byte aligned data after a newline-terminated header. */
            struct stat st;
            stat(path, &st);
            size_t data_at = (size_t)st.st_size - tide_tensor_byte_size(want);
            CU_ASSERT_EQUAL(data_at % 64, 0);
            tide_tensor_release(got);
            tide_tensor_release(want);
        }
    tide_error_free(err);
}

/* The exact bytes of a header numpy writes for float32 (2, 3) and bool (5,) (numpy 1.24). */
static void test_npy_header_bytes(void)
{
    tide_error *err = tide_error_new();
    tide_tensor *t = npy_values(TIDE_FLOAT32, 2, TH_DIMS(2, 3));
    CU_ASSERT_EQUAL_FATAL(tide_write_npy(fx("h.npy"), t, err), TIDE_OK);
    FILE *f = fopen(fx("h.npy"), "rb");
    unsigned char got[256];
    size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    CU_ASSERT_EQUAL_FATAL(n, 128 + 24);
    CU_ASSERT_EQUAL(memcmp(got, "\x93NUMPY\x01\x00\x76\x00", 10), 0); /* header length 118 */
    CU_ASSERT_EQUAL(memcmp(got + 10, dict, strlen(dict)), 0);
    for (size_t i = 10 + strlen(dict); i < 127; i++)
        CU_ASSERT_EQUAL(got[i], ' ');
    CU_ASSERT_EQUAL(got[127], '\n');
    float first;
    memcpy(&first, got + 128, 4);
    CU_ASSERT_EQUAL(first, -2.25f);
    tide_tensor_release(t);
    t = npy_values(TIDE_BOOL, 1, TH_DIMS(5));
    CU_ASSERT_EQUAL_FATAL(tide_write_npy(fx("h.npy"), t, err), TIDE_OK);
    f = fopen(fx("h.npy"), "rb");
    n = fread(got, 1, sizeof got, f);
    fclose(f);
    dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }";
    CU_ASSERT_EQUAL(n, 128 + 5);
    CU_ASSERT_EQUAL(memcmp(got + 10, dict, strlen(dict)), 0);
    tide_tensor_release(t);
    /* A dict of 97 characters: 10 + 97 + 20 spare + '\n' is 128 already, and numpy then pads a
     * whole 64 bytes more (its padlen is 64 - x % 64, never 0). */
    tide_shape empty = tide_shape_make(8, TH_DIMS(0, 1000, 1000, 1000, 1000, 1000, 1000, 100));
    t = tide_tensor_new(TIDE_FLOAT32, &empty, err);
    CU_ASSERT_EQUAL_FATAL(tide_write_npy(fx("h.npy"), t, err), TIDE_OK);
    f = fopen(fx("h.npy"), "rb");
    n = fread(got, 1, sizeof got, f);
    fclose(f);
    dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1000, 1000, 1000, 1000, 1000, 1000, 100), }";
    CU_ASSERT_EQUAL(strlen(dict), 97);
    CU_ASSERT_EQUAL_FATAL(n, 192);
    CU_ASSERT_EQUAL(memcmp(got + 8, "\xb6\x00", 2), 0);
    CU_ASSERT_EQUAL(memcmp(got + 10, dict, strlen(dict)), 0);
    CU_ASSERT_EQUAL(got[190], ' ');
    CU_ASSERT_EQUAL(got[191], '\n');
    tide_tensor *back = tide_read_npy(fx("h.npy"), NULL, err);
    CU_ASSERT(back && tide_tensor_equal(back, t, false));
    tide_tensor_release(back);
    tide_tensor_release(t);
    tide_error_free(err);
}

static int count_temp_files(void)
{
    DIR *d = opendir(fixture_root);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".tmp") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_npy_write_errors_and_atomicity(void)
{
    tide_error *err = tide_error_new();
    tide_tensor *a = npy_values(TIDE_INT32, 1, TH_DIMS(4));
    tide_tensor *b = npy_values(TIDE_FLOAT64, 2, TH_DIMS(2, 2));
    const char *path = fx("atomic.npy");
    CU_ASSERT_EQUAL(tide_write_npy(path, a, err), TIDE_OK);
    CU_ASSERT_EQUAL(tide_write_npy(path, b, err), TIDE_OK); /* replaces */
    tide_tensor *got = tide_read_npy(path, NULL, err);
    CU_ASSERT(got && tide_tensor_equal(got, b, false));
    tide_tensor_release(got);
    CU_ASSERT_EQUAL(count_temp_files(), 0);

    const char *nodir = fx("no-such-dir/x.npy");
    CU_ASSERT_EQUAL(tide_write_npy(nodir, a, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), nodir));
    mkdir(fx("a-directory.npy"), 0755); /* rename over a directory fails: the temp file must go */
    CU_ASSERT_EQUAL(tide_write_npy(fx("a-directory.npy"), a, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(count_temp_files(), 0);
    got = tide_read_npy(path, NULL, err); /* the old file is intact */
    CU_ASSERT(got && tide_tensor_equal(got, b, false));
    tide_tensor_release(got);

    tide_shape s = tide_shape_vector(2);
    tide_tensor *bf = tide_tensor_new(TIDE_BFLOAT16, &s, NULL);
    CU_ASSERT_EQUAL(tide_write_npy(fx("bf.npy"), bf, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "bfloat16"));
    tide_tensor *str = tide_tensor_new(TIDE_STRING, &s, NULL);
    CU_ASSERT_EQUAL(tide_write_npy(fx("str.npy"), str, err), TIDE_UNIMPLEMENTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tide_error_message(err), "string"));
    CU_ASSERT_EQUAL(tide_write_npy(NULL, a, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_write_npy(path, NULL, err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(access(fx("bf.npy"), F_OK), -1);
    CU_ASSERT_EQUAL(count_temp_files(), 0);
    tide_tensor_release(bf);
    tide_tensor_release(str);
    tide_tensor_release(a);
    tide_tensor_release(b);
    tide_error_free(err);
}

/* A .npy file from parts: version, header text (padded to 64 as given), then data. */
static void build_npy(bytes *b, int major, const char *header, const void *data, size_t n)
{
    b->n = 0;
    put(b, "\x93NUMPY", 6);
    put(b, (unsigned char[]){(unsigned char)major, 0}, 2);
    size_t len_bytes = major == 1 ? 2 : 4;
    size_t hlen = strlen(header);
    size_t total = 8 + len_bytes + hlen + 1;
    size_t pad = (64 - total % 64) % 64;
    put_le(b, hlen + pad + 1, (int)len_bytes);
    put(b, header, hlen);
    for (size_t i = 0; i < pad; i++)
        put(b, " ", 1);
    put(b, "\n", 1);
    if (n)
        put(b, data, n);
}

static tide_tensor *read_built(const bytes *b, tide_error *err)
{
    write_file(fx("built.npy"), b->data, b->n, false);
    return tide_read_npy(fx("built.npy"), NULL, err);
}

static void test_npy_read_variants(void)
{
    tide_error *err = tide_error_new();
    bytes b;
    int32_t le[3] = {1, -2, 300000};
    /* Versions 2 and 3, double quotes, no trailing comma, other key order, Python 2's 3L. */
    const char *headers[] = {
        "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
        "{\"shape\": (3,), \"descr\": \"<i4\", \"fortran_order\": False}",
        "{ 'descr':'<i4','fortran_order':False,'shape':( 3 , ) }",
        "{'descr': '<i4', 'fortran_order': True, 'shape': (3,), }", /* Fortran order, rank 1 */
        "{'descr': '<i4', 'fortran_order': False, 'shape': (3L,), }",
    };
    tide_tensor *want = th_i32(1, TH_DIMS(3), le);
    for (int major = 1; major <= 3; major++)
        for (size_t h = 0; h < sizeof headers / sizeof *headers; h++) {
            if (major == 3 && strstr(headers[h], "3L"))
                continue; /* version 3 is Python 3 only */
            build_npy(&b, major, headers[h], le, sizeof le);
            tide_tensor *got = read_built(&b, err);
            if (!got)
                printf("\nversion %d, header %s: %s\n", major, headers[h], tide_error_message(err));
            CU_ASSERT(got && tide_tensor_equal(got, want, false));
            tide_tensor_release(got);
        }
    tide_tensor_release(want);

    /* Big-endian data are converted: int32, float64, complex64, and '|u1' / '>u1' need nothing. */
    bytes data = {.n = 0};
    put_be(&data, (uint32_t)-2, 4);
    put_be(&data, 0x01020304, 4);
    build_npy(&b, 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", data.data, data.n);
    tide_tensor *got = read_built(&b, err);
    CU_ASSERT(got && ((int32_t *)tide_tensor_data(got))[0] == -2 &&
              ((int32_t *)tide_tensor_data(got))[1] == 0x01020304);
    tide_tensor_release(got);
    data.n = 0;
    double d = -0.1;
    uint64_t du;
    memcpy(&du, &d, 8);
    put_be(&data, du, 8);
    build_npy(&b, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (), }", data.data, data.n);
    got = read_built(&b, err);
    CU_ASSERT(got && tide_tensor_rank(got) == 0 && *(double *)tide_tensor_data(got) == -0.1);
    tide_tensor_release(got);
    data.n = 0;
    float re = 1.5f, im = -3.0f;
    uint32_t ru, iu;
    memcpy(&ru, &re, 4);
    memcpy(&iu, &im, 4);
    put_be(&data, ru, 4);
    put_be(&data, iu, 4);
    build_npy(&b, 1, "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }", data.data, data.n);
    got = read_built(&b, err);
    CU_ASSERT(got && ((float *)tide_tensor_data(got))[0] == 1.5f && ((float *)tide_tensor_data(got))[1] == -3.0f);
    tide_tensor_release(got);
    build_npy(&b, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1), }", "\xff\x01", 2);
    got = read_built(&b, err);
    CU_ASSERT(got && tide_tensor_dtype(got) == TIDE_UINT8 && ((uint8_t *)tide_tensor_data(got))[0] == 255);
    tide_tensor_release(got);
    build_npy(&b, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", "\x00\x01\x07", 3);
    got = read_built(&b, err);
    CU_ASSERT(got && memcmp(tide_tensor_data(got), "\x00\x01\x01", 3) == 0); /* any nonzero is true */
    tide_tensor_release(got);
    tide_error_free(err);
}

static void test_npy_malformed(void)
{
    tide_error *err = tide_error_new();
    static const struct {
        const char *header;
        tide_status code;
        const char *needle;
    } cases[] = {
        {"['descr', '<i4']", TIDE_INVALID_ARGUMENT, "expected '{'"},
        {"{'descr': '<i4', 'fortran_order': False}", TIDE_INVALID_ARGUMENT, "missing key 'shape'"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}", TIDE_INVALID_ARGUMENT, "unknown key"},
        {"{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (2,)}", TIDE_INVALID_ARGUMENT, "duplicate key"},
        {"{'descr': '<i4", TIDE_INVALID_ARGUMENT, "unterminated string"},
        {"{'descr' '<i4', 'fortran_order': False, 'shape': (2,)}", TIDE_INVALID_ARGUMENT, "expected ':'"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2)}", TIDE_INVALID_ARGUMENT, "trailing comma"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (-2,)}", TIDE_INVALID_ARGUMENT, "negative dimension"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,}", TIDE_INVALID_ARGUMENT, "expected a dimension"},
        {"{'descr': '<i4', 'fortran_order': false, 'shape': (2,)}", TIDE_INVALID_ARGUMENT, "True or False"},
        {"{'descr': '<i4', 'fortran_order': 0, 'shape': (2,)}", TIDE_INVALID_ARGUMENT, "True or False"},
        {"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}", TIDE_INVALID_ARGUMENT, "structured"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,)} x", TIDE_INVALID_ARGUMENT, "after the dict"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,)", TIDE_INVALID_ARGUMENT, "expected ',' or '}'"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,)}", TIDE_INVALID_ARGUMENT, "too large"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", TIDE_INVALID_ARGUMENT, "more than 8"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", TIDE_INVALID_ARGUMENT, "too large"},
        {"{'descr': '<u4', 'fortran_order': False, 'shape': (2,)}", TIDE_UNIMPLEMENTED, "'<u4' has no tide dtype"},
        {"{'descr': '<U5', 'fortran_order': False, 'shape': (2,)}", TIDE_UNIMPLEMENTED, "'<U5'"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", TIDE_UNIMPLEMENTED, "'|O'"},
        {"{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2)}", TIDE_UNIMPLEMENTED, "Fortran-order"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}", TIDE_INVALID_ARGUMENT, "truncated .npy data"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}", TIDE_INVALID_ARGUMENT, "trailing bytes"},
    };
    bytes b;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        build_npy(&b, 1, cases[i].header, "\1\0\0\0\2\0\0\0", 8);
        tide_tensor *t = read_built(&b, err);
        if (!t && !strstr(tide_error_message(err), cases[i].needle))
            printf("\ncase %zu: %s\n", i, tide_error_message(err));
        ASSERT_FAILED(t, err, cases[i].code, fx("built.npy"), cases[i].needle);
    }
    /* Broken prefixes. */
    build_npy(&b, 4, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}", "\1\0\0\0\2\0\0\0", 8);
    ASSERT_FAILED(read_built(&b, err), err, TIDE_UNIMPLEMENTED, "version 4.0");
    write_file(fx("built.npy"), "\x93NUMPZ\x01\x00\x10\x00", 10, false);
    ASSERT_FAILED(tide_read_npy(fx("built.npy"), NULL, err), err, TIDE_INVALID_ARGUMENT, "not a .npy file");
    write_file(fx("built.npy"), "\x93NUMPY\x01\x00\x40\x00{'descr'", 17, false);
    ASSERT_FAILED(tide_read_npy(fx("built.npy"), NULL, err), err, TIDE_INVALID_ARGUMENT, "truncated .npy header");
    write_file(fx("built.npy"), "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12, false);
    ASSERT_FAILED(tide_read_npy(fx("built.npy"), NULL, err), err, TIDE_INVALID_ARGUMENT, "too large");
    ASSERT_FAILED(tide_read_npy(fx("missing.npy"), NULL, err), err, TIDE_NOT_FOUND, strerror(ENOENT));
    tide_error_free(err);
}

/* Every truncation and many single-byte changes of a valid file: errors or values, never a crash. */
static void test_npy_mutations(void)
{
    tide_error *err = tide_error_new();
    bytes good;
    build_npy(&good, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
              "\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40", 16);
    int ok = 0, failed = 0;
    for (size_t len = 0; len < good.n; len++) {
        bytes b = good;
        b.n = len;
        tide_tensor *t = read_built(&b, err);
        ok += t != NULL;
        failed += t == NULL && *tide_error_message(err);
        tide_tensor_release(t);
    }
    CU_ASSERT_EQUAL(ok, 0); /* every truncation fails, with a message */
    CU_ASSERT_EQUAL(failed, (int)good.n);
    static const unsigned char replacements[] = {0, ' ', '\'', '"', ',', ':', '(', ')', '{', '}', '9', '-', 0xff, 'L'};
    for (size_t pos = 0; pos < 74; pos++)
        for (size_t r = 0; r < sizeof replacements; r++) {
            bytes b = good;
            b.data[pos] = replacements[r];
            tide_tensor *t = read_built(&b, err);
            if (t) {
                CU_ASSERT(tide_tensor_num_elements(t) * (int64_t)tide_dtype_size(tide_tensor_dtype(t)) <= 16);
            } else {
                CU_ASSERT(*tide_error_message(err) != 0);
            }
            tide_tensor_release(t);
            tide_error_clear(err);
        }
    tide_error_free(err);
}

static bool have_numpy(void)
{
    return access("/usr/bin/python3", X_OK) == 0 &&
           system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

static const char *numpy_script =
    "import io, sys, numpy as np\n"
    "d = sys.argv[1]\n"
    "names = sys.argv[2:]\n"
    "def values(name, shape):\n"
    "    n = int(np.prod(shape))\n"
    "    v = np.array([i * 7 % 11 - 3 for i in range(n)], dtype=np.int64)\n"
    "    dt = np.dtype(name)\n"
    "    if dt.kind == 'b': return (v != 0).reshape(shape)\n"
    "    if dt.kind in 'iu': return v.astype(dt).reshape(shape)\n"
    "    f = v * 0.75\n"
    "    if dt.kind == 'c': return (f + 0.5j * f).astype(dt).reshape(shape)\n"
    "    return f.astype(dt).reshape(shape)\n"
    "for name in names:\n"
    "    want = values(name, (3, 4))\n"
    "    got = np.load(f'{d}/c_{name}.npy')\n"
    "    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape)\n"
    "    assert np.array_equal(got, want), (name, got, want)\n"
    "    buf = io.BytesIO(); np.save(buf, want)\n"
    "    assert buf.getvalue() == open(f'{d}/c_{name}.npy', 'rb').read(), name + ': header differs'\n"
    "    np.save(f'{d}/py_{name}.npy', want)\n"
    "np.save(f'{d}/py_be_int32.npy', values('int32', (3, 4)).astype('>i4'))\n"
    "np.save(f'{d}/py_be_float64.npy', values('float64', (3, 4)).astype('>f8'))\n"
    "np.save(f'{d}/py_be_complex128.npy', values('complex128', (3, 4)).astype('>c16'))\n"
    "for v in (2, 3):\n"
    "    with open(f'{d}/py_v{v}.npy', 'wb') as f:\n"
    "        np.lib.format.write_array(f, values('float32', (3, 4)), version=(v, 0))\n"
    "np.save(f'{d}/py_scalar.npy', np.float64(2.5))\n"
    "np.save(f'{d}/py_empty.npy', np.zeros((0, 3), np.float32))\n"
    "np.save(f'{d}/py_fortran.npy', np.asfortranarray(values('float32', (3, 4))))\n";

static void check_numpy_file(const char *name, tide_tensor *want)
{
    tide_error *err = tide_error_new();
    tide_tensor *got = tide_read_npy(fx(name), NULL, err);
    if (!got)
        printf("\n%s: %s\n", name, tide_error_message(err));
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    tide_tensor_release(want);
    tide_error_free(err);
}

static void test_npy_numpy_interop(void)
{
    if (!have_numpy()) {
        th_skip("/usr/bin/python3 has no numpy; apt-get install python3-numpy");
        return;
    }
    tide_error *err = tide_error_new();
    char command[4096];
    int n = snprintf(command, sizeof command, "/usr/bin/python3 %s %s", fx("interop.py"), fixture_root);
    write_text(fx("interop.py"), numpy_script);
    for (size_t k = 0; k < NUM_NPY_DTYPES; k++) {
        const char *name = tide_dtype_name(npy_dtypes[k]);
        char file[64];
        snprintf(file, sizeof file, "c_%s.npy", name);
        tide_tensor *t = npy_values(npy_dtypes[k], 2, TH_DIMS(3, 4));
        CU_ASSERT_EQUAL(tide_write_npy(fx(file), t, err), TIDE_OK);
        tide_tensor_release(t);
        n += snprintf(command + n, sizeof command - (size_t)n, " %s", name);
    }
    CU_ASSERT_EQUAL_FATAL(system(command), 0); /* numpy reads tide's files and writes its own */
    for (size_t k = 0; k < NUM_NPY_DTYPES; k++) {
        char file[64];
        snprintf(file, sizeof file, "py_%s.npy", tide_dtype_name(npy_dtypes[k]));
        check_numpy_file(file, npy_values(npy_dtypes[k], 2, TH_DIMS(3, 4)));
    }
    check_numpy_file("py_be_int32.npy", npy_values(TIDE_INT32, 2, TH_DIMS(3, 4)));
    check_numpy_file("py_be_float64.npy", npy_values(TIDE_FLOAT64, 2, TH_DIMS(3, 4)));
    check_numpy_file("py_be_complex128.npy", npy_values(TIDE_COMPLEX128, 2, TH_DIMS(3, 4)));
    check_numpy_file("py_v2.npy", npy_values(TIDE_FLOAT32, 2, TH_DIMS(3, 4)));
    check_numpy_file("py_v3.npy", npy_values(TIDE_FLOAT32, 2, TH_DIMS(3, 4)));
    double v = 2.5;
    check_numpy_file("py_scalar.npy", th_f64(0, NULL, &v));
    check_numpy_file("py_empty.npy", th_f32(2, TH_DIMS(0, 3), NULL));
    ASSERT_FAILED(tide_read_npy(fx("py_fortran.npy"), NULL, err), err, TIDE_UNIMPLEMENTED, "Fortran-order");
    tide_error_free(err);
}

/* ---------------------------------------------------------------- CSV */

static tide_tensor *csv(const char *text, char delimiter, int header, tide_dtype dt, tide_error *err)
{
    write_text(fx("t.csv"), text);
    tide_csv_options o;
    tide_csv_options_init(&o);
    o.delimiter = delimiter;
    o.header = header;
    o.dtype = dt;
    return tide_read_csv(fx("t.csv"), &o, err);
}

static void test_csv_reads(void)
{
    tide_error *err = tide_error_new();
    tide_csv_options o;
    tide_csv_options_init(&o);
    CU_ASSERT_EQUAL(o.delimiter, ',');
    CU_ASSERT_EQUAL(o.header, -1);
    CU_ASSERT_EQUAL(o.dtype, TIDE_FLOAT32);

    const float want6[] = {1, 2.5f, -3, 4e-3f, 5, 6};
    tide_tensor *want = th_f32(2, TH_DIMS(2, 3), want6);
    const char *same[] = {
        "1,2.5,-3\n0.004,5,6\n",       /* plain */
        "1,2.5,-3\r\n4e-3,5,6\r\n",    /* CRLF */
        "1,2.5,-3\n0.004,5,6",         /* no final newline */
        "1,2.5,-3\r\n0.004,5,6",       /* CRLF, no final newline */
        " 1 ,\t2.5, -3\n0.004 ,5,6 \n", /* spaces around fields */
        "\n1,2.5,-3\n\n  \n0.004,5,6\n\n", /* blank lines */
        "x,y,z\n1,2.5,-3\n0.004,5,6\n", /* detected header */
        "\"x\",y z,\n1,2.5,-3\n0.004,5,6\n", /* detected header: no field is a number */
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        tide_tensor *got = csv(same[i], ',', -1, TIDE_FLOAT32, err);
        if (!got)
            printf("\ncase %zu: %s\n", i, tide_error_message(err));
        CU_ASSERT(got && tide_tensor_equal(got, want, false));
        tide_tensor_release(got);
    }
    tide_tensor *got = tide_read_csv(fx("t.csv"), NULL, err); /* NULL options: the defaults */
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    /* Explicit header counts; other delimiters; gzip. */
    got = csv("title\nname,a,b\n1,2.5,-3\n.004,5,6\n", ',', 2, TIDE_FLOAT32, err);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    got = csv("1;2.5;-3\n0.004;5;6\n", ';', 0, TIDE_FLOAT32, err);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    got = csv("1\t2.5\t-3\n0.004\t5\t6\n", '\t', -1, TIDE_FLOAT32, err);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    const char *gz_text = "a,b,c\n1,2.5,-3\n0.004,5,6\n";
    write_file(fx("t.csv.gz"), gz_text, strlen(gz_text), true);
    got = tide_read_csv(fx("t.csv.gz"), NULL, err);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    tide_tensor_release(want);

    /* The other dtypes, at their limits. */
    got = csv("0.1,-1e300\n5e-324,inf\n", ',', 0, TIDE_FLOAT64, err);
    const double d[] = {0.1, -1e300, 5e-324, INFINITY};
    want = th_f64(2, TH_DIMS(2, 2), d);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    tide_tensor_release(want);
    got = csv("2147483647,-2147483648\n0,-7\n", ',', 0, TIDE_INT32, err);
    const int32_t i32[] = {INT32_MAX, INT32_MIN, 0, -7};
    want = th_i32(2, TH_DIMS(2, 2), i32);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    tide_tensor_release(want);
    got = csv("9007199254740993\n-9223372036854775808\n", ',', 0, TIDE_INT64, err);
    const int64_t i64[] = {9007199254740993LL, INT64_MIN};
    want = th_i64(2, TH_DIMS(2, 1), i64);
    CU_ASSERT(got && tide_tensor_equal(got, want, false));
    tide_tensor_release(got);
    tide_tensor_release(want);
    /* A decimal-comma locale does not change how numbers parse. */
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        got = csv("1.5,2\n", ',', 0, TIDE_FLOAT64, err);
        CU_ASSERT(got && *(double *)tide_tensor_data(got) == 1.5);
        tide_tensor_release(got);
        setlocale(LC_NUMERIC, "C");
    }
    tide_error_free(err);
}

static void test_csv_errors(void)
{
    tide_error *err = tide_error_new();
    const char *path = fx("t.csv");
    ASSERT_FAILED(csv("1,2,3\n4,,6\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT, path,
                  "line 2, column 2", "empty");
    ASSERT_FAILED(csv("1,2,3\n4,5,\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 2, column 3", "empty");
    ASSERT_FAILED(csv("1,2,3\n4,5\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 2: 2 fields, but line 1 has 3");
    ASSERT_FAILED(csv("h\n\n1,2\r\n4,5,6\r\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 4: more than 2 fields (line 3 has 2)");
    ASSERT_FAILED(csv("1,2\n3,abc\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 2, column 2: \"abc\" is not a number");
    ASSERT_FAILED(csv("1,2\n3,4x\n", ',', -1, TIDE_FLOAT64, err), err, TIDE_INVALID_ARGUMENT,
                  "line 2, column 2: \"4x\" is not a number");
    ASSERT_FAILED(csv("1,\"2\"\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 1, column 2", "not a number");
    ASSERT_FAILED(csv("a,b\nc,d\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 2, column 1: \"c\""); /* only one header line is detected */
    ASSERT_FAILED(csv("1,x\n2,3\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 1, column 2: \"x\""); /* a row with a number is data, reported */
    ASSERT_FAILED(csv("1,1.5\n", ',', 0, TIDE_INT32, err), err, TIDE_INVALID_ARGUMENT,
                  "line 1, column 2: \"1.5\" is not an int32");
    ASSERT_FAILED(csv("3000000000\n", ',', 0, TIDE_INT32, err), err, TIDE_INVALID_ARGUMENT,
                  "out of the range of int32");
    ASSERT_FAILED(csv("9223372036854775808\n", ',', 0, TIDE_INT64, err), err, TIDE_INVALID_ARGUMENT,
                  "out of the range of int64");
    ASSERT_FAILED(csv("1e39\n", ',', 0, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT,
                  "\"1e39\" is out of the range of float32");
    ASSERT_FAILED(csv("1e309\n", ',', 0, TIDE_FLOAT64, err), err, TIDE_INVALID_ARGUMENT,
                  "out of the range of float64");
    write_file(path, "1,2\n3,4\0junk\n", 13, false); /* a NUL is no text, wherever it is */
    ASSERT_FAILED(tide_read_csv(path, NULL, err), err, TIDE_INVALID_ARGUMENT, "line 2, column 2",
                  "NUL byte");
    ASSERT_FAILED(csv("a,b\n", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT, "no data rows");
    ASSERT_FAILED(csv("", ',', -1, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT, "no data rows");
    ASSERT_FAILED(csv("1\n", ',', 0, TIDE_INT8, err), err, TIDE_UNIMPLEMENTED, "int8");
    ASSERT_FAILED(csv("1\n", '5', 0, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT, "delimiter");
    ASSERT_FAILED(csv("1\n", ',', -2, TIDE_FLOAT32, err), err, TIDE_INVALID_ARGUMENT, "header = -2");
    ASSERT_FAILED(tide_read_csv(fx("none.csv"), NULL, err), err, TIDE_NOT_FOUND, fx("none.csv"),
                  strerror(ENOENT));
    tide_error_free(err);
}

/* ---------------------------------------------------------------- Fashion-MNIST */

/* The first n bytes after the IDX header of a file, read independently of tide_read_idx. */
static void raw_idx_bytes(const char *path, int header_bytes, unsigned char *out, unsigned n)
{
    gzFile gz = gzopen(path, "rb");
    CU_ASSERT_FATAL(gz != NULL);
    unsigned char skip[16];
    CU_ASSERT_EQUAL(gzread(gz, skip, (unsigned)header_bytes), header_bytes);
    CU_ASSERT_EQUAL(gzread(gz, out, n), (int)n);
    gzclose(gz);
}

static void check_split(tide_tensor *images, tide_tensor *labels, int64_t n, const char *split)
{
    TH_ASSERT_SHAPE(images, 4, TH_DIMS(n, 28, 28, 1));
    TH_ASSERT_SHAPE(labels, 1, TH_DIMS(n));
    CU_ASSERT_EQUAL(tide_tensor_dtype(images), TIDE_FLOAT32);
    CU_ASSERT_EQUAL(tide_tensor_dtype(labels), TIDE_INT32);
    const float *px = tide_tensor_data(images);
    float lo = 1, hi = 0;
    int64_t off_grid = 0;
    for (int64_t i = 0; i < n * 784; i++) {
        lo = fminf(lo, px[i]);
        hi = fmaxf(hi, px[i]);
        double scaled = px[i] * 255.0;
        off_grid += fabs(scaled - round(scaled)) > 1e-4;
    }
    CU_ASSERT(lo == 0.0f && hi == 1.0f);
    CU_ASSERT_EQUAL(off_grid, 0);
    const int32_t *lab = tide_tensor_data(labels);
    int64_t per_class[10] = {0};
    for (int64_t i = 0; i < n; i++) {
        CU_ASSERT_FATAL(lab[i] >= 0 && lab[i] <= 9);
        per_class[lab[i]]++;
    }
    for (int c = 0; c < 10; c++)
        CU_ASSERT_EQUAL(per_class[c], n / 10); /* Fashion-MNIST is balanced */
    /* The first label and the first image, against the raw bytes. */
    char path[256];
    unsigned char first_label, first_image[784];
    snprintf(path, sizeof path, FMNIST_DIR "/%s-labels-idx1-ubyte.gz", split);
    raw_idx_bytes(path, 8, &first_label, 1);
    CU_ASSERT_EQUAL(first_label, 9);
    CU_ASSERT_EQUAL(lab[0], first_label);
    snprintf(path, sizeof path, FMNIST_DIR "/%s-images-idx3-ubyte.gz", split);
    raw_idx_bytes(path, 16, first_image, 784);
    int mismatched = 0;
    for (int i = 0; i < 784; i++)
        mismatched += fabs(px[i] - first_image[i] / 255.0) > 1e-7;
    CU_ASSERT_EQUAL(mismatched, 0);
}

static void test_fashion_mnist_real(void)
{
    if (!have_fashion_mnist())
        return;
    tide_error *err = tide_error_new();
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tide_tensor *raw = tide_read_idx(FMNIST_DIR "/train-images-idx3-ubyte.gz", NULL, err);
    double idx_s = seconds_since(&t0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
    TH_ASSERT_SHAPE(raw, 3, TH_DIMS(60000, 28, 28));
    tide_tensor_release(raw);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tide_dataset d;
    CU_ASSERT_EQUAL_FATAL(tide_fashion_mnist_load(NULL, &d, err), TIDE_OK);
    double load_s = seconds_since(&t0);
    printf("\n  (tide_read_idx of the 60,000 training images: %.3f s; tide_fashion_mnist_load: %.3f s) ",
           idx_s, load_s);
    /* About 0.5 s on a quiet machine; the bound catches a pathological slowdown, not noise (it ran
     * past 1 s at load average 20 with the other suites in parallel). */
    if (!SANITIZED)
        CU_ASSERT(idx_s < 4.0);
    check_split(d.train_images, d.train_labels, 60000, "train");
    check_split(d.test_images, d.test_labels, 10000, "t10k");
    tide_dataset_release(&d);
    CU_ASSERT_PTR_NULL(d.train_images);
    CU_ASSERT_PTR_NULL(d.test_labels);
    tide_dataset_release(NULL);
    tide_error_free(err);
}

/* A fake Fashion-MNIST directory under the fixtures: n images of side x side, labels given. */
static const char *fake_fmnist(const char *name, int n_images, int side, int n_labels, const uint8_t *labels)
{
    char dir[128], file[192];
    snprintf(dir, sizeof dir, "%s", fx(name));
    mkdir(dir, 0755);
    for (int split = 0; split < 2; split++) {
        const char *prefix = split ? "t10k" : "train";
        bytes b;
        build_idx(&b, 0x08, 3, (uint32_t[]){(uint32_t)n_images, (uint32_t)side, 28});
        for (int i = 0; i < n_images * side * 28; i++)
            put_be(&b, (uint64_t)(i % 256), 1);
        snprintf(file, sizeof file, "%s/%s-images-idx3-ubyte", dir, prefix);
        write_file(file, b.data, b.n, false); /* the names without .gz are accepted too */
        build_idx(&b, 0x08, 1, (uint32_t[]){(uint32_t)n_labels});
        put(&b, labels, (size_t)n_labels);
        snprintf(file, sizeof file, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
        write_file(file, b.data, b.n, true);
    }
    return fx(name);
}

static void test_fashion_mnist_errors(void)
{
    tide_error *err = tide_error_new();
    tide_dataset d;
    /* $TIDE_FASHION_MNIST is used when dir is NULL. */
    const char *good = fake_fmnist("fm-good", 3, 28, 3, (const uint8_t[]){9, 0, 5});
    char *saved = getenv("TIDE_FASHION_MNIST") ? strdup(getenv("TIDE_FASHION_MNIST")) : NULL;
    setenv("TIDE_FASHION_MNIST", good, 1);
    CU_ASSERT_EQUAL_FATAL(tide_fashion_mnist_load(NULL, &d, err), TIDE_OK);
    TH_ASSERT_SHAPE(d.train_images, 4, TH_DIMS(3, 28, 28, 1));
    CU_ASSERT_EQUAL(((int32_t *)tide_tensor_data(d.test_labels))[2], 5);
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(d.train_images))[255], 1.0f);
    CU_ASSERT_EQUAL(((float *)tide_tensor_data(d.train_images))[51], (float)(51 / 255.0));
    tide_dataset_release(&d);
    const char *missing = fx("fm-missing");
    setenv("TIDE_FASHION_MNIST", missing, 1);
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(NULL, &d, err), TIDE_NOT_FOUND);
    ASSERT_FAILED(NULL, err, TIDE_NOT_FOUND, missing, "dataset-fashion-mnist", "TIDE_FASHION_MNIST");
    if (saved)
        setenv("TIDE_FASHION_MNIST", saved, 1);
    else
        unsetenv("TIDE_FASHION_MNIST");
    free(saved);

    const char *dir = fake_fmnist("fm-count", 3, 28, 2, (const uint8_t[]){1, 2});
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(dir, &d, err), TIDE_INVALID_ARGUMENT);
    ASSERT_FAILED(NULL, err, TIDE_INVALID_ARGUMENT, "3 images but", "2 labels");
    CU_ASSERT(!d.train_images && !d.train_labels && !d.test_images && !d.test_labels);
    dir = fake_fmnist("fm-side", 2, 27, 2, (const uint8_t[]){1, 2});
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(dir, &d, err), TIDE_INVALID_ARGUMENT);
    ASSERT_FAILED(NULL, err, TIDE_INVALID_ARGUMENT, "[N, 28, 28]", "[2, 27, 28]");
    dir = fake_fmnist("fm-label", 2, 28, 2, (const uint8_t[]){1, 10});
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(dir, &d, err), TIDE_INVALID_ARGUMENT);
    ASSERT_FAILED(NULL, err, TIDE_INVALID_ARGUMENT, "label 10 at index 1");
    dir = fake_fmnist("fm-nolabels", 2, 28, 2, (const uint8_t[]){1, 2});
    char file[256];
    snprintf(file, sizeof file, "%s/t10k-labels-idx1-ubyte.gz", dir);
    unlink(file);
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(dir, &d, err), TIDE_NOT_FOUND);
    ASSERT_FAILED(NULL, err, TIDE_NOT_FOUND, "t10k-labels-idx1-ubyte");
    CU_ASSERT(!d.train_images && !d.train_labels); /* the train split loaded, then released */
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(fx("t.csv"), &d, err), TIDE_NOT_FOUND);
    ASSERT_FAILED(NULL, err, TIDE_NOT_FOUND, "not a directory");
    CU_ASSERT_EQUAL(tide_fashion_mnist_load(dir, NULL, err), TIDE_INVALID_ARGUMENT);
    tide_error_free(err);
}

/* ---------------------------------------------------------------- batcher */

static bool points_into(const tide_tensor *view, const tide_tensor *base)
{
    const char *p = tide_tensor_data(view), *b = tide_tensor_data(base);
    return p >= b && p + tide_tensor_byte_size(view) <= b + tide_tensor_byte_size(base);
}

/* x [n, 2] float32 with row r = (r, -r); y [n] int64 = 1000 + r. */
static void make_rows(int64_t n, tide_tensor **x, tide_tensor **y)
{
    float *xv = malloc(sizeof(float) * (size_t)n * 2);
    int64_t *yv = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t r = 0; r < n; r++) {
        xv[2 * r] = (float)r;
        xv[2 * r + 1] = (float)-r;
        yv[r] = 1000 + r;
    }
    *x = th_f32(2, TH_DIMS(n, 2), xv);
    *y = th_i64(1, TH_DIMS(n), yv);
    free(xv);
    free(yv);
}

static void test_batcher_views(void)
{
    tide_error *err = tide_error_new();
    tide_tensor *x, *y, *out[2];
    make_rows(10, &x, &y);
    tide_batcher *b = tide_batcher_new((tide_tensor *[]){x, y}, 2, 4, false, 0, false, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(tide_batcher_batches_per_epoch(b), 3);
    for (int epoch = 0; epoch < 2; epoch++) {
        const int64_t sizes[] = {4, 4, 2};
        for (int i = 0; i < 3; i++) {
            CU_ASSERT_FATAL(tide_batcher_next(b, out, NULL));
            TH_ASSERT_SHAPE(out[0], 2, TH_DIMS(sizes[i], 2));
            TH_ASSERT_SHAPE(out[1], 1, TH_DIMS(sizes[i]));
            CU_ASSERT(points_into(out[0], x) && points_into(out[1], y)); /* views, no copy */
            CU_ASSERT_EQUAL(((float *)tide_tensor_data(out[0]))[2 * (sizes[i] - 1) + 1], (float)-(4 * i + sizes[i] - 1));
            CU_ASSERT_EQUAL(((int64_t *)tide_tensor_data(out[1]))[0], 1000 + 4 * i);
            tide_tensor_release(out[0]);
            tide_tensor_release(out[1]);
        }
        out[0] = out[1] = NULL;
        CU_ASSERT_EQUAL(tide_batcher_epoch(b), epoch);
        CU_ASSERT_FALSE(tide_batcher_next(b, out, NULL)); /* once per epoch, out untouched */
        CU_ASSERT(out[0] == NULL && out[1] == NULL);
        CU_ASSERT_EQUAL(tide_batcher_epoch(b), epoch + 1);
    }
    tide_batcher_free(b);
    /* drop_remainder: two batches of 4; the batcher keeps its tensors alive by itself. */
    b = tide_batcher_new((tide_tensor *[]){x, y}, 2, 4, false, 0, true, err);
    tide_tensor_release(x);
    tide_tensor_release(y);
    CU_ASSERT_EQUAL(tide_batcher_batches_per_epoch(b), 2);
    int batches = 0;
    while (tide_batcher_next(b, out, NULL)) {
        CU_ASSERT_EQUAL(tide_tensor_dim(out[0], 0), 4);
        batches++;
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
    }
    CU_ASSERT_EQUAL(batches, 2);
    tide_batcher_free(b);
    tide_batcher_free(NULL);
    tide_error_free(err);
}

/* One epoch of a shuffled batcher over make_rows(n): the rows in the order seen (x and y must agree). */
static int64_t run_epoch(tide_batcher *b, const tide_tensor *x, int64_t *order, int64_t max)
{
    tide_tensor *out[2];
    int64_t seen = 0;
    while (tide_batcher_next(b, out, NULL)) {
        CU_ASSERT(!points_into(out[0], x)); /* gathered copies */
        const float *xv = tide_tensor_data(out[0]);
        const int64_t *yv = tide_tensor_data(out[1]);
        for (int64_t r = 0; r < tide_tensor_dim(out[0], 0); r++) {
            CU_ASSERT_EQUAL(xv[2 * r + 1], -xv[2 * r]);
            CU_ASSERT_EQUAL(yv[r], 1000 + (int64_t)xv[2 * r]);
            if (seen < max)
                order[seen] = yv[r] - 1000;
            seen++;
        }
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
    }
    return seen;
}

static void test_batcher_shuffle(void)
{
    enum { N = 103 };
    tide_error *err = tide_error_new();
    tide_tensor *x, *y;
    make_rows(N, &x, &y);
    tide_tensor *pair[] = {x, y};
    tide_batcher *b = tide_batcher_new(pair, 2, 10, true, 42, false, err);
    tide_batcher *same = tide_batcher_new(pair, 2, 10, true, 42, false, err);
    tide_batcher *other = tide_batcher_new(pair, 2, 10, true, 43, false, err);
    CU_ASSERT_FATAL(b && same && other);
    CU_ASSERT_EQUAL(tide_batcher_batches_per_epoch(b), 11);
    int64_t e1[N], e2[N], s1[N], s2[N], o1[N];
    CU_ASSERT_EQUAL(run_epoch(b, x, e1, N), N);
    CU_ASSERT_EQUAL(run_epoch(b, x, e2, N), N);
    CU_ASSERT_EQUAL(tide_batcher_epoch(b), 2);
    bool seen[N] = {false};
    int dupes = 0, identity = 0;
    for (int i = 0; i < N; i++) {
        dupes += seen[e1[i]];
        seen[e1[i]] = true;
        identity += e1[i] == i;
    }
    CU_ASSERT_EQUAL(dupes, 0); /* every row exactly once */
    CU_ASSERT(identity < N / 4);
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N; i++)
        seen[e2[i]] = true;
    for (int i = 0; i < N; i++)
        CU_ASSERT(seen[i]);
    CU_ASSERT(memcmp(e1, e2, sizeof e1) != 0); /* a new order each epoch */
    run_epoch(same, x, s1, N);
    run_epoch(same, x, s2, N);
    CU_ASSERT(memcmp(e1, s1, sizeof e1) == 0 && memcmp(e2, s2, sizeof e2) == 0); /* per seed */
    run_epoch(other, x, o1, N);
    CU_ASSERT(memcmp(e1, o1, sizeof e1) != 0);
    tide_batcher_free(b);
    tide_batcher_free(same);
    tide_batcher_free(other);

    /* drop_remainder with shuffling: 10 full batches, 100 distinct rows, different ones left out. */
    b = tide_batcher_new(pair, 2, 10, true, 7, true, err);
    CU_ASSERT_EQUAL(tide_batcher_batches_per_epoch(b), 10);
    CU_ASSERT_EQUAL(run_epoch(b, x, e1, N), 100);
    CU_ASSERT_EQUAL(run_epoch(b, x, e2, N), 100);
    memset(seen, 0, sizeof seen);
    dupes = 0;
    for (int i = 0; i < 100; i++) {
        dupes += seen[e1[i]];
        seen[e1[i]] = true;
    }
    CU_ASSERT_EQUAL(dupes, 0);
    tide_batcher_free(b);
    tide_tensor_release(x);
    tide_tensor_release(y);
    tide_error_free(err);
}

/* Over many epochs every row is equally likely to come first (a biased shuffle is not). */
static void test_batcher_uniformity(void)
{
    enum { N = 10, EPOCHS = 20000 };
    tide_tensor *x, *y, *out[2];
    make_rows(N, &x, &y);
    tide_batcher *b = tide_batcher_new((tide_tensor *[]){x, y}, 2, N, true, 1, false, NULL);
    int first[N] = {0}, last[N] = {0}, repeats = 0;
    int64_t previous_first = -1;
    for (int e = 0; e < EPOCHS; e++) {
        CU_ASSERT_FATAL(tide_batcher_next(b, out, NULL));
        const int64_t *yv = tide_tensor_data(out[1]);
        first[yv[0] - 1000]++;
        last[yv[N - 1] - 1000]++;
        repeats += yv[0] == previous_first;
        previous_first = yv[0];
        tide_tensor_release(out[0]);
        tide_tensor_release(out[1]);
        CU_ASSERT_FALSE(tide_batcher_next(b, out, NULL));
    }
    for (int r = 0; r < N; r++) { /* expected 2000 each, standard deviation about 42 */
        CU_ASSERT(abs(first[r] - EPOCHS / N) < 250);
        CU_ASSERT(abs(last[r] - EPOCHS / N) < 250);
    }
    CU_ASSERT(abs(repeats - EPOCHS / N) < 250); /* the same first row again: 1 in N (Sattolo: never) */
    tide_batcher_free(b);
    tide_tensor_release(x);
    tide_tensor_release(y);
}

static void test_batcher_strings_and_errors(void)
{
    tide_error *err = tide_error_new();
    tide_shape s = tide_shape_matrix(3, 2);
    tide_tensor *str = tide_tensor_new(TIDE_STRING, &s, NULL);
    const char *words[] = {"a0", "a1", "b0", "b1", "c0", "c1"};
    for (int i = 0; i < 6; i++)
        tide_tensor_string_set(str, i, words[i], 2, NULL);
    tide_batcher *b = tide_batcher_new(&str, 1, 3, true, 5, false, err);
    tide_tensor *out[2];
    CU_ASSERT_FATAL(b && tide_batcher_next(b, out, NULL));
    bool row_seen[3] = {false};
    for (int r = 0; r < 3; r++) {
        size_t len;
        const char *w0 = tide_tensor_string_get(out[0], 2 * r, &len);
        const char *w1 = tide_tensor_string_get(out[0], 2 * r + 1, &len);
        CU_ASSERT(w0[0] == w1[0] && w0[1] == '0' && w1[1] == '1' && len == 2);
        row_seen[w0[0] - 'a'] = true;
    }
    CU_ASSERT(row_seen[0] && row_seen[1] && row_seen[2]);
    tide_tensor_release(out[0]);
    tide_batcher_free(b);

    tide_tensor *x, *y, *x9, *y9;
    make_rows(10, &x, &y);
    make_rows(9, &x9, &y9);
    double one = 1;
    tide_tensor *scalar = th_f64(0, NULL, &one);
    ASSERT_FAILED(tide_batcher_new((tide_tensor *[]){x, y9}, 2, 4, false, 0, false, err),
                  err, TIDE_INVALID_ARGUMENT, "share their first dimension", "[10, 2]", "[9]");
    ASSERT_FAILED(tide_batcher_new((tide_tensor *[]){x}, 1, 0, false, 0, false, err),
                  err, TIDE_INVALID_ARGUMENT, "batch_size 0");
    ASSERT_FAILED(tide_batcher_new((tide_tensor *[]){x}, 0, 4, false, 0, false, err),
                  err, TIDE_INVALID_ARGUMENT, "0 tensors");
    ASSERT_FAILED(tide_batcher_new(NULL, 1, 4, false, 0, false, err), err,
                  TIDE_INVALID_ARGUMENT, "0 tensors");
    ASSERT_FAILED(tide_batcher_new((tide_tensor *[]){x, NULL}, 2, 4, false, 0, false, err),
                  err, TIDE_INVALID_ARGUMENT, "tensor 1 is NULL");
    ASSERT_FAILED(tide_batcher_new((tide_tensor *[]){scalar}, 1, 4, false, 0, false, err),
                  err, TIDE_INVALID_ARGUMENT, "scalar");
    ASSERT_FAILED(tide_batcher_new((tide_tensor *[]){x}, 1, 11, true, 0, true, err),
                  err, TIDE_INVALID_ARGUMENT, "10 rows make no batch of 11 with drop_remainder");
    /* Without drop_remainder a batch larger than the data set is the whole data set. */
    b = tide_batcher_new((tide_tensor *[]){x}, 1, 11, false, 0, false, err);
    CU_ASSERT_FATAL(b && tide_batcher_next(b, out, NULL));
    CU_ASSERT_EQUAL(tide_tensor_dim(out[0], 0), 10);
    tide_tensor_release(out[0]);
    tide_batcher_free(b);
    tide_error_clear(err);
    CU_ASSERT_FALSE(tide_batcher_next(NULL, out, err));
    CU_ASSERT_EQUAL(tide_error_code(err), TIDE_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(tide_batcher_epoch(NULL), 0);
    tide_tensor_release(scalar);
    tide_tensor_release(str);
    tide_tensor_release(x);
    tide_tensor_release(y);
    tide_tensor_release(x9);
    tide_tensor_release(y9);
    tide_error_free(err);
}

int main(void)
{
    static const th_test tests[] = {
        TH_TEST(test_idx_every_type),      TH_TEST(test_idx_malformed),
        TH_TEST(test_npy_round_trip),
        TH_TEST(test_npy_header_bytes),    TH_TEST(test_npy_write_errors_and_atomicity),
        TH_TEST(test_npy_read_variants),   TH_TEST(test_npy_malformed),
        TH_TEST(test_npy_mutations),       TH_TEST(test_npy_numpy_interop),
        TH_TEST(test_csv_reads),           TH_TEST(test_csv_errors),
        TH_TEST(test_fashion_mnist_real),  TH_TEST(test_fashion_mnist_errors),
        TH_TEST(test_batcher_views),       TH_TEST(test_batcher_shuffle),
        TH_TEST(test_batcher_uniformity),  TH_TEST(test_batcher_strings_and_errors),
        TH_END};
    return th_main("data", tests);
}
