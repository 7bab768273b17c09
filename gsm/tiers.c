/* tiers.c -- the tier policy (rules in tiers.h): pinning, moving averages,
 * promotion/demotion plans over the slot pools, group active sets, prefetch
 * candidates. Decides and books; the copies themselves are the device
 * layer's. */
#include "tiers.h"

#include <string.h>

#include "sort.h"

bool gsmrt_gsm_should_use(uint32_t n_ctx, uint32_t step, const struct gsmrt_gsm_config *cfg)
{
    return cfg->enabled && n_ctx >= cfg->min_context && step >= cfg->warmup_steps;
}

bool gsmrt_gsm_page_pinned(uint32_t page, uint32_t page_size, uint32_t n_pos, uint32_t sink_tokens,
                           uint32_t window)
{
    uint64_t first = (uint64_t)page * page_size, last = first + page_size - 1;   /* positions of the page */
    if (first >= n_pos) return false;
    if (first < sink_tokens) return true;
    uint64_t win_start = n_pos > window ? (uint64_t)n_pos - window : 0;
    return window > 0 && last >= win_start;
}

static uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

uint32_t gsmrt_gsm_hot_pages_needed(uint32_t page_size, uint32_t sink_tokens, uint32_t window, uint32_t hot_pages)
{
    return ceil_div(sink_tokens, page_size) + ceil_div(window, page_size) + 1 + hot_pages;
}

void gsmrt_gsm_tier_policy_from_config(const struct gsmrt_gsm_config *cfg, struct gsmrt_gsm_tier_policy *out)
{
    out->sink_tokens = cfg->sink_tokens;
    out->window = cfg->window;
    out->hot_pages = cfg->hot_pages;
    out->promote_mass = cfg->promote_mass;
    out->demote_mass = cfg->demote_mass;
}

void gsmrt_gsm_tiers_observe(struct gsmrt_gsm_page_table *pt, uint32_t layer, const float *mass, double rate)
{
    float *ema = pt->ema + (size_t)layer * pt->n_pages_max;
    for (uint32_t p = 0; p < pt->n_pages; p++) ema[p] = (float)((1.0 - rate) * ema[p] + rate * mass[p]);
}

/* Ranking by ema, larger first, lower page on ties. */
static bool ema_before(const void *ctx, uint32_t a, uint32_t b)
{
    const float *ema = ctx;
    return ema[a] > ema[b] || (ema[a] == ema[b] && a < b);
}

enum want { W_NO = 0, W_PINNED = 1, W_RANKED = 2, W_PREFETCH = 3, W_KEPT = 4 };

