/* ref.c -- CPU reference implementations (see ref.h). Written from the maths,
 * not from the shaders. */
#include "ref.h"

#include <math.h>
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
