/* hparams_keys.c -- typed reads of "<arch>.<key>" metadata for the
 * architectures' hyper-parameter readers (see hparams_keys.h). */
#include "model/hparams_keys.h"

#include <stdarg.h>
#include <stdio.h>

const char *gsmrt_hpk_key(const struct gsmrt_hpk *r, const char *suffix, char buf[GSMRT_HPK_MAX_KEY])
{
    snprintf(buf, GSMRT_HPK_MAX_KEY, "%s.%s", r->arch, suffix);
    return buf;
}

gsmrt_status gsmrt_hpk_u32(struct gsmrt_hpk *r, const char *suffix, uint32_t *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_get_u32(r->g, gsmrt_hpk_key(r, suffix, k), out, r->err);
}

gsmrt_status gsmrt_hpk_u32_opt(struct gsmrt_hpk *r, const char *suffix, uint32_t def, uint32_t *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_get_u32_opt(r->g, gsmrt_hpk_key(r, suffix, k), def, out, r->err);
}

gsmrt_status gsmrt_hpk_f32(struct gsmrt_hpk *r, const char *suffix, float *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_get_f32(r->g, gsmrt_hpk_key(r, suffix, k), out, r->err);
}

gsmrt_status gsmrt_hpk_f32_opt(struct gsmrt_hpk *r, const char *suffix, float def, float *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_get_f32_opt(r->g, gsmrt_hpk_key(r, suffix, k), def, out, r->err);
}

gsmrt_status gsmrt_hpk_bool_opt(struct gsmrt_hpk *r, const char *suffix, bool def, bool *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_get_bool_opt(r->g, gsmrt_hpk_key(r, suffix, k), def, out, r->err);
}

gsmrt_status gsmrt_hpk_str_opt(struct gsmrt_hpk *r, const char *suffix, const char *def, struct gsmrt_gguf_str *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_get_str_opt(r->g, gsmrt_hpk_key(r, suffix, k), def, out, r->err);
}

bool gsmrt_hpk_has(const struct gsmrt_hpk *r, const char *suffix)
{
    char k[GSMRT_HPK_MAX_KEY];
    return gsmrt_gguf_find_kv(r->g, gsmrt_hpk_key(r, suffix, k)) != NULL;
}

gsmrt_status gsmrt_hpk_u32_layers(struct gsmrt_hpk *r, const char *suffix, uint32_t n_layer, bool required,
                                  uint32_t def, uint32_t from, uint32_t to, uint32_t *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    gsmrt_hpk_key(r, suffix, k);
    gsmrt_status st = gsmrt_gguf_get_u32_per_layer(r->g, k, n_layer, required, def, r->per_layer, r->err);
    if (st != GSMRT_OK) return st;
    *out = from < to ? r->per_layer[from] : r->per_layer[0];
    for (uint32_t i = from; i < to; i++)
        if (r->per_layer[i] != *out)
            return gsmrt_err_set(r->err, GSMRT_E_FORMAT,
                                 "%s: key '%s': block %u has %u, block %u has %u (per-block values are not supported)",
                                 gsmrt_gguf_name(r->g), k, from, *out, i, r->per_layer[i]);
    return GSMRT_OK;
}

gsmrt_status gsmrt_hpk_bad(const struct gsmrt_hpk *r, const char *suffix, const char *fmt, ...)
{
    char k[GSMRT_HPK_MAX_KEY], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gsmrt_err_set(r->err, GSMRT_E_FORMAT, "%s: key '%s': %s", gsmrt_gguf_name(r->g),
                         gsmrt_hpk_key(r, suffix, k), msg);
}
