/* test_gsm_tiers.c -- slot pools, page tables (growth, rollback, turns,
 * packing) and each tier rule: warm-up and min_context, pinning, the moving
 * average, promotion/demotion with hysteresis and budgets, earlier turns as
 * demotion candidates, full pools, group active sets, prefetch candidates.
 * Every expected table below is worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gsm.h"

static void test_slot_pool(void **state)
{
    (void)state;
    struct gsmrt_gsm_slot_pool p;
    struct gsmrt_err e;
    uint32_t s;
    assert_int_equal(gsmrt_gsm_slot_pool_init(&p, NULL, 3, &e), GSMRT_OK);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(gsmrt_gsm_slot_pool_take(&p, &s, &e), GSMRT_OK);
        assert_int_equal(s, i);   /* lowest first from a fresh pool */
    }
    assert_int_equal(gsmrt_gsm_slot_pool_take(&p, &s, &e), GSMRT_E_CONTEXT_FULL);
    assert_string_equal(e.msg, "page pool full (3 slots)");
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p, 1, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p, 1, &e), GSMRT_E_INTERNAL);   /* twice */
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p, 3, &e), GSMRT_E_INTERNAL);   /* out of range */
    assert_int_equal(gsmrt_gsm_slot_pool_take(&p, &s, &e), GSMRT_OK);
    assert_int_equal(s, 1);
    gsmrt_gsm_slot_pool_deinit(&p);
    gsmrt_gsm_slot_pool_deinit(&p);   /* twice is fine */
    assert_int_equal(gsmrt_gsm_slot_pool_init(&p, NULL, 0, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_slot_pool_take(&p, &s, &e), GSMRT_E_CONTEXT_FULL);
    gsmrt_gsm_slot_pool_deinit(&p);
}

static void test_should_use(void **state)
{
    (void)state;
    struct gsmrt_gsm_config c;
    gsmrt_gsm_config_defaults(&c);   /* min_context 512, warmup 8 */
    assert_false(gsmrt_gsm_should_use(511, 100, &c));
    assert_true(gsmrt_gsm_should_use(512, 8, &c));
    assert_false(gsmrt_gsm_should_use(4096, 7, &c));
    assert_true(gsmrt_gsm_should_use(4096, 9, &c));
    c.enabled = false;
    assert_false(gsmrt_gsm_should_use(4096, 100, &c));
    c.enabled = true;
    c.min_context = 0;
    c.warmup_steps = 0;
    assert_true(gsmrt_gsm_should_use(0, 0, &c));
}

static void test_pinned(void **state)
{
    (void)state;
    /* page_size 8, 40 positions (pages 0..4), sink 4, window 10: positions
     * 0..3 (page 0) and 30..39 (pages 3 and 4) */
    const bool want[6] = {true, false, false, true, true, false};
    for (uint32_t p = 0; p < 6; p++) assert_int_equal(gsmrt_gsm_page_pinned(p, 8, 40, 4, 10), want[p]);
    for (uint32_t p = 0; p < 5; p++) assert_false(gsmrt_gsm_page_pinned(p, 8, 40, 0, 0));
    assert_true(gsmrt_gsm_page_pinned(1, 8, 40, 9, 0));    /* sink 9 reaches position 8 */
    assert_false(gsmrt_gsm_page_pinned(2, 8, 40, 9, 0));
    assert_true(gsmrt_gsm_page_pinned(2, 8, 40, 0, 100));  /* window longer than the sequence */
    assert_true(gsmrt_gsm_page_pinned(4, 8, 33, 0, 1));    /* position 32 alone in page 4 */
    assert_false(gsmrt_gsm_page_pinned(3, 8, 33, 0, 1));
    /* ps 32, sink 4, window 128, budget 16: 1 + 4 + 1 + 16 */
    assert_int_equal(gsmrt_gsm_hot_pages_needed(32, 4, 128, 16), 22);
    assert_int_equal(gsmrt_gsm_hot_pages_needed(32, 0, 0, 0), 1);
}

/* Pools for 2 layers: hot and cold with the given sizes. */
struct pools {
    struct gsmrt_gsm_slot_pool hot[2], cold[2];
};

