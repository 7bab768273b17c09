/* api_devices.c -- device discovery for the public API (gsmrt_device_*),
 * without creating a context: a short-lived instance, the capability record
 * of each device, then the instance is gone. */
#include <stdio.h>
#include <string.h>

#include "base/mem.h"
#include "api_devices.h"

void gsmrt_device_info_init(gsmrt_device_info *info, size_t size)
{
    if (!info || size < sizeof(uint32_t)) return;
    memset(info, 0, size);
    info->struct_size = (uint32_t)size;
}

static gsmrt_device_type public_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return GSMRT_DEVICE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return GSMRT_DEVICE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return GSMRT_DEVICE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return GSMRT_DEVICE_CPU;
    default: return GSMRT_DEVICE_OTHER;
    }
}

void gsmrt_device_info_fill(gsmrt_device_info *o, uint32_t index, const struct gsmrt_vk_caps *c)
{
    gsmrt_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = o->struct_size;
    full.index = index;
    snprintf(full.name, sizeof full.name, "%s", c->name);
    full.type = public_type(c->type);
    full.vendor_id = c->vendor_id;
    full.device_id = c->device_id;
    full.api_version = c->api_version;
    snprintf(full.driver_name, sizeof full.driver_name, "%s", c->driver_name);
    snprintf(full.driver_info, sizeof full.driver_info, "%s", c->driver_info);
    full.usable = c->usable;
    full.fp16_arithmetic = c->fp16_arithmetic;
    full.storage_8bit = c->storage_8bit;
    full.storage_16bit = c->storage_16bit;
    full.subgroup_arithmetic = c->subgroup_arithmetic;
    full.subgroup_shuffle = c->subgroup_shuffle;
    full.unified_memory = c->unified_memory;
    full.transfer_queue = c->has_transfer_queue;
    full.timestamps = c->timestamps;
    full.memory_budget = c->ext_memory_budget;
    full.push_descriptor = c->ext_push_descriptor;
    full.subgroup_size = c->subgroup_size;
    full.max_storage_buffer_range = c->max_storage_buffer_range;
    full.max_memory_allocation_size = c->max_memory_allocation_size;
    full.max_push_constants_size = c->max_push_constants_size;
    full.max_compute_shared_memory = c->max_compute_shared_memory;
    full.max_workgroup_invocations = c->max_workgroup_invocations;
    full.min_storage_buffer_offset_alignment = c->min_storage_buffer_offset_alignment;
    full.timestamp_period_ns = c->timestamp_period_ns;
    full.n_memory_heaps = c->memory.memoryHeapCount;
    for (uint32_t h = 0; h < full.n_memory_heaps && h < GSMRT_MAX_MEMORY_HEAPS; h++) {
        full.memory_heap_size[h] = c->memory.memoryHeaps[h].size;
        full.memory_heap_flags[h] = c->memory.memoryHeaps[h].flags;
    }
    full.n_memory_types = c->memory.memoryTypeCount;
    for (uint32_t t = 0; t < full.n_memory_types && t < GSMRT_MAX_MEMORY_TYPES; t++) {
        full.memory_type_flags[t] = c->memory.memoryTypes[t].propertyFlags;
        full.memory_type_heap[t] = c->memory.memoryTypes[t].heapIndex;
    }
    struct gsmrt_vk_quirks q;
    gsmrt_vk_quirks_detect(c, &q);
    gsmrt_vk_quirks_names(&q, full.quirks, sizeof full.quirks);
    /* Copy only what the caller's struct has room for. */
    memcpy(o, &full, o->struct_size < sizeof full ? o->struct_size : sizeof full);
}

gsmrt_status gsmrt_device_enumerate(gsmrt_device_info *infos, uint32_t capacity, uint32_t *count,
                                    char *err_text, size_t err_size)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    gsmrt_status st = GSMRT_OK;
    if (count) *count = 0;
    if (!count || (capacity && !infos)) {
        st = gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "count is NULL, or infos is NULL with capacity %u",
                           capacity);
        goto out;
    }
    for (uint32_t i = 0; i < capacity; i++)
        if (infos[i].struct_size < offsetof(gsmrt_device_info, name)) {
            st = gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT,
                               "infos[%u].struct_size is %u; call gsmrt_device_info_init first", i,
                               infos[i].struct_size);
            goto out;
        }
    struct gsmrt_vk_instance *inst = NULL;
    struct gsmrt_vk_instance_params ip = {.alloc = NULL, .log = {NULL, NULL, GSMRT_LOG_ERROR}, .validation = -1};
    st = gsmrt_vk_instance_create(&ip, &inst, &err);
    if (st != GSMRT_OK) goto out;
    struct gsmrt_vk_caps *caps = NULL;
    uint32_t n = 0;
    st = gsmrt_vk_enumerate(inst, &caps, &n, NULL, &err);
    if (st == GSMRT_OK) {
        for (uint32_t i = 0; i < n && i < capacity; i++) gsmrt_device_info_fill(&infos[i], i, &caps[i]);
        *count = n;
    }
    gsmrt_mem_free(NULL, caps);
    gsmrt_vk_instance_destroy(inst);
out:
    if (err_text && err_size) snprintf(err_text, err_size, "%s", st == GSMRT_OK ? "" : err.msg);
    return st;
}
