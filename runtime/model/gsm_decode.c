/* gsm_decode.c -- GSM in the decoder (see gsm_decode.h). The policy is
 * gsm/ (page table, slot pools, tiers); this file turns it into page-table
 * entries, page copies and the per-layer lists the kernels read. */
#include <math.h>
#include <string.h>

#include "base/mem.h"
#include "model/gsm_decode.h"

static uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

/* The groups of layer l: from the calibration, else one group from cfg. */
static void layer_groups(const struct gsmrt_gsm_config *cfg, const struct gsmrt_gsm_calib *calib, uint32_t l,
                         uint32_t *n_groups, const struct gsmrt_gsm_group_policy **groups,
                         struct gsmrt_gsm_group_policy *one)
{
    if (calib) {
        *n_groups = calib->layers[l].n_groups;
        *groups = calib->layers[l].groups;
        return;
    }
    *one = (struct gsmrt_gsm_group_policy){cfg->sink_tokens, cfg->window, cfg->hot_pages, (float)cfg->gate_threshold};
    *n_groups = 1;
    *groups = one;
}

/* The tiering policy of a layer: the widest sink and window, the largest budget. */
static void layer_tier_policy(const struct gsmrt_gsm_config *cfg, const struct gsmrt_gsm_group_policy *groups,
                              uint32_t n_groups, struct gsmrt_gsm_tier_policy *pol)
{
    gsmrt_gsm_tier_policy_from_config(cfg, pol);
    pol->sink_tokens = pol->window = pol->hot_pages = 0;
    for (uint32_t g = 0; g < n_groups; g++) {
        if (groups[g].sink_tokens > pol->sink_tokens) pol->sink_tokens = groups[g].sink_tokens;
        if (groups[g].window > pol->window) pol->window = groups[g].window;
        if (groups[g].hot_pages > pol->hot_pages) pol->hot_pages = groups[g].hot_pages;
    }
}

void gsmrt_gsm_decode_kv_slots(const struct gsmrt_gsm_config *cfg, const struct gsmrt_gsm_calib *calib, bool swap,
                               uint32_t n_ctx, uint32_t max_step_tokens, uint32_t *n_hot, uint32_t *n_cold)
{
    uint32_t n_pages_max = ceil_div(n_ctx, cfg->page_size), need = 0;
    uint32_t n_layer = calib ? calib->model.n_layer : 1;
    for (uint32_t l = 0; l < n_layer; l++) {
        uint32_t ng;
        const struct gsmrt_gsm_group_policy *gr;
        struct gsmrt_gsm_group_policy one;
        struct gsmrt_gsm_tier_policy pol;
        layer_groups(cfg, calib, l, &ng, &gr, &one);
        layer_tier_policy(cfg, gr, ng, &pol);
        uint32_t k = gsmrt_gsm_hot_pages_needed(cfg->page_size, pol.sink_tokens, pol.window, pol.hot_pages);
        if (k > need) need = k;
    }
    need += ceil_div(max_step_tokens, cfg->page_size) + 1;   /* pages one step can start */
    *n_hot = swap && need < n_pages_max ? need : 0;          /* 0: dense-sized */
    *n_cold = *n_hot ? n_pages_max : 0;
}

void gsmrt_gsm_decode_destroy(struct gsmrt_vk_device *dev, struct gsmrt_gsm_decode *g)
{
    if (!g) return;
    struct gsmrt_vk_buf **per_layer[] = {&g->sums, &g->summ_list, &g->active, &g->last_pos,
                                         &g->cold_list, &g->heads, &g->info, &g->mass};
    for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) {
        for (uint32_t l = 0; *per_layer[i] && l < g->n_layer; l++) gsmrt_vk_buf_free(dev, &(*per_layer[i])[l]);
        gsmrt_mem_free(g->alloc, *per_layer[i]);
    }
    gsmrt_vk_buf_free(dev, &g->ub);
    gsmrt_vk_buf_free(dev, &g->sel);
    gsmrt_vk_buf_free(dev, &g->partial);
    for (uint32_t l = 0; l < g->n_layer; l++) {
        if (g->hot) gsmrt_gsm_slot_pool_deinit(&g->hot[l]);
        if (g->cold) gsmrt_gsm_slot_pool_deinit(&g->cold[l]);
    }
    gsmrt_gsm_page_table_destroy(g->pt);
    void *host[] = {g->head_group,    g->group,     g->pol,         g->hot,         g->cold,
                    g->moves,         g->prefetched, g->prefetch_want, g->n_prefetch_want, g->host,
                    g->mass_host,     g->info_host, g->listed_page, g->listed_cold, g->layer_gated,
                    g->dense_until};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) gsmrt_mem_free(g->alloc, host[i]);
    gsmrt_mem_free(g->alloc, g);
}