static void pools_init(struct pools *p, uint32_t n_hot, uint32_t n_cold)
{
    for (int l = 0; l < 2; l++) {
        assert_int_equal(gsmrt_gsm_slot_pool_init(&p->hot[l], NULL, n_hot, NULL), GSMRT_OK);
        assert_int_equal(gsmrt_gsm_slot_pool_init(&p->cold[l], NULL, n_cold, NULL), GSMRT_OK);
    }
}

static void pools_deinit(struct pools *p)
{
    for (int l = 0; l < 2; l++) {
        gsmrt_gsm_slot_pool_deinit(&p->hot[l]);
        gsmrt_gsm_slot_pool_deinit(&p->cold[l]);
    }
}

/* The table and the pools agree: a slot is in use iff exactly one page of
 * that layer and tier holds it. */
static void check_shared(const struct gsmrt_gsm_page_table *pt, const struct pools *p, uint32_t other_hot0)
{
    for (uint32_t l = 0; l < pt->n_layer; l++) {
        uint32_t n_hot = 0, n_cold = 0;
        for (uint32_t q = 0; q < pt->n_pages; q++) {
            uint32_t i = gsmrt_gsm_page_table_at(pt, l, q);
            if (pt->tier[i] == GSMRT_GSM_TIER_HOT) {
                n_hot++;
                assert_true(p->hot[l].used[pt->slot[i]]);
            } else {
                assert_int_equal(pt->tier[i], GSMRT_GSM_TIER_COLD);
                n_cold++;
                assert_true(p->cold[l].used[pt->slot[i]]);
            }
        }
        assert_int_equal(p->hot[l].n_slots - p->hot[l].n_free, n_hot + (l == 0 ? other_hot0 : 0));
        assert_int_equal(p->cold[l].n_slots - p->cold[l].n_free, n_cold);
    }
}

static void check_consistent(const struct gsmrt_gsm_page_table *pt, const struct pools *p)
{
    check_shared(pt, p, 0);
}

static void test_page_table_grow_truncate(void **state)
{
    (void)state;
    struct pools p;
    pools_init(&p, 4, 8);
    struct gsmrt_gsm_page_table *pt;
    struct gsmrt_err e;
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 6, 8, &pt, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 20, p.hot, &e), GSMRT_OK);   /* 3 pages */
    assert_int_equal(pt->n_pages, 3);
    for (uint32_t l = 0; l < 2; l++)
        for (uint32_t q = 0; q < 3; q++) {
            assert_int_equal(pt->tier[gsmrt_gsm_page_table_at(pt, l, q)], GSMRT_GSM_TIER_HOT);
            assert_int_equal(pt->slot[gsmrt_gsm_page_table_at(pt, l, q)], q);
        }
    check_consistent(pt, &p);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 24, p.hot, &e), GSMRT_OK);   /* still 3 pages */
    assert_int_equal(pt->n_pages, 3);
    /* 5 pages need 2 more hot slots, only 1 left: nothing changes */
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 40, p.hot, &e), GSMRT_E_CONTEXT_FULL);
    assert_string_equal(e.msg, "layer 0: 2 new pages, 1 free hot slots");
    assert_int_equal(pt->n_pages, 3);
    assert_int_equal(pt->n_pos, 24);
    check_consistent(pt, &p);
    /* past the table */
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 49, p.hot, &e), GSMRT_E_CONTEXT_FULL);
    /* pack: page 1 of layer 1 made cold by hand in cold slot 5 */
    uint32_t i = gsmrt_gsm_page_table_at(pt, 1, 1), slot;
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p.hot[1], pt->slot[i], &e), GSMRT_OK);
    for (int k = 0; k < 6; k++) assert_int_equal(gsmrt_gsm_slot_pool_take(&p.cold[1], &slot, &e), GSMRT_OK);
    for (uint32_t k = 0; k < 5; k++) assert_int_equal(gsmrt_gsm_slot_pool_give(&p.cold[1], k, &e), GSMRT_OK);
    pt->tier[i] = GSMRT_GSM_TIER_COLD;
    pt->slot[i] = 5;
    check_consistent(pt, &p);
    uint32_t packed[3];
    gsmrt_gsm_page_table_pack(pt, 1, packed);
    assert_int_equal(packed[0], 0);
    assert_int_equal(packed[1], 0x80000005u);
    assert_int_equal(packed[2], 2);
    /* rollback to 9 positions: pages 2 freed (page 1 of layer 1 stays cold) */
    assert_int_equal(gsmrt_gsm_page_table_truncate(pt, 9, p.hot, p.cold, &e), GSMRT_OK);
    assert_int_equal(pt->n_pages, 2);
    check_consistent(pt, &p);
    assert_int_equal(gsmrt_gsm_page_table_truncate(pt, 0, p.hot, p.cold, &e), GSMRT_OK);
    assert_int_equal(pt->n_pages, 0);
    check_consistent(pt, &p);
    gsmrt_gsm_page_table_destroy(pt);
    gsmrt_gsm_page_table_destroy(NULL);
    pools_deinit(&p);
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 0, 6, 8, &pt, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_null(pt);
}

