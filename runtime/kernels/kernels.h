/* kernels.h -- the kernel table and the record functions, one per operation.
 *
 * Each record function picks the kernel variant the device can run (subgroup
 * or shared-memory reduction), binds weights in row chunks no larger than the
 * binding range, and records the dispatch(es) into a recording. It records no
 * barrier: the caller places gsmrt_vk_rec_barrier between dependent steps.
 * Push-constant mirrors live in kernels_push.h. Shapes are C order. */
#ifndef GSMRT_KERNELS_H
#define GSMRT_KERNELS_H

#include "kernels/spv_registry.h"
#include "vk/vk.h"

/* Weight formats, numbered as ggml types. */
enum gsmrt_wtype {
    GSMRT_WTYPE_F32 = 0,
    GSMRT_WTYPE_F16 = 1,
    GSMRT_WTYPE_Q8_0 = 8,
};

#define GSMRT_Q8_0_BLOCK 32        /* values per Q8_0 block */
#define GSMRT_Q8_0_BLOCK_BYTES 34  /* f16 scale + 32 int8 */

/* Bytes of one row of n_cols values; 0 if the type is unknown or n_cols is
 * not a whole number of blocks. */
uint64_t gsmrt_wtype_row_bytes(enum gsmrt_wtype type, uint64_t n_cols);
const char *gsmrt_wtype_name(enum gsmrt_wtype type);

/* The interface of a kernel (SPIR-V, binding count, push size). */
const struct gsmrt_vk_kernel_desc *gsmrt_kernel_desc(enum gsmrt_kernel id);

/* A weight matrix [n_rows][n_cols] of `type`, starting at `offset` in `buf`
 * (offset aligned to minStorageBufferOffsetAlignment). */
struct gsmrt_k_weights {
    const struct gsmrt_vk_buf *buf;
    VkDeviceSize offset;
    enum gsmrt_wtype type;
    uint32_t n_rows, n_cols;
};

/* y[y_offset + r] = sum_c W[r][c] x[c];  x: float [n_cols], y: float [>= y_offset + n_rows] */
gsmrt_status gsmrt_k_matvec(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                            const struct gsmrt_vk_range *x, const struct gsmrt_vk_range *y,
                            uint32_t y_offset, struct gsmrt_err *err);

/* Y[t][y_offset + r] = sum_c W[r][c] X[t][c] for t < n_tok;
 * X: float [n_tok][x_stride], Y: float [n_tok][y_stride] */
gsmrt_status gsmrt_k_matmul(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                            const struct gsmrt_vk_range *x, const struct gsmrt_vk_range *y,
                            uint32_t n_tok, uint32_t x_stride, uint32_t y_stride,
                            uint32_t y_offset, struct gsmrt_err *err);

/* y[i][c] = W[ids[i]][c] (as float);  ids: uint [n_ids], y: float [n_ids][n_cols].
 * Ids >= n_rows leave their row of y unwritten. */
gsmrt_status gsmrt_k_get_rows(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                              const struct gsmrt_vk_range *ids, uint32_t n_ids,
                              const struct gsmrt_vk_range *y, struct gsmrt_err *err);

/* y[r][i] = x[r][i] * w[i] / sqrt(mean_i x[r][i]^2 + eps) */
gsmrt_status gsmrt_k_rms_norm(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                              const struct gsmrt_vk_range *w, const struct gsmrt_vk_range *y,
                              uint32_t n_rows, uint32_t n_cols, float eps, struct gsmrt_err *err);

/* The same over rows with strides: reads x[r][0..n_cols) of rows x_stride
 * apart, writes y rows y_stride apart (x and y may be the same range). */
gsmrt_status gsmrt_k_rms_norm_strided(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                                      const struct gsmrt_vk_range *w, const struct gsmrt_vk_range *y,
                                      uint32_t n_rows, uint32_t n_cols, uint32_t x_stride,
                                      uint32_t y_stride, float eps, struct gsmrt_err *err);

/* y[r] = softmax(scale * x[r]) over n_cols */
gsmrt_status gsmrt_k_softmax(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                             const struct gsmrt_vk_range *y, uint32_t n_rows, uint32_t n_cols,
                             float scale, struct gsmrt_err *err);

enum gsmrt_rope_mode {
    GSMRT_ROPE_NORM = 0,   /* adjacent pairs (llama.cpp's deepseek2, llama) */
    GSMRT_ROPE_NEOX = 2,   /* halves; the value is ggml's */
};