gsmrt_status gsmrt_gsm_tiers_plan(struct gsmrt_gsm_page_table *pt, uint32_t layer,
                                  const struct gsmrt_gsm_tier_policy *pol, struct gsmrt_gsm_slot_pool *hot,
                                  struct gsmrt_gsm_slot_pool *cold, const uint32_t *prefetch, size_t n_prefetch,
                                  struct gsmrt_gsm_move *moves, struct gsmrt_gsm_plan_result *out,
                                  struct gsmrt_err *err)
{
    memset(out, 0, sizeof *out);
    if (layer >= pt->n_layer)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "layer %u of %u", layer, pt->n_layer);
    const uint32_t n = pt->n_pages, base = layer * pt->n_pages_max;
    uint8_t *tier = pt->tier + base;
    uint32_t *slot = pt->slot + base;
    const float *ema = pt->ema + base;
    uint32_t *ranked = pt->scratch, *want = pt->scratch + pt->n_pages_max;

    /* 1. pinned pages, 2. the ranked budget */
    size_t n_ranked = 0;
    for (uint32_t p = 0; p < n; p++) {
        want[p] = W_NO;
        if (gsmrt_gsm_page_pinned(p, pt->page_size, pt->n_pos, pol->sink_tokens, pol->window)) {
            want[p] = W_PINNED;
            continue;
        }
        bool easy = tier[p] == GSMRT_GSM_TIER_HOT && !pt->candidate[p];
        if ((double)ema[p] >= (easy ? pol->demote_mass : pol->promote_mass)) ranked[n_ranked++] = p;
    }
    gsmrt_gsm_sort_idx(ranked, n_ranked, ema_before, ema);
    if (n_ranked > pol->hot_pages) n_ranked = pol->hot_pages;
    for (size_t r = 0; r < n_ranked; r++) want[ranked[r]] = W_RANKED;

    /* prefetch candidates that are already HOT stay (no round trip per step) */
    for (size_t i = 0; prefetch && i < n_prefetch; i++)
        if (prefetch[i] < n && tier[prefetch[i]] == GSMRT_GSM_TIER_HOT && want[prefetch[i]] == W_NO)
            want[prefetch[i]] = W_PREFETCH;

    /* 3. demotions the cold pool can take; the rest stay HOT, highest ema first */
    size_t n_demote = 0;
    for (uint32_t p = 0; p < n; p++) n_demote += tier[p] == GSMRT_GSM_TIER_HOT && want[p] == W_NO;
    while (n_demote > cold->n_free) {
        uint32_t best = n;
        for (uint32_t p = 0; p < n; p++)
            if (tier[p] == GSMRT_GSM_TIER_HOT && want[p] == W_NO && (best == n || ema_before(ema, p, best)))
                best = p;
        want[best] = W_KEPT;
        n_demote--;
        out->n_kept++;
    }

    /* 4. promotions the hot pool can take: pinned ones must fit */
    size_t capacity = (size_t)hot->n_free + n_demote, n_pinned_in = 0;
    for (uint32_t p = 0; p < n; p++) n_pinned_in += tier[p] == GSMRT_GSM_TIER_COLD && want[p] == W_PINNED;
    if (n_pinned_in > capacity) {
        memset(out, 0, sizeof *out);
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL,
                             "layer %u: %zu sink/window pages to bring back, %zu hot slots free", layer,
                             n_pinned_in, capacity);
    }
    capacity -= n_pinned_in;
    for (size_t r = 0; r < n_ranked; r++) {
        uint32_t p = ranked[r];
        if (tier[p] != GSMRT_GSM_TIER_COLD) continue;
        if (capacity > 0) {
            capacity--;
        } else {
            want[p] = W_NO;
            out->n_dropped++;
        }
    }
    /* 5. prefetch into what is left */
    for (size_t i = 0; prefetch && i < n_prefetch && capacity > 0; i++) {
        uint32_t p = prefetch[i];
        if (p < n && tier[p] == GSMRT_GSM_TIER_COLD && want[p] == W_NO) {
            want[p] = W_PREFETCH;
            capacity--;
        }
    }

    /* 6. book the moves: demotions, promotions, prefetches (the counts above make every take succeed) */
    size_t m = 0;
    gsmrt_status st = GSMRT_OK;
    for (uint32_t p = 0; p < n && st == GSMRT_OK; p++) {
        if (tier[p] != GSMRT_GSM_TIER_HOT || want[p] != W_NO) continue;
        struct gsmrt_gsm_move mv = {layer, p, GSMRT_GSM_TIER_HOT, GSMRT_GSM_TIER_COLD, slot[p], 0};
        st = gsmrt_gsm_slot_pool_take(cold, &mv.to_slot, err);
        if (st == GSMRT_OK) st = gsmrt_gsm_slot_pool_give(hot, mv.from_slot, err);
        if (st != GSMRT_OK) break;
        tier[p] = GSMRT_GSM_TIER_COLD;
        slot[p] = mv.to_slot;
        moves[m++] = mv;
        out->n_demoted++;
    }
    for (int pass = 0; pass < 2 && st == GSMRT_OK; pass++) {
        for (uint32_t p = 0; p < n && st == GSMRT_OK; p++) {
            if (tier[p] != GSMRT_GSM_TIER_COLD || want[p] == W_NO) continue;
            if ((want[p] == W_PREFETCH) != (pass == 1)) continue;
            struct gsmrt_gsm_move mv = {layer, p, GSMRT_GSM_TIER_COLD, GSMRT_GSM_TIER_HOT, slot[p], 0};
            st = gsmrt_gsm_slot_pool_take(hot, &mv.to_slot, err);
            if (st == GSMRT_OK) st = gsmrt_gsm_slot_pool_give(cold, mv.from_slot, err);
            if (st != GSMRT_OK) break;
            tier[p] = GSMRT_GSM_TIER_HOT;
            slot[p] = mv.to_slot;
            moves[m++] = mv;
            out->n_promoted++;
            out->n_prefetched += pass == 1;
        }
    }
    out->n_moves = m;
    if (st != GSMRT_OK) st = gsmrt_err_set(err, GSMRT_E_INTERNAL, "layer %u: page pools and table disagree", layer);
    return st;
}

