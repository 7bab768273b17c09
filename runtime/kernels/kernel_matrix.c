/* kernel_matrix.c -- record functions for the weight kernels: matvec, matmul
 * and the embedding gather. Weights larger than one binding are bound as row
 * chunks (each at most the binding range, each start offset-aligned) with
 * one dispatch per chunk: the normal path on lavapipe's 128 MiB range. */
#include <inttypes.h>

#include "base/mem.h"
#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

typedef gsmrt_status (*chunk_fn)(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *wr,
                                 uint32_t row_begin, uint32_t n_rows, const void *ctx,
                                 struct gsmrt_err *err);

static gsmrt_status for_each_chunk(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                                   chunk_fn fn, const void *ctx, struct gsmrt_err *err)
{
    const struct gsmrt_vk_device *dev = rec->dev;
    uint64_t row_bytes = gsmrt_wtype_row_bytes(w->type, w->n_cols);
    if (!gsmrt_wtype_find((uint32_t)w->type))
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "weights of type %s are not supported (supported: %s)",
                             gsmrt_wtype_name(w->type), gsmrt_wtype_supported_list());
    if (row_bytes == 0 || w->n_rows == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "weights of type %s with %u rows and %u columns", gsmrt_wtype_name(w->type),
                             w->n_rows, w->n_cols);
    /* 4 bytes of margin: a chunk's range is rounded up to whole 32-bit words. */
    uint64_t rows_per_chunk = gsmrt_vk_rows_per_chunk(row_bytes, dev->binding_range - 4,
                                                      dev->caps.min_storage_buffer_offset_alignment);
    if (rows_per_chunk == 0)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "a weight row of %" PRIu64 " bytes does not fit in one binding of %" PRIu64
                             " bytes",
                             row_bytes, (uint64_t)dev->binding_range);
    for (uint64_t r0 = 0; r0 < w->n_rows; r0 += rows_per_chunk) {
        uint64_t n = w->n_rows - r0 < rows_per_chunk ? w->n_rows - r0 : rows_per_chunk;
        struct gsmrt_vk_range wr;
        gsmrt_status st = gsmrt_vk_buf_range(dev, w->buf, w->offset + r0 * row_bytes,
                                             gsmrt_align_up(n * row_bytes, 4), &wr, err);
        if (st == GSMRT_OK) st = fn(rec, &wr, (uint32_t)r0, (uint32_t)n, ctx, err);
        if (st != GSMRT_OK) return st;
    }
    return GSMRT_OK;
}

struct matvec_ctx {
    const struct gsmrt_k_weights *w;
    const struct gsmrt_vk_range *x, *y;
    uint32_t y_offset;
};

static gsmrt_status matvec_chunk(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *wr,
                                 uint32_t row_begin, uint32_t n_rows, const void *ctx_,
                                 struct gsmrt_err *err)
{
    const struct matvec_ctx *c = ctx_;
    bool rows = gsmrt_k_row_per_invocation(rec->dev);
    enum gsmrt_kernel id;
    gsmrt_status st = gsmrt_k_product_kernel(rec->dev, GSMRT_KFAMILY_MATVEC, c->w->type, &id, err);
    uint32_t wg = rows ? GSMRT_K_ELEMENTWISE_WG : GSMRT_K_MATVEC_WG;
    struct gsmrt_vk_pipeline *pipe;
    if (st == GSMRT_OK) st = gsmrt_k_pipeline(rec, id, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_matvec pc = {c->w->n_cols, n_rows, c->y_offset + row_begin};
    struct gsmrt_vk_range b[3] = {*wr, *c->x, *c->y};
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, rows ? (n_rows + wg - 1) / wg : n_rows, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, gx, gy, 1, "matvec", err);
}

gsmrt_status gsmrt_k_matvec(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                            const struct gsmrt_vk_range *x, const struct gsmrt_vk_range *y,
                            uint32_t y_offset, struct gsmrt_err *err)
{
    struct matvec_ctx c = {w, x, y, y_offset};
    return for_each_chunk(rec, w, matvec_chunk, &c, err);
}

