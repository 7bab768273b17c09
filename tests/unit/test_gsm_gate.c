/* test_gsm_gate.c -- the gate arithmetic against hand-computed cases and
 * brute force: page bounds never below the true best score, the gate never
 * below the true cold share of a dense softmax, threshold 0 equal to dense
 * attention, and the mass actually skipped never above the reported bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gsm.h"
#include "kmeans.h"   /* the seeded PRNG */

static void test_summary_and_bound_by_hand(void **state)
{
    (void)state;
    const float keys[3][2] = {{1, -2}, {3, 0}, {-1, 5}};
    float kmin[2], kmax[2];
    gsmrt_gsm_summary_build(&keys[0][0], 3, 2, kmin, kmax);
    assert_true(kmin[0] == -1 && kmin[1] == -2 && kmax[0] == 3 && kmax[1] == 5);
    /* q = (2, -1): max(2*-1, 2*3) + max(-1*-2, -1*5) = 6 + 2 = 8; scale 0.5 -> 4 */
    const float q[2] = {2, -1};
    assert_true(gsmrt_gsm_page_bound(q, kmin, kmax, 2, 0.5f) == 4.0);
    /* true best: scores 0.5*(2+2)=2, 0.5*6=3, 0.5*(-2-5)=-3.5 -> 3 <= 4 */
    float emin[2], emax[2];
    gsmrt_gsm_summary_reset(emin, emax, 2);
    assert_true(gsmrt_gsm_page_bound(q, emin, emax, 2, 0.5f) == -INFINITY);   /* empty page */
    gsmrt_gsm_summary_add(emin, emax, keys[1], 2);
    assert_true(gsmrt_gsm_page_bound(q, emin, emax, 2, 0.5f) == 3.0);   /* one key: the bound is its score */
    const float qn[2] = {NAN, 1};
    assert_true(gsmrt_gsm_page_bound(qn, kmin, kmax, 2, 1.0f) == INFINITY);
}

static float rnd(struct gsmrt_gsm_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)gsmrt_gsm_rng_uniform(r);
}

static double score(const float *q, const float *k, size_t n, float scale)
{
    double s = 0;
    for (size_t c = 0; c < n; c++) s += (double)q[c] * k[c];
    return s * (double)scale;
}

static void test_bound_never_below_true_max(void **state)
{
    (void)state;
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 7);
    enum { NT = 32, NC = 24 };
    float keys[NT * NC], q[NC], kmin[NC], kmax[NC];
    for (int trial = 0; trial < 2000; trial++) {
        size_t n_tok = 1 + gsmrt_gsm_rng_next(&r) % NT;
        float spread = trial % 2 ? 10.0f : 0.1f;
        for (size_t i = 0; i < n_tok * NC; i++) keys[i] = rnd(&r, -spread, spread);
        for (size_t c = 0; c < NC; c++) q[c] = rnd(&r, -3, 3);
        float scale = rnd(&r, 0.01f, 1.0f);
        gsmrt_gsm_summary_build(keys, n_tok, NC, kmin, kmax);
        double ub = gsmrt_gsm_page_bound(q, kmin, kmax, NC, scale);
        for (size_t t = 0; t < n_tok; t++) assert_true(score(q, keys + t * NC, NC, scale) <= ub);
    }
}

