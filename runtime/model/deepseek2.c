/* deepseek2.c -- the deepseek2 forward recorder (MLA + MoE): the
 * architecture's scratch and the recording of a step into one command
 * buffer (model/arch.h; the step driver is forward.c): no CPU round-trip between layers; the CPU sees
 * only the logits. The maths is shared/docs/deepseek2-gguf.md §5-7; the
 * kernels are runtime/kernels. Decode and prefill share the code: a step
 * runs T tokens (T = 1 while generating). */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "model/deepseek2.h"
#include "model/gsm_decode.h"
#include "model/model.h"

/* Scratch buffers of the step, by name, as bindings. */
struct bufs {
    struct gsmrt_vk_range tokens, pos, x, h, proj, q, qa_lat, q_a, kv_new, partial, o_lat, o;
    struct gsmrt_vk_range ff_g, ff_u, ff_act, router, ids, wts, ex_g, ex_u, ex_act, ex_down, moe_y, logits;
};

/* The tensors of one block, by name (slots of the tensor table; NULL where absent). */
struct ds2_layer {
    struct gsmrt_tensor *attn_norm;       /* [E] */
    struct gsmrt_tensor *attn_q;          /* [H*DK][E] (q_lora_rank 0) */
    struct gsmrt_tensor *attn_q_a;        /* [QL][E] */
    struct gsmrt_tensor *attn_q_a_norm;   /* [QL] */
    struct gsmrt_tensor *attn_q_b;        /* [H*DK][QL] */
    struct gsmrt_tensor *attn_kv_a_mqa;   /* [KVL+R][E] */
    struct gsmrt_tensor *attn_kv_a_norm;  /* [KVL] */
    struct gsmrt_tensor *attn_k_b;        /* [H][KVL][NOPE] */
    struct gsmrt_tensor *attn_v_b;        /* [H][DV][KVL] */
    struct gsmrt_tensor *attn_output;     /* [E][H*DV] */
    struct gsmrt_tensor *ffn_norm;        /* [E] */
    struct gsmrt_tensor *ffn_gate, *ffn_up;   /* [F][E] dense */
    struct gsmrt_tensor *ffn_down;            /* [E][F] dense */
    struct gsmrt_tensor *ffn_gate_inp;        /* [NE][E] router */
    struct gsmrt_tensor *exp_probs_b;         /* [NE] or NULL */
    struct gsmrt_tensor *ffn_gate_exps, *ffn_up_exps;   /* [NE][FE][E] */
    struct gsmrt_tensor *ffn_down_exps;                 /* [NE][E][FE] */
    struct gsmrt_tensor *ffn_gate_shexp, *ffn_up_shexp; /* [FE*NS][E] */
    struct gsmrt_tensor *ffn_down_shexp;                /* [E][FE*NS] */
};

/* The activations of a step of up to max_tok tokens (f->arch_state). */
struct ds2_state {
    struct gsmrt_tensor *token_embd;             /* [V][E] */
    struct gsmrt_tensor *output_norm;            /* [E] */
    struct gsmrt_tensor *output;                 /* [V][E]; token_embd when tied */
    struct ds2_layer *layers;                    /* [L] */
    struct gsmrt_vk_buf x, h, proj;              /* [max_tok][E] */
    struct gsmrt_vk_buf q, qa_lat, q_a;          /* [T][H*DK], [T][H][KVL], [T][QL] */
    struct gsmrt_vk_buf kv_new;                  /* [T][KVL+R] */
    struct gsmrt_vk_buf partial, o_lat, o;       /* attention partials, [T][H][KVL], [T][H*DV] */
    struct gsmrt_vk_buf ff_g, ff_u, ff_act;      /* [T][max(F, FE*NS)] */
    struct gsmrt_vk_buf router, ids, wts;        /* [T][NE], [T][K], [T][K] */
    struct gsmrt_vk_buf ex_g, ex_u, ex_act;      /* [T][K][FE] */
    struct gsmrt_vk_buf ex_down, moe_y;          /* [T][K][E], [T][E] */
};

