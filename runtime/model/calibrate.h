/* calibrate.h -- the runtime's part of `gsm calibrate` (DESIGN.md "GSM",
 * calibration): the model runs over calibration text with dense attention,
 * and after each layer's attention the attn_stats kernel writes, per token
 * and head, the mass by distance band, the sink mass and the entropy of the
 * attention row; the rows are accumulated on the host in double, and
 * gsm/calib_plan.c groups the heads of each layer and picks their policies.
 * What the statistics mean is gsm/calib_plan.h's gsmrt_gsm_head_acc_add. */
#ifndef GSMRT_MODEL_CALIBRATE_H
#define GSMRT_MODEL_CALIBRATE_H

#include "calib_file.h"
#include "model/model.h"

/* Where the forward pass records attention statistics (gsmrt_forward.stats). */
struct gsmrt_attn_stats_sink {
    uint32_t n_layer, n_head, max_tok;
    uint32_t n_bands, sink_tokens;
    uint32_t row_floats;             /* n_bands + 2: bands, sink mass, entropy */
    VkDeviceSize layer_stride;       /* bytes between the layers' regions (offset-aligned) */
    struct gsmrt_vk_buf edges;       /* uint [n_bands] */
    struct gsmrt_vk_buf rows;        /* per layer: float [max_tok][n_head][row_floats] */
};

gsmrt_status gsmrt_attn_stats_sink_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                          uint32_t max_tok, const uint32_t *edges, uint32_t n_bands,
                                          uint32_t sink_tokens, struct gsmrt_attn_stats_sink *out,
                                          struct gsmrt_err *err);
void gsmrt_attn_stats_sink_destroy(struct gsmrt_vk_device *dev, struct gsmrt_attn_stats_sink *s);

/* What a calibration run uses (the API fills the defaults). */
struct gsmrt_calib_run_params {
    uint32_t n_ctx;            /* tokens per window, each window from an empty cache */
    uint32_t n_batch;          /* tokens per forward step */
    uint32_t n_groups;         /* head groups per layer, 1..n_head */
    float threshold;           /* gate threshold of every group, [0, 1) */
    uint32_t sink_tokens;      /* sink keys counted in sink_share (and given to sink-heavy groups) */
    uint32_t page_size;        /* the page size hot_pages counts in */
    uint32_t max_hot_pages;    /* budget of a group whose mass is all beyond its window */
    double coverage;           /* the window covers bands holding this share of the mass */
    void (*progress)(void *user, const char *stage, float fraction);   /* per window; may be NULL */
    void *progress_user;
};

/* Runs dm over windows: window w is tokens[w * (n_ctx - 1) ...] of at most
 * n_ctx - 1 tokens behind a BOS (bos >= 0), or of n_ctx tokens (bos < 0).
 * Accumulates every row of every layer and head, then plans each layer.
 * On success *out is a calibration for `id` (caller destroys it). */
gsmrt_status gsmrt_calib_run(struct gsmrt_dmodel *dm, const int32_t *tokens, size_t n_tokens, int32_t bos,
                             const struct gsmrt_gsm_model_id *id, const struct gsmrt_calib_run_params *p,
                             struct gsmrt_gsm_calib **out, struct gsmrt_err *err);

/* The band edges a run over windows of n_ctx uses: 0, then 8, 16, 32, ...
 * below n_ctx (at most GSMRT_GSM_MAX_BANDS bands). Returns n_bands. */
uint32_t gsmrt_calib_band_edges(uint32_t n_ctx, uint32_t *edges);

#endif
