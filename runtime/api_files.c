/* api_files.c -- the public face of base/file.c: the same safe reads and
 * writes for the gsm command and for hosts, so no layer keeps its own copy
 * (cli/ may use include/gsmrt.h only). */
#include <stdio.h>
#include <string.h>

#include "base/file.h"
#include "base/mem.h"

static gsmrt_status report(gsmrt_status st, const struct gsmrt_err *e, char *err_text, size_t err_size)
{
    if (err_text && err_size) snprintf(err_text, err_size, "%s", st == GSMRT_OK ? "" : e->msg);
    return st;
}

gsmrt_status gsmrt_file_load_text(const char *path, size_t max_bytes, char **text, size_t *len, char *err_text,
                                  size_t err_size)
{
    struct gsmrt_err e = {GSMRT_OK, ""};
    if (text) *text = NULL;
    if (len) *len = 0;
    if (!path || !text || !len)
        return report(gsmrt_err_set(&e, GSMRT_E_INVALID_ARGUMENT, "gsmrt_file_load_text: NULL argument"), &e,
                      err_text, err_size);
    return report(gsmrt_file_read_all(NULL, path, max_bytes, true, text, len, &e), &e, err_text, err_size);
}

void gsmrt_file_free(char *text)
{
    gsmrt_mem_free(NULL, text);
}

gsmrt_status gsmrt_file_save(const char *path, const void *data, size_t n, char *err_text, size_t err_size)
{
    struct gsmrt_err e = {GSMRT_OK, ""};
    if (!path || (!data && n))
        return report(gsmrt_err_set(&e, GSMRT_E_INVALID_ARGUMENT, "gsmrt_file_save: NULL argument"), &e, err_text,
                      err_size);
    return report(gsmrt_file_write(path, data ? data : "", n, NULL, &e), &e, err_text, err_size);
}
