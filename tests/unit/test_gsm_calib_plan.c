/* test_gsm_calib_plan.c -- calibration statistics from attention rows and
 * the per-layer grouping and policy choice, on cases computed by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "calib_plan.h"

static void test_acc(void **state)
{
    (void)state;
    const uint32_t edges[3] = {0, 2, 4};
    struct gsmrt_gsm_head_acc acc;
    memset(&acc, 0, sizeof acc);
    /* query at 5 over keys 0..5; distances 5..0: key 5,4 -> band 0; 3,2 -> band 1; 1,0 -> band 2 */
    const float row1[6] = {0.1f, 0, 0.2f, 0.3f, 0, 0.4f};
    gsmrt_gsm_head_acc_add(&acc, row1, 5, edges, 3, 1);
    /* query at 1, unnormalised [2, 2] -> [.5, .5], both in band 0, key 0 a sink */
    const float row2[2] = {2, 2};
    gsmrt_gsm_head_acc_add(&acc, row2, 1, edges, 3, 1);
    const float zero[3] = {0, 0, 0};
    gsmrt_gsm_head_acc_add(&acc, zero, 2, edges, 3, 1);   /* ignored */
    assert_int_equal(acc.n_rows, 2);
    struct gsmrt_gsm_head_stats s;
    gsmrt_gsm_head_acc_finish(&acc, 3, &s);
    /* band 0: (0.4 + 1) / 2; band 1: (0.5 + 0) / 2; band 2: (0.1 + 0) / 2 */
    assert_true(fabsf(s.band_mass[0] - 0.7f) < 1e-6f);
    assert_true(fabsf(s.band_mass[1] - 0.25f) < 1e-6f);
    assert_true(fabsf(s.band_mass[2] - 0.05f) < 1e-6f);
    assert_true(fabsf(s.sink_share - 0.3f) < 1e-6f);   /* (0.1 + 0.5) / 2 */
    double h1 = -(0.1 * log(0.1) + 0.2 * log(0.2) + 0.3 * log(0.3) + 0.4 * log(0.4)), h2 = log(2.0);
    assert_true(fabs(s.entropy - (h1 + h2) / 2) < 1e-6);
    struct gsmrt_gsm_head_acc none;
    memset(&none, 0, sizeof none);
    gsmrt_gsm_head_acc_finish(&none, 3, &s);
    assert_true(s.band_mass[0] == 1 && s.band_mass[1] == 0 && s.sink_share == 0 && s.entropy == 0);
}

static const struct gsmrt_gsm_model_id ID = {"deepseek2", "plan", 2, 6, 64, 100};

static void set_head(struct gsmrt_gsm_calib *c, uint32_t l, uint32_t h, float b0, float b1, float b2, float sink,
                     float ent)
{
    struct gsmrt_gsm_head_stats *s = &c->layers[l].stats[h];
    s->band_mass[0] = b0;
    s->band_mass[1] = b1;
    s->band_mass[2] = b2;
    s->sink_share = sink;
    s->entropy = ent;
}

/* Issue 12: `gsm calibrate` on a tiny text failed with "band_mass[0]: 1 out
 * of range [0, 1]": rows summed on the device in float total a hair over 1.
 * The finished statistics are shares: in [0, 1], summing to 1. */
static void test_acc_rounding(void **state)
{
    (void)state;
    struct gsmrt_gsm_head_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.n_rows = 3;
    acc.band_mass[0] = 3 * 1.00000012;   /* float(1 + 2^-23) per row */
    acc.band_mass[1] = -1e-9;            /* rounding below 0 */
    acc.sink_share = 3 * 1.00000012;
    acc.entropy = 3 * 0.5;
    struct gsmrt_gsm_head_stats s;
    gsmrt_gsm_head_acc_finish(&acc, 2, &s);
    assert_true(s.band_mass[0] <= 1.0f && s.band_mass[0] >= 0.999999f);
    assert_true(s.band_mass[1] >= 0.0f);
    assert_true(s.sink_share <= 1.0f);
    assert_float_equal(s.entropy, 0.5, 1e-6);
    /* a normalised spread stays as it was */
    memset(&acc, 0, sizeof acc);
    acc.n_rows = 2;
    acc.band_mass[0] = 0.5;
    acc.band_mass[1] = 1.5;
    gsmrt_gsm_head_acc_finish(&acc, 2, &s);
    assert_float_equal(s.band_mass[0], 0.25, 1e-7);
    assert_float_equal(s.band_mass[1], 0.75, 1e-7);
}