static void test_gate_value_by_hand(void **state)
{
    (void)state;
    /* exact part m = 0, l = 1; one cold token that may reach score 0: U = 1, gate 1/2 */
    double ub1[1] = {0};
    uint32_t n1[1] = {1};
    assert_true(fabs(gsmrt_gsm_gate_value(0, 1, ub1, n1, 1) - 0.5) < 1e-15);
    /* a page of 3 tokens with bound ln 2: U = 6, gate 6/7 */
    double ub2[1] = {log(2.0)};
    uint32_t n2[1] = {3};
    assert_true(fabs(gsmrt_gsm_gate_value(0, 1, ub2, n2, 1) - 6.0 / 7.0) < 1e-15);
    /* relative to m: m = 100, l = 2, bound 100 + ln 3, 1 token: U = 3, gate 3/5 */
    double ub3[1] = {100 + log(3.0)};
    assert_true(fabs(gsmrt_gsm_gate_value(100, 2, ub3, n1, 1) - 0.6) < 1e-13);
    /* far above m: no overflow, gate close to 1; far below: close to 0 */
    double ub4[1] = {5000};
    assert_true(gsmrt_gsm_gate_value(0, 1, ub4, n1, 1) == 1.0);
    double ub5[1] = {-5000};
    assert_true(gsmrt_gsm_gate_value(0, 1, ub5, n1, 1) == 0.0);
    /* no cold pages, empty pages, empty exact part */
    assert_true(gsmrt_gsm_gate_value(0, 1, NULL, NULL, 0) == 0.0);
    uint32_t n0[1] = {0};
    assert_true(gsmrt_gsm_gate_value(0, 1, ub1, n0, 1) == 0.0);
    assert_true(gsmrt_gsm_gate_value(-INFINITY, 0, ub1, n1, 1) == 1.0);
    assert_true(fabs(gsmrt_gsm_gate_page_share(0, 1, log(3.0), 1) - 0.75) < 1e-15);
}

static void test_select_by_hand(void **state)
{
    (void)state;
    /* m = 0, l = 1; single-token pages of masses 0.01, 0.2, 0.05, 0.1.
     * Order: 1, 3, 2, 0. gate = 0.36 / 1.36. Threshold 0.1: leaving out
     * {0}: 0.01/1.01, {0,2}: 0.06/1.06 = 0.0566, {0,2,3}: 0.16/1.16 = 0.138 > 0.1,
     * so pages 1 and 3 are computed and the skipped bound is 0.06/1.06. */
    double ub[4] = {log(0.01), log(0.2), log(0.05), log(0.1)};
    uint32_t nt[4] = {1, 1, 1, 1}, order[4];
    struct gsmrt_gsm_gate_result res;
    assert_int_equal(gsmrt_gsm_gate_select(0, 1, ub, nt, 4, 0.1, order, &res, NULL), GSMRT_OK);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 3);
    assert_int_equal(order[2], 2);
    assert_int_equal(order[3], 0);
    assert_true(fabs(res.gate - 0.36 / 1.36) < 1e-12);
    assert_int_equal(res.n_selected, 2);
    assert_true(fabs(res.skipped - 0.06 / 1.06) < 1e-12);
    /* threshold above the gate: nothing computed, skipped = gate */
    assert_int_equal(gsmrt_gsm_gate_select(0, 1, ub, nt, 4, 0.3, order, &res, NULL), GSMRT_OK);
    assert_int_equal(res.n_selected, 0);
    assert_true(fabs(res.skipped - res.gate) < 1e-15);
    /* threshold 0: everything */
    assert_int_equal(gsmrt_gsm_gate_select(0, 1, ub, nt, 4, 0, order, &res, NULL), GSMRT_OK);
    assert_int_equal(res.n_selected, 4);
    assert_true(res.skipped == 0);
    /* ties keep page order; a page of 2 tokens outranks a 1-token page of the same bound;
     * a NaN bound counts as +inf */
    double ub2[4] = {0, 0, NAN, 0};
    uint32_t nt2[4] = {1, 1, 1, 2};
    assert_int_equal(gsmrt_gsm_gate_select(0, 1, ub2, nt2, 4, 0.5, order, &res, NULL), GSMRT_OK);
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 3);
    assert_int_equal(order[2], 0);
    assert_int_equal(order[3], 1);
    assert_true(res.gate == 1.0);
    assert_true(res.n_selected >= 1);
    /* empty exact part: every page with tokens is needed */
    assert_int_equal(gsmrt_gsm_gate_select(-INFINITY, 0, ub, nt, 4, 0.9, order, &res, NULL), GSMRT_OK);
    assert_int_equal(res.n_selected, 4);
    /* bad arguments */
    assert_int_equal(gsmrt_gsm_gate_select(0, 1, ub, nt, 4, NAN, order, &res, NULL), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_gsm_gate_select(0, -1, ub, nt, 4, 0.1, order, &res, NULL), GSMRT_E_INVALID_ARGUMENT);
}

