/* idx.c — reading IDX files, the format of MNIST and Fashion-MNIST (LeCun's "THE IDX FILE FORMAT"):
 * four magic bytes 0x00 0x00 TYPE NDIMS, then NDIMS big-endian uint32 dimensions, then the elements
 * in row-major order, big-endian. Files may be gzip-compressed; zlib's gzread reads both forms, so
 * compression is detected by content, not by the file name.
 *
 * The data are read in one pass straight into the tensor's buffer, then byte-swapped in place for
 * multi-byte types: loading Fashion-MNIST's 47 MB of training images costs about one inflate. The
 * allocation is checked first against what the file holds, so a corrupt header gives "truncated",
 * not a huge allocation: exactly by the file size when it is not compressed, and by a counting pass
 * when a compressed file claims more than UNCHECKED_ALLOC_MAX bytes of data. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tide_data.h"

#define IDX_GZ_BUFFER (256u << 10)
#define UNCHECKED_ALLOC_MAX ((uint64_t)256 << 20)
#define READ_CHUNK_MAX ((size_t)1 << 30) /* gzread counts in unsigned int */
#define MAX_DATA_BYTES ((uint64_t)INT64_MAX / 16)

typedef struct idx_type {
    unsigned char code;
    tide_dtype dtype;
} idx_type;

static const idx_type idx_types[] = {
    {0x08, TIDE_UINT8}, {0x09, TIDE_INT8},    {0x0B, TIDE_INT16},
    {0x0C, TIDE_INT32}, {0x0D, TIDE_FLOAT32}, {0x0E, TIDE_FLOAT64},
};

/* One open IDX file and what its header said. */
typedef struct idx_file {
    const char *path;
    gzFile gz;
    int fd;               /* the descriptor gz reads (owned by gz) */
    tide_dtype dtype;
    tide_shape shape;
    uint64_t header_bytes;
    uint64_t data_bytes;  /* what the header promises */
} idx_file;

static tide_dtype idx_dtype(unsigned char code)
{
    for (size_t i = 0; i < sizeof idx_types / sizeof *idx_types; i++)
        if (idx_types[i].code == code)
            return idx_types[i].dtype;
    return TIDE_INVALID_DTYPE;
}

/* Reads up to n bytes (n may exceed gzread's unsigned range); *got receives how many came.
 * Returns false on a decompression or I/O error. */
static bool gz_read_fully(gzFile gz, void *buf, uint64_t n, uint64_t *got)
{
    unsigned char *p = buf;
    *got = 0;
    while (*got < n) {
        uint64_t want = n - *got < READ_CHUNK_MAX ? n - *got : READ_CHUNK_MAX;
        int r = gzread(gz, p + *got, (unsigned)want);
        if (r < 0)
            return false;
        if (r == 0)
            break;
        *got += (uint64_t)r;
    }
    return true;
}

/* Reads and discards the rest of the stream, counting the bytes; false on an error. */
static bool gz_count_rest(gzFile gz, uint64_t *count)
{
    enum { SCRATCH = 64 << 10 };
    unsigned char one;
    uint64_t got;
    *count = 0;
    if (!gz_read_fully(gz, &one, 1, &got))
        return false;
    if (!got)
        return true; /* the usual case: nothing left, no scratch buffer needed */
    unsigned char *scratch = malloc(SCRATCH);
    if (!scratch)
        return false;
    bool ok = true;
    *count = 1;
    do {
        ok = gz_read_fully(gz, scratch, SCRATCH, &got);
        *count += got;
    } while (ok && got == SCRATCH);
    free(scratch);
    return ok;
}

static tide_status gz_failure(const idx_file *f, tide_error *err)
{
    int code = Z_OK;
    const char *msg = gzerror(f->gz, &code);
    if (code == Z_ERRNO)
        msg = strerror(errno);
    return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: cannot read the IDX data: %s", f->path,
                          msg && *msg ? msg : "read error");
}

static tide_status idx_open(idx_file *f, const char *path, tide_error *err)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return tide_error_set(err, errno == ENOENT ? TIDE_NOT_FOUND : TIDE_INVALID_ARGUMENT,
                              "cannot open IDX file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(f->fd);
        return tide_error_set(err, TIDE_INVALID_ARGUMENT, "cannot read IDX file %s: it is a directory",
                              path);
    }
    f->gz = gzdopen(f->fd, "rb");
    if (!f->gz) {
        close(f->fd);
        return tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "cannot open IDX file %s: out of memory",
                              path);
    }
    gzbuffer(f->gz, IDX_GZ_BUFFER);
    return TIDE_OK;
}

static tide_status read_magic(idx_file *f, tide_error *err)
{
    unsigned char magic[4];
    uint64_t got;
    if (!gz_read_fully(f->gz, magic, 4, &got))
        return gz_failure(f, err);
    if (got < 4)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: not an IDX file: it has %llu bytes, the magic number alone needs 4",
                              f->path, (unsigned long long)got);
    if (magic[0] != 0 || magic[1] != 0)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: not an IDX file: magic bytes %02x %02x %02x %02x, expected 00 00 "
                              "TYPE NDIMS",
                              f->path, magic[0], magic[1], magic[2], magic[3]);
    f->dtype = idx_dtype(magic[2]);
    if (f->dtype == TIDE_INVALID_DTYPE)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: unknown IDX type code 0x%02x (known: 0x08 uint8, 0x09 int8, "
                              "0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64)",
                              f->path, magic[2]);
    if (magic[3] == 0 || magic[3] > TIDE_MAX_RANK)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: the IDX header has %d dimensions; tide reads 1 to %d", f->path,
                              magic[3], TIDE_MAX_RANK);
    f->shape.rank = magic[3];
    return TIDE_OK;
}

