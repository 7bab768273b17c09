/* gsm_decode.h -- GSM in the decoder (first cut): per decode step, the
 * active pages (sinks, window, the most recent hot pages) are attended
 * exactly and the older cold pages go through the gate (gsmrt_k_attn_gsm),
 * all on the device. Policy "keep": cold pages stay in the same pool, so no
 * page moves yet; summaries are written as pages fill. Prompt steps stay
 * dense but keep the summaries current. */
#ifndef GSMRT_MODEL_GSM_DECODE_H
#define GSMRT_MODEL_GSM_DECODE_H

#include "model/model.h"

struct gsmrt_gsm_decode_config {
    float threshold;        /* gate_threshold: 0 = exact */
    uint32_t sink_pages;    /* always active from the start */
    uint32_t window_pages;  /* always active at the end (the newest page included) */
    uint32_t hot_pages;     /* also active: the most recent pages before the window */
    uint32_t min_context;   /* below this many keys GSM stays off */
    uint32_t warmup_steps;  /* decode steps that stay dense once GSM could start */
};

struct gsmrt_gsm_decode {
    struct gsmrt_gsm_decode_config cfg;
    uint32_t n_layer, n_heads, row, page_size, n_pages_max;
    uint32_t n_summarized;               /* full pages whose summaries exist, in order */
    struct gsmrt_vk_buf *sums;           /* [n_layer] float [n_pages_max][2][row] */
    struct gsmrt_vk_buf summ_list;       /* uint [n_pages_max][2]: pages to summarise this step */
    struct gsmrt_vk_buf active, last_pos, cold_info, cold_slots, ub, sel, info, partial;
    uint32_t *host;                      /* [3 * n_pages_max] staging for the lists */
    uint32_t n_summ, n_active, n_cold, n_active_keys;   /* this step's plan */
    bool use;                            /* this step attends with the gate */
    uint32_t n_eligible_steps;           /* decode steps past min_context so far (warm-up) */
    uint64_t total_steps, total_cold, total_computed;   /* gated steps; cold pages offered / computed */
    float *last_info;                    /* [n_heads][4] of the last layer of the last step */
    const gsmrt_allocator *alloc;
};

gsmrt_status gsmrt_gsm_decode_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                     const struct gsmrt_kv_cache *kv, const struct gsmrt_gsm_decode_config *cfg,
                                     struct gsmrt_gsm_decode **out, struct gsmrt_err *err);
void gsmrt_gsm_decode_destroy(struct gsmrt_vk_device *dev, struct gsmrt_gsm_decode *g);

/* Plans a step that ends with n_keys keys cached (n_tok new): the pages to
 * summarise, and for a single decode token whether to gate and the lists. */
gsmrt_status gsmrt_gsm_decode_plan(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev,
                                   const struct gsmrt_kv_cache *kv, uint32_t n_keys, uint32_t n_tok,
                                   struct gsmrt_err *err);
/* Records the summaries of layer il's newly filled pages (after kv_store). */
gsmrt_status gsmrt_gsm_decode_summarize(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                        const struct gsmrt_vk_range *pool, struct gsmrt_err *err);
/* Records gated attention for layer il into out [n_heads][kv_lora]. */
gsmrt_status gsmrt_gsm_decode_attend(struct gsmrt_gsm_decode *g, struct gsmrt_vk_rec *rec, uint32_t il,
                                     const struct gsmrt_k_attn_gsm *base, const struct gsmrt_vk_range *qa,
                                     const struct gsmrt_vk_range *qr, const struct gsmrt_vk_range *pool,
                                     const struct gsmrt_vk_range *out, struct gsmrt_err *err);
/* After the step: the summarised pages count, and the gate figures of the last layer. */
gsmrt_status gsmrt_gsm_decode_finish(struct gsmrt_gsm_decode *g, struct gsmrt_vk_device *dev, struct gsmrt_err *err);

#endif
