/* test_api.c -- the public API's rules as a host application relies on
 * them: two contexts on two threads give the same results as one at a time;
 * parents refuse to die before their children; params structs from an older
 * (smaller) header get defaults; a cancel from another thread keeps the
 * partial answer and the chat goes on; a prompt longer than the context
 * changes nothing; bad arguments are statuses, not crashes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gsmrt.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

/* Every error the library logs (validation messages included) fails the run. */
static int n_errors;

static void count_errors(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level == GSMRT_LOG_ERROR) {
        __atomic_add_fetch(&n_errors, 1, __ATOMIC_SEQ_CST);
        fprintf(stderr, "gsmrt error: %s\n", msg);
    }
}

static const char *model_path(void)
{
    const char *p = getenv("GSMRT_TEST_MODEL");
    return p && *p ? p : GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf";
}

struct ids {
    int32_t v[64];
    uint32_t n;
};

static bool collect(void *user, const gsmrt_token *t)
{
    struct ids *ids = user;
    if (ids->n < 64) ids->v[ids->n++] = t->id;
    return true;
}

/* One whole life: context, model, session, a greedy completion. */
static void *greedy_run(void *out)
{
    struct ids *ids = out;
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.pipeline_cache_path = "";
    cp.validation = 1;
    cp.log_cb = count_errors;
    gsmrt_context *ctx = NULL;
    gsmrt_model *m = NULL;
    gsmrt_session *s = NULL;
    char err[256];
    ids->n = 0;
    if (gsmrt_context_create(&cp, &ctx, err, sizeof err) != GSMRT_OK) return NULL;
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.temperature = 0;
    gp.max_tokens = 32;
    if (gsmrt_model_load(ctx, model_path(), NULL, &m) == GSMRT_OK && gsmrt_session_create(m, NULL, &s) == GSMRT_OK)
        gsmrt_session_complete(s, "Once upon a time, in a land far away,", &gp, collect, ids, NULL);
    gsmrt_session_destroy(s);
    gsmrt_model_destroy(m);
    gsmrt_context_destroy(ctx);
    return NULL;
}

static void test_two_contexts_two_threads(void **state)
{
    (void)state;
    struct ids alone, a, b;
    greedy_run(&alone);
    assert_true(alone.n > 0);
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, greedy_run, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, greedy_run, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.n, alone.n);
    assert_int_equal(b.n, alone.n);
    assert_memory_equal(a.v, alone.v, alone.n * sizeof alone.v[0]);
    assert_memory_equal(b.v, alone.v, alone.n * sizeof alone.v[0]);
}

struct fixture {
    gsmrt_context *ctx;
    gsmrt_model *m;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.pipeline_cache_path = "";
    cp.validation = 1;
    cp.log_cb = count_errors;
    char err[256];
    if (gsmrt_context_create(&cp, &f->ctx, err, sizeof err) != GSMRT_OK) {
        print_error("context: %s\n", err);
        return -1;
    }
    if (gsmrt_model_load(f->ctx, model_path(), NULL, &f->m) != GSMRT_OK) {
        print_error("model: %s\n", gsmrt_context_last_error(f->ctx));
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (gsmrt_model_destroy(f->m) != GSMRT_OK || gsmrt_context_destroy(f->ctx) != GSMRT_OK) return -1;
    free(f);
    return n_errors == 0 ? 0 : -1;
}

static void test_ownership(void **state)
{
    struct fixture *f = *state;
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(f->m, NULL, &s), GSMRT_OK);
    /* parents refuse to go while children live, and stay usable */
    assert_int_equal(gsmrt_model_destroy(f->m), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_context_destroy(f->ctx), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "alive"));
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 4;
    assert_int_equal(gsmrt_session_complete(s, "Hello", &gp, NULL, NULL, NULL), GSMRT_OK);
    gsmrt_session_destroy(s);
    /* NULL is accepted where documented, refused elsewhere */
    gsmrt_session_destroy(NULL);
    assert_int_equal(gsmrt_model_destroy(NULL), GSMRT_OK);
    assert_int_equal(gsmrt_context_destroy(NULL), GSMRT_OK);
    gsmrt_session_cancel(NULL);
    assert_int_equal(gsmrt_session_create(NULL, NULL, &s), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_session_create(f->m, NULL, NULL), GSMRT_E_INVALID_ARGUMENT);
    gsmrt_model *m2 = (gsmrt_model *)1;
    assert_int_equal(gsmrt_model_load(f->ctx, NULL, NULL, &m2), GSMRT_E_INVALID_ARGUMENT);
    assert_null(m2);
    assert_int_equal(gsmrt_model_load(f->ctx, "/nonexistent/model.gguf", NULL, &m2), GSMRT_E_IO);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "/nonexistent/model.gguf"));
}

