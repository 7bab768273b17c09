/* ref.h -- plain C reference implementations of every kernel (llama2.c
 * style), the independent truth the GPU kernels are tested against. Double
 * accumulation where it makes the reference clearly more exact than the
 * kernel under test. Shapes are C order. */
#ifndef GSMRT_TEST_REF_H
#define GSMRT_TEST_REF_H

#include <stddef.h>
#include <stdint.h>

/* IEEE half <-> float, round to nearest even (independent of any library). */
uint16_t ref_f32_to_f16(float f);
float ref_f16_to_f32(uint16_t h);
/* What an F16 KV cache holds for x[0..n): each value rounded to the nearest
 * half (ties to even) and back, in place. */
void ref_round_f16(float *x, size_t n);

/* Q8_0 (ggml layout: f16 d = max|x|/127, then 32 int8 round(x/d)). */
void ref_quantize_q8_0(const float *x, size_t n, uint8_t *out);   /* n % 32 == 0 */
void ref_dequantize_q8_0(const uint8_t *q, size_t n, float *out);

/* Weights [n_rows][n_cols] in type 0 (F32), 1 (F16) or 8 (Q8_0), as floats. */
void ref_dequantize(int type, const void *w, size_t n_rows, size_t n_cols, float *out);

void ref_matvec(const float *w, const float *x, float *y, size_t n_rows, size_t n_cols);
void ref_matmul(const float *w, const float *x, float *y, size_t n_rows, size_t n_cols,
                size_t n_tok);   /* y: [n_tok][n_rows] */
void ref_get_rows(const float *w, const uint32_t *ids, size_t n_ids, size_t n_cols, float *y);
void ref_rms_norm(const float *x, const float *w, float *y, size_t n_rows, size_t n_cols, float eps);
void ref_softmax(const float *x, float *y, size_t n_rows, size_t n_cols, float scale);
void ref_swiglu(const float *g, const float *u, float *y, size_t n);
void ref_add(const float *a, const float *b, float *y, size_t n);
void ref_scale(const float *a, float *y, size_t n, float s);

struct ref_rope {
    size_t n_tok, n_heads, head_stride, row_stride, rot_offset, n_dims;
    int neox;
    float freq_base, freq_scale, ext_factor, attn_factor;
    int n_ctx_orig;   /* for the YaRN correction range (beta_fast 32, beta_slow 1) */
};
/* In place; written from shared/docs/deepseek2-gguf.md section 5. */
void ref_rope(float *x, const int32_t *pos, const struct ref_rope *p);

/* Normalised mean squared error sum((a-b)^2) / sum(b^2), and max |a-b|. */
double ref_nmse(const float *a, const float *b, size_t n);
double ref_max_abs_diff(const float *a, const float *b, size_t n);

/* Deterministic uniform floats in [lo, hi) (xorshift), for test inputs. */
void ref_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi);

#endif

/* ---- model kernels -------------------------------------------------------- */

/* y[t*y_stride + h*y_head + y_off + r] = sum_c w[(h*R + r)*C + c] * x[t*x_stride + h*x_head + x_off + c] */
void ref_head_matvec(const float *w, const float *x, float *y, size_t n_heads, size_t R, size_t C,
                     size_t n_tok, size_t x_stride, size_t x_head, size_t x_off, size_t y_stride,
                     size_t y_head, size_t y_off);

/* Routing as shared/docs/deepseek2-gguf.md §7 states it; bias may be NULL. */
void ref_moe_route(const float *logits, const float *bias, size_t n_tok, size_t n_expert, size_t n_used,
                   int gating, size_t n_groups, size_t n_groups_used, int norm, float scale,
                   uint32_t *ids, float *weights);
void ref_moe_matvec(const float *w, const float *x, const uint32_t *ids, float *y, size_t n_tok,
                    size_t n_used, size_t R, size_t C, int x_per_slot);
void ref_moe_combine(const float *w, const float *z, float *y, size_t n_tok, size_t n_used, size_t width);

/* Dense softmax attention over latent rows [c | k_pe] stored by page table:
 * out[t][h][j] = sum_{p <= pos[t]} softmax_p(scale * (<qa[t][h], c_p> + <q_pe, k_pe_p>)) c_p[j]. */
void ref_attn_mla(const float *qa, const float *qr, const float *kv, const uint32_t *pages,
                  const int32_t *pos, float *out, size_t n_tok, size_t n_heads, size_t kv_lora,
                  size_t rope_dim, size_t q_stride, size_t q_head, size_t q_off, size_t page_size,
                  float scale);

/* The softmax weights of that attention, probs[p] for p <= pos[t], of token t and head h (double). */
void ref_attn_probs(const float *qa, const float *qr, const float *kv, const uint32_t *pages,
                    const int32_t *pos, size_t t, size_t h, size_t n_heads, size_t kv_lora, size_t rope_dim,
                    size_t q_stride, size_t q_head, size_t q_off, size_t page_size, float scale, double *probs);

/* Statistics of those rows (shaders/attn_stats.comp), out [n_tok][n_heads][n_bands + 2]:
 * mass per distance band (pos[t] - p in [edges[b], edges[b + 1]), last band open), mass on
 * keys p < sink_tokens, entropy -sum w ln w in nats. */
void ref_attn_stats(const float *qa, const float *qr, const float *kv, const uint32_t *pages,
                    const int32_t *pos, size_t n_tok, size_t n_heads, size_t kv_lora, size_t rope_dim,
                    size_t q_stride, size_t q_head, size_t q_off, size_t page_size, float scale,
                    const uint32_t *edges, size_t n_bands, uint32_t sink_tokens, float *out);
