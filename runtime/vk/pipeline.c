/* pipeline.c -- compute pipelines from embedded SPIR-V, created lazily on
 * first use, keyed by (kernel, specialization constants), through the
 * device's VkPipelineCache. The device owns every pipeline it hands out. */
#include <string.h>
#include <time.h>

#include "base/mem.h"
#include "vk/vk_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void pipeline_free(struct gsmrt_vk_device *dev, struct gsmrt_vk_pipeline *p)
{
    if (!p) return;
    if (p->pipeline) dev->vk.vkDestroyPipeline(dev->device, p->pipeline, NULL);
    if (p->layout) dev->vk.vkDestroyPipelineLayout(dev->device, p->layout, NULL);
    if (p->set_layout) dev->vk.vkDestroyDescriptorSetLayout(dev->device, p->set_layout, NULL);
    gsmrt_mem_free(dev->alloc, p);
}

void gsmrt_vk_pipelines_destroy(struct gsmrt_vk_device *dev)
{
    for (uint32_t i = 0; i < dev->n_pipelines; i++) pipeline_free(dev, dev->pipelines[i]);
    gsmrt_mem_free(dev->alloc, dev->pipelines);
    dev->pipelines = NULL;
    dev->n_pipelines = dev->cap_pipelines = 0;
    if (dev->pipeline_cache) dev->vk.vkDestroyPipelineCache(dev->device, dev->pipeline_cache, NULL);
    dev->pipeline_cache = VK_NULL_HANDLE;
}

static gsmrt_status create(struct gsmrt_vk_device *dev, struct gsmrt_vk_pipeline *p,
                           struct gsmrt_err *err)
{
    const struct gsmrt_vk_kernel_desc *k = p->kernel;
    VkDescriptorSetLayoutBinding b[GSMRT_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < k->n_bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dsl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = k->n_bindings,
        .pBindings = b,
    };
    VkResult r = dev->vk.vkCreateDescriptorSetLayout(dev->device, &dsl, NULL, &p->set_layout);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = k->push_bytes};
    VkPipelineLayoutCreateInfo pl = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &p->set_layout,
        .pushConstantRangeCount = k->push_bytes ? 1 : 0,
        .pPushConstantRanges = &push,
    };
    r = dev->vk.vkCreatePipelineLayout(dev->device, &pl, NULL, &p->layout);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkCreatePipelineLayout");

    VkShaderModuleCreateInfo mi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = k->code_bytes,
        .pCode = k->code,
    };
    VkShaderModule module;
    r = dev->vk.vkCreateShaderModule(dev->device, &mi, NULL, &module);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkCreateShaderModule");
    VkSpecializationMapEntry entries[GSMRT_VK_MAX_SPEC];
    for (uint32_t i = 0; i < p->n_spec; i++)
        entries[i] = (VkSpecializationMapEntry){.constantID = i, .offset = 4 * i, .size = 4};
    VkSpecializationInfo spec = {
        .mapEntryCount = p->n_spec,
        .pMapEntries = entries,
        .dataSize = 4 * p->n_spec,
        .pData = p->spec,
    };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = p->n_spec ? &spec : NULL},
        .layout = p->layout,
    };
    double t0 = now_ms();
    r = dev->vk.vkCreateComputePipelines(dev->device, dev->pipeline_cache, 1, &ci, NULL, &p->pipeline);
    dev->pipeline_create_ms += now_ms() - t0;
    dev->vk.vkDestroyShaderModule(dev->device, module, NULL);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkCreateComputePipelines");
    dev->pipeline_cache_dirty = true;
    return GSMRT_OK;
}

gsmrt_status gsmrt_vk_pipeline_get(struct gsmrt_vk_device *dev,
                                   const struct gsmrt_vk_kernel_desc *kernel,
                                   const uint32_t *spec, uint32_t n_spec,
                                   struct gsmrt_vk_pipeline **out, struct gsmrt_err *err)
{
    *out = NULL;
    if (n_spec > GSMRT_VK_MAX_SPEC || kernel->n_bindings > GSMRT_VK_MAX_BINDINGS ||
        kernel->push_bytes > dev->caps.max_push_constants_size)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "kernel %s: %u spec constants, %u bindings, %u push bytes exceed the "
                             "limits (%d, %d, %u)",
                             kernel->name, n_spec, kernel->n_bindings, kernel->push_bytes,
                             GSMRT_VK_MAX_SPEC, GSMRT_VK_MAX_BINDINGS,
                             dev->caps.max_push_constants_size);
    for (uint32_t i = 0; i < dev->n_pipelines; i++) {
        struct gsmrt_vk_pipeline *p = dev->pipelines[i];
        if (p->kernel == kernel && p->n_spec == n_spec &&
            (n_spec == 0 || memcmp(p->spec, spec, 4 * n_spec) == 0)) {
            *out = p;
            return GSMRT_OK;
        }
    }
    if (dev->n_pipelines == dev->cap_pipelines) {
        uint32_t cap = dev->cap_pipelines ? 2 * dev->cap_pipelines : 32;
        struct gsmrt_vk_pipeline **a = gsmrt_mem_alloc(dev->alloc, cap * sizeof *a);
        if (!a) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pipeline table");
        if (dev->n_pipelines) memcpy(a, dev->pipelines, dev->n_pipelines * sizeof *a);
        gsmrt_mem_free(dev->alloc, dev->pipelines);
        dev->pipelines = a;
        dev->cap_pipelines = cap;
    }
    struct gsmrt_vk_pipeline *p = gsmrt_mem_calloc(dev->alloc, 1, sizeof *p);
    if (!p) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pipeline");
    p->kernel = kernel;
    p->n_spec = n_spec;
    if (n_spec) memcpy(p->spec, spec, 4 * n_spec);
    gsmrt_status st = create(dev, p, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "kernel %s: ", kernel->name);
        pipeline_free(dev, p);
        return st;
    }
    dev->pipelines[dev->n_pipelines++] = p;
    *out = p;
    return GSMRT_OK;
}
