/* caps.c -- the capability record of a physical device, and the device
 * choice. Only instance-level queries; nothing here creates a device. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk/vk.h"

static bool has_device_extension(const VkExtensionProperties *exts, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(exts[i].extensionName, name) == 0) return true;
    return false;
}

static void query_queues(VkPhysicalDevice phys, struct gsmrt_vk_caps *caps)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    VkQueueFamilyProperties fams[32];
    if (n > 32) n = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, fams);
    bool found_compute = false;
    for (uint32_t i = 0; i < n; i++) {
        VkQueueFlags f = fams[i].queueFlags;
        if ((f & VK_QUEUE_COMPUTE_BIT) && !found_compute) {
            found_compute = true;
            caps->compute_family = i;
            caps->timestamp_valid_bits = fams[i].timestampValidBits;
        }
        /* A dedicated transfer family: copies there overlap with compute. */
        if ((f & VK_QUEUE_TRANSFER_BIT) && !(f & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT)) &&
            !caps->has_transfer_queue) {
            caps->has_transfer_queue = true;
            caps->transfer_family = i;
        }
    }
    caps->usable = found_compute && caps->api_version >= VK_API_VERSION_1_2;
}

void gsmrt_vk_caps_query(VkPhysicalDevice phys, struct gsmrt_vk_caps *caps)
{
    memset(caps, 0, sizeof *caps);

    VkPhysicalDeviceDriverProperties driver = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = &driver};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &subgroup};
    VkPhysicalDeviceProperties basic;
    vkGetPhysicalDeviceProperties(phys, &basic);
    bool v12 = basic.apiVersion >= VK_API_VERSION_1_2;
    if (v12) vkGetPhysicalDeviceProperties2(phys, &props);
    else props.properties = basic;
    const VkPhysicalDeviceProperties *p = &props.properties;

    snprintf(caps->name, sizeof caps->name, "%s", p->deviceName);
    if (v12) {
        snprintf(caps->driver_name, sizeof caps->driver_name, "%s", driver.driverName);
        snprintf(caps->driver_info, sizeof caps->driver_info, "%s", driver.driverInfo);
    }
    caps->type = p->deviceType;
    caps->vendor_id = p->vendorID;
    caps->device_id = p->deviceID;
    caps->driver_version = p->driverVersion;
    caps->api_version = p->apiVersion;
    memcpy(caps->pipeline_cache_uuid, p->pipelineCacheUUID, VK_UUID_SIZE);

    const VkPhysicalDeviceLimits *lim = &p->limits;
    caps->max_storage_buffer_range = lim->maxStorageBufferRange;
    caps->max_push_constants_size = lim->maxPushConstantsSize;
    caps->max_compute_shared_memory = lim->maxComputeSharedMemorySize;
    caps->max_workgroup_invocations = lim->maxComputeWorkGroupInvocations;
    memcpy(caps->max_workgroup_count, lim->maxComputeWorkGroupCount, sizeof caps->max_workgroup_count);
    caps->min_storage_buffer_offset_alignment = lim->minStorageBufferOffsetAlignment;
    caps->non_coherent_atom_size = lim->nonCoherentAtomSize;
    caps->timestamp_period_ns = lim->timestampPeriod;
    /* Vulkan 1.1 guarantees at least 1 GiB when the limit is not reported. */
    caps->max_memory_allocation_size = 1u << 30;

    if (v12) {
        VkPhysicalDeviceMaintenance3Properties m3 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &m3};
        vkGetPhysicalDeviceProperties2(phys, &p2);
        caps->max_memory_allocation_size = m3.maxMemoryAllocationSize;

        caps->subgroup_size = subgroup.subgroupSize;
        bool compute = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
        caps->subgroup_basic = compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
        caps->subgroup_arithmetic =
            compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
        caps->subgroup_shuffle = compute && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);

        VkPhysicalDeviceVulkan12Features f12 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
        VkPhysicalDeviceVulkan11Features f11 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
        VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                       .pNext = &f11};
        vkGetPhysicalDeviceFeatures2(phys, &f);
        caps->fp16_arithmetic = f12.shaderFloat16;
        caps->storage_8bit = f12.storageBuffer8BitAccess;
        caps->storage_16bit = f11.storageBuffer16BitAccess;
    }

    vkGetPhysicalDeviceMemoryProperties(phys, &caps->memory);
    bool any_device_local = false, all_host_visible = true;
    for (uint32_t i = 0; i < caps->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags fl = caps->memory.memoryTypes[i].propertyFlags;
        if (fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) {
            any_device_local = true;
            if (!(fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) all_host_visible = false;
        }
    }
    caps->unified_memory = any_device_local && all_host_visible;

    uint32_t n_ext = 0;
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n_ext, NULL);
    VkExtensionProperties *exts = n_ext ? calloc(n_ext, sizeof *exts) : NULL;
    if (exts && vkEnumerateDeviceExtensionProperties(phys, NULL, &n_ext, exts) == VK_SUCCESS) {
        caps->ext_memory_budget = has_device_extension(exts, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
        caps->ext_push_descriptor =
            has_device_extension(exts, n_ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    }
    free(exts);

    query_queues(phys, caps);
    caps->timestamps = caps->timestamp_valid_bits > 0 && caps->timestamp_period_ns > 0.0f;
}

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

static bool name_contains(const char *name, const char *want)
{
    size_t n = strlen(name), w = strlen(want);
    for (size_t i = 0; i + w <= n; i++) {
        size_t j = 0;
        while (j < w && tolower((unsigned char)name[i + j]) == tolower((unsigned char)want[j])) j++;
        if (j == w) return true;
    }
    return false;
}

gsmrt_status gsmrt_vk_choose_device(const struct gsmrt_vk_caps *caps, uint32_t n,
                                    const char *want, uint32_t *chosen, struct gsmrt_err *err)
{
    if (n == 0)
        return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                             "the Vulkan loader reports no device; install a driver "
                             "(mesa-vulkan-drivers provides lavapipe, which runs on the CPU)");
    if (want && *want) {
        char *end = NULL;
        unsigned long idx = strtoul(want, &end, 10);
        /* an index is digits only: "-1" or "+1" would wrap or mislead; they are names */
        if (end && *end == '\0' && end != want && isdigit((unsigned char)want[0])) {
            if (idx >= n)
                return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                                     "device %lu requested but only %u device(s) exist (0..%u)",
                                     idx, n, n - 1);
            if (!caps[idx].usable)
                return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                                     "device %lu (%s) lacks Vulkan 1.2 or a compute queue", idx,
                                     caps[idx].name);
            *chosen = (uint32_t)idx;
            return GSMRT_OK;
        }
        for (uint32_t i = 0; i < n; i++)
            if (caps[i].usable && name_contains(caps[i].name, want)) {
                *chosen = i;
                return GSMRT_OK;
            }
        return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                             "no usable device matches \"%s\" (try `gsm devices`)", want);
    }
    int best = -1, best_rank = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!caps[i].usable) continue;
        int r = type_rank(caps[i].type);
        if (r > best_rank) {
            best_rank = r;
            best = (int)i;
        }
    }
    if (best < 0)
        return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                             "none of the %u Vulkan device(s) supports Vulkan 1.2 with a compute "
                             "queue",
                             n);
    *chosen = (uint32_t)best;
    return GSMRT_OK;
}
