/* api_sched.c -- the incremental scheduler (gsmrt.h "scheduler"): requests
 * queue from any thread; the owning thread steps. Each slot is a session
 * used only through the phased generation of api_gen.c (prepare, prompt
 * chunks evaluated by the step, start, next/fed, end, finish), and every step is
 * one gsmrt_forward_run_batch over all running sequences. This file holds
 * the requests' life around the steps (create, submit, cancel, leaving,
 * destroy, stats); the step itself is api_sched_step.c.
 *
 * Locking: `mu` guards the queue, the running list, the request ids and
 * the statistics. The stepping thread is the only one that changes slots,
 * sessions and requests' generation state; it takes `mu` for the moments it
 * moves requests between the lists, so cancel and stats may run anywhere. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api_sched_state.h"

double gsmrt_sched_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void copy_msg(char *dst, size_t cap, const char *msg)
{
    if (!dst || cap == 0) return;
    size_t n = strlen(msg) < cap - 1 ? strlen(msg) : cap - 1;   /* cut to the buffer */
    memcpy(dst, msg, n);
    dst[n] = '\0';
}

void gsmrt_scheduler_params_init(gsmrt_scheduler_params *p, size_t size)
{
    if (!p || size < sizeof(uint32_t)) return;
    gsmrt_scheduler_params d = {.struct_size = sizeof d, .n_parallel = 4, .n_cached = UINT32_MAX,
                                .max_queued = 64};
    memcpy(p, &d, size < sizeof d ? size : sizeof d);
    p->struct_size = (uint32_t)size;
}

void gsmrt_request_params_init(gsmrt_request_params *p, size_t size)
{
    if (!p || size < sizeof(uint32_t)) return;
    gsmrt_request_params d = {.struct_size = sizeof d};
    gsmrt_generate_params_init(&d.gen, sizeof d.gen);
    memcpy(p, &d, size < sizeof d ? size : sizeof d);
    p->struct_size = (uint32_t)size;
}

gsmrt_status gsmrt_sched_size_recording(struct gsmrt_forward *f, uint32_t n_seq, struct gsmrt_err *err)
{
    /* what gsmrt_forward_create gives one sequence, plus the per-sequence share */
    uint32_t L = f->m->hp.n_layer;
    uint32_t want = (64 + GSMRT_SCHED_DISPATCHES_PER_SEQ_LAYER * n_seq) * L + 64;
    if (f->rec && f->rec->max_dispatches >= want) return GSMRT_OK;
    bool timestamps = f->rec && f->rec->queries != VK_NULL_HANDLE;
    struct gsmrt_vk_rec *rec = NULL;
    gsmrt_status st = gsmrt_vk_rec_create(f->m->dev, want, timestamps, &rec, err);
    if (st != GSMRT_OK) return st;
    gsmrt_vk_rec_destroy(f->rec);
    f->rec = rec;
    return GSMRT_OK;
}

static gsmrt_status check_params(const gsmrt_model *m, gsmrt_scheduler_params *p, struct gsmrt_err *err)
{
    if (p->n_cached == UINT32_MAX) p->n_cached = p->n_parallel;
    if (p->n_parallel < 1 || p->n_parallel > 256)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "scheduler: n_parallel %u (allowed 1..256)",
                             p->n_parallel);
    if (p->n_cached > 256)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "scheduler: n_cached %u (allowed 0..256)", p->n_cached);
    if (p->n_ctx == 0) p->n_ctx = m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    if (p->n_ctx < 2) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "scheduler: n_ctx %u (at least 2)", p->n_ctx);
    if (p->n_batch == 0) p->n_batch = 256;
    if (p->n_batch > p->n_ctx && p->n_ctx > p->n_parallel) p->n_batch = p->n_ctx;
    if (p->n_batch < p->n_parallel + 1)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "scheduler: n_batch %u (at least n_parallel + 1 = %u: a decode token per request and "
                             "room for a prompt chunk)", p->n_batch, p->n_parallel + 1);
    return GSMRT_OK;
}

