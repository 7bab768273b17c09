/* ref.c -- CPU reference implementations (see ref.h). Written from the maths,
 * not from the shaders. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint16_t ref_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

void ref_round_f16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = ref_f16_to_f32(ref_f32_to_f16(x[i]));
}

float ref_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    float f;
    if (exp == 0) f = ldexpf((float)mant, -24);
    else if (exp == 31) f = mant ? NAN : INFINITY;
    else f = ldexpf((float)(mant | 0x400u), (int)exp - 25);
    uint32_t bits;
    memcpy(&bits, &f, 4);
    bits |= sign;
    memcpy(&f, &bits, 4);
    return f;
}

void ref_quantize_q8_0(const float *x, size_t n, uint8_t *out)
{
    for (size_t b = 0; b < n / 32; b++) {
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        uint16_t dh = ref_f32_to_f16(d);
        uint8_t *blk = out + b * 34;
        memcpy(blk, &dh, 2);
        for (int i = 0; i < 32; i++) blk[2 + i] = (uint8_t)(int8_t)roundf(x[b * 32 + i] * id);
    }
}

void ref_dequantize_q8_0(const uint8_t *q, size_t n, float *out)
{
    for (size_t b = 0; b < n / 32; b++) {
        uint16_t dh;
        memcpy(&dh, q + b * 34, 2);
        float d = ref_f16_to_f32(dh);
        for (int i = 0; i < 32; i++) out[b * 32 + i] = d * (float)(int8_t)q[b * 34 + 2 + i];
    }
}

void ref_dequantize(int type, const void *w, size_t n_rows, size_t n_cols, float *out)
{
    size_t n = n_rows * n_cols;
    if (type == 0) memcpy(out, w, n * 4);
    else if (type == 1)
        for (size_t i = 0; i < n; i++) out[i] = ref_f16_to_f32(((const uint16_t *)w)[i]);
    else ref_dequantize_q8_0(w, n, out);
}

void ref_matvec(const float *w, const float *x, float *y, size_t n_rows, size_t n_cols)
{
    for (size_t r = 0; r < n_rows; r++) {
        double acc = 0.0;
        for (size_t c = 0; c < n_cols; c++) acc += (double)w[r * n_cols + c] * x[c];
        y[r] = (float)acc;
    }
}

void ref_matmul(const float *w, const float *x, float *y, size_t n_rows, size_t n_cols, size_t n_tok)
{
    for (size_t t = 0; t < n_tok; t++) ref_matvec(w, x + t * n_cols, y + t * n_rows, n_rows, n_cols);
}

void ref_get_rows(const float *w, const uint32_t *ids, size_t n_ids, size_t n_cols, float *y)
{
    for (size_t i = 0; i < n_ids; i++) memcpy(y + i * n_cols, w + (size_t)ids[i] * n_cols, n_cols * 4);
}

void ref_rms_norm(const float *x, const float *w, float *y, size_t n_rows, size_t n_cols, float eps)
{
    for (size_t r = 0; r < n_rows; r++) {
        double ss = 0.0;
        for (size_t i = 0; i < n_cols; i++) ss += (double)x[r * n_cols + i] * x[r * n_cols + i];
        double inv = 1.0 / sqrt(ss / (double)n_cols + eps);
        for (size_t i = 0; i < n_cols; i++) y[r * n_cols + i] = (float)(x[r * n_cols + i] * inv * w[i]);
    }
}

void ref_softmax(const float *x, float *y, size_t n_rows, size_t n_cols, float scale)
{
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * n_cols;
        double m = -INFINITY, s = 0.0;
        for (size_t i = 0; i < n_cols; i++) m = fmax(m, (double)scale * xr[i]);
        for (size_t i = 0; i < n_cols; i++) s += exp((double)scale * xr[i] - m);
        for (size_t i = 0; i < n_cols; i++) y[r * n_cols + i] = (float)(exp((double)scale * xr[i] - m) / s);
    }
}

void ref_swiglu(const float *g, const float *u, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = (float)((double)g[i] / (1.0 + exp(-(double)g[i])) * u[i]);
}

void ref_add(const float *a, const float *b, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void ref_scale(const float *a, float *y, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) y[i] = s * a[i];
}

void ref_rope(float *x, const int32_t *pos, const struct ref_rope *p)
{
    /* deepseek2-gguf.md section 5: low/high from beta_fast = 32, beta_slow = 1. */
    double d = (double)p->n_dims, b = p->freq_base;
    double low = floor(d * log(p->n_ctx_orig / (32.0 * 2.0 * M_PI)) / (2.0 * log(b)));
    double high = ceil(d * log(p->n_ctx_orig / (1.0 * 2.0 * M_PI)) / (2.0 * log(b)));
    if (low < 0) low = 0;
    if (high > d - 1) high = d - 1;
    size_t half = p->n_dims / 2;
    for (size_t t = 0; t < p->n_tok; t++)
        for (size_t h = 0; h < p->n_heads; h++) {
            float *v = x + t * p->row_stride + h * p->head_stride + p->rot_offset;
            for (size_t i = 0; i < half; i++) {
                double th_ex = pos[t] * pow(b, -2.0 * (double)i / d);
                double th_in = p->freq_scale * th_ex, th = th_in, m = p->attn_factor;
                if (p->ext_factor != 0.0f) {
                    double y = ((double)i - low) / fmax(0.001, high - low);
                    double ramp = (1.0 - fmin(1.0, fmax(0.0, y))) * p->ext_factor;
                    th = th_in * (1.0 - ramp) + th_ex * ramp;
                    m *= 1.0 + 0.1 * log(1.0 / p->freq_scale);
                }
                double c = cos(th) * m, s = sin(th) * m;
                size_t ia = p->neox ? i : 2 * i, ib = p->neox ? i + half : 2 * i + 1;
                double x0 = v[ia], x1 = v[ib];
                v[ia] = (float)(x0 * c - x1 * s);
                v[ib] = (float)(x0 * s + x1 * c);
            }
        }
}

