/* gsm_decode.h -- GSM in the decoder: the tier policy of gsm/ applied to one
 * sequence's paged cache, and the gated attention of its decode steps.
 *
 * Per step (host, before recording; gsmrt_gsm_decode_plan):
 *   - the page table follows the sequence (cut back after a rollback, grown
 *     for the new tokens: new pages are HOT);
 *   - per layer, gsm/tiers.c decides which pages are HOT from the moving
 *     average of the attention mass they received; under "swap" the pages
 *     that change tier are copied between the device-local and host-visible
 *     pools at the start of the step (gsmrt_gsm_decode_record_moves); under
 *     "keep" the tier is only a flag (nothing moves);
 *   - for a decode token past min_context and warm-up, per layer: the pinned
 *     pages (sink, window) are attended exactly, every other page is listed
 *     for the gate, with a bit per head group that keeps it computed when the
 *     group holds it HOT; each head has its group's threshold.
 * On the device: summaries as pages fill, then gsmrt_k_attn_gsm per layer,
 * whose page_mass output (share of mass per page) feeds the moving averages
 * and the prefetch candidates after the step (gsmrt_gsm_decode_finish). */
#ifndef GSMRT_MODEL_GSM_DECODE_H
#define GSMRT_MODEL_GSM_DECODE_H

#include "calib_file.h"
#include "config.h"
#include "page_table.h"
#include "slot_pool.h"
#include "tiers.h"
#include "model/model.h"

#define GSMRT_GSM_MAX_GROUPS 32   /* one bit per group in a page's force mask */

/* Totals since the sequence started (or the session was created). */
struct gsmrt_gsm_totals {
    uint64_t steps;               /* decode steps that went through the gate */
    uint64_t layer_steps;         /* steps x layers */
    uint64_t layer_steps_dense;   /* of those, layers that ran dense (dense_fallback) */
    uint64_t pages_active;        /* pinned pages attended exactly, summed over layer steps */
    uint64_t pages_listed;        /* pages offered to the gate (HOT kept + COLD gated) */
    uint64_t pages_cold;          /* of those, COLD ones */
    uint64_t pages_cold_computed; /* COLD pages some head had computed */
    uint64_t head_gates, head_gates_fired;   /* (layer, head) gates; those that computed a gated page */
    uint64_t bytes_hot, bytes_cold;          /* KV bytes read from each tier (pages once per layer) */
    uint64_t bytes_dense;                    /* what dense attention would have read in those steps */
    uint64_t prefetch_hits, prefetch_misses; /* prefetched pages then read HOT; COLD pages read across the bus */
    uint64_t moves_demoted, moves_promoted, moves_prefetched;
    double skipped_bound_max;     /* largest bound on the skipped share of any head */
    double skipped_bound_sum;     /* summed over head gates (mean = / head_gates) */
};

struct gsmrt_gsm_decode {
    struct gsmrt_gsm_config cfg;
    const struct gsmrt_gsm_calib *calib;  /* the head groups in use (not owned), or NULL: one group */
    bool swap;                            /* pages move between two physical pools */
    uint32_t n_layer, n_heads, row, page_size, n_pages_max, n_groups;
    enum gsmrt_kv_type kv_type;           /* the cache's storage type */
    uint32_t row_bytes;                   /* bytes of one cached row (row values of kv_type) */
    uint32_t *head_group;                 /* [n_layer][n_heads] */
    struct gsmrt_gsm_group_policy *group; /* [n_layer][n_groups] (threshold: min(calibration, config)) */
    struct gsmrt_gsm_tier_policy *pol;    /* [n_layer] the widest sink/window, the largest budget */
    struct gsmrt_gsm_page_table *pt;
    struct gsmrt_gsm_slot_pool *hot, *cold;   /* [n_layer] each */
    struct gsmrt_gsm_move *moves;             /* [n_layer * n_pages_max] this step's copies */
    uint32_t n_moves;                         /* per layer: demotions, then promotions */
    uint8_t *prefetched;                      /* [n_layer][n_pages_max] promoted by prefetch, not read yet */
    uint32_t *prefetch_want;                  /* [n_layer][n_pages_max] candidates for the next plan */
    uint32_t *n_prefetch_want;                /* [n_layer] */
    /* device: per layer (rows of one buffer would need aligned offsets) */
    struct gsmrt_vk_buf *sums, *summ_list, *active, *last_pos, *cold_list, *heads, *info, *mass;
    struct gsmrt_vk_buf ub, sel, partial;     /* working buffers shared by the layers (barriers between) */
    uint32_t *host;                           /* staging for one layer's lists */
    float *mass_host;                         /* [(3 + n_heads) * n_pages_max] */
    float *info_host;                         /* [n_heads * 4] */
    uint32_t *listed_page;                    /* [n_layer][n_pages_max] logical page of each listed entry */
    uint8_t *listed_cold;                     /* [n_layer][n_pages_max] listed entry is COLD */
    uint32_t n_summ;                          /* pages to summarise this step (same in every layer) */
    uint32_t n_summarized;                    /* full pages whose summaries exist, in order */
    uint32_t n_active, n_cold, n_active_keys; /* this step's lists (same shape in every layer) */
    bool use;                                 /* this step attends with the gate */
    uint8_t *layer_gated;                     /* [n_layer] this step, layer l goes through the gate */
    uint64_t *dense_until;                    /* [n_layer] eligible step until which layer l runs dense */
    uint32_t n_eligible_steps;                /* decode steps past min_context so far (warm-up) */
    struct gsmrt_gsm_totals stats;
    const gsmrt_allocator *alloc;
};