gsmrt_status gsmrt_gsm_decode_set_calib(struct gsmrt_gsm_decode *g, const struct gsmrt_gsm_calib *calib,
                                        struct gsmrt_err *err)
{
    const uint32_t G = GSMRT_GSM_MAX_GROUPS, H = g->n_heads;
    if (calib && (calib->model.n_layer != g->n_layer || calib->model.n_head != H))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "GSM: a calibration for %u layers of %u heads, not %u of %u",
                             calib->model.n_layer, calib->model.n_head, g->n_layer, H);
    /* check everything first: on failure the groups in use stay as they were */
    uint32_t n_groups = 0;
    for (uint32_t l = 0; l < g->n_layer; l++) {
        uint32_t ng;
        const struct gsmrt_gsm_group_policy *gr;
        struct gsmrt_gsm_group_policy one;
        struct gsmrt_gsm_tier_policy pol;
        layer_groups(&g->cfg, calib, l, &ng, &gr, &one);
        layer_tier_policy(&g->cfg, gr, ng, &pol);
        if (ng > G)
            return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "GSM: layer %u has %u head groups, at most %u", l, ng, G);
        uint32_t need = gsmrt_gsm_hot_pages_needed(g->page_size, pol.sink_tokens, pol.window, pol.hot_pages);
        if (g->swap && g->pt && need + 1 > g->hot[l].n_slots)
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                                 "GSM: layer %u of this calibration pins %u hot pages; the session's device-local "
                                 "pool holds %u (create the session with this calibration)",
                                 l, need, g->hot[l].n_slots);
        if (ng > n_groups) n_groups = ng;
    }
    g->n_groups = n_groups;
    for (uint32_t l = 0; l < g->n_layer; l++) {
        uint32_t ng;
        const struct gsmrt_gsm_group_policy *gr;
        struct gsmrt_gsm_group_policy one;
        layer_groups(&g->cfg, calib, l, &ng, &gr, &one);
        for (uint32_t k = 0; k < ng; k++) {
            g->group[l * G + k] = gr[k];
            /* the session's threshold caps the calibration's: 0 stays exact */
            if ((float)g->cfg.gate_threshold < gr[k].threshold) g->group[l * G + k].threshold = (float)g->cfg.gate_threshold;
        }
        for (uint32_t h = 0; h < H; h++) g->head_group[l * H + h] = calib ? calib->layers[l].head_group[h] : 0;
        layer_tier_policy(&g->cfg, gr, ng, &g->pol[l]);
    }
    g->calib = calib;
    return GSMRT_OK;
}

