/* kernels.h -- the kernel table and the record functions, one per operation.
 *
 * Each record function picks the kernel variant the device can run (subgroup
 * or shared-memory reduction), binds weights in row chunks no larger than the
 * binding range, and records the dispatch(es) into a recording. It records no
 * barrier: the caller places gsmrt_vk_rec_barrier between dependent steps.
 * Push-constant mirrors live in kernels_push.h. Shapes are C order. */
#ifndef GSMRT_KERNELS_H
#define GSMRT_KERNELS_H

#include "gguf/wtype.h"
#include "kernels/spv_registry.h"
#include "vk/vk.h"

/* Weight formats (enum gsmrt_wtype), their sizes and names: gguf/wtype.h,
 * one row per type in gguf/wtype_table.def. */

/* The interface of a kernel (SPIR-V, binding count, push size). */
const struct gsmrt_vk_kernel_desc *gsmrt_kernel_desc(enum gsmrt_kernel id);

/* The product kernel of `family` for weights of `type` in the variant this
 * device runs (a lookup in the generated table, never arithmetic over ids);
 * GSMRT_E_UNSUPPORTED naming the type if the table has no row for it. */
gsmrt_status gsmrt_k_product_kernel(const struct gsmrt_vk_device *dev, enum gsmrt_kfamily family,
                                    enum gsmrt_wtype type, enum gsmrt_kernel *id, struct gsmrt_err *err);

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

/* Storage type of cached KV rows (shaders/include/kv_tier.glsl): F32 keeps
 * the floats as computed, F16 rounds each to the nearest half (ties to even)
 * when kv_store writes it and packs two per 32-bit word. Every kernel that
 * reads the pools takes the type. */
enum gsmrt_kv_type {
    GSMRT_KV_F32 = 0,
    GSMRT_KV_F16 = 1,
};
/* Bytes one cached value takes: 4 (F32) or 2 (F16). */
uint32_t gsmrt_kv_type_bytes(enum gsmrt_kv_type type);
const char *gsmrt_kv_type_name(enum gsmrt_kv_type type);

/* Keys per split of the attention kernel; the partial buffer holds
 * n_tok * n_heads * gsmrt_k_attn_splits(n_keys) * (2 + kv_lora) floats. */
#define GSMRT_K_ATTN_SPLIT 256
#define GSMRT_K_ATTN_QUERY_BLOCK 8   /* queries per workgroup when several are evaluated */
#define GSMRT_K_GSM_MAX_COLD 256     /* pages one GSM step can gate (gate_select keeps them in registers) */
#define GSMRT_K_GSM_MAX_PAGE_SIZE 64 /* attn_cold: one workgroup per page, a row per invocation */
uint32_t gsmrt_k_attn_splits(uint32_t n_keys);

/* MLA attention over a paged latent cache (absorbed form), recorded as the
 * split kernel, a barrier, and the log-sum-exp merge into out [n_tok][n_heads][kv_lora].
 * Page-table entries address two pools (shaders/include/kv_tier.glsl): kv
 * (hot) and kv_cold (NULL: the same as kv). Tokens tok0 .. tok0 + n_tok - 1
 * of the token-indexed buffers (qa, qr, pos, partial, out) are this
 * sequence's: several sequences of a batch share those buffers. */
struct gsmrt_k_attn {
    uint32_t n_tok, n_heads, kv_lora, rope_dim;
    uint32_t q_stride, q_head, q_off;   /* where q_pe lives in qr */
    uint32_t page_size;
    uint32_t n_keys;                    /* max over the tokens of pos + 1 */
    float scale;
    uint32_t tok0;                      /* first token of the sequence in the batch */
    uint32_t n_splits;                  /* splits per token in partial; 0: from n_keys */
    enum gsmrt_kv_type kv_type;         /* the pools' storage type */
};
gsmrt_status gsmrt_k_attn_mla(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn *p,
                              const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                              const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *kv_cold,
                              const struct gsmrt_vk_range *pages, const struct gsmrt_vk_range *pos,
                              const struct gsmrt_vk_range *partial, const struct gsmrt_vk_range *out,
                              struct gsmrt_err *err);

