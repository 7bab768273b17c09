/* kernel_model.c -- record functions for the decoder's model-specific
 * kernels: per-head products (MLA absorption), expert routing and products,
 * paged MLA attention (split + merge) and the cache store. */
#include "base/mem.h"
#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

/* The kernel of a product family for this device and weight type (a table
 * lookup), and its workgroup size: one output per invocation (CPU devices),
 * or a reduction per output. */
static gsmrt_status product_kernel(const struct gsmrt_vk_device *dev, enum gsmrt_kfamily family,
                                   enum gsmrt_wtype t, enum gsmrt_kernel *id, uint32_t *wg, struct gsmrt_err *err)
{
    *wg = gsmrt_k_row_per_invocation(dev) ? GSMRT_K_ELEMENTWISE_WG : GSMRT_K_MATVEC_WG;
    return gsmrt_k_product_kernel(dev, family, t, id, err);
}

/* Workgroups for n outputs: one each when reducing, wg outputs each otherwise. */
static uint32_t groups_for(const struct gsmrt_vk_device *dev, uint32_t n, uint32_t wg)
{
    return gsmrt_k_row_per_invocation(dev) ? (n + wg - 1) / wg : n;
}

gsmrt_status gsmrt_k_head_matvec(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                                 const struct gsmrt_k_head_matvec *p, const struct gsmrt_vk_range *x,
                                 const struct gsmrt_vk_range *y, struct gsmrt_err *err)
{
    if (!gsmrt_wtype_find((uint32_t)w->type))
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "head_matvec: weights of type %s are not supported",
                             gsmrt_wtype_name(w->type));
    uint64_t bytes = gsmrt_wtype_row_bytes(w->type, w->n_cols) * w->n_rows;
    if (p->n_heads == 0 || w->n_rows % p->n_heads || p->n_tok == 0 || bytes == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "head_matvec: %u rows for %u heads, %u tokens",
                             w->n_rows, p->n_heads, p->n_tok);
    struct gsmrt_vk_range wr;
    gsmrt_status st = gsmrt_vk_buf_range(rec->dev, w->buf, w->offset, gsmrt_align_up(bytes, 4), &wr, err);
    if (st != GSMRT_OK) return st;
    uint32_t wg;
    enum gsmrt_kernel id;
    st = product_kernel(rec->dev, GSMRT_KFAMILY_HEAD_MATVEC, w->type, &id, &wg, err);
    struct gsmrt_vk_pipeline *pipe;
    if (st == GSMRT_OK) st = gsmrt_k_pipeline(rec, id, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    uint32_t rows = w->n_rows / p->n_heads;
    struct gsmrt_pc_head_matvec pc = {w->n_cols, rows,       p->n_heads, p->n_tok, p->x_stride,
                                      p->x_head, p->x_off,   p->y_stride, p->y_head, p->y_off};
    struct gsmrt_vk_range b[3] = {wr, *x, *y};
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, groups_for(rec->dev, rows * p->n_heads * p->n_tok, wg), &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, gx, gy, 1, "head_matvec", err);
}

gsmrt_status gsmrt_k_moe_route(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *logits,
                               const struct gsmrt_vk_range *bias, const struct gsmrt_vk_range *ids,
                               const struct gsmrt_vk_range *weights, const struct gsmrt_k_moe_route *p,
                               struct gsmrt_err *err)
{
    if (p->n_expert == 0 || p->n_expert > 256 || p->n_used == 0 || p->n_used > p->n_expert ||
        p->n_groups > 64 || (p->n_groups > 1 && (p->n_expert % p->n_groups || p->n_groups_used == 0 ||
                                                 p->n_groups_used > p->n_groups)))
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "moe routing: %u experts (at most 256), %u used, %u groups (%u used)",
                             p->n_expert, p->n_used, p->n_groups, p->n_groups_used);
    uint32_t max_experts = 256;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_MOE_ROUTE, &max_experts, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_moe_route pc = {p->n_tok,    p->n_expert,       p->n_used, p->gating, bias != NULL,
                                    p->n_groups, p->n_groups_used, p->norm,   p->scale};
    /* Without a bias the binding still needs a valid range: the logits. */
    struct gsmrt_vk_range b[4] = {*logits, bias ? *bias : *logits, *ids, *weights};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 4, &pc, sizeof pc, p->n_tok, 1, 1, "moe_route", err);
}