/* A caller compiled against an older header passes a smaller struct: the
 * fields it lacks take their defaults. */
static void test_older_params_structs(void **state)
{
    struct fixture *f = *state;
    gsmrt_session_params sp;
    memset(&sp, 0xff, sizeof sp);
    sp.struct_size = offsetof(gsmrt_session_params, n_ctx) + sizeof sp.n_ctx;   /* knows n_ctx only */
    sp.n_ctx = 256;
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(f->m, &sp, &s), GSMRT_OK);
    gsmrt_generate_params gp;
    memset(&gp, 0xff, sizeof gp);
    gp.struct_size = offsetof(gsmrt_generate_params, temperature) + sizeof gp.temperature;
    gp.max_tokens = 8;
    gp.temperature = 0;
    gsmrt_generate_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = offsetof(gsmrt_generate_result, stop) + sizeof r.stop;   /* older result struct */
    r.n_past = 12345;   /* beyond its struct_size: must stay untouched */
    assert_int_equal(gsmrt_session_complete(s, "Hello", &gp, NULL, NULL, &r), GSMRT_OK);
    assert_true(r.n_tokens >= 1 && r.n_tokens <= 8);
    assert_int_equal(r.n_past, 12345);
    gsmrt_session_destroy(s);
}

/* The session's cache type: F16 by default (also for a caller built before
 * the field), F32 on request, an unknown value refused by name. The KV bytes
 * the context accounts are the MLA formula of the bundled model, by hand:
 * 4 layers x (64 + 16) values x 256 positions x 2 bytes (F16) or 4 (F32). */
static uint64_t kv_bytes_of(struct fixture *f, const gsmrt_session_params *sp)
{
    gsmrt_memory_usage before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    assert_int_equal(gsmrt_context_memory(f->ctx, &before), GSMRT_OK);
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(f->m, sp, &s), GSMRT_OK);
    assert_int_equal(gsmrt_context_memory(f->ctx, &after), GSMRT_OK);
    gsmrt_gsm_stats st = {.struct_size = sizeof st};
    assert_int_equal(gsmrt_session_gsm_stats(s, &st), GSMRT_OK);
    assert_int_equal(st.kv_device_bytes, after.kv_hot_bytes - before.kv_hot_bytes);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 4;
    gp.temperature = 0;
    assert_int_equal(gsmrt_session_complete(s, "Hello", &gp, NULL, NULL, NULL), GSMRT_OK);
    gsmrt_session_destroy(s);
    return after.kv_hot_bytes - before.kv_hot_bytes;
}

static void test_cache_type(void **state)
{
    struct fixture *f = *state;
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 256;
    assert_int_equal(kv_bytes_of(f, &sp), 4 * 80 * 256 * 2);   /* the default: F16 */
    sp.cache_type = GSMRT_CACHE_F16;
    assert_int_equal(kv_bytes_of(f, &sp), 4 * 80 * 256 * 2);
    sp.cache_type = GSMRT_CACHE_F32;
    assert_int_equal(kv_bytes_of(f, &sp), 4 * 80 * 256 * 4);
    /* an older caller: the struct ends before cache_type, garbage after it */
    gsmrt_session_params old;
    memset(&old, 0xff, sizeof old);
    old.struct_size = offsetof(gsmrt_session_params, gsm_settings) + sizeof old.gsm_settings;
    old.n_ctx = 256, old.n_batch = 0, old.gsm = false, old.gsm_config = NULL, old.gsm_settings = NULL;
    assert_int_equal(kv_bytes_of(f, &old), 4 * 80 * 256 * 2);
    sp.cache_type = (gsmrt_cache_type)7;
    gsmrt_session *s = (gsmrt_session *)1;
    assert_int_equal(gsmrt_session_create(f->m, &sp, &s), GSMRT_E_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "cache_type 7"));
}

struct canceller {
    gsmrt_session *s;
    int after_tokens;
    int seen;
};

static bool cancel_after(void *user, const gsmrt_token *t)
{
    (void)t;
    struct canceller *c = user;
    c->seen++;
    return true;
}

static void *cancel_thread(void *arg)
{
    struct canceller *c = arg;
    while (__atomic_load_n(&c->seen, __ATOMIC_SEQ_CST) < c->after_tokens)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    gsmrt_session_cancel(c->s);
    return NULL;
}

