/* api_batch.c -- gsmrt_complete_batch (continuous batching, on the
 * scheduler of api_sched.c), teacher forcing and the GSM statistics of a
 * session. */
#include <string.h>

#include "api_gen.h"
#include "api_sched.h"

static gsmrt_status check_batch(gsmrt_session *const *ss, const char *const *prompts, size_t n)
{
    if (!ss || !prompts || n == 0) return GSMRT_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        if (!ss[i] || !prompts[i] || ss[i]->model != ss[0]->model || n > ss[i]->n_batch)
            return GSMRT_E_INVALID_ARGUMENT;
        for (size_t j = 0; j < i; j++)
            if (ss[j] == ss[i]) return GSMRT_E_INVALID_ARGUMENT;
    }
    return GSMRT_OK;
}

/* Relays a sequence's tokens to the caller with its index. */
struct relay {
    gsmrt_batch_token_cb cb;
    void *user;
    size_t index;
};

static bool on_seq_token(void *user, const gsmrt_token *tok)
{
    const struct relay *r = user;
    return r->cb ? r->cb(r->user, r->index, tok) : true;
}

/* A thin wrapper over the scheduler: each session is a pinned slot, the
 * forward pass of the session with the longest context serves all. */
gsmrt_status gsmrt_complete_batch(gsmrt_session *const *ss, const char *const *prompts, size_t n,
                                  const gsmrt_generate_params *params, gsmrt_batch_token_cb on_token, void *user,
                                  gsmrt_generate_result *results)
{
    gsmrt_status st = check_batch(ss, prompts, n);
    if (st != GSMRT_OK) return st;
    gsmrt_context *ctx = ss[0]->model->ctx;
    const gsmrt_allocator *a = ctx->a;
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct relay *relay = gsmrt_mem_calloc(a, n, sizeof *relay);
    gsmrt_status *sts = gsmrt_mem_calloc(a, n, sizeof *sts);
    gsmrt_scheduler *sc = NULL;
    struct gsmrt_forward *f = ss[0]->fwd;
    for (size_t i = 0; i < n; i++)
        if (ss[i]->n_ctx > f->n_ctx) f = ss[i]->fwd;
    if (!relay || !sts) st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "batch");
    if (st == GSMRT_OK) st = gsmrt_sched_create_on(ss, n, f, &sc, &err);
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    if (params && params->struct_size >= sizeof(uint32_t))
        memcpy(&gp, params, params->struct_size < sizeof gp ? params->struct_size : sizeof gp);
    gp.struct_size = sizeof gp;
    for (size_t i = 0; st == GSMRT_OK && i < n; i++) {
        relay[i] = (struct relay){.cb = on_token, .user = user, .index = i};
        gsmrt_request_params rp;
        gsmrt_request_params_init(&rp, sizeof rp);
        rp.prompt = prompts[i];
        rp.gen = gp;
        rp.on_token = on_seq_token;
        rp.user = &relay[i];
        if (results && results[i].struct_size >= sizeof(uint32_t)) {   /* what a sequence that never ran reports */
            uint32_t size = results[i].struct_size;
            memset(&results[i], 0, size < sizeof results[i] ? size : sizeof results[i]);
            results[i].struct_size = size;
        }
        struct gsmrt_err one = {GSMRT_OK, ""};
        sts[i] = gsmrt_sched_submit_pinned(sc, (uint32_t)i, &rp, results ? &results[i] : NULL, &sts[i], &one);
        if (sts[i] != GSMRT_OK && err.status == GSMRT_OK) err = one;
    }
    for (bool busy = st == GSMRT_OK; busy;) {
        gsmrt_status step = gsmrt_scheduler_step(sc, &busy);
        if (step != GSMRT_OK && err.status == GSMRT_OK) gsmrt_err_set(&err, step, "%s", ctx->last_error);
    }
    gsmrt_scheduler_destroy(sc);
    for (size_t i = 0; st == GSMRT_OK && i < n; i++)
        if (sts[i] != GSMRT_OK) st = sts[i];
    gsmrt_mem_free(a, relay);
    gsmrt_mem_free(a, sts);
    if (st != GSMRT_OK && err.status == GSMRT_OK) gsmrt_err_set(&err, st, "%s", ctx->last_error);
    return st == GSMRT_OK ? GSMRT_OK : gsmrt_api_fail(ctx, &err, st);
}