static void test_observe(void **state)
{
    (void)state;
    struct pools p;
    pools_init(&p, 4, 4);
    struct gsmrt_gsm_page_table *pt;
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 4, 8, &pt, NULL), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 16, p.hot, NULL), GSMRT_OK);
    const float mass[2] = {1, 0};
    gsmrt_gsm_tiers_observe(pt, 1, mass, 0.25);   /* 0.75*0 + 0.25*1 */
    assert_true(pt->ema[gsmrt_gsm_page_table_at(pt, 1, 0)] == 0.25f);
    gsmrt_gsm_tiers_observe(pt, 1, mass, 0.25);   /* 0.75*0.25 + 0.25 = 0.4375 */
    assert_true(pt->ema[gsmrt_gsm_page_table_at(pt, 1, 0)] == 0.4375f);
    assert_true(pt->ema[gsmrt_gsm_page_table_at(pt, 1, 1)] == 0.0f);
    assert_true(pt->ema[gsmrt_gsm_page_table_at(pt, 0, 0)] == 0.0f);   /* other layer untouched */
    gsmrt_gsm_page_table_destroy(pt);
    pools_deinit(&p);
}

static void set_ema(struct gsmrt_gsm_page_table *pt, uint32_t layer, const float *ema)
{
    for (uint32_t q = 0; q < pt->n_pages; q++) pt->ema[gsmrt_gsm_page_table_at(pt, layer, q)] = ema[q];
}

static uint8_t tier_of(const struct gsmrt_gsm_page_table *pt, uint32_t l, uint32_t q)
{
    return pt->tier[gsmrt_gsm_page_table_at(pt, l, q)];
}

/* page_size 8, 80 positions = 10 pages; sink 8 pins page 0, window 16 pins
 * pages 8 and 9; budget 2; promote 0.1, demote 0.02. */
static const struct gsmrt_gsm_tier_policy POL = {8, 16, 2, 0.1, 0.02};

