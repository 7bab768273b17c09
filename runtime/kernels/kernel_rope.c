/* kernel_rope.c -- RoPE with YaRN: the correction range (as ggml computes
 * it) and the record function. The angle maths is in shaders/rope.comp. */
#include <math.h>

#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

/* ggml_rope_yarn_corr_dim: the dimension at which `n_rot` full rotations fit
 * into the original context. */
static float corr_dim(uint32_t n_dims, uint32_t n_ctx_orig, float n_rot, float base)
{
    return n_dims * logf(n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

void gsmrt_rope_yarn_corr_dims(uint32_t n_dims, uint32_t n_ctx_orig, float freq_base,
                               float beta_fast, float beta_slow, float out[2])
{
    float lo = floorf(corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    float hi = ceilf(corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    out[0] = lo > 0.0f ? lo : 0.0f;
    out[1] = hi < (float)(n_dims - 1) ? hi : (float)(n_dims - 1);
}

gsmrt_status gsmrt_k_rope(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                          const struct gsmrt_vk_range *pos, const struct gsmrt_rope_params *p,
                          struct gsmrt_err *err)
{
    if (p->n_tok == 0 || p->n_heads == 0 || p->n_dims == 0 || p->n_dims % 2 ||
        p->rot_offset + p->n_dims > p->head_stride || (p->mode != GSMRT_ROPE_NORM && p->mode != GSMRT_ROPE_NEOX))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "rope: %u tokens, %u heads, %u dims at offset %u in heads of %u, mode %d",
                             p->n_tok, p->n_heads, p->n_dims, p->rot_offset, p->head_stride, (int)p->mode);
    uint32_t wg = GSMRT_K_ELEMENTWISE_WG;
    struct gsmrt_vk_pipeline *pipe;
    gsmrt_status st = gsmrt_k_pipeline(rec, GSMRT_KERNEL_ROPE, &wg, 1, &pipe, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_pc_rope pc = {
        p->n_tok,     p->n_heads,    p->head_stride, p->row_stride,  p->rot_offset,
        p->n_dims,    (uint32_t)p->mode, p->freq_base, p->freq_scale, p->ext_factor,
        p->attn_factor, p->corr_low, p->corr_high,
    };
    struct gsmrt_vk_range b[2] = {*x, *pos};
    uint32_t pairs = p->n_heads * p->n_dims / 2;
    return gsmrt_vk_rec_dispatch(rec, pipe, b, 2, &pc, sizeof pc, (pairs + wg - 1) / wg, p->n_tok, 1,
                                 "rope", err);
}
