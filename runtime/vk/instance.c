/* instance.c -- Vulkan loading (volk) and the instance, with the Khronos
 * validation layer and a counting debug messenger when asked for.
 *
 * Loading fails softly: no libvulkan on the system is GSMRT_E_NO_DEVICE with a
 * message, never a crash. volk's global device pointers are never loaded
 * (volkLoadInstanceOnly); devices use their own table (device.c). */
#include "vk/vk.h"

#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/mem.h"

static const char VALIDATION_LAYER[] = "VK_LAYER_KHRONOS_validation";

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    struct gsmrt_vk_instance *inst = user;
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    atomic_fetch_add(&inst->validation_messages, 1);
    gsmrt_log(&inst->log, GSMRT_LOG_ERROR, "vulkan validation: %s",
              data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

static bool has_layer(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *props = calloc(n, sizeof *props);
    if (!props) return false;
    bool found = false;
    if (vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(props[i].layerName, name) == 0;
    free(props);
    return found;
}

static bool has_instance_extension(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    if (!props) return false;
    bool found = false;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

gsmrt_status gsmrt_vk_instance_create(const struct gsmrt_vk_instance_params *p,
                                      struct gsmrt_vk_instance **out, struct gsmrt_err *err)
{
    *out = NULL;
    if (volkInitialize() != VK_SUCCESS)
        return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                             "no Vulkan loader found (libvulkan.so.1); install libvulkan1 and a "
                             "driver, e.g. mesa-vulkan-drivers for lavapipe on the CPU");
    if (volkGetInstanceVersion() < VK_API_VERSION_1_2)
        return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                             "the Vulkan loader supports version %u.%u; gsmrt needs 1.2",
                             VK_API_VERSION_MAJOR(volkGetInstanceVersion()),
                             VK_API_VERSION_MINOR(volkGetInstanceVersion()));

    struct gsmrt_vk_instance *inst = gsmrt_mem_calloc(p->alloc, 1, sizeof *inst);
    if (!inst) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "vulkan instance");
    inst->alloc = p->alloc;
    inst->log = p->log;
    atomic_init(&inst->validation_messages, 0);

    bool want_validation = p->validation < 0 ? gsmrt_env_flag(&inst->log, "GSMRT_VALIDATE") : p->validation != 0;
    if (want_validation && !has_layer(VALIDATION_LAYER)) {
        gsmrt_vk_instance_destroy(inst);
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "validation requested but %s is not installed "
                             "(Debian package vulkan-validationlayers)",
                             VALIDATION_LAYER);
    }
    bool debug_utils = want_validation && has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);

    const char *exts[4];
    uint32_t n_exts = 0;
    if (debug_utils) exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    /* Lists devices behind the portability subset (MoltenVK) too. */
    bool portability = has_instance_extension("VK_KHR_portability_enumeration");
    if (portability) exts[n_exts++] = "VK_KHR_portability_enumeration";

    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "gsmrt",
        .applicationVersion = GSMRT_VERSION,
        .pEngineName = "gsmrt",
        .engineVersion = GSMRT_VERSION,
        .apiVersion = VK_API_VERSION_1_2,
    };
    const char *layers[] = {VALIDATION_LAYER};
    VkValidationFeatureEnableEXT sync_validation[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = sync_validation,
    };
    VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_debug_message,
        .pUserData = inst,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        /* The messenger is chained so that instance creation and destruction
         * are validated too; synchronization validation goes in front of it
         * (the messenger's own create info must keep a NULL pNext). */
        .pNext = debug_utils ? &messenger_info : NULL,
        .flags = portability ? 0x00000001 /* ENUMERATE_PORTABILITY_BIT_KHR */ : 0,
        .pApplicationInfo = &app,
        .enabledLayerCount = want_validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    if (debug_utils && gsmrt_env_flag(&inst->log, "GSMRT_VALIDATE_SYNC")) {
        features.pNext = &messenger_info;
        info.pNext = &features;
    }
    VkResult r = vkCreateInstance(&info, NULL, &inst->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        gsmrt_vk_instance_destroy(inst);
        return gsmrt_err_set(err, GSMRT_E_NO_DEVICE,
                             "no Vulkan driver is installed, or none supports Vulkan 1.2 "
                             "(vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); on a machine "
                             "without a GPU install mesa-vulkan-drivers (lavapipe)");
    }
    if (r != VK_SUCCESS) {
        gsmrt_status st = gsmrt_vk_result(err, r, "vkCreateInstance");
        gsmrt_vk_instance_destroy(inst);
        return st == GSMRT_E_UNSUPPORTED ? GSMRT_E_NO_DEVICE : st;
    }
    volkLoadInstanceOnly(inst->instance);
    inst->validation = want_validation;
    if (debug_utils) {
        r = vkCreateDebugUtilsMessengerEXT(inst->instance, &messenger_info, NULL, &inst->messenger);
        if (r != VK_SUCCESS) {
            gsmrt_status st = gsmrt_vk_result(err, r, "vkCreateDebugUtilsMessengerEXT");
            gsmrt_vk_instance_destroy(inst);
            return st;
        }
    }
    *out = inst;
    return GSMRT_OK;
}

