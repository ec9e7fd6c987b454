/* idx.c — reading IDX files, the format of MNIST and Fashion-MNIST (LeCun's "THE IDX FILE FORMAT"):
 * four magic bytes 0x00 0x00 TYPE NDIMS, then NDIMS big-endian uint32 dimensions, then the elements
 * in row-major order, big-endian. Files may be gzip-compressed (detected by content, not by the name);
 * file_input verifies the compressed stream whole: a cut, a CRC-32 or length trailer that does not
 * match, trailing garbage are errors.
 *
 * The data are read in one pass straight into the tensor's buffer, then byte-swapped in place for
 * multi-byte types: loading Fashion-MNIST's 47 MB of training images costs about one inflate. Before
 * anything is allocated the size the header claims is checked against the reader's cap
 * (tide_read_options.max_bytes), and against what the file holds: exactly, by the file size, when it
 * is not compressed, and by a counting pass when a compressed file claims more than
 * UNCHECKED_ALLOC_MAX bytes, so a corrupt header gives "truncated", not a huge allocation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "file_input.h"

#define UNCHECKED_ALLOC_MAX ((uint64_t)256 << 20)
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
    uint64_t max_bytes;
    file_input *in;
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

/* Reads up to n bytes; *got says how many came (fewer only at the end of the data). */
static tide_status read_bytes(idx_file *f, void *buf, uint64_t n, uint64_t *got, tide_error *err)
{
    size_t got_now = 0;
    tide_status st = file_input_read(f->in, buf, (size_t)n, &got_now, err);
    *got = got_now;
    return st;
}

static tide_status read_magic(idx_file *f, tide_error *err)
{
    unsigned char magic[4];
    uint64_t got;
    tide_status st = read_bytes(f, magic, 4, &got, err);
    if (st != TIDE_OK)
        return st;
    if (got < 4)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: not an IDX file: it has %llu byte%s%s, the magic number alone needs 4",
                              f->path, (unsigned long long)got, got == 1 ? "" : "s",
                              file_input_is_compressed(f->in) ? " after decompression" : "");
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
    tide_status st = read_bytes(f, raw, need, &got, err);
    if (st != TIDE_OK)
        return st;
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

static tide_status size_mismatch(const idx_file *f, uint64_t has, tide_error *err)
{
    char buf[TIDE_SHAPE_STR_MAX];
    tide_shape_format(&f->shape, buf, sizeof buf);
    if (has < f->data_bytes)
        return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                              "%s: truncated IDX data: expected %llu bytes of data for %s %s, file has %llu",
                              f->path, (unsigned long long)f->data_bytes, tide_dtype_name(f->dtype), buf,
                              (unsigned long long)has);
    return tide_error_set(err, TIDE_INVALID_ARGUMENT,
                          "%s: %llu bytes of trailing garbage after the %llu bytes of data of %s %s",
                          f->path, (unsigned long long)(has - f->data_bytes),
                          (unsigned long long)f->data_bytes, tide_dtype_name(f->dtype), buf);
}

/* Before allocating: does the file hold exactly data_bytes after the header, and is that within the
 * cap? An uncompressed file is measured first (a wrong size says more than the cap); a compressed one
 * is checked against the cap first, then counted when it claims more than UNCHECKED_ALLOC_MAX (the
 * read itself checks the others), and opened again. */
static tide_status precheck_size(idx_file *f, tide_error *err)
{
    uint64_t has;
    int64_t plain = file_input_plain_size(f->in);
    uint64_t claim = f->header_bytes + f->data_bytes;
    if (plain >= 0) {
        has = (uint64_t)plain > f->header_bytes ? (uint64_t)plain - f->header_bytes : 0;
        if (has != f->data_bytes)
            return size_mismatch(f, has, err);
    }
    if (claim > file_input_max_bytes(f->in))
        return file_input_too_large(f->in, claim, err);
    if (plain >= 0 || !file_input_is_compressed(f->in) || f->data_bytes <= UNCHECKED_ALLOC_MAX)
        return TIDE_OK;
    tide_status st = file_input_skip_rest(f->in, &has, err);
    if (st != TIDE_OK)
        return st;
    file_input_close(f->in);
    if (!(f->in = file_input_open(f->path, "IDX file", f->max_bytes, err)))
        return TIDE_INVALID_ARGUMENT; /* the file changed under us */
    unsigned char header[4 + 4 * TIDE_MAX_RANK];
    uint64_t skipped;
    if ((st = read_bytes(f, header, f->header_bytes, &skipped, err)) != TIDE_OK)
        return st;
    return has == f->data_bytes ? TIDE_OK : size_mismatch(f, has, err);
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
    if (read_bytes(f, data, f->data_bytes, &got, err) != TIDE_OK) {
        /* file_input said what is wrong: a cut or corrupt gzip stream, a read error */
    } else if (got < f->data_bytes) {
        size_mismatch(f, got, err);
    } else if (file_input_skip_rest(f->in, &extra, err) != TIDE_OK) {
        /* as above */
    } else if (extra) {
        size_mismatch(f, got + extra, err);
    } else {
        big_endian_to_host(data, (uint64_t)tide_tensor_num_elements(t), tide_dtype_size(f->dtype));
        return t;
    }
    tide_tensor_release(t);
    return NULL;
}

tide_tensor *tide_read_idx(const char *path, const tide_read_options *opts, tide_error *err)
{
    if (!path) {
        tide_error_set(err, TIDE_INVALID_ARGUMENT, "tide_read_idx: path is NULL");
        return NULL;
    }
    idx_file f = {.path = path, .max_bytes = opts ? opts->max_bytes : 0};
    f.in = file_input_open(path, "IDX file", f.max_bytes, err);
    if (!f.in)
        return NULL;
    tide_tensor *t = NULL;
    if (read_magic(&f, err) == TIDE_OK && read_dims(&f, err) == TIDE_OK &&
        precheck_size(&f, err) == TIDE_OK)
        t = read_data(&f, err);
    file_input_close(f.in);
    return t;
}
