/* ref_v4.c -- CPU references of the DeepSeek V4 ops (see ref_v4.h), from
 * tools/deepseek4_ref.py, not from the shaders. */
#include "ref_v4.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

void ref_hc_pre(const float *x, const float *fn, const float *base, const float *scale, size_t n_tok, size_t E,
                size_t hc, int iters, float eps_rms, float eps_hc, int head, float *y, float *mix)
{
    size_t W = hc * E, n_mix = head ? hc : (2 + hc) * hc;
    double *m = malloc(n_mix * sizeof *m), *c = malloc(hc * hc * sizeof *c), pre[16];
    for (size_t t = 0; t < n_tok; t++) {
        const float *xt = x + t * W;
        double ss = 0.0;
        for (size_t i = 0; i < W; i++) ss += (double)xt[i] * xt[i];
        double r = 1.0 / sqrt(ss / (double)W + eps_rms);
        for (size_t k = 0; k < n_mix; k++) {   /* mixes = rmsnorm(concat x) @ fn.T */
            double a = 0.0;
            for (size_t i = 0; i < W; i++) a += (double)fn[k * W + i] * xt[i] * r;
            m[k] = a;
        }
        for (size_t s = 0; s < hc; s++) pre[s] = sigmoid(m[s] * scale[0] + base[s]) + eps_hc;
        for (size_t e = 0; e < E; e++) {
            double a = 0.0;
            for (size_t s = 0; s < hc; s++) a += pre[s] * xt[s * E + e];
            y[t * E + e] = (float)a;
        }
        if (head) continue;
        float *mt = mix + t * (hc + hc * hc);
        for (size_t s = 0; s < hc; s++) mt[s] = (float)(2.0 * sigmoid(m[hc + s] * scale[1] + base[hc + s]));
        /* sinkhorn(): softmax over dst + eps, then src-normalise; iters - 1 times dst, src */
        for (size_t s = 0; s < hc; s++) {
            double mx = -INFINITY, z = 0.0;
            for (size_t d = 0; d < hc; d++) {
                c[s * hc + d] = m[2 * hc + s * hc + d] * scale[2] + base[2 * hc + s * hc + d];
                if (c[s * hc + d] > mx) mx = c[s * hc + d];
            }
            for (size_t d = 0; d < hc; d++) z += exp(c[s * hc + d] - mx);
            for (size_t d = 0; d < hc; d++) c[s * hc + d] = exp(c[s * hc + d] - mx) / z + eps_hc;
        }
        for (int it = 0; it < (iters > 1 ? iters : 1); it++) {
            if (it > 0)
                for (size_t s = 0; s < hc; s++) {
                    double z = 0.0;
                    for (size_t d = 0; d < hc; d++) z += c[s * hc + d];
                    for (size_t d = 0; d < hc; d++) c[s * hc + d] /= z + eps_hc;
                }
            for (size_t d = 0; d < hc; d++) {
                double z = 0.0;
                for (size_t s = 0; s < hc; s++) z += c[s * hc + d];
                for (size_t s = 0; s < hc; s++) c[s * hc + d] /= z + eps_hc;
            }
        }
        for (size_t k = 0; k < hc * hc; k++) mt[hc + k] = (float)c[k];
    }
    free(m), free(c);
}

void ref_hc_post(const float *f, const float *x, const float *mix, size_t n_tok, size_t E, size_t hc, float *xn)
{
    for (size_t t = 0; t < n_tok; t++) {
        const float *mt = mix + t * (hc + hc * hc);
        for (size_t d = 0; d < hc; d++)
            for (size_t e = 0; e < E; e++) {
                double a = (double)mt[d] * f[t * E + e];
                for (size_t s = 0; s < hc; s++) a += (double)mt[hc + s * hc + d] * x[(t * hc + s) * E + e];
                xn[(t * hc + d) * E + e] = (float)a;
            }
    }
}

static double sqrt_softplus(double z) { return sqrt(z > 20.0 ? z : log1p(exp(z))); }

