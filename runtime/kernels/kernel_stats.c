/* kernel_stats.c -- the record function of attn_stats: per (token, head) the
 * attention mass by distance band, the sink mass and the entropy of one
 * layer's attention rows, for calibration. It recomputes the scores the
 * attention kernels use and changes nothing they read. */
#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

gsmrt_status gsmrt_k_attn_stats(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_stats *p,
                                const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *pages,
                                const struct gsmrt_vk_range *pos, const struct gsmrt_vk_range *edges,
                                const struct gsmrt_vk_range *out, struct gsmrt_err *err)
{
    uint64_t need = ((uint64_t)p->tok0 + p->n_tok) * p->n_heads * (p->n_bands + 2) * 4;
    if (p->n_tok == 0 || p->n_heads == 0 || p->page_size == 0 || (p->page_size & (p->page_size - 1)) ||
        p->n_bands < 1 || p->n_bands > GSMRT_K_ATTN_STATS_MAX_BANDS || edges->size < (uint64_t)p->n_bands * 4 ||
        out->size < need)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "attn_stats: %u tokens, %u heads, page size %u (a power of two), %u bands (1..%d), "
                             "edges %llu bytes, output %llu of %llu bytes",
                             p->n_tok, p->n_heads, p->page_size, p->n_bands, GSMRT_K_ATTN_STATS_MAX_BANDS,
                             (unsigned long long)edges->size, (unsigned long long)out->size,
                             (unsigned long long)need);
    struct gsmrt_vk_device *dev = rec->dev;
    if (p->n_tok > dev->caps.max_workgroup_count[1] || p->n_heads > dev->caps.max_workgroup_count[0])
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "attn_stats: %u tokens x %u heads exceed the workgroup grid",
                             p->n_tok, p->n_heads);
    const uint32_t spec[6] = {GSMRT_K_ELEMENTWISE_WG, p->kv_lora, p->rope_dim, p->page_size,
                              GSMRT_K_ATTN_STATS_MAX_KEYS, p->kv_type == GSMRT_KV_F16};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_STATS, spec, 6, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_attn_stats pc = {p->n_heads, p->q_stride, p->q_head, p->q_off, p->n_bands, p->sink_tokens,
                                     p->scale, p->tok0};
    struct gsmrt_vk_range b[7] = {*qa, *qr, *kv, *pages, *pos, *edges, *out};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 7, &pc, sizeof pc, p->n_heads, p->n_tok, 1, "attn_stats", err);
}
