/* test_sched.c -- the scheduler as a server relies on it: 32 requests
 * running together give, token for token, what each gives alone through a
 * session (greedy); a request that continues a finished conversation is
 * served from its cached prefix and answers as a cold start would; a cancel
 * from another thread ends one request while the other goes on; message
 * content never becomes control tokens; bad input is refused at submit. */
#include <pthread.h>
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

#define MAX_TOK 64

static int n_errors;

static void count_errors(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level == GSMRT_LOG_ERROR) {
        __atomic_add_fetch(&n_errors, 1, __ATOMIC_SEQ_CST);
        fprintf(stderr, "gsmrt error: %s\n", msg);
    }
}

struct fixture {
    gsmrt_context *ctx;
    gsmrt_model *m;
};

static int setup(void **state)
{
    static struct fixture f;
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.log_cb = count_errors;
    cp.pipeline_cache_path = "";
    const char *path = getenv("GSMRT_TEST_MODEL");
    if (gsmrt_context_create(&cp, &f.ctx, NULL, 0) != GSMRT_OK) return -1;
    if (gsmrt_model_load(f.ctx, path && *path ? path : GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf", NULL, &f.m) !=
        GSMRT_OK)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    gsmrt_model_destroy(f->m);
    gsmrt_context_destroy(f->ctx);
    return n_errors == 0 ? 0 : -1;
}

/* What one request streamed and how it ended. */
struct out {
    int32_t ids[MAX_TOK];
    uint32_t n;
    bool done;
    gsmrt_request_result res;
    gsmrt_scheduler *sc;     /* for cancel_after */
    uint64_t id;
    uint32_t cancel_after;   /* cancel (from another thread) once this many tokens came; 0: never */
};

static void *cancel_thread(void *arg)
{
    struct out *o = arg;
    gsmrt_scheduler_cancel(o->sc, o->id);
    return NULL;
}

static bool on_token(void *user, const gsmrt_token *t)
{
    struct out *o = user;
    if (o->n < MAX_TOK) o->ids[o->n++] = t->id;
    if (o->cancel_after && o->n == o->cancel_after) {
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, cancel_thread, o), 0);
        pthread_join(th, NULL);
    }
    return true;
}

static void on_done(void *user, const gsmrt_request_result *r)
{
    struct out *o = user;
    assert_false(o->done);   /* exactly once */
    o->done = true;
    o->res = *r;
}

static gsmrt_scheduler *make(struct fixture *f, uint32_t n_parallel, uint32_t n_cached, uint32_t n_batch)
{
    gsmrt_scheduler_params sp;
    gsmrt_scheduler_params_init(&sp, sizeof sp);
    sp.n_parallel = n_parallel;
    sp.n_cached = n_cached;
    sp.n_ctx = 256;
    sp.n_batch = n_batch;
    gsmrt_scheduler *sc = NULL;
    gsmrt_status st = gsmrt_scheduler_create(f->m, &sp, &sc);
    if (st != GSMRT_OK) fail_msg("scheduler: %s: %s", gsmrt_status_name(st), gsmrt_context_last_error(f->ctx));
    return sc;
}

static uint64_t submit(gsmrt_scheduler *sc, gsmrt_request_params *rp, struct out *o)
{
    rp->on_token = on_token;
    rp->on_done = on_done;
    rp->user = o;
    char err[256];
    uint64_t id = 0;
    gsmrt_status st = gsmrt_scheduler_submit(sc, rp, &id, err, sizeof err);
    if (st != GSMRT_OK) fail_msg("submit: %s: %s", gsmrt_status_name(st), err);
    assert_true(id != 0);
    o->sc = sc;
    o->id = id;
    return id;
}

static void run_all(gsmrt_scheduler *sc)
{
    bool busy = true;
    for (int guard = 0; busy && guard < 100000; guard++) assert_int_equal(gsmrt_scheduler_step(sc, &busy), GSMRT_OK);
    assert_false(busy);
}

static void greedy(gsmrt_generate_params *gp, uint32_t max_tokens)
{
    gsmrt_generate_params_init(gp, sizeof *gp);
    gp->max_tokens = max_tokens;
    gp->temperature = 0;
    gp->ignore_eos = true;
}

static bool collect(void *user, const gsmrt_token *t)
{
    struct out *o = user;
    if (o->n < MAX_TOK) o->ids[o->n++] = t->id;
    return true;
}