static void test_merge_by_hand(void **state)
{
    (void)state;
    double a_acc[1] = {2}, b_acc[1] = {4}, e_acc[1] = {0};
    struct gsmrt_gsm_partial a = {1, 2, a_acc}, b = {3, 1, b_acc}, e = {0, 0, e_acc};
    gsmrt_gsm_partial_reset(&e, 1);
    gsmrt_gsm_partial_merge(&a, &b, 1);
    /* M = 3: l = 2 e^-2 + 1, acc = 2 e^-2 + 4 */
    assert_true(a.m == 3);
    assert_true(fabs(a.l - (2 * exp(-2.0) + 1)) < 1e-15);
    assert_true(fabs(a.acc[0] - (2 * exp(-2.0) + 4)) < 1e-15);
    double l0 = a.l, acc0 = a.acc[0];
    gsmrt_gsm_partial_merge(&a, &e, 1);   /* merging an empty partial changes nothing */
    assert_true(a.m == 3 && a.l == l0 && a.acc[0] == acc0);
    gsmrt_gsm_partial_merge(&e, &a, 1);   /* into an empty one: a copy */
    assert_true(e.m == 3 && e.l == l0 && e.acc[0] == acc0);
    float out[1];
    gsmrt_gsm_partial_finish(&e, 1, out);
    assert_true(fabs(out[0] - (float)(acc0 / l0)) < 1e-6);
    /* two tokens by hand: scores 0 and ln 3 -> weights 1/4, 3/4 of values 1 and 5 -> 4 */
    const float q[1] = {1}, keys[2] = {0, (float)log(3.0)}, vals[2] = {1, 5};
    double acc[1];
    struct gsmrt_gsm_partial p = {0, 0, acc};
    gsmrt_gsm_partial_reset(&p, 1);
    gsmrt_gsm_partial_add(&p, q, keys, vals, 2, 1, 1, 1.0f);
    gsmrt_gsm_partial_finish(&p, 1, out);
    assert_true(fabs(out[0] - 4.0f) < 1e-6);
}

/* A random attention problem: n_pages pages of page_size tokens, the first
 * n_active of them exact, the rest cold. */
enum { NP = 12, PS = 8, NK = 16, NV = 8 };

struct problem {
    float q[NK];
    float keys[NP][PS][NK];
    float vals[NP][PS][NV];
    uint32_t n_tok[NP];
    float scale;
};

static void make_problem(struct gsmrt_gsm_rng *r, struct problem *p, float key_spread)
{
    for (size_t c = 0; c < NK; c++) p->q[c] = rnd(r, -2, 2);
    for (size_t i = 0; i < NP; i++) {
        p->n_tok[i] = i == NP - 1 ? 1 + (uint32_t)(gsmrt_gsm_rng_next(r) % PS) : PS;   /* last page partial */
        /* pages differ in level so that some dominate */
        float level = rnd(r, -1, 1);
        for (size_t t = 0; t < PS; t++) {
            for (size_t c = 0; c < NK; c++) p->keys[i][t][c] = level * p->q[c] * 0.3f + rnd(r, -key_spread, key_spread);
            for (size_t j = 0; j < NV; j++) p->vals[i][t][j] = rnd(r, -1, 1);
        }
    }
    p->scale = 1.0f / 4.0f;
}