/* Host arrays and policy tables. */
static gsmrt_status create_policy(struct gsmrt_gsm_decode *g, const struct gsmrt_kv_cache *kv,
                                  const struct gsmrt_gsm_calib *calib, struct gsmrt_err *err)
{
    const gsmrt_allocator *a = g->alloc;
    size_t L = g->n_layer, H = g->n_heads, NP = g->n_pages_max, G = GSMRT_GSM_MAX_GROUPS;
    g->head_group = gsmrt_mem_calloc(a, L * H, sizeof *g->head_group);
    g->group = gsmrt_mem_calloc(a, L * G, sizeof *g->group);
    g->pol = gsmrt_mem_calloc(a, L, sizeof *g->pol);
    g->hot = gsmrt_mem_calloc(a, L, sizeof *g->hot);
    g->cold = gsmrt_mem_calloc(a, L, sizeof *g->cold);
    g->moves = gsmrt_mem_calloc(a, L * NP, sizeof *g->moves);
    g->prefetched = gsmrt_mem_calloc(a, L * NP, 1);
    g->prefetch_want = gsmrt_mem_calloc(a, L * NP, sizeof *g->prefetch_want);
    g->n_prefetch_want = gsmrt_mem_calloc(a, L, sizeof *g->n_prefetch_want);
    g->host = gsmrt_mem_calloc(a, 8 * NP + 2 * H + 4, sizeof *g->host);
    g->mass_host = gsmrt_mem_calloc(a, (3 + H) * NP, sizeof *g->mass_host);
    g->info_host = gsmrt_mem_calloc(a, 4 * H, sizeof *g->info_host);
    g->listed_page = gsmrt_mem_calloc(a, L * NP, sizeof *g->listed_page);
    g->listed_cold = gsmrt_mem_calloc(a, L * NP, 1);
    g->layer_gated = gsmrt_mem_calloc(a, L, 1);
    g->dense_until = gsmrt_mem_calloc(a, L, sizeof *g->dense_until);
    if (!g->head_group || !g->group || !g->pol || !g->hot || !g->cold || !g->moves || !g->prefetched ||
        !g->prefetch_want || !g->n_prefetch_want || !g->host || !g->mass_host || !g->info_host || !g->listed_page ||
        !g->listed_cold || !g->layer_gated || !g->dense_until)
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "GSM state");
    gsmrt_status st = gsmrt_gsm_decode_set_calib(g, calib, err);
    if (st != GSMRT_OK) return st;
    /* slot pools: physical under swap; under keep they only keep the books */
    st = gsmrt_gsm_page_table_create(a, g->n_layer, g->n_pages_max, g->page_size, &g->pt, err);
    const struct gsmrt_kv_line *l0 = gsmrt_kv_cache_line(kv, 0, 0);
    uint32_t n_hot = g->swap ? l0->n_hot_slots : g->n_pages_max, n_cold = g->swap ? l0->n_cold_slots : g->n_pages_max;
    for (uint32_t l = 0; l < g->n_layer && st == GSMRT_OK; l++) {
        st = gsmrt_gsm_slot_pool_init(&g->hot[l], a, n_hot, err);
        if (st == GSMRT_OK) st = gsmrt_gsm_slot_pool_init(&g->cold[l], a, n_cold, err);
    }
    return st;
}

static gsmrt_status create_buffers(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, uint32_t kv_lora,
                                   struct gsmrt_err *err)
{
    uint64_t NP = g->n_pages_max, H = g->n_heads;
    struct { struct gsmrt_vk_buf **b; uint64_t bytes; } per_layer[] = {
        {&g->sums, NP * 2 * g->row * 4}, {&g->summ_list, NP * 12}, {&g->active, NP * 4}, {&g->last_pos, 16},
        {&g->cold_list, NP * 16},        {&g->heads, H * 8},       {&g->info, H * 16},   {&g->mass, (3 + H) * NP * 4},
    };
    gsmrt_status st = GSMRT_OK;
    for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0] && st == GSMRT_OK; i++) {
        *per_layer[i].b = gsmrt_mem_calloc(g->alloc, g->n_layer, sizeof **per_layer[i].b);
        if (!*per_layer[i].b) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "GSM buffers");
        for (uint32_t l = 0; l < g->n_layer && st == GSMRT_OK; l++)
            st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, per_layer[i].bytes, &(*per_layer[i].b)[l], err);
    }
    uint64_t slots = gsmrt_k_attn_splits(g->n_pages_max * g->page_size) + NP;
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, H * NP * 4, &g->ub, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, H * NP * 4, &g->sel, err);
    if (st == GSMRT_OK)
        st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, H * slots * (2 + kv_lora) * 4, &g->partial, err);
    return st;
}

/* GSM tiers one latent row per position and layer, read by every head (MLA):
 * the cache must have exactly that, one tiered stream per layer, alike in
 * every layer. (GQA and deepseek4's streams need their own tier policy.) */
