/* log.h -- the per-context log sink. The library never prints by itself: a
 * message goes to the host's callback, or, with no callback, warnings and
 * errors go to stderr (the documented default). */
#ifndef GSMRT_BASE_LOG_H
#define GSMRT_BASE_LOG_H

#include "base/err.h"

struct gsmrt_log {
    gsmrt_log_cb cb;         /* NULL: default sink (stderr, up to `level`) */
    void *user;
    gsmrt_log_level level;   /* messages above this level are dropped */
};

void gsmrt_log(const struct gsmrt_log *log, gsmrt_log_level level, const char *fmt, ...)
    GSMRT_PRINTF(3, 4);

#endif
