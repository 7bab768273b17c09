/* gguf_kv.c -- typed access to GGUF metadata: exact-type scalar getters,
 * strings, arrays and the per-layer "key or array" form. Built on gguf.h's
 * public lookups only; every value it reads was bounds-checked by open, so
 * this file checks types and counts, never offsets. */
#include <string.h>

#include "gguf/gguf.h"

static size_t scalar_bytes(uint32_t type)
{
    switch (type) {
    case GSMRT_GGUF_TYPE_U8: case GSMRT_GGUF_TYPE_I8: case GSMRT_GGUF_TYPE_BOOL: return 1;
    case GSMRT_GGUF_TYPE_U16: case GSMRT_GGUF_TYPE_I16: return 2;
    case GSMRT_GGUF_TYPE_U32: case GSMRT_GGUF_TYPE_I32: case GSMRT_GGUF_TYPE_F32: return 4;
    default: return 8;   /* U64, I64, F64: the only other scalars getters ask for */
    }
}

/* The key with the exact type `type`; *kv NULL (and OK) when absent. */
static gsmrt_status find_typed(const struct gsmrt_gguf *g, const char *key, uint32_t type,
                               const struct gsmrt_gguf_kv **kv, struct gsmrt_err *err)
{
    *kv = gsmrt_gguf_find_kv(g, key);
    if (*kv && (*kv)->type != type) {
        if ((*kv)->type == GSMRT_GGUF_TYPE_ARRAY)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': expected type %s, found array of %s",
                                 gsmrt_gguf_name(g), key, gsmrt_gguf_type_name(type),
                                 gsmrt_gguf_type_name((*kv)->arr_type));
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': expected type %s, found %s", gsmrt_gguf_name(g), key,
                             gsmrt_gguf_type_name(type), gsmrt_gguf_type_name((*kv)->type));
    }
    return GSMRT_OK;
}

static gsmrt_status get_scalar(const struct gsmrt_gguf *g, const char *key, uint32_t type, void *out,
                               const void *def, struct gsmrt_err *err)
{
    const struct gsmrt_gguf_kv *kv;
    gsmrt_status st = find_typed(g, key, type, &kv, err);
    if (st != GSMRT_OK) return st;
    size_t n = scalar_bytes(type);
    if (kv) {
        memcpy(out, kv->value, n);
        return GSMRT_OK;
    }
    if (!def)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s' missing (expected a %s)", gsmrt_gguf_name(g), key,
                             gsmrt_gguf_type_name(type));
    memcpy(out, def, n);
    return GSMRT_OK;
}

#define GETTER_(suffix, ctype, TYPE)                                                                           \
    gsmrt_status gsmrt_gguf_get_##suffix(const struct gsmrt_gguf *g, const char *key, ctype *out,            \
                                         struct gsmrt_err *err)                                              \
    {                                                                                                        \
        return get_scalar(g, key, GSMRT_GGUF_TYPE_##TYPE, out, NULL, err);                                   \
    }
GETTER_(u8, uint8_t, U8)
GETTER_(i8, int8_t, I8)
GETTER_(u16, uint16_t, U16)
GETTER_(i16, int16_t, I16)
GETTER_(u32, uint32_t, U32)
GETTER_(i32, int32_t, I32)
GETTER_(u64, uint64_t, U64)
GETTER_(i64, int64_t, I64)
GETTER_(f32, float, F32)
GETTER_(f64, double, F64)
#undef GETTER_

#define GETTER_OPT_(suffix, ctype, TYPE)                                                                       \
    gsmrt_status gsmrt_gguf_get_##suffix##_opt(const struct gsmrt_gguf *g, const char *key, ctype def,       \
                                               ctype *out, struct gsmrt_err *err)                            \
    {                                                                                                        \
        return get_scalar(g, key, GSMRT_GGUF_TYPE_##TYPE, out, &def, err);                                   \
    }
GETTER_OPT_(u32, uint32_t, U32)
GETTER_OPT_(i32, int32_t, I32)
GETTER_OPT_(u64, uint64_t, U64)
GETTER_OPT_(f32, float, F32)
#undef GETTER_OPT_

/* ggml reads a bool as one byte and takes any non-zero value as true. */
gsmrt_status gsmrt_gguf_get_bool(const struct gsmrt_gguf *g, const char *key, bool *out, struct gsmrt_err *err)
{
    uint8_t b = 0;
    gsmrt_status st = get_scalar(g, key, GSMRT_GGUF_TYPE_BOOL, &b, NULL, err);
    if (st == GSMRT_OK) *out = b != 0;
    return st;
}

gsmrt_status gsmrt_gguf_get_bool_opt(const struct gsmrt_gguf *g, const char *key, bool def, bool *out,
                                     struct gsmrt_err *err)
{
    uint8_t b = 0, d = def ? 1 : 0;
    gsmrt_status st = get_scalar(g, key, GSMRT_GGUF_TYPE_BOOL, &b, &d, err);
    if (st == GSMRT_OK) *out = b != 0;
    return st;
}

static gsmrt_status get_str(const struct gsmrt_gguf *g, const char *key, bool required, const char *def,
                            struct gsmrt_gguf_str *out, struct gsmrt_err *err)
{
    const struct gsmrt_gguf_kv *kv;
    gsmrt_status st = find_typed(g, key, GSMRT_GGUF_TYPE_STRING, &kv, err);
    if (st != GSMRT_OK) return st;
    if (kv) {
        out->ptr = kv->value;
        out->len = kv->value_bytes;
        return GSMRT_OK;
    }
    if (required)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s' missing (expected a string)", gsmrt_gguf_name(g),
                             key);
    out->ptr = def;
    out->len = def ? strlen(def) : 0;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gguf_get_str(const struct gsmrt_gguf *g, const char *key, struct gsmrt_gguf_str *out,
                                struct gsmrt_err *err)
{
    return get_str(g, key, true, NULL, out, err);
}

gsmrt_status gsmrt_gguf_get_str_opt(const struct gsmrt_gguf *g, const char *key, const char *def,
                                    struct gsmrt_gguf_str *out, struct gsmrt_err *err)
{
    return get_str(g, key, false, def, out, err);
}

static gsmrt_status find_arr(const struct gsmrt_gguf *g, const char *key, const struct gsmrt_gguf_kv **kv,
                             struct gsmrt_err *err)
{
    *kv = gsmrt_gguf_find_kv(g, key);
    if (!*kv)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s' missing (expected an array)", gsmrt_gguf_name(g),
                             key);
    if ((*kv)->type != GSMRT_GGUF_TYPE_ARRAY)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': expected an array, found %s", gsmrt_gguf_name(g), key,
                             gsmrt_gguf_type_name((*kv)->type));
    return GSMRT_OK;
}