void ref_moe_route_v4(const float *logits, const float *bias, const uint32_t *tokens, const int32_t *tid2eid,
                      size_t n_tok, size_t n_expert, size_t n_used, int hashed, int norm, float scale,
                      uint32_t *ids, float *weights)
{
    double *p = malloc(n_expert * sizeof *p), *sel = malloc(n_expert * sizeof *sel);
    for (size_t t = 0; t < n_tok; t++) {
        for (size_t e = 0; e < n_expert; e++) {
            p[e] = sqrt_softplus(logits[t * n_expert + e]);
            sel[e] = hashed ? 0.0 : p[e] + bias[e];
        }
        double sum = 0.0, w[64];
        for (size_t k = 0; k < n_used; k++) {
            size_t best = 0;
            if (hashed) best = (size_t)tid2eid[tokens[t] * n_used + k];
            else {
                for (size_t e = 1; e < n_expert; e++)
                    if (sel[e] > sel[best]) best = e;
                sel[best] = -INFINITY;
            }
            ids[t * n_used + k] = (uint32_t)best;
            w[k] = p[best];
            sum += p[best];
        }
        for (size_t k = 0; k < n_used; k++) {
            double v = w[k];
            if (norm) v /= sum > 6.103515625e-5 ? sum : 6.103515625e-5;
            weights[t * n_used + k] = (float)(v * scale);
        }
    }
    free(p), free(sel);
}

void ref_swiglu_clamp(const float *g, const float *u, float *y, size_t n, float limit)
{
    for (size_t i = 0; i < n; i++) {
        double a = g[i], b = u[i];
        if (limit > 1e-6f) {
            if (a > limit) a = limit;
            b = b > limit ? limit : b < -limit ? -limit : b;
        }
        y[i] = (float)(a / (1.0 + exp(-a)) * b);
    }
}

void ref_v4_rope(float *x, const int32_t *pos, size_t n, size_t n_heads, const struct ref_v4_rope *r, int inverse)
{
    size_t nope = r->D - r->n_rot, half = r->n_rot / 2;
    double low = 0.0, high = 0.0;
    if (r->scaling == 2) {   /* ggml's rope_yarn correction dims */
        double dl = r->n_rot * log(r->orig_ctx / (r->beta_fast * 2 * M_PI)) / (2 * log(r->base));
        double dh = r->n_rot * log(r->orig_ctx / (r->beta_slow * 2 * M_PI)) / (2 * log(r->base));
        low = fmax(0.0, floor(dl));
        high = fmin(r->n_rot - 1.0, ceil(dh));
    }
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < half; i++) {
            double theta = pos[t] * pow(r->base, -2.0 * (double)i / (double)r->n_rot);
            if (r->scaling == 1) theta /= r->factor;
            else if (r->scaling == 2) {
                double q = ((double)i - low) / fmax(0.001, high - low);
                double keep = 1.0 - (q < 0 ? 0 : q > 1 ? 1 : q);
                theta = theta / r->factor * (1 - keep) + theta * keep;
            }
            double cs = cos(theta), sn = inverse ? -sin(theta) : sin(theta);
            for (size_t h = 0; h < n_heads; h++) {
                float *v = x + (t * n_heads + h) * r->D + nope + 2 * i;
                double a = v[0], b = v[1];
                v[0] = (float)(a * cs - b * sn);
                v[1] = (float)(a * sn + b * cs);
            }
        }
}

void ref_compressor(const float *kv, const float *score, const float *ape, const float *norm, size_t dim,
                    size_t ratio, int overlap, size_t first, size_t n_blocks, float eps,
                    const struct ref_v4_rope *rope, float *out)
{
    size_t width = overlap ? 2 * dim : dim, n_ent = overlap ? 2 * ratio : ratio;
    double *sc = malloc(n_ent * sizeof *sc), *val = malloc(n_ent * sizeof *val), *row = malloc(dim * sizeof *row);
    int32_t *start = malloc(n_blocks * sizeof *start);
    for (size_t jb = 0; jb < n_blocks; jb++) {
        size_t b = first + jb;
        for (size_t d = 0; d < dim; d++) {
            size_t n = 0;
            if (overlap) /* the first half-features of the block before (none before block 0) */
                for (size_t j = 0; j < ratio; j++, n++) {
                    if (b == 0) { sc[n] = -INFINITY, val[n] = 0.0; continue; }
                    size_t p = (b - 1) * ratio + j;
                    sc[n] = (double)score[p * width + d] + ape[j * width + d];
                    val[n] = kv[p * width + d];
                }
            size_t c = overlap ? dim + d : d;
            for (size_t j = 0; j < ratio; j++, n++) {
                size_t p = b * ratio + j;
                sc[n] = (double)score[p * width + c] + ape[j * width + c];
                val[n] = kv[p * width + c];
            }
            double mx = -INFINITY, z = 0.0, a = 0.0;
            for (size_t k = 0; k < n; k++) mx = fmax(mx, sc[k]);
            for (size_t k = 0; k < n; k++) z += exp(sc[k] - mx), a += exp(sc[k] - mx) * val[k];
            row[d] = a / z;
        }
        double ss = 0.0;
        for (size_t d = 0; d < dim; d++) ss += row[d] * row[d];
        double inv = 1.0 / sqrt(ss / (double)dim + eps);
        for (size_t d = 0; d < dim; d++) out[jb * dim + d] = (float)(row[d] * inv * norm[d]);
        start[jb] = (int32_t)(b * ratio);
    }
    ref_v4_rope(out, start, n_blocks, 1, rope, 0);
    free(sc), free(val), free(row), free(start);
}

