/* kernel_gsm.c -- record functions for GSM's kernels: page summaries and the
 * gate's per-page score bounds. (The policy that uses them is gsm/.) */
#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

gsmrt_status gsmrt_k_page_summary(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *kv,
                                  enum gsmrt_kv_type kv_type, const struct gsmrt_vk_range *list, const struct gsmrt_vk_range *sum,
                                  uint32_t n_list, uint32_t row, uint32_t page_size, struct gsmrt_err *err)
{
    if (n_list == 0 || row == 0 || page_size == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "page_summary: %u pages of %u rows of %u", n_list,
                             page_size, row);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    const uint32_t spec[2] = {wg, kv_type == GSMRT_KV_F16};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_PAGE_SUMMARY, spec, 2, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_page_summary pc = {n_list, row, page_size};
    struct gsmrt_vk_range b[3] = {*kv, *list, *sum};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, (row + wg - 1) / wg, n_list, 1, "page_summary",
                                 err);
}

gsmrt_status gsmrt_k_gate_bound(struct gsmrt_vk_rec *rec, const struct gsmrt_k_gate_bound *p,
                                const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                const struct gsmrt_vk_range *sum, const struct gsmrt_vk_range *cold_list,
                                const struct gsmrt_vk_range *ub, struct gsmrt_err *err)
{
    if (p->n_heads == 0 || p->n_pages == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gate_bound: %u heads, %u pages", p->n_heads, p->n_pages);
    const uint32_t spec[3] = {GSMRT_K_ELEMENTWISE_WG, p->kv_lora, p->rope_dim};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_GATE_BOUND, spec, 3, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_gate_bound pc = {p->n_heads, p->n_pages, p->q_head, p->q_off, p->scale, p->q_stride, p->q_tok0};
    struct gsmrt_vk_range b[5] = {*qa, *qr, *sum, *cold_list, *ub};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 5, &pc, sizeof pc, (p->n_pages + GSMRT_K_ELEMENTWISE_WG - 1) /
                                 GSMRT_K_ELEMENTWISE_WG, p->n_heads, 1, "gate_bound", err);
}

/* Steps 2-4 and 5 of gsmrt_k_attn_gsm: the gate and the selected pages. */
static gsmrt_status record_gated(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_gsm *p,
                                 const struct gsmrt_k_attn_gsm_bufs *b, uint32_t n_exact, uint32_t n_total,
                                 struct gsmrt_err *err)
{
    struct gsmrt_vk_pipeline *pipe;
    /* bounds: reads only, so it runs beside the exact part */
    struct gsmrt_k_gate_bound gb = {p->n_heads, p->n_cold, p->kv_lora, p->rope_dim, p->q_head,
                                    p->q_off,   p->q_stride, p->q_tok0, p->scale};
    gsmrt_status st = gsmrt_k_gate_bound(rec, &gb, &b->qa, &b->qr, &b->sums, &b->cold_list, &b->ub, err);
    if (st != GSMRT_OK) return st;
    gsmrt_vk_rec_barrier(rec);
    uint32_t max_cold = GSMRT_K_GSM_MAX_COLD;
    st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_GATE_SELECT, &max_cold, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    /* all n_total slots per head: the gated ones are still empty (l = 0)
     * and weigh nothing in the exact part's (M, L) */
    struct gsmrt_pc_gate_select ps = {p->n_heads, n_total, p->kv_lora, p->n_cold};
    struct gsmrt_vk_range bs[6] = {b->partial, b->ub, b->cold_list, b->sel, b->info, b->heads};
    st = gsmrt_vk_rec_dispatch(rec, pipe, bs, 6, &ps, sizeof ps, p->n_heads, 1, 1, "gate_select", err);
    if (st != GSMRT_OK) return st;
    gsmrt_vk_rec_barrier(rec);
    const uint32_t spec_c[5] = {GSMRT_K_ELEMENTWISE_WG, p->kv_lora, p->rope_dim, p->page_size,
                                p->kv_type == GSMRT_KV_F16};
    st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_COLD, spec_c, 5, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_cold pc = {p->n_heads, p->n_cold, n_exact,    n_total,
                                    p->q_head,  p->q_off,  p->scale,   p->q_stride, p->q_tok0};
    struct gsmrt_vk_range bc[8] = {b->qa, b->qr, b->hot_kv, b->sel, b->info, b->partial, b->cold_kv, b->cold_list};
    return gsmrt_vk_rec_dispatch(rec, pipe, bc, 8, &pc, sizeof pc, p->n_cold, p->n_heads, 1, "attn_cold", err);
}

