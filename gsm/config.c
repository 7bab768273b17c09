/* config.c -- the GSM configuration: one table of keys (type, range, field)
 * drives the JSON reader and the "key=value" setter, so both check alike.
 * Does not load the calibration file it names (calib_file.c does). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "json_read.h"

enum kind { K_BOOL, K_U32, K_REAL, K_POLICY, K_PATH };

struct key {
    const char *name;
    enum kind kind;
    double lo, hi;
    bool lo_open, hi_open, pow2;
    size_t off;
};

#define F(field) offsetof(struct gsmrt_gsm_config, field)
#define CTX_MAX 16777216.0 /* 2^24 positions */

static const struct key KEYS[] = {
    {"enabled", K_BOOL, 0, 0, false, false, false, F(enabled)},
    {"num_groups", K_U32, 1, 256, false, false, false, F(num_groups)},
    /* 64: the largest page the GSM attention kernels take (GSMRT_K_GSM_MAX_PAGE_SIZE) */
    {"page_size", K_U32, 8, 64, false, false, true, F(page_size)},
    {"gate_threshold", K_REAL, 0, 1, false, true, false, F(gate_threshold)},
    {"low_freq_policy", K_POLICY, 0, 0, false, false, false, F(low_freq_policy)},
    {"calibration_path", K_PATH, 0, 0, false, false, false, F(calibration_path)},
    {"warmup_steps", K_U32, 0, 1000000, false, false, false, F(warmup_steps)},
    {"min_context", K_U32, 0, CTX_MAX, false, false, false, F(min_context)},
    {"window", K_U32, 0, CTX_MAX, false, false, false, F(window)},
    {"sink_tokens", K_U32, 0, CTX_MAX, false, false, false, F(sink_tokens)},
    {"prefetch", K_BOOL, 0, 0, false, false, false, F(prefetch)},
    {"hot_pages", K_U32, 0, 1048576, false, false, false, F(hot_pages)},
    {"ema_rate", K_REAL, 0, 1, true, false, false, F(ema_rate)},
    {"promote_mass", K_REAL, 0, 1, false, false, false, F(promote_mass)},
    {"demote_mass", K_REAL, 0, 1, false, false, false, F(demote_mass)},
    {"prefetch_factor", K_REAL, 0, 1, true, false, false, F(prefetch_factor)},
    {"dense_fallback", K_U32, 0, 1000000, false, false, false, F(dense_fallback)},
};
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

void gsmrt_gsm_config_defaults(struct gsmrt_gsm_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->enabled = true;
    cfg->num_groups = 8;
    cfg->page_size = 32;
    cfg->gate_threshold = GSMRT_GSM_DEFAULT_GATE_THRESHOLD;
    cfg->low_freq_policy = GSMRT_GSM_LOW_FREQ_AUTO;
    cfg->calibration_path[0] = '\0';
    cfg->warmup_steps = 8;
    cfg->min_context = 512;
    cfg->window = 128;
    cfg->sink_tokens = 4;
    cfg->prefetch = true;
    cfg->hot_pages = 16;
    cfg->ema_rate = 0.25;
    cfg->promote_mass = 0.02;
    cfg->demote_mass = 0.005;
    cfg->prefetch_factor = 0.5;
    cfg->dense_fallback = 16;
}

const char *gsmrt_gsm_low_freq_name(enum gsmrt_gsm_low_freq p)
{
    switch (p) {
    case GSMRT_GSM_LOW_FREQ_AUTO: return "auto";
    case GSMRT_GSM_LOW_FREQ_KEEP: return "keep";
    case GSMRT_GSM_LOW_FREQ_SWAP: return "swap";
    }
    return "?";
}

enum gsmrt_gsm_low_freq gsmrt_gsm_config_low_freq(const struct gsmrt_gsm_config *cfg, bool unified_memory)
{
    if (cfg->low_freq_policy != GSMRT_GSM_LOW_FREQ_AUTO) return cfg->low_freq_policy;
    return unified_memory ? GSMRT_GSM_LOW_FREQ_KEEP : GSMRT_GSM_LOW_FREQ_SWAP;
}

const char *gsmrt_gsm_config_low_freq_note(const struct gsmrt_gsm_config *cfg, bool unified_memory)
{
    if (unified_memory && gsmrt_gsm_config_low_freq(cfg, true) == GSMRT_GSM_LOW_FREQ_SWAP)
        return "low_freq_policy \"swap\" on a unified-memory device: device-local and host-visible memory are the "
               "same, so swapping has no physical effect (the code path still runs)";
    return NULL;
}