static void test_plan_layer(void **state)
{
    (void)state;
    struct gsmrt_gsm_calib *c;
    struct gsmrt_err e;
    assert_int_equal(gsmrt_gsm_calib_create(NULL, &ID, 1, 3, &c, &e), GSMRT_OK);
    c->band_edges[1] = 32;
    c->band_edges[2] = 256;
    /* heads L, M, R, L, M, R: local, middle, retrieval */
    for (uint32_t h = 0; h < 6; h++) {
        if (h % 3 == 0) set_head(c, 1, h, 0.95f, 0.04f, 0.01f, 0.0f, 1.0f);
        if (h % 3 == 1) set_head(c, 1, h, 0.5f, 0.45f, 0.05f, 0.05f, 2.0f);
        if (h % 3 == 2) set_head(c, 1, h, 0.1f, 0.1f, 0.8f, 0.3f, 4.0f);
    }
    struct gsmrt_gsm_plan_params p = {3, 0.9, 16, 4, 0.1, 0.05f, 7};
    assert_int_equal(gsmrt_gsm_calib_plan_layer(c, 1, &p, NULL, &e), GSMRT_OK);
    /* groups numbered by the centres' first feature: R (0.1) 0, M (0.5) 1, L (0.95) 2 */
    const uint32_t want_g[6] = {2, 1, 0, 2, 1, 0};
    assert_int_equal(c->layers[1].n_groups, 3);
    assert_memory_equal(c->layers[1].head_group, want_g, sizeof want_g);
    const struct gsmrt_gsm_group_policy *G = c->layers[1].groups;
    /* R: 0.9 reached only in the open band: window 256, far = 0.8, ceil(12.8) = 13, sink 0.3 >= 0.1 */
    assert_int_equal(G[0].window, 256);
    assert_int_equal(G[0].hot_pages, 13);
    assert_int_equal(G[0].sink_tokens, 4);
    /* M: 0.5 + 0.45 in band 1: window 256, far 0.05, ceil(0.8) = 1, sink 0.05 < 0.1 */
    assert_int_equal(G[1].window, 256);
    assert_int_equal(G[1].hot_pages, 1);
    assert_int_equal(G[1].sink_tokens, 0);
    /* L: 0.95 in band 0: window 32, far 0.05: 1 */
    assert_int_equal(G[2].window, 32);
    assert_int_equal(G[2].hot_pages, 1);
    assert_int_equal(G[2].sink_tokens, 0);
    for (uint32_t g = 0; g < 3; g++) assert_true(G[g].threshold == 0.05f);
    assert_int_equal(gsmrt_gsm_calib_validate(c, &e), GSMRT_OK);
    /* the same plan again, and with the other layer untouched */
    assert_int_equal(gsmrt_gsm_calib_plan_layer(c, 1, &p, NULL, &e), GSMRT_OK);
    assert_memory_equal(c->layers[1].head_group, want_g, sizeof want_g);
    assert_int_equal(c->layers[0].n_groups, 1);
    /* bad parameters */
    p.n_groups = 7;
    assert_int_equal(gsmrt_gsm_calib_plan_layer(c, 1, &p, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
    p.n_groups = 2;
    assert_int_equal(gsmrt_gsm_calib_plan_layer(c, 2, &p, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
    p.coverage = 0;
    assert_int_equal(gsmrt_gsm_calib_plan_layer(c, 1, &p, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
    gsmrt_gsm_calib_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acc),
        cmocka_unit_test(test_acc_rounding),
        cmocka_unit_test(test_plan_layer),
    };
    return cmocka_run_group_tests_name("gsm_calib_plan", tests, NULL, NULL);
}