gsmrt_status gsmrt_scheduler_create(gsmrt_model *model, const gsmrt_scheduler_params *params, gsmrt_scheduler **out)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (out) *out = NULL;
    if (!model || !out || (params && params->struct_size < sizeof(uint32_t))) return GSMRT_E_INVALID_ARGUMENT;
    gsmrt_scheduler_params p;
    gsmrt_scheduler_params_init(&p, sizeof p);
    if (params) memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);
    gsmrt_context *ctx = model->ctx;
    gsmrt_status st = check_params(model, &p, &err);
    if (st != GSMRT_OK) return gsmrt_api_fail(ctx, &err, st);
    gsmrt_scheduler *sc = gsmrt_mem_calloc(ctx->a, 1, sizeof *sc);
    if (!sc) return gsmrt_api_fail(ctx, &err, gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "scheduler"));
    sc->model = model;
    sc->a = ctx->a;
    sc->n_parallel = p.n_parallel;
    sc->n_slots = p.n_parallel + p.n_cached;
    sc->n_ctx = p.n_ctx;
    sc->n_batch = p.n_batch;
    sc->max_queued = p.max_queued;
    sc->next_id = 1;
    pthread_mutex_init(&sc->mu, NULL);
    sc->slots = gsmrt_mem_calloc(sc->a, sc->n_slots, sizeof *sc->slots);
    sc->running = gsmrt_mem_calloc(sc->a, sc->n_parallel, sizeof *sc->running);
    sc->steps = gsmrt_mem_calloc(sc->a, sc->n_parallel, sizeof *sc->steps);
    sc->who = gsmrt_mem_calloc(sc->a, sc->n_parallel, sizeof *sc->who);
    sc->dec = gsmrt_mem_calloc(sc->a, sc->n_parallel, sizeof *sc->dec);
    sc->pro = gsmrt_mem_calloc(sc->a, sc->n_parallel, sizeof *sc->pro);
    sc->pfinal = gsmrt_mem_calloc(sc->a, sc->n_parallel, sizeof *sc->pfinal);
    if (!sc->slots || !sc->running || !sc->steps || !sc->who || !sc->dec || !sc->pro || !sc->pfinal)
        st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "scheduler slots");
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = p.n_ctx;
    sp.n_batch = p.n_batch;
    sp.gsm = p.gsm;
    sp.gsm_config = p.gsm_config;
    sp.gsm_settings = p.gsm_settings;
    for (uint32_t i = 0; st == GSMRT_OK && i < sc->n_slots; i++) {
        st = gsmrt_session_create(model, &sp, &sc->slots[i].s);
        if (st != GSMRT_OK) {
            snprintf(err.msg, sizeof err.msg, "%s", ctx->last_error);
            break;
        }
        /* the scheduler's one forward pass runs every slot: theirs are not needed */
        gsmrt_forward_destroy(sc->slots[i].s->fwd);
        sc->slots[i].s->fwd = NULL;
    }
    if (st == GSMRT_OK) st = gsmrt_forward_create(model->dm, p.n_batch, p.n_ctx, &sc->fwd, &err);
    if (st == GSMRT_OK) st = gsmrt_sched_size_recording(sc->fwd, sc->n_parallel, &err);
    if (st != GSMRT_OK) {
        gsmrt_scheduler_destroy(sc);
        return gsmrt_api_fail(ctx, &err, st);
    }
    sc->stats = (gsmrt_scheduler_stats){.struct_size = sizeof sc->stats, .n_parallel = sc->n_parallel,
                                        .n_slots = sc->n_slots, .n_ctx = sc->n_ctx};
    *out = sc;
    return GSMRT_OK;
}

static void free_req(gsmrt_scheduler *sc, struct sched_req *r)
{
    gsmrt_tokens_free(sc->a, &r->prompt);
    gsmrt_mem_free(sc->a, r->profile);
    gsmrt_mem_free(sc->a, r);
}

static gsmrt_finish finish_of(gsmrt_status st, gsmrt_stop stop)
{
    if (st == GSMRT_E_CANCELLED) return GSMRT_FINISH_CANCELLED;
    if (st != GSMRT_OK) return GSMRT_FINISH_ERROR;
    switch (stop) {
    case GSMRT_STOP_EOS:
    case GSMRT_STOP_CALLBACK: return GSMRT_FINISH_STOP;
    case GSMRT_STOP_MAX_TOKENS:
    case GSMRT_STOP_CONTEXT_END: return GSMRT_FINISH_LENGTH;
    case GSMRT_STOP_CANCELLED: return GSMRT_FINISH_CANCELLED;
    }
    return GSMRT_FINISH_ERROR;
}

