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
