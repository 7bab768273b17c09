/* test_api_rollback.c -- a failed chat turn leaves no trace, token for token.
 * Run A is three greedy turns. Run B is turn 1, then turn 2 failing (cancelled
 * from another thread before its first token, a host allocation failing at
 * every point of the turn, a prompt longer than the context), then turn 2
 * and turn 3 again: B's generated ids, prompt-token counts and n_past must
 * equal A's exactly. The header keeps the user message of a failed call in
 * the history ("history and cache as before the call"), so B's turn 2 is the
 * same generate called again; after the context-full failure only
 * gsmrt_session_reset and a replay of the history can drop the long message.
 * A turn cancelled after some tokens keeps its partial answer (documented):
 * the next turn equals a session given that text with add_message.
 * Public API only; the context's allocator is tests/support/fail_alloc, so
 * every test also proves the session frees all its host memory. */
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
#include "support/fail_alloc.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

#define MAX_TOKENS 24

static const char *const user_msg[3] = {
    "Remember this: the key is under the blue pot.",
    "Tell me something wise.",
    "Where is the key?",
};
/* the brief's settings, with every page but the newest gated so the gate runs on short chats */
static const char *const gsm_settings =
    "min_context=64;warmup_steps=0;gate_threshold=0;window=0;hot_pages=0;sink_tokens=0";

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

/* What one generate call produced. */
struct turn {
    gsmrt_status st;
    gsmrt_generate_result r;
    int32_t ids[MAX_TOKENS];
    uint32_t n;
    char text[MAX_TOKENS * 64 + 1];   /* the streamed answer */
    size_t len;
    gsmrt_session *s;
    uint32_t cancel_after;            /* cancel from the callback after this many tokens; 0: never */
};

static bool on_token(void *user, const gsmrt_token *tok)
{
    struct turn *t = user;
    if (t->n < MAX_TOKENS) t->ids[t->n++] = tok->id;
    if (t->len + tok->text_len < sizeof t->text) {
        memcpy(t->text + t->len, tok->text, tok->text_len);
        t->len += tok->text_len;
    }
    if (t->cancel_after && t->n == t->cancel_after) gsmrt_session_cancel(t->s);
    return true;
}

/* Adds `msg` as a user message (when not NULL) and generates greedily. */
static void turn(gsmrt_session *s, const char *msg, uint32_t cancel_after, struct turn *t)
{
    memset(t, 0, sizeof *t);
    t->s = s;
    t->cancel_after = cancel_after;
    if (msg) assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, msg), GSMRT_OK);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.temperature = 0;
    gp.max_tokens = MAX_TOKENS;
    t->r.struct_size = sizeof t->r;
    t->st = gsmrt_session_generate(s, &gp, on_token, t, &t->r);
}

static void assert_same_turn(const struct turn *b, const struct turn *a, const char *what)
{
    if (b->st != GSMRT_OK) fail_msg("%s: %s", what, gsmrt_status_name(b->st));
    if (b->n != a->n || memcmp(b->ids, a->ids, a->n * sizeof a->ids[0]) != 0 || b->r.n_past != a->r.n_past ||
        b->r.n_prompt_tokens != a->r.n_prompt_tokens || b->r.gsm_steps != a->r.gsm_steps)
        fail_msg("%s: %u tokens, n_past %u, %u prompt tokens, %u GSM steps (\"%s\"); the reference: %u, %u, %u, %u "
                 "(\"%s\")",
                 what, b->n, b->r.n_past, b->r.n_prompt_tokens, b->r.gsm_steps, b->text, a->n, a->r.n_past,
                 a->r.n_prompt_tokens, a->r.gsm_steps, a->text);
}

struct fixture {
    struct fail_alloc fa;
    gsmrt_context *ctx;
    gsmrt_model *m;
    struct turn ref[2][3];   /* run A: [dense, GSM][turn] */
};

static gsmrt_session *session(struct fixture *f, bool gsm)
{
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 512;
    if (gsm) {
        sp.gsm = true;
        sp.gsm_settings = gsm_settings;
    }
    gsmrt_session *s = NULL;
    if (gsmrt_session_create(f->m, &sp, &s) != GSMRT_OK) fail_msg("session: %s", gsmrt_context_last_error(f->ctx));
    return s;
}

/* Run A, once for the group. It also leaves the context warm (pipelines
 * built), so what a test allocates is the session's own. */