static gsmrt_status scratch(struct gsmrt_vk_device *dev, uint64_t bytes, struct gsmrt_vk_buf *b,
                            struct gsmrt_err *err)
{
    return gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, bytes ? bytes : 16, b, err);
}

void gsmrt_ds2_forward_fini(struct gsmrt_forward *f)
{
    struct ds2_state *ws = f->arch_state;
    if (!ws) return;
    struct gsmrt_vk_device *dev = f->m->dev;
    struct gsmrt_vk_buf *all[] = {&ws->x,      &ws->h,       &ws->proj,   &ws->q,      &ws->qa_lat, &ws->q_a,
                                  &ws->kv_new, &ws->partial, &ws->o_lat,  &ws->o,      &ws->ff_g,   &ws->ff_u,
                                  &ws->ff_act, &ws->router,  &ws->ids,    &ws->wts,    &ws->ex_g,   &ws->ex_u,
                                  &ws->ex_act, &ws->ex_down, &ws->moe_y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gsmrt_vk_buf_free(dev, all[i]);
    gsmrt_mem_free(f->m->alloc, ws->layers);
    gsmrt_mem_free(f->m->alloc, ws);
    f->arch_state = NULL;
}

static void name_tensors(const struct gsmrt_dmodel *m, struct ds2_state *ws)
{
    ws->token_embd = gsmrt_dmodel_tensor(m, -1, DS2_TOKEN_EMBD);
    ws->output_norm = gsmrt_dmodel_tensor(m, -1, DS2_OUTPUT_NORM);
    ws->output = m->hp.has_output ? gsmrt_dmodel_tensor(m, -1, DS2_OUTPUT) : ws->token_embd;
    for (uint32_t il = 0; il < m->hp.n_layer; il++) {
#define T(slot) gsmrt_dmodel_tensor(m, il, slot)
        ws->layers[il] = (struct ds2_layer){
            .attn_norm = T(DS2_ATTN_NORM),
            .attn_q = T(DS2_ATTN_Q),
            .attn_q_a = T(DS2_ATTN_Q_A),
            .attn_q_a_norm = T(DS2_ATTN_Q_A_NORM),
            .attn_q_b = T(DS2_ATTN_Q_B),
            .attn_kv_a_mqa = T(DS2_ATTN_KV_A_MQA),
            .attn_kv_a_norm = T(DS2_ATTN_KV_A_NORM),
            .attn_k_b = T(DS2_ATTN_K_B),
            .attn_v_b = T(DS2_ATTN_V_B),
            .attn_output = T(DS2_ATTN_OUTPUT),
            .ffn_norm = T(DS2_FFN_NORM),
            .ffn_gate = T(DS2_FFN_GATE),
            .ffn_up = T(DS2_FFN_UP),
            .ffn_down = T(DS2_FFN_DOWN),
            .ffn_gate_inp = T(DS2_FFN_GATE_INP),
            .exp_probs_b = T(DS2_EXP_PROBS_B),
            .ffn_gate_exps = T(DS2_FFN_GATE_EXPS),
            .ffn_up_exps = T(DS2_FFN_UP_EXPS),
            .ffn_down_exps = T(DS2_FFN_DOWN_EXPS),
            .ffn_gate_shexp = T(DS2_FFN_GATE_SHEXP),
            .ffn_up_shexp = T(DS2_FFN_UP_SHEXP),
            .ffn_down_shexp = T(DS2_FFN_DOWN_SHEXP),
        };
#undef T
    }
}

gsmrt_status gsmrt_ds2_forward_init(struct gsmrt_forward *f, struct gsmrt_err *err)
{
    struct gsmrt_dmodel *m = f->m;
    const struct gsmrt_hparams *hp = &m->hp;
    struct gsmrt_vk_device *dev = m->dev;
    struct ds2_state *ws = gsmrt_mem_calloc(m->alloc, 1, sizeof *ws);
    if (!ws) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "forward state");
    f->arch_state = ws;
    if (!(ws->layers = gsmrt_mem_calloc(m->alloc, hp->n_layer, sizeof *ws->layers)))
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "forward state");
    name_tensors(m, ws);
    uint64_t T = f->max_tok, E = hp->n_embd, H = hp->n_head, KVL = hp->kv_lora_rank, R = hp->n_rot;
    uint64_t DK = hp->n_embd_head_k_mla, DV = hp->n_embd_head_v_mla;
    uint64_t ff = hp->n_ff > (uint64_t)hp->n_ff_exp * hp->n_expert_shared ? hp->n_ff
                                                                           : (uint64_t)hp->n_ff_exp * hp->n_expert_shared;
    uint64_t K = hp->n_expert_used ? hp->n_expert_used : 1, FE = hp->n_ff_exp;
    uint64_t splits = gsmrt_k_attn_splits(f->n_ctx);
    struct { struct gsmrt_vk_buf *b; uint64_t floats; } plan[] = {
        {&ws->x, T * E},           {&ws->h, T * E},           {&ws->proj, T * E},
        {&ws->q, T * H * DK},      {&ws->qa_lat, T * H * KVL}, {&ws->q_a, T * hp->q_lora_rank},
        {&ws->kv_new, T * (KVL + R)},
        {&ws->partial, T * H * splits * (2 + KVL)},
        {&ws->o_lat, T * H * KVL}, {&ws->o, T * H * DV},
        {&ws->ff_g, T * ff},       {&ws->ff_u, T * ff},       {&ws->ff_act, T * ff},
        {&ws->router, T * hp->n_expert}, {&ws->ids, T * K},   {&ws->wts, T * K},
        {&ws->ex_g, T * K * FE},   {&ws->ex_u, T * K * FE},   {&ws->ex_act, T * K * FE},
        {&ws->ex_down, T * K * E}, {&ws->moe_y, T * E},
    };
    gsmrt_status st = GSMRT_OK;
    for (size_t i = 0; i < sizeof plan / sizeof plan[0] && st == GSMRT_OK; i++) {
        if (plan[i].floats * 4 > dev->binding_range)
            st = gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                               "a step of %u tokens needs an activation of %.1f MiB, more than one binding; "
                               "use a smaller batch",
                               f->max_tok, plan[i].floats * 4 / 1048576.0);
        else st = scratch(dev, plan[i].floats * 4, plan[i].b, err);
    }
    return st;
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
        TRY(gsmrt_kv_cache_bind(dev, s->kv, il, 0, &hot, &cold, &table, err));
        TRY(gsmrt_k_kv_store(rec, &b->kv_new, &table, &b->pos, &hot, s->kv->type, s->n_tok, s->tok0, ROW, ROW,
                             s->kv->page_size, err));
        summaries |= s->gsm && s->gsm->n_summ;
    }
    gsmrt_vk_rec_barrier(rec);
    for (uint32_t i = 0; summaries && i < n_seq; i++) {   /* summaries of the pages this step filled */
        if (!seqs[i].gsm || !seqs[i].gsm->n_summ) continue;
        TRY(gsmrt_kv_cache_bind(dev, seqs[i].kv, il, 0, &hot, &cold, &table, err));
        TRY(gsmrt_gsm_decode_summarize(seqs[i].gsm, rec, il, &hot, err));
    }
    if (summaries) gsmrt_vk_rec_barrier(rec);
    for (uint32_t i = 0; i < n_seq; i++) {
        const struct gsmrt_seq_step *s = &seqs[i];
        /* the sequences' partials are disjoint rows of one buffer, but bound
         * whole (offsets could break the binding alignment): a barrier keeps
         * one sequence's writes apart from the previous one's reads */
        if (i > 0) gsmrt_vk_rec_barrier(rec);
        TRY(gsmrt_kv_cache_bind(dev, s->kv, il, 0, &hot, &cold, &table, err));
        if (s->gsm && s->gsm->use && s->gsm->layer_gated[il]) {   /* the gate decides which pages take part */
            struct gsmrt_k_attn_gsm gp = {.n_heads = H,
                                          .kv_lora = KVL,
                                          .rope_dim = R,
                                          .page_size = s->kv->page_size,
                                          .q_stride = H * DK,
                                          .q_head = DK,
                                          .q_off = NOPE,
                                          .q_tok0 = s->tok0,
                                          .out_tok0 = s->tok0,
                                          .n_active_keys = 0,   /* set by GSM's plan */
                                          .n_cold = 0,
                                          .scale = hp->kq_scale,
                                          .kv_type = s->kv->type};
            TRY(gsmrt_gsm_decode_attend(s->gsm, rec, il, &gp, &b->qa_lat, &b->q, &hot, &cold, &b->o_lat, err));
        } else {
            struct gsmrt_k_attn ap = {.n_tok = s->n_tok,
                                      .n_heads = H,
                                      .kv_lora = KVL,
                                      .rope_dim = R,
                                      .q_stride = H * DK,
                                      .q_head = DK,
                                      .q_off = NOPE,
                                      .page_size = s->kv->page_size,
                                      .n_keys = s->pos0 + s->n_tok,
                                      .scale = hp->kq_scale,
                                      .tok0 = s->tok0,
                                      .n_splits = n_splits,
                                      .kv_type = s->kv->type};
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
    const struct ds2_layer *l = &((const struct ds2_state *)f->arch_state)->layers[il];
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
    struct gsmrt_rope_params rp = {.n_tok = T,
                                   .n_heads = H,
                                   .head_stride = DK,
                                   .row_stride = H * DK,
                                   .rot_offset = NOPE,
                                   .n_dims = R,
                                   .mode = GSMRT_ROPE_NORM,
                                   .freq_base = hp->rope_freq_base,
                                   .freq_scale = hp->freq_scale,
                                   .ext_factor = hp->ext_factor,
                                   .attn_factor = hp->rope_attn_factor,
                                   .corr_low = hp->yarn_corr_dims[0],
                                   .corr_high = hp->yarn_corr_dims[1]};
    TRY(gsmrt_k_rope(rec, &b->q, &b->pos, &rp, err));
    gsmrt_vk_rec_barrier(rec);
    rp.n_heads = 1;
    rp.head_stride = ROW;
    rp.row_stride = ROW;
    rp.rot_offset = KVL;
    TRY(gsmrt_k_rope(rec, &b->kv_new, &b->pos, &rp, err));
    struct gsmrt_k_head_matvec absorb = {.n_heads = H,
                                         .n_tok = T,
                                         .x_stride = H * DK,
                                         .x_head = DK,
                                         .x_off = 0,
                                         .y_stride = H * KVL,
                                         .y_head = KVL,
                                         .y_off = 0};
    TRY(gsmrt_k_head_matvec(rec, &l->attn_k_b->w, &absorb, &b->q, &b->qa_lat, err));
    gsmrt_vk_rec_barrier(rec);
    TRY(cache_attention(f, seqs, n_seq, b, il, err));
    gsmrt_vk_rec_barrier(rec);
    if (f->stats)   /* calibration: statistics of this layer's attention rows */
        TRY(gsmrt_attn_stats_record(f, seqs, n_seq, il, &b->qa_lat, &b->q, &b->pos, err));
    /* o[h] = v_b[h] o_lat[h];  x += attn_output o */
    uint32_t DV = hp->n_embd_head_v_mla;
    struct gsmrt_k_head_matvec unabsorb = {.n_heads = H,
                                           .n_tok = T,
                                           .x_stride = H * KVL,
                                           .x_head = KVL,
                                           .x_off = 0,
                                           .y_stride = H * DV,
                                           .y_head = DV,
                                           .y_off = 0};
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
    const struct ds2_layer *l = &((const struct ds2_state *)f->arch_state)->layers[il];
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
        struct gsmrt_k_moe_route rp = {.n_tok = T,
                                       .n_expert = hp->n_expert,
                                       .n_used = K,
                                       .gating = (uint32_t)hp->expert_gating_func,
                                       .n_groups = hp->expert_group_count,
                                       .n_groups_used = hp->expert_group_used_count,
                                       .norm = hp->expert_weights_norm,
                                       .scale = hp->expert_weights_scale};
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
    struct ds2_state *ws = f->arch_state;
    struct { struct gsmrt_vk_buf *buf; struct gsmrt_vk_range *r; } map[] = {
        {&f->tokens, &b->tokens},   {&f->pos, &b->pos},         {&ws->x, &b->x},
        {&ws->h, &b->h},            {&ws->proj, &b->proj},      {&ws->q, &b->q},
        {&ws->qa_lat, &b->qa_lat},  {&ws->q_a, &b->q_a},        {&ws->kv_new, &b->kv_new},
        {&ws->partial, &b->partial}, {&ws->o_lat, &b->o_lat},   {&ws->o, &b->o},
        {&ws->ff_g, &b->ff_g},      {&ws->ff_u, &b->ff_u},      {&ws->ff_act, &b->ff_act},
        {&ws->router, &b->router},  {&ws->ids, &b->ids},        {&ws->wts, &b->wts},
        {&ws->ex_g, &b->ex_g},      {&ws->ex_u, &b->ex_u},      {&ws->ex_act, &b->ex_act},
        {&ws->ex_down, &b->ex_down}, {&ws->moe_y, &b->moe_y},   {&f->logits, &b->logits},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) TRY(bind(dev, map[i].buf, map[i].r, err));
    return GSMRT_OK;
}

/* The final norm and the output head over rows [first, first + n) of x. */
static gsmrt_status output_head(struct gsmrt_forward *f, const struct bufs *b, uint32_t first, uint32_t n,
                                struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    struct gsmrt_vk_device *dev = f->m->dev;
    struct ds2_state *ws = f->arch_state;
    uint32_t E = hp->n_embd;
    struct gsmrt_vk_range xl, hl;
    TRY(gsmrt_vk_buf_range(dev, &ws->x, (VkDeviceSize)first * E * 4, (VkDeviceSize)n * E * 4, &xl, err));
    TRY(gsmrt_vk_buf_range(dev, &ws->h, 0, (VkDeviceSize)n * E * 4, &hl, err));
    TRY(gsmrt_k_rms_norm(f->rec, &xl, &ws->output_norm->range, &hl, n, E, hp->rms_eps, err));
    gsmrt_vk_rec_barrier(f->rec);
    return linear(f->rec, ws->output, &hl, &b->logits, n, err);
}

gsmrt_status gsmrt_ds2_record_step(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                   uint32_t n_tok, uint32_t first, uint32_t n_rows, struct gsmrt_err *err)
{
    const struct gsmrt_hparams *hp = &f->m->hp;
    const struct ds2_state *ws = f->arch_state;
    struct gsmrt_vk_rec *rec = f->rec;
    struct bufs b;
    TRY(bind_all(f, &b, err));
    TRY(gsmrt_k_get_rows(rec, &ws->token_embd->w, &b.tokens, n_tok, &b.x, err));
    gsmrt_vk_rec_barrier(rec);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        TRY(attention(f, seqs, n_seq, &b, il, n_tok, err));
        TRY(ffn(f, &b, il, n_tok, err));
    }
    if (n_rows) TRY(output_head(f, &b, first, n_rows, err));
    return GSMRT_OK;
}
