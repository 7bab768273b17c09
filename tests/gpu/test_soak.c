/* test_soak.c -- a long chat under GSM swap (issue 8): 50 turns and 20,000
 * generated tokens on the bundled model, through the public API, with the
 * validation layer on. When the next answer would not fit the context, the
 * oldest exchanges are dropped from the history (what a chat front end
 * does; the replayed history stands for the answers as "(answer)"), so the
 * cache is cut back and re-filled many times. Checks: every turn
 * ends by a stop reason, device-local memory stays what it was after the
 * first turn (nothing grows per turn), the KV held in device-local memory is
 * the small hot pool (less than dense would need), GSM gated steps and moved
 * pages, and no error or validation message is logged. Leaks are the
 * sanitizer run's job (scripts/run-sanitizers.sh). */
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

enum { TURNS = 50, TOKENS_PER_TURN = 400, N_CTX = 2048 };

static int n_errors;

static void count_errors(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level == GSMRT_LOG_ERROR) {
        n_errors++;
        fprintf(stderr, "gsmrt error: %s\n", msg);
    }
}

struct history {
    char *text[2 * TURNS];
    gsmrt_role role[2 * TURNS];
    int first, n;
};

static bool keep_answer(void *user, const gsmrt_token *t)
{
    (void)user;
    (void)t;
    return true;
}

/* The session's history becomes h's messages from h->first on. */
static void replay(gsmrt_session *s, const struct history *h)
{
    gsmrt_session_reset(s);
    for (int i = h->first; i < h->n; i++) assert_int_equal(gsmrt_session_add_message(s, h->role[i], h->text[i]), GSMRT_OK);
}

static void test_soak_swap(void **state)
{
    (void)state;
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.pipeline_cache_path = "";
    cp.validation = 1;
    cp.log_cb = count_errors;
    gsmrt_context *ctx;
    gsmrt_model *m;
    char err[256];
    assert_int_equal(gsmrt_context_create(&cp, &ctx, err, sizeof err), GSMRT_OK);
    const char *path = getenv("GSMRT_TEST_MODEL");
    assert_int_equal(gsmrt_model_load(ctx, path && *path ? path : GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf", NULL, &m),
                     GSMRT_OK);
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = N_CTX;
    sp.gsm_settings = "low_freq_policy=swap;gate_threshold=0.05;min_context=256;window=128;hot_pages=4";
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(m, &sp, &s), GSMRT_OK);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = TOKENS_PER_TURN;
    gp.ignore_eos = true;   /* full-length answers: the token count is the test's */
    gp.seed = 7;
    struct history h = {{0}, {0}, 0, 0};
    gsmrt_memory_usage first = {.struct_size = sizeof first}, now = {.struct_size = sizeof now};
    uint64_t generated = 0;
    int drops = 0;
    uint32_t n_past = 0;
    for (int turn = 0; turn < TURNS; turn++) {
        /* room for a whole answer: like a chat front end, drop the oldest
         * exchanges (the cache is then cut back to what stays and re-filled) */
        if (n_past + TOKENS_PER_TURN + 64 > N_CTX) {
            while (h.n - h.first > 2) h.first += 2;
            drops++;
            replay(s, &h);
        }
        char q[128];
        snprintf(q, sizeof q, "Turn %d. Remember: my code is %04d. What is my code?", turn, (turn * 7919) % 10000);
        h.role[h.n] = GSMRT_ROLE_USER;
        h.text[h.n++] = strdup(q);
        assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, q), GSMRT_OK);
        gsmrt_generate_result r = {.struct_size = sizeof r};
        assert_int_equal(gsmrt_session_generate(s, &gp, keep_answer, NULL, &r), GSMRT_OK);
        assert_int_equal(r.stop, GSMRT_STOP_MAX_TOKENS);
        generated += r.n_tokens;
        n_past = r.n_past;
        /* the answer is now the history's last message: keep our copy in step */
        h.role[h.n] = GSMRT_ROLE_ASSISTANT;
        h.text[h.n++] = strdup("(answer)");
        assert_int_equal(gsmrt_context_memory(ctx, turn == 0 ? &first : &now), GSMRT_OK);
        if (turn > 0 && now.device_local_bytes != first.device_local_bytes)
            fail_msg("turn %d: device-local memory %llu, %llu after the first turn", turn,
                     (unsigned long long)now.device_local_bytes, (unsigned long long)first.device_local_bytes);
    }
    gsmrt_gsm_stats st = {.struct_size = sizeof st};
    assert_int_equal(gsmrt_session_gsm_stats(s, &st), GSMRT_OK);
    printf("soak: %d turns, %llu tokens generated, %d exchanges dropped; device-local %.2f MiB, host-visible %.2f MiB; "
           "KV device %.2f MiB + host %.2f MiB; GSM %llu gated steps, %llu demoted, %llu promoted, %llu prefetched, "
           "KV read %.1f%% of dense\n",
           TURNS, (unsigned long long)generated, drops, first.device_local_bytes / 1048576.0,
           first.host_visible_bytes / 1048576.0, st.kv_device_bytes / 1048576.0, st.kv_host_bytes / 1048576.0,
           (unsigned long long)st.steps, (unsigned long long)st.pages_demoted, (unsigned long long)st.pages_promoted,
           (unsigned long long)st.pages_prefetched,
           st.bytes_read_dense ? 100.0 * (st.bytes_read_hot + st.bytes_read_cold) / st.bytes_read_dense : 0.0);
    assert_true(generated >= 20000);
    assert_true(st.enabled && st.steps > 0 && st.pages_demoted > 0);
    /* the device-local KV is the hot pool, less than half of what dense needs here */
    assert_true(st.kv_device_bytes * 2 < st.kv_host_bytes);
    for (int i = 0; i < h.n; i++) free(h.text[i]);
    gsmrt_session_destroy(s);
    assert_int_equal(gsmrt_model_destroy(m), GSMRT_OK);
    assert_int_equal(gsmrt_context_destroy(ctx), GSMRT_OK);
    assert_int_equal(n_errors, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak_swap)};
    return cmocka_run_group_tests_name("soak", tests, NULL, NULL);
}
