/* spv_registry.h -- the embedded SPIR-V blobs, indexed by kernel id, and the
 * product-kernel lookup. Both tables are generated at build time
 * (cmake/GsmrtShaders.cmake, from shaders/CMakeLists.txt and the weight-type
 * table runtime/gguf/wtype_table.def). */
#ifndef GSMRT_SPV_REGISTRY_H
#define GSMRT_SPV_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/wtype.h"
#include "spv_ids.h"

struct gsmrt_spv {
    const char *name;
    const uint32_t *code;
    size_t size;    /* bytes */
    int family;     /* enum gsmrt_kfamily + 1 for a product kernel, else 0 */
};

extern const struct gsmrt_spv gsmrt_spv_table[GSMRT_KERNEL_COUNT];

/* [family][weight-type index][variant]: kernel id + 1, 0 where the family
 * has no such variant. */
extern const uint16_t gsmrt_spv_variants[GSMRT_KFAMILY_COUNT][GSMRT_WTYPE_INDEX_COUNT][GSMRT_KVARIANT_COUNT];

#endif
