/* record.c -- command recording: dispatches with their descriptor sets,
 * explicit barriers, copies, and per-dispatch timestamps.
 *
 * Every barrier is visible in the caller's code (gsmrt_vk_rec_barrier): the
 * layer never inserts one behind the caller's back, except the final
 * device->host barrier at submit, which every host read of results needs. */
#include <string.h>

#include "base/mem.h"
#include "vk/vk.h"

void gsmrt_vk_rec_destroy(struct gsmrt_vk_rec *rec)
{
    if (!rec) return;
    struct gsmrt_vk_device *dev = rec->dev;
    if (rec->submitted) dev->vk.vkWaitForFences(dev->device, 1, &rec->fence, VK_TRUE, UINT64_MAX);
    if (rec->queries) dev->vk.vkDestroyQueryPool(dev->device, rec->queries, NULL);
    if (rec->pool) dev->vk.vkDestroyDescriptorPool(dev->device, rec->pool, NULL);
    if (rec->fence) dev->vk.vkDestroyFence(dev->device, rec->fence, NULL);
    if (rec->cmd) dev->vk.vkFreeCommandBuffers(dev->device, dev->cmd_pool, 1, &rec->cmd);
    gsmrt_mem_free(dev->alloc, rec->labels);
    gsmrt_mem_free(dev->alloc, rec);
}

gsmrt_status gsmrt_vk_rec_create(struct gsmrt_vk_device *dev, uint32_t max_dispatches,
                                 bool timestamps, struct gsmrt_vk_rec **out,
                                 struct gsmrt_err *err)
{
    *out = NULL;
    if (max_dispatches == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "recording for 0 dispatches");
    struct gsmrt_vk_rec *rec = gsmrt_mem_calloc(dev->alloc, 1, sizeof *rec);
    if (!rec) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "recording");
    rec->dev = dev;
    rec->max_dispatches = max_dispatches;
    gsmrt_status st = GSMRT_OK;
    rec->labels = gsmrt_mem_calloc(dev->alloc, max_dispatches, sizeof *rec->labels);
    if (!rec->labels) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "recording labels");
        goto fail;
    }
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = dev->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkResult r = dev->vk.vkAllocateCommandBuffers(dev->device, &ai, &rec->cmd);
    if (r != VK_SUCCESS) {
        st = gsmrt_vk_result(err, r, "vkAllocateCommandBuffers");
        goto fail;
    }
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = dev->vk.vkCreateFence(dev->device, &fi, NULL, &rec->fence);
    if (r != VK_SUCCESS) {
        st = gsmrt_vk_result(err, r, "vkCreateFence");
        goto fail;
    }
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = max_dispatches * GSMRT_VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = max_dispatches,
        .poolSizeCount = 1,
        .pPoolSizes = &ps,
    };
    r = dev->vk.vkCreateDescriptorPool(dev->device, &pi, NULL, &rec->pool);
    if (r != VK_SUCCESS) {
        st = gsmrt_vk_result(err, r, "vkCreateDescriptorPool");
        goto fail;
    }
    if (timestamps && dev->caps.timestamps) {
        VkQueryPoolCreateInfo qi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2 * max_dispatches,
        };
        r = dev->vk.vkCreateQueryPool(dev->device, &qi, NULL, &rec->queries);
        if (r != VK_SUCCESS) {
            st = gsmrt_vk_result(err, r, "vkCreateQueryPool");
            goto fail;
        }
    }
    *out = rec;
    return GSMRT_OK;
fail:
    gsmrt_vk_rec_destroy(rec);
    return st;
}

gsmrt_status gsmrt_vk_rec_begin(struct gsmrt_vk_rec *rec, struct gsmrt_err *err)
{
    struct gsmrt_vk_device *dev = rec->dev;
    if (rec->submitted) {
        dev->vk.vkWaitForFences(dev->device, 1, &rec->fence, VK_TRUE, UINT64_MAX);
        rec->submitted = false;
    }
    VkResult r = dev->vk.vkResetDescriptorPool(dev->device, rec->pool, 0);
    if (r == VK_SUCCESS) r = dev->vk.vkResetCommandBuffer(rec->cmd, 0);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "reset recording");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    r = dev->vk.vkBeginCommandBuffer(rec->cmd, &bi);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkBeginCommandBuffer");
    if (rec->queries) dev->vk.vkCmdResetQueryPool(rec->cmd, rec->queries, 0, 2 * rec->max_dispatches);
    rec->n_dispatches = 0;
    rec->recording = true;
    return GSMRT_OK;
}