/* Writes src rows (first `width` floats of rows src_stride apart) of tokens
 * tok0 .. tok0 + n_tok - 1 into the paged cache at their positions, in the
 * pool's storage type (F16: width must be even). The pages written are HOT
 * (the tier bit of their entries is ignored). */
gsmrt_status gsmrt_k_kv_store(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *src,
                              const struct gsmrt_vk_range *pages, const struct gsmrt_vk_range *pos,
                              const struct gsmrt_vk_range *kv, enum gsmrt_kv_type kv_type, uint32_t n_tok,
                              uint32_t tok0, uint32_t width, uint32_t src_stride, uint32_t page_size,
                              struct gsmrt_err *err);

/* ---- GSM kernels (kernel_gsm.c) ------------------------------------------- */

/* Page summaries: for each (entry, rows, index) of list [n_list][3], per
 * channel min and max of the page's first `rows` rows (a HOT page of kv)
 * into sum [index][2][row] (summaries are kept by logical page). */
gsmrt_status gsmrt_k_page_summary(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *kv,
                                  enum gsmrt_kv_type kv_type, const struct gsmrt_vk_range *list, const struct gsmrt_vk_range *sum,
                                  uint32_t n_list, uint32_t row, uint32_t page_size, struct gsmrt_err *err);

/* Upper bounds ub [n_heads][n_pages] on each head's best score over each
 * page of cold_list (uint [n_pages][4]: entry, rows, logical page, force
 * mask), from the summaries (shaders/gate_bound.comp). The query is token
 * q_tok0 of qa [..][n_heads][kv_lora] and qr [..][q_stride]. */
struct gsmrt_k_gate_bound {
    uint32_t n_heads, n_pages, kv_lora, rope_dim;
    uint32_t q_head, q_off, q_stride, q_tok0;   /* where q_pe lives in qr */
    float scale;
};
gsmrt_status gsmrt_k_gate_bound(struct gsmrt_vk_rec *rec, const struct gsmrt_k_gate_bound *p,
                                const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                const struct gsmrt_vk_range *sum, const struct gsmrt_vk_range *cold_list,
                                const struct gsmrt_vk_range *ub, struct gsmrt_err *err);

/* Two-part (GSM) attention of one query token (decode), all on the device:
 *   1. exact attention over the active pages (pinned: sink and window; the
 *      page with the newest rows last), as attn_mla does;
 *   2. per-page score bounds of the listed pages (gate_bound);
 *   3. per head, the gate: the pages its group keeps HOT first, then the
 *      others in order of their mass bound until what is left is within the
 *      head's threshold (gate_select);
 *   4. exact attention over the selected pages, each read from the pool its
 *      entry names (attn_cold), and the log-sum-exp merge into out;
 *   5. each listed page's share of the mass, share bound and reader count
 *      (page_mass) for the tier policy, when mass.size > 0.
 * cold_list is uint [n_cold][4] (entry, rows, logical page, force mask: bit g
 * set = group g keeps the page HOT); listed pages are full pages. heads is
 * uint [n_heads][2] (group, threshold as float bits). partial holds n_heads *
 * (splits of n_active_keys + n_cold) * (2 + kv_lora) floats; ub n_heads *
 * n_cold; sel n_heads * n_cold uints; info n_heads * 4 floats (selected
 * count, gate value, bound on the skipped share, M); mass (3 + n_heads) *
 * n_cold floats. */
