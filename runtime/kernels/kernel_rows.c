/* kernel_rows.c -- record functions for the row-wise kernels (RMSNorm,
 * softmax), and the element-wise ones (SwiGLU, add, scale). */
#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

static gsmrt_status rows_dispatch(struct gsmrt_vk_rec *rec, enum gsmrt_kernel sg_id,
                                  enum gsmrt_kernel nosg_id, const struct gsmrt_vk_range *b,
                                  uint32_t n_b, uint32_t n_rows, uint32_t n_cols, const void *pc,
                                  uint32_t pc_bytes, const char *label, struct gsmrt_err *err)
{
    if (n_rows == 0 || n_cols == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s: %u rows of %u columns", label, n_rows,
                             n_cols);
    uint32_t wg = gsmrt_k_reduce_wg_size(rec->dev);
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st =
        gsmrt_k_pipeline(rec, gsmrt_k_use_subgroups(rec->dev) ? sg_id : nosg_id, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, n_rows, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, n_b, pc, pc_bytes, gx, gy, 1, label, err);
}

gsmrt_status gsmrt_k_rms_norm(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                              const struct gsmrt_vk_range *w, const struct gsmrt_vk_range *y,
                              uint32_t n_rows, uint32_t n_cols, float eps, struct gsmrt_err *err)
{
    return gsmrt_k_rms_norm_strided(rec, x, w, y, n_rows, n_cols, n_cols, n_cols, eps, err);
}

gsmrt_status gsmrt_k_rms_norm_strided(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                                      const struct gsmrt_vk_range *w, const struct gsmrt_vk_range *y,
                                      uint32_t n_rows, uint32_t n_cols, uint32_t x_stride,
                                      uint32_t y_stride, float eps, struct gsmrt_err *err)
{
    if (x_stride < n_cols || y_stride < n_cols)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "rms_norm: strides %u, %u for %u columns",
                             x_stride, y_stride, n_cols);
    struct gsmrt_vk_range b[3] = {*x, *w, *y};
    struct gsmrt_pc_rms_norm pc = {n_cols, n_rows, eps, x_stride, y_stride};
    return rows_dispatch(rec, GSMRT_KERNEL_RMS_NORM, GSMRT_KERNEL_RMS_NORM_NOSG, b, 3, n_rows, n_cols,
                         &pc, sizeof pc, "rms_norm", err);
}

gsmrt_status gsmrt_k_softmax(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                             const struct gsmrt_vk_range *y, uint32_t n_rows, uint32_t n_cols,
                             float scale, struct gsmrt_err *err)
{
    struct gsmrt_vk_range b[2] = {*x, *y};
    struct gsmrt_pc_softmax pc = {n_cols, n_rows, scale};
    return rows_dispatch(rec, GSMRT_KERNEL_SOFTMAX, GSMRT_KERNEL_SOFTMAX_NOSG, b, 2, n_rows, n_cols,
                         &pc, sizeof pc, "softmax", err);
}

static gsmrt_status elementwise(struct gsmrt_vk_rec *rec, enum gsmrt_kernel id,
                                const struct gsmrt_vk_range *b, uint32_t n_b, const void *pc,
                                uint32_t pc_bytes, uint32_t n, const char *label,
                                struct gsmrt_err *err)
{
    if (n == 0) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s of 0 elements", label);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, id, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    uint32_t gx, gy;
    gsmrt_k_split_groups(rec->dev, (n + wg - 1) / wg, &gx, &gy);
    return gsmrt_vk_rec_dispatch(rec, pipe, b, n_b, pc, pc_bytes, gx, gy, 1, label, err);
}

gsmrt_status gsmrt_k_swiglu(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *g,
                            const struct gsmrt_vk_range *u, const struct gsmrt_vk_range *y,
                            uint32_t n, struct gsmrt_err *err)
{
    struct gsmrt_vk_range b[3] = {*g, *u, *y};
    struct gsmrt_pc_n pc = {n};
    return elementwise(rec, GSMRT_KERNEL_SWIGLU, b, 3, &pc, sizeof pc, n, "swiglu", err);
}

gsmrt_status gsmrt_k_add(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *a,
                         const struct gsmrt_vk_range *b_, const struct gsmrt_vk_range *y, uint32_t n,
                         struct gsmrt_err *err)
{
    struct gsmrt_vk_range b[3] = {*a, *b_, *y};
    struct gsmrt_pc_n pc = {n};
    return elementwise(rec, GSMRT_KERNEL_ADD, b, 3, &pc, sizeof pc, n, "add", err);
}

gsmrt_status gsmrt_k_scale(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *a,
                           const struct gsmrt_vk_range *y, uint32_t n, float s,
                           struct gsmrt_err *err)
{
    struct gsmrt_vk_range b[2] = {*a, *y};
    struct gsmrt_pc_scale pc = {n, s};
    return elementwise(rec, GSMRT_KERNEL_SCALE, b, 2, &pc, sizeof pc, n, "scale", err);
}