static gsmrt_status record_page_mass(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_gsm *p,
                                     const struct gsmrt_k_attn_gsm_bufs *b, uint32_t n_exact, uint32_t n_total,
                                     struct gsmrt_err *err)
{
    const uint32_t spec[3] = {GSMRT_K_ELEMENTWISE_WG, p->n_heads, GSMRT_K_GSM_MAX_COLD};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_PAGE_MASS, spec, 3, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_page_mass pc = {p->n_heads, n_total, p->kv_lora, p->n_cold, n_exact};
    struct gsmrt_vk_range bm[5] = {b->partial, b->sel, b->info, b->ub, b->mass};
    return gsmrt_vk_rec_dispatch(rec, pipe, bm, 5, &pc, sizeof pc, 1, 1, 1, "page_mass", err);
}

gsmrt_status gsmrt_k_attn_gsm(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_gsm *p,
                              const struct gsmrt_k_attn_gsm_bufs *b, struct gsmrt_err *err)
{
    if (p->n_cold > GSMRT_K_GSM_MAX_COLD || p->page_size > GSMRT_K_ELEMENTWISE_WG || p->n_active_keys == 0)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "GSM attention: %u gated pages (at most %u), pages of %u (at most %u), %u active keys",
                             p->n_cold, GSMRT_K_GSM_MAX_COLD, p->page_size, GSMRT_K_ELEMENTWISE_WG,
                             p->n_active_keys);
    uint32_t n_exact = gsmrt_k_attn_splits(p->n_active_keys), n_total = n_exact + p->n_cold;
    uint64_t need = (uint64_t)p->n_heads * n_total * (2 + p->kv_lora) * 4;
    if (b->partial.size < need || (b->mass.size && b->mass.size < (uint64_t)(3 + p->n_heads) * p->n_cold * 4))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "GSM attention: partial buffer of %llu bytes, %llu needed; mass buffer of %llu",
                             (unsigned long long)b->partial.size, (unsigned long long)need,
                             (unsigned long long)b->mass.size);
    struct gsmrt_vk_device *dev = rec->dev;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st;
    /* 1. the exact part, over as many splits as there are slots: the splits
     *    past the active keys come out empty (l = 0) for the gated pages */
    const uint32_t spec_a[6] = {gsmrt_k_reduce_wg_size(dev), GSMRT_K_ATTN_SPLIT, p->kv_lora, p->rope_dim,
                                p->page_size, p->kv_type == GSMRT_KV_F16};
    st = gsmrt_k_pipeline(rec, gsmrt_k_use_subgroups(dev) ? GSMRT_KERNEL_ATTN_PARTIAL : GSMRT_KERNEL_ATTN_PARTIAL_NOSG,
                          spec_a, 6, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_partial pa = {p->n_heads, p->q_stride, p->q_head, p->q_off, p->page_size,
                                       n_total,    p->scale,    p->q_tok0, 0};
    struct gsmrt_vk_range ba[7] = {b->qa, b->qr, b->hot_kv, b->active, b->active_last_pos, b->partial, b->cold_kv};
    st = gsmrt_vk_rec_dispatch(rec, pipe, ba, 7, &pa, sizeof pa, n_total, p->n_heads, 1, "attn_partial", err);
    if (st == GSMRT_OK && p->n_cold) st = record_gated(rec, p, b, n_exact, n_total, err);
    if (st != GSMRT_OK) return st;
    gsmrt_vk_rec_barrier(rec);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_MERGE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_merge mc = {p->n_heads, n_total, p->kv_lora, p->kv_lora, 0, p->out_tok0 * p->n_heads};
    struct gsmrt_vk_range mb[2] = {b->partial, b->out};
    st = gsmrt_vk_rec_dispatch(rec, pipe, mb, 2, &mc, sizeof mc, p->n_heads, 1, 1, "attn_merge", err);
    if (st == GSMRT_OK && p->n_cold && b->mass.size) st = record_page_mass(rec, p, b, n_exact, n_total, err);
    return st;
}
