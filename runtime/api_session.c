/* api_session.c -- sessions: the chat history, the cache of evaluated
 * tokens, generation with streaming and cancellation, raw completion and
 * perplexity (public functions of gsmrt.h).
 *
 * Invariant: past.ids[0..past.n) are the tokens whose rows the KV cache
 * holds, at positions 0..past.n-1. A turn that fails or is cancelled before
 * its first token leaves past as a prefix of what it was (rows past the
 * prefix may have been overwritten, and are re-evaluated next time) and the
 * history unchanged. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api_gen.h"
#include "api_internal.h"
#include "gsm.h"
#include "text/utf8.h"

/* Positions a session may ask for: page counts and position arithmetic
 * stay far from 32-bit wrap-around (gsmrt.h, gsmrt_session_params.n_ctx). */
#define GSMRT_SESSION_MAX_CTX (1u << 24)

static gsmrt_context *ctx_of(const gsmrt_session *s) { return s->model->ctx; }
static const gsmrt_allocator *alloc_of(const gsmrt_session *s) { return s->model->ctx->a; }

void gsmrt_session_params_init(gsmrt_session_params *p, size_t size)
{
    if (!p || size < sizeof(uint32_t)) return;
    memset(p, 0, size);
    p->struct_size = (uint32_t)size;
}

void gsmrt_generate_params_init(gsmrt_generate_params *p, size_t size)
{
    gsmrt_generate_params d = {.struct_size = sizeof d,
                               .max_tokens = 256,
                               .temperature = 0.8f,
                               .top_k = 40,
                               .top_p = 0.95f,
                               .min_p = 0.05f,
                               .repeat_penalty = 1.0f,
                               .repeat_last_n = 64,
                               .seed = 0xD5A5EEDull};
    if (!p || size < sizeof(uint32_t)) return;
    memcpy(p, &d, size < sizeof d ? size : sizeof d);
    p->struct_size = (uint32_t)size;
}

void gsmrt_session_destroy(gsmrt_session *s)
{
    if (!s) return;
    const gsmrt_allocator *a = alloc_of(s);
    gsmrt_forward_destroy(s->fwd);
    gsmrt_gsm_decode_destroy(ctx_of(s)->dev, s->gsm);
    gsmrt_kv_cache_destroy(ctx_of(s)->dev, s->kv);
    gsmrt_gsm_calib_destroy(s->calib);
    gsmrt_tokens_free(a, &s->past);
    gsmrt_mem_free(a, s->logits);
    for (uint32_t i = 0; i < s->n_msgs; i++) gsmrt_mem_free(a, s->msgs[i].text);
    gsmrt_mem_free(a, s->msgs);
    s->model->n_sessions--;
    gsmrt_mem_free(a, s);
}

/* The session's GSM configuration: defaults, then the file, then the
 * "key=value;..." settings; *on tells whether GSM runs at all. What this
 * version does not implement yet is refused, not ignored. */
static gsmrt_status gsm_config(gsmrt_context *ctx, const gsmrt_session_params *p, struct gsmrt_gsm_config *cfg,
                               bool *on, struct gsmrt_err *err)
{
    gsmrt_gsm_config_defaults(cfg);
    *on = p->gsm || p->gsm_config || p->gsm_settings;
    if (!*on) return GSMRT_OK;
    gsmrt_status st = GSMRT_OK;
    if (p->gsm_config) st = gsmrt_gsm_config_load(p->gsm_config, ctx->a, cfg, err);
    for (const char *kv = p->gsm_settings; st == GSMRT_OK && kv && *kv;) {
        const char *end = strchr(kv, ';');
        size_t n = end ? (size_t)(end - kv) : strlen(kv);
        char one[512];
        if (n >= sizeof one) return gsmrt_err_set(err, GSMRT_E_FORMAT, "GSM setting too long: %.40s...", kv);
        memcpy(one, kv, n);
        one[n] = '\0';
        if (n) st = gsmrt_gsm_config_set(cfg, one, err);
        kv = end ? end + 1 : kv + n;
    }
    if (st == GSMRT_OK) st = gsmrt_gsm_config_check(cfg, err);
    if (st != GSMRT_OK) return st;
    *on = cfg->enabled;
    return GSMRT_OK;
}

