/* test_sampler.c -- the sampler chain against hand-computed distributions:
 * greedy and its ties, top-k = 1, seeds, the temperature -> 0 limit, top-p
 * and min-p cut-offs, repetition-penalty arithmetic, parameter errors, and
 * empirical frequencies against softmax. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/fail_alloc.h"

#include "sample/sampler.h"

static struct gsmrt_sampler *make(float temp, int32_t top_k, float top_p, float min_p, float rep, int32_t last_n,
                                  uint64_t seed, uint32_t n_vocab)
{
    struct gsmrt_sampler_params p = {temp, top_k, top_p, min_p, rep, last_n, seed};
    struct gsmrt_sampler *s = NULL;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    assert_int_equal(gsmrt_sampler_create(NULL, &p, n_vocab, &s, &err), GSMRT_OK);
    return s;
}

static int32_t draw(struct gsmrt_sampler *s, const float *logits)
{
    int32_t id = -1;
    assert_int_equal(gsmrt_sampler_sample(s, logits, &id, NULL), GSMRT_OK);
    return id;
}

static void test_greedy(void **state)
{
    (void)state;
    const float l[5] = {1.0f, 3.0f, 2.0f, 3.0f, -INFINITY};
    struct gsmrt_sampler *s = make(0.0f, 40, 0.95f, 0.05f, 1.0f, 64, 1, 5);
    assert_int_equal(draw(s, l), 1);   /* two maxima: the lower id */
    gsmrt_sampler_destroy(s);

    /* top-k = 1 at temperature 1 is greedy, whatever the seed */
    struct gsmrt_rng r;
    gsmrt_rng_seed(&r, 7);
    float v[50];
    for (int trial = 0; trial < 200; trial++) {
        int32_t arg = 0;
        for (int i = 0; i < 50; i++) {
            v[i] = (float)(gsmrt_rng_uniform(&r) * 10.0 - 5.0);
            if (v[i] > v[arg]) arg = i;
        }
        struct gsmrt_sampler *k1 = make(1.0f, 1, 1.0f, 0.0f, 1.0f, 0, (uint64_t)trial, 50);
        struct gsmrt_sampler *g = make(0.0f, 0, 1.0f, 0.0f, 1.0f, 0, 0, 50);
        assert_int_equal(draw(k1, v), arg);
        assert_int_equal(draw(g, v), arg);
        gsmrt_sampler_destroy(k1);
        gsmrt_sampler_destroy(g);
    }
}

static void test_seed_reproduces(void **state)
{
    (void)state;
    float l[16];
    for (int i = 0; i < 16; i++) l[i] = (float)(i % 5) * 0.3f;
    struct gsmrt_sampler *a = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 0, 1234, 16);
    struct gsmrt_sampler *b = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 0, 1234, 16);
    struct gsmrt_sampler *c = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 0, 1235, 16);
    int32_t seq[200];
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        seq[i] = draw(a, l);
        assert_int_equal(draw(b, l), seq[i]);
        differ += draw(c, l) != seq[i];
    }
    assert_true(differ > 50);   /* another seed gives another run */
    gsmrt_sampler_reset(a, 1234);   /* reset replays the run */
    for (int i = 0; i < 200; i++) assert_int_equal(draw(a, l), seq[i]);
    gsmrt_sampler_destroy(a);
    gsmrt_sampler_destroy(b);
    gsmrt_sampler_destroy(c);

    /* xoshiro256** reference value: splitmix64(0) seeds, first output
     * computed independently from the published algorithms */
    struct gsmrt_rng r;
    gsmrt_rng_seed(&r, 0);
    assert_true(r.s[0] == 0xe220a8397b1dcdafull);
    double u = gsmrt_rng_uniform(&r);
    assert_true(u >= 0.0 && u < 1.0);
}

static void test_temperature_limit(void **state)
{
    (void)state;
    /* gaps of at least 0.1 at T = 1e-3: any other token has probability
     * below e^-100 relative to the argmax */
    const float l[6] = {0.2f, 0.9f, 1.0f, 0.5f, -2.0f, 0.8f};
    struct gsmrt_sampler *s = make(1e-3f, 0, 1.0f, 0.0f, 1.0f, 0, 99, 6);
    for (int i = 0; i < 1000; i++) assert_int_equal(draw(s, l), 2);
    gsmrt_sampler_destroy(s);
}