void gsmrt_vk_instance_destroy(struct gsmrt_vk_instance *inst)
{
    if (!inst) return;
    if (inst->messenger) vkDestroyDebugUtilsMessengerEXT(inst->instance, inst->messenger, NULL);
    if (inst->instance) vkDestroyInstance(inst->instance, NULL);
    gsmrt_mem_free(inst->alloc, inst);
}

const char *gsmrt_vk_result_name(VkResult r)
{
    switch (r) {
#define CASE_(x) \
    case x: return #x;
        CASE_(VK_SUCCESS)
        CASE_(VK_NOT_READY)
        CASE_(VK_TIMEOUT)
        CASE_(VK_INCOMPLETE)
        CASE_(VK_ERROR_OUT_OF_HOST_MEMORY)
        CASE_(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        CASE_(VK_ERROR_INITIALIZATION_FAILED)
        CASE_(VK_ERROR_DEVICE_LOST)
        CASE_(VK_ERROR_MEMORY_MAP_FAILED)
        CASE_(VK_ERROR_LAYER_NOT_PRESENT)
        CASE_(VK_ERROR_EXTENSION_NOT_PRESENT)
        CASE_(VK_ERROR_FEATURE_NOT_PRESENT)
        CASE_(VK_ERROR_INCOMPATIBLE_DRIVER)
        CASE_(VK_ERROR_TOO_MANY_OBJECTS)
        CASE_(VK_ERROR_FORMAT_NOT_SUPPORTED)
        CASE_(VK_ERROR_FRAGMENTED_POOL)
        CASE_(VK_ERROR_OUT_OF_POOL_MEMORY)
        CASE_(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        CASE_(VK_ERROR_FRAGMENTATION)
        CASE_(VK_PIPELINE_COMPILE_REQUIRED)
#undef CASE_
    default: return "VK_ERROR_UNKNOWN";
    }
}

gsmrt_status gsmrt_vk_result(struct gsmrt_err *err, VkResult r, const char *what)
{
    gsmrt_status st;
    switch (r) {
    case VK_SUCCESS: return GSMRT_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY: st = GSMRT_E_OUT_OF_HOST_MEMORY; break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_OUT_OF_POOL_MEMORY: st = GSMRT_E_OUT_OF_DEVICE_MEMORY; break;
    case VK_ERROR_DEVICE_LOST: st = GSMRT_E_DEVICE_LOST; break;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER: st = GSMRT_E_UNSUPPORTED; break;
    default: st = GSMRT_E_INTERNAL; break;
    }
    return gsmrt_err_set(err, st, "%s failed: %s (%d)", what, gsmrt_vk_result_name(r), (int)r);
}
