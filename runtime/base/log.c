/* log.c -- routes messages to the context's callback (see log.h). */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

void gsmrt_log(const struct gsmrt_log *log, gsmrt_log_level level, const char *fmt, ...)
{
    gsmrt_log_level max = log ? log->level : GSMRT_LOG_WARN;
    if (level > max) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log && log->cb) {
        log->cb(log->user, level, msg);
        return;
    }
    static const char *const names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "gsmrt %s: %s\n", names[level], msg);
}
