/* ref_v4.h -- plain C references of the DeepSeek V4 ops (llama.cpp's
 * deepseek4), written from tools/deepseek4_ref.py (itself checked against
 * llama.cpp), in double precision. Shapes are C order. */
#ifndef GSMRT_TEST_REF_V4_H
#define GSMRT_TEST_REF_V4_H

#include <stddef.h>
#include <stdint.h>

/* HyperConnection.pre of n_tok tokens: x [n_tok][hc][E], fn [n_mix][hc*E]
 * (n_mix = (2+hc)hc, or hc for the head), base [n_mix], scale [3] ([1] head).
 * y [n_tok][E]; mix [n_tok][hc + hc*hc] = post, comb[src][dst] (not for the head). */
void ref_hc_pre(const float *x, const float *fn, const float *base, const float *scale, size_t n_tok, size_t E,
                size_t hc, int iters, float eps_rms, float eps_hc, int head, float *y, float *mix);
/* HyperConnection.post: xn[t][d][e] = post[d] f[t][e] + sum_s comb[s][d] x[t][s][e]. */
void ref_hc_post(const float *f, const float *x, const float *mix, size_t n_tok, size_t E, size_t hc, float *xn);

/* MoE.forward's routing: sqrt(softplus) scores, top-k of score + bias (ties:
 * lowest index) or tid2eid[token] (int [n_vocab][n_used]) when hashed. */
void ref_moe_route_v4(const float *logits, const float *bias, const uint32_t *tokens, const int32_t *tid2eid,
                      size_t n_tok, size_t n_expert, size_t n_used, int hashed, int norm, float scale,
                      uint32_t *ids, float *weights);

/* silu(min(g, L)) * clamp(u, -L, L); L <= 1e-6: no clamp. */
void ref_swiglu_clamp(const float *g, const float *u, float *y, size_t n, float limit);

/* RoPE as deepseek4 applies it (NORM pairs on the last n_rot of each head of
 * D, theta_i = pos base^(-2i/n_rot), optional YaRN / linear scaling, no
 * magnitude change); inverse: the rotation back. x [n][n_heads][D]. */
struct ref_v4_rope {
    size_t D, n_rot;
    double base;
    int scaling;   /* 0 none, 1 linear, 2 YaRN */
    double factor, orig_ctx, beta_fast, beta_slow;
};
void ref_v4_rope(float *x, const int32_t *pos, size_t n, size_t n_heads, const struct ref_v4_rope *r, int inverse);

/* Compressor.rows: compressed rows first .. first + n_blocks - 1 from the
 * per-position kv and score (without ape) of positions 0.., [n_pos][width]:
 * gated pooling (with the ratio-4 overlap), rmsnorm with norm [dim] (eps),
 * RoPE at b * ratio. out [n_blocks][dim]. */
void ref_compressor(const float *kv, const float *score, const float *ape, const float *norm, size_t dim,
                    size_t ratio, int overlap, size_t first, size_t n_blocks, float eps,
                    const struct ref_v4_rope *rope, float *out);

/* Indexer.select's scores: score[t][b] = sum_h relu(q[t][h] . k[b]) w[t][h]
 * for b < (pos[t] + 1) / ratio, else -inf. q [n_tok][n_heads][dim],
 * k [n_rows][dim], w [n_tok][n_heads], score [n_tok][n_rows]. */
void ref_indexer_scores(const float *q, const float *w, const float *k, const int32_t *pos, size_t n_tok,
                        size_t n_heads, size_t dim, size_t n_rows, size_t ratio, float *score);
/* The k largest of the visible scores of each token, ascending row order,
 * ties to the lower row, padding 0xffffffff: ids [n_tok][k]. */
void ref_topk_rows(const float *score, const int32_t *pos, size_t n_tok, size_t n_rows, size_t k, size_t ratio,
                   uint32_t *ids);

/* Attention.forward from the scores to the weighted sum (before de-RoPE):
 * keys of token t are the raw rows of positions max(0, pos - n_swa + 1) ..
 * pos (raw [..][D] indexed by position), then mode 1: comp rows ids[t][..]
 * (0xffffffff skipped), mode 2: comp rows b < (pos + 1) / ratio; softmax of
 * scale q.k with the sink logit sinks[h]; out [n_tok][H][D]. */
void ref_attn_v4(const float *q, const float *raw, const float *comp, const uint32_t *ids, const int32_t *pos,
                 const float *sinks, size_t n_tok, size_t H, size_t D, size_t n_swa, int mode, size_t top_k,
                 size_t ratio, float scale, float *out);

#endif