gsmrt_status gsmrt_vk_rec_dispatch(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_pipeline *pipe,
                                   const struct gsmrt_vk_range *bindings, uint32_t n_bindings,
                                   const void *push, uint32_t push_bytes, uint32_t groups_x,
                                   uint32_t groups_y, uint32_t groups_z, const char *label,
                                   struct gsmrt_err *err)
{
    struct gsmrt_vk_device *dev = rec->dev;
    const struct gsmrt_vk_kernel_desc *k = pipe->kernel;
    if (!rec->recording)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s: dispatch outside begin/submit", k->name);
    if (rec->n_dispatches == rec->max_dispatches)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "%s: recording holds at most %u dispatches", k->name, rec->max_dispatches);
    if (n_bindings != k->n_bindings || push_bytes != k->push_bytes)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "%s: %u bindings and %u push bytes given, the kernel has %u and %u",
                             k->name, n_bindings, push_bytes, k->n_bindings, k->push_bytes);
    const uint32_t *maxg = dev->caps.max_workgroup_count;
    if (groups_x == 0 || groups_y == 0 || groups_z == 0 || groups_x > maxg[0] ||
        groups_y > maxg[1] || groups_z > maxg[2])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "%s: workgroup count (%u, %u, %u) outside (1..%u, 1..%u, 1..%u)",
                             k->name, groups_x, groups_y, groups_z, maxg[0], maxg[1], maxg[2]);
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = rec->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &pipe->set_layout,
    };
    VkDescriptorSet set;
    VkResult r = dev->vk.vkAllocateDescriptorSets(dev->device, &ai, &set);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[GSMRT_VK_MAX_BINDINGS];
    VkWriteDescriptorSet writes[GSMRT_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < n_bindings; i++) {
        if (bindings[i].size == 0 || bindings[i].size > dev->binding_range)
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                                 "%s: binding %u has %llu bytes (allowed 1..%llu)", k->name, i,
                                 (unsigned long long)bindings[i].size,
                                 (unsigned long long)dev->binding_range);
        infos[i] = (VkDescriptorBufferInfo){bindings[i].buffer, bindings[i].offset, bindings[i].size};
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &infos[i],
        };
    }
    dev->vk.vkUpdateDescriptorSets(dev->device, n_bindings, writes, 0, NULL);

    uint32_t q = 2 * rec->n_dispatches;
    if (rec->queries)
        dev->vk.vkCmdWriteTimestamp(rec->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, rec->queries, q);
    dev->vk.vkCmdBindPipeline(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline);
    dev->vk.vkCmdBindDescriptorSets(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, 1, &set,
                                    0, NULL);
    if (push_bytes)
        dev->vk.vkCmdPushConstants(rec->cmd, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes,
                                   push);
    dev->vk.vkCmdDispatch(rec->cmd, groups_x, groups_y, groups_z);
    if (rec->queries)
        dev->vk.vkCmdWriteTimestamp(rec->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, rec->queries, q + 1);
    rec->labels[rec->n_dispatches++] = label ? label : k->name;
    return GSMRT_OK;
}

void gsmrt_vk_rec_barrier(struct gsmrt_vk_rec *rec)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    rec->dev->vk.vkCmdPipelineBarrier(rec->cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

void gsmrt_vk_rec_copy(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *src,
                       const struct gsmrt_vk_range *dst)
{
    VkBufferCopy region = {.srcOffset = src->offset, .dstOffset = dst->offset,
                           .size = src->size < dst->size ? src->size : dst->size};
    rec->dev->vk.vkCmdCopyBuffer(rec->cmd, src->buffer, dst->buffer, 1, &region);
}

void gsmrt_vk_rec_fill(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *dst, uint32_t word)
{
    rec->dev->vk.vkCmdFillBuffer(rec->cmd, dst->buffer, dst->offset, dst->size & ~(VkDeviceSize)3, word);
}

gsmrt_status gsmrt_vk_rec_submit_wait(struct gsmrt_vk_rec *rec, struct gsmrt_err *err)
{
    struct gsmrt_vk_device *dev = rec->dev;
    if (!rec->recording) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "submit without begin");
    VkMemoryBarrier to_host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    dev->vk.vkCmdPipelineBarrier(rec->cmd,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
    rec->recording = false;
    VkResult r = dev->vk.vkEndCommandBuffer(rec->cmd);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkEndCommandBuffer");
    r = dev->vk.vkResetFences(dev->device, 1, &rec->fence);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkResetFences");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &rec->cmd};
    r = dev->vk.vkQueueSubmit(dev->queue, 1, &si, rec->fence);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkQueueSubmit");
    dev->n_submits++;
    rec->submitted = true;
    r = dev->vk.vkWaitForFences(dev->device, 1, &rec->fence, VK_TRUE, UINT64_MAX);
    rec->submitted = false;
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkWaitForFences");
    return GSMRT_OK;
}

uint32_t gsmrt_vk_rec_timings(struct gsmrt_vk_rec *rec, struct gsmrt_vk_timing *out, uint32_t cap)
{
    if (!rec->queries || rec->n_dispatches == 0) return 0;
    struct gsmrt_vk_device *dev = rec->dev;
    uint32_t n = rec->n_dispatches < cap ? rec->n_dispatches : cap;
    uint64_t stamps[2 * 64];
    uint32_t done = 0;
    while (done < n) {
        uint32_t batch = n - done < 64 ? n - done : 64;
        VkResult r = dev->vk.vkGetQueryPoolResults(dev->device, rec->queries, 2 * done, 2 * batch,
                                                   sizeof stamps, stamps, sizeof(uint64_t),
                                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        if (r != VK_SUCCESS) break;
        uint64_t mask = dev->caps.timestamp_valid_bits >= 64 ? UINT64_MAX
                                                             : (1ull << dev->caps.timestamp_valid_bits) - 1;
        for (uint32_t i = 0; i < batch; i++) {
            uint64_t t0 = stamps[2 * i] & mask, t1 = stamps[2 * i + 1] & mask;
            out[done + i].label = rec->labels[done + i];
            out[done + i].ms = (double)((t1 - t0) & mask) * dev->caps.timestamp_period_ns / 1e6;
        }
        done += batch;
    }
    return done;
}
