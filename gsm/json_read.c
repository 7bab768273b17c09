/* json_read.c -- cJSON parsing with positions, key walks and checked values
 * for gsm/'s JSON files. Never touches cJSON's global state (no
 * cJSON_GetErrorPtr, no cJSON_InitHooks): the host may use cJSON too. */
#include "json_read.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/file.h"
#include "base/mem.h"

gsmrt_status gsmrt_gsm_json_slurp(const char *path, const gsmrt_allocator *alloc, char **out_text,
                                  size_t *out_len, struct gsmrt_err *err)
{
    /* A regular file only (a FIFO must not hang open()), capped; cJSON
     * itself reports a NUL inside as a parse error at its position. */
    return gsmrt_file_read_all(alloc, path, GSMRT_GSM_JSON_MAX_BYTES, false, out_text, out_len, err);
}

/* 1-based line and column (in bytes) of text[pos]. */
static void line_col(const char *text, size_t pos, size_t *line, size_t *col)
{
    size_t l = 1, c = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

gsmrt_status gsmrt_gsm_json_parse(const char *text, size_t len, cJSON **out, struct gsmrt_err *err)
{
    *out = NULL;
    const char *end = NULL;
    /* require_null_terminated = 0: trailing data is checked below against len,
     * so text need not be NUL-terminated at len (and cJSON reads no further). */
    cJSON *root = len ? cJSON_ParseWithLengthOpts(text, len, &end, 0) : NULL;
    size_t line, col;
    if (!root) {
        size_t pos = (end && end >= text && (size_t)(end - text) <= len) ? (size_t)(end - text) : len;
        line_col(text, pos, &line, &col);
        if (pos >= len)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "line %zu, column %zu: JSON syntax error (unexpected end)",
                                 line, col);
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "line %zu, column %zu: JSON syntax error", line, col);
    }
    size_t pos = (size_t)(end - text);
    while (pos < len && is_ws(text[pos])) pos++;
    if (pos < len) {
        line_col(text, pos, &line, &col);
        cJSON_Delete(root);
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "line %zu, column %zu: data after the JSON value", line, col);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "the top level must be a JSON object");
    }
    *out = root;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_check_keys(const cJSON *obj, const char *where, const char *const *allowed,
                                       size_t n_allowed, struct gsmrt_err *err)
{
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        bool known = false;
        for (size_t i = 0; i < n_allowed && !known; i++) known = strcmp(k, allowed[i]) == 0;
        if (!known) {
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (size_t i = 0; i < n_allowed && used < sizeof list; i++) {
                int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", allowed[i]);
                if (w < 0) break;
                used += (size_t)w;
            }
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s%sunknown key \"%.64s\" (known: %s)", where ? where : "",
                                 where ? ": " : "", k, list);
        }
        for (const cJSON *p = obj->child; p != it; p = p->next)
            if (p->string && strcmp(p->string, k) == 0)
                return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s%skey \"%s\" appears twice", where ? where : "",
                                     where ? ": " : "", k);
    }
    return GSMRT_OK;
}

static const char *type_name(const cJSON *item)
{
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNull(item)) return "null";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    return "invalid";
}

static gsmrt_status missing(const char *key, struct gsmrt_err *err)
{
    return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": missing", key);
}

gsmrt_status gsmrt_gsm_json_int(const cJSON *item, const char *key, int64_t lo, int64_t hi, int64_t *out,
                                struct gsmrt_err *err)
{
    if (!item) return missing(key, err);
    if (!cJSON_IsNumber(item))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected an integer, found %s", key,
                             type_name(item));
    double v = item->valuedouble;
    if (!isfinite(v) || floor(v) != v)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %g is not an integer", key, v);
    if (v < (double)lo || v > (double)hi)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %g out of range [%lld, %lld]", key, v,
                             (long long)lo, (long long)hi);
    *out = (int64_t)v;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_num(const cJSON *item, const char *key, double lo, double hi, bool hi_open,
                                double *out, struct gsmrt_err *err)
{
    if (!item) return missing(key, err);
    if (!cJSON_IsNumber(item))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected a number, found %s", key,
                             type_name(item));
    double v = item->valuedouble;
    if (!isfinite(v) || v < lo || v > hi || (hi_open && v >= hi))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %g out of range [%g, %g%c", key, v, lo, hi,
                             hi_open ? ')' : ']');
    *out = v;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_bool(const cJSON *item, const char *key, bool *out, struct gsmrt_err *err)
{
    if (!item) return missing(key, err);
    if (!cJSON_IsBool(item))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected true or false, found %s", key,
                             type_name(item));
    *out = cJSON_IsTrue(item);
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_str(const cJSON *item, const char *key, size_t max_len, const char **out,
                                struct gsmrt_err *err)
{
    if (!item) return missing(key, err);
    if (!cJSON_IsString(item) || !item->valuestring)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected a string, found %s", key,
                             type_name(item));
    size_t n = strlen(item->valuestring);
    if (n > max_len)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": string of %zu bytes, at most %zu allowed", key, n,
                             max_len);
    *out = item->valuestring;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_array(const cJSON *item, const char *key, size_t n, size_t *n_out,
                                  struct gsmrt_err *err)
{
    if (!item) return missing(key, err);
    if (!cJSON_IsArray(item))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected an array, found %s", key,
                             type_name(item));
    size_t count = 0;
    for (const cJSON *it = item->child; it; it = it->next) count++;
    if (n != SIZE_MAX && count != n)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": array of %zu elements, expected %zu", key, count, n);
    if (n_out) *n_out = count;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_object(const cJSON *item, const char *key, struct gsmrt_err *err)
{
    if (!item) return missing(key, err);
    if (!cJSON_IsObject(item))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected an object, found %s", key,
                             type_name(item));
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_json_write_file(const char *path, const char *text, const gsmrt_allocator *alloc,
                                       struct gsmrt_err *err)
{
    /* The text and its final newline in one buffer, written by the one safe
     * writer (base/file.c): no predictable temporary, never over a link. */
    size_t n = strlen(text);
    char *buf = gsmrt_mem_alloc(alloc, n + 1);
    if (!buf) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "%s: %zu bytes", path, n + 1);
    memcpy(buf, text, n);
    buf[n] = '\n';
    gsmrt_status st = gsmrt_file_write(path, buf, n + 1, NULL, err);
    gsmrt_mem_free(alloc, buf);
    return st;
}