gsmrt_status gsmrt_session_feed(gsmrt_session *s, const int32_t *tokens, size_t n, uint32_t step_tokens,
                                float *logits)
{
    if (!s || (!tokens && n)) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_err err = {GSMRT_OK, ""};
    gsmrt_context *ctx = s->model->ctx;
    uint32_t V = s->model->hp.n_vocab, step = step_tokens && step_tokens < s->n_batch ? step_tokens : s->n_batch;
    /* past.n <= n_ctx always; n is the caller's and may be near SIZE_MAX, so no past.n + n */
    if (n > s->n_ctx - s->past.n)
        return gsmrt_api_fail(ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_CONTEXT_FULL, "%zu tokens after %zu do not fit the context of %u",
                                            n, s->past.n, s->n_ctx));
    for (size_t done = 0; done < n;) {
        uint32_t k = n - done < step ? (uint32_t)(n - done) : step;
        gsmrt_status st = gsmrt_forward_run(s->fwd, s->kv, tokens + done, k, (uint32_t)s->past.n, logits ? k : 1,
                                            s->logits, &err);
        if (st == GSMRT_OK) st = gsmrt_api_past_append(s, tokens + done, k, &err);
        if (st != GSMRT_OK) return gsmrt_api_fail(ctx, &err, st);
        if (logits) {
            memcpy(logits + done * V, s->logits, (size_t)k * V * sizeof *logits);
            /* s->logits keeps the last token's row first, as the generation expects */
            memmove(s->logits, s->logits + (size_t)(k - 1) * V, (size_t)V * sizeof *logits);
        }
        done += k;
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_session_gsm_stats(const gsmrt_session *s, gsmrt_gsm_stats *out)
{
    if (!s || !out || out->struct_size < sizeof(uint32_t)) return GSMRT_E_INVALID_ARGUMENT;
    gsmrt_gsm_stats r;
    memset(&r, 0, sizeof r);
    r.struct_size = out->struct_size;
    if (s->gsm) {
        const struct gsmrt_gsm_totals *g = &s->gsm->stats;
        r.enabled = true;
        r.swap = s->gsm->swap;
        r.steps = g->steps;
        r.pages_active = g->pages_active;
        r.pages_gated = g->pages_listed;
        r.pages_cold = g->pages_cold;
        r.pages_cold_computed = g->pages_cold_computed;
        r.head_gates = g->head_gates;
        r.head_gates_fired = g->head_gates_fired;
        r.bytes_read_hot = g->bytes_hot;
        r.bytes_read_cold = g->bytes_cold;
        r.bytes_read_dense = g->bytes_dense;
        r.prefetch_hits = g->prefetch_hits;
        r.prefetch_misses = g->prefetch_misses;
        r.pages_demoted = g->moves_demoted;
        r.pages_promoted = g->moves_promoted;
        r.pages_prefetched = g->moves_prefetched;
        r.skipped_bound_max = g->skipped_bound_max;
        r.skipped_bound_mean = g->head_gates ? g->skipped_bound_sum / (double)g->head_gates : 0.0;
        r.layer_steps = g->layer_steps;
        r.layer_steps_dense = g->layer_steps_dense;
    }
    r.kv_device_bytes = gsmrt_kv_cache_hot_bytes(s->kv);
    r.kv_host_bytes = gsmrt_kv_cache_cold_bytes(s->kv);
    memcpy(out, &r, out->struct_size < sizeof r ? out->struct_size : sizeof r);
    return GSMRT_OK;
}