double ref_nmse(const float *a, const float *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? num / den : num;
}

double ref_max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;   /* NaN propagates as a failure */
    }
    return m;
}

void ref_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = lo + (hi - lo) * (float)((s >> 40) / 16777216.0);
    }
}

void ref_head_matvec(const float *w, const float *x, float *y, size_t n_heads, size_t R, size_t C,
                     size_t n_tok, size_t x_stride, size_t x_head, size_t x_off, size_t y_stride,
                     size_t y_head, size_t y_off)
{
    for (size_t t = 0; t < n_tok; t++)
        for (size_t h = 0; h < n_heads; h++)
            for (size_t r = 0; r < R; r++) {
                double acc = 0.0;
                for (size_t c = 0; c < C; c++)
                    acc += (double)w[(h * R + r) * C + c] * x[t * x_stride + h * x_head + x_off + c];
                y[t * y_stride + h * y_head + y_off + r] = (float)acc;
            }
}

void ref_moe_route(const float *logits, const float *bias, size_t n_tok, size_t n_expert, size_t n_used,
                   int gating, size_t n_groups, size_t n_groups_used, int norm, float scale,
                   uint32_t *ids, float *weights)
{
    double p[256], sel[256];
    for (size_t t = 0; t < n_tok; t++) {
        const float *l = logits + t * n_expert;
        if (gating == 2) {
            for (size_t e = 0; e < n_expert; e++) p[e] = 1.0 / (1.0 + exp(-(double)l[e]));
        } else {
            double m = -INFINITY, s = 0.0;
            for (size_t e = 0; e < n_expert; e++) m = fmax(m, l[e]);
            for (size_t e = 0; e < n_expert; e++) s += exp(l[e] - m);
            for (size_t e = 0; e < n_expert; e++) p[e] = exp(l[e] - m) / s;
        }
        for (size_t e = 0; e < n_expert; e++) sel[e] = p[e] + (bias ? bias[e] : 0.0);
        if (n_groups > 1) {
            size_t per = n_expert / n_groups;
            double score[64];
            int keep[64] = {0};
            for (size_t g = 0; g < n_groups; g++) {   /* sum of the two largest in the group */
                double a = -INFINITY, b = -INFINITY;
                for (size_t e = g * per; e < (g + 1) * per; e++) {
                    if (sel[e] > a) b = a, a = sel[e];
                    else if (sel[e] > b) b = sel[e];
                }
                score[g] = a + b;
            }
            for (size_t k = 0; k < n_groups_used; k++) {   /* keep the best groups */
                size_t best = n_groups;
                for (size_t g = 0; g < n_groups; g++)
                    if (!keep[g] && (best == n_groups || score[g] > score[best])) best = g;
                keep[best] = 1;
            }
            for (size_t g = 0; g < n_groups; g++)
                if (!keep[g])
                    for (size_t e = g * per; e < (g + 1) * per; e++) sel[e] = -INFINITY;
        }
        int taken[256] = {0};
        double sum = 0.0;
        for (size_t k = 0; k < n_used; k++) {
            size_t best = n_expert;
            for (size_t e = 0; e < n_expert; e++)
                if (!taken[e] && (best == n_expert || sel[e] > sel[best])) best = e;
            taken[best] = 1;
            ids[t * n_used + k] = (uint32_t)best;
            weights[t * n_used + k] = (float)p[best];
            sum += p[best];
        }
        double f = 1.0;
        if (norm) f = 1.0 / fmax(sum, 6.103515625e-5);
        if (scale != 0.0f && scale != 1.0f) f *= scale;
        for (size_t k = 0; k < n_used; k++) weights[t * n_used + k] = (float)(weights[t * n_used + k] * f);
    }
}

void ref_moe_matvec(const float *w, const float *x, const uint32_t *ids, float *y, size_t n_tok,
                    size_t n_used, size_t R, size_t C, int x_per_slot)
{
    for (size_t t = 0; t < n_tok; t++)
        for (size_t k = 0; k < n_used; k++) {
            const float *we = w + (size_t)ids[t * n_used + k] * R * C;
            const float *xr = x + (x_per_slot ? (t * n_used + k) : t) * C;
            ref_matvec(we, xr, y + (t * n_used + k) * R, R, C);
        }
}

