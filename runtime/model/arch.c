/* arch.c -- the registry of model architectures (model/arch.h). Adding an
 * architecture: its module defines `const struct gsmrt_arch gsmrt_arch_NAME`
 * and gets one entry in ARCHITECTURES below. */
#include "model/arch.h"

#include <stdio.h>
#include <string.h>

#define ARCHITECTURES(X) X(deepseek2)

#define DECLARE(n) extern const struct gsmrt_arch gsmrt_arch_##n;
ARCHITECTURES(DECLARE)
#define ENTRY(n) &gsmrt_arch_##n,
static const struct gsmrt_arch *const registry[] = {ARCHITECTURES(ENTRY)};
const struct gsmrt_arch *gsmrt_arch_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strlen(registry[i]->name) == len && memcmp(registry[i]->name, name, len) == 0) return registry[i];
    return NULL;
}

const char *gsmrt_arch_supported(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof registry / sizeof registry[0] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", registry[i]->name);
    return buf;
}
