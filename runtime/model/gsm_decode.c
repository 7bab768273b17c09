/* gsm_decode.c -- GSM in the decoder, first cut (see gsm_decode.h). */
#include <string.h>

#include "base/mem.h"
#include "model/gsm_decode.h"

void gsmrt_gsm_decode_destroy(struct gsmrt_vk_device *dev, struct gsmrt_gsm_decode *g)
{
    if (!g) return;
    for (uint32_t l = 0; g->sums && l < g->n_layer; l++) gsmrt_vk_buf_free(dev, &g->sums[l]);
    struct gsmrt_vk_buf *all[] = {&g->summ_list, &g->active, &g->last_pos, &g->cold_info, &g->cold_slots,
                                  &g->ub,        &g->sel,    &g->info,     &g->partial};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gsmrt_vk_buf_free(dev, all[i]);
    gsmrt_mem_free(g->alloc, g->sums);
    gsmrt_mem_free(g->alloc, g->host);
    gsmrt_mem_free(g->alloc, g->last_info);
    gsmrt_mem_free(g->alloc, g);
}

gsmrt_status gsmrt_gsm_decode_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                     const struct gsmrt_kv_cache *kv, const struct gsmrt_gsm_decode_config *cfg,
                                     struct gsmrt_gsm_decode **out, struct gsmrt_err *err)
{
    *out = NULL;
    if (kv->n_pages_max > 256 + cfg->sink_pages + cfg->window_pages + cfg->hot_pages || cfg->window_pages == 0 ||
        !(cfg->threshold >= 0.0f && cfg->threshold < 1.0f))
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "GSM: %u pages (at most 256 cold), window of %u pages (at least 1), threshold %g "
                             "(in [0, 1))",
                             kv->n_pages_max, cfg->window_pages, cfg->threshold);
    struct gsmrt_gsm_decode *g = gsmrt_mem_calloc(dev->alloc, 1, sizeof *g);
    if (!g) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "GSM state");
    g->alloc = dev->alloc;
    g->cfg = *cfg;
    g->n_layer = hp->n_layer;
    g->n_heads = hp->n_head;
    g->row = kv->row_floats;
    g->page_size = kv->page_size;
    g->n_pages_max = kv->n_pages_max;
    uint64_t np = g->n_pages_max, H = g->n_heads, KVL = hp->kv_lora_rank;
    gsmrt_status st = GSMRT_OK;
    g->sums = gsmrt_mem_calloc(g->alloc, g->n_layer, sizeof *g->sums);
    g->host = gsmrt_mem_calloc(g->alloc, 3 * np, sizeof *g->host);
    g->last_info = gsmrt_mem_calloc(g->alloc, 4 * H, sizeof *g->last_info);
    if (!g->sums || !g->host || !g->last_info) st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "GSM lists");
    for (uint32_t l = 0; l < g->n_layer && st == GSMRT_OK; l++)
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, np * 2 * g->row * 4, &g->sums[l], err);
    struct { struct gsmrt_vk_buf *b; uint64_t bytes; } plan[] = {
        {&g->summ_list, np * 8}, {&g->active, np * 4}, {&g->last_pos, 16},     {&g->cold_info, np * 8},
        {&g->cold_slots, np * 4}, {&g->ub, H * np * 4}, {&g->sel, H * np * 4}, {&g->info, H * 16},
        {&g->partial, H * (gsmrt_k_attn_splits(kv->n_ctx) + np) * (2 + KVL) * 4},
    };
    for (size_t i = 0; i < sizeof plan / sizeof plan[0] && st == GSMRT_OK; i++)
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, plan[i].bytes, plan[i].b, err);
    if (st != GSMRT_OK) {
        gsmrt_gsm_decode_destroy(dev, g);
        return st;
    }
    *out = g;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_decode_plan(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev,
                                   const struct gsmrt_kv_cache *kv, uint32_t n_keys, uint32_t n_tok,
                                   struct gsmrt_err *err)
{
    uint32_t P = g->page_size, n_full = n_keys / P, n_pages = (n_keys + P - 1) / P;
    if (n_keys < g->n_summarized * P) {   /* the cache was cut back: a new sequence */
        g->n_summarized = n_full;
        g->n_eligible_steps = 0;
    }
    /* pages filled since the last step get their summaries */
    g->n_summ = 0;
    uint32_t *list = g->host;
    for (uint32_t p = g->n_summarized; p < n_full; p++) {
        list[2 * g->n_summ] = kv->page_slot[p];
        list[2 * g->n_summ + 1] = P;
        g->n_summ++;
    }
    gsmrt_status st = g->n_summ ? gsmrt_vk_upload(dev, &g->summ_list, 0, list, g->n_summ * 8, err) : GSMRT_OK;
    if (st != GSMRT_OK) return st;
    /* the gate, for a decode token past min_context with cold pages to gate */
    g->use = false;
    if (n_tok != 1 || n_keys < g->cfg.min_context) return GSMRT_OK;
    if (g->n_eligible_steps++ < g->cfg.warmup_steps) return GSMRT_OK;   /* warm-up: still dense */
    uint32_t win_begin = n_pages > g->cfg.window_pages ? n_pages - g->cfg.window_pages : 0;
    uint32_t hot_begin = win_begin > g->cfg.hot_pages ? win_begin - g->cfg.hot_pages : 0;
    uint32_t *active = g->host, *cold = g->host + g->n_pages_max, *slots = g->host + 2 * g->n_pages_max;
    g->n_active = g->n_cold = 0;
    for (uint32_t p = 0; p < n_pages; p++) {
        if (p < g->cfg.sink_pages || p >= hot_begin) {
            active[g->n_active++] = kv->page_slot[p];
        } else {
            cold[2 * g->n_cold] = kv->page_slot[p];
            cold[2 * g->n_cold + 1] = P;
            slots[g->n_cold++] = kv->page_slot[p];
        }
    }
    if (g->n_cold == 0 || g->n_cold > 256) return GSMRT_OK;
    /* the newest page is last in the active list: only its rows are partial */
    g->n_active_keys = n_keys - g->n_cold * P;
    int32_t last = (int32_t)g->n_active_keys - 1;
    st = gsmrt_vk_upload(dev, &g->active, 0, active, g->n_active * 4, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &g->last_pos, 0, &last, 4, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &g->cold_info, 0, cold, g->n_cold * 8, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &g->cold_slots, 0, slots, g->n_cold * 4, err);
    g->use = st == GSMRT_OK;
    return st;
}

