/* api_gen.c -- one generation of a session in phases (see api_gen.h). */
#include <string.h>
#include <time.h>

#include "api_gen.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static gsmrt_context *ctx_of(const gsmrt_session *s) { return s->model->ctx; }
static const gsmrt_allocator *alloc_of(const gsmrt_session *s) { return s->model->ctx->a; }

/* past grows only once the rows are in the cache */
gsmrt_status gsmrt_api_past_append(gsmrt_session *s, const int32_t *toks, size_t n, struct gsmrt_err *err)
{
    const gsmrt_allocator *a = alloc_of(s);
    size_t need, bytes;
    if (!gsmrt_size_add(s->past.n, n, &need)) return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "token history");
    if (need > s->past.cap) {
        size_t cap = s->past.cap ? s->past.cap : 256;
        while (cap < need) cap = cap > SIZE_MAX / 2 ? need : 2 * cap;
        int32_t *ids = gsmrt_size_mul(cap, sizeof *ids, &bytes) ? gsmrt_mem_alloc(a, bytes) : NULL;
        if (!ids) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "token history");
        if (s->past.n) memcpy(ids, s->past.ids, s->past.n * sizeof *ids);
        gsmrt_mem_free(a, s->past.ids);
        s->past.ids = ids;
        s->past.cap = cap;
    }
    memcpy(s->past.ids + s->past.n, toks, n * sizeof *toks);
    s->past.n += n;
    return GSMRT_OK;
}

/* Evaluates toks[0..n) after past, at most `most` tokens per step (at most
 * n_batch), leaving the logits of the last token in s->logits.
 * Cancellation is checked between steps: a cancel takes effect within one
 * step of a prompt. */
static gsmrt_status eval(gsmrt_session *s, const int32_t *toks, size_t n, uint32_t most, struct gsmrt_err *err)
{
    if (most == 0 || most > s->n_batch) most = s->n_batch;
    for (size_t done = 0; done < n;) {
        if (atomic_load(&s->cancel)) return gsmrt_err_set(err, GSMRT_E_CANCELLED, "cancelled");
        uint32_t step = n - done < most ? (uint32_t)(n - done) : most;
        uint32_t pos0 = (uint32_t)s->past.n;
        gsmrt_status st = gsmrt_forward_run(s->fwd, s->kv, toks + done, step, pos0, 1, s->logits, err);
        if (st == GSMRT_OK) st = gsmrt_api_past_append(s, toks + done, step, err);
        if (st != GSMRT_OK) return st;
        done += step;
    }
    return GSMRT_OK;
}

static bool append(struct gsmrt_gen *g, const char *text, size_t n)
{
    const gsmrt_allocator *a = alloc_of(g->s);
    if (g->answer_len + n + 1 > g->answer_cap) {
        size_t cap = g->answer_cap ? 2 * g->answer_cap : 256;
        while (cap < g->answer_len + n + 1) cap *= 2;
        char *d = gsmrt_mem_alloc(a, cap);
        if (!d) return false;
        if (g->answer_len) memcpy(d, g->answer, g->answer_len);
        gsmrt_mem_free(a, g->answer);
        g->answer = d;
        g->answer_cap = cap;
    }
    memcpy(g->answer + g->answer_len, text, n);
    g->answer_len += n;
    g->answer[g->answer_len] = '\0';
    return true;
}

void gsmrt_gen_init(struct gsmrt_gen *g, gsmrt_session *s, const gsmrt_generate_params *params,
                    gsmrt_generate_params *storage, gsmrt_token_cb cb, void *user)
{
    memset(g, 0, sizeof *g);
    gsmrt_generate_params_init(storage, sizeof *storage);
    if (params && params->struct_size >= sizeof(uint32_t))
        memcpy(storage, params, params->struct_size < sizeof *storage ? params->struct_size : sizeof *storage);
    g->s = s;
    g->keep = s->past.n;
    atomic_store(&s->cancel, false);   /* a cancel sent while nothing ran is a no-op */
    g->p = storage;
    g->cb = cb;
    g->user = user;
}

