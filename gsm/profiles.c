/* profiles.c -- named calibrations (see profiles.h). */
#include "profiles.h"

#include <stdio.h>
#include <string.h>

void gsmrt_gsm_profiles_init(struct gsmrt_gsm_profiles *set) { memset(set, 0, sizeof *set); }

void gsmrt_gsm_profiles_deinit(struct gsmrt_gsm_profiles *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->n; i++) gsmrt_gsm_calib_destroy(set->items[i].calib);
    memset(set, 0, sizeof *set);
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > GSMRT_GSM_PROFILE_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

static const struct gsmrt_gsm_profile *find(const struct gsmrt_gsm_profiles *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->items[i].name, name) == 0) return &set->items[i];
    return NULL;
}

gsmrt_status gsmrt_gsm_profiles_add(struct gsmrt_gsm_profiles *set, const char *name, struct gsmrt_gsm_calib *calib,
                                    struct gsmrt_err *err)
{
    if (!name || !calib || !name_ok(name))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "profile name \"%.80s\": 1 to %d characters of A-Z a-z 0-9 _ . -", name ? name : "",
                             GSMRT_GSM_PROFILE_NAME_MAX);
    if (find(set, name))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "profile \"%s\" is already loaded", name);
    if (set->n == GSMRT_GSM_MAX_PROFILES)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "profile \"%s\": at most %d profiles", name,
                             GSMRT_GSM_MAX_PROFILES);
    struct gsmrt_gsm_profile *p = &set->items[set->n++];
    memcpy(p->name, name, strlen(name) + 1);
    p->calib = calib;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_profiles_load(struct gsmrt_gsm_profiles *set, const char *name, const char *path,
                                     const gsmrt_allocator *alloc, const struct gsmrt_gsm_model_id *expect,
                                     struct gsmrt_err *err)
{
    struct gsmrt_gsm_calib *c;
    gsmrt_status st = gsmrt_gsm_calib_load(path, alloc, expect, &c, err);
    if (st != GSMRT_OK) return st;
    st = gsmrt_gsm_profiles_add(set, name, c, err);
    if (st != GSMRT_OK) gsmrt_gsm_calib_destroy(c);
    return st;
}

gsmrt_status gsmrt_gsm_profiles_pick(const struct gsmrt_gsm_profiles *set, const char *name,
                                     const struct gsmrt_gsm_calib **out, struct gsmrt_err *err)
{
    *out = NULL;
    const struct gsmrt_gsm_profile *p = NULL;
    if (!name || !*name) p = set->n ? &set->items[0] : NULL;
    else p = find(set, name);
    if (p) {
        *out = p->calib;
        return GSMRT_OK;
    }
    char list[GSMRT_GSM_MAX_PROFILES * (GSMRT_GSM_PROFILE_NAME_MAX + 2) + 8];
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < set->n; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", set->items[i].name);
        if (w < 0 || (size_t)w >= sizeof list - used) break;
        used += (size_t)w;
    }
    return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "profile \"%.80s\" not loaded (loaded: %s)",
                         name ? name : "", set->n ? list : "none");
}
