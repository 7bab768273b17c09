/* kernel_v4.c -- record functions for the kernels DeepSeek V4 (llama.cpp's
 * deepseek4) adds to the deepseek2 set: hyper-connections, V4 routing, the
 * clamped SwiGLU, the compressor's pooling, the lightning indexer and its
 * device top-k, attention with sinks, the ring store, and V4's RoPE
 * parameters. Shapes are checked here, so a
 * bad model shape is an error naming the op, never an out-of-range dispatch. */
#include <math.h>

#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

gsmrt_status gsmrt_k_hc_pre(struct gsmrt_vk_rec *rec, const struct gsmrt_k_hc_pre *p, const struct gsmrt_vk_range *x,
                            const struct gsmrt_vk_range *raw, const struct gsmrt_vk_range *base,
                            const struct gsmrt_vk_range *scale, const struct gsmrt_vk_range *y,
                            const struct gsmrt_vk_range *mix, struct gsmrt_err *err)
{
    if (p->n_tok == 0 || p->n_embd == 0 || p->hc == 0 || p->hc > GSMRT_K_V4_MAX_HC || (!p->head && !mix))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "hc_pre: %u tokens of %u, %u streams (1 to %u)%s", p->n_tok, p->n_embd, p->hc,
                             GSMRT_K_V4_MAX_HC, !p->head && !mix ? ", no mix output" : "");
    const uint32_t spec[2] = {gsmrt_k_reduce_wg_size(rec->dev), GSMRT_K_V4_MAX_HC};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_HC_PRE, spec, 2, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_hc_pre pc = {
        .n_tok = p->n_tok, .n_embd = p->n_embd, .hc = p->hc, .iters = p->sinkhorn_iters,
        .eps_rms = p->eps_rms, .eps_hc = p->eps_hc, .head = p->head,
    };
    /* The head writes no mix: the binding still needs a valid range. */
    struct gsmrt_vk_range b[6] = {*x, *raw, *base, *scale, *y, mix ? *mix : *y};
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, p->n_tok, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 6, &pc, sizeof pc, gx, gy, 1, "hc_pre", err);
}

gsmrt_status gsmrt_k_hc_post(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *f, const struct gsmrt_vk_range *x,
                             const struct gsmrt_vk_range *mix, const struct gsmrt_vk_range *x_new, uint32_t n_tok,
                             uint32_t n_embd, uint32_t hc, struct gsmrt_err *err)
{
    uint64_t rows = (uint64_t)n_tok * hc;
    if (n_tok == 0 || n_embd == 0 || hc == 0 || rows > rec->dev->caps.max_workgroup_count[1])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "hc_post: %u tokens of %u, %u streams", n_tok, n_embd,
                             hc);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_HC_POST, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_hc_post pc = {.n_tok = n_tok, .n_embd = n_embd, .hc = hc};
    struct gsmrt_vk_range b[4] = {*f, *x, *mix, *x_new};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 4, &pc, sizeof pc, (n_embd + wg - 1) / wg, (uint32_t)rows, 1,
                                 "hc_post", err);
}

gsmrt_status gsmrt_k_moe_route_v4(struct gsmrt_vk_rec *rec, const struct gsmrt_k_moe_route_v4 *p,
                                  const struct gsmrt_vk_range *logits, const struct gsmrt_vk_range *bias,
                                  const struct gsmrt_vk_range *tokens, const struct gsmrt_vk_range *tid2eid,
                                  const struct gsmrt_vk_range *ids, const struct gsmrt_vk_range *weights,
                                  struct gsmrt_err *err)
{
    const uint32_t max_experts = 256;
    if (p->n_tok == 0 || p->n_expert == 0 || p->n_expert > max_experts || p->n_used == 0 ||
        p->n_used > p->n_expert || (p->hashed && (!tokens || !tid2eid || p->n_vocab == 0)) ||
        (!p->hashed && !bias))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "moe routing (V4): %u experts (1 to %u), %u used, %s", p->n_expert, max_experts,
                             p->n_used,
                             p->hashed ? "hashed (needs the tokens and tid2eid)" : "scored (needs exp_probs_b)");
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_MOE_ROUTE_V4, &max_experts, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_moe_route_v4 pc = {
        .n_tok = p->n_tok, .n_expert = p->n_expert, .n_used = p->n_used, .hashed = p->hashed,
        .norm = p->norm, .scale = p->scale, .n_vocab = p->n_vocab,
    };
    /* Bindings the mode does not read still need valid ranges: the logits. */
    struct gsmrt_vk_range b[6] = {*logits, bias ? *bias : *logits, tokens ? *tokens : *logits,
                                  tid2eid ? *tid2eid : *logits, *ids, *weights};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 6, &pc, sizeof pc, p->n_tok, 1, 1, "moe_route_v4", err);
}

