/* kv_cache.c -- the paged latent cache of one sequence: two pools per layer
 * (HOT device-local, COLD host-visible), a page table on the device with one
 * row per layer, and slots handed out as the sequence grows. GSM's tier
 * policy (model/gsm_decode.c) moves pages between the pools and rewrites the
 * entries; a dense cache keeps page p in hot slot p. */
#include <string.h>

#include "base/mem.h"
#include "model/model.h"

void gsmrt_kv_cache_destroy(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv)
{
    if (!kv) return;
    for (uint32_t l = 0; l < kv->n_layer; l++) {
        if (kv->hot) gsmrt_vk_buf_free(dev, &kv->hot[l]);
        if (kv->cold) gsmrt_vk_buf_free(dev, &kv->cold[l]);
    }
    gsmrt_vk_buf_free(dev, &kv->table);
    gsmrt_mem_free(kv->alloc, kv->hot);
    gsmrt_mem_free(kv->alloc, kv->cold);
    gsmrt_mem_free(kv->alloc, kv->entries);
    gsmrt_mem_free(kv->alloc, kv);
}

static uint64_t page_bytes(const struct gsmrt_kv_cache *kv)
{
    return (uint64_t)kv->page_size * kv->row_floats * 4;
}

uint64_t gsmrt_kv_cache_hot_bytes(const struct gsmrt_kv_cache *kv)
{
    return (uint64_t)kv->n_layer * kv->n_hot_slots * page_bytes(kv);
}

uint64_t gsmrt_kv_cache_cold_bytes(const struct gsmrt_kv_cache *kv)
{
    return (uint64_t)kv->n_layer * kv->n_cold_slots * page_bytes(kv);
}

static gsmrt_status alloc_pools(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv, struct gsmrt_err *err)
{
    uint64_t hot_bytes = kv->n_hot_slots * page_bytes(kv), cold_bytes = kv->n_cold_slots * page_bytes(kv);
    uint64_t biggest = hot_bytes > cold_bytes ? hot_bytes : cold_bytes;
    if (biggest > dev->binding_range)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL,
                             "a context of %u positions needs %.1f MiB of KV per layer, more than one binding "
                             "(%.1f MiB) holds; use a smaller context",
                             kv->n_ctx, biggest / 1048576.0, dev->binding_range / 1048576.0);
    kv->hot = gsmrt_mem_calloc(kv->alloc, kv->n_layer, sizeof *kv->hot);
    kv->cold = kv->n_cold_slots ? gsmrt_mem_calloc(kv->alloc, kv->n_layer, sizeof *kv->cold) : NULL;
    if (!kv->hot || (kv->n_cold_slots && !kv->cold))
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache pools");
    gsmrt_status st = GSMRT_OK;
    for (uint32_t l = 0; l < kv->n_layer && st == GSMRT_OK; l++) {
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_KV_HOT, hot_bytes, &kv->hot[l], err);
        if (st == GSMRT_OK && kv->cold) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_KV_COLD, cold_bytes, &kv->cold[l], err);
    }
    return st;
}

gsmrt_status gsmrt_kv_cache_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                   uint32_t n_ctx, uint32_t page_size, uint32_t n_hot_slots,
                                   uint32_t n_cold_slots, struct gsmrt_kv_cache **out, struct gsmrt_err *err)
{
    *out = NULL;
    if (n_ctx == 0 || page_size == 0 || (page_size & (page_size - 1)))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "KV cache of %u positions, pages of %u (a power of two)",
                             n_ctx, page_size);
    struct gsmrt_kv_cache *kv = gsmrt_mem_calloc(dev->alloc, 1, sizeof *kv);
    if (!kv) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache");
    kv->alloc = dev->alloc;
    kv->n_layer = hp->n_layer;
    kv->row_floats = hp->kv_lora_rank + hp->n_rot;
    kv->page_size = page_size;
    kv->n_ctx = n_ctx;
    kv->n_pages_max = (n_ctx + page_size - 1) / page_size;
    kv->n_hot_slots = n_hot_slots ? n_hot_slots : kv->n_pages_max;
    kv->n_cold_slots = n_cold_slots;
    kv->managed = n_hot_slots != 0;
    /* 64 entries (256 bytes) per row step keeps every layer's row at an
     * offset any device's minStorageBufferOffsetAlignment accepts */
    kv->table_stride = (kv->n_pages_max + 63) / 64 * 64;
    uint64_t table_bytes = (uint64_t)kv->n_layer * kv->table_stride * 4;
    gsmrt_status st = GSMRT_OK;
    kv->entries = gsmrt_mem_calloc(kv->alloc, (size_t)kv->n_layer * kv->table_stride, sizeof *kv->entries);
    if (!kv->entries) st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache page table");
    if (st == GSMRT_OK) st = alloc_pools(dev, kv, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, table_bytes, &kv->table, err);
    if (st != GSMRT_OK) {
        gsmrt_kv_cache_destroy(dev, kv);
        return st;
    }
    *out = kv;
    return GSMRT_OK;
}

gsmrt_status gsmrt_kv_cache_reserve(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv,
                                    uint32_t n_pos, struct gsmrt_err *err)
{
    if (n_pos > kv->n_ctx)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "%u positions requested, the context holds %u", n_pos,
                             kv->n_ctx);
    uint32_t need = (n_pos + kv->page_size - 1) / kv->page_size;
    if (!kv->managed && need > kv->n_pages) {
        for (uint32_t l = 0; l < kv->n_layer; l++)
            for (uint32_t p = kv->n_pages; p < need; p++) kv->entries[l * kv->table_stride + p] = p;
        kv->n_pages = need;
        kv->table_dirty = true;
    }
    if (!kv->table_dirty) return GSMRT_OK;
    gsmrt_status st = gsmrt_vk_upload(dev, &kv->table, 0, kv->entries,
                                      (VkDeviceSize)kv->n_layer * kv->table_stride * 4, err);
    kv->table_dirty = st != GSMRT_OK;
    return st;
}

gsmrt_status gsmrt_kv_cache_bind(const struct gsmrt_vk_device *dev, const struct gsmrt_kv_cache *kv, uint32_t il,
                                 struct gsmrt_vk_range *hot, struct gsmrt_vk_range *cold,
                                 struct gsmrt_vk_range *table, struct gsmrt_err *err)
{
    gsmrt_status st = gsmrt_vk_buf_whole(dev, &kv->hot[il], hot, err);
    if (st == GSMRT_OK) st = kv->cold ? gsmrt_vk_buf_whole(dev, &kv->cold[il], cold, err) : (*cold = *hot, GSMRT_OK);
    if (st == GSMRT_OK)
        st = gsmrt_vk_buf_range(dev, &kv->table, (VkDeviceSize)il * kv->table_stride * 4,
                                (VkDeviceSize)kv->table_stride * 4, table, err);
    return st;
}