uint32_t gsmrt_gsm_config_groups(const struct gsmrt_gsm_config *cfg, uint32_t n_head)
{
    return cfg->num_groups < n_head ? cfg->num_groups : n_head;
}

gsmrt_status gsmrt_gsm_config_check(const struct gsmrt_gsm_config *cfg, struct gsmrt_err *err)
{
    if (cfg->demote_mass > cfg->promote_mass)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"demote_mass\": %g out of range [0, promote_mass = %g]",
                             cfg->demote_mass, cfg->promote_mass);
    return GSMRT_OK;
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(KEYS[i].name, name) == 0) return &KEYS[i];
    return NULL;
}

/* Range check of a numeric value against a key; message as in the file. */
static gsmrt_status check_number(const struct key *k, double v, struct gsmrt_err *err)
{
    if (k->kind == K_U32 && (!isfinite(v) || floor(v) != v))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %g is not an integer", k->name, v);
    bool below = k->lo_open ? !(v > k->lo) : !(v >= k->lo);
    bool above = k->hi_open ? !(v < k->hi) : !(v <= k->hi);
    if (!isfinite(v) || below || above)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %g out of range %c%g, %g%c", k->name, v,
                             k->lo_open ? '(' : '[', k->lo, k->hi, k->hi_open ? ')' : ']');
    if (k->pow2) {
        uint32_t u = (uint32_t)v;
        if (u & (u - 1))
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %g is not a power of two in [%g, %g]", k->name, v,
                                 k->lo, k->hi);
    }
    return GSMRT_OK;
}

static gsmrt_status set_policy(const struct key *k, const char *s, struct gsmrt_gsm_config *cfg,
                               struct gsmrt_err *err)
{
    enum gsmrt_gsm_low_freq p;
    if (strcmp(s, "auto") == 0) p = GSMRT_GSM_LOW_FREQ_AUTO;
    else if (strcmp(s, "keep") == 0) p = GSMRT_GSM_LOW_FREQ_KEEP;
    else if (strcmp(s, "swap") == 0) p = GSMRT_GSM_LOW_FREQ_SWAP;
    else
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": \"%.64s\" is not one of \"auto\", \"keep\", \"swap\"",
                             k->name, s);
    cfg->low_freq_policy = p;
    return GSMRT_OK;
}

static gsmrt_status set_path(const struct key *k, const char *s, struct gsmrt_gsm_config *cfg,
                             struct gsmrt_err *err)
{
    size_t n = strlen(s);
    if (n >= GSMRT_GSM_PATH_MAX)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": path of %zu bytes, at most %d allowed", k->name, n,
                             GSMRT_GSM_PATH_MAX - 1);
    memcpy(cfg->calibration_path, s, n + 1);
    return GSMRT_OK;
}

static void store_number(const struct key *k, double v, struct gsmrt_gsm_config *cfg)
{
    char *base = (char *)cfg;
    if (k->kind == K_U32) {
        uint32_t u = (uint32_t)v;
        memcpy(base + k->off, &u, sizeof u);
    } else {
        memcpy(base + k->off, &v, sizeof v);
    }
}

static void store_bool(const struct key *k, bool b, struct gsmrt_gsm_config *cfg)
{
    memcpy((char *)cfg + k->off, &b, sizeof b);
}

static gsmrt_status parse_item(const struct key *k, const cJSON *item, struct gsmrt_gsm_config *cfg,
                               struct gsmrt_err *err)
{
    gsmrt_status st;
    switch (k->kind) {
    case K_BOOL: {
        bool b;
        st = gsmrt_gsm_json_bool(item, k->name, &b, err);
        if (st == GSMRT_OK) store_bool(k, b, cfg);
        return st;
    }
    case K_U32:
    case K_REAL: {
        if (!cJSON_IsNumber(item))
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": expected %s", k->name,
                                 k->kind == K_U32 ? "an integer" : "a number");
        st = check_number(k, item->valuedouble, err);
        if (st == GSMRT_OK) store_number(k, item->valuedouble, cfg);
        return st;
    }
    case K_POLICY:
    case K_PATH: {
        const char *s;
        if (k->kind == K_PATH && cJSON_IsNull(item)) return set_path(k, "", cfg, err);
        st = gsmrt_gsm_json_str(item, k->name, GSMRT_GSM_PATH_MAX, &s, err);
        if (st != GSMRT_OK) return st;
        return k->kind == K_POLICY ? set_policy(k, s, cfg, err) : set_path(k, s, cfg, err);
    }
    }
    return gsmrt_err_set(err, GSMRT_E_INTERNAL, "key \"%s\": unknown kind", k->name);
}

