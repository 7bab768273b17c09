/* buffer.c -- binding ranges (never VK_WHOLE_SIZE, never above the binding
 * range), row chunking for tensors larger than one binding, and host<->device
 * copies (memcpy when mapped, else through staging and a queue transfer). */
#include <inttypes.h>
#include <string.h>

#include "base/mem.h"
#include "vk/vk.h"

gsmrt_status gsmrt_vk_buf_range(const struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *buf,
                                VkDeviceSize offset, VkDeviceSize size,
                                struct gsmrt_vk_range *out, struct gsmrt_err *err)
{
    memset(out, 0, sizeof *out);
    VkDeviceSize capacity = gsmrt_align_up(buf->size, 16);
    if (size == 0 || offset > capacity || size > capacity - offset)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "binding [%" PRIu64 ", +%" PRIu64 ") outside a %" PRIu64 "-byte buffer",
                             (uint64_t)offset, (uint64_t)size, (uint64_t)buf->size);
    if (size > dev->binding_range)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "binding of %" PRIu64 " bytes exceeds the binding range of %" PRIu64
                             " bytes (maxStorageBufferRange); bind it in chunks",
                             (uint64_t)size, (uint64_t)dev->binding_range);
    VkDeviceSize abs = buf->offset + offset;
    if (abs % dev->caps.min_storage_buffer_offset_alignment)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "binding offset %" PRIu64 " breaks the %" PRIu64 "-byte alignment",
                             (uint64_t)abs, (uint64_t)dev->caps.min_storage_buffer_offset_alignment);
    out->buffer = buf->buffer;
    out->offset = abs;
    out->size = size;
    return GSMRT_OK;
}

gsmrt_status gsmrt_vk_buf_whole(const struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *buf,
                                struct gsmrt_vk_range *out, struct gsmrt_err *err)
{
    return gsmrt_vk_buf_range(dev, buf, 0, gsmrt_align_up(buf->size, 4), out, err);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t gsmrt_vk_rows_per_chunk(uint64_t row_bytes, uint64_t binding_range, uint64_t align)
{
    if (row_bytes == 0 || align == 0) return 0;
    /* Chunk starts are multiples of (rows * row_bytes): that must be a
     * multiple of `align`, so rows must be a multiple of align/gcd. */
    uint64_t step = align / gcd_u64(row_bytes, align);
    uint64_t rows = binding_range / row_bytes;
    return rows - rows % step;
}

/* A one-time command buffer on the compute queue: copy, submit, wait. */
static gsmrt_status copy_now(struct gsmrt_vk_device *dev, VkBuffer src, VkDeviceSize src_off,
                             VkBuffer dst, VkDeviceSize dst_off, VkDeviceSize size,
                             struct gsmrt_err *err)
{
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = dev->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkCommandBuffer cmd;
    VkResult r = dev->vk.vkAllocateCommandBuffers(dev->device, &ai, &cmd);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    dev->vk.vkBeginCommandBuffer(cmd, &bi);
    /* Earlier compute writes (or host writes) are complete before the copy,
     * and the copy is visible to later compute and host reads. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    dev->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                                 VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkBufferCopy region = {.srcOffset = src_off, .dstOffset = dst_off, .size = size};
    dev->vk.vkCmdCopyBuffer(cmd, src, dst, 1, &region);
    VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_HOST_READ_BIT};
    dev->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0,
                                 1, &after, 0, NULL, 0, NULL);
    dev->vk.vkEndCommandBuffer(cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &cmd};
    r = dev->vk.vkQueueSubmit(dev->queue, 1, &si, VK_NULL_HANDLE);
    dev->n_submits++;
    if (r == VK_SUCCESS) r = dev->vk.vkQueueWaitIdle(dev->queue);
    dev->vk.vkFreeCommandBuffers(dev->device, dev->cmd_pool, 1, &cmd);
    return r == VK_SUCCESS ? GSMRT_OK : gsmrt_vk_result(err, r, "buffer copy submit");
}

/* Staging traffic goes in pieces of at most this size. */
#define STAGING_PIECE (32u << 20)

static gsmrt_status transfer(struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *buf,
                             VkDeviceSize offset, void *host, VkDeviceSize size, bool to_device,
                             struct gsmrt_err *err)
{
    if (offset > buf->size || size > buf->size - offset)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "%s of %" PRIu64 " bytes at %" PRIu64 " outside a %" PRIu64
                             "-byte buffer",
                             to_device ? "upload" : "download", (uint64_t)size, (uint64_t)offset,
                             (uint64_t)buf->size);
    if (size == 0) return GSMRT_OK;
    if (buf->mapped && !dev->force_staging) {
        if (to_device) memcpy((unsigned char *)buf->mapped + offset, host, size);
        else memcpy(host, (unsigned char *)buf->mapped + offset, size);
        return GSMRT_OK;
    }
    struct gsmrt_vk_buf staging;
    VkDeviceSize piece = size < STAGING_PIECE ? size : STAGING_PIECE;
    gsmrt_status st = gsmrt_vk_buf_alloc(
        dev, to_device ? GSMRT_VK_ROLE_STAGING : GSMRT_VK_ROLE_READBACK, piece, &staging, err);
    if (st != GSMRT_OK) return st;
    unsigned char *h = host;
    for (VkDeviceSize done = 0; done < size && st == GSMRT_OK; done += piece) {
        VkDeviceSize n = size - done < piece ? size - done : piece;
        if (to_device) {
            memcpy(staging.mapped, h + done, n);
            st = copy_now(dev, staging.buffer, staging.offset, buf->buffer, buf->offset + offset + done,
                          n, err);
        } else {
            st = copy_now(dev, buf->buffer, buf->offset + offset + done, staging.buffer,
                          staging.offset, n, err);
            if (st == GSMRT_OK) memcpy(h + done, staging.mapped, n);
        }
    }
    gsmrt_vk_buf_free(dev, &staging);
    return st;
}

gsmrt_status gsmrt_vk_upload(struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *dst,
                             VkDeviceSize offset, const void *src, VkDeviceSize size,
                             struct gsmrt_err *err)
{
    return transfer(dev, dst, offset, (void *)src, size, true, err);
}

gsmrt_status gsmrt_vk_download(struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *src,
                               VkDeviceSize offset, void *dst, VkDeviceSize size,
                               struct gsmrt_err *err)
{
    return transfer(dev, src, offset, dst, size, false, err);
}
