/* device.c -- the logical device: choice, features, queues, the per-device
 * dispatch table and the environment switches that force fallback paths.
 * Memory lives in memory.c, pipelines in pipeline.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/mem.h"
#include "vk/vk_internal.h"

gsmrt_status gsmrt_vk_enumerate(struct gsmrt_vk_instance *inst, struct gsmrt_vk_caps **caps_out,
                                uint32_t *n_out, VkPhysicalDevice **phys_out,
                                struct gsmrt_err *err)
{
    *caps_out = NULL;
    *n_out = 0;
    if (phys_out) *phys_out = NULL;
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst->instance, &n, NULL);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkEnumeratePhysicalDevices");
    if (n == 0) return GSMRT_OK;
    VkPhysicalDevice *phys = gsmrt_mem_calloc(inst->alloc, n, sizeof *phys);
    struct gsmrt_vk_caps *caps = gsmrt_mem_calloc(inst->alloc, n, sizeof *caps);
    if (!phys || !caps) {
        gsmrt_mem_free(inst->alloc, phys);
        gsmrt_mem_free(inst->alloc, caps);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "device list");
    }
    r = vkEnumeratePhysicalDevices(inst->instance, &n, phys);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        gsmrt_mem_free(inst->alloc, phys);
        gsmrt_mem_free(inst->alloc, caps);
        return gsmrt_vk_result(err, r, "vkEnumeratePhysicalDevices");
    }
    for (uint32_t i = 0; i < n; i++) gsmrt_vk_caps_query(phys[i], &caps[i]);
    *caps_out = caps;
    *n_out = n;
    if (phys_out) *phys_out = phys;
    else gsmrt_mem_free(inst->alloc, phys);
    return GSMRT_OK;
}

static gsmrt_status create_logical(struct gsmrt_vk_device *dev, struct gsmrt_err *err)
{
    const struct gsmrt_vk_caps *c = &dev->caps;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queues[2] = {
        {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = c->compute_family,
         .queueCount = 1,
         .pQueuePriorities = &priority},
        {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = c->transfer_family,
         .queueCount = 1,
         .pQueuePriorities = &priority},
    };
    /* Enable only what the device has; kernels needing a feature have a
     * fallback variant chosen from caps. */
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .shaderFloat16 = c->fp16_arithmetic,
        .storageBuffer8BitAccess = c->storage_8bit,
    };
    VkPhysicalDeviceVulkan11Features f11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &f12,
        .storageBuffer16BitAccess = c->storage_16bit,
    };
    const char *exts[2];
    uint32_t n_exts = 0;
    if (c->ext_memory_budget) exts[n_exts++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f11,
        .queueCreateInfoCount = c->has_transfer_queue ? 2 : 1,
        .pQueueCreateInfos = queues,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    VkResult r = vkCreateDevice(dev->phys, &info, NULL, &dev->device);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkCreateDevice");
    volkLoadDeviceTable(&dev->vk, dev->device);
    dev->vk.vkGetDeviceQueue(dev->device, c->compute_family, 0, &dev->queue);
    dev->transfer_queue = dev->queue;
    if (c->has_transfer_queue)
        dev->vk.vkGetDeviceQueue(dev->device, c->transfer_family, 0, &dev->transfer_queue);

    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = c->compute_family,
    };
    r = dev->vk.vkCreateCommandPool(dev->device, &pool, NULL, &dev->cmd_pool);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkCreateCommandPool");
    return GSMRT_OK;
}

