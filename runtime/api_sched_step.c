/* api_sched_step.c -- one step of the scheduler (gsmrt_scheduler_step, on
 * the owning thread): queued requests admitted to free slots (the one with
 * the longest cached prefix, else the least recently used), every running
 * request's entry planned (a decode token, or a chunk of its prompt within
 * the token budget), one batched forward pass, then each request advanced
 * or finished. The state is in api_sched_state.h. */
#include <string.h>

#include "api_sched_state.h"

/* A cached sequence is worth reusing when it shares more than a BOS. */
#define MIN_REUSE 2

/* The idle slot for a prompt: the one sharing the longest prefix with it
 * (at least MIN_REUSE tokens; ties to the least recently used), else the
 * least recently used (never used ones first). *shared: that prefix's
 * length, 0 when none is reused. */
static uint32_t pick_slot(const gsmrt_scheduler *sc, const struct gsmrt_tokens *prompt, size_t *shared)
{
    uint32_t best = UINT32_MAX, lru = UINT32_MAX;
    size_t best_n = 0;
    for (uint32_t i = 0; i < sc->n_slots; i++) {
        const struct sched_slot *sl = &sc->slots[i];
        if (sl->req) continue;
        const struct gsmrt_tokens *past = &sl->s->past;
        size_t k = 0;
        while (k < past->n && k < prompt->n && past->ids[k] == prompt->ids[k]) k++;
        if (k >= MIN_REUSE && (k > best_n || (k == best_n && sl->last_used < sc->slots[best].last_used)))
            best = i, best_n = k;
        if (lru == UINT32_MAX || sl->last_used < sc->slots[lru].last_used) lru = i;
    }
    *shared = best_n;
    return best != UINT32_MAX ? best : lru;
}

/* Moves queued requests to free slots (FIFO); cancelled ones leave. */
static void admit(gsmrt_scheduler *sc)
{
    for (;;) {
        pthread_mutex_lock(&sc->mu);
        struct sched_req *r = sc->q_head;
        bool room = sc->n_running < sc->n_parallel;
        if (r && (room || atomic_load(&r->cancel))) {
            sc->q_head = r->next;
            if (!sc->q_head) sc->q_tail = NULL;
            sc->n_queued--;
        } else {
            r = NULL;
        }
        pthread_mutex_unlock(&sc->mu);
        if (!r) return;
        r->next = NULL;
        if (atomic_load(&r->cancel)) {
            gsmrt_sched_report(sc, r, GSMRT_E_CANCELLED, "cancelled", NULL);
            continue;
        }
        size_t shared = 0;
        uint32_t si = r->pin != NO_PIN ? r->pin : pick_slot(sc, &r->prompt, &shared);
        struct sched_slot *slot = &sc->slots[si];
        bool evicts = shared == 0 && slot->s->past.n > 0;
        r->slot = si;
        r->t_admit = gsmrt_sched_now_ms();
        slot->req = r;
        gsmrt_gen_init(&r->gen, slot->s, &r->p.gen, &r->gen_params, r->p.on_token, r->p.user);
        struct gsmrt_err err = {GSMRT_OK, ""};
        gsmrt_status st = gsmrt_gen_prepare(&r->gen, r->prompt.ids, r->prompt.n, &err);
        r->phase = REQ_PROMPT;
        pthread_mutex_lock(&sc->mu);
        sc->running[sc->n_running++] = r;
        if (st == GSMRT_OK) {   /* before prepare, gen.keep is the slot's whole cached sequence */
            r->n_cached = (uint32_t)r->gen.keep;
            sc->stats.prompt_tokens_cached += r->n_cached;
            if (shared >= MIN_REUSE) sc->stats.prefix_hits++;
            if (evicts) sc->stats.cache_evictions++;
        }
        pthread_mutex_unlock(&sc->mu);
        if (st != GSMRT_OK) gsmrt_sched_finish_running(sc, r, st, &err);
    }
}

/* This step's entry of every running request: a decode token (sampled now
 * and streamed) or a chunk of its prompt. Prompt chunks that want no logits
 * go first, so that the rows whose logits are read form one block at the
 * end. Returns the number of entries. */
