/* deepseek2.c -- the deepseek2 forward pass (MLA + MoE), recorded as one
 * command buffer per step: no CPU round-trip between layers; the CPU sees
 * only the logits. The maths is shared/docs/deepseek2-gguf.md §5-7; the
 * kernels are runtime/kernels. Decode and prefill share the code: a step
 * runs T tokens (T = 1 while generating). */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/mem.h"
#include "model/gsm_decode.h"
#include "model/model.h"

/* Scratch buffers of the step, by name, as bindings. */
struct bufs {
    struct gsmrt_vk_range tokens, pos, x, h, proj, q, qa_lat, q_a, kv_new, partial, o_lat, o;
    struct gsmrt_vk_range ff_g, ff_u, ff_act, router, ids, wts, ex_g, ex_u, ex_act, ex_down, moe_y, logits;
};

static gsmrt_status scratch(struct gsmrt_vk_device *dev, uint64_t bytes, struct gsmrt_vk_buf *b,
                            struct gsmrt_err *err)
{
    return gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, bytes ? bytes : 16, b, err);
}

void gsmrt_forward_destroy(struct gsmrt_forward *f)
{
    if (!f) return;
    struct gsmrt_vk_device *dev = f->m->dev;
    gsmrt_vk_rec_destroy(f->rec);
    gsmrt_mem_free(f->m->alloc, f->pos_host);
    gsmrt_mem_free(f->m->alloc, f->tok_host);
    struct gsmrt_vk_buf *all[] = {&f->tokens, &f->pos,    &f->x,      &f->h,      &f->proj,   &f->q,
                                  &f->qa_lat, &f->q_a,    &f->kv_new, &f->partial, &f->o_lat, &f->o,
                                  &f->ff_g,   &f->ff_u,   &f->ff_act, &f->router, &f->ids,    &f->wts,
                                  &f->ex_g,   &f->ex_u,   &f->ex_act, &f->ex_down, &f->moe_y, &f->logits};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gsmrt_vk_buf_free(dev, all[i]);
    gsmrt_mem_free(f->m->alloc, f);
}

gsmrt_status gsmrt_forward_create(struct gsmrt_dmodel *m, uint32_t max_tok, uint32_t n_ctx,
                                  struct gsmrt_forward **out, struct gsmrt_err *err)
{
    *out = NULL;
    const struct gsmrt_hparams *hp = &m->hp;
    struct gsmrt_vk_device *dev = m->dev;
    struct gsmrt_forward *f = gsmrt_mem_calloc(m->alloc, 1, sizeof *f);
    if (!f) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "forward state");
    f->m = m;
    f->max_tok = max_tok;
    f->n_ctx = n_ctx;
    uint64_t T = max_tok, E = hp->n_embd, H = hp->n_head, KVL = hp->kv_lora_rank, R = hp->n_rot;
    uint64_t DK = hp->n_embd_head_k_mla, DV = hp->n_embd_head_v_mla;
    uint64_t ff = hp->n_ff > (uint64_t)hp->n_ff_exp * hp->n_expert_shared ? hp->n_ff
                                                                           : (uint64_t)hp->n_ff_exp * hp->n_expert_shared;
    uint64_t K = hp->n_expert_used ? hp->n_expert_used : 1, FE = hp->n_ff_exp;
    uint64_t splits = gsmrt_k_attn_splits(n_ctx);
    struct { struct gsmrt_vk_buf *b; uint64_t floats; } plan[] = {
        {&f->tokens, T},          {&f->pos, T},
        {&f->x, T * E},           {&f->h, T * E},           {&f->proj, T * E},
        {&f->q, T * H * DK},      {&f->qa_lat, T * H * KVL}, {&f->q_a, T * hp->q_lora_rank},
        {&f->kv_new, T * (KVL + R)},
        {&f->partial, T * H * splits * (2 + KVL)},
        {&f->o_lat, T * H * KVL}, {&f->o, T * H * DV},
        {&f->ff_g, T * ff},       {&f->ff_u, T * ff},       {&f->ff_act, T * ff},
        {&f->router, T * hp->n_expert}, {&f->ids, T * K},   {&f->wts, T * K},
        {&f->ex_g, T * K * FE},   {&f->ex_u, T * K * FE},   {&f->ex_act, T * K * FE},
        {&f->ex_down, T * K * E}, {&f->moe_y, T * E},
        {&f->logits, T * hp->n_vocab},
    };
    gsmrt_status st = GSMRT_OK;
    for (size_t i = 0; i < sizeof plan / sizeof plan[0] && st == GSMRT_OK; i++) {
        if (plan[i].floats * 4 > dev->binding_range)
            st = gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                               "a step of %u tokens needs an activation of %.1f MiB, more than one binding; "
                               "use a smaller batch",
                               max_tok, plan[i].floats * 4 / 1048576.0);
        else st = scratch(dev, plan[i].floats * 4, plan[i].b, err);
    }
    /* ~40 dispatches per layer at most (MoE, chunked weights) plus the head. */
    /* GSMRT_PROFILE=1: per-dispatch GPU timestamps (bench_decode --profile reads them). */
    bool timestamps = gsmrt_env_flag(&dev->log, "GSMRT_PROFILE");
    if (st == GSMRT_OK) st = gsmrt_vk_rec_create(dev, 64 * hp->n_layer + 64, timestamps, &f->rec, err);
    if (st == GSMRT_OK && (!(f->pos_host = gsmrt_mem_calloc(m->alloc, max_tok, sizeof *f->pos_host)) ||
                           !(f->tok_host = gsmrt_mem_calloc(m->alloc, max_tok, sizeof *f->tok_host))))
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "positions");
    if (st != GSMRT_OK) {
        gsmrt_forward_destroy(f);
        return st;
    }
    *out = f;
    return GSMRT_OK;
}

