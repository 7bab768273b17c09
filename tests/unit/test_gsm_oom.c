/* test_gsm_oom.c -- out-of-memory sweeps over gsm/'s allocating functions:
 * with an allocator that fails the i-th allocation, for every i up to the
 * count of a clean run, each call returns GSMRT_E_OUT_OF_HOST_MEMORY and
 * leaks nothing (cJSON's own allocations are outside the sweep: the library
 * never touches cJSON's hooks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/fail_alloc.h"

#include "base/mem.h"
#include "gsm.h"
#include "kmeans.h"


typedef gsmrt_status (*scenario_fn)(const gsmrt_allocator *a, struct gsmrt_err *err);

/* Runs fn clean to count allocations, then fails each one in turn. */
static void sweep(const char *name, scenario_fn fn)
{
    struct fail_alloc f;
    fail_alloc_init(&f, -1);
    gsmrt_allocator a = fail_alloc_allocator(&f);
    struct gsmrt_err e;
    assert_int_equal(fn(&a, &e), GSMRT_OK);
    assert_int_equal(f.live_bytes, 0);
    size_t n = (size_t)f.calls;
    assert_true(n > 0);
    for (size_t i = 1; i <= n; i++) {
        fail_alloc_init(&f, (long)i - 1);
        gsmrt_err_clear(&e);
        gsmrt_status st = fn(&a, &e);
        if (st != GSMRT_E_OUT_OF_HOST_MEMORY) print_error("%s: allocation %zu of %zu: %s\n", name, i, n, e.msg);
        assert_int_equal(st, GSMRT_E_OUT_OF_HOST_MEMORY);
        assert_int_equal(f.live_bytes, 0);
    }
}

static gsmrt_status page_table_scenario(const gsmrt_allocator *a, struct gsmrt_err *err)
{
    struct gsmrt_gsm_slot_pool hot[2], cold[2];
    memset(hot, 0, sizeof hot);
    memset(cold, 0, sizeof cold);
    struct gsmrt_gsm_page_table *pt = NULL;
    gsmrt_status st = GSMRT_OK;
    for (int l = 0; l < 2 && st == GSMRT_OK; l++) {
        st = gsmrt_gsm_slot_pool_init(&hot[l], a, 8, err);
        if (st == GSMRT_OK) st = gsmrt_gsm_slot_pool_init(&cold[l], a, 8, err);
    }
    if (st == GSMRT_OK) st = gsmrt_gsm_page_table_create(a, 2, 8, 16, &pt, err);
    if (st == GSMRT_OK) st = gsmrt_gsm_page_table_grow(pt, 100, hot, err);
    gsmrt_gsm_page_table_destroy(pt);
    for (int l = 0; l < 2; l++) {
        gsmrt_gsm_slot_pool_deinit(&hot[l]);
        gsmrt_gsm_slot_pool_deinit(&cold[l]);
    }
    return st;
}

static const struct gsmrt_gsm_model_id ID = {"deepseek2", "oom", 3, 4, 64, 100};

static gsmrt_status calib_scenario(const gsmrt_allocator *a, struct gsmrt_err *err)
{
    struct gsmrt_gsm_calib *c = NULL, *d = NULL;
    char *text = NULL;
    gsmrt_status st = gsmrt_gsm_calib_create(a, &ID, 2, 4, &c, err);
    struct gsmrt_gsm_plan_params pp = {2, 0.9, 8, 4, 0.1, 0.05f, 1};
    if (st == GSMRT_OK) st = gsmrt_gsm_calib_plan_layer(c, 1, &pp, a, err);
    if (st == GSMRT_OK) st = gsmrt_gsm_calib_to_json(c, a, &text, err);
    if (st == GSMRT_OK) st = gsmrt_gsm_calib_parse(text, strlen(text), "c.json", a, &ID, &d, err);
    gsmrt_mem_free(a, text);
    gsmrt_gsm_calib_destroy(c);
    gsmrt_gsm_calib_destroy(d);
    return st;
}

static char config_path[64];

static gsmrt_status config_scenario(const gsmrt_allocator *a, struct gsmrt_err *err)
{
    struct gsmrt_gsm_config c;
    gsmrt_gsm_config_defaults(&c);
    return gsmrt_gsm_config_load(config_path, a, &c, err);
}

static gsmrt_status kmeans_scenario(const gsmrt_allocator *a, struct gsmrt_err *err)
{
    const float x[6] = {0, 1, 2, 10, 11, 12};
    uint32_t as[6];
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 1);
    struct gsmrt_gsm_kmeans_params p = {2, 0, 2};
    return gsmrt_gsm_kmeans(x, 6, 1, &p, &r, a, as, NULL, NULL, err);
}

static void test_page_table(void **state)
{
    (void)state;
    sweep("page table", page_table_scenario);
}

static void test_calib(void **state)
{
    (void)state;
    sweep("calibration", calib_scenario);
}

static void test_config(void **state)
{
    (void)state;
    strcpy(config_path, "/tmp/gsm_oom_configXXXXXX");
    int fd = mkstemp(config_path);
    assert_true(fd >= 0);
    /* larger than the reader's first 4 KiB buffer, so it grows */
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("{\"window\": 64", f);
    for (int i = 0; i < 600; i++) fputs("          ", f);
    fputs("}", f);
    fclose(f);
    sweep("config", config_scenario);
    unlink(config_path);
}

static void test_kmeans(void **state)
{
    (void)state;
    sweep("k-means", kmeans_scenario);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_table),
        cmocka_unit_test(test_calib),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_kmeans),
    };
    return cmocka_run_group_tests_name("gsm_oom", tests, NULL, NULL);
}
