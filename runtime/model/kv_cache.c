/* kv_cache.c -- the paged cache of one sequence, for any architecture: its
 * KV layout (model/arch.h) gives each layer's streams of rows; each (layer,
 * stream) line has two pools (HOT device-local, COLD host-visible), a row of
 * the page table on the device, and slots handed out as the sequence grows.
 * GSM's tier policy (model/gsm_decode.c) moves pages of tiered lines between
 * the pools and rewrites their entries; a dense line keeps page p in hot
 * slot p. */
#include <string.h>

#include "base/mem.h"
#include "model/model.h"

void gsmrt_kv_cache_destroy(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv)
{
    if (!kv) return;
    for (uint32_t i = 0; kv->lines && i < kv->n_lines; i++) {
        gsmrt_vk_buf_free(dev, &kv->lines[i].hot);
        gsmrt_vk_buf_free(dev, &kv->lines[i].cold);
    }
    gsmrt_vk_buf_free(dev, &kv->table);
    gsmrt_mem_free(kv->alloc, kv->lines);
    gsmrt_mem_free(kv->alloc, kv->line_of);
    gsmrt_mem_free(kv->alloc, kv->entries);
    gsmrt_mem_free(kv->alloc, kv);
}

uint64_t gsmrt_kv_cache_page_bytes(const struct gsmrt_kv_cache *kv, const struct gsmrt_kv_line *l)
{
    return (uint64_t)kv->page_size * l->s.row_floats * gsmrt_kv_type_bytes(kv->type);
}

uint64_t gsmrt_kv_cache_hot_bytes(const struct gsmrt_kv_cache *kv)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < kv->n_lines; i++) sum += kv->lines[i].n_hot_slots * gsmrt_kv_cache_page_bytes(kv, &kv->lines[i]);
    return sum;
}

uint64_t gsmrt_kv_cache_cold_bytes(const struct gsmrt_kv_cache *kv)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < kv->n_lines; i++) sum += kv->lines[i].n_cold_slots * gsmrt_kv_cache_page_bytes(kv, &kv->lines[i]);
    return sum;
}

struct gsmrt_kv_line *gsmrt_kv_cache_line(const struct gsmrt_kv_cache *kv, uint32_t il, uint32_t stream)
{
    if (il >= kv->n_layer || stream >= kv->line_of[il + 1] - kv->line_of[il]) return NULL;
    return &kv->lines[kv->line_of[il] + stream];
}

/* Rows a line needs for positions [0, n_pos): a ring holds at most its
 * length; a stream of one row per `ratio` positions, one per started block. */
static uint32_t rows_for(const struct gsmrt_kv_stream *s, uint32_t n_pos)
{
    uint32_t rows = (uint32_t)(((uint64_t)n_pos + s->ratio - 1) / s->ratio);
    return s->ring_rows && rows > s->ring_rows ? s->ring_rows : rows;
}

/* The lines of every layer, from the architecture's layout, sized for kv->n_ctx. */
static gsmrt_status plan_lines(struct gsmrt_kv_cache *kv, const struct gsmrt_hparams *hp, uint32_t n_hot_slots,
                               uint32_t n_cold_slots, struct gsmrt_err *err)
{
    struct gsmrt_kv_layer_layout *lay = gsmrt_mem_calloc(kv->alloc, kv->n_layer, sizeof *lay);
    kv->line_of = gsmrt_mem_calloc(kv->alloc, (size_t)kv->n_layer + 1, sizeof *kv->line_of);
    if (!lay || !kv->line_of) {
        gsmrt_mem_free(kv->alloc, lay);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache layout");
    }
    gsmrt_status st = GSMRT_OK;
    for (uint32_t il = 0; il < kv->n_layer && st == GSMRT_OK; il++) {
        hp->arch->kv_layout(hp, il, &lay[il]);
        if (lay[il].n_streams > GSMRT_KV_MAX_STREAMS)
            st = gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s KV layout: layer %u has %u streams (at most %d)",
                               hp->arch->name, il, lay[il].n_streams, GSMRT_KV_MAX_STREAMS);
        for (uint32_t s = 0; s < lay[il].n_streams && st == GSMRT_OK; s++)
            if (lay[il].stream[s].row_floats == 0 || lay[il].stream[s].ratio == 0)
                st = gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                                   "%s KV layout: layer %u stream %u has rows of %u floats, ratio %u (both > 0)",
                                   hp->arch->name, il, s, lay[il].stream[s].row_floats, lay[il].stream[s].ratio);
            else if (kv->type == GSMRT_KV_F16 && lay[il].stream[s].row_floats % 2)
                st = gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                                   "%s KV layout: layer %u stream %u has rows of %u floats; an F16 cache packs two "
                                   "per word (an even width): use the f32 cache type",
                                   hp->arch->name, il, s, lay[il].stream[s].row_floats);
        kv->line_of[il + 1] = kv->line_of[il] + lay[il].n_streams;
    }
    kv->n_lines = kv->line_of[kv->n_layer];
    if (st == GSMRT_OK && !(kv->lines = gsmrt_mem_calloc(kv->alloc, kv->n_lines ? kv->n_lines : 1, sizeof *kv->lines)))
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache lines");
    uint32_t most_pages = 0;
    for (uint32_t il = 0; il < kv->n_layer && st == GSMRT_OK; il++)
        for (uint32_t s = 0; s < lay[il].n_streams; s++) {
            struct gsmrt_kv_line *l = &kv->lines[kv->line_of[il] + s];
            l->layer = il;
            l->stream = s;
            l->s = lay[il].stream[s];
            l->n_rows_max = rows_for(&l->s, kv->n_ctx);
            l->n_pages_max = (l->n_rows_max + kv->page_size - 1) / kv->page_size;
            l->managed = l->s.tiered && n_hot_slots != 0;
            l->n_hot_slots = l->managed ? n_hot_slots : l->n_pages_max;
            l->n_cold_slots = l->s.tiered ? n_cold_slots : 0;
            if (l->n_pages_max > most_pages) most_pages = l->n_pages_max;
        }
    /* 64 entries (256 bytes) per row step keeps every line's row at an
     * offset any device's minStorageBufferOffsetAlignment accepts */
    kv->table_stride = (most_pages + 63) / 64 * 64;
    gsmrt_mem_free(kv->alloc, lay);
    return st;
}