static gsmrt_status bind(const struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *b,
                         struct gsmrt_vk_range *r, struct gsmrt_err *err)
{
    return gsmrt_vk_buf_whole(dev, b, r, err);
}

/* y = W x for T tokens: matrix-vector for one token, matrix-matrix otherwise. */
static gsmrt_status linear(struct gsmrt_vk_rec *rec, const struct gsmrt_tensor *w, const struct gsmrt_vk_range *x,
                           const struct gsmrt_vk_range *y, uint32_t T, struct gsmrt_err *err)
{
    if (T == 1) return gsmrt_k_matvec(rec, &w->w, x, y, 0, err);
    return gsmrt_k_matmul(rec, &w->w, x, y, T, w->w.n_cols, w->w.n_rows, 0, err);
}

#define TRY(expr)                        \
    do {                                 \
        gsmrt_status st_ = (expr);       \
        if (st_ != GSMRT_OK) return st_; \
    } while (0)

/* Splits per token of the partial buffer in a step: one sequence uses its
 * own count (0: from its keys); several share the largest so that every
 * token's partials sit at the same stride. */
static uint32_t step_splits(const struct gsmrt_seq_step *seqs, uint32_t n_seq)
{
    if (n_seq == 1) return 0;
    uint32_t most = 0;
    for (uint32_t i = 0; i < n_seq; i++) {
        uint32_t k = gsmrt_k_attn_splits(seqs[i].pos0 + seqs[i].n_tok);
        if (k > most) most = k;
    }
    return most;
}

/* Each sequence's new rows into its paged cache, then its attention over
 * its cache (dense, or through the GSM gate for a gated decode token). The
 * sequences' dispatches share the token-indexed buffers at their tok0. */