static gsmrt_status check_layout(const struct gsmrt_kv_cache *kv, struct gsmrt_err *err)
{
    const struct gsmrt_kv_line *l0 = gsmrt_kv_cache_line(kv, 0, 0);
    for (uint32_t il = 0; il < kv->n_layer; il++) {
        const struct gsmrt_kv_line *l = gsmrt_kv_cache_line(kv, il, 0);
        if (kv->line_of[il + 1] - kv->line_of[il] != 1 || l->s.role != GSMRT_KV_ROLE_LATENT || !l->s.tiered ||
            l->s.ratio != 1 || l->s.ring_rows != 0 || l->s.row_floats != l0->s.row_floats)
            return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                                 "GSM: layer %u's KV layout is not one tiered latent row per position (GSM supports "
                                 "the MLA layout only so far)",
                                 il);
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_decode_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                     const struct gsmrt_kv_cache *kv, const struct gsmrt_gsm_config *cfg, bool swap,
                                     const struct gsmrt_gsm_calib *calib, struct gsmrt_gsm_decode **out,
                                     struct gsmrt_err *err)
{
    *out = NULL;
    if (kv->page_size > GSMRT_K_GSM_MAX_PAGE_SIZE)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "GSM: pages of %u positions (at most %u)", kv->page_size,
                             GSMRT_K_GSM_MAX_PAGE_SIZE);
    gsmrt_status st = check_layout(kv, err);
    if (st != GSMRT_OK) return st;
    const struct gsmrt_kv_line *l0 = gsmrt_kv_cache_line(kv, 0, 0);
    if (swap && !l0->n_cold_slots)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "GSM swap needs a KV cache with a cold pool");
    struct gsmrt_gsm_decode *g = gsmrt_mem_calloc(dev->alloc, 1, sizeof *g);
    if (!g) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "GSM state");
    g->alloc = dev->alloc;
    g->cfg = *cfg;
    g->swap = swap;
    g->n_layer = hp->n_layer;
    g->n_heads = hp->n_head;
    g->row = l0->s.row_floats;
    g->kv_type = kv->type;
    g->row_bytes = l0->s.row_floats * gsmrt_kv_type_bytes(kv->type);
    g->page_size = kv->page_size;
    g->n_pages_max = l0->n_pages_max;
    st = create_policy(g, kv, calib, err);
    if (st == GSMRT_OK) st = create_buffers(g, dev, hp->kv_lora_rank, err);
    if (st != GSMRT_OK) {
        gsmrt_gsm_decode_destroy(dev, g);
        return st;
    }
    *out = g;
    return GSMRT_OK;
}

/* ---- planning --------------------------------------------------------------- */

static uint32_t entry_of(const struct gsmrt_gsm_decode *g, uint32_t l, uint32_t p)
{
    uint32_t at = gsmrt_gsm_page_table_at(g->pt, l, p);
    if (!g->swap) return p;   /* keep: the dense layout, page p in slot p */
    return g->pt->slot[at] | (g->pt->tier[at] == GSMRT_GSM_TIER_COLD ? GSMRT_KV_COLD : 0u);
}

/* Tiers and the page table for a step writing positions [pos0, n_keys);
 * kv's entries follow. */
static gsmrt_status plan_tiers(struct gsmrt_gsm_decode *g, struct gsmrt_kv_cache *kv, uint32_t pos0,
                               uint32_t n_keys, struct gsmrt_err *err)
{
    struct gsmrt_gsm_page_table *pt = g->pt;
    uint32_t NP = g->n_pages_max;
    gsmrt_status st = GSMRT_OK;
    if (pos0 < pt->n_pos) {   /* cut back: a new sequence or a rolled-back turn */
        st = gsmrt_gsm_page_table_truncate(pt, pos0, g->hot, g->cold, err);
        if (st != GSMRT_OK) return st;
        if (g->n_summarized > pos0 / g->page_size) g->n_summarized = pos0 / g->page_size;
        if (pos0 == 0) {
            g->n_eligible_steps = 0;
            memset(g->dense_until, 0, g->n_layer * sizeof *g->dense_until);
        }
        for (uint32_t l = 0; l < g->n_layer; l++) {
            g->n_prefetch_want[l] = 0;
            memset(g->prefetched + (size_t)l * NP + pt->n_pages, 0, NP - pt->n_pages);
        }
    }
    /* per layer: demotions, promotions, prefetches; every layer's copies are
     * recorded together, demotions before promotions. The hot slots the
     * step's new pages need are held back from the plan, so promotions and
     * prefetches cannot take them. */
    g->n_moves = 0;
    uint32_t n_new = (n_keys + g->page_size - 1) / g->page_size - pt->n_pages, *held = g->host;
    for (uint32_t l = 0; l < g->n_layer && st == GSMRT_OK; l++) {
        struct gsmrt_gsm_plan_result r;
        struct gsmrt_gsm_move *mv = g->moves + g->n_moves;
        size_t n_room = 0;
        uint32_t n_held = 0;
        st = gsmrt_gsm_tiers_make_room(pt, l, n_new, &g->pol[l], &g->hot[l], &g->cold[l], mv, &n_room, err);
        while (st == GSMRT_OK && n_held < n_new) st = gsmrt_gsm_slot_pool_take(&g->hot[l], &held[n_held++], err);
        if (st == GSMRT_OK)
            st = gsmrt_gsm_tiers_plan(pt, l, &g->pol[l], &g->hot[l], &g->cold[l],
                                      g->cfg.prefetch ? g->prefetch_want + (size_t)l * NP : NULL,
                                      g->n_prefetch_want[l], mv + n_room, &r, err);
        while (n_held > 0) gsmrt_gsm_slot_pool_give(&g->hot[l], held[--n_held], NULL);
        if (st != GSMRT_OK) break;
        g->stats.moves_demoted += n_room;
        mv += n_room;
        g->n_moves += (uint32_t)(n_room + r.n_moves);
        g->stats.moves_demoted += r.n_demoted;
        g->stats.moves_promoted += r.n_promoted - r.n_prefetched;
        g->stats.moves_prefetched += r.n_prefetched;
        for (size_t i = r.n_moves - r.n_prefetched; i < r.n_moves; i++) g->prefetched[(size_t)l * NP + mv[i].page] = 1;
    }
    if (st == GSMRT_OK && n_keys > pt->n_pos) st = gsmrt_gsm_page_table_grow(pt, n_keys, g->hot, err);
    if (st != GSMRT_OK) return st;
    for (uint32_t l = 0; l < g->n_layer; l++)
        for (uint32_t p = 0; p < pt->n_pages; p++)
            kv->entries[kv->line_of[l] * kv->table_stride + p] = entry_of(g, l, p);   /* layer l's latent line */
    for (uint32_t l = 0; l < g->n_layer; l++) gsmrt_kv_cache_line(kv, l, 0)->n_pages = pt->n_pages;
    kv->table_dirty = true;
    return GSMRT_OK;
}

