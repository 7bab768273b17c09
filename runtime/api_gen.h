/* api_gen.h -- one generation (a chat turn or a completion) of a session, in
 * phases so that several can run together (api_batch.c): begin (prompt into
 * the cache), then per token: next (sample, stream, decide whether to stop)
 * and, when the token is fed back, the step that evaluates it; end.
 * gsmrt_gen_run does all of it for one session. */
#ifndef GSMRT_API_GEN_H
#define GSMRT_API_GEN_H

#include "api_internal.h"
#include "model/gsm_decode.h"
#include "sample/sampler.h"
#include "text/utf8.h"

/* Prompt tokens per forward step of a generation by default
 * (gsmrt_generate_params.cancel_step 0): a cancel waits for at most one
 * such step (issue 12: within 64 prompt tokens). */
#define GSMRT_GEN_CANCEL_STEP 64u

struct gsmrt_gen {
    gsmrt_session *s;
    const gsmrt_generate_params *p;
    gsmrt_token_cb cb;
    void *user;
    gsmrt_generate_result r;
    char *answer;                  /* generated text (for the history) */
    size_t answer_len, answer_cap;
    struct gsmrt_gsm_totals gsm0;   /* GSM totals before the call */
    size_t keep;                   /* past.n to fall back to when the call fails (a prefix of the cache) */
    struct gsmrt_sampler *smp;
    struct gsmrt_utf8_stream u8;
    double t0, t_first;
    uint32_t i;                    /* tokens sampled so far */
    bool done;
};

/* Records that toks[0..n) are now in the cache after past. */
gsmrt_status gsmrt_api_past_append(gsmrt_session *s, const int32_t *toks, size_t n, struct gsmrt_err *err);

void gsmrt_gen_init(struct gsmrt_gen *g, gsmrt_session *s, const gsmrt_generate_params *params,
                    gsmrt_generate_params *storage, gsmrt_token_cb cb, void *user);
/* Brings the cache to `prompt` (re-using the longest common prefix). On
 * failure past is a prefix of what it was and nothing else changed. */
gsmrt_status gsmrt_gen_begin(struct gsmrt_gen *g, const int32_t *prompt, size_t n_prompt, struct gsmrt_err *err);
/* gsmrt_gen_begin in two halves, for a caller that evaluates the prompt
 * itself (the scheduler, in chunks batched with other sequences): prepare
 * checks the prompt, applies the request's GSM choices and cuts past to the
 * longest common prefix (g->keep; the rest, prompt[keep..n), is to be
 * evaluated); start, once the prompt is in the cache, sets the sampler up. */
gsmrt_status gsmrt_gen_prepare(struct gsmrt_gen *g, const int32_t *prompt, size_t n_prompt, struct gsmrt_err *err);
gsmrt_status gsmrt_gen_start(struct gsmrt_gen *g, size_t n_prompt, struct gsmrt_err *err);
/* Samples the next token from the session's logits and streams it; sets
 * g->done (with r.stop) when the generation ends instead. *tok is the token
 * to feed back when !g->done. */
gsmrt_status gsmrt_gen_next(struct gsmrt_gen *g, int32_t *tok, struct gsmrt_err *err);
/* The token's row is now in the cache (logits in s->logits): past grows. */
gsmrt_status gsmrt_gen_fed(struct gsmrt_gen *g, int32_t tok, struct gsmrt_err *err);
/* Flushes the text, fills the result's figures. */
gsmrt_status gsmrt_gen_end(struct gsmrt_gen *g, gsmrt_status st, struct gsmrt_err *err);
/* begin, next/feed until done, end. */
gsmrt_status gsmrt_gen_run(struct gsmrt_gen *g, const int32_t *prompt, size_t n_prompt, struct gsmrt_err *err);
/* Frees the answer, rolls a failed call back, copies the result out, and
 * records the error on the context. */
gsmrt_status gsmrt_gen_finish(struct gsmrt_gen *g, gsmrt_status st, struct gsmrt_err *err,
                              gsmrt_generate_result *result);

#endif
