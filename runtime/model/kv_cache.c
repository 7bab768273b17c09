/* kv_cache.c -- the paged latent cache of one sequence: a pool per layer of
 * fixed-size pages, a page table on the device, and slots handed out as the
 * sequence grows. (GSM's tiers build on this: pages are its unit.) */
#include <string.h>

#include "base/mem.h"
#include "model/model.h"

void gsmrt_kv_cache_destroy(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv)
{
    if (!kv) return;
    for (uint32_t l = 0; kv->pools && l < kv->n_layer; l++) gsmrt_vk_buf_free(dev, &kv->pools[l]);
    gsmrt_vk_buf_free(dev, &kv->table);
    gsmrt_mem_free(kv->alloc, kv->pools);
    gsmrt_mem_free(kv->alloc, kv->page_slot);
    gsmrt_mem_free(kv->alloc, kv);
}

gsmrt_status gsmrt_kv_cache_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                   uint32_t n_ctx, uint32_t page_size, struct gsmrt_kv_cache **out,
                                   struct gsmrt_err *err)
{
    *out = NULL;
    if (n_ctx == 0 || page_size == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "KV cache of %u positions, pages of %u", n_ctx,
                             page_size);
    struct gsmrt_kv_cache *kv = gsmrt_mem_calloc(dev->alloc, 1, sizeof *kv);
    if (!kv) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache");
    kv->alloc = dev->alloc;
    kv->n_layer = hp->n_layer;
    kv->row_floats = hp->kv_lora_rank + hp->n_rot;
    kv->page_size = page_size;
    kv->n_ctx = n_ctx;
    kv->n_pages_max = (n_ctx + page_size - 1) / page_size;
    gsmrt_status st = GSMRT_OK;
    kv->pools = gsmrt_mem_calloc(kv->alloc, kv->n_layer, sizeof *kv->pools);
    kv->page_slot = gsmrt_mem_calloc(kv->alloc, kv->n_pages_max, sizeof *kv->page_slot);
    if (!kv->pools || !kv->page_slot) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache page table");
        goto fail;
    }
    uint64_t pool_bytes = (uint64_t)kv->n_pages_max * page_size * kv->row_floats * 4;
    if (pool_bytes > dev->binding_range) {
        st = gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL,
                           "a context of %u positions needs %.1f MiB of KV per layer, more than one binding "
                           "(%.1f MiB) holds; use a smaller --ctx-size",
                           n_ctx, pool_bytes / 1048576.0, dev->binding_range / 1048576.0);
        goto fail;
    }
    for (uint32_t l = 0; l < kv->n_layer && st == GSMRT_OK; l++)
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_KV_HOT, pool_bytes, &kv->pools[l], err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, kv->n_pages_max * 4, &kv->table, err);
    if (st != GSMRT_OK) goto fail;
    *out = kv;
    return GSMRT_OK;
fail:
    gsmrt_kv_cache_destroy(dev, kv);
    return st;
}

gsmrt_status gsmrt_kv_cache_reserve(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv,
                                    uint32_t n_pos, struct gsmrt_err *err)
{
    if (n_pos > kv->n_ctx)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "%u positions requested, the context holds %u", n_pos,
                             kv->n_ctx);
    uint32_t need = (n_pos + kv->page_size - 1) / kv->page_size;
    if (need <= kv->n_pages) return GSMRT_OK;
    /* Slots in order for now; GSM's pool hands them out by tier. */
    for (uint32_t p = kv->n_pages; p < need; p++) kv->page_slot[p] = p;
    uint32_t old = kv->n_pages;
    kv->n_pages = need;
    return gsmrt_vk_upload(dev, &kv->table, (VkDeviceSize)old * 4, kv->page_slot + old, (VkDeviceSize)(need - old) * 4,
                           err);
}