static gsmrt_status cache_attention(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                    const struct bufs *b, uint32_t il, struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    struct gsmrt_vk_rec *rec = f->rec;
    struct gsmrt_vk_device *dev = f->m->dev;
    uint32_t H = hp->n_head, KVL = hp->kv_lora_rank, R = hp->n_rot, DK = hp->n_embd_head_k_mla;
    uint32_t NOPE = DK - R, ROW = KVL + R, n_splits = step_splits(seqs, n_seq);
    struct gsmrt_vk_range hot, cold, table;
    bool summaries = false;
    for (uint32_t i = 0; i < n_seq; i++) {
        const struct gsmrt_seq_step *s = &seqs[i];
        TRY(gsmrt_kv_cache_bind(dev, s->kv, il, &hot, &cold, &table, err));
        TRY(gsmrt_k_kv_store(rec, &b->kv_new, &table, &b->pos, &hot, s->n_tok, s->tok0, ROW, ROW, s->kv->page_size,
                             err));
        summaries |= s->gsm && s->gsm->n_summ;
    }
    gsmrt_vk_rec_barrier(rec);
    for (uint32_t i = 0; summaries && i < n_seq; i++) {   /* summaries of the pages this step filled */
        if (!seqs[i].gsm || !seqs[i].gsm->n_summ) continue;
        TRY(gsmrt_kv_cache_bind(dev, seqs[i].kv, il, &hot, &cold, &table, err));
        TRY(gsmrt_gsm_decode_summarize(seqs[i].gsm, rec, il, &hot, err));
    }
    if (summaries) gsmrt_vk_rec_barrier(rec);
    for (uint32_t i = 0; i < n_seq; i++) {
        const struct gsmrt_seq_step *s = &seqs[i];
        /* the sequences' partials are disjoint rows of one buffer, but bound
         * whole (offsets could break the binding alignment): a barrier keeps
         * one sequence's writes apart from the previous one's reads */
        if (i > 0) gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_kv_cache_bind(dev, s->kv, il, &hot, &cold, &table, err));
        if (s->gsm && s->gsm->use && s->gsm->layer_gated[il]) {   /* the gate decides which pages take part */
            struct gsmrt_k_attn_gsm gp = {H, KVL, R, s->kv->page_size, H * DK, DK, NOPE, s->tok0, s->tok0,
                                          0, 0, hp->kq_scale};
            TRY(gsmrt_gsm_decode_attend(s->gsm, rec, il, &gp, &b->qa_lat, &b->q, &hot, &cold, &b->o_lat, err));
        } else {
            struct gsmrt_k_attn ap = {s->n_tok, H, KVL, R, H * DK, DK, NOPE, s->kv->page_size, s->pos0 + s->n_tok,
                                      hp->kq_scale, s->tok0, n_splits};
            TRY(gsmrt_k_attn_mla(rec, &ap, &b->qa_lat, &b->q, &hot, &cold, &table, &b->pos, &b->partial, &b->o_lat,
                                 err));
        }
    }
    return GSMRT_OK;
}

static gsmrt_status attention(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                              const struct bufs *b, uint32_t il, uint32_t T, struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    const struct gsmrt_layer *l = &f->m->layers[il];
    struct gsmrt_vk_rec *rec = f->rec;
    uint32_t E = hp->n_embd, H = hp->n_head, KVL = hp->kv_lora_rank, R = hp->n_rot;
    uint32_t DK = hp->n_embd_head_k_mla, NOPE = DK - R, ROW = KVL + R;

    /* h = RMSNorm(x) * attn_norm */
    TRY(gsmrt_k_rms_norm(rec, &b->x, &l->attn_norm->range, &b->h, T, E, hp->rms_eps, err));
    gsmrt_vk_rec_barrier(rec);
    /* q [T][H][DK] (through the q LoRA when present); kv [T][KVL + R] */
    if (hp->q_lora_rank) {
        TRY(linear(rec, l->attn_q_a, &b->h, &b->q_a, T, err));
        gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_k_rms_norm(rec, &b->q_a, &l->attn_q_a_norm->range, &b->q_a, T, hp->q_lora_rank, hp->rms_eps, err));
        gsmrt_vk_rec_barrier(rec);
        TRY(linear(rec, l->attn_q_b, &b->q_a, &b->q, T, err));
    } else {
        TRY(linear(rec, l->attn_q, &b->h, &b->q, T, err));
    }
    TRY(linear(rec, l->attn_kv_a_mqa, &b->h, &b->kv_new, T, err));
    gsmrt_vk_rec_barrier(rec);
    /* c = RMSNorm(kv[:KVL]) * kv_a_norm and q_pe = RoPE(q[h][NOPE:]); then
     * k_pe = RoPE(kv[KVL:]) and q_abs[h] = k_b[h] q_nope[h]. The regions are
     * disjoint, but the pairs that touch one buffer are kept apart by a
     * barrier so that synchronization validation sees no hazard. */
    TRY(gsmrt_k_rms_norm_strided(rec, &b->kv_new, &l->attn_kv_a_norm->range, &b->kv_new, T, KVL, ROW, ROW,
                                 hp->rms_eps, err));
    struct gsmrt_rope_params rp = {T, H, DK, H * DK, NOPE, R, GSMRT_ROPE_NORM, hp->rope_freq_base, hp->freq_scale,
                                   hp->ext_factor, hp->rope_attn_factor, hp->yarn_corr_dims[0], hp->yarn_corr_dims[1]};
    TRY(gsmrt_k_rope(rec, &b->q, &b->pos, &rp, err));
    gsmrt_vk_rec_barrier(rec);
    rp.n_heads = 1;
    rp.head_stride = ROW;
    rp.row_stride = ROW;
    rp.rot_offset = KVL;
    TRY(gsmrt_k_rope(rec, &b->kv_new, &b->pos, &rp, err));
    struct gsmrt_k_head_matvec absorb = {H, T, H * DK, DK, 0, H * KVL, KVL, 0};
    TRY(gsmrt_k_head_matvec(rec, &l->attn_k_b->w, &absorb, &b->q, &b->qa_lat, err));
    gsmrt_vk_rec_barrier(rec);
    TRY(cache_attention(f, seqs, n_seq, b, il, err));
    gsmrt_vk_rec_barrier(rec);
    if (f->stats)   /* calibration: statistics of this layer's attention rows */
        TRY(gsmrt_attn_stats_record(f, seqs, n_seq, il, &b->qa_lat, &b->q, &b->pos, err));
    /* o[h] = v_b[h] o_lat[h];  x += attn_output o */
    uint32_t DV = hp->n_embd_head_v_mla;
    struct gsmrt_k_head_matvec unabsorb = {H, T, H * KVL, KVL, 0, H * DV, DV, 0};
    TRY(gsmrt_k_head_matvec(rec, &l->attn_v_b->w, &unabsorb, &b->o_lat, &b->o, err));
    gsmrt_vk_rec_barrier(rec);
    TRY(linear(rec, l->attn_output, &b->o, &b->proj, T, err));
    gsmrt_vk_rec_barrier(rec);
    TRY(gsmrt_k_add(rec, &b->x, &b->proj, &b->x, T * E, err));
    gsmrt_vk_rec_barrier(rec);
    return GSMRT_OK;
}