gsmrt_status gsmrt_k_swiglu_clamp(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *g,
                                  const struct gsmrt_vk_range *u, const struct gsmrt_vk_range *y, uint32_t n,
                                  float limit, struct gsmrt_err *err)
{
    if (n == 0) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "swiglu_clamp: no elements");
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_SWIGLU_CLAMP, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_swiglu_clamp pc = {.n = n, .limit = limit};
    struct gsmrt_vk_range b[3] = {*g, *u, *y};
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, (n + wg - 1) / wg, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, gx, gy, 1, "swiglu_clamp", err);
}

gsmrt_status gsmrt_k_compress_pool(struct gsmrt_vk_rec *rec, const struct gsmrt_k_compress_pool *p,
                                   const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *score,
                                   const struct gsmrt_vk_range *ape, const struct gsmrt_vk_range *out,
                                   struct gsmrt_err *err)
{
    /* The rows a block reads: its own ratio positions, and with overlap the
     * block before; all must be among the n_rows kept. */
    uint32_t span = p->overlap ? 2 * p->ratio : p->ratio;
    if (p->n_blocks == 0 || p->dim == 0 || p->ratio == 0 || p->n_rows < span || p->out_stride < p->dim ||
        p->n_blocks > rec->dev->caps.max_workgroup_count[1])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "compress_pool: %u rows of %u features, ratio %u%s, %u positions kept (at least %u), "
                             "output stride %u",
                             p->n_blocks, p->dim, p->ratio, p->overlap ? " with overlap" : "", p->n_rows, span,
                             p->out_stride);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_COMPRESS_POOL, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_compress_pool pc = {
        .n_blocks = p->n_blocks, .block0 = p->block0, .dim = p->dim, .ratio = p->ratio, .overlap = p->overlap,
        .row_pos0 = p->row_pos0, .n_rows = p->n_rows, .out_stride = p->out_stride,
    };
    struct gsmrt_vk_range b[4] = {*kv, *score, *ape, *out};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 4, &pc, sizeof pc, (p->dim + wg - 1) / wg, p->n_blocks, 1,
                                 "compress_pool", err);
}

void gsmrt_v4_rope_params(const struct gsmrt_v4_rope *r, struct gsmrt_rope_params *out)
{
    bool scaled = r->scaling != GSMRT_V4_ROPE_NONE && r->factor > 0.0f;
    out->n_dims = r->n_rot;
    out->mode = GSMRT_ROPE_NORM;
    out->freq_base = r->freq_base;
    out->freq_scale = scaled ? 1.0f / r->factor : 1.0f;
    out->ext_factor = scaled && r->scaling == GSMRT_V4_ROPE_YARN ? 1.0f : 0.0f;
    out->attn_factor = out->ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * logf(r->factor)) : 1.0f;
    float corr[2] = {0.0f, 0.0f};
    if (out->ext_factor != 0.0f)
        gsmrt_rope_yarn_corr_dims(r->n_rot, r->orig_ctx, r->freq_base, r->beta_fast, r->beta_slow, corr);
    out->corr_low = corr[0];
    out->corr_high = corr[1];
}

gsmrt_status gsmrt_k_indexer_score(struct gsmrt_vk_rec *rec, const struct gsmrt_k_indexer *p,
                                   const struct gsmrt_vk_range *q, const struct gsmrt_vk_range *w,
                                   const struct gsmrt_vk_range *k, const struct gsmrt_vk_range *pos,
                                   const struct gsmrt_vk_range *score, struct gsmrt_err *err)
{
    if (p->n_tok == 0 || p->n_heads == 0 || p->head_dim == 0 || p->n_rows == 0 || p->ratio == 0 ||
        p->q_stride < p->n_heads * p->head_dim || p->k_stride < p->head_dim || p->s_stride < p->n_rows ||
        p->n_tok > rec->dev->caps.max_workgroup_count[1])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "indexer_score: %u tokens, %u heads of %u (query stride %u), %u rows (stride %u, "
                             "score stride %u), ratio %u",
                             p->n_tok, p->n_heads, p->head_dim, p->q_stride, p->n_rows, p->k_stride, p->s_stride,
                             p->ratio);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_INDEXER_SCORE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_indexer_score pc = {
        .n_tok = p->n_tok, .n_heads = p->n_heads, .head_dim = p->head_dim, .q_stride = p->q_stride,
        .n_rows = p->n_rows, .k_stride = p->k_stride, .s_stride = p->s_stride, .ratio = p->ratio,
    };
    struct gsmrt_vk_range b[5] = {*q, *w, *k, *pos, *score};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 5, &pc, sizeof pc, (p->n_rows + wg - 1) / wg, p->n_tok, 1,
                                 "indexer_score", err);
}

