/* tiers.h -- the tier policy, pure functions over a page table: when GSM runs
 * at all (warm-up, min_context), which pages are pinned (sink and window),
 * the moving average of received attention mass, promotion and demotion,
 * each head group's active set, and prefetch candidates.
 *
 * The rules, per sequence and layer:
 *  - pinned pages (any position < sink_tokens, or among the last `window`
 *    positions) are always HOT;
 *  - ema := (1 - rate) * ema + rate * mass each observed step, mass being the
 *    page's share of the layer's softmax mass (0 for a page skipped by the
 *    gate: its share was bounded below the threshold);
 *  - of the other pages, those whose ema reaches the bar are ranked by ema
 *    (lower page first on ties) and the first hot_pages are HOT; the bar is
 *    promote_mass for a cold page and for an earlier turn's page (a demotion
 *    candidate), demote_mass for a hot page of the current turn (hysteresis);
 *  - promotions that find no free hot slot are dropped, lowest rank first;
 *    prefetched pages take hot slots that are still free after that, and a
 *    prefetch candidate that is already HOT stays HOT. */
#ifndef GSMRT_GSM_TIERS_H
#define GSMRT_GSM_TIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config.h"
#include "page_table.h"

/* GSM runs for this decode step: enabled, n_ctx >= min_context, and `step`
 * (decode steps already done in this sequence) >= warmup_steps. */
bool gsmrt_gsm_should_use(uint32_t n_ctx, uint32_t step, const struct gsmrt_gsm_config *cfg);

/* Page `page` holds a position < sink_tokens or >= n_pos - window. */
bool gsmrt_gsm_page_pinned(uint32_t page, uint32_t page_size, uint32_t n_pos, uint32_t sink_tokens,
                           uint32_t window);

/* Most pages one sequence can pin plus its budget, per layer: what the hot
 * pool needs per sequence. ceil(sink/ps) + ceil(window/ps) + 1 + hot_pages. */
uint32_t gsmrt_gsm_hot_pages_needed(uint32_t page_size, uint32_t sink_tokens, uint32_t window, uint32_t hot_pages);

struct gsmrt_gsm_tier_policy {
    uint32_t sink_tokens, window;   /* for tiering: the widest of the layer's groups */
    uint32_t hot_pages;             /* budget of unpinned HOT pages */
    double promote_mass, demote_mass;
};

/* The policy from the configuration alone (no calibration). */
void gsmrt_gsm_tier_policy_from_config(const struct gsmrt_gsm_config *cfg, struct gsmrt_gsm_tier_policy *out);

/* ema of pages [0, n_pages) of `layer` from this step's mass[n_pages]. */
void gsmrt_gsm_tiers_observe(struct gsmrt_gsm_page_table *pt, uint32_t layer, const float *mass, double rate);

/* One page copy for the device layer to record. */
struct gsmrt_gsm_move {
    uint32_t layer, page;
    uint8_t from_tier, to_tier;
    uint32_t from_slot, to_slot;
};

struct gsmrt_gsm_plan_result {
    size_t n_moves;       /* moves[0, n_demoted) demotions, then promotions (prefetches last) */
    size_t n_demoted;
    size_t n_promoted;    /* including prefetched */
    size_t n_prefetched;
    size_t n_dropped;     /* wanted promotions with no free hot slot */
    size_t n_kept;        /* wanted demotions with no free cold slot (page stays HOT) */
};

/* Applies the rules to one layer: updates the page table and the pools and
 * writes the copies to moves[] (capacity pt->n_pages). Demotions come first;
 * a promotion may reuse a hot slot a demotion of the same plan freed, so the
 * device layer puts a barrier between moves[n_demoted - 1] and moves[n_demoted].
 * prefetch[n_prefetch]: pages to bring in if hot slots remain (may be NULL).
 * GSMRT_E_CONTEXT_FULL (and nothing changed) if a pinned page cannot be HOT. */
gsmrt_status gsmrt_gsm_tiers_plan(struct gsmrt_gsm_page_table *pt, uint32_t layer,
                                  const struct gsmrt_gsm_tier_policy *pol, struct gsmrt_gsm_slot_pool *hot,
                                  struct gsmrt_gsm_slot_pool *cold, const uint32_t *prefetch, size_t n_prefetch,
                                  struct gsmrt_gsm_move *moves, struct gsmrt_gsm_plan_result *out,
                                  struct gsmrt_err *err);

/* Frees hot slots until `need` are free, demoting the HOT pages that are not
 * pinned (at the current n_pos), lowest ema first (lower page on ties), into
 * the cold pool; the copies go to moves[] (capacity pt->n_pages), their count
 * to *n_moves. GSMRT_E_CONTEXT_FULL (and nothing changed) when even that
 * cannot free enough (pinned pages fill the pool, or the cold pool is full). */
gsmrt_status gsmrt_gsm_tiers_make_room(struct gsmrt_gsm_page_table *pt, uint32_t layer, uint32_t need,
                                       const struct gsmrt_gsm_tier_policy *pol, struct gsmrt_gsm_slot_pool *hot,
                                       struct gsmrt_gsm_slot_pool *cold, struct gsmrt_gsm_move *moves,
                                       size_t *n_moves, struct gsmrt_err *err);

/* A head group's pages for one step: active[] = pages pinned by the group's
 * sink/window plus its hot_pages HOT pages of highest ema (ascending page
 * order); cold[] = every other page (ascending). Both have capacity n_pages. */
void gsmrt_gsm_group_pages(const struct gsmrt_gsm_page_table *pt, uint32_t layer, uint32_t sink_tokens,
                           uint32_t window, uint32_t hot_pages, uint32_t *active, size_t *n_active,
                           uint32_t *cold, size_t *n_cold);

/* Prefetch candidates: of the n cold pages page[i] with share bounds share[i]
 * (gsmrt_gsm_gate_page_share), those with share >= factor * threshold, largest
 * first (lower page on ties), at most max_out, into out[]. Returns the count.
 * threshold <= 0 gives none: every cold page is read each step anyway. */
size_t gsmrt_gsm_prefetch_select(const uint32_t *page, const double *share, size_t n, double threshold,
                                 double factor, size_t max_out, uint32_t *out);

#endif
