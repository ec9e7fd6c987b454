/* zip_file_sink.h — the libzip source an archive is written through into an open file (npz.c): large
 * writes on a writer thread while libzip produces the next bytes. Private to engine/checkpoint/. */
#ifndef TIDE_ZIP_FILE_SINK_H
#define TIDE_ZIP_FILE_SINK_H

#include <zip.h>

/* A writable libzip source over fd (borrowed, open for writing, empty): zip_open_from_source(src,
 * ZIP_TRUNCATE, ...) then zip_close() writes the archive to fd; nothing is fsynced. NULL with *error
 * set on failure. The source owns its buffers and thread; zip_source_free (or the archive that holds
 * it) frees them. *write_errno (the caller's, set to 0 here) receives the errno of a write that
 * failed, which zip_close's message ("Write error") does not name; it must outlive the source. */
zip_source_t *tide__zip_file_sink_new(int fd, int *write_errno, zip_error_t *error);

#endif