struct matmul_ctx {
    const struct gsmrt_k_weights *w;
    const struct gsmrt_vk_range *x, *y;
    uint32_t n_tok, x_stride, y_stride, y_offset;
};

static gsmrt_status matmul_chunk(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *wr,
                                 uint32_t row_begin, uint32_t n_rows, const void *ctx_,
                                 struct gsmrt_err *err)
{
    const struct matmul_ctx *c = ctx_;
    bool rows = gsmrt_k_row_per_invocation(rec->dev);
    enum gsmrt_kernel id;
    gsmrt_status st = gsmrt_k_product_kernel(rec->dev, GSMRT_KFAMILY_MATMUL, c->w->type, &id, err);
    /* rows: 64 rows per workgroup, 8 tokens per invocation; tiles: 16 x 16 */
    const uint32_t spec[2] = {rows ? 64 : GSMRT_K_MATMUL_TILE, rows ? 8 : GSMRT_K_MATMUL_TILE};
    struct gsmrt_vk_pipeline *pipe;
    if (st == GSMRT_OK) st = gsmrt_k_pipeline(rec, id, spec, 2, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_matmul pc = {c->w->n_cols, n_rows,      c->n_tok,
                                 c->x_stride,  c->y_stride, c->y_offset + row_begin};
    struct gsmrt_vk_range b[3] = {*wr, *c->x, *c->y};
    uint32_t gx = (n_rows + spec[0] - 1) / spec[0];
    uint32_t gy = (c->n_tok + spec[1] - 1) / spec[1];
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, gx, gy, 1, "matmul", err);
}

gsmrt_status gsmrt_k_matmul(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                            const struct gsmrt_vk_range *x, const struct gsmrt_vk_range *y,
                            uint32_t n_tok, uint32_t x_stride, uint32_t y_stride,
                            uint32_t y_offset, struct gsmrt_err *err)
{
    if (n_tok == 0 || x_stride < w->n_cols || y_stride < y_offset + w->n_rows)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "matmul: %u tokens, x stride %u for %u columns, y stride %u for rows "
                             "%u..%u",
                             n_tok, x_stride, w->n_cols, y_stride, y_offset, y_offset + w->n_rows);
    struct matmul_ctx c = {w, x, y, n_tok, x_stride, y_stride, y_offset};
    return for_each_chunk(rec, w, matmul_chunk, &c, err);
}

struct get_rows_ctx {
    const struct gsmrt_k_weights *w;
    const struct gsmrt_vk_range *ids, *y;
    uint32_t n_ids;
};

static gsmrt_status get_rows_chunk(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *wr,
                                   uint32_t row_begin, uint32_t n_rows, const void *ctx_,
                                   struct gsmrt_err *err)
{
    const struct get_rows_ctx *c = ctx_;
    enum gsmrt_kernel id;
    gsmrt_status st = gsmrt_k_product_kernel(rec->dev, GSMRT_KFAMILY_GET_ROWS, c->w->type, &id, err);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    if (st == GSMRT_OK) st = gsmrt_k_pipeline(rec, id, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_get_rows pc = {c->w->n_cols, row_begin, n_rows, c->n_ids};
    struct gsmrt_vk_range b[3] = {*wr, *c->ids, *c->y};
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 3, &pc, sizeof pc, (c->w->n_cols + wg - 1) / wg, c->n_ids,
                                 1, "get_rows", err);
}

gsmrt_status gsmrt_k_get_rows(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                              const struct gsmrt_vk_range *ids, uint32_t n_ids,
                              const struct gsmrt_vk_range *y, struct gsmrt_err *err)
{
    if (n_ids == 0 || n_ids > rec->dev->caps.max_workgroup_count[1])
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "get_rows: %u ids (allowed 1..%u)", n_ids,
                             rec->dev->caps.max_workgroup_count[1]);
    struct get_rows_ctx c = {w, ids, y, n_ids};
    return for_each_chunk(rec, w, get_rows_chunk, &c, err);
}
