/* err.h -- error records: a status plus the text that says what went wrong.
 *
 * The innermost failing call writes what was wrong and what was expected
 * (gsmrt_err_set); each caller on the way out may add where (gsmrt_err_prefix).
 * Every function taking a `struct gsmrt_err *` accepts NULL (no text kept). */
#ifndef GSMRT_BASE_ERR_H
#define GSMRT_BASE_ERR_H

#include "gsmrt.h"

struct gsmrt_err {
    gsmrt_status status;
    char msg[1024];
};

#if defined(__GNUC__)
#define GSMRT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GSMRT_PRINTF(f, a)
#endif

/* Records `status` and the formatted message; returns `status` so that
 * `return gsmrt_err_set(err, GSMRT_E_FORMAT, "...")` fits on one line. */
gsmrt_status gsmrt_err_set(struct gsmrt_err *err, gsmrt_status status, const char *fmt, ...)
    GSMRT_PRINTF(3, 4);

/* Puts formatted context in front of the recorded message ("file.gguf: "). */
void gsmrt_err_prefix(struct gsmrt_err *err, const char *fmt, ...) GSMRT_PRINTF(2, 3);

void gsmrt_err_clear(struct gsmrt_err *err);

#endif
