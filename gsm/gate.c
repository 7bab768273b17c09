/* gate.c -- page summaries, page score bounds, the gate value and the
 * selection of cold pages, and partial softmax results with their
 * log-sum-exp merge: plain loops in double, the reference for the kernels. */
#include "gate.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "sort.h"

void gsmrt_gsm_summary_reset(float *kmin, float *kmax, size_t n_ch)
{
    for (size_t c = 0; c < n_ch; c++) {
        kmin[c] = INFINITY;
        kmax[c] = -INFINITY;
    }
}

void gsmrt_gsm_summary_add(float *kmin, float *kmax, const float *key, size_t n_ch)
{
    for (size_t c = 0; c < n_ch; c++) {
        if (key[c] < kmin[c]) kmin[c] = key[c];
        if (key[c] > kmax[c]) kmax[c] = key[c];
    }
}

void gsmrt_gsm_summary_build(const float *keys, size_t n_tok, size_t n_ch, float *kmin, float *kmax)
{
    gsmrt_gsm_summary_reset(kmin, kmax, n_ch);
    for (size_t t = 0; t < n_tok; t++) gsmrt_gsm_summary_add(kmin, kmax, keys + t * n_ch, n_ch);
}

double gsmrt_gsm_page_bound(const float *q, const float *kmin, const float *kmax, size_t n_ch, float scale)
{
    if (n_ch > 0 && !(kmin[0] <= kmax[0])) {
        if (isnan(kmin[0]) || isnan(kmax[0])) return INFINITY;
        return -INFINITY;   /* empty page */
    }
    double s = 0;
    for (size_t c = 0; c < n_ch; c++) {
        /* float * float is exact in double: only the sum rounds. */
        double a = (double)q[c] * kmin[c], b = (double)q[c] * kmax[c];
        s += a > b ? a : b;
    }
    s *= (double)scale;
    return isnan(s) ? INFINITY : s;
}

void gsmrt_gsm_partial_reset(struct gsmrt_gsm_partial *p, size_t n_v)
{
    p->m = -INFINITY;
    p->l = 0;
    if (p->acc) memset(p->acc, 0, n_v * sizeof *p->acc);
}

void gsmrt_gsm_partial_add(struct gsmrt_gsm_partial *p, const float *q, const float *keys, const float *vals,
                           size_t n_tok, size_t n_k, size_t n_v, float scale)
{
    for (size_t t = 0; t < n_tok; t++) {
        const float *k = keys + t * n_k, *v = vals + t * n_v;
        double s = 0;
        for (size_t c = 0; c < n_k; c++) s += (double)q[c] * k[c];
        s *= (double)scale;
        if (s > p->m) {
            double f = exp(p->m - s);   /* 0 when p was empty */
            p->l *= f;
            for (size_t j = 0; j < n_v; j++) p->acc[j] *= f;
            p->m = s;
        }
        double w = exp(s - p->m);
        p->l += w;
        for (size_t j = 0; j < n_v; j++) p->acc[j] += w * v[j];
    }
}

void gsmrt_gsm_partial_merge(struct gsmrt_gsm_partial *dst, const struct gsmrt_gsm_partial *src, size_t n_v)
{
    if (!(src->l > 0)) return;
    if (!(dst->l > 0)) {
        dst->m = src->m;
        dst->l = src->l;
        memcpy(dst->acc, src->acc, n_v * sizeof *dst->acc);
        return;
    }
    double m = dst->m > src->m ? dst->m : src->m;
    double fd = exp(dst->m - m), fs = exp(src->m - m);
    dst->l = dst->l * fd + src->l * fs;
    for (size_t j = 0; j < n_v; j++) dst->acc[j] = dst->acc[j] * fd + src->acc[j] * fs;
    dst->m = m;
}

void gsmrt_gsm_partial_finish(const struct gsmrt_gsm_partial *p, size_t n_v, float *out)
{
    for (size_t j = 0; j < n_v; j++) out[j] = p->l > 0 ? (float)(p->acc[j] / p->l) : 0.0f;
}

/* log of a page's mass bound, n exp(ub): the sort key. NaN counts as +inf. */
static double log_mass(double ub, uint32_t n_tok)
{
    if (isnan(ub)) return INFINITY;
    if (n_tok == 0) return -INFINITY;
    return ub + log((double)n_tok);
}

/* Share x / (l + x) of a mass with log(x / e^m) = a, next to the exact part. */
static double share(double m, double l, double a)
{
    if (a == -INFINITY) return 0;
    if (!(l > 0)) return 1;
    double t = log(l) - (a - m);   /* log(l / x) */
    if (isnan(t)) return 1;   /* +inf bound: unbounded */
    return 1.0 / (1.0 + exp(t));
}

static double log_add(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    double hi = a > b ? a : b, lo = a > b ? b : a;
    if (hi == INFINITY) return INFINITY;
    return hi + log1p(exp(lo - hi));
}

double gsmrt_gsm_gate_value(double m, double l, const double *ub, const uint32_t *n_tok, size_t n)
{
    double a = -INFINITY;
    for (size_t i = 0; i < n; i++) a = log_add(a, log_mass(ub[i], n_tok[i]));
    return share(m, l, a);
}

double gsmrt_gsm_gate_page_share(double m, double l, double ub, uint32_t n_tok)
{
    return share(m, l, log_mass(ub, n_tok));
}

struct bounds {
    const double *ub;
    const uint32_t *n_tok;
};

/* Does page i come before page j? Larger mass bound first, lower index on ties. */
static bool before(const void *ctx, uint32_t i, uint32_t j)
{
    const struct bounds *b = ctx;
    double x = log_mass(b->ub[i], b->n_tok[i]), y = log_mass(b->ub[j], b->n_tok[j]);
    return x > y || (x == y && i < j);
}

gsmrt_status gsmrt_gsm_gate_select(double m, double l, const double *ub, const uint32_t *n_tok, size_t n,
                                   double threshold, uint32_t *order, struct gsmrt_gsm_gate_result *out,
                                   struct gsmrt_err *err)
{
    if (n > UINT32_MAX || (n && (!ub || !n_tok || !order)) || !out || isnan(threshold) || !(l >= 0))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gate: %zu cold pages, threshold %g, l %g", n,
                             threshold, l);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    struct bounds b = {ub, n_tok};
    gsmrt_gsm_sort_idx(order, n, before, &b);
    out->gate = gsmrt_gsm_gate_value(m, l, ub, n_tok, n);
    if (threshold <= 0) {
        out->n_selected = n;
        out->skipped = 0;
        return GSMRT_OK;
    }
    /* Leave out the longest tail (smallest bounds) whose share stays <= threshold. */
    double a = -INFINITY, kept_share = 0;
    size_t k = n;
    while (k > 0) {
        double a2 = log_add(a, log_mass(ub[order[k - 1]], n_tok[order[k - 1]]));
        double s2 = share(m, l, a2);
        if (s2 > threshold) break;
        a = a2;
        kept_share = s2;
        k--;
    }
    out->n_selected = k;
    out->skipped = kept_share;
    return GSMRT_OK;
}
