/* file_input.h — the bytes of one data file, gzip-compressed or not, verified (private to engine/data).
 *
 * A reader opens the file, then takes its bytes in order with file_input_read until fewer come than it
 * asked for: the end of the data. Compression is detected by content (the gzip magic 1f 8b), not by
 * the file's name. Everything a gzip file could get wrong is an error naming the file: a stream cut
 * anywhere (inside its header too), a CRC-32 or length trailer that does not match the data, corrupt
 * deflate data, bytes after the last gzip member that are not another member. Concatenated members
 * (`cat a.gz b.gz`) are one stream, as gzip reads them. No reader takes more than its cap of bytes
 * (counted after decompression) from one file: the next byte is an error that names the cap and how
 * to raise it. */
#ifndef TIDE_DATA_FILE_INPUT_H
#define TIDE_DATA_FILE_INPUT_H

#include "tide_data.h"

typedef struct file_input file_input;

/* Opens path; what ("IDX file", "CSV file") names the kind of file in messages. max_bytes: the cap
 * (0: tide_input_max_bytes(), $TIDE_MAX_INPUT_BYTES or 1 GiB). NULL on failure (TIDE_NOT_FOUND when
 * the file does not exist). */
file_input *file_input_open(const char *path, const char *what, uint64_t max_bytes, tide_error *err);
/* Reads up to n bytes into buf; *got < n only at the end of the data, which is verified first (the
 * gzip trailer, nothing after it). On failure *got says what came before it. */
tide_status file_input_read(file_input *in, void *buf, size_t n, size_t *got, tide_error *err);
/* Reads what is left and counts it without keeping it (*count; errors as read). */
tide_status file_input_skip_rest(file_input *in, uint64_t *count, tide_error *err);
bool file_input_is_compressed(const file_input *in);
/* The size of an uncompressed regular file (what it holds); -1 for a compressed or special file. */
int64_t file_input_plain_size(const file_input *in);
uint64_t file_input_max_bytes(const file_input *in);
const char *file_input_path(const file_input *in);
/* Sets the cap error: wanted is the size the file claims (a reader that knows it before reading it),
 * or 0 when only "more than the cap" is known. */
tide_status file_input_too_large(const file_input *in, uint64_t wanted, tide_error *err);
void file_input_close(file_input *in);

#endif