static tide_status read_dims(idx_file *f, tide_error *err)
{
    unsigned char raw[4 * TIDE_MAX_RANK];
    size_t need = 4 * (size_t)f->shape.rank;
    uint64_t got;
    if (!gz_read_fully(f->gz, raw, need, &got))
        return gz_failure(f, err);
    if (got < need)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: truncated IDX header: %d dimensions need %zu bytes after the magic "
                              "number, file has %llu",
                              f->path, f->shape.rank, need, (unsigned long long)got);
    uint64_t bytes = tide_dtype_size(f->dtype);
    bool too_large = false;
    for (int i = 0; i < f->shape.rank; i++) {
        const unsigned char *d = raw + 4 * i;
        uint32_t dim = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
        f->shape.dims[i] = dim;
        too_large |= __builtin_mul_overflow(bytes, (uint64_t)f->shape.dims[i], &bytes);
    }
    if (too_large || bytes > MAX_DATA_BYTES) {
        char buf[TIDE_SHAPE_STR_MAX];
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: the IDX dimensions %s of %s are too large (the data size overflows)",
                              f->path, tide_shape_format(&f->shape, buf, sizeof buf),
                              tide_dtype_name(f->dtype));
    }
    f->header_bytes = 4 + need;
    f->data_bytes = bytes;
    return TIDE_OK;
}

static tide_status size_mismatch(const idx_file *f, uint64_t has, bool gz_error, tide_error *err)
{
    char buf[TIDE_SHAPE_STR_MAX];
    tide_shape_format(&f->shape, buf, sizeof buf);
    if (has < f->data_bytes)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: truncated IDX data: expected %llu bytes of data for %s %s, file has "
                              "%llu%s",
                              f->path, (unsigned long long)f->data_bytes, tide_dtype_name(f->dtype), buf,
                              (unsigned long long)has, gz_error ? " (the gzip stream ends early)" : "");
    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                          "%s: %llu bytes of trailing garbage after the %llu bytes of data of %s %s",
                          f->path, (unsigned long long)(has - f->data_bytes),
                          (unsigned long long)f->data_bytes, tide_dtype_name(f->dtype), buf);
}

/* Before allocating: does the file hold exactly data_bytes after the header? A compressed file is
 * checked only when it claims more than UNCHECKED_ALLOC_MAX (the read itself checks the others). */
static tide_status precheck_size(idx_file *f, tide_error *err)
{
    uint64_t has;
    if (gzdirect(f->gz)) {
        struct stat st;
        if (fstat(f->fd, &st) != 0)
            return tide_error_set(err, TIDE_INVALID_ARGUMENT, "%s: %s", f->path, strerror(errno));
        has = (uint64_t)st.st_size > f->header_bytes ? (uint64_t)st.st_size - f->header_bytes : 0;
    } else if (f->data_bytes > UNCHECKED_ALLOC_MAX) {
        if (!gz_count_rest(f->gz, &has))
            return gz_failure(f, err);
        if (gzrewind(f->gz) != 0 || gzseek(f->gz, (z_off_t)f->header_bytes, SEEK_SET) < 0)
            return gz_failure(f, err);
    } else {
        return TIDE_OK;
    }
    return has == f->data_bytes ? TIDE_OK : size_mismatch(f, has, false, err);
}

/* IDX stores big-endian; swap each element in place on a little-endian host. */
static void big_endian_to_host(void *data, uint64_t count, size_t esize)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (esize == 2) {
        uint16_t *p = data;
        for (uint64_t i = 0; i < count; i++)
            p[i] = __builtin_bswap16(p[i]);
    } else if (esize == 4) {
        uint32_t *p = data;
        for (uint64_t i = 0; i < count; i++)
            p[i] = __builtin_bswap32(p[i]);
    } else if (esize == 8) {
        uint64_t *p = data;
        for (uint64_t i = 0; i < count; i++)
            p[i] = __builtin_bswap64(p[i]);
    }
#else
    (void)data, (void)count, (void)esize;
#endif
}

static tide_tensor *read_data(idx_file *f, tide_error *err)
{
    tide_tensor *t = tide_tensor_new_uninitialized(f->dtype, &f->shape, err);
    if (!t)
        return NULL;
    uint64_t got, extra;
    void *data = tide_tensor_data(t);
    if (!gz_read_fully(f->gz, data, f->data_bytes, &got)) {
        gz_failure(f, err);
    } else if (got < f->data_bytes) {
        int code = Z_OK;
        gzerror(f->gz, &code);
        size_mismatch(f, got, code != Z_OK, err);
    } else if (!gz_count_rest(f->gz, &extra)) {
        gz_failure(f, err);
    } else if (extra) {
        size_mismatch(f, got + extra, false, err);
    } else {
        big_endian_to_host(data, (uint64_t)tide_tensor_num_elements(t), tide_dtype_size(f->dtype));
        return t;
    }
    tide_tensor_release(t);
    return NULL;
}

tide_tensor *tide_read_idx(const char *path, tide_error *err)
{
    if (!path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_read_idx: path is NULL");
        return NULL;
    }
    idx_file f;
    if (idx_open(&f, path, err) != TIDE_OK)
        return NULL;
    tide_tensor *t = NULL;
    if (read_magic(&f, err) == TIDE_OK && read_dims(&f, err) == TIDE_OK &&
        precheck_size(&f, err) == TIDE_OK)
        t = read_data(&f, err);
    gzclose(f.gz);
    return t;
}