static void test_cancel_from_another_thread(void **state)
{
    struct fixture *f = *state;
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(f->m, NULL, &s), GSMRT_OK);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 100000;
    gp.temperature = 1.0f;
    gp.top_k = 0;
    gp.top_p = 1.0f;
    gp.min_p = 0.0f;
    gp.ignore_eos = true;   /* the answer never ends by itself: the cancel always lands, however slow the run */
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Tell me a long story."), GSMRT_OK);
    struct canceller c = {s, 5, 0};
    pthread_t th;
    pthread_create(&th, NULL, cancel_thread, &c);
    gsmrt_generate_result r = {.struct_size = sizeof r};
    gsmrt_status st = gsmrt_session_generate(s, &gp, cancel_after, &c, &r);
    pthread_join(th, NULL);
    assert_int_equal(st, GSMRT_OK);
    assert_int_equal(r.stop, GSMRT_STOP_CANCELLED);
    assert_true(r.n_tokens >= 5);   /* the partial answer is kept */
    /* the chat goes on */
    gp.max_tokens = 4;
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Thanks."), GSMRT_OK);
    assert_int_equal(gsmrt_session_generate(s, &gp, NULL, NULL, &r), GSMRT_OK);
    gsmrt_session_destroy(s);
}

static void test_prompt_longer_than_context(void **state)
{
    struct fixture *f = *state;
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 64;
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(f->m, &sp, &s), GSMRT_OK);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 4;
    gsmrt_generate_result r = {.struct_size = sizeof r};
    assert_int_equal(gsmrt_session_complete(s, "Hi", &gp, NULL, NULL, &r), GSMRT_OK);
    uint32_t n_past = r.n_past;
    char long_prompt[2048];
    for (size_t i = 0; i + 1 < sizeof long_prompt; i++) long_prompt[i] = "abc def "[i % 8];
    long_prompt[sizeof long_prompt - 1] = '\0';
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, long_prompt), GSMRT_OK);
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    assert_int_equal(gsmrt_session_generate(s, &gp, NULL, NULL, &r), GSMRT_E_CONTEXT_FULL);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "context holds 64"));
    assert_int_equal(r.n_tokens, 0);
    /* nothing changed: a completion continues from the same cache */
    assert_int_equal(gsmrt_session_complete(s, "Hi", &gp, NULL, NULL, &r), GSMRT_OK);
    assert_true(r.n_prompt_tokens <= 1);   /* "Hi" was still cached */
    (void)n_past;
    gsmrt_session_destroy(s);
}

/* Continuous batching: three sessions (dense, GSM keep, GSM swap, gate 0)
 * completed together give, token for token, what each gives alone; the GSM
 * statistics count gated steps and, under swap, hold fewer KV bytes on the
 * device than dense. */
struct batch_out {
    int32_t ids[3][64];
    uint32_t n[3];
};

static bool collect_indexed(void *user, size_t index, const gsmrt_token *t)
{
    struct batch_out *o = user;
    if (o->n[index] < 64) o->ids[index][o->n[index]++] = t->id;
    return true;
}

static void test_batch_equals_alone(void **state)
{
    struct fixture *f = *state;
    static const char *const settings[3] = {NULL, "dense_fallback=0;low_freq_policy=keep;gate_threshold=0;min_context=16;warmup_steps=0;window=16;hot_pages=0;page_size=8",
                                            "dense_fallback=0;low_freq_policy=swap;gate_threshold=0;min_context=16;warmup_steps=0;"
                                            "window=16;sink_tokens=4;hot_pages=1;page_size=8"};
    static const char *const prompts[3] = {
        "Remember: my code is 4821. The weather was mild and the river ran slow past the mill, where the miller "
        "counted sacks of grain all afternoon.",
        "Once upon a time",
        "The quick brown fox jumps over the lazy dog, and then the dog, rather annoyed, chased the fox around the "
        "farmyard until both of them fell asleep in the hay. What is my code?"};
    gsmrt_session *ss[3];
    for (int i = 0; i < 3; i++) {
        gsmrt_session_params sp;
        gsmrt_session_params_init(&sp, sizeof sp);
        sp.n_ctx = 512;
        sp.gsm_settings = settings[i];
        assert_int_equal(gsmrt_session_create(f->m, &sp, &ss[i]), GSMRT_OK);
    }
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 40;
    gp.temperature = 0;
    gp.ignore_eos = true;
    struct batch_out together = {0};
    gsmrt_generate_result r[3] = {{.struct_size = sizeof r[0]}, {.struct_size = sizeof r[0]}, {.struct_size = sizeof r[0]}};
    assert_int_equal(gsmrt_complete_batch(ss, prompts, 3, &gp, collect_indexed, &together, r), GSMRT_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i].n_tokens, 40);
        gsmrt_session_reset(ss[i]);
        gsmrt_generate_result r1 = {.struct_size = sizeof r1};
        struct ids alone = {{0}, 0};
        assert_int_equal(gsmrt_session_complete(ss[i], prompts[i], &gp, collect, &alone, &r1), GSMRT_OK);
        assert_int_equal(r1.n_tokens, 40);
        for (int k = 0; k < 40; k++)
            if (alone.v[k] != together.ids[i][k])
                fail_msg("sequence %d token %d: %d batched, %d alone", i, k, together.ids[i][k], alone.v[k]);
    }
    gsmrt_gsm_stats st[3];
    for (int i = 0; i < 3; i++) {
        st[i].struct_size = sizeof st[i];
        assert_int_equal(gsmrt_session_gsm_stats(ss[i], &st[i]), GSMRT_OK);
    }
    assert_false(st[0].enabled);
    assert_true(st[1].enabled && !st[1].swap && st[1].steps > 0);
    assert_true(st[2].enabled && st[2].swap && st[2].steps > 0 && st[2].pages_demoted > 0);
    assert_true(st[2].kv_device_bytes < st[0].kv_device_bytes && st[2].kv_host_bytes > 0);
    printf("batch of 3 = alone; KV device bytes: dense %llu, keep %llu, swap %llu (+ %llu host)\n",
           (unsigned long long)st[0].kv_device_bytes, (unsigned long long)st[1].kv_device_bytes,
           (unsigned long long)st[2].kv_device_bytes, (unsigned long long)st[2].kv_host_bytes);
    for (int i = 0; i < 3; i++) gsmrt_session_destroy(ss[i]);
}