gsmrt_status gsmrt_k_moe_matvec(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                                uint32_t n_expert, const struct gsmrt_vk_range *x,
                                const struct gsmrt_vk_range *ids, const struct gsmrt_vk_range *y,
                                uint32_t n_tok, uint32_t n_used, bool x_per_slot,
                                struct gsmrt_err *err)
{
    const struct gsmrt_vk_device *dev = rec->dev;
    if (!gsmrt_wtype_find((uint32_t)w->type))
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "moe_matvec: weights of type %s are not supported",
                             gsmrt_wtype_name(w->type));
    uint64_t row_bytes = gsmrt_wtype_row_bytes(w->type, w->n_cols);
    if (n_expert == 0 || w->n_rows % n_expert || row_bytes == 0 || n_tok == 0 || n_used == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "moe_matvec: %u rows for %u experts",
                             w->n_rows, n_expert);
    uint32_t rows = w->n_rows / n_expert;
    uint64_t expert_bytes = row_bytes * rows;
    uint64_t per_chunk = gsmrt_vk_rows_per_chunk(expert_bytes, dev->binding_range - 4,
                                                 dev->caps.min_storage_buffer_offset_alignment);
    if (per_chunk == 0)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "moe_matvec: one expert (%llu bytes) exceeds a binding",
                             (unsigned long long)expert_bytes);
    uint32_t wg;
    enum gsmrt_kernel id;
    gsmrt_status st = product_kernel(dev, GSMRT_KFAMILY_MOE_MATVEC, w->type, &id, &wg, err);
    struct gsmrt_vk_pipeline *pipe;
    if (st == GSMRT_OK) st = gsmrt_k_pipeline(rec, id, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    uint32_t gx, gy;
    gsmrt_k_split_groups(dev, groups_for(dev, rows * n_used * n_tok, wg), &gx, &gy);
    for (uint64_t e0 = 0; e0 < n_expert && st == GSMRT_OK; e0 += per_chunk) {
        uint64_t n = n_expert - e0 < per_chunk ? n_expert - e0 : per_chunk;
        struct gsmrt_vk_range wr;
        st = gsmrt_vk_buf_range(dev, w->buf, w->offset + e0 * expert_bytes, gsmrt_align_up(n * expert_bytes, 4),
                                &wr, err);
        if (st != GSMRT_OK) break;
        struct gsmrt_pc_moe_matvec pc = {w->n_cols, rows, n_tok, n_used, x_per_slot, (uint32_t)e0, (uint32_t)n};
        struct gsmrt_vk_range b[4] = {wr, *x, *ids, *y};
        st = gsmrt_vk_rec_dispatch(rec, pipe, b, 4, &pc, sizeof pc, gx, gy, 1, "moe_matvec", err);
    }
    return st;
}

gsmrt_status gsmrt_k_moe_combine(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *w,
                                 const struct gsmrt_vk_range *z, const struct gsmrt_vk_range *y,
                                 uint32_t n_tok, uint32_t n_used, uint32_t width,
                                 struct gsmrt_err *err)
{
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_MOE_COMBINE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_moe_combine pc = {n_tok, n_used, width};
    struct gsmrt_vk_range b[3] = {*w, *z, *y};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, (width + wg - 1) / wg, n_tok, 1, "moe_combine",
                                 err);
}

uint32_t gsmrt_kv_type_bytes(enum gsmrt_kv_type type)
{
    return type == GSMRT_KV_F16 ? 2 : 4;
}

const char *gsmrt_kv_type_name(enum gsmrt_kv_type type)
{
    return type == GSMRT_KV_F16 ? "f16" : "f32";
}

uint32_t gsmrt_k_attn_splits(uint32_t n_keys)
{
    return n_keys == 0 ? 1 : (n_keys + GSMRT_K_ATTN_SPLIT - 1) / GSMRT_K_ATTN_SPLIT;
}