static gsmrt_status alloc_pools(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv, struct gsmrt_err *err)
{
    gsmrt_status st = GSMRT_OK;
    for (uint32_t i = 0; i < kv->n_lines && st == GSMRT_OK; i++) {
        struct gsmrt_kv_line *l = &kv->lines[i];
        uint64_t hot_bytes = l->n_hot_slots * gsmrt_kv_cache_page_bytes(kv, l), cold_bytes = l->n_cold_slots * gsmrt_kv_cache_page_bytes(kv, l);
        uint64_t biggest = hot_bytes > cold_bytes ? hot_bytes : cold_bytes;
        if (biggest > dev->binding_range)
            return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL,
                                 "a context of %u positions needs %.1f MiB of KV per layer, more than one binding "
                                 "(%.1f MiB) holds; use a smaller context",
                                 kv->n_ctx, biggest / 1048576.0, dev->binding_range / 1048576.0);
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_KV_HOT, hot_bytes, &l->hot, err);
        if (st == GSMRT_OK && l->n_cold_slots)
            st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_KV_COLD, cold_bytes, &l->cold, err);
    }
    return st;
}

gsmrt_status gsmrt_kv_cache_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                   uint32_t n_ctx, uint32_t page_size, uint32_t n_hot_slots,
                                   uint32_t n_cold_slots, enum gsmrt_kv_type type, struct gsmrt_kv_cache **out,
                                   struct gsmrt_err *err)
{
    *out = NULL;
    if (n_ctx == 0 || page_size == 0 || (page_size & (page_size - 1)))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "KV cache of %u positions, pages of %u (a power of two)",
                             n_ctx, page_size);
    if (!hp->arch) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "KV cache: hyper-parameters not loaded");
    if (type != GSMRT_KV_F32 && type != GSMRT_KV_F16)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "KV cache type %d (f32 or f16)", (int)type);
    struct gsmrt_kv_cache *kv = gsmrt_mem_calloc(dev->alloc, 1, sizeof *kv);
    if (!kv) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache");
    kv->alloc = dev->alloc;
    kv->n_layer = hp->n_layer;
    kv->page_size = page_size;
    kv->type = type;
    kv->n_ctx = n_ctx;
    gsmrt_status st = plan_lines(kv, hp, n_hot_slots, n_cold_slots, err);
    uint64_t table_bytes = (uint64_t)kv->n_lines * kv->table_stride * 4;
    if (st == GSMRT_OK &&
        !(kv->entries = gsmrt_mem_calloc(kv->alloc, (size_t)kv->n_lines * kv->table_stride, sizeof *kv->entries)))
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "KV cache page table");
    if (st == GSMRT_OK) st = alloc_pools(dev, kv, err);
    if (st == GSMRT_OK)
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, table_bytes ? table_bytes : 256, &kv->table, err);
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
    for (uint32_t i = 0; i < kv->n_lines; i++) {
        struct gsmrt_kv_line *l = &kv->lines[i];
        uint32_t need = (rows_for(&l->s, n_pos) + kv->page_size - 1) / kv->page_size;
        if (l->managed || need <= l->n_pages) continue;
        for (uint32_t p = l->n_pages; p < need; p++) kv->entries[i * kv->table_stride + p] = p;
        l->n_pages = need;
        kv->table_dirty = true;
    }
    if (!kv->table_dirty) return GSMRT_OK;
    gsmrt_status st = gsmrt_vk_upload(dev, &kv->table, 0, kv->entries,
                                      (VkDeviceSize)kv->n_lines * kv->table_stride * 4, err);
    kv->table_dirty = st != GSMRT_OK;
    return st;
}

gsmrt_status gsmrt_kv_cache_bind(const struct gsmrt_vk_device *dev, const struct gsmrt_kv_cache *kv, uint32_t il,
                                 uint32_t stream, struct gsmrt_vk_range *hot, struct gsmrt_vk_range *cold,
                                 struct gsmrt_vk_range *table, struct gsmrt_err *err)
{
    const struct gsmrt_kv_line *l = gsmrt_kv_cache_line(kv, il, stream);
    if (!l)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "KV cache: layer %u has no stream %u", il, stream);
    uint32_t line = (uint32_t)(l - kv->lines);
    gsmrt_status st = gsmrt_vk_buf_whole(dev, &l->hot, hot, err);
    if (st == GSMRT_OK) st = l->n_cold_slots ? gsmrt_vk_buf_whole(dev, &l->cold, cold, err) : (*cold = *hot, GSMRT_OK);
    if (st == GSMRT_OK)
        st = gsmrt_vk_buf_range(dev, &kv->table, (VkDeviceSize)line * kv->table_stride * 4,
                                (VkDeviceSize)kv->table_stride * 4, table, err);
    return st;
}