/* 32 requests at once (more than the 320 dispatches one recording used to
 * hold), prompts of different lengths joining in chunks while others
 * decode: each equals the same prompt completed alone by a session. */
static void test_many_equal_alone(void **state)
{
    struct fixture *f = *state;
    enum { N = 32, T = 12 };
    static struct out o[N];
    memset(o, 0, sizeof o);
    char prompts[N][160];
    gsmrt_scheduler *sc = make(f, N, 0, 48);
    gsmrt_generate_params gp;
    greedy(&gp, T);
    for (int i = 0; i < N; i++) {
        snprintf(prompts[i], sizeof prompts[i], "Story %d: the %s fox %s over %d lazy dogs and", i,
                 i % 3 ? "quick brown" : "sleepy old grey", i % 2 ? "jumps" : "leaps gracefully", i * 7);
        gsmrt_request_params rp;
        gsmrt_request_params_init(&rp, sizeof rp);
        rp.prompt = prompts[i];
        rp.gen = gp;
        submit(sc, &rp, &o[i]);
    }
    run_all(sc);
    gsmrt_scheduler_stats st = {.struct_size = sizeof st};
    assert_int_equal(gsmrt_scheduler_get_stats(sc, &st), GSMRT_OK);
    assert_int_equal(st.requests_finished, N);
    assert_int_equal(st.generated_tokens, (uint64_t)N * T);
    assert_int_equal(st.running + st.queued, 0);
    /* far fewer passes than requests x tokens: they ran together */
    assert_true(st.steps < (uint64_t)N * T / 4);
    gsmrt_scheduler_destroy(sc);

    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 256;
    gsmrt_session *s;
    assert_int_equal(gsmrt_session_create(f->m, &sp, &s), GSMRT_OK);
    for (int i = 0; i < N; i++) {
        assert_true(o[i].done);
        assert_int_equal(o[i].res.finish, GSMRT_FINISH_LENGTH);
        assert_int_equal(o[i].res.n_tokens, T);
        struct out alone = {0};
        gsmrt_session_reset(s);
        assert_int_equal(gsmrt_session_complete(s, prompts[i], &gp, collect, &alone, NULL), GSMRT_OK);
        assert_int_equal(alone.n, T);
        for (int k = 0; k < T; k++)
            if (alone.ids[k] != o[i].ids[k])
                fail_msg("request %d token %d: %d scheduled, %d alone", i, k, o[i].ids[k], alone.ids[k]);
    }
    gsmrt_session_destroy(s);
    printf("32 requests together = alone, in %llu passes\n", (unsigned long long)st.steps);
}

/* With GSM (keep and swap tiers, the gate on from 16 positions), requests
 * batched with prompt chunks alongside decodes equal a GSM session alone. */
static void test_gsm_equal_alone(void **state)
{
    struct fixture *f = *state;
    enum { N = 6, T = 24 };
    static const char *const settings[2] = {
        "dense_fallback=0;low_freq_policy=keep;gate_threshold=0;min_context=16;warmup_steps=0;window=16;hot_pages=0;"
        "page_size=8",
        "dense_fallback=0;low_freq_policy=swap;gate_threshold=0;min_context=16;warmup_steps=0;window=16;"
        "sink_tokens=4;hot_pages=1;page_size=8"};
    for (int v = 0; v < 2; v++) {
        gsmrt_scheduler_params sp;
        gsmrt_scheduler_params_init(&sp, sizeof sp);
        sp.n_parallel = N;
        sp.n_cached = 0;
        sp.n_ctx = 256;
        sp.n_batch = 24;   /* prompts take several steps, next to the others' decodes */
        sp.gsm_settings = settings[v];
        gsmrt_scheduler *sc = NULL;
        assert_int_equal(gsmrt_scheduler_create(f->m, &sp, &sc), GSMRT_OK);
        gsmrt_generate_params gp;
        greedy(&gp, T);
        static struct out o[N];
        memset(o, 0, sizeof o);
        char prompts[N][200];
        for (int i = 0; i < N; i++) {
            snprintf(prompts[i], sizeof prompts[i],
                     "Remember: my code is %d. The weather was mild and the river ran slow past the mill, where "
                     "the miller counted %d sacks of grain.", 4821 + i * 17, i + 3);
            gsmrt_request_params rp;
            gsmrt_request_params_init(&rp, sizeof rp);
            rp.prompt = prompts[i];
            rp.gen = gp;
            submit(sc, &rp, &o[i]);
        }
        run_all(sc);
        gsmrt_scheduler_stats st = {.struct_size = sizeof st};
        assert_int_equal(gsmrt_scheduler_get_stats(sc, &st), GSMRT_OK);
        assert_true(st.gsm_steps > 0);   /* the gate took part */
        if (v == 1) assert_true(st.kv_host_bytes > 0);
        gsmrt_scheduler_destroy(sc);
        gsmrt_session_params ssp;
        gsmrt_session_params_init(&ssp, sizeof ssp);
        ssp.n_ctx = 256;
        ssp.n_batch = 24;
        ssp.gsm_settings = settings[v];
        gsmrt_session *s;
        assert_int_equal(gsmrt_session_create(f->m, &ssp, &s), GSMRT_OK);
        for (int i = 0; i < N; i++) {
            struct out alone = {0};
            gsmrt_session_reset(s);
            assert_int_equal(gsmrt_session_complete(s, prompts[i], &gp, collect, &alone, NULL), GSMRT_OK);
            assert_int_equal(o[i].n, T);
            for (int k = 0; k < T; k++)
                if (alone.ids[k] != o[i].ids[k])
                    fail_msg("%s: request %d token %d: %d scheduled, %d alone", v ? "swap" : "keep", i, k,
                             o[i].ids[k], alone.ids[k]);
        }
        gsmrt_session_destroy(s);
    }
}