gsmrt_status gsmrt_gen_prepare(struct gsmrt_gen *g, const int32_t *prompt, size_t n_prompt, struct gsmrt_err *err)
{
    gsmrt_session *s = g->s;
    g->t0 = now_ms();
    if (s->gsm) g->gsm0 = s->gsm->stats;
    if (n_prompt == 0) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "empty prompt");
    if (n_prompt >= s->n_ctx)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL,
                             "the prompt has %zu tokens; the context holds %u (leave room for the answer)",
                             n_prompt, s->n_ctx);
    if (s->gsm) s->gsm->cfg.enabled = !g->p->dense;   /* the gate for this request, or dense attention */
    if (s->gsm) {   /* the request's profile, else the session's own calibration */
        const struct gsmrt_gsm_calib *calib = s->calib;
        gsmrt_status st = GSMRT_OK;
        if (g->p->profile && *g->p->profile) st = gsmrt_api_pick_profile(s->model, g->p->profile, &calib, err);
        if (st == GSMRT_OK && calib && calib != s->calib)
            st = gsmrt_api_check_calib_pages(calib, g->p->profile, s->gsm->cfg.page_size, err);
        if (st == GSMRT_OK && calib != s->gsm->calib) st = gsmrt_gsm_decode_set_calib(s->gsm, calib, err);
        if (st != GSMRT_OK) return st;
    }
    size_t k = 0;
    while (k < s->past.n && k < n_prompt && s->past.ids[k] == prompt[k]) k++;
    if (k == n_prompt) k--;   /* the last prompt token is evaluated again for its logits */
    /* a new turn: what the earlier turns left becomes a demotion candidate */
    if (s->gsm && k > 0) gsmrt_gsm_decode_new_turn(s->gsm);
    s->past.n = k;
    g->keep = k;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gen_start(struct gsmrt_gen *g, size_t n_prompt, struct gsmrt_err *err)
{
    gsmrt_session *s = g->s;
    g->r.n_prompt_tokens = (uint32_t)(n_prompt - g->keep);
    g->r.prompt_ms = now_ms() - g->t0;
    struct gsmrt_sampler_params sp = {g->p->temperature, g->p->top_k, g->p->top_p, g->p->min_p,
                                      g->p->repeat_penalty, (int32_t)g->p->repeat_last_n, g->p->seed};
    gsmrt_utf8_stream_init(&g->u8);
    g->r.stop = GSMRT_STOP_MAX_TOKENS;
    return gsmrt_sampler_create(alloc_of(s), &sp, s->model->hp.n_vocab, &g->smp, err);
}

gsmrt_status gsmrt_gen_begin(struct gsmrt_gen *g, const int32_t *prompt, size_t n_prompt, struct gsmrt_err *err)
{
    gsmrt_session *s = g->s;
    gsmrt_status st = gsmrt_gen_prepare(g, prompt, n_prompt, err);
    if (st != GSMRT_OK) return st;
    size_t k = g->keep;
    uint32_t step = g->p->cancel_step ? g->p->cancel_step : GSMRT_GEN_CANCEL_STEP;
    st = eval(s, prompt + k, n_prompt - k, step, err);
    if (st != GSMRT_OK) {
        if (s->past.n > k) s->past.n = k;
        return st;
    }
    return gsmrt_gen_start(g, n_prompt, err);
}