gsmrt_status gsmrt_gsm_config_parse(const char *text, size_t len, const char *name, struct gsmrt_gsm_config *cfg,
                                    struct gsmrt_err *err)
{
    cJSON *root = NULL;
    gsmrt_status st = gsmrt_gsm_json_parse(text, len, &root, err);
    if (st != GSMRT_OK) goto out;
    const char *names[N_KEYS];
    for (size_t i = 0; i < N_KEYS; i++) names[i] = KEYS[i].name;
    st = gsmrt_gsm_json_check_keys(root, NULL, names, N_KEYS, err);
    if (st != GSMRT_OK) goto out;
    struct gsmrt_gsm_config next = *cfg;
    for (size_t i = 0; i < N_KEYS; i++) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, KEYS[i].name);
        if (!item) continue;
        st = parse_item(&KEYS[i], item, &next, err);
        if (st != GSMRT_OK) goto out;
    }
    st = gsmrt_gsm_config_check(&next, err);
    if (st == GSMRT_OK) *cfg = next;
out:
    cJSON_Delete(root);
    if (st != GSMRT_OK) gsmrt_err_prefix(err, "%s: ", name);
    return st;
}

gsmrt_status gsmrt_gsm_config_load(const char *path, const gsmrt_allocator *alloc, struct gsmrt_gsm_config *cfg,
                                   struct gsmrt_err *err)
{
    char *text;
    size_t len;
    gsmrt_status st = gsmrt_gsm_json_slurp(path, alloc, &text, &len, err);
    if (st != GSMRT_OK) return st;
    st = gsmrt_gsm_config_parse(text, len, path, cfg, err);
    gsmrt_mem_free(alloc, text);
    return st;
}

static gsmrt_status parse_bool_text(const struct key *k, const char *s, bool *out, struct gsmrt_err *err)
{
    static const char *const yes[] = {"true", "1", "on", "yes"};
    static const char *const no[] = {"false", "0", "off", "no"};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(s, yes[i]) == 0) return (*out = true), GSMRT_OK;
        if (strcmp(s, no[i]) == 0) return (*out = false), GSMRT_OK;
    }
    return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "key \"%s\": \"%.64s\" is not a boolean (true/false)",
                         k->name, s);
}

gsmrt_status gsmrt_gsm_config_set(struct gsmrt_gsm_config *cfg, const char *key_value, struct gsmrt_err *err)
{
    const char *eq = key_value ? strchr(key_value, '=') : NULL;
    if (!eq) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "expected key=value, got \"%.64s\"",
                                  key_value ? key_value : "(null)");
    char name[64];
    size_t n = (size_t)(eq - key_value);
    if (n == 0 || n >= sizeof name)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "bad key in \"%.64s\"", key_value);
    for (size_t i = 0; i < n; i++) name[i] = key_value[i] == '-' ? '_' : key_value[i];
    name[n] = '\0';
    const struct key *k = find_key(name);
    if (!k) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "unknown key \"%s\"", name);
    const char *val = eq + 1;
    struct gsmrt_gsm_config next = *cfg;
    gsmrt_status st = GSMRT_OK;
    switch (k->kind) {
    case K_BOOL: {
        bool b = false;
        st = parse_bool_text(k, val, &b, err);
        if (st == GSMRT_OK) store_bool(k, b, &next);
        break;
    }
    case K_U32:
    case K_REAL: {
        char *end = NULL;
        double v = *val ? strtod(val, &end) : 0.0;
        if (!*val || *end != '\0' || !isfinite(v)) {
            st = gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "key \"%s\": \"%.64s\" is not %s", k->name, val,
                               k->kind == K_U32 ? "an integer" : "a number");
            break;
        }
        st = check_number(k, v, err);
        if (st == GSMRT_OK) store_number(k, v, &next);
        break;
    }
    case K_POLICY: st = set_policy(k, val, &next, err); break;
    case K_PATH: st = set_path(k, val, &next, err); break;
    }
    if (st == GSMRT_OK) st = gsmrt_gsm_config_check(&next, err);
    if (st != GSMRT_OK) { /* a bad command-line value is an argument error, not a file error */
        if (err) err->status = GSMRT_E_INVALID_ARGUMENT;
        return GSMRT_E_INVALID_ARGUMENT;
    }
    *cfg = next;
    return GSMRT_OK;
}