/* Summaries of the pages filled since the last step (the same pages in
 * every layer; their entries differ under swap). */
static gsmrt_status plan_summaries(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, uint32_t n_keys,
                                   struct gsmrt_err *err)
{
    uint32_t n_full = n_keys / g->page_size;
    g->n_summ = n_full > g->n_summarized ? n_full - g->n_summarized : 0;
    for (uint32_t l = 0; l < g->n_layer && g->n_summ; l++) {
        for (uint32_t i = 0; i < g->n_summ; i++) {
            uint32_t p = g->n_summarized + i;
            g->host[3 * i] = entry_of(g, l, p);
            g->host[3 * i + 1] = g->page_size;
            g->host[3 * i + 2] = p;
        }
        gsmrt_status st = gsmrt_vk_upload(dev, &g->summ_list[l], 0, g->host, (VkDeviceSize)g->n_summ * 12, err);
        if (st != GSMRT_OK) return st;
    }
    return GSMRT_OK;
}

/* One layer's lists for a gated step: pinned pages (exact part), the others
 * with their force masks, and each head's (group, threshold). */
static gsmrt_status plan_layer_lists(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, uint32_t l,
                                     uint32_t n_keys, struct gsmrt_err *err)
{
    const struct gsmrt_gsm_page_table *pt = g->pt;
    const struct gsmrt_gsm_tier_policy *pol = &g->pol[l];
    uint32_t P = g->page_size, NP = g->n_pages_max, n_pages = pt->n_pages;
    uint32_t *active = g->host, *masks = g->host + NP, *grp_active = g->host + 2 * NP, *list = g->host + 3 * NP;
    uint32_t n_active = 0, n_list = 0;
    for (uint32_t p = 0; p < n_pages; p++) {
        bool pinned = p == n_pages - 1 || gsmrt_gsm_page_pinned(p, P, pt->n_pos, pol->sink_tokens, pol->window);
        if (pinned) {
            active[n_active++] = entry_of(g, l, p);
        } else {
            g->listed_page[l * NP + n_list] = p;
            g->listed_cold[l * NP + n_list] = pt->tier[gsmrt_gsm_page_table_at(pt, l, p)] == GSMRT_GSM_TIER_COLD;
            masks[p] = 0;
            n_list++;
        }
    }
    /* force masks: bit k when group k holds the page among its HOT pages
     * (list[] is the scratch of gsmrt_gsm_group_pages until it is filled) */
    for (uint32_t k = 0; k < g->n_groups; k++) {
        const struct gsmrt_gsm_group_policy *gp = &g->group[l * GSMRT_GSM_MAX_GROUPS + k];
        if (gp->window == 0 && gp->sink_tokens == 0 && gp->hot_pages == 0 && k > 0) continue;
        size_t na, nc;
        gsmrt_gsm_group_pages(pt, l, gp->sink_tokens, gp->window, gp->hot_pages, grp_active, &na, list, &nc);
        for (size_t i = 0; i < na; i++) {
            uint32_t p = grp_active[i];
            uint32_t at = gsmrt_gsm_page_table_at(pt, l, p);
            bool pinned = p == n_pages - 1 || gsmrt_gsm_page_pinned(p, P, pt->n_pos, pol->sink_tokens, pol->window);
            if (!pinned && pt->tier[at] == GSMRT_GSM_TIER_HOT) masks[p] |= 1u << k;
        }
    }
    for (uint32_t i = 0; i < n_list; i++) {
        uint32_t p = g->listed_page[l * NP + i];
        list[4 * i] = entry_of(g, l, p);
        list[4 * i + 1] = P;
        list[4 * i + 2] = p;
        list[4 * i + 3] = masks[p];
    }
    uint32_t *heads = g->host + 7 * NP;
    for (uint32_t h = 0; h < g->n_heads; h++) {
        uint32_t k = g->head_group[l * g->n_heads + h];
        heads[2 * h] = k;
        memcpy(&heads[2 * h + 1], &g->group[l * GSMRT_GSM_MAX_GROUPS + k].threshold, 4);
    }
    int32_t last = (int32_t)(n_keys - n_list * P) - 1;
    gsmrt_status st = gsmrt_vk_upload(dev, &g->active[l], 0, active, (VkDeviceSize)n_active * 4, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &g->last_pos[l], 0, &last, 4, err);
    if (st == GSMRT_OK && n_list) st = gsmrt_vk_upload(dev, &g->cold_list[l], 0, list, (VkDeviceSize)n_list * 16, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &g->heads[l], 0, heads, (VkDeviceSize)g->n_heads * 8, err);
    g->n_active = n_active;
    g->n_cold = n_list;
    g->n_active_keys = (uint32_t)(last + 1);
    return st;
}