static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    fail_alloc_init(&f->fa, -1);
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.pipeline_cache_path = "";
    cp.validation = 1;
    cp.log_cb = count_errors;
    cp.allocator = fail_alloc_allocator(&f->fa);
    char err[256];
    if (gsmrt_context_create(&cp, &f->ctx, err, sizeof err) != GSMRT_OK) {
        print_error("context: %s\n", err);
        return -1;
    }
    if (gsmrt_model_load(f->ctx, model_path(), NULL, &f->m) != GSMRT_OK) {
        print_error("model: %s\n", gsmrt_context_last_error(f->ctx));
        return -1;
    }
    for (int g = 0; g < 2; g++) {
        gsmrt_session *s = session(f, g == 1);
        for (int i = 0; i < 3; i++) {
            turn(s, user_msg[i], 0, &f->ref[g][i]);
            if (f->ref[g][i].st != GSMRT_OK || f->ref[g][i].n == 0) {
                print_error("run A turn %d: %s\n", i + 1, gsmrt_context_last_error(f->ctx));
                return -1;
            }
        }
        gsmrt_session_destroy(s);
    }
    /* the GSM run must have gone through the gate, or the GSM check proves nothing */
    if (f->ref[1][2].r.gsm_steps == 0) {
        print_error("run A with GSM: no decode step went through the gate\n");
        return -1;
    }
    for (int i = 0; i < 3; i++)
        printf("run A turn %d: %u tokens, n_past %u: \"%s\"\n", i + 1, f->ref[0][i].n, f->ref[0][i].r.n_past,
               f->ref[0][i].text);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (gsmrt_model_destroy(f->m) != GSMRT_OK || gsmrt_context_destroy(f->ctx) != GSMRT_OK) return -1;
    int rc = f->fa.live == 0 && n_errors == 0 ? 0 : -1;
    if (f->fa.live) print_error("%ld host blocks (%ld bytes) never freed\n", f->fa.live, f->fa.live_bytes);
    free(f);
    return rc;
}

/* Turn 2 again after the failure, then turn 3: both as in run A. */
static void finish_run_b(struct fixture *f, gsmrt_session *s, bool gsm, const char *variant)
{
    struct turn t;
    char what[128];
    turn(s, NULL, 0, &t);
    snprintf(what, sizeof what, "%s: turn 2 after the failure", variant);
    assert_same_turn(&t, &f->ref[gsm][1], what);
    turn(s, user_msg[2], 0, &t);
    snprintf(what, sizeof what, "%s: turn 3", variant);
    assert_same_turn(&t, &f->ref[gsm][2], what);
}

struct canceller {
    gsmrt_session *s;
    int done;
};

/* Cancels over and over until the call returns: the first cancel that lands
 * after the call began stops it during the prompt. */
static void *cancel_until_done(void *arg)
{
    struct canceller *c = arg;
    while (!__atomic_load_n(&c->done, __ATOMIC_SEQ_CST)) {
        gsmrt_session_cancel(c->s);
        nanosleep(&(struct timespec){0, 50000}, NULL);
    }
    return NULL;
}

static void cancel_before_first_token(struct fixture *f, bool gsm)
{
    const char *variant = gsm ? "cancelled before the first token, GSM" : "cancelled before the first token";
    gsmrt_session *s = session(f, gsm);
    long live = f->fa.live;
    struct turn t;
    turn(s, user_msg[0], 0, &t);
    assert_same_turn(&t, &f->ref[gsm][0], "turn 1");
    struct canceller c = {s, 0};
    pthread_t th;
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, user_msg[1]), GSMRT_OK);
    assert_int_equal(pthread_create(&th, NULL, cancel_until_done, &c), 0);
    turn(s, NULL, 0, &t);
    __atomic_store_n(&c.done, 1, __ATOMIC_SEQ_CST);
    pthread_join(th, NULL);
    /* a cancel still in flight after the call returned must not touch the retry */
    gsmrt_session_cancel(s);
    if (t.st != GSMRT_E_CANCELLED || t.n != 0)
        fail_msg("%s: %s, stop %d after %u tokens", variant, gsmrt_status_name(t.st), (int)t.r.stop, t.n);
    finish_run_b(f, s, gsm, variant);
    gsmrt_session_destroy(s);
    assert_true(f->fa.live <= live);
}

static void test_cancel_before_first_token(void **state) { cancel_before_first_token(*state, false); }
static void test_cancel_before_first_token_gsm(void **state) { cancel_before_first_token(*state, true); }

/* Every host allocation of turn 2 fails once, in turn: before the prompt,
 * during it, after tokens were streamed, while the answer joins the history. */