static uint32_t plan_step(gsmrt_scheduler *sc)
{
    uint32_t budget = sc->n_batch, k = 0;
    struct sched_req **dec = sc->dec, **pro = sc->pro, **pfinal = sc->pfinal;
    uint32_t n_dec = 0, n_pro = 0;
    for (uint32_t i = 0; i < sc->n_running;) {
        struct sched_req *r = sc->running[i];
        struct gsmrt_err err = {GSMRT_OK, ""};
        gsmrt_session *s = r->gen.s;
        if (r->phase == REQ_PROMPT) {
            if (atomic_load(&r->cancel) || atomic_load(&s->cancel)) {   /* or gsmrt_session_cancel */
                gsmrt_sched_finish_running(sc, r, gsmrt_err_set(&err, GSMRT_E_CANCELLED, "cancelled"), &err);
                continue;   /* running[i] now holds another request */
            }
            pro[n_pro++] = r;
            i++;
            continue;
        }
        if (atomic_load(&r->cancel)) atomic_store(&s->cancel, true);
        gsmrt_status st = gsmrt_gen_next(&r->gen, &r->tok, &err);
        if (st == GSMRT_OK && !r->t_first && r->gen.i > 0) r->t_first = gsmrt_sched_now_ms();
        if (st != GSMRT_OK || r->gen.done) {
            gsmrt_sched_finish_running(sc, r, st, &err);
            continue;
        }
        dec[n_dec++] = r;
        i++;
    }
    budget -= n_dec;   /* n_dec <= n_batch; with a prompt still to evaluate, n_dec < n_batch */
    /* prompt chunks, oldest admitted first, as long as the step has room */
    uint32_t n_pfinal = 0;
    for (uint32_t j = 0; j < n_pro && budget > 0; j++) {
        struct sched_req *r = pro[j];
        gsmrt_session *s = r->gen.s;
        size_t left = r->prompt.n - s->past.n;
        uint32_t chunk = left < budget ? (uint32_t)left : budget;
        if (chunk > s->n_batch) chunk = s->n_batch;
        r->chunk = chunk;
        budget -= chunk;
        if (chunk == left) {
            pfinal[n_pfinal++] = r;
            continue;
        }
        sc->steps[k] = (struct gsmrt_seq_step){.kv = s->kv, .gsm = s->gsm, .tokens = r->prompt.ids + s->past.n,
                                               .n_tok = chunk, .pos0 = (uint32_t)s->past.n};
        sc->who[k++] = r;
    }
    for (uint32_t j = 0; j < n_pfinal; j++) {
        struct sched_req *r = pfinal[j];
        gsmrt_session *s = r->gen.s;
        sc->steps[k] = (struct gsmrt_seq_step){.kv = s->kv, .gsm = s->gsm, .tokens = r->prompt.ids + s->past.n,
                                               .n_tok = r->chunk, .pos0 = (uint32_t)s->past.n, .n_logits = 1,
                                               .logits_out = s->logits};
        sc->who[k++] = r;
    }
    for (uint32_t j = 0; j < n_dec; j++) {
        struct sched_req *r = dec[j];
        gsmrt_session *s = r->gen.s;
        r->chunk = 0;
        sc->steps[k] = (struct gsmrt_seq_step){.kv = s->kv, .gsm = s->gsm, .tokens = &r->tok, .n_tok = 1,
                                               .pos0 = (uint32_t)s->past.n, .n_logits = 1, .logits_out = s->logits};
        sc->who[k++] = r;
    }
    return k;
}

/* After the pass: the rows are in the caches (or, when the pass failed,
 * every request in it fails). who[] is apart from the running list, so
 * finishing one here does not disturb the walk. */
static void advance(gsmrt_scheduler *sc, uint32_t k, gsmrt_status pass, const struct gsmrt_err *pass_err)
{
    uint64_t evaluated = 0;
    for (uint32_t j = 0; j < k; j++) {
        struct sched_req *r = sc->who[j];
        struct gsmrt_err err = pass != GSMRT_OK ? *pass_err : (struct gsmrt_err){GSMRT_OK, ""};
        gsmrt_status st = pass;
        if (st == GSMRT_OK && r->phase == REQ_DECODE) {
            st = gsmrt_gen_fed(&r->gen, r->tok, &err);
        } else if (st == GSMRT_OK) {
            gsmrt_session *s = r->gen.s;
            evaluated += r->chunk;
            st = gsmrt_api_past_append(s, r->prompt.ids + s->past.n, r->chunk, &err);
            if (st == GSMRT_OK && s->past.n == r->prompt.n) {
                st = gsmrt_gen_start(&r->gen, r->prompt.n, &err);
                r->started = st == GSMRT_OK;
                r->phase = REQ_DECODE;
            }
        }
        if (st != GSMRT_OK) gsmrt_sched_finish_running(sc, r, st, &err);
    }
    pthread_mutex_lock(&sc->mu);
    sc->stats.prompt_tokens_evaluated += evaluated;
    pthread_mutex_unlock(&sc->mu);
}

/* Figures that read the slots: refreshed by the stepping thread. */
static void refresh_stats(gsmrt_scheduler *sc)
{
    uint64_t dev = 0, host = 0, steps = 0, gated = 0, cold = 0, computed = 0;
    uint32_t cached = 0;
    for (uint32_t i = 0; i < sc->n_slots; i++) {
        const gsmrt_session *s = sc->slots[i].s;
        dev += gsmrt_kv_cache_hot_bytes(s->kv);
        host += gsmrt_kv_cache_cold_bytes(s->kv);
        if (!sc->slots[i].req && s->past.n > 0) cached++;
        if (s->gsm) {
            steps += s->gsm->stats.steps;
            gated += s->gsm->stats.pages_listed;
            cold += s->gsm->stats.pages_cold;
            computed += s->gsm->stats.pages_cold_computed;
        }
    }
    pthread_mutex_lock(&sc->mu);
    sc->stats.kv_device_bytes = dev;
    sc->stats.kv_host_bytes = host;
    sc->stats.cached_sequences = cached;
    sc->stats.gsm_steps = steps;
    sc->stats.gsm_pages_gated = gated;
    sc->stats.gsm_pages_cold = cold;
    sc->stats.gsm_pages_cold_computed = computed;
    pthread_mutex_unlock(&sc->mu);
}

gsmrt_status gsmrt_scheduler_step(gsmrt_scheduler *sc, bool *busy)
{
    if (busy) *busy = false;
    if (!sc) return GSMRT_E_INVALID_ARGUMENT;
    admit(sc);
    uint32_t k = plan_step(sc);
    gsmrt_status st = GSMRT_OK;
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (k > 0) {
        st = gsmrt_forward_run_batch(sc->fwd, sc->steps, k, &err);
        pthread_mutex_lock(&sc->mu);
        sc->stats.steps++;
        pthread_mutex_unlock(&sc->mu);
        advance(sc, k, st, &err);
        if (st != GSMRT_OK) gsmrt_api_fail(sc->model->ctx, &err, st);
    }
    refresh_stats(sc);
    if (busy) {
        pthread_mutex_lock(&sc->mu);
        *busy = sc->n_running > 0 || sc->n_queued > 0;
        pthread_mutex_unlock(&sc->mu);
    }
    return st;
}