gsmrt_status gsmrt_gguf_get_arr_info(const struct gsmrt_gguf *g, const char *key, uint32_t *elem_type,
                                     uint64_t *count, struct gsmrt_err *err)
{
    const struct gsmrt_gguf_kv *kv;
    gsmrt_status st = find_arr(g, key, &kv, err);
    if (st != GSMRT_OK) return st;
    *elem_type = kv->arr_type;
    *count = kv->arr_count;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gguf_get_arr(const struct gsmrt_gguf *g, const char *key, uint32_t elem_type,
                                const void **data, uint64_t *count, struct gsmrt_err *err)
{
    const struct gsmrt_gguf_kv *kv;
    gsmrt_status st = find_arr(g, key, &kv, err);
    if (st != GSMRT_OK) return st;
    if (kv->arr_type != elem_type || elem_type == GSMRT_GGUF_TYPE_STRING)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': expected an array of %s, found an array of %s",
                             gsmrt_gguf_name(g), key, gsmrt_gguf_type_name(elem_type),
                             gsmrt_gguf_type_name(kv->arr_type));
    *data = kv->value;
    *count = kv->arr_count;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gguf_get_arr_str(const struct gsmrt_gguf *g, const char *key, struct gsmrt_gguf_str *out,
                                    uint64_t n_out, struct gsmrt_err *err)
{
    const struct gsmrt_gguf_kv *kv;
    gsmrt_status st = find_arr(g, key, &kv, err);
    if (st != GSMRT_OK) return st;
    if (kv->arr_type != GSMRT_GGUF_TYPE_STRING)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': expected an array of string, found an array of %s",
                             gsmrt_gguf_name(g), key, gsmrt_gguf_type_name(kv->arr_type));
    if (n_out < kv->arr_count)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s: key '%s': %llu strings do not fit in %llu slots",
                             gsmrt_gguf_name(g), key, (unsigned long long)kv->arr_count, (unsigned long long)n_out);
    /* open checked every length against the array's extent */
    const uint8_t *p = kv->value;
    for (uint64_t i = 0; i < kv->arr_count; i++) {
        uint64_t len;
        memcpy(&len, p, sizeof len);
        out[i].ptr = (const char *)p + 8;
        out[i].len = len;
        p += 8 + len;
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_gguf_get_u32_per_layer(const struct gsmrt_gguf *g, const char *key, uint32_t n_layer,
                                          bool required, uint32_t def, uint32_t *out, struct gsmrt_err *err)
{
    const struct gsmrt_gguf_kv *kv = gsmrt_gguf_find_kv(g, key);
    if (!kv) {
        if (required)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s' missing (expected a u32 or an array of %u u32)",
                                 gsmrt_gguf_name(g), key, n_layer);
        for (uint32_t i = 0; i < n_layer; i++) out[i] = def;
        return GSMRT_OK;
    }
    if (kv->type == GSMRT_GGUF_TYPE_U32) {
        uint32_t v;
        memcpy(&v, kv->value, sizeof v);
        for (uint32_t i = 0; i < n_layer; i++) out[i] = v;
        return GSMRT_OK;
    }
    if (kv->type != GSMRT_GGUF_TYPE_ARRAY ||
        (kv->arr_type != GSMRT_GGUF_TYPE_U32 && kv->arr_type != GSMRT_GGUF_TYPE_I32))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': expected a u32 or an array of u32, found %s%s",
                             gsmrt_gguf_name(g), key, kv->type == GSMRT_GGUF_TYPE_ARRAY ? "an array of " : "",
                             gsmrt_gguf_type_name(kv->type == GSMRT_GGUF_TYPE_ARRAY ? kv->arr_type : kv->type));
    if (kv->arr_count != n_layer)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': array has %llu entries, expected %u (one per block)",
                             gsmrt_gguf_name(g), key, (unsigned long long)kv->arr_count, n_layer);
    const uint8_t *p = kv->value;
    for (uint32_t i = 0; i < n_layer; i++) {
        int32_t v;
        memcpy(&v, p + 4 * (size_t)i, sizeof v);
        if (kv->arr_type == GSMRT_GGUF_TYPE_I32 && v < 0)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': entry %u is negative (%d)", gsmrt_gguf_name(g),
                                 key, i, v);
        memcpy(&out[i], p + 4 * (size_t)i, sizeof out[i]);
    }
    return GSMRT_OK;
}