/* Physical pool sizes for a session: hot slots = pinned pages + budget +
 * the pages one step of max_step_tokens can start; cold = every page under
 * swap; dense-sized hot and no cold pool under keep. */
void gsmrt_gsm_decode_kv_slots(const struct gsmrt_gsm_config *cfg, const struct gsmrt_gsm_calib *calib, bool swap,
                               uint32_t n_ctx, uint32_t max_step_tokens, uint32_t *n_hot, uint32_t *n_cold);

/* calib may be NULL (one group per layer from cfg); it must match the model
 * (checked by the caller). Not owned. */
gsmrt_status gsmrt_gsm_decode_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                     const struct gsmrt_kv_cache *kv, const struct gsmrt_gsm_config *cfg, bool swap,
                                     const struct gsmrt_gsm_calib *calib, struct gsmrt_gsm_decode **out,
                                     struct gsmrt_err *err);
void gsmrt_gsm_decode_destroy(struct gsmrt_vk_device *dev, struct gsmrt_gsm_decode *g);
/* Switches the head groups (a profile picked per request; NULL: one group
 * from the configuration). Under swap the calibration's pinned pages must
 * fit the device-local pool the session was made with. On failure nothing
 * changed. Not owned: it must outlive its use. */
gsmrt_status gsmrt_gsm_decode_set_calib(struct gsmrt_gsm_decode *g, const struct gsmrt_gsm_calib *calib,
                                        struct gsmrt_err *err);

/* Plans a step that ends with n_keys keys cached (n_tok new): tiers, moves,
 * the page table entries of kv, summaries, and for a single decode token
 * whether to gate and the lists. Uploads what the step reads. */
gsmrt_status gsmrt_gsm_decode_plan(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev,
                                   struct gsmrt_kv_cache *kv, uint32_t n_keys, uint32_t n_tok,
                                   struct gsmrt_err *err);
/* Records the planned page copies (swap), with the barriers they need. */
gsmrt_status gsmrt_gsm_decode_record_moves(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec,
                                           const struct gsmrt_kv_cache *kv, struct gsmrt_err *err);
/* Records the summaries of layer il's newly filled pages (after kv_store). */
gsmrt_status gsmrt_gsm_decode_summarize(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                        const struct gsmrt_vk_range *hot_pool, struct gsmrt_err *err);
/* Records gated attention for layer il: base gives the shapes and where the
 * query and the output are (q_tok0 / out_tok0); out is [..][n_heads][kv_lora]. */
gsmrt_status gsmrt_gsm_decode_attend(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                     const struct gsmrt_k_attn_gsm *base, const struct gsmrt_vk_range *qa,
                                     const struct gsmrt_vk_range *qr, const struct gsmrt_vk_range *hot_pool,
                                     const struct gsmrt_vk_range *cold_pool, const struct gsmrt_vk_range *out,
                                     struct gsmrt_err *err);
/* After the step: summaries counted, page masses into the moving averages,
 * prefetch candidates, statistics. */
gsmrt_status gsmrt_gsm_decode_finish(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, struct gsmrt_err *err);
/* A new chat turn starts: the earlier turns' pages become demotion candidates. */
void gsmrt_gsm_decode_new_turn(struct gsmrt_gsm_decode *g);

#endif