static void test_plan_rules(void **state)
{
    (void)state;
    struct pools p;
    pools_init(&p, 10, 10);
    struct gsmrt_gsm_page_table *pt;
    struct gsmrt_err e;
    struct gsmrt_gsm_move mv[10];
    struct gsmrt_gsm_plan_result r;
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 10, 8, &pt, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 80, p.hot, &e), GSMRT_OK);   /* all HOT, slots 0..9 */

    /* 1. all hot (current turn, bar 0.02). Unpinned: 1 .5, 2 .01, 3 .05, 4 .3, 5 .2, 6 0, 7 .03.
     * Eligible (>= .02): 1, 3, 4, 5, 7; ranked 1, 4, 5, 3, 7; budget 2 keeps 1 and 4.
     * Demoted in page order: 2, 3, 5, 6, 7 into cold slots 0..4. */
    const float ema1[10] = {0, 0.5f, 0.01f, 0.05f, 0.3f, 0.2f, 0, 0.03f, 0, 0};
    set_ema(pt, 0, ema1);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &POL, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 5);
    assert_int_equal(r.n_demoted, 5);
    assert_int_equal(r.n_promoted, 0);
    const uint32_t demoted[5] = {2, 3, 5, 6, 7};
    for (uint32_t k = 0; k < 5; k++) {
        assert_int_equal(mv[k].layer, 0);
        assert_int_equal(mv[k].page, demoted[k]);
        assert_int_equal(mv[k].from_tier, GSMRT_GSM_TIER_HOT);
        assert_int_equal(mv[k].to_tier, GSMRT_GSM_TIER_COLD);
        assert_int_equal(mv[k].from_slot, demoted[k]);
        assert_int_equal(mv[k].to_slot, k);
    }
    const uint8_t H = GSMRT_GSM_TIER_HOT, C = GSMRT_GSM_TIER_COLD;
    const uint8_t t1[10] = {H, H, C, C, H, C, C, C, H, H};
    for (uint32_t q = 0; q < 10; q++) assert_int_equal(tier_of(pt, 0, q), t1[q]);
    for (uint32_t q = 0; q < 10; q++) assert_int_equal(tier_of(pt, 1, q), H);   /* layer 1 untouched */
    check_consistent(pt, &p);

    /* 2. the same averages again: nothing moves (a stable plan) */
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &POL, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 0);

    /* 3. page 5 (cold) rises to .6, page 3 (cold) to .05, page 4 (hot) .3.
     * Eligible: 1 (.5, hot, bar .02), 4 (.3), 5 (.6, cold, bar .1); 3 (.05 cold < .1) not.
     * Ranked 5, 1, 4: budget keeps 5 and 1, so 4 is demoted (cold slot 5) and 5
     * promoted into the hot slot page 4 just freed (slot 4, top of the free list). */
    const float ema3[10] = {0, 0.5f, 0.01f, 0.05f, 0.3f, 0.6f, 0, 0.03f, 0, 0};
    set_ema(pt, 0, ema3);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &POL, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 2);
    assert_int_equal(r.n_demoted, 1);
    assert_int_equal(mv[0].page, 4);
    assert_int_equal(mv[0].from_slot, 4);
    assert_int_equal(mv[0].to_slot, 5);
    assert_int_equal(mv[1].page, 5);
    assert_int_equal(mv[1].from_tier, GSMRT_GSM_TIER_COLD);
    assert_int_equal(mv[1].from_slot, 2);   /* page 5 went to cold slot 2 in step 1 */
    assert_int_equal(mv[1].to_slot, 4);
    check_consistent(pt, &p);

    /* 4. hysteresis: hot page 1 at .05 (between the bars) stays; cold page 3 at .05 does not come back */
    const float ema4[10] = {0, 0.05f, 0, 0.05f, 0, 0.6f, 0, 0, 0, 0};
    set_ema(pt, 0, ema4);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &POL, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 0);
    assert_int_equal(tier_of(pt, 0, 1), H);
    assert_int_equal(tier_of(pt, 0, 3), C);

    /* 5. a new turn: page 1 is now a candidate, its bar is .1, so .05 demotes it */
    gsmrt_gsm_page_table_new_turn(pt);
    for (uint32_t q = 0; q < 10; q++) assert_int_equal(pt->candidate[q], 1);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &POL, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 1);
    assert_int_equal(mv[0].page, 1);
    assert_int_equal(mv[0].to_tier, GSMRT_GSM_TIER_COLD);
    /* and pinned pages stay hot whatever their average (0 here) */
    assert_int_equal(tier_of(pt, 0, 0), H);
    assert_int_equal(tier_of(pt, 0, 8), H);
    assert_int_equal(tier_of(pt, 0, 9), H);
    check_consistent(pt, &p);

    gsmrt_gsm_page_table_destroy(pt);
    pools_deinit(&p);
}

static void test_plan_turn_candidates(void **state)
{
    (void)state;
    struct pools p;
    pools_init(&p, 10, 10);
    struct gsmrt_gsm_page_table *pt;
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 10, 8, &pt, NULL), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 20, p.hot, NULL), GSMRT_OK);   /* pages 0..2, turn 0 */
    gsmrt_gsm_page_table_new_turn(pt);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 40, p.hot, NULL), GSMRT_OK);   /* pages 3, 4 in turn 1 */
    const uint8_t cand[5] = {1, 1, 1, 0, 0};
    for (uint32_t q = 0; q < 5; q++) assert_int_equal(pt->candidate[q], cand[q]);
    assert_int_equal(pt->page_turn[2], 0);
    assert_int_equal(pt->page_turn[3], 1);
    gsmrt_gsm_page_table_destroy(pt);
    pools_deinit(&p);
}

