/* forward.c -- the step driver, for any architecture: checks a batch and
 * lays its tokens out, plans each sequence's cache (and GSM tiers), uploads
 * ids and positions, lets the architecture record the step (model/arch.h),
 * submits once and copies the wanted logits out. */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/mem.h"
#include "model/gsm_decode.h"
#include "model/model.h"

#define TRY(expr)                        \
    do {                                 \
        gsmrt_status st_ = (expr);       \
        if (st_ != GSMRT_OK) return st_; \
    } while (0)

void gsmrt_forward_destroy(struct gsmrt_forward *f)
{
    if (!f) return;
    struct gsmrt_vk_device *dev = f->m->dev;
    if (f->arch_state) f->m->arch->forward_fini(f);
    gsmrt_vk_rec_destroy(f->rec);
    gsmrt_mem_free(f->m->alloc, f->pos_host);
    gsmrt_mem_free(f->m->alloc, f->tok_host);
    gsmrt_vk_buf_free(dev, &f->tokens);
    gsmrt_vk_buf_free(dev, &f->pos);
    gsmrt_vk_buf_free(dev, &f->logits);
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
    uint64_t logit_bytes = (uint64_t)max_tok * hp->n_vocab * 4;
    gsmrt_status st = GSMRT_OK;
    if (logit_bytes > dev->binding_range)
        st = gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                           "a step of %u tokens needs an activation of %.1f MiB, more than one binding; "
                           "use a smaller batch",
                           max_tok, logit_bytes / 1048576.0);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, (uint64_t)max_tok * 4, &f->tokens, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, (uint64_t)max_tok * 4, &f->pos, err);
    if (st == GSMRT_OK) st = m->arch->forward_init(f, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, logit_bytes, &f->logits, err);
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

    struct gsmrt_vk_rec *rec = f->rec;
    TRY(gsmrt_vk_rec_begin(rec, err));
    for (uint32_t i = 0; i < n_seq; i++)   /* page copies between the tiers (GSM swap) */
        if (seqs[i].gsm) TRY(gsmrt_gsm_decode_record_moves(seqs[i].gsm, rec, seqs[i].kv, err));
    TRY(f->m->arch->record_step(f, seqs, n_seq, n_tok, first, n_rows, err));
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
    struct gsmrt_seq_step s = {.kv = kv,
                               .gsm = f->gsm,
                               .tokens = tokens,
                               .n_tok = n_tok,
                               .pos0 = pos0,
                               .n_logits = n_logits,
                               .logits_out = logits_out,
                               .tok0 = 0};
    return gsmrt_forward_run_batch(f, &s, 1, err);
}