/* Head groups from a calibration, picked per request as a profile: with the
 * gate at 0 every grouping is exact, so the answer equals dense attention's
 * token for token; an unknown profile is refused before anything changes. */
static void test_profile_per_request(void **state)
{
    struct fixture *f = *state;
    char calib[512];
    const char *slash = strrchr(model_path(), '/');
    snprintf(calib, sizeof calib, "%.*s/gsm-tiny.calib.json", slash ? (int)(slash - model_path()) : 1,
             slash ? model_path() : ".");
    assert_int_equal(gsmrt_model_load_profile(f->m, "tiny", calib), GSMRT_OK);
    gsmrt_session *dense, *gated;
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 1024;
    assert_int_equal(gsmrt_session_create(f->m, &sp, &dense), GSMRT_OK);
    /* the profile counts pages of 32: the session must use the same pages */
    sp.gsm_settings = "dense_fallback=0;gate_threshold=0;min_context=64;warmup_steps=0;page_size=32";
    assert_int_equal(gsmrt_session_create(f->m, &sp, &gated), GSMRT_OK);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 24;
    gp.temperature = 0;
    gp.ignore_eos = true;
    char prompt[1200];
    size_t n = 0;
    for (int i = 0; n + 60 < sizeof prompt; i++)
        n += (size_t)snprintf(prompt + n, sizeof prompt - n, "Remember: item %d costs %d coins. ", i, 17 * i + 3);
    struct ids a = {{0}, 0}, b = {{0}, 0};
    gsmrt_generate_result r = {.struct_size = sizeof r};
    assert_int_equal(gsmrt_session_complete(dense, prompt, &gp, collect, &a, &r), GSMRT_OK);
    gp.profile = "nope";
    assert_int_equal(gsmrt_session_complete(gated, prompt, &gp, collect, &b, &r), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "tiny"));   /* lists the loaded ones */
    assert_int_equal(b.n, 0);
    gp.profile = "tiny";
    assert_int_equal(gsmrt_session_complete(gated, prompt, &gp, collect, &b, &r), GSMRT_OK);
    assert_true(r.gsm_steps > 0);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.v, b.v, a.n * sizeof a.v[0]);
    gsmrt_session_destroy(dense);
    gsmrt_session_destroy(gated);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ownership),
        cmocka_unit_test(test_older_params_structs),
        cmocka_unit_test(test_cache_type),
        cmocka_unit_test(test_cancel_from_another_thread),
        cmocka_unit_test(test_prompt_longer_than_context),
        cmocka_unit_test(test_batch_equals_alone),
        cmocka_unit_test(test_profile_per_request),
    };
    const struct CMUnitTest threads[] = {cmocka_unit_test(test_two_contexts_two_threads)};
    int failed = cmocka_run_group_tests_name("api", tests, setup, teardown);
    failed += cmocka_run_group_tests_name("api_threads", threads, NULL, NULL);
    if (n_errors) fprintf(stderr, "%d error(s) logged by the library\n", n_errors);
    return failed + n_errors;
}