gsmrt_status gsmrt_gsm_tiers_make_room(struct gsmrt_gsm_page_table *pt, uint32_t layer, uint32_t need,
                                       const struct gsmrt_gsm_tier_policy *pol, struct gsmrt_gsm_slot_pool *hot,
                                       struct gsmrt_gsm_slot_pool *cold, struct gsmrt_gsm_move *moves,
                                       size_t *n_moves, struct gsmrt_err *err)
{
    *n_moves = 0;
    const uint32_t n = pt->n_pages, base = layer * pt->n_pages_max;
    uint8_t *tier = pt->tier + base;
    uint32_t *slot = pt->slot + base, *cand = pt->scratch;
    if (hot->n_free >= need) return GSMRT_OK;
    /* candidates, lowest ema first: the reverse of the promotion ranking */
    size_t n_cand = 0;
    for (uint32_t p = 0; p < n; p++)
        if (tier[p] == GSMRT_GSM_TIER_HOT && !gsmrt_gsm_page_pinned(p, pt->page_size, pt->n_pos, pol->sink_tokens, pol->window))
            cand[n_cand++] = p;
    gsmrt_gsm_sort_idx(cand, n_cand, ema_before, pt->ema + base);
    size_t short_by = need - hot->n_free;
    if (short_by > n_cand || short_by > cold->n_free)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL,
                             "layer %u: %u hot slots needed, %u free and %zu pages could leave (%u cold slots free)",
                             layer, need, hot->n_free, n_cand, cold->n_free);
    for (size_t i = 0; i < short_by; i++) {
        uint32_t p = cand[n_cand - 1 - i];
        struct gsmrt_gsm_move mv = {layer, p, GSMRT_GSM_TIER_HOT, GSMRT_GSM_TIER_COLD, slot[p], 0};
        if (gsmrt_gsm_slot_pool_take(cold, &mv.to_slot, err) != GSMRT_OK ||
            gsmrt_gsm_slot_pool_give(hot, mv.from_slot, err) != GSMRT_OK)
            return gsmrt_err_set(err, GSMRT_E_INTERNAL, "layer %u: page pools and table disagree", layer);
        tier[p] = GSMRT_GSM_TIER_COLD;
        slot[p] = mv.to_slot;
        moves[(*n_moves)++] = mv;
    }
    return GSMRT_OK;
}

void gsmrt_gsm_group_pages(const struct gsmrt_gsm_page_table *pt, uint32_t layer, uint32_t sink_tokens,
                           uint32_t window, uint32_t hot_pages, uint32_t *active, size_t *n_active,
                           uint32_t *cold, size_t *n_cold)
{
    const uint32_t n = pt->n_pages, base = layer * pt->n_pages_max;
    const uint8_t *tier = pt->tier + base;
    const float *ema = pt->ema + base;
    /* the group's hot pages: rank HOT unpinned pages by ema (cold[] as scratch) */
    size_t n_rank = 0;
    for (uint32_t p = 0; p < n; p++)
        if (tier[p] == GSMRT_GSM_TIER_HOT && !gsmrt_gsm_page_pinned(p, pt->page_size, pt->n_pos, sink_tokens, window))
            cold[n_rank++] = p;
    gsmrt_gsm_sort_idx(cold, n_rank, ema_before, ema);
    if (n_rank > hot_pages) n_rank = hot_pages;
    /* mark them in active[] by page (active[p] = 1), then compact both lists */
    for (uint32_t p = 0; p < n; p++) active[p] = 0;
    for (size_t r = 0; r < n_rank; r++) active[cold[r]] = 1;
    size_t na = 0, nc = 0;
    for (uint32_t p = 0; p < n; p++) {
        bool in = active[p] || gsmrt_gsm_page_pinned(p, pt->page_size, pt->n_pos, sink_tokens, window);
        if (in) active[na++] = p;   /* na <= p: never overwrites an unread flag */
        else cold[nc++] = p;
    }
    *n_active = na;
    *n_cold = nc;
}

size_t gsmrt_gsm_prefetch_select(const uint32_t *page, const double *share, size_t n, double threshold,
                                 double factor, size_t max_out, uint32_t *out)
{
    if (!(threshold > 0) || max_out == 0) return 0;
    double bar = factor * threshold;
    size_t k = 0;   /* out[0, k): indices into page[], best first (insertion into a top-k list) */
    for (size_t i = 0; i < n; i++) {
        if (!(share[i] >= bar)) continue;
        size_t j = k < max_out ? k++ : max_out;
        while (j > 0) {
            size_t o = out[j - 1];
            bool later = share[o] > share[i] || (share[o] == share[i] && page[o] < page[i]);
            if (later) break;
            if (j < max_out) out[j] = out[j - 1];
            j--;
        }
        if (j < max_out) out[j] = (uint32_t)i;
    }
    for (size_t j = 0; j < k; j++) out[j] = page[out[j]];
    return k;
}
