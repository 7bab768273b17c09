/* test_budget_swap.c -- issue 8: with a forced device budget
 * (GSMRT_FORCE_DEVICE_BUDGET) too small for a dense KV cache but enough for
 * GSM swap's hot pages, the dense session is refused with a message saying
 * what was needed and what was left, and the swap session runs a long prompt
 * and generates. The budget is placed between the two measured footprints
 * (each in a fresh context), so it tracks the runtime's real allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gsmrt.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

enum { N_CTX = 4096 };
static const char *const SWAP = "low_freq_policy=swap;min_context=256;warmup_steps=0";

static int n_errors;

static void count_errors(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level == GSMRT_LOG_ERROR) {
        n_errors++;
        fprintf(stderr, "gsmrt error: %s\n", msg);
    }
}

/* A context and the model; false (nothing left open) when the model does not fit. */
static bool open_model(gsmrt_context **ctx, gsmrt_model **m)
{
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.pipeline_cache_path = "";
    cp.validation = 1;
    cp.log_cb = count_errors;
    char err[256];
    assert_int_equal(gsmrt_context_create(&cp, ctx, err, sizeof err), GSMRT_OK);
    const char *path = getenv("GSMRT_TEST_MODEL");
    gsmrt_status st = gsmrt_model_load(*ctx, path && *path ? path : GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf", NULL, m);
    if (st == GSMRT_OK) return true;
    assert_int_equal(st, GSMRT_E_OUT_OF_DEVICE_MEMORY);
    gsmrt_context_destroy(*ctx);
    return false;
}

static gsmrt_status make_session(gsmrt_model *m, const char *settings, gsmrt_session **s)
{
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = N_CTX;
    /* an F32 cache: the budget moves in allocation blocks of 4 MiB, and at
     * 4,096 positions an F16 cache's dense and swap footprints differ by
     * only 1.25 MiB, so no budget could take one and refuse the other */
    sp.cache_type = GSMRT_CACHE_F32;
    sp.gsm_settings = settings;
    return gsmrt_session_create(m, &sp, s);
}

/* Device-local bytes held by the device roles with one such session. */
static uint64_t footprint(const char *settings)
{
    gsmrt_context *ctx;
    gsmrt_model *m;
    gsmrt_session *s;
    assert_true(open_model(&ctx, &m));
    assert_int_equal(make_session(m, settings, &s), GSMRT_OK);
    gsmrt_memory_usage u = {.struct_size = sizeof u};
    assert_int_equal(gsmrt_context_memory(ctx, &u), GSMRT_OK);
    gsmrt_session_destroy(s);
    gsmrt_model_destroy(m);
    gsmrt_context_destroy(ctx);
    return u.weights_bytes + u.kv_hot_bytes + u.scratch_bytes;
}

static void test_swap_fits_where_dense_does_not(void **state)
{
    (void)state;
    unsetenv("GSMRT_FORCE_DEVICE_BUDGET");
    uint64_t dense = footprint(NULL), swap = footprint(SWAP);
    printf("device-role bytes with one 4096-position session: dense %.2f MiB, swap %.2f MiB\n", dense / 1048576.0,
           swap / 1048576.0);
    assert_true(swap < dense);
    /* the budget counts allocated blocks (4 MiB and up), so step it up from
     * the swap footprint until a budget takes swap and refuses dense */
    char budget[32];
    gsmrt_context *ctx;
    gsmrt_model *m;
    gsmrt_session *s = NULL;
    for (uint64_t b = swap; b < dense + (64u << 20); b += 4u << 20) {
        snprintf(budget, sizeof budget, "%llu", (unsigned long long)b);
        setenv("GSMRT_FORCE_DEVICE_BUDGET", budget, 1);
        if (!open_model(&ctx, &m)) continue;   /* blocks round up: the model alone may not fit yet */
        gsmrt_status st = make_session(m, SWAP, &s);
        if (st == GSMRT_OK) {
            gsmrt_session *d = NULL;
            gsmrt_status sd = make_session(m, NULL, &d);
            gsmrt_session_destroy(d);
            if (sd == GSMRT_E_OUT_OF_DEVICE_MEMORY) {
                const char *msg = gsmrt_context_last_error(ctx);
                printf("budget %s: dense refused (%s); swap runs\n", budget, msg);
                assert_non_null(strstr(msg, "needed"));
                assert_non_null(strstr(msg, "left"));
                break;
            }
        }
        gsmrt_session_destroy(s);
        s = NULL;
        gsmrt_model_destroy(m);
        gsmrt_context_destroy(ctx);
        ctx = NULL;
    }
    assert_non_null(s);   /* some budget takes swap and refuses dense */
    /* the swap session still runs a long prompt through the gate */
    char *prompt = malloc(7000);   /* ~3,500 tokens */
    size_t n = 0;
    for (int i = 0; n + 80 < 7000; i++)
        n += (size_t)snprintf(prompt + n, 7000 - n, "Remember: box %d holds %d marbles. ", i, (i * 37) % 100);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 16;
    gp.temperature = 0;
    gp.ignore_eos = true;
    gsmrt_generate_result r = {.struct_size = sizeof r};
    gsmrt_status st = gsmrt_session_complete(s, prompt, &gp, NULL, NULL, &r);
    if (st != GSMRT_OK) fail_msg("swap session: %s: %s", gsmrt_status_name(st), gsmrt_context_last_error(ctx));
    assert_int_equal(r.n_tokens, 16);
    assert_true(r.gsm_steps > 0 && r.n_past > 2048);
    free(prompt);
    gsmrt_session_destroy(s);
    gsmrt_model_destroy(m);
    gsmrt_context_destroy(ctx);
    unsetenv("GSMRT_FORCE_DEVICE_BUDGET");
    assert_int_equal(n_errors, 0);   /* refusals are warnings; validation stays silent */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_swap_fits_where_dense_does_not)};
    return cmocka_run_group_tests_name("budget_swap", tests, NULL, NULL);
}
