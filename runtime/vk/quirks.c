/* quirks.c -- named driver quirks, all decided here. Each flag says what the
 * symptom is and what the runtime does about it; no other file compares
 * vendor or driver ids. */
#include <stdio.h>
#include <string.h>

#include "vk/vk.h"

#define VENDOR_NVIDIA 0x10DE
#define VENDOR_INTEL 0x8086

void gsmrt_vk_quirks_detect(const struct gsmrt_vk_caps *caps, struct gsmrt_vk_quirks *q)
{
    memset(q, 0, sizeof *q);

    /* llvmpipe/lavapipe (Mesa) JIT-compiles every pipeline with LLVM at
     * creation, seconds for a large kernel: save the pipeline cache right
     * after each burst of creations rather than only at exit. */
    q->slow_pipeline_compile = caps->type == VK_PHYSICAL_DEVICE_TYPE_CPU ||
                               strstr(caps->name, "llvmpipe") != NULL;

    /* Intel GPUs report subgroupSize 32 but may run compute at SIMD8/16 unless
     * a size is required (VK_EXT_subgroup_size_control). Kernels therefore
     * read gl_SubgroupSize/gl_NumSubgroups at run time and never size shared
     * arrays from caps->subgroup_size. */
    q->subgroup_size_varies = caps->vendor_id == VENDOR_INTEL;

    /* One memory for everything (lavapipe, most integrated GPUs): GSM's
     * "swap" tier moves nothing physically; keep is the default there. */
    q->tiers_share_memory = caps->unified_memory;

    /* llama.cpp caps single allocations at 1 GiB on NVIDIA's proprietary
     * driver "to avoid fragmentation issues" (ggml-vulkan); we size blocks the
     * same way there. */
    q->cap_allocation_1gib = caps->vendor_id == VENDOR_NVIDIA;
}

void gsmrt_vk_quirks_names(const struct gsmrt_vk_quirks *q, char *buf, size_t size)
{
    struct { bool on; const char *name; } all[] = {
        {q->slow_pipeline_compile, "slow_pipeline_compile"},
        {q->subgroup_size_varies, "subgroup_size_varies"},
        {q->tiers_share_memory, "tiers_share_memory"},
        {q->cap_allocation_1gib, "cap_allocation_1gib"},
    };
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!all[i].on || used >= size) continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "", all[i].name);
        if (w > 0) used += (size_t)w;
    }
}