/* Draws n times; counts per id. */
static void histogram(struct gsmrt_sampler *s, const float *l, size_t n_vocab, int n, int *count)
{
    memset(count, 0, n_vocab * sizeof *count);
    for (int i = 0; i < n; i++) {
        int32_t id = draw(s, l);
        assert_true(id >= 0 && (size_t)id < n_vocab);
        count[id]++;
    }
}

static void test_top_p_min_p(void **state)
{
    (void)state;
    /* probabilities 0.1, 0.5, 0.15, 0.25 at ids 0..3 */
    const float l[4] = {logf(0.1f), logf(0.5f), logf(0.15f), logf(0.25f)};
    int count[4];
    const int N = 20000;
    /* top-p 0.7: sorted 0.5, 0.25 (cum 0.75 >= 0.7) -> ids 1, 3 in ratio 2:1 */
    struct gsmrt_sampler *s = make(1.0f, 0, 0.7f, 0.0f, 1.0f, 0, 5, 4);
    histogram(s, l, 4, N, count);
    assert_int_equal(count[0], 0);
    assert_int_equal(count[2], 0);
    assert_true(fabs(count[1] / (double)N - 2.0 / 3.0) < 0.02);   /* 6 sigma, sigma = 0.0033 */
    gsmrt_sampler_destroy(s);
    /* top-p 0.8: 0.5 + 0.25 + 0.15 = 0.9 >= 0.8 -> ids 1, 3, 2 */
    s = make(1.0f, 0, 0.8f, 0.0f, 1.0f, 0, 6, 4);
    histogram(s, l, 4, N, count);
    assert_int_equal(count[0], 0);
    assert_true(count[2] > 0);
    gsmrt_sampler_destroy(s);
    /* min-p 0.4: keep p >= 0.4 * 0.5 = 0.2 -> ids 1, 3 */
    s = make(1.0f, 0, 1.0f, 0.4f, 1.0f, 0, 7, 4);
    histogram(s, l, 4, N, count);
    assert_int_equal(count[0], 0);
    assert_int_equal(count[2], 0);
    assert_true(count[1] > 0 && count[3] > 0);
    gsmrt_sampler_destroy(s);
    /* min-p 0.25: threshold 0.125 -> ids 1, 3, 2 */
    s = make(1.0f, 0, 1.0f, 0.25f, 1.0f, 0, 8, 4);
    histogram(s, l, 4, N, count);
    assert_int_equal(count[0], 0);
    assert_true(count[2] > 0);
    gsmrt_sampler_destroy(s);
    /* top-k 2 -> ids 1, 3 */
    s = make(1.0f, 2, 1.0f, 0.0f, 1.0f, 0, 9, 4);
    histogram(s, l, 4, N, count);
    assert_int_equal(count[0] + count[2], 0);
    gsmrt_sampler_destroy(s);
}

static void test_repetition_penalty(void **state)
{
    (void)state;
    /* positive logits are divided: 2.0 / 2 = 1.0 < 1.5 */
    const float a[3] = {2.0f, -1.0f, 1.5f};
    struct gsmrt_sampler *s = make(0.0f, 0, 1.0f, 0.0f, 2.0f, 2, 0, 3);
    assert_int_equal(draw(s, a), 0);
    gsmrt_sampler_accept(s, 0);
    gsmrt_sampler_accept(s, 0);   /* counted once, not twice: 2.0 / 2, not / 4 */
    const float a2[3] = {2.0f, -1.0f, 0.9f};
    assert_int_equal(draw(s, a2), 0);   /* 1.0 > 0.9 */
    assert_int_equal(draw(s, a), 2);    /* 1.0 < 1.5 */
    /* the window holds the last 2: after two other tokens 0 is free again */
    gsmrt_sampler_accept(s, 1);
    gsmrt_sampler_accept(s, 1);
    assert_int_equal(draw(s, a), 0);
    gsmrt_sampler_destroy(s);

    /* negative logits are multiplied: -1 * 2 = -2 < -1.5 */
    const float b[2] = {-1.0f, -1.5f};
    s = make(0.0f, 0, 1.0f, 0.0f, 2.0f, 8, 0, 2);
    assert_int_equal(draw(s, b), 0);
    gsmrt_sampler_accept(s, 0);
    assert_int_equal(draw(s, b), 1);
    gsmrt_sampler_accept(s, 77);   /* out of range: ignored */
    gsmrt_sampler_reset(s, 0);     /* forgets the window */
    assert_int_equal(draw(s, b), 0);
    gsmrt_sampler_destroy(s);
}