gsmrt_status gsmrt_k_attn_mla(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn *p,
                              const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                              const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *kv_cold,
                              const struct gsmrt_vk_range *pages, const struct gsmrt_vk_range *pos,
                              const struct gsmrt_vk_range *partial, const struct gsmrt_vk_range *out,
                              struct gsmrt_err *err)
{
    uint32_t n_splits = p->n_splits ? p->n_splits : gsmrt_k_attn_splits(p->n_keys);
    uint64_t need = ((uint64_t)p->tok0 + p->n_tok) * p->n_heads * n_splits * (2 + p->kv_lora) * 4;
    if (p->n_tok == 0 || p->n_heads == 0 || p->page_size == 0 || (p->page_size & (p->page_size - 1)) ||
        GSMRT_K_ATTN_SPLIT % p->page_size || partial->size < need || n_splits < gsmrt_k_attn_splits(p->n_keys))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "attention: %u tokens, %u heads, page size %u (a power of two dividing %u), partial buffer "
                             "%llu of %llu bytes",
                             p->n_tok, p->n_heads, p->page_size, GSMRT_K_ATTN_SPLIT, (unsigned long long)partial->size,
                             (unsigned long long)need);
    struct gsmrt_vk_pipeline *pipe;
    struct gsmrt_vk_range b[7] = {*qa, *qr, *kv, *pages, *pos, *partial, kv_cold ? *kv_cold : *kv};
    gsmrt_status st;
    if (p->n_tok > 1) {
        /* several queries: each key row is loaded once for a block of them */
        const uint32_t spec[7] = {GSMRT_K_ELEMENTWISE_WG, GSMRT_K_ATTN_SPLIT, p->kv_lora, p->rope_dim, p->page_size,
                                  GSMRT_K_ATTN_QUERY_BLOCK, p->kv_type == GSMRT_KV_F16};
        st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_PREFILL, spec, 7, &pipe, err);
        if (st != GSMRT_OK) return st;
        struct gsmrt_pc_attn_prefill pc = {p->n_heads, p->q_stride, p->q_head, p->q_off, p->n_tok, n_splits, p->scale,
                                           p->tok0};
        st = gsmrt_vk_rec_dispatch(rec, pipe, b, 7, &pc, sizeof pc, n_splits, p->n_heads,
                                   (p->n_tok + GSMRT_K_ATTN_QUERY_BLOCK - 1) / GSMRT_K_ATTN_QUERY_BLOCK,
                                   "attn_prefill", err);
    } else {
        const uint32_t spec[6] = {gsmrt_k_reduce_wg_size(rec->dev), GSMRT_K_ATTN_SPLIT, p->kv_lora, p->rope_dim,
                                  p->page_size, p->kv_type == GSMRT_KV_F16};
        st = gsmrt_k_pipeline(
            rec, gsmrt_k_use_subgroups(rec->dev) ? GSMRT_KERNEL_ATTN_PARTIAL : GSMRT_KERNEL_ATTN_PARTIAL_NOSG, spec,
            6, &pipe, err);
        if (st != GSMRT_OK) return st;
        struct gsmrt_pc_attn_partial pc = {p->n_heads, p->q_stride, p->q_head, p->q_off, p->page_size, n_splits,
                                           p->scale,   p->tok0,     p->tok0};
        st = gsmrt_vk_rec_dispatch(rec, pipe, b, 7, &pc, sizeof pc, n_splits, p->n_heads, 1, "attn_partial", err);
    }
    if (st != GSMRT_OK) return st;
    gsmrt_vk_rec_barrier(rec);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ATTN_MERGE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    uint32_t row0 = p->tok0 * p->n_heads;
    struct gsmrt_pc_attn_merge mc = {p->n_tok * p->n_heads, n_splits, p->kv_lora, p->kv_lora, row0, row0};
    struct gsmrt_vk_range mb[2] = {*partial, *out};
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, p->n_tok * p->n_heads, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, mb, 2, &mc, sizeof mc, gx, gy, 1, "attn_merge", err);
}

gsmrt_status gsmrt_k_kv_store(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *src,
                              const struct gsmrt_vk_range *pages, const struct gsmrt_vk_range *pos,
                              const struct gsmrt_vk_range *kv, enum gsmrt_kv_type kv_type, uint32_t n_tok,
                              uint32_t tok0, uint32_t width, uint32_t src_stride, uint32_t page_size,
                              struct gsmrt_err *err)
{
    bool f16 = kv_type == GSMRT_KV_F16;
    if (f16 && width % 2)   /* an invocation writes one word: two halves of one row */
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "kv_store: an F16 cache needs rows of an even width, not %u",
                             width);
    const uint32_t spec[2] = {GSMRT_K_ELEMENTWISE_WG, f16};
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_KV_STORE, spec, 2, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_kv_store pc = {n_tok, width, src_stride, page_size, tok0};
    struct gsmrt_vk_range b[4] = {*src, *pages, *pos, *kv};
    uint32_t words = f16 ? width / 2 : width;
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 4, &pc, sizeof pc, (words + spec[0] - 1) / spec[0], n_tok, 1,
                                 "kv_store", err);
}
