/* profiles.h -- several calibrations kept side by side, one picked per
 * request by name (CLI --profile, API field). The set owns what it holds. */
#ifndef GSMRT_GSM_PROFILES_H
#define GSMRT_GSM_PROFILES_H

#include <stddef.h>

#include "base/err.h"
#include "calib_file.h"

#define GSMRT_GSM_MAX_PROFILES 32
#define GSMRT_GSM_PROFILE_NAME_MAX 63

struct gsmrt_gsm_profile {
    char name[GSMRT_GSM_PROFILE_NAME_MAX + 1];
    struct gsmrt_gsm_calib *calib;
};

struct gsmrt_gsm_profiles {
    size_t n;
    struct gsmrt_gsm_profile items[GSMRT_GSM_MAX_PROFILES];   /* [n], in the order added */
};

void gsmrt_gsm_profiles_init(struct gsmrt_gsm_profiles *set);
void gsmrt_gsm_profiles_deinit(struct gsmrt_gsm_profiles *set);   /* destroys every calibration */

/* Takes ownership of calib on success only. Names: 1..63 bytes of
 * [A-Za-z0-9_.-], unique. */
gsmrt_status gsmrt_gsm_profiles_add(struct gsmrt_gsm_profiles *set, const char *name, struct gsmrt_gsm_calib *calib,
                                    struct gsmrt_err *err);

/* Loads path for `expect` and adds it under name. */
gsmrt_status gsmrt_gsm_profiles_load(struct gsmrt_gsm_profiles *set, const char *name, const char *path,
                                     const gsmrt_allocator *alloc, const struct gsmrt_gsm_model_id *expect,
                                     struct gsmrt_err *err);

/* The calibration called name; NULL or "" picks the first one added.
 * GSMRT_E_INVALID_ARGUMENT listing the loaded names when there is none. */
gsmrt_status gsmrt_gsm_profiles_pick(const struct gsmrt_gsm_profiles *set, const char *name,
                                     const struct gsmrt_gsm_calib **out, struct gsmrt_err *err);

#endif