void ref_moe_combine(const float *w, const float *z, float *y, size_t n_tok, size_t n_used, size_t width)
{
    for (size_t t = 0; t < n_tok; t++)
        for (size_t c = 0; c < width; c++) {
            double acc = 0.0;
            for (size_t k = 0; k < n_used; k++) acc += (double)w[t * n_used + k] * z[(t * n_used + k) * width + c];
            y[t * width + c] = (float)acc;
        }
}

void ref_attn_mla(const float *qa, const float *qr, const float *kv, const uint32_t *pages,
                  const int32_t *pos, float *out, size_t n_tok, size_t n_heads, size_t kv_lora,
                  size_t rope_dim, size_t q_stride, size_t q_head, size_t q_off, size_t page_size,
                  float scale)
{
    size_t row_w = kv_lora + rope_dim;
    for (size_t t = 0; t < n_tok; t++)
        for (size_t h = 0; h < n_heads; h++) {
            size_t n = (size_t)pos[t] + 1;
            double *s = malloc(n * sizeof *s), m = -INFINITY, l = 0.0;
            const float *q1 = qa + (t * n_heads + h) * kv_lora, *q2 = qr + t * q_stride + h * q_head + q_off;
            for (size_t p = 0; p < n; p++) {
                const float *row = kv + (pages[p / page_size] * page_size + p % page_size) * row_w;
                double d = 0.0;
                for (size_t j = 0; j < kv_lora; j++) d += (double)q1[j] * row[j];
                for (size_t j = 0; j < rope_dim; j++) d += (double)q2[j] * row[kv_lora + j];
                s[p] = d * scale;
                m = fmax(m, s[p]);
            }
            for (size_t p = 0; p < n; p++) l += (s[p] = exp(s[p] - m));
            for (size_t j = 0; j < kv_lora; j++) {
                double acc = 0.0;
                for (size_t p = 0; p < n; p++)
                    acc += s[p] * kv[(pages[p / page_size] * page_size + p % page_size) * row_w + j];
                out[(t * n_heads + h) * kv_lora + j] = (float)(acc / l);
            }
            free(s);
        }
}

void ref_attn_probs(const float *qa, const float *qr, const float *kv, const uint32_t *pages,
                    const int32_t *pos, size_t t, size_t h, size_t n_heads, size_t kv_lora, size_t rope_dim,
                    size_t q_stride, size_t q_head, size_t q_off, size_t page_size, float scale, double *probs)
{
    size_t row_w = kv_lora + rope_dim, n = (size_t)pos[t] + 1;
    const float *q1 = qa + (t * n_heads + h) * kv_lora, *q2 = qr + t * q_stride + h * q_head + q_off;
    double m = -INFINITY, l = 0.0;
    for (size_t p = 0; p < n; p++) {
        const float *row = kv + (pages[p / page_size] * page_size + p % page_size) * row_w;
        double d = 0.0;
        for (size_t j = 0; j < kv_lora; j++) d += (double)q1[j] * row[j];
        for (size_t j = 0; j < rope_dim; j++) d += (double)q2[j] * row[kv_lora + j];
        probs[p] = d * scale;
        m = fmax(m, probs[p]);
    }
    for (size_t p = 0; p < n; p++) l += (probs[p] = exp(probs[p] - m));
    for (size_t p = 0; p < n; p++) probs[p] /= l;
}

void ref_attn_stats(const float *qa, const float *qr, const float *kv, const uint32_t *pages,
                    const int32_t *pos, size_t n_tok, size_t n_heads, size_t kv_lora, size_t rope_dim,
                    size_t q_stride, size_t q_head, size_t q_off, size_t page_size, float scale,
                    const uint32_t *edges, size_t n_bands, uint32_t sink_tokens, float *out)
{
    for (size_t t = 0; t < n_tok; t++)
        for (size_t h = 0; h < n_heads; h++) {
            size_t n = (size_t)pos[t] + 1;
            double *w = malloc(n * sizeof *w), band[32] = {0}, sink = 0, ent = 0;
            ref_attn_probs(qa, qr, kv, pages, pos, t, h, n_heads, kv_lora, rope_dim, q_stride, q_head, q_off,
                           page_size, scale, w);
            for (size_t p = 0; p < n; p++) {
                size_t dist = n - 1 - p, b = 0;
                while (b + 1 < n_bands && dist >= edges[b + 1]) b++;
                band[b] += w[p];
                if (p < sink_tokens) sink += w[p];
                if (w[p] > 0) ent -= w[p] * log(w[p]);
            }
            float *o = out + (t * n_heads + h) * (n_bands + 2);
            for (size_t b = 0; b < n_bands; b++) o[b] = (float)band[b];
            o[n_bands] = (float)sink;
            o[n_bands + 1] = (float)ent;
            free(w);
        }
}