/* RoPE with YaRN as ggml computes it; see shaders/rope.comp for the maths. */
struct gsmrt_rope_params {
    uint32_t n_tok, n_heads;
    uint32_t head_stride, row_stride;   /* floats between heads / between tokens */
    uint32_t rot_offset, n_dims;        /* rotated part of each head */
    enum gsmrt_rope_mode mode;
    float freq_base, freq_scale, ext_factor, attn_factor;
    float corr_low, corr_high;          /* from gsmrt_rope_yarn_corr_dims */
};

/* YaRN correction range (pair indices) for n_dims rotated dims, as ggml's
 * ggml_rope_yarn_corr_dims (beta_fast 32, beta_slow 1 for deepseek2). */
void gsmrt_rope_yarn_corr_dims(uint32_t n_dims, uint32_t n_ctx_orig, float freq_base,
                               float beta_fast, float beta_slow, float out[2]);

/* In place on x: float [n_tok][row_stride]; pos: int [n_tok]. */
gsmrt_status gsmrt_k_rope(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *x,
                          const struct gsmrt_vk_range *pos, const struct gsmrt_rope_params *p,
                          struct gsmrt_err *err);

/* y[i] = silu(g[i]) * u[i] */
gsmrt_status gsmrt_k_swiglu(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *g,
                            const struct gsmrt_vk_range *u, const struct gsmrt_vk_range *y,
                            uint32_t n, struct gsmrt_err *err);
/* y[i] = a[i] + b[i] */
gsmrt_status gsmrt_k_add(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *a,
                         const struct gsmrt_vk_range *b, const struct gsmrt_vk_range *y, uint32_t n,
                         struct gsmrt_err *err);
/* y[i] = s * a[i] */
gsmrt_status gsmrt_k_scale(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *a,
                           const struct gsmrt_vk_range *y, uint32_t n, float s,
                           struct gsmrt_err *err);

/* ---- model kernels (kernel_model.c) ---------------------------------------- */

/* Per-head products for MLA:
 *   Y[t][h*y_head + y_off + r] = sum_c W[h][r][c] * X[t][h*x_head + x_off + c]
 * w holds [n_heads][n_rows / n_heads][n_cols] and must fit one binding. */
struct gsmrt_k_head_matvec {
    uint32_t n_heads, n_tok;
    uint32_t x_stride, x_head, x_off;   /* floats */
    uint32_t y_stride, y_head, y_off;
};
gsmrt_status gsmrt_k_head_matvec(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                                 const struct gsmrt_k_head_matvec *p, const struct gsmrt_vk_range *x,
                                 const struct gsmrt_vk_range *y, struct gsmrt_err *err);

/* Expert routing (see shaders/moe_route.comp): logits [n_tok][n_expert] ->
 * ids uint [n_tok][n_used], weights float [n_tok][n_used]. bias may be NULL. */
struct gsmrt_k_moe_route {
    uint32_t n_tok, n_expert, n_used;
    uint32_t gating;                 /* 1 softmax, 2 sigmoid */
    uint32_t n_groups, n_groups_used;
    bool norm;
    float scale;
};
gsmrt_status gsmrt_k_moe_route(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *logits,
                               const struct gsmrt_vk_range *bias, const struct gsmrt_vk_range *ids,
                               const struct gsmrt_vk_range *weights, const struct gsmrt_k_moe_route *p,
                               struct gsmrt_err *err);

/* Routed expert products: Y[t][k][r] = sum_c W[ids[t][k]][r][c] * X[t][k * x_per_slot][c].
 * w holds [n_expert][n_rows / n_expert][n_cols]; bound in chunks of whole experts. */
gsmrt_status gsmrt_k_moe_matvec(struct gsmrt_vk_rec *rec, const struct gsmrt_k_weights *w,
                                uint32_t n_expert, const struct gsmrt_vk_range *x,
                                const struct gsmrt_vk_range *ids, const struct gsmrt_vk_range *y,
                                uint32_t n_tok, uint32_t n_used, bool x_per_slot,
                                struct gsmrt_err *err);

/* y[t][c] = sum_k w[t][k] * z[t][k][c] */
gsmrt_status gsmrt_k_moe_combine(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *w,
                                 const struct gsmrt_vk_range *z, const struct gsmrt_vk_range *y,
                                 uint32_t n_tok, uint32_t n_used, uint32_t width,
                                 struct gsmrt_err *err);

/* Keys per split of the attention kernel; the partial buffer holds
 * n_tok * n_heads * gsmrt_k_attn_splits(n_keys) * (2 + kv_lora) floats. */
#define GSMRT_K_ATTN_SPLIT 256
#define GSMRT_K_ATTN_QUERY_BLOCK 8   /* queries per workgroup when several are evaluated */
uint32_t gsmrt_k_attn_splits(uint32_t n_keys);

