/* test_gsm_kmeans.c -- k-means++ on hand-made clusters (expected partition,
 * numbering and centres worked out by hand), identical results across runs,
 * seeds and input orders, edge cases (k = 1, k = n, duplicates), bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kmeans.h"

static void test_rng_reference(void **state)
{
    (void)state;
    /* splitmix64 from seed 0: the published reference outputs */
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 0);
    assert_true(gsmrt_gsm_rng_next(&r) == 0xE220A8397B1DCDAFull);
    assert_true(gsmrt_gsm_rng_next(&r) == 0x6E789E6AA1B965F4ull);
    assert_true(gsmrt_gsm_rng_next(&r) == 0x06C45D188009454Full);
    for (int i = 0; i < 1000; i++) {
        double u = gsmrt_gsm_rng_uniform(&r);
        assert_true(u >= 0 && u < 1);
    }
}

/* Three blobs of four points around (0, 0), (5, 10) and (10, 0), offsets
 * +-0.5 in x and y: means are exactly the blob centres. Lexicographic order
 * of the centres numbers them 0, 1, 2 in that order. */
#define N 12
static const float BLOBS[N][2] = {
    {-0.5f, -0.5f}, {0.5f, -0.5f}, {-0.5f, 0.5f}, {0.5f, 0.5f},   /* blob 0 */
    {4.5f, 9.5f},   {5.5f, 9.5f},  {4.5f, 10.5f}, {5.5f, 10.5f},  /* blob 1 */
    {9.5f, -0.5f},  {10.5f, -0.5f}, {9.5f, 0.5f}, {10.5f, 0.5f},  /* blob 2 */
};

static void run(const float *x, size_t n, size_t d, size_t k, uint64_t seed, uint32_t *assign, float *centers,
                double *inertia)
{
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, seed);
    struct gsmrt_gsm_kmeans_params p = {k, 100, 4};
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    gsmrt_status st = gsmrt_gsm_kmeans(x, n, d, &p, &r, NULL, assign, centers, inertia, &e);
    if (st != GSMRT_OK) print_error("%s\n", e.msg);
    assert_int_equal(st, GSMRT_OK);
}

static void test_blobs(void **state)
{
    (void)state;
    uint32_t a[N];
    float c[3 * 2];
    double inertia;
    run(&BLOBS[0][0], N, 2, 3, 42, a, c, &inertia);
    for (size_t i = 0; i < N; i++) assert_int_equal(a[i], i / 4);
    const float want_c[6] = {0, 0, 5, 10, 10, 0};
    for (size_t i = 0; i < 6; i++) assert_true(fabsf(c[i] - want_c[i]) < 1e-6f);
    /* every point is 0.5^2 + 0.5^2 = 0.5 from its centre: 12 * 0.5 = 6 */
    assert_true(fabs(inertia - 6.0) < 1e-12);

    /* identical across runs and seeds */
    for (uint64_t seed = 0; seed < 20; seed++) {
        uint32_t b[N];
        run(&BLOBS[0][0], N, 2, 3, seed, b, NULL, NULL);
        assert_memory_equal(a, b, sizeof a);
    }
}

static void test_order_independent(void **state)
{
    (void)state;
    /* less separated clusters, where a careless seeding could depend on order */
    enum { M = 16 };
    float x[M][3];
    struct gsmrt_gsm_rng g;
    gsmrt_gsm_rng_seed(&g, 99);
    for (size_t i = 0; i < M; i++)
        for (size_t t = 0; t < 3; t++) x[i][t] = (float)(gsmrt_gsm_rng_uniform(&g) * 4.0);
    uint32_t a[M];
    float c[4 * 3];
    run(&x[0][0], M, 3, 4, 1234, a, c, NULL);
    for (int trial = 0; trial < 30; trial++) {
        /* a random permutation (Fisher-Yates) */
        size_t perm[M];
        for (size_t i = 0; i < M; i++) perm[i] = i;
        for (size_t i = M - 1; i > 0; i--) {
            size_t j = gsmrt_gsm_rng_next(&g) % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        float y[M][3];
        for (size_t i = 0; i < M; i++) memcpy(y[i], x[perm[i]], sizeof y[i]);
        uint32_t b[M];
        float cb[4 * 3];
        run(&y[0][0], M, 3, 4, 1234, b, cb, NULL);
        for (size_t i = 0; i < M; i++) assert_int_equal(b[i], a[perm[i]]);   /* same label for the same point */
        assert_memory_equal(c, cb, sizeof c);
    }
}

static void test_edges(void **state)
{
    (void)state;
    uint32_t a[N];
    float c[N * 2];
    /* k = 1: one cluster at the mean of all points, (5, 10/3) */
    run(&BLOBS[0][0], N, 2, 1, 1, a, c, NULL);
    for (size_t i = 0; i < N; i++) assert_int_equal(a[i], 0);
    assert_true(fabsf(c[0] - 5.0f) < 1e-6f && fabsf(c[1] - 10.0f / 3.0f) < 1e-6f);
    /* k = n: every point its own cluster, numbered in lexicographic order of the points */
    const float pts[4][1] = {{3}, {1}, {4}, {2}};
    run(&pts[0][0], 4, 1, 4, 1, a, c, NULL);
    assert_int_equal(a[0], 2);
    assert_int_equal(a[1], 0);
    assert_int_equal(a[2], 3);
    assert_int_equal(a[3], 1);
    /* duplicates: 5 equal points and 1 other, k = 3: still 3 non-empty clusters */
    const float dup[6][1] = {{7}, {7}, {7}, {7}, {7}, {9}};
    run(&dup[0][0], 6, 1, 3, 5, a, c, NULL);
    size_t cnt[3] = {0, 0, 0};
    for (size_t i = 0; i < 6; i++) {
        assert_true(a[i] < 3);
        cnt[a[i]]++;
    }
    assert_true(cnt[0] > 0 && cnt[1] > 0 && cnt[2] > 0);
    assert_int_equal(a[5], 2);   /* 9 sorts last */
}

static void test_bad_input(void **state)
{
    (void)state;
    struct gsmrt_gsm_rng r;
    gsmrt_gsm_rng_seed(&r, 1);
    uint32_t a[N];
    struct gsmrt_err e;
    struct gsmrt_gsm_kmeans_params p0 = {0, 0, 0}, p13 = {13, 0, 0}, p2 = {2, 0, 0};
    assert_int_equal(gsmrt_gsm_kmeans(&BLOBS[0][0], N, 2, &p0, &r, NULL, a, NULL, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_gsm_kmeans(&BLOBS[0][0], N, 2, &p13, &r, NULL, a, NULL, NULL, &e),
                     GSMRT_E_INVALID_ARGUMENT);
    assert_string_equal(e.msg, "k-means: k = 13 clusters for 12 points");
    const float bad[2][1] = {{1}, {NAN}};
    assert_int_equal(gsmrt_gsm_kmeans(&bad[0][0], 2, 1, &p2, &r, NULL, a, NULL, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_string_equal(e.msg, "k-means: point 1, feature 0 is not finite");
    assert_int_equal(gsmrt_gsm_kmeans(NULL, 0, 2, &p2, &r, NULL, a, NULL, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_reference), cmocka_unit_test(test_blobs),
        cmocka_unit_test(test_order_independent), cmocka_unit_test(test_edges),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests_name("gsm_kmeans", tests, NULL, NULL);
}