/* Dense softmax over every token (double), and the share of each page. */
static void dense(const struct problem *p, double *out, double *page_share)
{
    double m = -INFINITY;
    for (size_t i = 0; i < NP; i++)
        for (size_t t = 0; t < p->n_tok[i]; t++) {
            double s = score(p->q, p->keys[i][t], NK, p->scale);
            if (s > m) m = s;
        }
    double l = 0;
    memset(out, 0, NV * sizeof *out);
    for (size_t i = 0; i < NP; i++) {
        page_share[i] = 0;
        for (size_t t = 0; t < p->n_tok[i]; t++) {
            double w = exp(score(p->q, p->keys[i][t], NK, p->scale) - m);
            l += w;
            page_share[i] += w;
            for (size_t j = 0; j < NV; j++) out[j] += w * p->vals[i][t][j];
        }
    }
    for (size_t j = 0; j < NV; j++) out[j] /= l;
    for (size_t i = 0; i < NP; i++) page_share[i] /= l;
}

/* The two-part computation: exact over pages [0, n_active), gate over the
 * rest, selected cold pages merged. Returns the gate result; out = result. */
static struct gsmrt_gsm_gate_result two_part(const struct problem *p, size_t n_active, double threshold,
                                             double *out, uint32_t *order)
{
    double acc[NV], cacc[NV];
    struct gsmrt_gsm_partial ex = {0, 0, acc}, cp = {0, 0, cacc};
    gsmrt_gsm_partial_reset(&ex, NV);
    for (size_t i = 0; i < n_active; i++)
        gsmrt_gsm_partial_add(&ex, p->q, &p->keys[i][0][0], &p->vals[i][0][0], p->n_tok[i], NK, NV, p->scale);
    size_t n_cold = NP - n_active;
    double ub[NP];
    uint32_t nt[NP];
    float kmin[NK], kmax[NK];
    for (size_t i = 0; i < n_cold; i++) {
        gsmrt_gsm_summary_build(&p->keys[n_active + i][0][0], p->n_tok[n_active + i], NK, kmin, kmax);
        ub[i] = gsmrt_gsm_page_bound(p->q, kmin, kmax, NK, p->scale);
        nt[i] = p->n_tok[n_active + i];
    }
    struct gsmrt_gsm_gate_result res;
    assert_int_equal(gsmrt_gsm_gate_select(ex.m, ex.l, ub, nt, n_cold, threshold, order, &res, NULL), GSMRT_OK);
    for (size_t k = 0; k < res.n_selected; k++) {
        size_t i = n_active + order[k];
        gsmrt_gsm_partial_reset(&cp, NV);
        gsmrt_gsm_partial_add(&cp, p->q, &p->keys[i][0][0], &p->vals[i][0][0], p->n_tok[i], NK, NV, p->scale);
        gsmrt_gsm_partial_merge(&ex, &cp, NV);
    }
    for (size_t j = 0; j < NV; j++) out[j] = ex.acc[j] / ex.l;
    return res;
}

static void test_gate_bounds_true_cold_share(void **state)
{
    (void)state;
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 11);
    static struct problem p;
    for (int trial = 0; trial < 500; trial++) {
        make_problem(&r, &p, trial % 3 == 0 ? 0.05f : 1.0f);
        double out[NV], share[NP];
        dense(&p, out, share);
        size_t n_active = 1 + (size_t)(gsmrt_gsm_rng_next(&r) % (NP - 1));
        double cold = 0;
        for (size_t i = n_active; i < NP; i++) cold += share[i];
        /* the gate from the exact part alone */
        double acc[NV];
        struct gsmrt_gsm_partial ex = {0, 0, acc};
        gsmrt_gsm_partial_reset(&ex, NV);
        for (size_t i = 0; i < n_active; i++)
            gsmrt_gsm_partial_add(&ex, p.q, &p.keys[i][0][0], &p.vals[i][0][0], p.n_tok[i], NK, NV, p.scale);
        double ub[NP];
        uint32_t nt[NP];
        float kmin[NK], kmax[NK];
        for (size_t i = n_active; i < NP; i++) {
            gsmrt_gsm_summary_build(&p.keys[i][0][0], p.n_tok[i], NK, kmin, kmax);
            ub[i - n_active] = gsmrt_gsm_page_bound(p.q, kmin, kmax, NK, p.scale);
            nt[i - n_active] = p.n_tok[i];
            /* each page alone too */
            double ps = gsmrt_gsm_gate_page_share(ex.m, ex.l, ub[i - n_active], nt[i - n_active]);
            double alone = share[i] / (share[i] + (1 - cold));   /* page i next to the exact part only */
            assert_true(ps >= alone * (1 - 1e-12));
        }
        double gate = gsmrt_gsm_gate_value(ex.m, ex.l, ub, nt, NP - n_active);
        assert_true(gate >= cold * (1 - 1e-12));
        assert_true(gate >= 0 && gate <= 1);
    }
}