struct gsmrt_k_attn_gsm {
    uint32_t n_heads, kv_lora, rope_dim, page_size;
    uint32_t q_stride, q_head, q_off;   /* where q_pe lives in qr */
    uint32_t q_tok0;                    /* the query is this token of qa / qr */
    uint32_t out_tok0;                  /* and its output this token of out */
    uint32_t n_active_keys;             /* rows in the active pages */
    uint32_t n_cold;                    /* listed pages */
    float scale;
    enum gsmrt_kv_type kv_type;         /* the pools' storage type */
};
struct gsmrt_k_attn_gsm_bufs {
    struct gsmrt_vk_range qa, qr;                    /* queries */
    struct gsmrt_vk_range hot_kv, cold_kv;           /* the two pools */
    struct gsmrt_vk_range active, active_last_pos;   /* entries [n_active]; int: n_active_keys - 1 */
    struct gsmrt_vk_range sums;                      /* float [n_pages_max][2][row] by logical page */
    struct gsmrt_vk_range cold_list, heads;
    struct gsmrt_vk_range ub, sel, info, partial;    /* working buffers */
    struct gsmrt_vk_range mass;                      /* size 0: no page_mass */
    struct gsmrt_vk_range out;                       /* float [..][n_heads][kv_lora] */
};
gsmrt_status gsmrt_k_attn_gsm(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_gsm *p,
                              const struct gsmrt_k_attn_gsm_bufs *b, struct gsmrt_err *err);

/* ---- calibration statistics (kernel_stats.c) ------------------------------- */

/* Per (token, head) of one layer: the attention mass by distance band, the
 * sink mass and the entropy (nats) of the MLA attention row, recomputed as
 * the attention kernels score (shaders/attn_stats.comp). out is float
 * [n_tok][n_heads][n_bands + 2]; edges uint [n_bands]. The cache is read as
 * a dense cache (hot pool, entries without the tier bit). */
#define GSMRT_K_ATTN_STATS_MAX_BANDS 16
#define GSMRT_K_ATTN_STATS_MAX_KEYS 2048   /* scores kept in shared memory; later keys are recomputed */
struct gsmrt_k_attn_stats {
    uint32_t n_tok, n_heads, kv_lora, rope_dim;
    uint32_t q_stride, q_head, q_off;   /* where q_pe lives in qr */
    uint32_t page_size;
    uint32_t n_bands, sink_tokens;
    float scale;
    uint32_t tok0;
    enum gsmrt_kv_type kv_type;         /* the pool's storage type */
};
gsmrt_status gsmrt_k_attn_stats(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_stats *p,
                                const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *pages,
                                const struct gsmrt_vk_range *pos, const struct gsmrt_vk_range *edges,
                                const struct gsmrt_vk_range *out, struct gsmrt_err *err);

/* ---- DeepSeek V4 kernels (kernel_v4.c) ------------------------------------
 * The ops llama.cpp's deepseek4 has and deepseek2 lacks; the maths of each is
 * in its shader's header comment and in tools/deepseek4_ref.py. */

#define GSMRT_K_V4_MAX_HC 8   /* hyper-connection streams hc_pre supports */

/* Hyper-connection pre-mixing of n_tok tokens (shaders/hc_pre.comp). raw is
 * fn @ concat_s x[s] (fn unnormalised input: the rms factor is applied here),
 * [n_tok][(2 + hc) * hc] for a block, [n_tok][hc] for the head. y gets the
 * sub-block input [n_tok][n_embd]; mix gets post and the Sinkhorn comb
 * [n_tok][hc + hc * hc] (unused, may be NULL, for the head). */
struct gsmrt_k_hc_pre {
    uint32_t n_tok, n_embd, hc;
    uint32_t sinkhorn_iters;
    float eps_rms, eps_hc;
    bool head;   /* the output head's hc: sigmoid pre only, one scale */
};
gsmrt_status gsmrt_k_hc_pre(struct gsmrt_vk_rec *rec, const struct gsmrt_k_hc_pre *p, const struct gsmrt_vk_range *x,
                            const struct gsmrt_vk_range *raw, const struct gsmrt_vk_range *base,
                            const struct gsmrt_vk_range *scale, const struct gsmrt_vk_range *y,
                            const struct gsmrt_vk_range *mix, struct gsmrt_err *err);

/* x_new[t][d][e] = post[t][d] f[t][e] + sum_s comb[t][s][d] x[t][s][e]
 * (shaders/hc_post.comp); x_new must not alias x. */
gsmrt_status gsmrt_k_hc_post(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *f, const struct gsmrt_vk_range *x,
                             const struct gsmrt_vk_range *mix, const struct gsmrt_vk_range *x_new, uint32_t n_tok,
                             uint32_t n_embd, uint32_t hc, struct gsmrt_err *err);