/* SwiGLU FFN with the given weights into b->proj (dense blocks, shared experts). */
static gsmrt_status swiglu_ffn(struct gsmrt_forward *f, const struct bufs *b, const struct gsmrt_tensor *gate,
                               const struct gsmrt_tensor *up, const struct gsmrt_tensor *down, uint32_t T,
                               struct gsmrt_err *err)
{
    struct gsmrt_vk_rec *rec = f->rec;
    TRY(linear(rec, gate, &b->h, &b->ff_g, T, err));
    TRY(linear(rec, up, &b->h, &b->ff_u, T, err));
    gsmrt_vk_rec_barrier(rec);
    TRY(gsmrt_k_swiglu(rec, &b->ff_g, &b->ff_u, &b->ff_act, T * gate->w.n_rows, err));
    gsmrt_vk_rec_barrier(rec);
    return linear(rec, down, &b->ff_act, &b->proj, T, err);
}

static gsmrt_status ffn(struct gsmrt_forward *f, const struct bufs *b, uint32_t il, uint32_t T,
                        struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    const struct gsmrt_layer *l = &f->m->layers[il];
    struct gsmrt_vk_rec *rec = f->rec;
    uint32_t E = hp->n_embd;
    TRY(gsmrt_k_rms_norm(rec, &b->x, &l->ffn_norm->range, &b->h, T, E, hp->rms_eps, err));
    gsmrt_vk_rec_barrier(rec);
    if (il < hp->n_layer_dense_lead) {
        TRY(swiglu_ffn(f, b, l->ffn_gate, l->ffn_up, l->ffn_down, T, err));
    } else {
        /* routing on the device: router logits -> (expert ids, weights) */
        uint32_t K = hp->n_expert_used, FE = hp->n_ff_exp;
        TRY(linear(rec, l->ffn_gate_inp, &b->h, &b->router, T, err));
        gsmrt_vk_rec_barrier(rec);
        struct gsmrt_k_moe_route rp = {T,
                                       hp->n_expert,
                                       K,
                                       (uint32_t)hp->expert_gating_func,
                                       hp->expert_group_count,
                                       hp->expert_group_used_count,
                                       hp->expert_weights_norm,
                                       hp->expert_weights_scale};
        TRY(gsmrt_k_moe_route(rec, &b->router, l->exp_probs_b ? &l->exp_probs_b->range : NULL, &b->ids, &b->wts,
                              &rp, err));
        gsmrt_vk_rec_barrier(rec);
        /* routed experts: silu(gate_e h) * (up_e h), then down_e, weighted sum */
        TRY(gsmrt_k_moe_matvec(rec, &l->ffn_gate_exps->w, hp->n_expert, &b->h, &b->ids, &b->ex_g, T, K, false, err));
        TRY(gsmrt_k_moe_matvec(rec, &l->ffn_up_exps->w, hp->n_expert, &b->h, &b->ids, &b->ex_u, T, K, false, err));
        gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_k_swiglu(rec, &b->ex_g, &b->ex_u, &b->ex_act, T * K * FE, err));
        gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_k_moe_matvec(rec, &l->ffn_down_exps->w, hp->n_expert, &b->ex_act, &b->ids, &b->ex_down, T, K, true,
                               err));
        gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_k_moe_combine(rec, &b->wts, &b->ex_down, &b->moe_y, T, K, E, err));
        /* shared experts (dense SwiGLU of width FE * NS) into proj, then proj += routed */
        TRY(swiglu_ffn(f, b, l->ffn_gate_shexp, l->ffn_up_shexp, l->ffn_down_shexp, T, err));
        gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_k_add(rec, &b->proj, &b->moe_y, &b->proj, T * E, err));
    }
    gsmrt_vk_rec_barrier(rec);
    TRY(gsmrt_k_add(rec, &b->x, &b->proj, &b->x, T * E, err));
    gsmrt_vk_rec_barrier(rec);
    return GSMRT_OK;
}

