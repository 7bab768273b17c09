/* file.h -- reading and writing files named by a user, safely.
 *
 * Every file the program writes goes through gsmrt_file_write: it never
 * follows a link, never replaces a directory, device, FIFO or socket, and
 * (when asked) never replaces a regular file that is not one of ours. The
 * data goes to a temporary file with an unpredictable name, created
 * exclusively in the same directory, is fsync'd and renamed into place, so a
 * crash or a failed write leaves the old file as it was.
 *
 * Every file the program reads from a user's path is opened without
 * blocking (a FIFO would hang open()) and refused unless it is a regular
 * file, with a cap on its size. */
#ifndef GSMRT_BASE_FILE_H
#define GSMRT_BASE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Longest path accepted (bytes, without the NUL). Longer ones are refused,
 * never cut. */
#define GSMRT_FILE_PATH_MAX 1023

/* Given the first bytes (at most GSMRT_FILE_HEAD_BYTES) of the regular file
 * already at the path, says whether it is ours to replace. */
#define GSMRT_FILE_HEAD_BYTES 64
typedef bool (*gsmrt_file_is_ours_fn)(const void *head, size_t n);

/* Writes data[0..n) to path as described above. is_ours NULL: any regular
 * file may be replaced (an output file the user named). Missing parent
 * directories are not created (see gsmrt_file_make_parent_dirs).
 * GSMRT_E_IO with a message naming the path and the reason. */
gsmrt_status gsmrt_file_write(const char *path, const void *data, size_t n, gsmrt_file_is_ours_fn is_ours,
                              struct gsmrt_err *err);

/* mkdir -p for the directory part of path (mode 0755 before the umask);
 * GSMRT_E_IO when one cannot be made or is not a directory. */
gsmrt_status gsmrt_file_make_parent_dirs(const char *path, struct gsmrt_err *err);

/* Opens path read-only without blocking and checks that it is a regular
 * file: *fd (blocking again) and *size on success; GSMRT_E_IO naming what is
 * there otherwise ("is a directory", "is a FIFO", ...). */
gsmrt_status gsmrt_file_open_regular(const char *path, int *fd, uint64_t *size, struct gsmrt_err *err);

/* The whole regular file, NUL-terminated (free with gsmrt_mem_free(a, ...)).
 * Over max_bytes: GSMRT_E_FORMAT "larger than the limit of N bytes". With
 * text_only, a NUL byte inside is GSMRT_E_FORMAT naming its offset. */
gsmrt_status gsmrt_file_read_all(const gsmrt_allocator *a, const char *path, size_t max_bytes, bool text_only,
                                 char **out, size_t *len, struct gsmrt_err *err);

#endif