/* V4 expert routing (shaders/moe_route_v4.comp): sqrt(softplus) scores; the
 * top n_used of score + bias, or on hashed layers tid2eid[token]. ids uint
 * [n_tok][n_used], weights float [n_tok][n_used]. bias is read only when not
 * hashed, tokens and tid2eid (int [n_vocab][n_used]) only when hashed. */
struct gsmrt_k_moe_route_v4 {
    uint32_t n_tok, n_expert, n_used;
    bool hashed;
    uint32_t n_vocab;   /* rows of tid2eid */
    bool norm;
    float scale;        /* expert_weights_scale, always applied */
};
gsmrt_status gsmrt_k_moe_route_v4(struct gsmrt_vk_rec *rec, const struct gsmrt_k_moe_route_v4 *p,
                                  const struct gsmrt_vk_range *logits, const struct gsmrt_vk_range *bias,
                                  const struct gsmrt_vk_range *tokens, const struct gsmrt_vk_range *tid2eid,
                                  const struct gsmrt_vk_range *ids, const struct gsmrt_vk_range *weights,
                                  struct gsmrt_err *err);

/* y[i] = silu(min(g[i], limit)) * clamp(u[i], -limit, limit); limit <= 1e-6: plain SwiGLU. */
gsmrt_status gsmrt_k_swiglu_clamp(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *g,
                                  const struct gsmrt_vk_range *u, const struct gsmrt_vk_range *y, uint32_t n,
                                  float limit, struct gsmrt_err *err);

/* The compressor's gated pooling (shaders/compress_pool.comp) of blocks
 * block0 .. block0 + n_blocks - 1 into out [n_blocks][out_stride]; kv and
 * score [n_rows][width] (width = 2 dim with overlap, else dim) hold position
 * p at row (p - row_pos0) % n_rows; ape [ratio][width]. Its rmsnorm and RoPE
 * (at position b * ratio) are rms_norm and rope, recorded after a barrier. */
struct gsmrt_k_compress_pool {
    uint32_t n_blocks, block0;
    uint32_t dim, ratio;
    bool overlap;                 /* ratio 4 (CSA): two half-feature blocks */
    uint32_t row_pos0, n_rows;
    uint32_t out_stride;          /* floats between output rows */
};
gsmrt_status gsmrt_k_compress_pool(struct gsmrt_vk_rec *rec, const struct gsmrt_k_compress_pool *p,
                                   const struct gsmrt_vk_range *kv, const struct gsmrt_vk_range *score,
                                   const struct gsmrt_vk_range *ape, const struct gsmrt_vk_range *out,
                                   struct gsmrt_err *err);

/* The lightning indexer of CSA layers: scores (shaders/indexer_score.comp)
 * score [n_tok][s_stride] of the compressed indexer rows k [n_rows][k_stride]
 * for queries q [n_tok][q_stride] (n_heads heads of head_dim, after RoPE) and
 * head weights w [n_tok][n_heads] (already / sqrt(head_dim * n_heads)); rows
 * not yet visible to a token (b >= (pos + 1) / ratio) score -inf. */
struct gsmrt_k_indexer {
    uint32_t n_tok, n_heads, head_dim, q_stride;
    uint32_t n_rows, k_stride, s_stride;
    uint32_t ratio;
};
gsmrt_status gsmrt_k_indexer_score(struct gsmrt_vk_rec *rec, const struct gsmrt_k_indexer *p,
                                   const struct gsmrt_vk_range *q, const struct gsmrt_vk_range *w,
                                   const struct gsmrt_vk_range *k, const struct gsmrt_vk_range *pos,
                                   const struct gsmrt_vk_range *score, struct gsmrt_err *err);

/* Top-k of those scores on the device (shaders/topk_rows.comp): ids uint
 * [n_tok][top_k], each token's chosen visible rows in ascending order; ties
 * at the boundary go to the lower row index; with fewer visible rows than
 * top_k, all of them and then 0xffffffff. */
gsmrt_status gsmrt_k_topk_rows(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *score,
                               const struct gsmrt_vk_range *pos, const struct gsmrt_vk_range *ids, uint32_t n_tok,
                               uint32_t n_rows, uint32_t s_stride, uint32_t top_k, uint32_t ratio,
                               struct gsmrt_err *err);