gsmrt_status gsmrt_gsm_decode_summarize(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                        const struct gsmrt_vk_range *pool, struct gsmrt_err *err)
{
    if (g->n_summ == 0) return GSMRT_OK;
    struct gsmrt_vk_range list, sum;
    gsmrt_status st = gsmrt_vk_buf_whole(rec->dev, &g->summ_list, &list, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_whole(rec->dev, &g->sums[il], &sum, err);
    if (st == GSMRT_OK) st = gsmrt_k_page_summary(rec, pool, &list, &sum, g->n_summ, g->row, g->page_size, err);
    return st;
}

gsmrt_status gsmrt_gsm_decode_attend(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                     const struct gsmrt_k_attn_gsm *base, const struct gsmrt_vk_range *qa,
                                     const struct gsmrt_vk_range *qr, const struct gsmrt_vk_range *pool,
                                     const struct gsmrt_vk_range *out, struct gsmrt_err *err)
{
    struct gsmrt_vk_range r[9];
    struct gsmrt_vk_buf *b[9] = {&g->active, &g->last_pos, &g->sums[il], &g->cold_info, &g->cold_slots,
                                 &g->ub,     &g->sel,      &g->info,     &g->partial};
    for (int i = 0; i < 9; i++) {
        gsmrt_status st = gsmrt_vk_buf_whole(rec->dev, b[i], &r[i], err);
        if (st != GSMRT_OK) return st;
    }
    struct gsmrt_k_attn_gsm p = *base;
    p.n_active_keys = g->n_active_keys;
    p.n_cold = g->n_cold;
    p.threshold = g->cfg.threshold;
    /* keep: the cold pages sit in the same pool as the active ones */
    return gsmrt_k_attn_gsm(rec, &p, qa, qr, pool, &r[0], &r[1], pool, &r[2], &r[3], &r[4], &r[5], &r[6], &r[7],
                            &r[8], out, err);
}

gsmrt_status gsmrt_gsm_decode_finish(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, struct gsmrt_err *err)
{
    g->n_summarized += g->n_summ;
    g->n_summ = 0;
    if (!g->use) return GSMRT_OK;
    gsmrt_status st = gsmrt_vk_download(dev, &g->info, 0, g->last_info, (VkDeviceSize)g->n_heads * 16, err);
    if (st != GSMRT_OK) return st;
    g->total_steps++;
    for (uint32_t h = 0; h < g->n_heads; h++) {
        g->total_cold += g->n_cold;
        g->total_computed += (uint64_t)g->last_info[4 * h];
    }
    return GSMRT_OK;
}
