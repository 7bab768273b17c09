/* json_read.h -- defensive reading of JSON files with cJSON, shared by the
 * configuration and calibration readers: parse with line:column on syntax
 * errors, reject unknown keys, read integers and numbers with range checks.
 *
 * Messages name the key and the allowed range; callers prefix the file name.
 * Internal to gsm/: nothing here is part of what the decoder calls. */
#ifndef GSMRT_GSM_JSON_READ_H
#define GSMRT_GSM_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* Largest JSON file accepted (configuration or calibration). */
#define GSMRT_GSM_JSON_MAX_BYTES ((size_t)64 << 20)

/* Reads a whole file into a NUL-terminated buffer (freed with gsmrt_mem_free). */
gsmrt_status gsmrt_gsm_json_slurp(const char *path, const gsmrt_allocator *alloc, char **out_text,
                                  size_t *out_len, struct gsmrt_err *err);

/* Parses text[0, len) (NUL need not follow); a syntax error or trailing data is
 * GSMRT_E_FORMAT with "line L, column C"; the root must be an object. */
gsmrt_status gsmrt_gsm_json_parse(const char *text, size_t len, cJSON **out, struct gsmrt_err *err);

/* Every key of `obj` must be one of `allowed` (n_allowed names) and appear once. */
gsmrt_status gsmrt_gsm_json_check_keys(const cJSON *obj, const char *where, const char *const *allowed,
                                       size_t n_allowed, struct gsmrt_err *err);

/* An integral number in [lo, hi]. `key` names it in messages. */
gsmrt_status gsmrt_gsm_json_int(const cJSON *item, const char *key, int64_t lo, int64_t hi, int64_t *out,
                                struct gsmrt_err *err);

/* A finite number in [lo, hi] (hi_open: [lo, hi)). */
gsmrt_status gsmrt_gsm_json_num(const cJSON *item, const char *key, double lo, double hi, bool hi_open,
                                double *out, struct gsmrt_err *err);

gsmrt_status gsmrt_gsm_json_bool(const cJSON *item, const char *key, bool *out, struct gsmrt_err *err);

/* A string of at most max_len bytes (no NUL inside, by cJSON's construction). */
gsmrt_status gsmrt_gsm_json_str(const cJSON *item, const char *key, size_t max_len, const char **out,
                                struct gsmrt_err *err);

/* An array of exactly n elements (n == SIZE_MAX: any length, written to *n_out). */
gsmrt_status gsmrt_gsm_json_array(const cJSON *item, const char *key, size_t n, size_t *n_out,
                                  struct gsmrt_err *err);

/* An object (for nested sections). */
gsmrt_status gsmrt_gsm_json_object(const cJSON *item, const char *key, struct gsmrt_err *err);

/* Writes text and a newline to path through gsmrt_file_write (base/file.h):
 * a failed write keeps the old file; links and non-regular files are refused. */
gsmrt_status gsmrt_gsm_json_write_file(const char *path, const char *text, const gsmrt_allocator *alloc,
                                       struct gsmrt_err *err);

#endif