/* Reports a request that leaves (with on_done) and frees it. `r` is no
 * longer in the queue or the running list. */
void gsmrt_sched_report(gsmrt_scheduler *sc, struct sched_req *r, gsmrt_status st, const char *msg,
                   const gsmrt_generate_result *gr)
{
    double t = gsmrt_sched_now_ms();
    gsmrt_request_result res = {
        .struct_size = sizeof res,
        .id = r->id,
        .finish = finish_of(st, gr ? gr->stop : GSMRT_STOP_CANCELLED),
        .status = st == GSMRT_E_CANCELLED ? GSMRT_OK : st,
        .n_prompt_tokens = (uint32_t)r->prompt.n,
        .n_prompt_cached = r->n_cached,
        .n_tokens = gr ? gr->n_tokens : 0,
        .queue_ms = (r->t_admit ? r->t_admit : t) - r->t_submit,
        .first_token_ms = r->t_first ? r->t_first - r->t_submit : 0,
        .total_ms = t - r->t_submit,
    };
    if (res.finish == GSMRT_FINISH_ERROR) copy_msg(res.error, sizeof res.error, msg);
    if (r->phase == REQ_QUEUED && st == GSMRT_E_CANCELLED) res.finish = GSMRT_FINISH_CANCELLED;
    pthread_mutex_lock(&sc->mu);
    sc->stats.requests_finished++;
    if (res.finish == GSMRT_FINISH_CANCELLED) sc->stats.requests_cancelled++;
    if (res.finish == GSMRT_FINISH_ERROR) sc->stats.requests_failed++;
    sc->stats.generated_tokens += res.n_tokens;
    pthread_mutex_unlock(&sc->mu);
    if (r->p.on_done) r->p.on_done(r->p.user, &res);
    free_req(sc, r);
}

/* Ends a running request: the generation's end and rollback, the slot
 * freed (it keeps the sequence for prefix reuse), on_done. */
void gsmrt_sched_finish_running(gsmrt_scheduler *sc, struct sched_req *r, gsmrt_status st, struct gsmrt_err *err)
{
    gsmrt_generate_result gr = {.struct_size = sizeof gr};
    if (r->started) st = gsmrt_gen_end(&r->gen, st, err);
    char msg[256];
    copy_msg(msg, sizeof msg, err->msg);
    gsmrt_gen_finish(&r->gen, st, err, &gr);
    if (r->gen_out && r->gen_out->struct_size >= sizeof(uint32_t)) {
        gr.struct_size = r->gen_out->struct_size;
        memcpy(r->gen_out, &gr, gr.struct_size < sizeof gr ? gr.struct_size : sizeof gr);
    }
    if (r->status_out) *r->status_out = st;
    struct sched_slot *slot = &sc->slots[r->slot];
    slot->req = NULL;
    slot->last_used = ++sc->clock;
    pthread_mutex_lock(&sc->mu);
    for (uint32_t i = 0; i < sc->n_running; i++)
        if (sc->running[i] == r) {
            sc->running[i] = sc->running[--sc->n_running];
            break;
        }
    pthread_mutex_unlock(&sc->mu);
    gsmrt_sched_report(sc, r, st, msg, &gr);
}