/* Empirical frequencies against softmax(l / T). With N = 200000 draws the
 * standard error of a frequency is sqrt(p(1-p)/N) <= 0.00112; the tolerance
 * 0.006 is over 5 standard errors, so a correct sampler fails with
 * probability < 1e-6 per category, and the fixed seed makes the run
 * reproducible anyway. An off-by-one in the cumulative walk or a wrong
 * temperature shifts some frequency by far more (>= 0.03 here). */
static void test_frequencies(void **state)
{
    (void)state;
    const float l[5] = {1.0f, 0.0f, -1.0f, 2.0f, 0.5f};
    const float temps[2] = {1.0f, 2.0f};
    const int N = 200000;
    int count[5];
    for (int t = 0; t < 2; t++) {
        double p[5], z = 0.0;
        for (int i = 0; i < 5; i++) z += p[i] = exp(l[i] / temps[t]);
        struct gsmrt_sampler *s = make(temps[t], 0, 1.0f, 0.0f, 1.0f, 0, 2024 + (uint64_t)t, 5);
        histogram(s, l, 5, N, count);
        for (int i = 0; i < 5; i++) assert_true(fabs(count[i] / (double)N - p[i] / z) < 0.006);
        gsmrt_sampler_destroy(s);
    }
}

/* Every allocation failing in turn: a clean GSMRT_E_OUT_OF_HOST_MEMORY and
 * nothing leaked (cmocka's test_malloc checks the frees). */

static void test_oom_sweep(void **state)
{
    (void)state;
    struct gsmrt_sampler_params p = gsmrt_sampler_default_params();
    const float l[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int ok_at = -1;
    for (int i = 0; i < 100 && ok_at < 0; i++) {
        struct fail_alloc c;
        fail_alloc_init(&c, i);
        gsmrt_allocator a = fail_alloc_allocator(&c);
        struct gsmrt_sampler *s = NULL;
        gsmrt_status st = gsmrt_sampler_create(&a, &p, 8, &s, NULL);
        if (st != GSMRT_OK) {
            assert_int_equal(st, GSMRT_E_OUT_OF_HOST_MEMORY);
            assert_null(s);
            continue;
        }
        ok_at = i;
        int32_t id;
        assert_int_equal(gsmrt_sampler_sample(s, l, &id, NULL), GSMRT_OK);   /* sampling allocates nothing */
        gsmrt_sampler_destroy(s);
    }
    assert_true(ok_at > 0);
}

static void test_errors(void **state)
{
    (void)state;
    struct gsmrt_sampler *s = (struct gsmrt_sampler *)1;
    struct gsmrt_err err;
    struct gsmrt_sampler_params p = gsmrt_sampler_default_params();
    p.top_p = 1.5f;
    assert_int_equal(gsmrt_sampler_create(NULL, &p, 10, &s, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(err.msg, "top_p"));
    p = gsmrt_sampler_default_params();
    p.temperature = -0.5f;
    assert_int_equal(gsmrt_sampler_create(NULL, &p, 10, &s, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "temperature"));
    p = gsmrt_sampler_default_params();
    assert_int_equal(gsmrt_sampler_create(NULL, &p, 0, &s, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_sampler_create(NULL, &p, 3, &s, &err), GSMRT_OK);
    const float nan3[3] = {0.0f, NAN, 1.0f};
    int32_t id = 5;
    assert_int_equal(gsmrt_sampler_sample(s, nan3, &id, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(id, -1);
    const float ninf[3] = {-INFINITY, -INFINITY, -INFINITY};
    assert_int_equal(gsmrt_sampler_sample(s, ninf, &id, &err), GSMRT_OK);
    assert_int_equal(id, 0);
    gsmrt_sampler_destroy(s);
    gsmrt_sampler_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_seed_reproduces),
        cmocka_unit_test(test_temperature_limit),
        cmocka_unit_test(test_top_p_min_p),
        cmocka_unit_test(test_repetition_penalty),
        cmocka_unit_test(test_frequencies),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_oom_sweep),
    };
    return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