/* The KV cache, and with GSM its tier state: under swap (asked for, or
 * "auto" on a device with separate memories) a small device-local pool and a
 * host-visible one; under keep one dense-sized pool. */
static gsmrt_status gsm_cache(gsmrt_session *s, const struct gsmrt_gsm_config *cfg, struct gsmrt_err *err)
{
    gsmrt_context *ctx = ctx_of(s);
    const struct gsmrt_hparams *hp = &s->model->hp;
    if (!cfg) return gsmrt_kv_cache_create(ctx->dev, hp, s->n_ctx, 32, 0, 0, s->kv_type, &s->kv, err);
    bool uma = ctx->dev->caps.unified_memory;
    bool swap = gsmrt_gsm_config_low_freq(cfg, uma) == GSMRT_GSM_LOW_FREQ_SWAP;
    const char *note = gsmrt_gsm_config_low_freq_note(cfg, uma);
    if (note) gsmrt_log(&ctx->log, GSMRT_LOG_INFO, "GSM: %s", note);
    const struct gsmrt_gsm_calib *calib = s->calib;
    uint32_t n_hot, n_cold;
    gsmrt_gsm_decode_kv_slots(cfg, calib, swap, s->n_ctx, s->n_batch, &n_hot, &n_cold);
    gsmrt_status st =
        gsmrt_kv_cache_create(ctx->dev, hp, s->n_ctx, cfg->page_size, n_hot, n_cold, s->kv_type, &s->kv, err);
    if (st == GSMRT_OK)
        st = gsmrt_gsm_decode_create(ctx->dev, hp, s->kv, cfg, swap && n_cold > 0, calib, &s->gsm, err);
    return st;
}

gsmrt_status gsmrt_session_create(gsmrt_model *model, const gsmrt_session_params *params, gsmrt_session **out)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (out) *out = NULL;
    if (!model || !out || (params && params->struct_size < sizeof(uint32_t))) return GSMRT_E_INVALID_ARGUMENT;
    gsmrt_session_params p;
    gsmrt_session_params_init(&p, sizeof p);
    if (params) memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);
    gsmrt_context *ctx = model->ctx;
    if (p.cache_type != GSMRT_CACHE_DEFAULT && p.cache_type != GSMRT_CACHE_F16 && p.cache_type != GSMRT_CACHE_F32)
        return gsmrt_api_fail(ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT,
                                            "session cache_type %d: GSMRT_CACHE_F16 or GSMRT_CACHE_F32 (or 0, the "
                                            "default F16)",
                                            (int)p.cache_type));
    uint32_t n_ctx = p.n_ctx ? p.n_ctx : (model->hp.n_ctx_train < 4096 ? model->hp.n_ctx_train : 4096);
    uint32_t n_batch = p.n_batch ? p.n_batch : 256;
    if (n_ctx > GSMRT_SESSION_MAX_CTX || n_batch > GSMRT_SESSION_MAX_CTX)
        return gsmrt_api_fail(ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT,
                                            "session: n_ctx %u, n_batch %u (each 1..%u)", n_ctx, n_batch,
                                            GSMRT_SESSION_MAX_CTX));
    if (n_batch > n_ctx) n_batch = n_ctx;
    gsmrt_session *s = gsmrt_mem_calloc(ctx->a, 1, sizeof *s);
    if (!s) return gsmrt_api_fail(ctx, &err, gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "session"));
    s->model = model;
    model->n_sessions++;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->kv_type = p.cache_type == GSMRT_CACHE_F32 ? GSMRT_KV_F32 : GSMRT_KV_F16;
    atomic_init(&s->cancel, false);
    struct gsmrt_gsm_config gcfg;
    bool gsm_on = false;
    gsmrt_status st = gsm_config(ctx, &p, &gcfg, &gsm_on, &err);
    /* the calibration (head groups) the config names, checked against the model */
    if (st == GSMRT_OK && gsm_on && gcfg.calibration_path[0])
        st = gsmrt_api_load_calib(model, gcfg.calibration_path, &s->calib, &err);
    if (st == GSMRT_OK && s->calib) st = gsmrt_api_check_calib_pages(s->calib, gcfg.calibration_path, gcfg.page_size, &err);
    if (st == GSMRT_OK) st = gsm_cache(s, gsm_on ? &gcfg : NULL, &err);
    if (st == GSMRT_OK) st = gsmrt_forward_create(model->dm, n_batch, n_ctx, &s->fwd, &err);
    if (st == GSMRT_OK) s->fwd->gsm = s->gsm;
    if (st == GSMRT_OK && !(s->logits = gsmrt_mem_calloc(ctx->a, (size_t)n_batch * model->hp.n_vocab, 4)))
        st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "logits");
    if (st != GSMRT_OK) {
        gsmrt_session_destroy(s);
        return gsmrt_api_fail(ctx, &err, st);
    }
    *out = s;
    return GSMRT_OK;
}

