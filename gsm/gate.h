/* gate.h -- the gate arithmetic on the CPU: the reference the GPU bound and
 * merge kernels are checked against, and what the policy tests reason with.
 *
 * Scores are s_t = scale * <q, k_t> (scale > 0). Softmax state of a set of
 * tokens is kept unnormalised as a partial (m, l, acc): m = max score,
 * l = sum exp(s_t - m), acc = sum exp(s_t - m) v_t. Pages of the exact part
 * (sink, window, hot) give one partial; each cold page has a summary (per
 * channel min and max of its keys) from which
 *     ub = scale * sum_c max(q_c min_c, q_c max_c) >= every score in the page,
 * so a cold page of n tokens holds at most n exp(ub - m) of unnormalised mass
 * and all cold pages at most U = sum_p n_p exp(ub_p - m). Since x / (l + x)
 * grows with x, the cold share of the softmax mass is at most
 *     gate = U / (l + U)  in [0, 1)  (1 when the exact part is empty).
 * Bounds are computed in double: rounding is monotone, so a double bound is
 * never below a double score computed in the same order. */
#ifndef GSMRT_GSM_GATE_H
#define GSMRT_GSM_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* ---- page summaries ----------------------------------------------------- */

/* kmin/kmax[n_ch] := +inf / -inf (an empty page). */
void gsmrt_gsm_summary_reset(float *kmin, float *kmax, size_t n_ch);
/* Widens a summary by one key row (as the page fills). */
void gsmrt_gsm_summary_add(float *kmin, float *kmax, const float *key, size_t n_ch);
/* Summary of keys[n_tok][n_ch]. */
void gsmrt_gsm_summary_build(const float *keys, size_t n_tok, size_t n_ch, float *kmin, float *kmax);

/* Upper bound on the best score of a page: scale * sum_c max(q_c min_c, q_c max_c).
 * -inf for an empty page; +inf if anything is NaN (a page we cannot bound is read). */
double gsmrt_gsm_page_bound(const float *q, const float *kmin, const float *kmax, size_t n_ch, float scale);

/* ---- partial softmax results ------------------------------------------ */

struct gsmrt_gsm_partial {
    double m;      /* running max score; -inf when empty */
    double l;      /* sum of exp(s - m); 0 when empty */
    double *acc;   /* [n_v] sum of exp(s - m) * v; caller-owned */
};

/* An empty partial (acc zeroed). */
void gsmrt_gsm_partial_reset(struct gsmrt_gsm_partial *p, size_t n_v);

/* Adds tokens keys[n_tok][n_k] / vals[n_tok][n_v] to p (exact attention). */
void gsmrt_gsm_partial_add(struct gsmrt_gsm_partial *p, const float *q, const float *keys, const float *vals,
                           size_t n_tok, size_t n_k, size_t n_v, float scale);

/* Log-sum-exp merge: dst := dst (+) src. Either may be empty. */
void gsmrt_gsm_partial_merge(struct gsmrt_gsm_partial *dst, const struct gsmrt_gsm_partial *src, size_t n_v);

/* out[n_v] = acc / l (zeros when empty). */
void gsmrt_gsm_partial_finish(const struct gsmrt_gsm_partial *p, size_t n_v, float *out);

/* ---- the gate ----------------------------------------------------------- */

/* Bound on the share of softmax mass that pages with bounds ub[i] and n_tok[i]
 * tokens can hold next to an exact part (m, l): U / (l + U), in log space so
 * nothing overflows. n == 0 gives 0; l == 0 with any page gives 1. */
double gsmrt_gsm_gate_value(double m, double l, const double *ub, const uint32_t *n_tok, size_t n);

/* Same for one page alone: what prefetch compares against the threshold. */
double gsmrt_gsm_gate_page_share(double m, double l, double ub, uint32_t n_tok);

struct gsmrt_gsm_gate_result {
    double gate;          /* bound on the cold share before any cold page is computed */
    double skipped;       /* bound on the share of the pages left out (<= threshold; 0 if none) */
    size_t n_selected;    /* order[0, n_selected) are to be computed exactly */
};

/* Orders the n cold pages by their mass bound n_tok exp(ub) (largest first,
 * lower index on ties) into order[n], and selects the shortest prefix such
 * that the pages left out hold a share bounded by `threshold`:
 *     R / (l + R) <= threshold,  R = their summed mass bound.
 * (Computing the selected pages only adds to the denominator, so the bound
 * still holds after the merge.) threshold <= 0 selects every page: the result
 * is then dense attention. NaN bounds count as +inf. */
gsmrt_status gsmrt_gsm_gate_select(double m, double l, const double *ub, const uint32_t *n_tok, size_t n,
                                   double threshold, uint32_t *order, struct gsmrt_gsm_gate_result *out,
                                   struct gsmrt_err *err);

#endif
