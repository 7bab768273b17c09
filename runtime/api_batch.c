/* api_batch.c -- gsmrt_complete_batch (continuous batching) and the GSM
 * statistics of a session. */
#include <string.h>

#include "api_gen.h"

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

struct batch {
    struct gsmrt_gen *gen;          /* [n] */
    gsmrt_generate_params *params;  /* [n] */
    struct gsmrt_tokens *prompt;    /* [n] */
    gsmrt_status *st;               /* [n] */
    bool *joined;                   /* [n] */
    int32_t *tok;                   /* [n] */
    struct gsmrt_seq_step *steps;   /* [n] */
    size_t *who;                    /* [n] the sequence of each step entry */
    gsmrt_batch_token_cb cb;
    void *user;
};

/* Relays a sequence's tokens to the caller with its index. */
struct relay {
    struct batch *b;
    size_t index;
};

static bool on_seq_token(void *user, const gsmrt_token *tok)
{
    const struct relay *r = user;
    return r->b->cb ? r->b->cb(r->b->user, r->index, tok) : true;
}

/* One decode step of every sequence still generating; false when none is. */
static bool step_all(struct batch *b, gsmrt_session *const *ss, size_t n, struct gsmrt_forward *f,
                     struct gsmrt_err *err)
{
    uint32_t k = 0;
    size_t *who = b->who;
    for (size_t i = 0; i < n; i++) {
        struct gsmrt_gen *g = &b->gen[i];
        if (!b->joined[i] || g->done || b->st[i] != GSMRT_OK) continue;
        b->st[i] = gsmrt_gen_next(g, &b->tok[i], err);
        if (b->st[i] != GSMRT_OK || g->done) continue;
        gsmrt_session *s = ss[i];
        b->steps[k] = (struct gsmrt_seq_step){s->kv, s->gsm, &b->tok[i], 1, (uint32_t)s->past.n, 1, s->logits, 0};
        who[k++] = i;
    }
    if (k == 0) return false;
    gsmrt_status st = gsmrt_forward_run_batch(f, b->steps, k, err);
    for (uint32_t j = 0; j < k; j++) {
        size_t i = who[j];
        b->st[i] = st == GSMRT_OK ? gsmrt_gen_fed(&b->gen[i], b->tok[i], err) : st;
    }
    return true;
}

gsmrt_status gsmrt_complete_batch(gsmrt_session *const *ss, const char *const *prompts, size_t n,
                                  const gsmrt_generate_params *params, gsmrt_batch_token_cb on_token, void *user,
                                  gsmrt_generate_result *results)
{
    gsmrt_status st = check_batch(ss, prompts, n);
    if (st != GSMRT_OK) return st;
    gsmrt_context *ctx = ss[0]->model->ctx;
    const gsmrt_allocator *a = ctx->a;
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct batch b = {NULL};
    b.cb = on_token;
    b.user = user;
    b.gen = gsmrt_mem_calloc(a, n, sizeof *b.gen);
    b.params = gsmrt_mem_calloc(a, n, sizeof *b.params);
    b.prompt = gsmrt_mem_calloc(a, n, sizeof *b.prompt);
    b.st = gsmrt_mem_calloc(a, n, sizeof *b.st);
    b.joined = gsmrt_mem_calloc(a, n, sizeof *b.joined);
    b.tok = gsmrt_mem_calloc(a, n, sizeof *b.tok);
    b.steps = gsmrt_mem_calloc(a, n, sizeof *b.steps);
    b.who = gsmrt_mem_calloc(a, n, sizeof *b.who);
    struct relay *relay = gsmrt_mem_calloc(a, n, sizeof *relay);
    if (!b.gen || !b.params || !b.prompt || !b.st || !b.joined || !b.tok || !b.steps || !b.who || !relay) {
        st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "batch");
        goto out;
    }
    /* the forward pass of the session with the longest context serves all */
    struct gsmrt_forward *f = ss[0]->fwd;
    for (size_t i = 0; i < n; i++) {
        if (ss[i]->n_ctx > f->n_ctx) f = ss[i]->fwd;
        relay[i] = (struct relay){&b, i};
        gsmrt_gen_init(&b.gen[i], ss[i], params, &b.params[i], on_seq_token, &relay[i]);
        b.st[i] = gsmrt_tokenizer_encode(ss[i]->model->tok, prompts[i], strlen(prompts[i]), true,
                                         b.params[i].parse_special,
                                         &b.prompt[i], &err);
    }
    /* a sequence joins per step (its prompt in its own steps), then all step together */
    size_t next = 0;
    for (;;) {
        if (next < n) {
            if (b.st[next] == GSMRT_OK)   /* reuses what the cache holds of the prompt */
                b.st[next] = gsmrt_gen_begin(&b.gen[next], b.prompt[next].ids, b.prompt[next].n, &err);
            b.joined[next++] = true;
        }
        if (!step_all(&b, ss, n, f, &err) && next == n) break;
    }
    for (size_t i = 0; i < n; i++) {
        b.st[i] = gsmrt_gen_end(&b.gen[i], b.st[i], &err);
        if (b.st[i] != GSMRT_OK && st == GSMRT_OK) st = b.st[i];
    }
out:
    for (size_t i = 0; b.gen && i < n; i++) {
        if (b.prompt) gsmrt_tokens_free(a, &b.prompt[i]);
        if (b.gen[i].s) gsmrt_gen_finish(&b.gen[i], b.st ? b.st[i] : st, &err, results ? &results[i] : NULL);
    }
    void *all[] = {b.gen, b.params, b.prompt, b.st, b.joined, b.tok, b.steps, b.who, relay};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gsmrt_mem_free(a, all[i]);
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