/* V4 attention (shaders/attn_v4.comp): per token and head, softmax with the
 * head's sink logit over the raw window (ring raw [raw_rows][raw_stride],
 * position p at row p % raw_rows) and the compressed rows comp
 * [n_comp][comp_stride] the mode names, K = V; out [n_tok][n_heads][head_dim].
 * ids (mode SELECTED: uint [n_tok][top_k] from gsmrt_k_topk_rows) may be NULL
 * otherwise. The output is still RoPE'd: de-RoPE it with gsmrt_k_rope at the
 * negated positions (gsmrt_v4_rope_params). */
enum gsmrt_v4_comp_mode {
    GSMRT_V4_COMP_NONE = 0,       /* ratio 0: the window only */
    GSMRT_V4_COMP_SELECTED = 1,   /* ratio 4 (CSA): the indexer's top-k */
    GSMRT_V4_COMP_ALL = 2,        /* ratio 128 (HCA): every visible row */
};
struct gsmrt_k_attn_v4 {
    uint32_t n_tok, n_heads, head_dim, q_stride;
    uint32_t raw_rows, raw_stride, n_swa;
    enum gsmrt_v4_comp_mode mode;
    uint32_t n_comp, comp_stride, top_k, ratio;
    float scale;   /* 1 / sqrt(head_dim) */
};
gsmrt_status gsmrt_k_attn_v4(struct gsmrt_vk_rec *rec, const struct gsmrt_k_attn_v4 *p, const struct gsmrt_vk_range *q,
                             const struct gsmrt_vk_range *raw, const struct gsmrt_vk_range *comp,
                             const struct gsmrt_vk_range *ids, const struct gsmrt_vk_range *pos,
                             const struct gsmrt_vk_range *sinks, const struct gsmrt_vk_range *out,
                             struct gsmrt_err *err);

/* Rows of n_tok tokens (the first `width` floats of src rows src_stride
 * apart) into a ring dst [n_rows][dst_stride] at row pos % n_rows
 * (shaders/ring_store.comp): the raw window of attn_v4, the pending positions
 * of compress_pool. A batch's positions must fall on distinct rows. */
struct gsmrt_k_ring_store {
    uint32_t n_tok, width, src_stride;
    uint32_t n_rows, dst_stride;
};
gsmrt_status gsmrt_k_ring_store(struct gsmrt_vk_rec *rec, const struct gsmrt_k_ring_store *p,
                                const struct gsmrt_vk_range *src, const struct gsmrt_vk_range *pos,
                                const struct gsmrt_vk_range *dst, struct gsmrt_err *err);

/* The angle parameters of RoPE as deepseek4 applies it (NORM pairs): no
 * scaling on ratio-0 layers; on compressed layers (their compressed rows and
 * indexer queries) the file's rope.scaling: linear (freq_scale 1/factor) or
 * YaRN (ggml's rope_yarn with attn_factor 1/(1 + 0.1 ln factor), which
 * cancels its magnitude term). Fills every field of out but n_tok, n_heads,
 * head_stride, row_stride and rot_offset. De-RoPE (the attention output) is
 * the same rotation at the negated positions: theta is linear in pos. */
enum gsmrt_v4_rope_scaling { GSMRT_V4_ROPE_NONE, GSMRT_V4_ROPE_LINEAR, GSMRT_V4_ROPE_YARN };
struct gsmrt_v4_rope {
    uint32_t n_rot;
    float freq_base;
    enum gsmrt_v4_rope_scaling scaling;
    float factor;
    uint32_t orig_ctx;
    float beta_fast, beta_slow;
};
void gsmrt_v4_rope_params(const struct gsmrt_v4_rope *r, struct gsmrt_rope_params *out);

/* Creates the pipelines of every kernel the device would use (what a model
 * load does up front), so their compile time is paid once and cached. */
gsmrt_status gsmrt_kernels_warm_up(struct gsmrt_vk_device *dev, struct gsmrt_err *err);

#endif
