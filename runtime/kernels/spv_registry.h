/* spv_registry.h -- the embedded SPIR-V blobs, indexed by kernel id.
 * The table is generated at build time (cmake/GsmrtShaders.cmake). */
#ifndef GSMRT_SPV_REGISTRY_H
#define GSMRT_SPV_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "spv_ids.h"

struct gsmrt_spv {
    const char *name;
    const uint32_t *code;
    size_t size;   /* bytes */
};

extern const struct gsmrt_spv gsmrt_spv_table[GSMRT_KERNEL_COUNT];

#endif