static void test_plan_full_pools(void **state)
{
    (void)state;
    struct pools p;
    pools_init(&p, 10, 10);
    struct gsmrt_gsm_page_table *pt;
    struct gsmrt_err e;
    struct gsmrt_gsm_move mv[10];
    struct gsmrt_gsm_plan_result r;
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 10, 8, &pt, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 80, p.hot, &e), GSMRT_OK);
    /* Demote everything unpinned (budget 0): pages 1..7 to cold slots 0..6. */
    struct gsmrt_gsm_tier_policy pol = POL;
    pol.hot_pages = 0;
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_demoted, 7);
    /* Another sequence takes the 7 freed hot slots (7, 6, ..., 1), leaving 0 free. */
    uint32_t s;
    for (int k = 0; k < 7; k++) assert_int_equal(gsmrt_gsm_slot_pool_take(&p.hot[0], &s, &e), GSMRT_OK);
    /* Budget 3, pages 2 (.5), 5 (.4), 6 (.3) wanted: no hot slot, all 3 dropped. */
    pol.hot_pages = 3;
    const float ema[10] = {0, 0, 0.5f, 0, 0, 0.4f, 0.3f, 0, 0, 0};
    set_ema(pt, 0, ema);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 0);
    assert_int_equal(r.n_dropped, 3);
    /* It gives one back: the best ranked (page 2) gets it, 5 and 6 are dropped. */
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p.hot[0], 1, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 1);
    assert_int_equal(mv[0].page, 2);
    assert_int_equal(mv[0].to_slot, 1);
    check_shared(pt, &p, 6);
    assert_int_equal(r.n_dropped, 2);
    /* Prefetch only uses slots left over: none now. Three more back (2, 3, 4):
     * pages 5 and 6 by rank (slots 4 and 3, the top of the free list), then page
     * 7 by prefetch (slot 2; the list names 7 first, 3 is not reached, 100 is past the end). */
    const uint32_t pf[3] = {7, 3, 100};
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], pf, 3, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 0);
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p.hot[0], 2, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p.hot[0], 3, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_slot_pool_give(&p.hot[0], 4, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], pf, 3, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_moves, 3);
    assert_int_equal(r.n_promoted, 3);
    assert_int_equal(r.n_prefetched, 1);
    assert_int_equal(r.n_dropped, 0);
    assert_int_equal(mv[0].page, 5);
    assert_int_equal(mv[0].to_slot, 4);
    assert_int_equal(mv[1].page, 6);
    assert_int_equal(mv[1].to_slot, 3);
    assert_int_equal(mv[2].page, 7);   /* prefetches come last */
    assert_int_equal(mv[2].to_slot, 2);
    check_shared(pt, &p, 3);
    /* A pinned page that is cold with no hot slot: context full, nothing changes.
     * Cold now: 1, 3, 4. A window of 48 positions (32..79) pins pages 4..9. */
    pol.window = 48;
    uint8_t before[10];
    memcpy(before, pt->tier, sizeof before);
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e),
                     GSMRT_E_CONTEXT_FULL);
    assert_string_equal(e.msg, "layer 0: 1 sink/window pages to bring back, 0 hot slots free");
    assert_memory_equal(before, pt->tier, sizeof before);
    assert_int_equal(r.n_moves, 0);
    check_shared(pt, &p, 3);
    /* the cold pool full: wanted demotions keep the page HOT, highest average first.
     * Fresh table of 10 pages with a 2-slot cold pool and budget 0: 7 unpinned
     * pages want to go (all below demote_mass .02), 2 can: the five of highest
     * average stay, 7 (.007), 6, 5, 4, 3 (.003); pages 1 and 2 go. */
    gsmrt_gsm_page_table_destroy(pt);
    pools_deinit(&p);
    pools_init(&p, 10, 2);
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 10, 8, &pt, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 80, p.hot, &e), GSMRT_OK);
    const float low[10] = {0, 0.001f, 0.002f, 0.003f, 0.004f, 0.005f, 0.006f, 0.007f, 0, 0};
    set_ema(pt, 0, low);
    pol = POL;
    pol.hot_pages = 0;
    assert_int_equal(gsmrt_gsm_tiers_plan(pt, 0, &pol, &p.hot[0], &p.cold[0], NULL, 0, mv, &r, &e), GSMRT_OK);
    assert_int_equal(r.n_demoted, 2);
    assert_int_equal(r.n_kept, 5);
    assert_int_equal(mv[0].page, 1);
    assert_int_equal(mv[1].page, 2);
    check_consistent(pt, &p);
    gsmrt_gsm_page_table_destroy(pt);
    pools_deinit(&p);
}