gsmrt_status gsmrt_k_topk_rows(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *score,
                               const struct gsmrt_vk_range *pos, const struct gsmrt_vk_range *ids, uint32_t n_tok,
                               uint32_t n_rows, uint32_t s_stride, uint32_t top_k, uint32_t ratio,
                               struct gsmrt_err *err)
{
    if (n_tok == 0 || top_k == 0 || ratio == 0 || s_stride < n_rows)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "topk_rows: %u tokens, top-%u of %u rows (score stride %u), ratio %u", n_tok, top_k,
                             n_rows, s_stride, ratio);
    /* 256 invocations: the 256-bin histograms are cleared and the rows
     * scanned in one stride; capped by the device's workgroup size. */
    uint32_t wg = 256;
    if (wg > rec->dev->caps.max_workgroup_invocations) wg = rec->dev->caps.max_workgroup_invocations;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_TOPK_ROWS, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_topk_rows pc = {.n_tok = n_tok, .n_rows = n_rows, .s_stride = s_stride, .k = top_k,
                                    .ratio = ratio};
    struct gsmrt_vk_range b[3] = {*score, *pos, *ids};
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, n_tok, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, gx, gy, 1, "topk_rows", err);
}

gsmrt_status gsmrt_k_attn_v4(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_v4 *p, const struct gsmrt_vk_range *q,
                             const struct gsmrt_vk_range *raw, const struct gsmrt_vk_range *comp,
                             const struct gsmrt_vk_range *ids, const struct gsmrt_vk_range *pos,
                             const struct gsmrt_vk_range *sinks, const struct gsmrt_vk_range *out,
                             struct gsmrt_err *err)
{
    bool with_comp = p->mode != GSMRT_V4_COMP_NONE;
    if (p->n_tok == 0 || p->n_heads == 0 || p->head_dim == 0 || p->q_stride < p->n_heads * p->head_dim ||
        p->raw_rows == 0 || p->raw_stride < p->head_dim || p->n_swa == 0 || p->mode > GSMRT_V4_COMP_ALL ||
        (with_comp && (!comp || p->comp_stride < p->head_dim || p->n_comp >= 0x80000000u)) ||
        (p->mode == GSMRT_V4_COMP_SELECTED && (!ids || p->top_k == 0)) ||
        (p->mode == GSMRT_V4_COMP_ALL && p->ratio == 0) || p->n_tok > rec->dev->caps.max_workgroup_count[1])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "attn_v4: %u tokens, %u heads of %u (query stride %u), raw ring of %u rows (stride %u), "
                             "window %u, compressed mode %d (%u rows, stride %u, top-%u, ratio %u)%s",
                             p->n_tok, p->n_heads, p->head_dim, p->q_stride, p->raw_rows, p->raw_stride, p->n_swa,
                             (int)p->mode, p->n_comp, p->comp_stride, p->top_k, p->ratio,
                             p->mode == GSMRT_V4_COMP_SELECTED && !ids ? ", no selection" : "");
    const uint32_t spec[2] = {gsmrt_k_reduce_wg_size(rec->dev), p->head_dim};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_V4, spec, 2, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_v4 pc = {
        .n_tok = p->n_tok, .n_heads = p->n_heads, .q_stride = p->q_stride, .raw_rows = p->raw_rows,
        .raw_stride = p->raw_stride, .n_comp = with_comp ? p->n_comp : 0, .comp_stride = p->comp_stride,
        .n_swa = p->n_swa, .mode = (uint32_t)p->mode, .top_k = p->top_k, .ratio = p->ratio ? p->ratio : 1,
        .scale = p->scale,
    };
    /* Bindings the mode does not read still need valid ranges: the raw rows. */
    struct gsmrt_vk_range b[7] = {*q, *raw, with_comp ? *comp : *raw, ids ? *ids : *raw, *pos, *sinks, *out};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 7, &pc, sizeof pc, p->n_heads, p->n_tok, 1, "attn_v4", err);
}

gsmrt_status gsmrt_k_ring_store(struct gsmrt_vk_rec *rec, const struct gsmrt_k_ring_store *p,
                                const struct gsmrt_vk_range *src, const struct gsmrt_vk_range *pos,
                                const struct gsmrt_vk_range *dst, struct gsmrt_err *err)
{
    if (p->n_tok == 0 || p->width == 0 || p->src_stride < p->width || p->n_rows < p->n_tok ||
        p->dst_stride < p->width || p->n_tok > rec->dev->caps.max_workgroup_count[1])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "ring_store: %u tokens of %u floats (stride %u) into a ring of %u rows (stride %u)",
                             p->n_tok, p->width, p->src_stride, p->n_rows, p->dst_stride);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_RING_STORE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_ring_store pc = {.n_tok = p->n_tok, .width = p->width, .src_stride = p->src_stride,
                                     .n_rows = p->n_rows, .dst_stride = p->dst_stride};
    struct gsmrt_vk_range b[3] = {*src, *pos, *dst};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, (p->width + wg - 1) / wg, p->n_tok, 1,
                                 "ring_store", err);
}