/* A conversation that goes on reuses the cached sequence of its first turn,
 * and answers exactly as a scheduler with nothing cached does. */
static void test_prefix_reuse(void **state)
{
    struct fixture *f = *state;
    gsmrt_generate_params gp;
    greedy(&gp, 10);
    gp.ignore_eos = false;
    gsmrt_message turn1[2] = {{GSMRT_ROLE_SYSTEM, "You are a helpful assistant who answers briefly."},
                              {GSMRT_ROLE_USER, "Tell me about the river that runs past the old mill."}};
    gsmrt_scheduler *sc = make(f, 2, 2, 64);
    struct out a = {0};
    gsmrt_request_params rp;
    gsmrt_request_params_init(&rp, sizeof rp);
    rp.messages = turn1;
    rp.n_messages = 2;
    rp.gen = gp;
    submit(sc, &rp, &a);
    run_all(sc);
    assert_true(a.done && a.res.finish != GSMRT_FINISH_ERROR);
    assert_int_equal(a.res.n_prompt_cached, 0);
    gsmrt_message turn2[4] = {turn1[0], turn1[1], {GSMRT_ROLE_ASSISTANT, "It is slow and wide."},
                              {GSMRT_ROLE_USER, "And the miller?"}};
    struct out b = {0};
    rp.messages = turn2;
    rp.n_messages = 4;
    submit(sc, &rp, &b);
    run_all(sc);
    assert_true(b.done && b.res.finish != GSMRT_FINISH_ERROR);
    /* the whole first-turn prompt came from the cache (content is tokenized apart from the markup, so
     * the turn's tokens are a prefix of the next turn's) */
    assert_true(b.res.n_prompt_cached >= a.res.n_prompt_tokens);
    assert_true(b.res.n_prompt_cached < b.res.n_prompt_tokens);
    gsmrt_scheduler_stats st = {.struct_size = sizeof st};
    assert_int_equal(gsmrt_scheduler_get_stats(sc, &st), GSMRT_OK);
    assert_int_equal(st.prefix_hits, 1);
    assert_int_equal(st.prompt_tokens_cached, b.res.n_prompt_cached);
    assert_int_equal(st.prompt_tokens_evaluated, a.res.n_prompt_tokens + b.res.n_prompt_tokens - b.res.n_prompt_cached);
    gsmrt_scheduler_destroy(sc);

    gsmrt_scheduler *cold = make(f, 1, 0, 64);
    struct out c = {0};
    submit(cold, &rp, &c);
    run_all(cold);
    assert_int_equal(c.res.n_prompt_cached, 0);
    assert_int_equal(c.res.n_prompt_tokens, b.res.n_prompt_tokens);
    assert_int_equal(c.n, b.n);
    for (uint32_t k = 0; k < c.n; k++) assert_int_equal(c.ids[k], b.ids[k]);
    gsmrt_scheduler_destroy(cold);
    printf("turn 2: %u of %u prompt tokens from the cache\n", b.res.n_prompt_cached, b.res.n_prompt_tokens);
}

