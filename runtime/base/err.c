/* err.c -- error records and the status name/message tables. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint32_t gsmrt_version(void) { return GSMRT_VERSION; }

#define GSMRT_STR_(x) #x
#define GSMRT_XSTR_(x) GSMRT_STR_(x)
const char *gsmrt_version_string(void)
{
    return GSMRT_XSTR_(GSMRT_VERSION_MAJOR) "." GSMRT_XSTR_(GSMRT_VERSION_MINOR) "." GSMRT_XSTR_(
        GSMRT_VERSION_PATCH);
}

const char *gsmrt_status_name(gsmrt_status st)
{
    switch (st) {
#define NAME_(name, value, msg) \
    case GSMRT_##name: return "GSMRT_" #name;
        GSMRT_STATUS_MAP(NAME_)
#undef NAME_
    default: return "GSMRT_UNKNOWN_STATUS";
    }
}

const char *gsmrt_status_message(gsmrt_status st)
{
    switch (st) {
#define MSG_(name, value, msg) \
    case GSMRT_##name: return msg;
        GSMRT_STATUS_MAP(MSG_)
#undef MSG_
    default: return "unknown status";
    }
}

gsmrt_status gsmrt_err_set(struct gsmrt_err *err, gsmrt_status status, const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

void gsmrt_err_prefix(struct gsmrt_err *err, const char *fmt, ...)
{
    if (!err) return;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Truncation keeps the start of the message (the context) by design. */
    size_t np = strlen(prefix), nm = strlen(err->msg);
    if (np >= sizeof err->msg) np = sizeof err->msg - 1;
    if (np + nm >= sizeof err->msg) nm = sizeof err->msg - 1 - np;
    memmove(err->msg + np, err->msg, nm);
    memcpy(err->msg, prefix, np);
    err->msg[np + nm] = '\0';
}

void gsmrt_err_clear(struct gsmrt_err *err)
{
    if (!err) return;
    err->status = GSMRT_OK;
    err->msg[0] = '\0';
}