gsmrt_status gsmrt_session_add_message(gsmrt_session *s, gsmrt_role role, const char *utf8)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    size_t bad;
    if (!s || !utf8 || (unsigned)role > GSMRT_ROLE_ASSISTANT) return GSMRT_E_INVALID_ARGUMENT;
    if (!gsmrt_utf8_valid(utf8, strlen(utf8), &bad))
        return gsmrt_api_fail(ctx_of(s), &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "message: invalid UTF-8 at byte %zu", bad));
    const gsmrt_allocator *a = alloc_of(s);
    if (s->n_msgs == s->cap_msgs) {
        uint32_t cap = s->cap_msgs ? 2 * s->cap_msgs : 8;
        size_t bytes;
        /* the count doubles: stop before it (or the bytes) would wrap */
        struct chat_msg *m = s->cap_msgs < UINT32_MAX / 2 && gsmrt_size_mul(cap, sizeof *m, &bytes)
                                 ? gsmrt_mem_alloc(a, bytes)
                                 : NULL;
        if (!m) return gsmrt_api_fail(ctx_of(s), &err, gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "history"));
        if (s->n_msgs) memcpy(m, s->msgs, s->n_msgs * sizeof *m);
        gsmrt_mem_free(a, s->msgs);
        s->msgs = m;
        s->cap_msgs = cap;
    }
    char *copy = gsmrt_mem_strdup(a, utf8);
    if (!copy) return gsmrt_api_fail(ctx_of(s), &err, gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "message"));
    s->msgs[s->n_msgs++] = (struct chat_msg){role, copy};
    return GSMRT_OK;
}

void gsmrt_session_reset(gsmrt_session *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->n_msgs; i++) gsmrt_mem_free(alloc_of(s), s->msgs[i].text);
    s->n_msgs = 0;
    s->past.n = 0;
}

void gsmrt_session_cancel(gsmrt_session *s)
{
    if (s) atomic_store(&s->cancel, true);
}

gsmrt_status gsmrt_session_generate(gsmrt_session *s, const gsmrt_generate_params *params, gsmrt_token_cb on_token,
                                    void *user, gsmrt_generate_result *result)
{
    if (!s) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_err err = {GSMRT_OK, ""};
    gsmrt_generate_params p;
    struct gsmrt_gen g;
    gsmrt_gen_init(&g, s, params, &p, on_token, user);
    struct gsmrt_tokens prompt = {NULL, 0, 0};
    gsmrt_status st = gsmrt_api_chat_prompt(s, s->n_msgs, true, &prompt, &err);
    if (st == GSMRT_OK) st = gsmrt_gen_run(&g, prompt.ids, prompt.n, &err);
    /* The answer joins the history when generation started. */
    if (st == GSMRT_OK) st = gsmrt_session_add_message(s, GSMRT_ROLE_ASSISTANT, g.answer ? g.answer : "");
    gsmrt_tokens_free(alloc_of(s), &prompt);
    return gsmrt_gen_finish(&g, st, &err, result);
}