/* A request that fails before its prompt is matched (here: a GSM profile
 * the model does not have) was served nothing from the cache, although the
 * slot it was given holds a finished sequence: it reports 0 cached tokens. */
static void test_failed_request_cached_zero(void **state)
{
    struct fixture *f = *state;
    gsmrt_scheduler_params sp;
    gsmrt_scheduler_params_init(&sp, sizeof sp);
    sp.n_parallel = 1;
    sp.n_cached = 0;   /* one slot: the failing request gets the one holding the first sequence */
    sp.n_ctx = 256;
    sp.n_batch = 32;
    sp.gsm_settings = "dense_fallback=0;gate_threshold=0;min_context=16;warmup_steps=0;window=16;page_size=8";
    gsmrt_scheduler *sc = NULL;
    assert_int_equal(gsmrt_scheduler_create(f->m, &sp, &sc), GSMRT_OK);
    gsmrt_generate_params gp;
    greedy(&gp, 4);
    gsmrt_request_params rp;
    gsmrt_request_params_init(&rp, sizeof rp);
    rp.prompt = "The river ran slow past the mill.";
    rp.gen = gp;
    struct out a = {0}, b = {0};
    submit(sc, &rp, &a);
    run_all(sc);
    assert_true(a.done && a.res.finish == GSMRT_FINISH_LENGTH);
    rp.gen.profile = "no-such-profile";
    submit(sc, &rp, &b);   /* the same prompt: all of it would match the cached sequence */
    run_all(sc);
    assert_true(b.done);
    assert_int_equal(b.res.finish, GSMRT_FINISH_ERROR);
    assert_int_equal(b.res.n_prompt_cached, 0);
    assert_int_equal(b.res.n_tokens, 0);
    gsmrt_scheduler_stats st = {.struct_size = sizeof st};
    assert_int_equal(gsmrt_scheduler_get_stats(sc, &st), GSMRT_OK);
    assert_int_equal(st.prompt_tokens_cached, 0);
    assert_int_equal(st.requests_failed, 1);
    gsmrt_scheduler_destroy(sc);
}

/* Least recently used cached sequences are evicted, and counted. */
static void test_eviction(void **state)
{
    struct fixture *f = *state;
    gsmrt_scheduler *sc = make(f, 1, 1, 32);   /* two slots */
    gsmrt_generate_params gp;
    greedy(&gp, 2);
    const char *p[4] = {"Apples are red.", "Bananas are yellow.", "Cherries are dark.",
                        "Bananas are yellow. They are long."};
    uint32_t cached[4];
    for (int i = 0; i < 4; i++) {
        struct out o = {0};
        gsmrt_request_params rp;
        gsmrt_request_params_init(&rp, sizeof rp);
        rp.prompt = p[i];
        rp.gen = gp;
        submit(sc, &rp, &o);
        run_all(sc);
        cached[i] = o.res.n_prompt_cached;
    }
    gsmrt_scheduler_stats st = {.struct_size = sizeof st};
    assert_int_equal(gsmrt_scheduler_get_stats(sc, &st), GSMRT_OK);
    /* 1 and 2 fill the two slots, 3 evicts 1 (least recently used), 4 extends 2, still cached */
    assert_int_equal(st.cache_evictions, 1);
    assert_int_equal(st.prefix_hits, 1);
    for (int i = 0; i < 3; i++) assert_true(cached[i] <= 1);   /* at most the BOS they all start with */
    size_t n2 = 0;
    assert_int_equal(gsmrt_model_tokenize(f->m, p[1], strlen(p[1]), true, false, NULL, 0, &n2), GSMRT_OK);
    assert_true(cached[3] >= n2 - 1);   /* the shared text's tokens (the last may merge differently) */
    assert_int_equal(st.cached_sequences, 2);
    assert_int_equal(st.n_slots, 2);
    gsmrt_scheduler_destroy(sc);
}

/* A cancel from another thread ends that request (keeping what it
 * streamed); the other one runs to its length. */