static void apply_env_switches(struct gsmrt_vk_device *dev)
{
    const struct gsmrt_vk_caps *c = &dev->caps;
    const struct gsmrt_log *log = &dev->log;
    dev->disable_subgroup_ops = gsmrt_env_flag(log, "GSMRT_DISABLE_SUBGROUP_OPS");
    dev->force_staging = gsmrt_env_flag(log, "GSMRT_FORCE_STAGING");
    /* Tuning, not a quirk: llvmpipe runs a workgroup's barriers as
     * coroutine switches, so reductions across invocations cost more than
     * the loads they share. */
    static const char *const matvec[] = {"rows", "reduce"};
    int mv = gsmrt_env_choice(log, "GSMRT_MATVEC", matvec, 2);
    dev->row_per_invocation = mv >= 0 ? mv == 0 : c->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    dev->binding_range = c->max_storage_buffer_range;
    uint64_t forced = gsmrt_env_bytes(log, "GSMRT_FORCE_BINDING_RANGE");
    if (forced && forced < dev->binding_range) {
        dev->binding_range = forced;
        gsmrt_log(&dev->log, GSMRT_LOG_INFO, "binding range forced to %" PRIu64 " bytes", forced);
    }
    /* Blocks: at most 256 MiB so memory is returned in useful pieces, never
     * above what one allocation may be. */
    uint64_t block = 256ull << 20;
    uint64_t max_alloc = c->max_memory_allocation_size;
    if (dev->quirks.cap_allocation_1gib && max_alloc > (1ull << 30)) max_alloc = 1ull << 30;
    if (block > max_alloc) block = max_alloc;
    dev->block_bytes = block;
    dev->forced_budget = gsmrt_env_bytes(log, "GSMRT_FORCE_DEVICE_BUDGET");
}

gsmrt_status gsmrt_vk_device_create(struct gsmrt_vk_instance *inst,
                                    const struct gsmrt_vk_device_params *p,
                                    struct gsmrt_vk_device **out, struct gsmrt_err *err)
{
    *out = NULL;
    struct gsmrt_vk_caps *all = NULL;
    VkPhysicalDevice *phys = NULL;
    uint32_t n = 0, chosen = 0;
    gsmrt_status st = gsmrt_vk_enumerate(inst, &all, &n, &phys, err);
    if (st != GSMRT_OK) return st;
    const char *want = p && p->want ? p->want : getenv("GSMRT_DEVICE");
    st = gsmrt_vk_choose_device(all, n, want, &chosen, err);
    if (st != GSMRT_OK) {
        gsmrt_mem_free(inst->alloc, all);
        gsmrt_mem_free(inst->alloc, phys);
        return st;
    }
    struct gsmrt_vk_device *dev = gsmrt_mem_calloc(inst->alloc, 1, sizeof *dev);
    if (!dev) {
        gsmrt_mem_free(inst->alloc, all);
        gsmrt_mem_free(inst->alloc, phys);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "vulkan device");
    }
    dev->inst = inst;
    dev->alloc = inst->alloc;
    dev->log = inst->log;
    dev->index = chosen;
    dev->phys = phys[chosen];
    dev->caps = all[chosen];
    gsmrt_mem_free(inst->alloc, all);
    gsmrt_mem_free(inst->alloc, phys);
    gsmrt_vk_quirks_detect(&dev->caps, &dev->quirks);
    apply_env_switches(dev);
    gsmrt_log(&dev->log, GSMRT_LOG_INFO, "using Vulkan device %u: %s (%s)", chosen,
              dev->caps.name, dev->caps.driver_name);

    st = create_logical(dev, err);
    if (st == GSMRT_OK) st = gsmrt_vk_pipeline_cache_open(dev, p ? p->pipeline_cache_path : NULL, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "device %u (%s): ", chosen, dev->caps.name);
        gsmrt_vk_device_destroy(dev);
        return st;
    }
    *out = dev;
    return GSMRT_OK;
}

void gsmrt_vk_device_destroy(struct gsmrt_vk_device *dev)
{
    if (!dev) return;
    if (dev->device) {
        dev->vk.vkDeviceWaitIdle(dev->device);
        if (dev->pipeline_cache_dirty) {
            struct gsmrt_err e;
            if (gsmrt_vk_pipeline_cache_save(dev, &e) != GSMRT_OK)
                gsmrt_log(&dev->log, GSMRT_LOG_WARN, "%s", e.msg);
        }
        gsmrt_vk_pipelines_destroy(dev);
        gsmrt_vk_memory_destroy(dev);
        if (dev->cmd_pool) dev->vk.vkDestroyCommandPool(dev->device, dev->cmd_pool, NULL);
        dev->vk.vkDestroyDevice(dev->device, NULL);
    }
    gsmrt_mem_free(dev->alloc, dev);
}