gsmrt_status gsmrt_session_complete(gsmrt_session *s, const char *prompt_text, const gsmrt_generate_params *params,
                                    gsmrt_token_cb on_token, void *user, gsmrt_generate_result *result)
{
    if (!s || !prompt_text) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_err err = {GSMRT_OK, ""};
    gsmrt_generate_params p;
    struct gsmrt_gen g;
    gsmrt_gen_init(&g, s, params, &p, on_token, user);
    struct gsmrt_tokens prompt = {NULL, 0, 0};
    gsmrt_status st =
        gsmrt_tokenizer_encode(s->model->tok, prompt_text, strlen(prompt_text), true, p.parse_special, &prompt, &err);
    if (st == GSMRT_OK) st = gsmrt_gen_run(&g, prompt.ids, prompt.n, &err);
    gsmrt_tokens_free(alloc_of(s), &prompt);
    return gsmrt_gen_finish(&g, st, &err, result);
}

gsmrt_status gsmrt_session_perplexity(gsmrt_session *s, const char *text, size_t len, uint32_t n_ctx,
                                      gsmrt_progress_cb progress, void *user, gsmrt_perplexity_result *result)
{
    if (!s || !text || !result || result->struct_size < sizeof(uint32_t)) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_err err = {GSMRT_OK, ""};
    const gsmrt_allocator *a = alloc_of(s);
    uint32_t V = s->model->hp.n_vocab;
    int32_t bos = gsmrt_tokenizer_bos(s->model->tok);
    if (n_ctx < 4 || n_ctx > s->n_ctx)
        return gsmrt_api_fail(ctx_of(s), &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "perplexity window %u (allowed 4..%u)",
                                            n_ctx, s->n_ctx));
    struct gsmrt_tokens toks = {NULL, 0, 0};
    gsmrt_status st = gsmrt_tokenizer_encode(s->model->tok, text, len, true, false, &toks, &err);
    uint32_t n_windows = st == GSMRT_OK ? (uint32_t)(toks.n / n_ctx) : 0;
    if (st == GSMRT_OK && n_windows == 0)
        st = gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "the text has %zu tokens, fewer than one window of %u",
                           toks.n, n_ctx);
    int32_t *win = st == GSMRT_OK ? gsmrt_mem_alloc(a, n_ctx * sizeof *win) : NULL;
    if (st == GSMRT_OK && !win) st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "perplexity window");
    double nll = 0.0;
    uint32_t scored = 0, first = n_ctx / 2;
    for (uint32_t w = 0; w < n_windows && st == GSMRT_OK; w++) {
        memcpy(win, toks.ids + (size_t)w * n_ctx, n_ctx * sizeof *win);
        if (bos >= 0) win[0] = bos;
        /* position j's logits predict token j + 1; score j in [first, n_ctx - 2] */
        for (uint32_t done = 0; done < n_ctx && st == GSMRT_OK;) {
            if (atomic_load(&s->cancel)) {
                st = gsmrt_err_set(&err, GSMRT_E_CANCELLED, "cancelled");
                break;
            }
            uint32_t step = n_ctx - done < s->n_batch ? n_ctx - done : s->n_batch;
            st = gsmrt_forward_run(s->fwd, s->kv, win + done, step, done, step, s->logits, &err);
            for (uint32_t t = 0; st == GSMRT_OK && t < step; t++) {
                uint32_t j = done + t;
                if (j < first || j > n_ctx - 2) continue;
                const float *l = s->logits + (size_t)t * V;
                double m = l[0], sum = 0.0;
                for (uint32_t v = 1; v < V; v++) m = l[v] > m ? l[v] : m;
                for (uint32_t v = 0; v < V; v++) sum += exp((double)l[v] - m);
                nll -= (double)l[win[j + 1]] - m - log(sum);
                scored++;
            }
            done += step;
        }
        if (progress) progress(user, "perplexity", (float)(w + 1) / (float)n_windows);
    }
    s->past.n = 0;   /* the cache now holds the last window, not the chat */
    atomic_store(&s->cancel, false);
    gsmrt_mem_free(a, win);
    gsmrt_tokens_free(a, &toks);
    if (st != GSMRT_OK) return gsmrt_api_fail(ctx_of(s), &err, st);
    gsmrt_perplexity_result r = {result->struct_size, exp(nll / scored), nll, scored, n_windows};
    memcpy(result, &r, result->struct_size < sizeof r ? result->struct_size : sizeof r);
    return GSMRT_OK;
}