static gsmrt_status bind_all(struct gsmrt_forward *f, struct bufs *b, struct gsmrt_err *err)
{
    struct gsmrt_vk_device *dev = f->m->dev;
    struct { struct gsmrt_vk_buf *buf; struct gsmrt_vk_range *r; } map[] = {
        {&f->tokens, &b->tokens}, {&f->pos, &b->pos},         {&f->x, &b->x},
        {&f->h, &b->h},           {&f->proj, &b->proj},       {&f->q, &b->q},
        {&f->qa_lat, &b->qa_lat}, {&f->q_a, &b->q_a},         {&f->kv_new, &b->kv_new},
        {&f->partial, &b->partial}, {&f->o_lat, &b->o_lat},   {&f->o, &b->o},
        {&f->ff_g, &b->ff_g},     {&f->ff_u, &b->ff_u},       {&f->ff_act, &b->ff_act},
        {&f->router, &b->router}, {&f->ids, &b->ids},         {&f->wts, &b->wts},
        {&f->ex_g, &b->ex_g},     {&f->ex_u, &b->ex_u},       {&f->ex_act, &b->ex_act},
        {&f->ex_down, &b->ex_down}, {&f->moe_y, &b->moe_y},   {&f->logits, &b->logits},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) TRY(bind(dev, map[i].buf, map[i].r, err));
    return GSMRT_OK;
}

/* Checks a batch and lays its tokens out: tok0 of each sequence, ids and
 * positions in order; the logits rows wanted form one block. */
static gsmrt_status lay_out(struct gsmrt_forward *f, struct gsmrt_seq_step *seqs, uint32_t n_seq, uint32_t *n_tok,
                            uint32_t *first_logit, uint32_t *n_logit_rows, struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    uint32_t T = 0, lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < n_seq; i++) {
        struct gsmrt_seq_step *s = &seqs[i];
        if (s->n_tok == 0 || s->n_tok > f->max_tok - T || s->n_logits > s->n_tok)
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "step of %u tokens (at most %u), %u logits",
                                 T + s->n_tok, f->max_tok, s->n_logits);
        for (uint32_t t = 0; t < s->n_tok; t++)
            if (s->tokens[t] < 0 || (uint32_t)s->tokens[t] >= hp->n_vocab)
                return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "token id %d outside the vocabulary (0..%u)",
                                     s->tokens[t], hp->n_vocab - 1);
        uint64_t end = (uint64_t)s->pos0 + s->n_tok;
        if (end > f->n_ctx || end > s->kv->n_ctx)
            return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "positions %u..%u exceed the context of %u", s->pos0,
                                 s->pos0 + s->n_tok - 1, s->kv->n_ctx < f->n_ctx ? s->kv->n_ctx : f->n_ctx);
        s->tok0 = T;
        for (uint32_t t = 0; t < s->n_tok; t++) {
            f->pos_host[T + t] = (int32_t)(s->pos0 + t);
            f->tok_host[T + t] = s->tokens[t];
        }
        T += s->n_tok;
        if (s->n_logits) {
            if (s->tok0 + s->n_tok - s->n_logits < lo) lo = s->tok0 + s->n_tok - s->n_logits;
            hi = s->tok0 + s->n_tok;
        }
    }
    *n_tok = T;
    *first_logit = hi ? lo : 0;
    *n_logit_rows = hi ? hi - lo : 0;
    return GSMRT_OK;
}