gsmrt_status gsmrt_gsm_decode_plan(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev,
                                   struct gsmrt_kv_cache *kv, uint32_t n_keys, uint32_t n_tok,
                                   struct gsmrt_err *err)
{
    g->use = false;
    gsmrt_status st = plan_tiers(g, kv, n_keys - n_tok, n_keys, err);
    if (st == GSMRT_OK) st = plan_summaries(g, dev, n_keys, err);
    if (st != GSMRT_OK) return st;
    /* the gate, for a decode token past min_context and warm-up with pages to gate */
    if (n_tok != 1 || n_keys < g->cfg.min_context || !g->cfg.enabled) return GSMRT_OK;
    if (g->n_eligible_steps++ < g->cfg.warmup_steps) return GSMRT_OK;
    for (uint32_t l = 0; l < g->n_layer && st == GSMRT_OK; l++) {
        st = plan_layer_lists(g, dev, l, n_keys, err);
        /* a layer whose gate recently had to compute (nearly) every page runs
         * dense attention for a while: same result, less work */
        g->layer_gated[l] = g->n_eligible_steps > g->dense_until[l];
    }
    if (st != GSMRT_OK) return st;
    g->use = g->n_cold > 0 && g->n_cold <= GSMRT_K_GSM_MAX_COLD;
    return GSMRT_OK;
}

/* ---- recording -------------------------------------------------------------- */