void ref_indexer_scores(const float *q, const float *w, const float *k, const int32_t *pos, size_t n_tok,
                        size_t n_heads, size_t dim, size_t n_rows, size_t ratio, float *score)
{
    for (size_t t = 0; t < n_tok; t++) {
        size_t visible = (size_t)(pos[t] + 1) / ratio;
        for (size_t b = 0; b < n_rows; b++) {
            if (b >= visible) {
                score[t * n_rows + b] = -INFINITY;
                continue;
            }
            double acc = 0.0;
            for (size_t h = 0; h < n_heads; h++) {
                double dot = 0.0;
                for (size_t d = 0; d < dim; d++) dot += (double)q[(t * n_heads + h) * dim + d] * k[b * dim + d];
                acc += (dot > 0 ? dot : 0.0) * w[t * n_heads + h];
            }
            score[t * n_rows + b] = (float)acc;
        }
    }
}

void ref_topk_rows(const float *score, const int32_t *pos, size_t n_tok, size_t n_rows, size_t k, size_t ratio,
                   uint32_t *ids)
{
    char *taken = malloc(n_rows ? n_rows : 1);
    for (size_t t = 0; t < n_tok; t++) {
        size_t visible = (size_t)(pos[t] + 1) / ratio;
        if (visible > n_rows) visible = n_rows;
        size_t n = visible < k ? visible : k;
        memset(taken, 0, n_rows ? n_rows : 1);
        for (size_t i = 0; i < n; i++) {   /* repeated argmax: the first of equal maxima */
            size_t best = SIZE_MAX;
            for (size_t b = 0; b < visible; b++)
                if (!taken[b] && (best == SIZE_MAX || score[t * n_rows + b] > score[t * n_rows + best])) best = b;
            if (best == SIZE_MAX) break;   /* cannot happen: i < visible */
            taken[best] = 1;
        }
        size_t o = 0;
        for (size_t b = 0; b < visible; b++)
            if (taken[b]) ids[t * k + o++] = (uint32_t)b;
        while (o < k) ids[t * k + o++] = 0xffffffffu;
    }
    free(taken);
}

void ref_attn_v4(const float *q, const float *raw, const float *comp, const uint32_t *ids, const int32_t *pos,
                 const float *sinks, size_t n_tok, size_t H, size_t D, size_t n_swa, int mode, size_t top_k,
                 size_t ratio, float scale, float *out)
{
    size_t max_keys = n_swa + (mode == 1 ? top_k : 0);
    for (size_t t = 0; t < n_tok; t++)
        if (mode == 2) max_keys = n_swa + (size_t)(pos[t] + 1) / ratio > max_keys ? n_swa + (size_t)(pos[t] + 1) / ratio
                                                                                   : max_keys;
    const float **rows = malloc(max_keys * sizeof *rows);
    double *s = malloc(max_keys * sizeof *s);
    for (size_t t = 0; t < n_tok; t++) {
        size_t n = 0, p = (size_t)pos[t];
        for (size_t k = p + 1 > n_swa ? p + 1 - n_swa : 0; k <= p; k++) rows[n++] = raw + k * D;
        if (mode == 1)
            for (size_t i = 0; i < top_k; i++)
                if (ids[t * top_k + i] != 0xffffffffu) rows[n++] = comp + (size_t)ids[t * top_k + i] * D;
        if (mode == 2)
            for (size_t b = 0; b < (p + 1) / ratio; b++) rows[n++] = comp + b * D;
        for (size_t h = 0; h < H; h++) {
            const float *qh = q + (t * H + h) * D;
            double mx = sinks[h];
            for (size_t j = 0; j < n; j++) {
                double a = 0.0;
                for (size_t d = 0; d < D; d++) a += (double)qh[d] * rows[j][d];
                s[j] = a * scale;
                if (s[j] > mx) mx = s[j];
            }
            double z = exp(sinks[h] - mx);
            for (size_t j = 0; j < n; j++) z += exp(s[j] - mx);
            for (size_t d = 0; d < D; d++) {
                double a = 0.0;
                for (size_t j = 0; j < n; j++) a += exp(s[j] - mx) / z * rows[j][d];
                out[(t * H + h) * D + d] = (float)a;
            }
        }
    }
    free(rows), free(s);
}