void gsmrt_scheduler_destroy(gsmrt_scheduler *sc)
{
    if (!sc) return;
    struct gsmrt_err err = {GSMRT_OK, "cancelled"};
    while (sc->n_running) {
        struct sched_req *r = sc->running[sc->n_running - 1];
        bool answered = r->phase == REQ_DECODE && r->gen.i > 0;   /* keeps its partial answer */
        if (answered) r->gen.r.stop = GSMRT_STOP_CANCELLED;
        gsmrt_sched_finish_running(sc, r, answered ? GSMRT_OK : GSMRT_E_CANCELLED, &err);
    }
    while (sc->q_head) {
        struct sched_req *r = sc->q_head;
        sc->q_head = r->next;
        gsmrt_sched_report(sc, r, GSMRT_E_CANCELLED, "cancelled", NULL);
    }
    for (uint32_t i = 0; !sc->external && sc->slots && i < sc->n_slots; i++) gsmrt_session_destroy(sc->slots[i].s);
    if (!sc->external) gsmrt_forward_destroy(sc->fwd);
    pthread_mutex_destroy(&sc->mu);
    gsmrt_mem_free(sc->a, sc->slots);
    gsmrt_mem_free(sc->a, sc->running);
    gsmrt_mem_free(sc->a, sc->steps);
    gsmrt_mem_free(sc->a, sc->who);
    gsmrt_mem_free(sc->a, sc->dec);
    gsmrt_mem_free(sc->a, sc->pro);
    gsmrt_mem_free(sc->a, sc->pfinal);
    gsmrt_mem_free(sc->a, sc);
}

static gsmrt_status submit(gsmrt_scheduler *sc, const gsmrt_request_params *p, uint32_t pin,
                           gsmrt_generate_result *gen_out, gsmrt_status *status_out, uint64_t *id,
                           struct gsmrt_err *errp)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct sched_req *r = gsmrt_mem_calloc(sc->a, 1, sizeof *r);
    if (!r) return gsmrt_err_set(errp, GSMRT_E_OUT_OF_HOST_MEMORY, "request");
    r->pin = pin;
    r->gen_out = gen_out;
    r->status_out = status_out;
    gsmrt_request_params_init(&r->p, sizeof r->p);
    memcpy(&r->p, p, p->struct_size < sizeof r->p ? p->struct_size : sizeof r->p);
    atomic_init(&r->cancel, false);
    gsmrt_status st = gsmrt_sched_tokenize(sc->model, &r->p, &r->prompt, &err);
    if (st == GSMRT_OK && r->prompt.n == 0)
        st = gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "the prompt has no tokens");
    if (st == GSMRT_OK && r->prompt.n >= sc->n_ctx)
        st = gsmrt_err_set(&err, GSMRT_E_CONTEXT_FULL,
                           "the prompt has %zu tokens; a sequence holds %u (leave room for the answer)", r->prompt.n,
                           sc->n_ctx);
    if (st == GSMRT_OK && r->p.gen.profile) {
        if (!(r->profile = gsmrt_mem_strdup(sc->a, r->p.gen.profile)))
            st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "profile name");
    }
    r->p.gen.profile = r->profile;
    r->p.prompt = NULL;   /* the caller's memory: not kept */
    r->p.messages = NULL;
    r->p.n_messages = 0;
    if (st == GSMRT_OK) {
        pthread_mutex_lock(&sc->mu);
        if (sc->n_queued >= sc->max_queued) {
            st = gsmrt_err_set(&err, GSMRT_E_BUSY, "queue full: %u requests wait already", sc->n_queued);
        } else {
            r->id = sc->next_id++;
            r->t_submit = gsmrt_sched_now_ms();
            if (sc->q_tail) sc->q_tail->next = r;
            else sc->q_head = r;
            sc->q_tail = r;
            sc->n_queued++;
            sc->stats.requests_submitted++;
            sc->stats.prompt_tokens += r->prompt.n;
            *id = r->id;
        }
        pthread_mutex_unlock(&sc->mu);
    }
    if (st != GSMRT_OK) {
        gsmrt_err_set(errp, st, "%s", err.msg);
        free_req(sc, r);
    }
    return st;
}

gsmrt_status gsmrt_scheduler_submit(gsmrt_scheduler *sc, const gsmrt_request_params *p, uint64_t *id, char *errbuf,
                                    size_t err_size)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (id) *id = 0;
    copy_msg(errbuf, err_size, "");
    if (!sc || !p || !id || p->struct_size < sizeof(uint32_t)) {
        copy_msg(errbuf, err_size, "scheduler submit: NULL argument or bad struct_size");
        return GSMRT_E_INVALID_ARGUMENT;
    }
    gsmrt_status st = submit(sc, p, NO_PIN, NULL, NULL, id, &err);
    if (st != GSMRT_OK) copy_msg(errbuf, err_size, err.msg);
    return st;
}