static gsmrt_status record_move(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec,
                                const struct gsmrt_kv_cache *kv, const struct gsmrt_gsm_move *m,
                                struct gsmrt_err *err)
{
    VkDeviceSize bytes = (VkDeviceSize)g->page_size * g->row_bytes;
    const struct gsmrt_kv_line *l = gsmrt_kv_cache_line(kv, m->layer, 0);
    const struct gsmrt_vk_buf *from = m->from_tier == GSMRT_GSM_TIER_HOT ? &l->hot : &l->cold;
    const struct gsmrt_vk_buf *to = m->to_tier == GSMRT_GSM_TIER_HOT ? &l->hot : &l->cold;
    struct gsmrt_vk_range src, dst;
    gsmrt_status st = gsmrt_vk_buf_range(rec->dev, from, m->from_slot * bytes, bytes, &src, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_range(rec->dev, to, m->to_slot * bytes, bytes, &dst, err);
    if (st == GSMRT_OK) gsmrt_vk_rec_copy(rec, &src, &dst);
    return st;
}

gsmrt_status gsmrt_gsm_decode_record_moves(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec,
                                           const struct gsmrt_kv_cache *kv, struct gsmrt_err *err)
{
    if (!g->swap || g->n_moves == 0) return GSMRT_OK;
    /* demotions free hot slots that promotions of the same plan may reuse:
     * every demotion is read out before any promotion writes */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < g->n_moves; i++) {
            const struct gsmrt_gsm_move *m = &g->moves[i];
            if ((m->to_tier == GSMRT_GSM_TIER_HOT) != (pass == 1)) continue;
            gsmrt_status st = record_move(g, rec, kv, m, err);
            if (st != GSMRT_OK) return st;
        }
        gsmrt_vk_rec_barrier(rec);
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_decode_summarize(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                        const struct gsmrt_vk_range *hot_pool, struct gsmrt_err *err)
{
    if (g->n_summ == 0) return GSMRT_OK;
    struct gsmrt_vk_range list, sum;
    gsmrt_status st = gsmrt_vk_buf_whole(rec->dev, &g->summ_list[il], &list, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_whole(rec->dev, &g->sums[il], &sum, err);
    if (st == GSMRT_OK) st = gsmrt_k_page_summary(rec, hot_pool, g->kv_type, &list, &sum, g->n_summ, g->row, g->page_size, err);
    return st;
}

gsmrt_status gsmrt_gsm_decode_attend(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                     const struct gsmrt_k_attn_gsm *base, const struct gsmrt_vk_range *qa,
                                     const struct gsmrt_vk_range *qr, const struct gsmrt_vk_range *hot_pool,
                                     const struct gsmrt_vk_range *cold_pool, const struct gsmrt_vk_range *out,
                                     struct gsmrt_err *err)
{
    struct gsmrt_k_attn_gsm_bufs b = {.qa = *qa, .qr = *qr, .hot_kv = *hot_pool, .cold_kv = *cold_pool, .out = *out};
    struct { struct gsmrt_vk_buf *buf; struct gsmrt_vk_range *r; } map[] = {
        {&g->active[il], &b.active}, {&g->last_pos[il], &b.active_last_pos}, {&g->sums[il], &b.sums},
        {&g->cold_list[il], &b.cold_list}, {&g->heads[il], &b.heads}, {&g->ub, &b.ub}, {&g->sel, &b.sel},
        {&g->info[il], &b.info}, {&g->partial, &b.partial}, {&g->mass[il], &b.mass},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        gsmrt_status st = gsmrt_vk_buf_whole(rec->dev, map[i].buf, map[i].r, err);
        if (st != GSMRT_OK) return st;
    }
    struct gsmrt_k_attn_gsm p = *base;
    p.n_active_keys = g->n_active_keys;
    p.n_cold = g->n_cold;
    return gsmrt_k_attn_gsm(rec, &p, &b, err);
}

/* ---- after the step -------------------------------------------------------- */

/* Layer l's page masses into the moving averages; prefetch candidates;
 * stats; *n_read: the listed pages some head computed. */
static gsmrt_status observe_layer(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, uint32_t l,
                                  uint32_t *n_read, struct gsmrt_err *err)
{
    uint32_t NP = g->n_pages_max, nc = g->n_cold, H = g->n_heads;
    uint64_t page_bytes = (uint64_t)g->page_size * g->row_bytes;
    gsmrt_status st = gsmrt_vk_download(dev, &g->mass[l], 0, g->mass_host, (VkDeviceSize)3 * nc * 4, err);
    if (st == GSMRT_OK) st = gsmrt_vk_download(dev, &g->info[l], 0, g->info_host, (VkDeviceSize)H * 16, err);
    if (st != GSMRT_OK) return st;
    const float *mass = g->mass_host, *bound = g->mass_host + nc, *readers = g->mass_host + 2 * nc;
    /* mass per logical page (0 for pinned pages: they are not tiered by it) */
    float *page_mass = (float *)(g->host + NP);   /* the lists are uploaded: reuse */
    double *share = (double *)(g->host + 2 * NP); /* 2 * NP words fit in host[2NP, 4NP) */
    uint32_t *cand_page = g->host;
    memset(page_mass, 0, (size_t)g->pt->n_pages * sizeof *page_mass);
    size_t n_cand = 0;
    for (uint32_t i = 0; i < nc; i++) {
        uint32_t p = g->listed_page[l * NP + i];
        bool cold = g->listed_cold[l * NP + i], read = readers[i] > 0.0f;
        page_mass[p] = mass[i];
        g->stats.pages_cold += cold;
        *n_read += read;
        if (read) {
            g->stats.pages_cold_computed += cold;
            *(cold ? &g->stats.bytes_cold : &g->stats.bytes_hot) += page_bytes;
            if (cold && g->swap) g->stats.prefetch_misses++;
            if (!cold && g->prefetched[l * NP + p]) g->stats.prefetch_hits++;
            g->prefetched[l * NP + p] = 0;
        }
        if (cold) {
            cand_page[n_cand] = p;
            share[n_cand++] = bound[i];
        }
    }
    gsmrt_gsm_tiers_observe(g->pt, l, page_mass, g->cfg.ema_rate);
    g->n_prefetch_want[l] = g->swap && g->cfg.prefetch
                                ? (uint32_t)gsmrt_gsm_prefetch_select(cand_page, share, n_cand, g->cfg.gate_threshold,
                                                                      g->cfg.prefetch_factor, NP,
                                                                      g->prefetch_want + (size_t)l * NP)
                                : 0;
    g->stats.pages_listed += nc;
    g->stats.pages_active += g->n_active;
    g->stats.bytes_hot += (uint64_t)g->n_active_keys * g->row_bytes;
    g->stats.bytes_dense += ((uint64_t)g->n_active_keys + (uint64_t)nc * g->page_size) * g->row_bytes;
    for (uint32_t h = 0; h < H; h++) {
        const float *in = g->info_host + 4 * h;
        uint32_t forced_or_picked = (uint32_t)in[0];
        g->stats.head_gates++;
        g->stats.head_gates_fired += in[1] > 0.0f && forced_or_picked > 0 &&
                                     in[1] > g->group[l * GSMRT_GSM_MAX_GROUPS + g->head_group[l * H + h]].threshold;
        g->stats.skipped_bound_sum += in[2];
        if (in[2] > g->stats.skipped_bound_max) g->stats.skipped_bound_max = in[2];
    }
    return GSMRT_OK;
}

/* A layer that ran dense in a GSM step: every page read from its tier. */
static void count_dense_layer(struct gsmrt_gsm_decode *g, uint32_t l)
{
    uint64_t page_bytes = (uint64_t)g->page_size * g->row_bytes, cold = 0;
    for (uint32_t i = 0; i < g->n_cold; i++) cold += g->listed_cold[l * g->n_pages_max + i];
    uint64_t hot = (uint64_t)g->n_active_keys * g->row_bytes + (g->n_cold - cold) * page_bytes;
    g->stats.bytes_hot += hot;
    g->stats.bytes_cold += cold * page_bytes;
    g->stats.bytes_dense += hot + cold * page_bytes;
    g->stats.layer_steps_dense++;
}

gsmrt_status gsmrt_gsm_decode_finish(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, struct gsmrt_err *err)
{
    g->n_summarized += g->n_summ;
    g->n_summ = 0;
    if (!g->use) return GSMRT_OK;
    g->stats.steps++;
    for (uint32_t l = 0; l < g->n_layer; l++) {
        g->stats.layer_steps++;
        if (!g->layer_gated[l]) {
            count_dense_layer(g, l);
            continue;
        }
        uint32_t n_read = 0;
        gsmrt_status st = observe_layer(g, dev, l, &n_read, err);
        if (st != GSMRT_OK) return st;
        if (g->cfg.dense_fallback && (uint64_t)n_read * 20 >= (uint64_t)g->n_cold * 19) {   /* >= 95 %: nothing saved */
            g->dense_until[l] = g->n_eligible_steps + g->cfg.dense_fallback;
            g->n_prefetch_want[l] = 0;   /* dense reads every page anyway */
        }
    }
    return GSMRT_OK;
}

void gsmrt_gsm_decode_new_turn(struct gsmrt_gsm_decode *g)
{
    gsmrt_gsm_page_table_new_turn(g->pt);
}
