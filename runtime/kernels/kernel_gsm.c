/* kernel_gsm.c -- record functions for GSM's kernels: page summaries and the
 * gate's per-page score bounds. (The policy that uses them is gsm/.) */
#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

gsmrt_status gsmrt_k_page_summary(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *kv,
                                  const struct gsmrt_vk_range *list, const struct gsmrt_vk_range *sum,
                                  uint32_t n_list, uint32_t row, uint32_t page_size, struct gsmrt_err *err)
{
    if (n_list == 0 || row == 0 || page_size == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "page_summary: %u pages of %u rows of %u", n_list,
                             page_size, row);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_PAGE_SUMMARY, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_page_summary pc = {n_list, row, page_size};
    struct gsmrt_vk_range b[3] = {*kv, *list, *sum};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, (row + wg - 1) / wg, n_list, 1, "page_summary",
                                 err);
}

gsmrt_status gsmrt_k_gate_bound(struct gsmrt_vk_rec *rec, const struct gsmrt_k_gate_bound *p,
                                const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                const struct gsmrt_vk_range *sum, const struct gsmrt_vk_range *pages,
                                const struct gsmrt_vk_range *ub, struct gsmrt_err *err)
{
    if (p->n_heads == 0 || p->n_pages == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gate_bound: %u heads, %u pages", p->n_heads, p->n_pages);
    const uint32_t spec[3] = {GSMRT_K_ELEMENTWISE_WG, p->kv_lora, p->rope_dim};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_GATE_BOUND, spec, 3, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_gate_bound pc = {p->n_heads, p->n_pages, p->q_head, p->q_off, p->scale};
    struct gsmrt_vk_range b[5] = {*qa, *qr, *sum, *pages, *ub};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 5, &pc, sizeof pc, (p->n_pages + GSMRT_K_ELEMENTWISE_WG - 1) /
                                 GSMRT_K_ELEMENTWISE_WG, p->n_heads, 1, "gate_bound", err);
}

gsmrt_status gsmrt_k_attn_gsm(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_gsm *p,
                              const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                              const struct gsmrt_vk_range *hot_kv, const struct gsmrt_vk_range *active_pages,
                              const struct gsmrt_vk_range *active_last_pos, const struct gsmrt_vk_range *cold_kv,
                              const struct gsmrt_vk_range *cold_sum, const struct gsmrt_vk_range *cold_pages,
                              const struct gsmrt_vk_range *cold_slots, const struct gsmrt_vk_range *ub,
                              const struct gsmrt_vk_range *sel, const struct gsmrt_vk_range *info,
                              const struct gsmrt_vk_range *partial, const struct gsmrt_vk_range *out,
                              struct gsmrt_err *err)
{
    if (p->n_cold > 256 || p->page_size > GSMRT_K_ELEMENTWISE_WG || p->n_active_keys == 0)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "GSM attention: %u cold pages (at most 256), pages of %u (at most %u), %u active keys",
                             p->n_cold, p->page_size, GSMRT_K_ELEMENTWISE_WG, p->n_active_keys);
    uint32_t n_exact = gsmrt_k_attn_splits(p->n_active_keys), n_total = n_exact + p->n_cold;
    uint64_t need = (uint64_t)p->n_heads * n_total * (2 + p->kv_lora) * 4;
    if (partial->size < need)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "GSM attention: partial buffer of %llu bytes, %llu needed",
                             (unsigned long long)partial->size, (unsigned long long)need);
    struct gsmrt_vk_device *dev = rec->dev;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st;
    /* 1. the exact part, over as many splits as there are slots: the splits
     *    past the active keys come out empty (l = 0) for the cold pages */
    const uint32_t spec_a[5] = {gsmrt_k_reduce_wg_size(dev), GSMRT_K_ATTN_SPLIT, p->kv_lora, p->rope_dim,
                                p->page_size};
    st = gsmrt_k_pipeline(rec, gsmrt_k_use_subgroups(dev) ? GSMRT_KERNEL_ATTN_PARTIAL : GSMRT_KERNEL_ATTN_PARTIAL_NOSG,
                          spec_a, 5, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_partial pa = {p->n_heads, 0, p->q_head, p->q_off, p->page_size, n_total, p->scale};
    struct gsmrt_vk_range ba[6] = {*qa, *qr, *hot_kv, *active_pages, *active_last_pos, *partial};
    st = gsmrt_vk_rec_dispatch(rec, pipe, ba, 6, &pa, sizeof pa, n_total, p->n_heads, 1, "attn_partial", err);
    if (st != GSMRT_OK) return st;
    if (p->n_cold) {
        /* 2. bounds (reads only; runs beside the exact part) */
        struct gsmrt_k_gate_bound gb = {p->n_heads, p->n_cold, p->kv_lora, p->rope_dim, p->q_head, p->q_off, p->scale};
        st = gsmrt_k_gate_bound(rec, &gb, qa, qr, cold_sum, cold_slots, ub, err);
        if (st != GSMRT_OK) return st;
        gsmrt_vk_rec_barrier(rec);
        /* 3. the gate, per head */
        uint32_t max_cold = 256;
        st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_GATE_SELECT, &max_cold, 1, &pipe, err);
        if (st != GSMRT_OK) return st;
        /* all n_total slots per head: the cold ones are still empty (l = 0)
         * and weigh nothing in the exact part's (M, L) */
        struct gsmrt_pc_gate_select ps = {p->n_heads, n_total, p->kv_lora, p->n_cold, p->threshold};
        struct gsmrt_vk_range bs[5] = {*partial, *ub, *cold_pages, *sel, *info};
        st = gsmrt_vk_rec_dispatch(rec, pipe, bs, 5, &ps, sizeof ps, p->n_heads, 1, 1, "gate_select", err);
        if (st != GSMRT_OK) return st;
        gsmrt_vk_rec_barrier(rec);
        /* 4. the selected cold pages */
        const uint32_t spec_c[4] = {GSMRT_K_ELEMENTWISE_WG, p->kv_lora, p->rope_dim, p->page_size};
        st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_COLD, spec_c, 4, &pipe, err);
        if (st != GSMRT_OK) return st;
        struct gsmrt_pc_attn_cold pc = {p->n_heads, p->n_cold, n_exact, n_total, p->q_head, p->q_off, p->scale};
        struct gsmrt_vk_range bc[6] = {*qa, *qr, *cold_kv, *sel, *info, *partial};
        st = gsmrt_vk_rec_dispatch(rec, pipe, bc, 6, &pc, sizeof pc, p->n_cold, p->n_heads, 1, "attn_cold", err);
        if (st != GSMRT_OK) return st;
    }
    gsmrt_vk_rec_barrier(rec);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_MERGE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_merge mc = {p->n_heads, n_total, p->kv_lora, p->kv_lora};
    struct gsmrt_vk_range mb[2] = {*partial, *out};
    return gsmrt_vk_rec_dispatch(rec, pipe, mb, 2, &mc, sizeof mc, p->n_heads, 1, 1, "attn_merge", err);
}