gsmrt_status gsmrt_sched_submit_pinned(gsmrt_scheduler *sc, uint32_t slot, const gsmrt_request_params *p,
                                       gsmrt_generate_result *gen_out, gsmrt_status *status_out,
                                       struct gsmrt_err *err)
{
    uint64_t id;
    if (slot >= sc->n_slots) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "slot %u of %u", slot, sc->n_slots);
    return submit(sc, p, slot, gen_out, status_out, &id, err);
}

gsmrt_status gsmrt_sched_create_on(gsmrt_session *const *ss, size_t n, struct gsmrt_forward *fwd,
                                   gsmrt_scheduler **out, struct gsmrt_err *err)
{
    *out = NULL;
    gsmrt_model *model = ss[0]->model;
    gsmrt_scheduler *sc = gsmrt_mem_calloc(model->ctx->a, 1, sizeof *sc);
    if (!sc) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "scheduler");
    sc->external = true;
    sc->model = model;
    sc->a = model->ctx->a;
    sc->fwd = fwd;
    sc->n_parallel = sc->n_slots = sc->max_queued = (uint32_t)n;
    sc->n_ctx = fwd->n_ctx;
    sc->n_batch = fwd->max_tok;
    sc->next_id = 1;
    pthread_mutex_init(&sc->mu, NULL);
    sc->slots = gsmrt_mem_calloc(sc->a, n, sizeof *sc->slots);
    sc->running = gsmrt_mem_calloc(sc->a, n, sizeof *sc->running);
    sc->steps = gsmrt_mem_calloc(sc->a, n, sizeof *sc->steps);
    sc->who = gsmrt_mem_calloc(sc->a, n, sizeof *sc->who);
    sc->dec = gsmrt_mem_calloc(sc->a, n, sizeof *sc->dec);
    sc->pro = gsmrt_mem_calloc(sc->a, n, sizeof *sc->pro);
    sc->pfinal = gsmrt_mem_calloc(sc->a, n, sizeof *sc->pfinal);
    gsmrt_status st = GSMRT_OK;
    if (!sc->slots || !sc->running || !sc->steps || !sc->who || !sc->dec || !sc->pro || !sc->pfinal)
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "scheduler slots");
    for (size_t i = 0; st == GSMRT_OK && i < n; i++) sc->slots[i].s = ss[i];
    if (st == GSMRT_OK) st = gsmrt_sched_size_recording(fwd, (uint32_t)n, err);
    if (st != GSMRT_OK) {
        gsmrt_scheduler_destroy(sc);
        return st;
    }
    sc->stats = (gsmrt_scheduler_stats){.struct_size = sizeof sc->stats, .n_parallel = sc->n_parallel,
                                        .n_slots = sc->n_slots, .n_ctx = sc->n_ctx};
    *out = sc;
    return GSMRT_OK;
}

bool gsmrt_scheduler_cancel(gsmrt_scheduler *sc, uint64_t id)
{
    if (!sc || id == 0) return false;
    bool found = false;
    pthread_mutex_lock(&sc->mu);
    for (struct sched_req *r = sc->q_head; r && !found; r = r->next)
        if (r->id == id) found = true, atomic_store(&r->cancel, true);
    for (uint32_t i = 0; i < sc->n_running && !found; i++)
        if (sc->running[i]->id == id) found = true, atomic_store(&sc->running[i]->cancel, true);
    pthread_mutex_unlock(&sc->mu);
    return found;
}


gsmrt_status gsmrt_scheduler_get_stats(gsmrt_scheduler *sc, gsmrt_scheduler_stats *out)
{
    if (!sc || !out || out->struct_size < sizeof(uint32_t)) return GSMRT_E_INVALID_ARGUMENT;
    pthread_mutex_lock(&sc->mu);
    gsmrt_scheduler_stats r = sc->stats;
    r.queued = sc->n_queued;
    r.running = sc->n_running;
    pthread_mutex_unlock(&sc->mu);
    r.struct_size = out->struct_size;
    memcpy(out, &r, out->struct_size < sizeof r ? out->struct_size : sizeof r);
    return GSMRT_OK;
}
