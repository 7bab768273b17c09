/* test_oom.c -- out of host memory, swept: an allocator that fails the i-th
 * allocation, for every i up to the count of a clean run, during a model
 * load and during a chat turn. Each run must return
 * GSMRT_E_OUT_OF_HOST_MEMORY (or succeed once i passes the count), leave no
 * host memory allocated, and leave the context (and the session) usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gsmrt.h"
#include "support/fail_alloc.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

static const char *model_path(void)
{
    const char *p = getenv("GSMRT_TEST_MODEL");
    return p && *p ? p : GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf";
}


static gsmrt_context *make_context(struct fail_alloc *f)
{
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.pipeline_cache_path = "";
    cp.allocator = fail_alloc_allocator(f);
    char err[256];
    gsmrt_context *ctx = NULL;
    assert_int_equal(gsmrt_context_create(&cp, &ctx, err, sizeof err), GSMRT_OK);
    return ctx;
}

static void test_model_load_sweep(void **state)
{
    (void)state;
    struct fail_alloc f;
    fail_alloc_init(&f, -1);
    gsmrt_context *ctx = make_context(&f);
    long base_live = f.live, base_calls = f.calls;
    gsmrt_model *m;
    assert_int_equal(gsmrt_model_load(ctx, model_path(), NULL, &m), GSMRT_OK);
    long count = f.calls - base_calls;
    assert_int_equal(gsmrt_model_destroy(m), GSMRT_OK);
    assert_int_equal(f.live, base_live);
    long failures = 0;
    for (long i = 0; i < count; i++) {
        f.fail_at = f.calls + i;
        gsmrt_status st = gsmrt_model_load(ctx, model_path(), NULL, &m);
        f.fail_at = -1;
        if (st == GSMRT_OK) fail_msg("load succeeded although allocation %ld of %ld failed", i, count);
        if (st != GSMRT_E_OUT_OF_HOST_MEMORY)
            fail_msg("allocation %ld of %ld failed: %s (%s)", i, count, gsmrt_status_name(st),
                     gsmrt_context_last_error(ctx));
        assert_null(m);
        if (f.live != base_live) fail_msg("allocation %ld failed: %ld blocks leaked", i, f.live - base_live);
        failures++;
    }
    /* and the context still loads the model */
    assert_int_equal(gsmrt_model_load(ctx, model_path(), NULL, &m), GSMRT_OK);
    assert_int_equal(gsmrt_model_destroy(m), GSMRT_OK);
    assert_int_equal(gsmrt_context_destroy(ctx), GSMRT_OK);
    assert_int_equal(f.live, 0);
    printf("model load: %ld allocations, each failed once: all returned out-of-memory, nothing leaked\n",
           failures);
}

static void test_chat_turn_sweep(void **state)
{
    (void)state;
    struct fail_alloc f;
    fail_alloc_init(&f, -1);
    gsmrt_context *ctx = make_context(&f);
    gsmrt_model *m;
    gsmrt_session *s;
    assert_int_equal(gsmrt_model_load(ctx, model_path(), NULL, &m), GSMRT_OK);
    assert_int_equal(gsmrt_session_create(m, NULL, &s), GSMRT_OK);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.temperature = 0;
    gp.max_tokens = 8;
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Hello there!"), GSMRT_OK);
    gsmrt_generate_result r = {.struct_size = sizeof r};
    assert_int_equal(gsmrt_session_generate(s, &gp, NULL, NULL, &r), GSMRT_OK);
    /* the allocations of a turn once the session is warm (what the sweep repeats) */
    gsmrt_session_reset(s);
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Hello there!"), GSMRT_OK);
    long base_calls = f.calls;
    assert_int_equal(gsmrt_session_generate(s, &gp, NULL, NULL, &r), GSMRT_OK);
    long count = f.calls - base_calls;
    long failures = 0;
    for (long i = 0; i < count; i++) {
        gsmrt_session_reset(s);
        assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Hello there!"), GSMRT_OK);
        long live = f.live;
        f.fail_at = f.calls + i;
        gsmrt_status st = gsmrt_session_generate(s, &gp, NULL, NULL, &r);
        f.fail_at = -1;
        if (st == GSMRT_OK) fail_msg("turn allocation %ld of %ld failed but the turn succeeded", i, count);
        if (st != GSMRT_E_OUT_OF_HOST_MEMORY) fail_msg("turn allocation %ld: %s", i, gsmrt_status_name(st));
        if (f.live != live) fail_msg("turn allocation %ld failed: %ld blocks leaked", i, f.live - live);
        failures++;
        /* the session is still usable */
        assert_int_equal(gsmrt_session_generate(s, &gp, NULL, NULL, &r), GSMRT_OK);
    }
    gsmrt_session_destroy(s);
    assert_int_equal(gsmrt_model_destroy(m), GSMRT_OK);
    assert_int_equal(gsmrt_context_destroy(ctx), GSMRT_OK);
    assert_int_equal(f.live, 0);
    assert_int_equal(failures, count);
    printf("chat turn: %ld allocations, each failed once: all returned out-of-memory, nothing leaked, the "
           "session went on\n", count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_load_sweep),
        cmocka_unit_test(test_chat_turn_sweep),
    };
    return cmocka_run_group_tests_name("oom", tests, NULL, NULL);
}