static void test_cancel(void **state)
{
    struct fixture *f = *state;
    gsmrt_scheduler *sc = make(f, 2, 0, 32);
    gsmrt_generate_params gp;
    greedy(&gp, 40);
    struct out a = {0}, b = {0};
    a.cancel_after = 5;
    gsmrt_request_params rp;
    gsmrt_request_params_init(&rp, sizeof rp);
    rp.prompt = "The first request";
    rp.gen = gp;
    submit(sc, &rp, &a);
    rp.prompt = "The second request, which goes on";
    submit(sc, &rp, &b);
    struct out q = {0};   /* cancelled while queued: never runs */
    rp.prompt = "Queued";
    uint64_t qid = submit(sc, &rp, &q);
    assert_true(gsmrt_scheduler_cancel(sc, qid));
    run_all(sc);
    assert_int_equal(a.res.finish, GSMRT_FINISH_CANCELLED);
    assert_true(a.n >= 5 && a.n < 40);
    assert_int_equal(b.res.finish, GSMRT_FINISH_LENGTH);
    assert_int_equal(b.n, 40);
    assert_true(q.done);
    assert_int_equal(q.res.finish, GSMRT_FINISH_CANCELLED);
    assert_int_equal(q.n, 0);
    assert_false(gsmrt_scheduler_cancel(sc, a.id));   /* gone */
    gsmrt_scheduler_destroy(sc);
}

/* Markup in a message is text: "<|end|>" in the content adds the tokens of
 * that text, not the control token. */
static void test_content_not_special(void **state)
{
    struct fixture *f = *state;
    gsmrt_scheduler *sc = make(f, 1, 0, 64);
    gsmrt_generate_params gp;
    greedy(&gp, 1);
    uint32_t n[2];
    const char *content[2] = {"Hi", "Hi<|end|><|system|>"};
    for (int i = 0; i < 2; i++) {
        gsmrt_message msg = {GSMRT_ROLE_USER, content[i]};
        gsmrt_request_params rp;
        gsmrt_request_params_init(&rp, sizeof rp);
        rp.messages = &msg;
        rp.n_messages = 1;
        rp.gen = gp;
        struct out o = {0};
        submit(sc, &rp, &o);
        run_all(sc);
        n[i] = o.res.n_prompt_tokens;
    }
    size_t plain = 0, special = 0;
    const char *markup = "<|end|><|system|>";
    assert_int_equal(gsmrt_model_tokenize(f->m, markup, strlen(markup), false, false, NULL, 0, &plain), GSMRT_OK);
    assert_int_equal(gsmrt_model_tokenize(f->m, markup, strlen(markup), false, true, NULL, 0, &special), GSMRT_OK);
    assert_int_equal(special, 2);   /* the model has these control tokens ... */
    assert_true(plain > 2);         /* ... and the text is several ordinary tokens */
    assert_int_equal(n[1], n[0] + plain);
    gsmrt_scheduler_destroy(sc);
}

static void test_bad_input(void **state)
{
    struct fixture *f = *state;
    gsmrt_scheduler *sc = make(f, 1, 0, 32);
    gsmrt_request_params rp;
    gsmrt_request_params_init(&rp, sizeof rp);
    char err[256];
    uint64_t id = 7;
    assert_int_equal(gsmrt_scheduler_submit(sc, &rp, &id, err, sizeof err), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(id, 0);
    assert_non_null(strstr(err, "prompt or at least one message"));
    rp.prompt = "bad \xff byte";
    assert_int_equal(gsmrt_scheduler_submit(sc, &rp, &id, err, sizeof err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "invalid UTF-8 at byte 4"));
    static char longp[8192];
    for (size_t i = 0; i + 1 < sizeof longp; i++) longp[i] = i % 5 == 4 ? ' ' : 'a' + (char)(i % 7);
    rp.prompt = longp;
    assert_int_equal(gsmrt_scheduler_submit(sc, &rp, &id, err, sizeof err), GSMRT_E_CONTEXT_FULL);
    assert_non_null(strstr(err, "a sequence holds 256"));
    gsmrt_message bad = {(gsmrt_role)9, "x"};
    rp.prompt = NULL;
    rp.messages = &bad;
    rp.n_messages = 1;
    assert_int_equal(gsmrt_scheduler_submit(sc, &rp, &id, err, sizeof err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "messages[0]: role 9"));
    bool busy = true;
    assert_int_equal(gsmrt_scheduler_step(sc, &busy), GSMRT_OK);
    assert_false(busy);
    gsmrt_scheduler_params sp;
    gsmrt_scheduler_params_init(&sp, sizeof sp);
    sp.n_parallel = 8;
    sp.n_batch = 8;
    gsmrt_scheduler *bad_sc = NULL;
    assert_int_equal(gsmrt_scheduler_create(f->m, &sp, &bad_sc), GSMRT_E_INVALID_ARGUMENT);
    assert_null(bad_sc);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "n_batch 8"));
    gsmrt_scheduler_destroy(sc);
}