static void test_allocation_fails_mid_turn(void **state)
{
    struct fixture *f = *state;
    gsmrt_session *s = session(f, false);
    struct turn t;
    turn(s, user_msg[0], 0, &t);
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, user_msg[1]), GSMRT_OK);
    long calls0 = f->fa.calls;
    turn(s, NULL, 0, &t);
    assert_int_equal(t.st, GSMRT_OK);
    long count = f->fa.calls - calls0, after_tokens = 0;
    gsmrt_session_destroy(s);
    assert_true(count > 0);
    for (long i = 0; i < count; i++) {
        char variant[96];
        snprintf(variant, sizeof variant, "allocation %ld of %ld in turn 2 failed", i, count);
        s = session(f, false);
        turn(s, user_msg[0], 0, &t);
        assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, user_msg[1]), GSMRT_OK);
        f->fa.fail_at = f->fa.calls + i;
        turn(s, NULL, 0, &t);
        f->fa.fail_at = -1;
        if (t.st != GSMRT_E_OUT_OF_HOST_MEMORY) fail_msg("%s: %s", variant, gsmrt_status_name(t.st));
        after_tokens += t.n > 0;
        finish_run_b(f, s, false, variant);
        gsmrt_session_destroy(s);
    }
    /* the sweep reached the tokens: the answer buffer and the history entry
     * are allocated once the answer streams */
    assert_true(after_tokens > 0);
    printf("turn 2: %ld host allocations, each failed once (%ld after tokens were streamed): turns 2 and 3 "
           "equal run A\n",
           count, after_tokens);
}

static void test_prompt_longer_than_context(void **state)
{
    struct fixture *f = *state;
    gsmrt_session *s = session(f, false);
    struct turn t1, t;
    turn(s, user_msg[0], 0, &t1);
    static char long_msg[8192];
    for (size_t i = 0; i + 1 < sizeof long_msg; i++) long_msg[i] = "abc def "[i % 8];
    turn(s, long_msg, 0, &t);
    assert_int_equal(t.st, GSMRT_E_CONTEXT_FULL);
    assert_int_equal(t.n, 0);
    assert_non_null(strstr(gsmrt_context_last_error(f->ctx), "context holds 512"));
    /* the long message stays (history as before the call): every turn fails
     * the same way until the history is rebuilt without it */
    turn(s, NULL, 0, &t);
    assert_int_equal(t.st, GSMRT_E_CONTEXT_FULL);
    gsmrt_session_reset(s);
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, user_msg[0]), GSMRT_OK);
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_ASSISTANT, t1.text), GSMRT_OK);
    assert_int_equal(gsmrt_session_add_message(s, GSMRT_ROLE_USER, user_msg[1]), GSMRT_OK);
    turn(s, NULL, 0, &t);
    /* the cache was rebuilt in one prompt, so only the ids are the same */
    if (t.st != GSMRT_OK || t.n != f->ref[0][1].n || memcmp(t.ids, f->ref[0][1].ids, t.n * sizeof t.ids[0]))
        fail_msg("context full: turn 2 after the replay: \"%s\"; run A: \"%s\"", t.text, f->ref[0][1].text);
    turn(s, user_msg[2], 0, &t);
    assert_same_turn(&t, &f->ref[0][2], "context full: turn 3");
    gsmrt_session_destroy(s);
}

/* Cancelled after 3 tokens from the token callback: the partial answer is
 * kept, and turn 3 equals a session that was given that text instead. */
static void test_cancel_keeps_partial_answer(void **state)
{
    struct fixture *f = *state;
    gsmrt_session *b = session(f, false), *ref = session(f, false);
    struct turn t, t_ref;
    turn(b, user_msg[0], 0, &t);
    turn(ref, user_msg[0], 0, &t_ref);
    turn(b, user_msg[1], 3, &t);
    assert_int_equal(t.st, GSMRT_OK);
    assert_int_equal(t.r.stop, GSMRT_STOP_CANCELLED);
    assert_int_equal(t.n, 3);
    assert_memory_equal(t.ids, f->ref[0][1].ids, 3 * sizeof t.ids[0]);   /* the start of run A's answer */
    assert_int_equal(gsmrt_session_add_message(ref, GSMRT_ROLE_USER, user_msg[1]), GSMRT_OK);
    assert_int_equal(gsmrt_session_add_message(ref, GSMRT_ROLE_ASSISTANT, t.text), GSMRT_OK);
    turn(b, user_msg[2], 0, &t);
    turn(ref, user_msg[2], 0, &t_ref);
    assert_int_equal(t_ref.st, GSMRT_OK);
    if (t.n != t_ref.n || memcmp(t.ids, t_ref.ids, t.n * sizeof t.ids[0]) || t.r.n_past != t_ref.r.n_past)
        fail_msg("after a partial answer: \"%s\" (n_past %u); with the text added: \"%s\" (n_past %u)", t.text,
                 t.r.n_past, t_ref.text, t_ref.r.n_past);
    gsmrt_session_destroy(b);
    gsmrt_session_destroy(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancel_before_first_token),
        cmocka_unit_test(test_cancel_before_first_token_gsm),
        cmocka_unit_test(test_allocation_fails_mid_turn),
        cmocka_unit_test(test_prompt_longer_than_context),
        cmocka_unit_test(test_cancel_keeps_partial_answer),
    };
    int failed = cmocka_run_group_tests_name("api_rollback", tests, setup, teardown);
    if (n_errors) fprintf(stderr, "%d error(s) logged by the library\n", n_errors);
    return failed + n_errors;
}