static void test_threshold_zero_is_dense(void **state)
{
    (void)state;
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 3);
    static struct problem p;
    for (int trial = 0; trial < 300; trial++) {
        make_problem(&r, &p, 1.0f);
        double want[NV], share[NP], got[NV];
        uint32_t order[NP];
        dense(&p, want, share);
        size_t n_active = (size_t)(gsmrt_gsm_rng_next(&r) % NP);   /* 0 active pages too */
        struct gsmrt_gsm_gate_result res = two_part(&p, n_active, 0.0, got, order);
        assert_int_equal(res.n_selected, NP - n_active);
        for (size_t j = 0; j < NV; j++) assert_true(fabs(got[j] - want[j]) <= 1e-12 * (1 + fabs(want[j])));
    }
}

static void test_skipped_mass_within_bound(void **state)
{
    (void)state;
    static const double thresholds[] = {0.01, 0.05, 0.1, 0.3, 0.9};
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 5);
    static struct problem p;
    size_t n_skips = 0;
    for (int trial = 0; trial < 400; trial++) {
        make_problem(&r, &p, trial % 2 ? 0.05f : 0.6f);
        double want[NV], share[NP], got[NV];
        uint32_t order[NP];
        dense(&p, want, share);
        size_t n_active = 1 + (size_t)(gsmrt_gsm_rng_next(&r) % (NP - 1));
        for (size_t k = 0; k < sizeof thresholds / sizeof thresholds[0]; k++) {
            double th = thresholds[k];
            struct gsmrt_gsm_gate_result res = two_part(&p, n_active, th, got, order);
            assert_true(res.skipped <= th);
            assert_true(res.skipped <= res.gate * (1 + 1e-12));   /* equal when nothing is computed */
            /* mass actually skipped, in the dense softmax */
            double skipped = 0;
            for (size_t s = res.n_selected; s < NP - n_active; s++) skipped += share[n_active + order[s]];
            n_skips += res.n_selected < NP - n_active;
            assert_true(skipped <= res.skipped * (1 + 1e-12) + 1e-300);
            /* and the output moved by at most 2 * skipped * max|v| (|v| <= 1) */
            for (size_t j = 0; j < NV; j++) assert_true(fabs(got[j] - want[j]) <= 2 * skipped + 1e-12);
        }
    }
    assert_true(n_skips > 100);   /* the test did exercise skipping */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_and_bound_by_hand),
        cmocka_unit_test(test_bound_never_below_true_max),
        cmocka_unit_test(test_gate_value_by_hand),
        cmocka_unit_test(test_select_by_hand),
        cmocka_unit_test(test_merge_by_hand),
        cmocka_unit_test(test_gate_bounds_true_cold_share),
        cmocka_unit_test(test_threshold_zero_is_dense),
        cmocka_unit_test(test_skipped_mass_within_bound),
    };
    return cmocka_run_group_tests_name("gsm_gate", tests, NULL, NULL);
}