/* Each sequence's tiers and page table for this step (host), uploaded. */
static gsmrt_status plan_caches(struct gsmrt_forward *f, struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                struct gsmrt_err *err)
{
    struct gsmrt_vk_device *dev = f->m->dev;
    for (uint32_t i = 0; i < n_seq; i++) {
        struct gsmrt_seq_step *s = &seqs[i];
        if (s->gsm) TRY(gsmrt_gsm_decode_plan(s->gsm, dev, s->kv, s->pos0 + s->n_tok, s->n_tok, err));
        TRY(gsmrt_kv_cache_reserve(dev, s->kv, s->pos0 + s->n_tok, err));
    }
    return GSMRT_OK;
}

/* The final norm and the output head over rows [first, first + n) of x. */
static gsmrt_status output_head(struct gsmrt_forward *f, const struct bufs *b, uint32_t first, uint32_t n,
                                struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    struct gsmrt_vk_device *dev = f->m->dev;
    uint32_t E = hp->n_embd;
    struct gsmrt_vk_range xl, hl;
    TRY(gsmrt_vk_buf_range(dev, &f->x, (VkDeviceSize)first * E * 4, (VkDeviceSize)n * E * 4, &xl, err));
    TRY(gsmrt_vk_buf_range(dev, &f->h, 0, (VkDeviceSize)n * E * 4, &hl, err));
    TRY(gsmrt_k_rms_norm(f->rec, &xl, &f->m->output_norm->range, &hl, n, E, hp->rms_eps, err));
    gsmrt_vk_rec_barrier(f->rec);
    return linear(f->rec, f->m->output, &hl, &b->logits, n, err);
}

gsmrt_status gsmrt_forward_run_batch(struct gsmrt_forward *f, struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                     struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    struct gsmrt_vk_device *dev = f->m->dev;
    uint32_t n_tok = 0, first = 0, n_rows = 0;
    if (n_seq == 0) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "a step of no sequences");
    TRY(lay_out(f, seqs, n_seq, &n_tok, &first, &n_rows, err));
    TRY(plan_caches(f, seqs, n_seq, err));
    TRY(gsmrt_vk_upload(dev, &f->pos, 0, f->pos_host, (VkDeviceSize)n_tok * 4, err));
    TRY(gsmrt_vk_upload(dev, &f->tokens, 0, f->tok_host, (VkDeviceSize)n_tok * 4, err));

    struct bufs b;
    TRY(bind_all(f, &b, err));
    struct gsmrt_vk_rec *rec = f->rec;
    TRY(gsmrt_vk_rec_begin(rec, err));
    for (uint32_t i = 0; i < n_seq; i++)   /* page copies between the tiers (GSM swap) */
        if (seqs[i].gsm) TRY(gsmrt_gsm_decode_record_moves(seqs[i].gsm, rec, seqs[i].kv, err));
    TRY(gsmrt_k_get_rows(rec, &f->m->token_embd->w, &b.tokens, n_tok, &b.x, err));
    gsmrt_vk_rec_barrier(rec);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        TRY(attention(f, seqs, n_seq, &b, il, n_tok, err));
        TRY(ffn(f, &b, il, n_tok, err));
    }
    if (n_rows) TRY(output_head(f, &b, first, n_rows, err));
    f->n_dispatches = rec->n_dispatches;
    TRY(gsmrt_vk_rec_submit_wait(rec, err));
    uint64_t V = hp->n_vocab;
    for (uint32_t i = 0; i < n_seq; i++) {
        const struct gsmrt_seq_step *s = &seqs[i];
        if (s->gsm) TRY(gsmrt_gsm_decode_finish(s->gsm, dev, err));
        if (s->n_logits)
            TRY(gsmrt_vk_download(dev, &f->logits, (s->tok0 + s->n_tok - s->n_logits - first) * V * 4, s->logits_out,
                                  s->n_logits * V * 4, err));
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_forward_run(struct gsmrt_forward *f, struct gsmrt_kv_cache *kv, const int32_t *tokens,
                               uint32_t n_tok, uint32_t pos0, uint32_t n_logits, float *logits_out,
                               struct gsmrt_err *err)
{
    struct gsmrt_seq_step s = {kv, f->gsm, tokens, n_tok, pos0, n_logits, logits_out, 0};
    return gsmrt_forward_run_batch(f, &s, 1, err);
}