gsmrt_status gsmrt_gen_next(struct gsmrt_gen *g, int32_t *tok, struct gsmrt_err *err)
{
    gsmrt_session *s = g->s;
    if (g->i >= g->p->max_tokens) {
        g->done = true;
        return GSMRT_OK;
    }
    if (atomic_load(&s->cancel)) {
        g->done = true;
        /* before the first token the turn fails (and is rolled back) */
        if (g->i == 0) return gsmrt_err_set(err, GSMRT_E_CANCELLED, "cancelled");
        g->r.stop = GSMRT_STOP_CANCELLED;
        return GSMRT_OK;
    }
    gsmrt_status st = gsmrt_sampler_sample(g->smp, s->logits, tok, err);
    if (st != GSMRT_OK) return st;
    gsmrt_sampler_accept(g->smp, *tok);
    if (g->i++ == 0) g->t_first = now_ms();
    if (!g->p->ignore_eos && gsmrt_tokenizer_is_eog(s->model->tok, *tok)) {
        g->r.stop = GSMRT_STOP_EOS;
        g->done = true;
        return GSMRT_OK;
    }
    const char *piece;
    size_t piece_len;
    st = gsmrt_tokenizer_piece(s->model->tok, *tok, false, &piece, &piece_len, err);
    if (st != GSMRT_OK) return st;
    g->r.n_tokens++;
    /* whole characters only; a piece longer than the buffer is fed in parts */
    char text[64];
    size_t n_text = 0;
    for (size_t off = 0; off < piece_len;) {
        size_t part = piece_len - off < 16 ? piece_len - off : 16;
        size_t w = gsmrt_utf8_stream_push(&g->u8, piece + off, part, text);
        if (!append(g, text, w)) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "answer");
        n_text += w;
        off += part;
    }
    gsmrt_token t = {*tok, g->answer + g->answer_len - n_text, n_text, g->i - 1};
    if (g->cb && !g->cb(g->user, &t)) {
        g->r.stop = GSMRT_STOP_CALLBACK;
        g->done = true;
    } else if (s->past.n + 1 >= s->n_ctx) {
        g->r.stop = GSMRT_STOP_CONTEXT_END;
        g->done = true;
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_gen_fed(struct gsmrt_gen *g, int32_t tok, struct gsmrt_err *err)
{
    return gsmrt_api_past_append(g->s, &tok, 1, err);
}

gsmrt_status gsmrt_gen_end(struct gsmrt_gen *g, gsmrt_status st, struct gsmrt_err *err)
{
    gsmrt_session *s = g->s;
    char text[64];
    size_t w = gsmrt_utf8_stream_flush(&g->u8, text);
    if (w && !append(g, text, w) && st == GSMRT_OK) st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "answer");
    gsmrt_sampler_destroy(g->smp);
    g->smp = NULL;
    double t_end = now_ms();
    if (s->gsm) {
        g->r.gsm_steps = (uint32_t)(s->gsm->stats.steps - g->gsm0.steps);
        g->r.gsm_cold_pages = s->gsm->stats.pages_listed - g->gsm0.pages_listed;
        g->r.gsm_cold_computed = s->gsm->stats.pages_cold_computed - g->gsm0.pages_cold_computed;
    }
    g->r.first_token_ms = g->t_first ? g->t_first - g->t0 : 0;
    g->r.generate_ms = g->t_first ? t_end - g->t_first : 0;
    g->r.n_past = (uint32_t)s->past.n;
    return st;
}

gsmrt_status gsmrt_gen_run(struct gsmrt_gen *g, const int32_t *prompt, size_t n_prompt, struct gsmrt_err *err)
{
    gsmrt_status st = gsmrt_gen_begin(g, prompt, n_prompt, err);
    if (st != GSMRT_OK) return st;
    while (st == GSMRT_OK) {
        int32_t tok;
        st = gsmrt_gen_next(g, &tok, err);
        if (st != GSMRT_OK || g->done) break;
        st = eval(g->s, &tok, 1, 1, err);
        if (st == GSMRT_E_CANCELLED) {   /* cancelled while the step waited: keep the partial answer */
            g->r.stop = GSMRT_STOP_CANCELLED;
            st = GSMRT_OK;
            break;
        }
    }
    return gsmrt_gen_end(g, st, err);
}

gsmrt_status gsmrt_gen_finish(struct gsmrt_gen *g, gsmrt_status st, struct gsmrt_err *err,
                              gsmrt_generate_result *result)
{
    gsmrt_session *s = g->s;
    if (s->gsm) s->gsm->cfg.enabled = true;   /* a dense request (params.dense) is for that request only */
    gsmrt_mem_free(alloc_of(s), g->answer);
    atomic_store(&s->cancel, false);
    /* A failed turn leaves no trace in the cache, even after streamed tokens:
     * a retry re-evaluates exactly what the first attempt would have. */
    if (st != GSMRT_OK && s->past.n > g->keep) s->past.n = g->keep;
    if (result && result->struct_size >= sizeof(uint32_t)) {
        g->r.struct_size = result->struct_size;
        memcpy(result, &g->r, result->struct_size < sizeof g->r ? result->struct_size : sizeof g->r);
    }
    return st == GSMRT_OK ? GSMRT_OK : gsmrt_api_fail(ctx_of(s), err, st);
}