static void test_group_pages(void **state)
{
    (void)state;
    struct pools p;
    pools_init(&p, 10, 10);
    struct gsmrt_gsm_page_table *pt;
    assert_int_equal(gsmrt_gsm_page_table_create(NULL, 2, 10, 8, &pt, NULL), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_page_table_grow(pt, 80, p.hot, NULL), GSMRT_OK);
    /* layer 1 by hand: pages 2 and 6 cold. ema: 1 .1, 3 .4, 4 .2, 5 .4, 7 .3 */
    for (uint32_t q = 2; q <= 6; q += 4) pt->tier[gsmrt_gsm_page_table_at(pt, 1, q)] = GSMRT_GSM_TIER_COLD;
    const float ema[10] = {0, 0.1f, 0.9f, 0.4f, 0.2f, 0.4f, 0.9f, 0.3f, 0, 0};
    set_ema(pt, 1, ema);
    uint32_t act[10], cold[10];
    size_t na, nc;
    /* group: sink 8 (page 0), window 8 (page 9), 2 hot pages: 3 and 5 (.4 each, tie by page) */
    gsmrt_gsm_group_pages(pt, 1, 8, 8, 2, act, &na, cold, &nc);
    const uint32_t want_a[4] = {0, 3, 5, 9}, want_c[6] = {1, 2, 4, 6, 7, 8};
    assert_int_equal(na, 4);
    assert_int_equal(nc, 6);
    assert_memory_equal(act, want_a, sizeof want_a);
    assert_memory_equal(cold, want_c, sizeof want_c);
    /* a group with no sink, no window, 0 hot pages: all pages are cold for it */
    gsmrt_gsm_group_pages(pt, 1, 0, 0, 0, act, &na, cold, &nc);
    assert_int_equal(na, 0);
    assert_int_equal(nc, 10);
    /* a large budget takes every HOT page, never a COLD one (2 and 6 stay cold) */
    gsmrt_gsm_group_pages(pt, 1, 0, 0, 100, act, &na, cold, &nc);
    assert_int_equal(na, 8);
    assert_int_equal(nc, 2);
    assert_int_equal(cold[0], 2);
    assert_int_equal(cold[1], 6);
    gsmrt_gsm_page_table_destroy(pt);
    pools_deinit(&p);
}

static void test_prefetch_select(void **state)
{
    (void)state;
    /* bar = 0.5 * 0.05 = 0.025: pages 11 (.04), 12 (.03), 13 (.2) qualify; 14 (.025) exactly */
    const uint32_t page[5] = {10, 11, 12, 13, 14};
    const double share[5] = {0.01, 0.04, 0.03, 0.2, 0.025};
    uint32_t out[5];
    assert_int_equal(gsmrt_gsm_prefetch_select(page, share, 5, 0.05, 0.5, 5, out), 4);
    const uint32_t want[4] = {13, 11, 12, 14};
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(gsmrt_gsm_prefetch_select(page, share, 5, 0.05, 0.5, 2, out), 2);
    assert_int_equal(out[0], 13);
    assert_int_equal(out[1], 11);
    assert_int_equal(gsmrt_gsm_prefetch_select(page, share, 5, 0.0, 0.5, 5, out), 0);   /* threshold 0 */
    assert_int_equal(gsmrt_gsm_prefetch_select(page, share, 5, 0.05, 0.5, 0, out), 0);
    /* ties: lower page first */
    const double tie[3] = {0.5, 0.5, 0.5};
    const uint32_t tp[3] = {9, 3, 5};
    assert_int_equal(gsmrt_gsm_prefetch_select(tp, tie, 3, 0.1, 1.0, 2, out), 2);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_pool),
        cmocka_unit_test(test_should_use),
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_page_table_grow_truncate),
        cmocka_unit_test(test_observe),
        cmocka_unit_test(test_plan_rules),
        cmocka_unit_test(test_plan_turn_candidates),
        cmocka_unit_test(test_plan_full_pools),
        cmocka_unit_test(test_group_pages),
        cmocka_unit_test(test_prefetch_select),
    };
    return cmocka_run_group_tests_name("gsm_tiers", tests, NULL, NULL);
}