/* MLA attention over a paged latent cache (absorbed form), recorded as the
 * split kernel, a barrier, and the log-sum-exp merge into out [n_tok][n_heads][kv_lora]. */
struct gsmrt_k_attn {
    uint32_t n_tok, n_heads, kv_lora, rope_dim;
    uint32_t q_stride, q_head, q_off;   /* where q_pe lives in qr */
    uint32_t page_size;
    uint32_t n_keys;                    /* max over the tokens of pos + 1 */
    float scale;
};
gsmrt_status gsmrt_k_attn_mla(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn *p,
                              const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                              const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *pages,
                              const struct gsmrt_vk_range *pos, const struct gsmrt_vk_range *partial,
                              const struct gsmrt_vk_range *out, struct gsmrt_err *err);

/* Writes src rows (first `width` floats of rows src_stride apart) into the
 * paged cache at the tokens' positions. */
gsmrt_status gsmrt_k_kv_store(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *src,
                              const struct gsmrt_vk_range *pages, const struct gsmrt_vk_range *pos,
                              const struct gsmrt_vk_range *kv, uint32_t n_tok, uint32_t width,
                              uint32_t src_stride, uint32_t page_size, struct gsmrt_err *err);

/* ---- GSM kernels (kernel_gsm.c) ------------------------------------------- */

/* Page summaries: for each (slot, rows) of list [n_list][2], per channel min
 * and max of the page's first `rows` rows into sum [n_slots][2][row]. */
gsmrt_status gsmrt_k_page_summary(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *kv,
                                  const struct gsmrt_vk_range *list, const struct gsmrt_vk_range *sum,
                                  uint32_t n_list, uint32_t row, uint32_t page_size, struct gsmrt_err *err);

/* Upper bounds ub [n_heads][n_pages] on each head's best score over each
 * listed cold page, from the summaries (shaders/gate_bound.comp). One query. */
struct gsmrt_k_gate_bound {
    uint32_t n_heads, n_pages, kv_lora, rope_dim;
    uint32_t q_head, q_off;   /* where q_pe lives in qr */
    float scale;
};
gsmrt_status gsmrt_k_gate_bound(struct gsmrt_vk_rec *rec, const struct gsmrt_k_gate_bound *p,
                                const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                const struct gsmrt_vk_range *sum, const struct gsmrt_vk_range *pages,
                                const struct gsmrt_vk_range *ub, struct gsmrt_err *err);

/* Two-part (GSM) attention of one query token (decode), all on the device:
 *   1. exact attention over the active pages (sink, window, hot; the page
 *      with the newest rows last), as attn_mla does;
 *   2. per-page score bounds of the cold pages (gate_bound);
 *   3. per head, the gate: cold pages taken in order of their mass bound
 *      until what is left is within `threshold` (gate_select);
 *   4. exact attention over the selected cold pages, read from cold_kv
 *      (attn_cold), and the log-sum-exp merge of everything into out.
 * Buffers: partial holds n_heads * (splits of n_active + n_cold) * (2 + kv_lora)
 * floats; ub n_heads * n_cold; sel n_heads * n_cold uints; info n_heads * 4
 * floats (selected count, gate value, bound on the skipped share, M).
 * cold_pages is uint [n_cold][2] (slot, rows); cold pages are full pages. */
struct gsmrt_k_attn_gsm {
    uint32_t n_heads, kv_lora, rope_dim, page_size;
    uint32_t q_head, q_off;        /* where q_pe lives in qr */
    uint32_t n_active_keys;        /* rows in the active pages */
    uint32_t n_cold;               /* cold pages */
    float scale, threshold;
};
gsmrt_status gsmrt_k_attn_gsm(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_gsm *p,
                              const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                              const struct gsmrt_vk_range *hot_kv, const struct gsmrt_vk_range *active_pages,
                              const struct gsmrt_vk_range *active_last_pos, const struct gsmrt_vk_range *cold_kv,
                              const struct gsmrt_vk_range *cold_sum, const struct gsmrt_vk_range *cold_pages,
                              const struct gsmrt_vk_range *cold_slots, const struct gsmrt_vk_range *ub,
                              const struct gsmrt_vk_range *sel, const struct gsmrt_vk_range *info,
                              const struct gsmrt_vk_range *partial, const struct gsmrt_vk_range *out,
                              struct gsmrt_err *err);

/* Creates the pipelines of every kernel the device would use (what a model
 * load does up front), so their compile time is paid once and cached. */
gsmrt_status gsmrt_kernels_warm_up(struct gsmrt_vk_device *dev, struct gsmrt_err *err);

#endif
