/* env.c -- see env.h. */
#include "base/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool gsmrt_env_flag(const struct gsmrt_log *log, const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return false;
    static const char *const on[] = {"1", "on", "yes", "true"}, *const off[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcasecmp(v, on[i]) == 0) return true;
        if (strcasecmp(v, off[i]) == 0) return false;
    }
    gsmrt_log(log, GSMRT_LOG_WARN, "%s=%s ignored: expected 1 or 0 (on/off, yes/no, true/false)", name, v);
    return false;
}

uint64_t gsmrt_env_bytes(const struct gsmrt_log *log, const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    uint64_t n = 0;
    const char *p = v;
    bool ok = *p >= '0' && *p <= '9';
    for (; ok && *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10) ok = false;
        else n = n * 10 + d;
    }
    unsigned shift = 0;
    if (ok && (*p == 'K' || *p == 'k')) shift = 10, p++;
    else if (ok && (*p == 'M' || *p == 'm')) shift = 20, p++;
    else if (ok && (*p == 'G' || *p == 'g')) shift = 30, p++;
    if (ok && (*p != '\0' || (shift && n > (UINT64_MAX >> shift)))) ok = false;
    if (!ok) {
        gsmrt_log(log, GSMRT_LOG_WARN,
                  "%s=%s ignored: expected a byte count: digits with an optional K, M or G (134217728, 64K, 8M, 2G)",
                  name, v);
        return 0;
    }
    return n << shift;
}

int gsmrt_env_choice(const struct gsmrt_log *log, const char *name, const char *const *choices, int n)
{
    const char *v = getenv(name);
    if (!v || !*v) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(v, choices[i]) == 0) return i;
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? " or " : "", choices[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    gsmrt_log(log, GSMRT_LOG_WARN, "%s=%s ignored: expected %s", name, v, list);
    return -1;
}