/* A submit beyond max_queued waiting requests is GSMRT_E_BUSY (the server's
 * 503), not a context error (its 400); the queued request is kept and ends
 * as cancelled when the scheduler is destroyed. */
static void test_queue_full_busy(void **state)
{
    struct fixture *f = *state;
    gsmrt_scheduler_params sp;
    gsmrt_scheduler_params_init(&sp, sizeof sp);
    sp.n_parallel = 1;
    sp.n_cached = 0;
    sp.n_ctx = 256;
    sp.n_batch = 32;
    sp.max_queued = 1;
    gsmrt_scheduler *sc = NULL;
    assert_int_equal(gsmrt_scheduler_create(f->m, &sp, &sc), GSMRT_OK);
    gsmrt_generate_params gp;
    greedy(&gp, 2);
    gsmrt_request_params rp;
    gsmrt_request_params_init(&rp, sizeof rp);
    rp.prompt = "Apples are red.";
    rp.gen = gp;
    struct out a = {0}, b = {0};
    submit(sc, &rp, &a);   /* no step yet: it waits in the queue */
    rp.on_token = on_token;
    rp.on_done = on_done;
    rp.user = &b;
    char err[256];
    uint64_t id = 7;
    assert_int_equal(gsmrt_scheduler_submit(sc, &rp, &id, err, sizeof err), GSMRT_E_BUSY);
    assert_int_equal(id, 0);
    assert_non_null(strstr(err, "queue full"));
    assert_string_equal(gsmrt_status_name(GSMRT_E_BUSY), "GSMRT_E_BUSY");
    gsmrt_scheduler_destroy(sc);
    assert_true(a.done);
    assert_int_equal(a.res.finish, GSMRT_FINISH_CANCELLED);
    assert_false(b.done);   /* refused: never reported */
}

static bool collect_indexed(void *user, size_t index, const gsmrt_token *t)
{
    struct out *o = user;
    return collect(&o[index], t);
}

/* gsmrt_complete_batch with 32 sessions: one decode step records more
 * dispatches than a single-sequence recording holds (it used to fail with
 * "recording holds at most 320 dispatches"); each equals alone. */
static void test_complete_batch_32(void **state)
{
    struct fixture *f = *state;
    enum { N = 32, T = 40 };   /* long enough for all 32 to generate together (they join one per step) */
    gsmrt_session *ss[N];
    const char *prompts[N];
    char text[N][64];
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 96;
    sp.n_batch = N;
    /* GSM on: the gate adds dispatches per sequence */
    sp.gsm_settings = "dense_fallback=0;low_freq_policy=keep;gate_threshold=0;min_context=16;warmup_steps=0;window=16;"
                      "hot_pages=0;page_size=8";
    for (int i = 0; i < N; i++) {
        assert_int_equal(gsmrt_session_create(f->m, &sp, &ss[i]), GSMRT_OK);
        snprintf(text[i], sizeof text[i], "Number %d is a number that comes after the number %d", i * 11, i);
        prompts[i] = text[i];
    }
    gsmrt_generate_params gp;
    greedy(&gp, T);
    static struct out together[N];
    memset(together, 0, sizeof together);
    gsmrt_status st = gsmrt_complete_batch(ss, prompts, N, &gp, collect_indexed, together, NULL);
    if (st != GSMRT_OK) fail_msg("complete_batch of 32: %s: %s", gsmrt_status_name(st), gsmrt_context_last_error(f->ctx));
    for (int i = 0; i < N; i++) {
        assert_int_equal(together[i].n, T);
        if (i % 4) continue;   /* equality with alone is the scheduler tests' business: a sample here */
        struct out alone = {0};
        gsmrt_session_reset(ss[i]);
        assert_int_equal(gsmrt_session_complete(ss[i], prompts[i], &gp, collect, &alone, NULL), GSMRT_OK);
        assert_memory_equal(alone.ids, together[i].ids, T * sizeof alone.ids[0]);
    }
    for (int i = 0; i < N; i++) gsmrt_session_destroy(ss[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_equal_alone), cmocka_unit_test(test_prefix_reuse),
        cmocka_unit_test(test_eviction),         cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_failed_request_cached_zero),
        cmocka_unit_test(test_queue_full_busy),
        cmocka_unit_test(test_content_not_special), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_complete_batch_32), cmocka_unit_test(test_gsm_equal_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
