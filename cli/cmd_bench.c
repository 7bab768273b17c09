/* cmd_bench.c -- `gsm bench`: prefill and decode speed, memory and quality of
 * dense attention against GSM (keep / swap) for one cell or the standard
 * matrix (batch {1, 8} x context {512, 2048, 4096} x {dense, keep, swap}).
 * Speed: gsmrt_complete_batch (continuous batching) on fresh sessions.
 * Memory: the runtime's own accounting (gsmrt_context_memory, per-session
 * GSM statistics). Quality: teacher forcing of one sequence
 * (gsmrt_session_feed) in a dense and a GSM session on the same tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"

enum mode { MODE_DENSE, MODE_KEEP, MODE_SWAP, MODE_COUNT };
static const char *const MODE_NAME[MODE_COUNT] = {"dense", "keep", "swap"};

#define MAX_REPEAT 16
#define MAX_BATCH 64
#define MAX_CTX 8

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, min and max of v[0..n) (n >= 1). */
static void summarize(const double *v, uint32_t n, double *med, double *lo, double *hi)
{
    double s[MAX_REPEAT];
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    *med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *lo = s[0];
    *hi = s[n - 1];
}

/* ---- prompts ------------------------------------------------------------------
 * Sequence i of every cell reads the text from the i-th of max(8, batch)
 * equal slices of the file (from the next line start), so sequence 0 is the
 * same text in batch-1 and batch-8 rows. The file is doubled so a slice near
 * the end wraps around. Cuts fall on spaces or newlines (whole UTF-8
 * characters, and a BPE boundary the tokenizer would make anyway). */
struct corpus {
    char *text;   /* the file twice */
    size_t len;   /* of one copy */
};

static size_t slice_start(const struct corpus *c, uint32_t i, uint32_t n_slices)
{
    size_t p = c->len / n_slices * i;
    while (p > 0 && p < c->len && c->text[p - 1] != '\n') p++;
    return p < c->len ? p : 0;
}

static size_t snap_space(const char *t, size_t start, size_t e)
{
    while (e > start && t[e] != ' ' && t[e] != '\n') e--;
    return e;
}

/* The longest text from `start` (ending at a space) whose tokens (BOS
 * included) are at most `target`; its end in *end and token count in *n. */
static gsmrt_status cut_prompt(const gsmrt_model *m, const struct corpus *c, size_t start, uint32_t target,
                               size_t *end, size_t *n)
{
    size_t lo = start, hi = start + c->len - 1;   /* lo fits (empty), hi is a bound */
    size_t n_lo = 0;
    while (hi - lo > 1) {
        size_t mid = snap_space(c->text, lo, lo + (hi - lo) / 2);
        if (mid <= lo) break;
        size_t k = 0;
        gsmrt_status st = gsmrt_model_tokenize(m, c->text + start, mid - start, true, false, NULL, 0, &k);
        if (st != GSMRT_OK) return st;
        if (k <= target) lo = mid, n_lo = k;
        else hi = mid;
    }
    *end = lo;
    *n = n_lo;
    return GSMRT_OK;
}

/* ---- the run --------------------------------------------------------------- */

struct cell {
    uint32_t batch, ctx;
    enum mode mode;
    /* speed: prefill once (the first call on the kind's sessions), decode per repeat */
    uint32_t n_rep, n_prefill;
    double prefill_tps[MAX_REPEAT], decode_tps[MAX_REPEAT];
    uint32_t prefill_seqs;        /* sequences of that prefill call */
    uint32_t n_prompt;            /* prompt tokens per sequence (mean) */
    uint64_t n_generated;         /* per repeat, all sequences */
    uint64_t n_evaluated;         /* prompt tokens a timed call evaluated (all sequences; 1 each) */
    /* memory: the context's weights; the rest what the kind's sessions added, x batch / sessions */
    gsmrt_memory_usage mem;
    uint64_t kv_device, kv_host;  /* the sessions' KV pools (gsmrt_session_gsm_stats) */
    double kv_formula;            /* n_layer * row * ctx * batch * bytes per value */
    /* KV reads of the decode steps (last repeat), per generated token */
    double kv_read_per_tok, kv_dense_per_tok;
    uint64_t gated_steps, decode_steps;
    uint64_t pages_cold, pages_cold_computed, pages_moved;
    uint64_t layer_steps, layer_steps_dense;   /* gated steps x layers; of those, dense_fallback */
    double skipped_bound_max;
    /* quality against dense (teacher forcing, one sequence) */
    bool have_quality;
    double top1, kl_mean, kl_max;
    uint32_t q_tokens, q_gated;
    /* failure */
    gsmrt_status st;
    char err[256];
};

struct bench {
    struct opts o;
    const char *cmd;
    uint32_t batch, ctx, gen, repeat;
    enum mode mode;
    bool matrix;
    const char *json_path;
    gsmrt_context *ctx_;
    gsmrt_model *model;
    gsmrt_model_info mi;
    gsmrt_device_info di;
    struct corpus corpus;
    const char *corpus_path;
    uint32_t row_floats;          /* KV floats per layer and position */
    uint32_t kv_value_bytes;      /* bytes per cached value: 2 (f16, the default) or 4 (--cache-type f32) */
    uint32_t n_batch;             /* prompt tokens per step */
    /* prompts per context: text and tokens of each sequence */
    uint32_t ctxs[MAX_CTX], n_ctxs;
    char *prompt[MAX_CTX][MAX_BATCH];
    uint32_t prompt_tokens[MAX_CTX][MAX_BATCH];
    int32_t *q_ids[MAX_CTX];      /* sequence 0's prompt, then gen continuation tokens */
    uint32_t q_prompt[MAX_CTX];
    /* progress */
    bool tty;
    double t_start;
    uint32_t cell_i, n_cells, rep_i;
    uint32_t tokens_seen;
    const struct cell *cur;
};

static void progress(struct bench *b, const char *what)
{
    double el = (now_ms() - b->t_start) / 1000.0;
    const struct cell *c = b->cur;
    fprintf(stderr, "%scell %u/%u: batch %u, ctx %u, %s, repeat %u/%u: %s [%dm%02ds]%s", b->tty ? "\r\033[K" : "",
            b->cell_i + 1, b->n_cells, c->batch, c->ctx, MODE_NAME[c->mode], b->rep_i + 1, b->repeat, what,
            (int)el / 60, (int)el % 60, b->tty ? "" : "\n");
    fflush(stderr);
}

static bool on_token(void *user, size_t index, const gsmrt_token *tok)
{
    struct bench *b = user;
    (void)tok;
    b->tokens_seen++;
    if (b->tty && index == 0 && (tok->index % 8 == 0)) {
        char what[64];
        snprintf(what, sizeof what, "decoding, token %u/%u of sequence 1", tok->index + 1, b->gen);
        progress(b, what);
    }
    return true;
}

static uint32_t ctx_index(const struct bench *b, uint32_t n_ctx)
{
    for (uint32_t i = 0; i < b->n_ctxs; i++)
        if (b->ctxs[i] == n_ctx) return i;
    return 0;
}

static void session_params(const struct bench *b, enum mode m, uint32_t n_ctx, char *settings, size_t cap,
                           gsmrt_session_params *sp)
{
    gsmrt_session_params_init(sp, sizeof *sp);
    sp->n_ctx = n_ctx;
    sp->n_batch = b->n_batch;
    sp->cache_type = b->o.cache_type;
    if (m == MODE_DENSE) return;
    sp->gsm = true;
    sp->gsm_config = b->o.gsm_config;
    snprintf(settings, cap, "low_freq_policy=%s%s%s", m == MODE_SWAP ? "swap" : "keep", b->o.gsm_settings[0] ? ";" : "",
             b->o.gsm_settings);
    sp->gsm_settings = settings;
}

static gsmrt_status fail(struct bench *b, struct cell *c, gsmrt_status st, const char *where)
{
    c->st = st;
    snprintf(c->err, sizeof c->err, "%s: %s (%s)", where, gsmrt_context_last_error(b->ctx_), gsmrt_status_name(st));
    return st;
}

/* Log-softmax of a row into out (double). */
static void log_softmax(const float *x, uint32_t n, double *out)
{
    double mx = x[0];
    for (uint32_t i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += exp(x[i] - mx);
    double lz = mx + log(s);
    for (uint32_t i = 0; i < n; i++) out[i] = x[i] - lz;
}

static uint32_t argmax(const float *x, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[k]) k = i;
    return k;
}

/* ---- the sessions of one context ---------------------------------------------
 * Per context the bench creates max-batch "keep" sessions (when a dense or
 * keep row needs them) and max-batch "swap" sessions (when a swap row does),
 * all with the same prompts. The first gsmrt_complete_batch on each set
 * prefills (max_tokens 0: prompts only; that call gives the prefill figure);
 * every timed call afterwards passes the same prompts again, so the runtime
 * reuses the cached prompt and evaluates only its last token before decoding.
 * Dense rows run on the keep sessions with gsmrt_generate_params.dense (a
 * keep session's KV pool is dense-sized). */
struct kind {
    enum mode mode;                       /* MODE_KEEP or MODE_SWAP */
    gsmrt_session *s[MAX_BATCH];
    uint32_t n;
    uint32_t prompt_tokens[MAX_BATCH];    /* evaluated by the first call (empty cache) */
    double prefill_tps;                   /* of that call: sum of tokens / the longest prompt_ms */
    gsmrt_memory_usage added;             /* what creating and prefilling the n sessions added */
    gsmrt_status st;
    char err[256];
};

static void stats_init(gsmrt_gsm_stats *g)
{
    memset(g, 0, sizeof *g);
    g->struct_size = sizeof *g;
}

static gsmrt_status context_memory(struct bench *b, gsmrt_memory_usage *u)
{
    memset(u, 0, sizeof *u);
    u->struct_size = sizeof *u;
    return gsmrt_context_memory(b->ctx_, u);
}

static void mem_sub(gsmrt_memory_usage *d, const gsmrt_memory_usage *x, const gsmrt_memory_usage *y)
{
#define SUB(f) d->f = x->f > y->f ? x->f - y->f : 0
    SUB(weights_bytes);
    SUB(kv_hot_bytes);
    SUB(kv_cold_bytes);
    SUB(scratch_bytes);
    SUB(staging_bytes);
    SUB(device_local_bytes);
    SUB(host_visible_bytes);
#undef SUB
}

static gsmrt_status kind_fail(struct bench *b, struct kind *k, gsmrt_status st, const char *where)
{
    k->st = st;
    snprintf(k->err, sizeof k->err, "%s (%s sessions): %s (%s)", where, MODE_NAME[k->mode],
             gsmrt_context_last_error(b->ctx_), gsmrt_status_name(st));
    return st;
}

/* Creates the kind's n sessions and prefills them (one call, no tokens generated). */
static gsmrt_status kind_open(struct bench *b, struct kind *k, uint32_t ci, enum mode m, uint32_t n)
{
    memset(k, 0, sizeof *k);
    k->mode = m;
    gsmrt_memory_usage before, after;
    gsmrt_status st = context_memory(b, &before);
    if (st != GSMRT_OK) return kind_fail(b, k, st, "gsmrt_context_memory");
    char settings[1200];
    gsmrt_session_params sp;
    session_params(b, m, b->ctxs[ci], settings, sizeof settings, &sp);
    for (uint32_t i = 0; i < n; i++) {
        st = gsmrt_session_create(b->model, &sp, &k->s[i]);
        if (st != GSMRT_OK) return kind_fail(b, k, st, "session");
        k->n = i + 1;
    }
    struct cell show = {.batch = n, .ctx = b->ctxs[ci], .mode = m};
    const struct cell *cur = b->cur;
    b->cur = &show;
    char what[160];
    snprintf(what, sizeof what, "prefill %u x %u tokens (%s sessions%s)", n, b->prompt_tokens[ci][0], MODE_NAME[m],
             m == MODE_KEEP ? ", shared by the dense and keep rows" : "");
    progress(b, what);
    b->cur = cur;
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.cancel_step = UINT32_MAX;   /* prefill in whole batches, as measured before issue 12 */
    gp.max_tokens = 0;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gsmrt_generate_result res[MAX_BATCH];
    for (uint32_t i = 0; i < n; i++) {
        memset(&res[i], 0, sizeof res[i]);
        res[i].struct_size = sizeof res[i];
    }
    st = gsmrt_complete_batch(k->s, (const char *const *)b->prompt[ci], n, &gp, NULL, NULL, res);
    if (st != GSMRT_OK) return kind_fail(b, k, st, "prefill (gsmrt_complete_batch)");
    double ms = 0, tok = 0;
    for (uint32_t i = 0; i < n; i++) {
        k->prompt_tokens[i] = res[i].n_prompt_tokens;
        tok += res[i].n_prompt_tokens;
        /* the prompts are evaluated together (from one start): the last to finish is the wall time */
        if (res[i].prompt_ms > ms) ms = res[i].prompt_ms;
    }
    k->prefill_tps = ms > 0 ? tok * 1000.0 / ms : 0;
    st = context_memory(b, &after);
    if (st != GSMRT_OK) return kind_fail(b, k, st, "gsmrt_context_memory");
    mem_sub(&k->added, &after, &before);
    return GSMRT_OK;
}

static void kind_close(struct kind *k)
{
    for (uint32_t i = 0; i < k->n; i++) gsmrt_session_destroy(k->s[i]);
    k->n = 0;
}

/* Teacher forcing of sequence 0 at context ci in session s: its prompt
 * (gsmrt_session_complete with max_tokens 0: what the cache holds of it is
 * reused), then gen continuation tokens one decode step each
 * (gsmrt_session_feed); the logits of those steps into out[gen][n_vocab].
 * *gated: the steps GSM's gate took part in. */
/* Brings s back to context ci's prompt (the cache keeps it) and feeds the
 * continuation, step_tokens at a time (1: decode steps, the gate takes part;
 * 0: one prompt step, dense attention by construction), logits into out. */
static gsmrt_status teacher_force(struct bench *b, gsmrt_session *s, uint32_t ci, uint32_t step_tokens, float *out,
                                  uint32_t *gated, char *err, size_t cap)
{
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.cancel_step = UINT32_MAX;   /* prefill in whole batches, as measured before issue 12 */
    gp.max_tokens = 0;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gsmrt_gsm_stats g0, g1;
    stats_init(&g0);
    stats_init(&g1);
    gsmrt_status st = gsmrt_session_complete(s, b->prompt[ci][0], &gp, NULL, NULL, NULL);
    if (st == GSMRT_OK) st = gsmrt_session_gsm_stats(s, &g0);
    if (st == GSMRT_OK) st = gsmrt_session_feed(s, b->q_ids[ci] + b->q_prompt[ci], b->gen, step_tokens, out);
    if (st == GSMRT_OK) st = gsmrt_session_gsm_stats(s, &g1);
    if (st != GSMRT_OK)
        snprintf(err, cap, "teacher forcing: %s (%s)", gsmrt_context_last_error(b->ctx_), gsmrt_status_name(st));
    *gated = (uint32_t)(g1.steps - g0.steps);
    return st;
}

struct quality {
    bool have;
    double top1, kl_mean, kl_max;
    uint32_t tokens, gated;
    gsmrt_status st;
    char err[256];
};

/* The quality columns of context ci: the dense reference is keep session 0
 * fed the continuation as one prompt step (dense attention, no extra
 * prefill; a dense session of its own when there are no keep sessions), the
 * rows' modes are sequence 0 of the keep and swap sessions fed it one decode
 * step per token (the sessions already hold the prompt). Shared by both
 * batch rows. */
static void measure_quality(struct bench *b, uint32_t ci, struct kind *keep, struct kind *swap,
                            struct quality q[MODE_COUNT])
{
    uint32_t V = b->mi.n_vocab;
    memset(q, 0, MODE_COUNT * sizeof *q);
    float *ref = malloc((size_t)b->gen * V * sizeof(float));
    float *lg = malloc((size_t)b->gen * V * sizeof(float));
    double *ld = malloc(2 * (size_t)V * sizeof(double));
    gsmrt_status st = ref && lg && ld ? GSMRT_OK : GSMRT_E_OUT_OF_HOST_MEMORY;
    char err[256] = "quality: out of host memory";
    struct cell show = {.batch = 1, .ctx = b->ctxs[ci], .mode = MODE_DENSE};
    const struct cell *cur = b->cur;
    b->cur = &show;
    if (st == GSMRT_OK && keep->n > 0 && keep->st == GSMRT_OK) {
        progress(b, "quality: dense reference (keep session 0, the continuation as one dense prompt step)");
        uint32_t gated = 0;
        st = teacher_force(b, keep->s[0], ci, 0, ref, &gated, err, sizeof err);
    } else if (st == GSMRT_OK) {
        progress(b, "quality: dense reference (one dense session, teacher forcing)");
        char settings[1200];
        gsmrt_session_params sp;
        session_params(b, MODE_DENSE, b->ctxs[ci], settings, sizeof settings, &sp);
        gsmrt_session *s = NULL;
        st = gsmrt_session_create(b->model, &sp, &s);
        uint32_t gated = 0;
        if (st != GSMRT_OK)
            snprintf(err, sizeof err, "quality session: %s (%s)", gsmrt_context_last_error(b->ctx_),
                     gsmrt_status_name(st));
        else st = teacher_force(b, s, ci, 1, ref, &gated, err, sizeof err);
        gsmrt_session_destroy(s);
    }
    for (uint32_t m = 0; m < MODE_COUNT; m++) {
        struct kind *k = m == MODE_SWAP ? swap : keep;
        q[m].st = st;
        if (st != GSMRT_OK) {
            snprintf(q[m].err, sizeof q[m].err, "%s", err);
            continue;
        }
        if (m != MODE_DENSE && (k->n == 0 || k->st != GSMRT_OK)) continue;   /* no such rows, or they failed */
        uint32_t gated = 0;
        const float *g = ref;
        if (m != MODE_DENSE) {
            show.mode = (enum mode)m;
            progress(b, m == MODE_KEEP ? "quality: keep session 0 (teacher forcing)"
                                       : "quality: swap session 0 (teacher forcing)");
            q[m].st = teacher_force(b, k->s[0], ci, 1, lg, &gated, q[m].err, sizeof q[m].err);
            if (q[m].st != GSMRT_OK) continue;
            g = lg;
        }
        uint32_t agree = 0;
        double kl_sum = 0, kl_max = 0;
        for (uint32_t t = 0; t < b->gen; t++) {
            const float *d = ref + (size_t)t * V, *x = g + (size_t)t * V;
            agree += argmax(d, V) == argmax(x, V);
            log_softmax(d, V, ld);
            log_softmax(x, V, ld + V);
            double kl = 0;
            for (uint32_t v = 0; v < V; v++) kl += exp(ld[v]) * (ld[v] - ld[V + v]);
            kl = kl < 0 ? 0 : kl;   /* rounding */
            kl_sum += kl;
            kl_max = kl > kl_max ? kl : kl_max;
        }
        q[m].have = true;
        q[m].top1 = (double)agree / b->gen;
        q[m].kl_mean = kl_sum / b->gen;
        q[m].kl_max = kl_max;
        q[m].tokens = b->gen;
        q[m].gated = gated;
    }
    b->cur = cur;
    free(ref);
    free(lg);
    free(ld);
}

/* One timed repeat of a cell: the same prompts again on the filled sessions
 * (only the last prompt token is evaluated, then the decode steps), with GSM
 * statistics as deltas over the call. */
static gsmrt_status run_once(struct bench *b, struct cell *c, struct kind *k, uint32_t rep)
{
    uint32_t ci = ctx_index(b, c->ctx), B = c->batch;
    gsmrt_generate_result res[MAX_BATCH];
    gsmrt_gsm_stats g0[MAX_BATCH], g1[MAX_BATCH];
    gsmrt_status st = GSMRT_OK;
    for (uint32_t i = 0; i < B && st == GSMRT_OK; i++) {
        stats_init(&g0[i]);
        stats_init(&g1[i]);
        st = gsmrt_session_gsm_stats(k->s[i], &g0[i]);
    }
    if (st != GSMRT_OK) return fail(b, c, st, "gsm stats");
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.cancel_step = UINT32_MAX;   /* prefill in whole batches, as measured before issue 12 */
    gp.max_tokens = b->gen;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gp.dense = c->mode == MODE_DENSE;
    for (uint32_t i = 0; i < B; i++) {
        memset(&res[i], 0, sizeof res[i]);
        res[i].struct_size = sizeof res[i];
    }
    char what[128];
    snprintf(what, sizeof what, "%u decode steps on the filled %s session%s", b->gen, MODE_NAME[k->mode],
             B == 1 ? "" : "s");
    progress(b, what);
    b->tokens_seen = 0;
    double t0 = now_ms();
    st = gsmrt_complete_batch(k->s, (const char *const *)b->prompt[ci], B, &gp, on_token, b, res);
    double wall = now_ms() - t0;
    if (st != GSMRT_OK) return fail(b, c, st, "gsmrt_complete_batch");
    double prompt_ms = 0;
    uint64_t n_gen = 0, n_eval = 0;
    for (uint32_t i = 0; i < B; i++) {
        if (res[i].prompt_ms > prompt_ms) prompt_ms = res[i].prompt_ms;   /* evaluated together */
        n_gen += res[i].n_tokens;
        n_eval += res[i].n_prompt_tokens;
    }
    if (n_gen != (uint64_t)B * b->gen) {
        c->st = GSMRT_E_INTERNAL;
        snprintf(c->err, sizeof c->err, "generated %llu tokens, expected %u x %u", (unsigned long long)n_gen, B,
                 b->gen);
        return c->st;
    }
    c->decode_tps[rep] = wall > prompt_ms ? n_gen * 1000.0 / (wall - prompt_ms) : 0;
    c->n_generated = n_gen;
    c->n_evaluated = n_eval;
    c->n_rep = rep + 1;
    for (uint32_t i = 0; i < B && st == GSMRT_OK; i++) st = gsmrt_session_gsm_stats(k->s[i], &g1[i]);
    if (st != GSMRT_OK) return fail(b, c, st, "gsm stats");
    /* KV bytes of the call's steps: a gated step reads what the runtime
     * counted; any other step (the re-evaluated last prompt token, warm-up,
     * below min_context, dense) reads every cached key of every layer, as
     * dense attention does. Position p attends p + 1 keys; the call evaluates
     * positions prompt - n_prompt_tokens .. n_past - 1. */
    uint64_t steps = 0, cold = 0, cold_comp = 0, moved = 0, lsteps = 0, lsteps_dense = 0;
    double read = 0, dense = 0, bound = 0;
    double key_bytes = (double)b->mi.n_layer * b->row_floats * b->kv_value_bytes;
    for (uint32_t i = 0; i < B; i++) {
        double all = 0;
        uint32_t first = k->prompt_tokens[i] - res[i].n_prompt_tokens;
        for (uint32_t p = first; p < res[i].n_past; p++) all += (double)(p + 1) * key_bytes;
        dense += all;
#define D(f) (g1[i].f - g0[i].f)
        read += (double)D(bytes_read_hot) + (double)D(bytes_read_cold) + (all - (double)D(bytes_read_dense));
        steps += D(steps);
        cold += D(pages_cold);
        cold_comp += D(pages_cold_computed);
        moved += D(pages_demoted) + D(pages_promoted) + D(pages_prefetched);
        lsteps += D(layer_steps);
        lsteps_dense += D(layer_steps_dense);
#undef D
        bound = g1[i].skipped_bound_max > bound ? g1[i].skipped_bound_max : bound;   /* max since creation */
    }
    c->kv_read_per_tok = n_gen ? read / n_gen : 0;
    c->kv_dense_per_tok = n_gen ? dense / n_gen : 0;
    c->gated_steps = steps;
    c->decode_steps = n_gen;
    c->pages_cold = cold;
    c->pages_cold_computed = cold_comp;
    c->pages_moved = moved;
    c->layer_steps = lsteps;
    c->layer_steps_dense = lsteps_dense;
    c->skipped_bound_max = c->mode == MODE_DENSE ? 0 : bound;
    return GSMRT_OK;
}

/* A cell on its kind's filled sessions: the figures of the prefill call and
 * of the sessions, then the timed repeats. Memory: the weights are the
 * context's (shared by every session); every other role and the heap totals
 * are what the kind's sessions added to the context, scaled to the row's
 * batch (x batch / sessions), the heap totals plus what the context held
 * without sessions (base). */
static void run_cell(struct bench *b, struct cell *c, struct kind *k, const gsmrt_memory_usage *base,
                     const struct quality *q)
{
    b->cur = c;
    b->rep_i = 0;
    c->kv_formula = (double)b->mi.n_layer * b->row_floats * c->ctx * c->batch * b->kv_value_bytes;
    if (q->have) {
        c->have_quality = true;
        c->top1 = q->top1;
        c->kl_mean = q->kl_mean;
        c->kl_max = q->kl_max;
        c->q_tokens = q->tokens;
        c->q_gated = q->gated;
    } else if (q->st != GSMRT_OK) {
        c->st = q->st;   /* the row says why; speed is still measured */
        snprintf(c->err, sizeof c->err, "%s", q->err);
    }
    if (k->st != GSMRT_OK) {
        c->st = k->st;
        snprintf(c->err, sizeof c->err, "%s", k->err);
        return;
    }
    uint32_t B = c->batch;
    double np = 0;
    for (uint32_t i = 0; i < B; i++) np += k->prompt_tokens[i];
    c->n_prompt = (uint32_t)(np / B + 0.5);
    c->prefill_tps[0] = k->prefill_tps;
    c->n_prefill = 1;
    c->prefill_seqs = k->n;
    double f = (double)B / k->n;
    c->mem.weights_bytes = base->weights_bytes;
    c->mem.kv_hot_bytes = (uint64_t)(k->added.kv_hot_bytes * f);
    c->mem.kv_cold_bytes = (uint64_t)(k->added.kv_cold_bytes * f);
    c->mem.scratch_bytes = (uint64_t)(k->added.scratch_bytes * f);
    c->mem.staging_bytes = (uint64_t)(k->added.staging_bytes * f);
    c->mem.device_local_bytes = base->device_local_bytes + (uint64_t)(k->added.device_local_bytes * f);
    c->mem.host_visible_bytes = base->host_visible_bytes + (uint64_t)(k->added.host_visible_bytes * f);
    for (uint32_t i = 0; i < B; i++) {
        gsmrt_gsm_stats g;
        stats_init(&g);
        gsmrt_status st = gsmrt_session_gsm_stats(k->s[i], &g);
        if (st != GSMRT_OK) {
            fail(b, c, st, "gsm stats");
            return;
        }
        c->kv_device += g.kv_device_bytes;
        c->kv_host += g.kv_host_bytes;
    }
    for (uint32_t r = 0; r < b->repeat; r++) {
        b->rep_i = r;
        if (run_once(b, c, k, r) != GSMRT_OK) return;
    }
}

/* ---- output ----------------------------------------------------------------- */

static double mib(double x) { return x / 1048576.0; }

static void fmt_spread(char *buf, size_t cap, const double *v, uint32_t n)
{
    double med, lo, hi;
    summarize(v, n, &med, &lo, &hi);
    if (n > 1) snprintf(buf, cap, "%.1f (%.1f-%.1f)", med, lo, hi);
    else snprintf(buf, cap, "%.1f", med);
}

static void print_header(const struct bench *b, FILE *f)
{
    fprintf(f, "gsm bench: %s (%s, %u layers, %u vocab), %s (%s)\n", b->mi.name, b->mi.arch, b->mi.n_layer, b->mi.n_vocab,
            b->di.name, b->di.driver_info);
    fprintf(f, "generate %u tokens per sequence (greedy, past end-of-text), %u repeat%s per cell: median (min-max);\n",
            b->gen, b->repeat, b->repeat == 1 ? "" : "s");
    fprintf(f, "prompts: %s, one slice per sequence; prompt steps of %u tokens; GSM settings: %s\n", b->corpus_path,
            b->n_batch, b->o.gsm_settings[0] ? b->o.gsm_settings : "defaults");
    fprintf(f, "KV row: %u values per layer and position (kv_lora_rank + n_rot), %s; KV formula = %u layers x %u x ctx "
               "x batch x %u B\n",
            b->row_floats, b->kv_value_bytes == 2 ? "f16" : "f32", b->mi.n_layer, b->row_floats, b->kv_value_bytes);
    if (b->di.memory_budget)
        fprintf(f, "memory budget: the device has VK_EXT_memory_budget, but gsmrt.h does not report its figures\n");
    else
        fprintf(f, "memory budget: not reported by this device (no VK_EXT_memory_budget)\n");
    if (b->di.unified_memory)
        fprintf(f, "unified memory: device-local and host-visible are one heap here; KV dev / KV host are the runtime's\n"
                   "tiers (device-local pool / host-visible pool), the heap totals count both as device-local\n");
    fprintf(f, "sessions: per context %u keep and %u swap sessions, prefilled once (the first gsmrt_complete_batch,\n"
               "prompts only); every timed call passes the same prompts again, so only their last token is\n"
               "evaluated before decoding. Dense rows run on the keep sessions with dense attention\n"
               "(gsmrt_generate_params.dense); batch 1 uses session 0. prefill tok/s = that first call (dense and\n"
               "keep rows: the keep sessions', swap rows: the swap sessions'); decode tok/s = generated tokens /\n"
               "(wall - prompt time) of a timed call\n",
            b->matrix ? 8 : b->batch, b->matrix ? 8 : b->batch);
    fprintf(f, "columns: KV dev/host = the row's sessions' KV pools (gsmrt_session_gsm_stats; dense = keep's);\n"
               "weights = the context's (shared by all sessions); scratch, staging = bytes in use that the kind's\n"
               "sessions added, x batch / sessions; device-local / host-visible = the Vulkan allocations per heap\n"
               "(blocks of 4 MiB and up per role) without sessions plus the kind's sessions' share, x batch / sessions;\n"
               "KV read/tok = KV bytes a timed call's steps read per generated token (gated steps as the runtime\n"
               "counted them, the others every cached key); gated steps = steps through GSM's gate / generated tokens\n"
               "(deltas of the cumulative GSM statistics over the call); top-1, mean KL = teacher-forced sequence 0\n"
               "(session 0 of keep and swap, decode steps) against dense (keep session 0, one dense prompt step),\n"
               "once per context and mode\n\n");
}

static void print_table_header(FILE *f)
{
    fprintf(f, "| batch | ctx | mode | prompt | prefill tok/s | decode tok/s | weights MiB | KV dev MiB | KV host MiB | "
               "KV formula MiB | scratch MiB | staging MiB | device-local MiB | host-visible MiB | KV read/tok KiB | "
               "dense KV read/tok KiB | gated steps | top-1 | mean KL |\n");
    fprintf(f, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

static void print_row(const struct cell *c, FILE *f)
{
    if (c->n_rep == 0) {
        fprintf(f, "| %u | %u | %s | failed: %s |\n", c->batch, c->ctx, MODE_NAME[c->mode], c->err);
        return;
    }
    char pf[48], dc[48];
    fmt_spread(pf, sizeof pf, c->prefill_tps, c->n_prefill);
    fmt_spread(dc, sizeof dc, c->decode_tps, c->n_rep);
    fprintf(f, "| %u | %u | %s | %u | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | "
               "%llu/%llu |",
            c->batch, c->ctx, MODE_NAME[c->mode], c->n_prompt, pf, dc, mib(c->mem.weights_bytes), mib(c->kv_device),
            mib(c->kv_host), mib(c->kv_formula), mib(c->mem.scratch_bytes), mib(c->mem.staging_bytes),
            mib(c->mem.device_local_bytes), mib(c->mem.host_visible_bytes), c->kv_read_per_tok / 1024.0,
            c->kv_dense_per_tok / 1024.0, (unsigned long long)c->gated_steps, (unsigned long long)c->decode_steps);
    if (c->have_quality) fprintf(f, " %.3f | %.2e |\n", c->top1, c->kl_mean);
    else fprintf(f, " - | - |\n");
    if (c->st != GSMRT_OK) fprintf(f, "|  |  |  | (error: %s) |\n", c->err);
}

static void json_num_array(FILE *f, const double *v, uint32_t n)
{
    fputc('[', f);
    for (uint32_t i = 0; i < n; i++) fprintf(f, "%s%.3f", i ? ", " : "", v[i]);
    fputc(']', f);
}

static bool write_json(const struct bench *b, const struct cell *cells, uint32_t n, double wall_s)
{
    /* Built in memory, then saved by the library's safe writer (never
     * through a link, never over a directory, FIFO or device). */
    char *json = NULL;
    size_t json_len = 0;
    FILE *f = open_memstream(&json, &json_len);
    if (!f) {
        fprintf(stderr, "gsm bench: --json %s: out of memory\n", b->json_path);
        return false;
    }
    fprintf(f, "{\n  \"model\": ");
    json_string(f, b->mi.name);
    fprintf(f, ", \"arch\": ");
    json_string(f, b->mi.arch);
    fprintf(f, ", \"n_layer\": %u, \"n_vocab\": %u,\n  \"device\": ", b->mi.n_layer, b->mi.n_vocab);
    json_string(f, b->di.name);
    fprintf(f, ", \"driver\": ");
    json_string(f, b->di.driver_info);
    fprintf(f, ", \"memory_budget_ext\": %s, \"unified_memory\": %s,\n", b->di.memory_budget ? "true" : "false",
            b->di.unified_memory ? "true" : "false");
    fprintf(f, "  \"gen\": %u, \"repeat\": %u, \"n_batch\": %u, \"kv_row_floats\": %u, \"kv_cache_type\": \"%s\", "
               "\"prompts\": ",
            b->gen, b->repeat, b->n_batch, b->row_floats, b->kv_value_bytes == 2 ? "f16" : "f32");
    json_string(f, b->corpus_path);
    fprintf(f, ", \"gsm_settings\": ");
    json_string(f, b->o.gsm_settings);
    fprintf(f, ", \"wall_s\": %.1f,\n  \"method\": \"per context %u keep and %u swap sessions prefilled once (prompts "
               "only); timed calls reuse the cached prompt (1 token evaluated per sequence) and decode; dense rows on "
               "the keep sessions with gsmrt_generate_params.dense; memory: weights shared, other roles and heaps the "
               "kind's sessions' increase x batch / sessions (heaps plus the context without sessions)\",\n  \"cells\": [\n",
            wall_s, b->matrix ? 8 : b->batch, b->matrix ? 8 : b->batch);
    for (uint32_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        double pm = 0, pl = 0, ph = 0, dm = 0, dl = 0, dh = 0;
        if (c->n_prefill) summarize(c->prefill_tps, c->n_prefill, &pm, &pl, &ph);
        if (c->n_rep) summarize(c->decode_tps, c->n_rep, &dm, &dl, &dh);
        fprintf(f, "    {\"batch\": %u, \"ctx\": %u, \"mode\": \"%s\", \"ok\": %s, \"error\": ", c->batch, c->ctx,
                MODE_NAME[c->mode], c->st == GSMRT_OK ? "true" : "false");
        json_string(f, c->err);
        fprintf(f, ",\n     \"prompt_tokens\": %u, \"generated_tokens\": %llu, \"prompt_tokens_evaluated_per_repeat\": %llu, "
                   "\"repeats\": %u,\n",
                c->n_prompt, (unsigned long long)c->n_generated, (unsigned long long)c->n_evaluated, c->n_rep);
        fprintf(f, "     \"prefill_tok_s\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f, \"runs\": ", pm, pl, ph);
        json_num_array(f, c->prefill_tps, c->n_prefill);
        fprintf(f, ", \"from\": \"the first call on the %u %s sessions\"", c->prefill_seqs,
                c->mode == MODE_SWAP ? "swap" : "keep");
        fprintf(f, "},\n     \"decode_tok_s\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f, \"runs\": ", dm, dl, dh);
        json_num_array(f, c->decode_tps, c->n_rep);
        fprintf(f, "},\n     \"memory\": {\"weights_bytes\": %llu, \"kv_hot_bytes\": %llu, \"kv_cold_bytes\": %llu, "
                   "\"scratch_bytes\": %llu, \"staging_bytes\": %llu, \"device_local_bytes\": %llu, "
                   "\"host_visible_bytes\": %llu,\n                \"kv_device_bytes\": %llu, \"kv_host_bytes\": %llu, "
                   "\"kv_formula_bytes\": %.0f},\n",
                (unsigned long long)c->mem.weights_bytes, (unsigned long long)c->mem.kv_hot_bytes,
                (unsigned long long)c->mem.kv_cold_bytes, (unsigned long long)c->mem.scratch_bytes,
                (unsigned long long)c->mem.staging_bytes, (unsigned long long)c->mem.device_local_bytes,
                (unsigned long long)c->mem.host_visible_bytes, (unsigned long long)c->kv_device,
                (unsigned long long)c->kv_host, c->kv_formula);
        fprintf(f, "     \"kv_read_bytes_per_token\": %.1f, \"dense_kv_read_bytes_per_token\": %.1f, \"gated_steps\": %llu, "
                   "\"decode_steps\": %llu, \"pages_cold\": %llu, \"pages_cold_computed\": %llu, \"pages_moved\": %llu, "
                   "\"layer_steps\": %llu, \"layer_steps_dense_fallback\": %llu, \"skipped_bound_max\": %.4g,\n",
                c->kv_read_per_tok, c->kv_dense_per_tok, (unsigned long long)c->gated_steps,
                (unsigned long long)c->decode_steps, (unsigned long long)c->pages_cold,
                (unsigned long long)c->pages_cold_computed, (unsigned long long)c->pages_moved,
                (unsigned long long)c->layer_steps, (unsigned long long)c->layer_steps_dense, c->skipped_bound_max);
        if (c->have_quality)
            fprintf(f, "     \"quality\": {\"top1_agreement\": %.4f, \"mean_kl\": %.6g, \"max_kl\": %.6g, \"tokens\": %u, "
                       "\"gated_steps\": %u}}%s\n",
                    c->top1, c->kl_mean, c->kl_max, c->q_tokens, c->q_gated, i + 1 < n ? "," : "");
        else
            fprintf(f, "     \"quality\": null}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    char err[1200] = "out of memory";
    bool ok = fclose(f) == 0 && gsmrt_file_save(b->json_path, json, json_len, err, sizeof err) == GSMRT_OK;
    if (!ok) fprintf(stderr, "gsm bench: --json: %s\n", err);
    free(json);
    return ok;
}

/* ---- set-up ------------------------------------------------------------------ */

/* Prompts (text and count) for every context, and sequence 0's
 * teacher-forcing tokens: its prompt, then the next `gen` tokens of text. */
static gsmrt_status make_prompts(struct bench *b, uint32_t max_batch)
{
    uint32_t n_slices = max_batch > 8 ? max_batch : 8;
    for (uint32_t ci = 0; ci < b->n_ctxs; ci++) {
        uint32_t target = b->ctxs[ci] - b->gen - 1;
        for (uint32_t i = 0; i < max_batch; i++) {
            size_t start = slice_start(&b->corpus, i, n_slices), end, n;
            gsmrt_status st = cut_prompt(b->model, &b->corpus, start, target, &end, &n);
            if (st != GSMRT_OK) return st;
            b->prompt[ci][i] = malloc(end - start + 1);
            if (!b->prompt[ci][i]) return GSMRT_E_OUT_OF_HOST_MEMORY;
            memcpy(b->prompt[ci][i], b->corpus.text + start, end - start);
            b->prompt[ci][i][end - start] = '\0';
            b->prompt_tokens[ci][i] = (uint32_t)n;
            if (i > 0) continue;
            /* the same text and more: at least gen tokens past the prompt */
            size_t qend = end, qn = 0;
            st = cut_prompt(b->model, &b->corpus, start, (uint32_t)n + b->gen + 8, &qend, &qn);
            if (st != GSMRT_OK) return st;
            if (qn < n + b->gen) return GSMRT_E_INVALID_ARGUMENT;
            b->q_ids[ci] = malloc(qn * sizeof(int32_t));
            if (!b->q_ids[ci]) return GSMRT_E_OUT_OF_HOST_MEMORY;
            size_t got = 0;
            st = gsmrt_model_tokenize(b->model, b->corpus.text + start, qend - start, true, false, b->q_ids[ci], qn, &got);
            if (st != GSMRT_OK) return st;
            b->q_prompt[ci] = (uint32_t)n;
        }
    }
    return GSMRT_OK;
}

/* KV values per layer and position, from a dense F32 session of one 32-token
 * page (gsmrt_model_info does not report kv_lora_rank and n_rot), and the
 * bytes per value of the cache type the cells run with. */
static gsmrt_status kv_row(struct bench *b)
{
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 32;
    sp.n_batch = 32;
    sp.cache_type = GSMRT_CACHE_F32;   /* 4 bytes a value: the division below */
    gsmrt_session *s = NULL;
    gsmrt_status st = gsmrt_session_create(b->model, &sp, &s);
    gsmrt_gsm_stats gs;
    memset(&gs, 0, sizeof gs);
    gs.struct_size = sizeof gs;
    if (st == GSMRT_OK) st = gsmrt_session_gsm_stats(s, &gs);
    gsmrt_session_destroy(s);
    if (st == GSMRT_OK) b->row_floats = (uint32_t)(gs.kv_device_bytes / ((uint64_t)b->mi.n_layer * 32 * 4));
    b->kv_value_bytes = b->o.cache_type == GSMRT_CACHE_F32 ? 4 : 2;
    return st;
}

static const char BENCH_HELP[] =
    "usage: gsm bench [-m MODEL] [--batch B] [--ctx N] [--gen G] [--gsm off|keep|swap] [--gate-threshold T]\n"
    "                 [--repeat R] [--json FILE] [--matrix] [options]\n"
    "\n"
    "Prefill and decode speed, memory and quality of dense attention against GSM.\n"
    "One cell: B sequences (continuous batching) with prompts that fill the context N\n"
    "less G, each generating G tokens greedily. --matrix runs the standard table:\n"
    "batch {1, 8} x context {512, 2048, 4096} x {dense, keep, swap}.\n"
    "Per context, max(B) keep sessions and max(B) swap sessions are created and\n"
    "prefilled once (the first gsmrt_complete_batch, prompts only: prefill tokens/s,\n"
    "prompts evaluate one sequence at a time); every cell and repeat then calls\n"
    "gsmrt_complete_batch again with the same prompts, which reuses the cached prompt\n"
    "and evaluates only its last token: decode tokens/s = generated tokens / (wall\n"
    "time - prompt time), all sequences together. Dense rows run on the keep sessions\n"
    "with dense attention (gsmrt_generate_params.dense). Per row also the memory the\n"
    "runtime accounts per role and heap (weights shared; the rest the kind's sessions'\n"
    "share for the batch) beside the MLA KV formula, the KV bytes the timed steps read\n"
    "per generated token, and the quality against dense on the same tokens (sequence\n"
    "0's prompt, then G tokens of the text after it, one decode step each, in a dense\n"
    "session and in session 0 of keep and swap): top-1 agreement and mean\n"
    "KL(dense || GSM) of the logits.\n"
    "The table goes to stdout (Markdown), progress to stderr.\n"
    "\n"
    "  -m, --model PATH         GGUF model (default: the bundled gsm-tiny model)\n"
    "      --batch B            sequences decoded together, 1..64 (default 1)\n"
    "      --ctx N              context per sequence, 64..65536 (default 2048)\n"
    "      --gen G              tokens generated per sequence, 1..1024 (default 32)\n"
    "      --gsm MODE           off (dense), keep or swap (default swap)\n"
    "      --gate-threshold T   GSM gate threshold in [0, 1) (default: the runtime's, 0.05)\n"
    "      --threshold T        the same\n"
    "      --gsm-set KEY=VALUE  any GSM configuration key for the GSM rows (repeatable)\n"
    "      --gsm-config FILE    GSM configuration for the GSM rows (low_freq_policy is set per row)\n"
    "      --repeat R           runs per cell, 1..16 (default 3; 1 with --matrix)\n"
    "      --matrix             the standard table (ignores --batch, --ctx, --gsm)\n"
    "      --json FILE          also write every figure to FILE as JSON\n"
    "      --prompts FILE       the prompt text (default: calib-dialogues.txt next to the model)\n"
    "  -b, --batch-size N       prompt tokens per step (default 256; at least B)\n"
    "      --cache-type T       KV cache type of every row: f16 (default) or f32 (also -ctk,\n"
    "                           --cache-type-k); the KV formula and bytes read follow it\n"
    "      --device NAME        Vulkan device index or name\n"
    "      --validate           enable the Khronos validation layer\n"
    "  -v, --verbose            the runtime's info messages\n";

static bool parse_mode(const char *v, enum mode *m)
{
    if (strcmp(v, "off") == 0 || strcmp(v, "dense") == 0) *m = MODE_DENSE;
    else if (strcmp(v, "keep") == 0) *m = MODE_KEEP;
    else if (strcmp(v, "swap") == 0) *m = MODE_SWAP;
    else return false;
    return true;
}

int cmd_bench(int argc, char **argv)
{
    struct bench *b = calloc(1, sizeof *b);
    if (!b) return EXIT_RUNTIME;
    opts_init(&b->o);
    b->cmd = "bench";
    b->batch = 1;
    b->ctx = 2048;
    b->gen = 32;
    b->mode = MODE_SWAP;
    uint32_t repeat = 0;
    const char *prompts_path = NULL;
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(BENCH_HELP, stdout);
            rc = 0;
            goto out;
        } else if (strcmp(a, "--matrix") == 0) {
            b->matrix = true;
        } else if (strcmp(a, "--batch") == 0 && has) {
            if (!parse_u32("bench", a, argv[++i], 1, MAX_BATCH, &b->batch)) goto out;
        } else if (strcmp(a, "--ctx") == 0 && has) {
            if (!parse_u32("bench", a, argv[++i], 64, 65536, &b->ctx)) goto out;
        } else if (strcmp(a, "--gen") == 0 && has) {
            if (!parse_u32("bench", a, argv[++i], 1, 1024, &b->gen)) goto out;
        } else if (strcmp(a, "--repeat") == 0 && has) {
            if (!parse_u32("bench", a, argv[++i], 1, MAX_REPEAT, &repeat)) goto out;
        } else if (strcmp(a, "--gsm") == 0 && has) {
            if (!parse_mode(argv[++i], &b->mode)) {
                fprintf(stderr, "gsm bench: --gsm expects off, keep or swap, got '%s'\n", argv[i]);
                goto out;
            }
        } else if (strcmp(a, "--json") == 0 && has) {
            b->json_path = argv[++i];
        } else if (strcmp(a, "--prompts") == 0 && has) {
            prompts_path = argv[++i];
        } else if (strcmp(a, "--threshold") == 0 && has) {
            float t;
            if (!parse_float("bench", a, argv[++i], 0.0f, 0.999999f, &t)) goto out;
            size_t used = strlen(b->o.gsm_settings);   /* as --gate-threshold records it */
            snprintf(b->o.gsm_settings + used, sizeof b->o.gsm_settings - used, "%sgate_threshold=%s",
                     used ? ";" : "", argv[i]);
        } else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0 || strcmp(a, "--device") == 0 ||
                   strcmp(a, "--validate") == 0 || strcmp(a, "--gsm-set") == 0 || strcmp(a, "--gsm-config") == 0 ||
                   strcmp(a, "--gate-threshold") == 0 || strcmp(a, "-b") == 0 || strcmp(a, "--batch-size") == 0 ||
                   strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0 || strcmp(a, "--cache-type") == 0 ||
                   strcmp(a, "-ctk") == 0 || strcmp(a, "--cache-type-k") == 0) {
            if (opts_parse_common(&b->o, "bench", argc, argv, &i) < 0) goto out;
        } else {
            fprintf(stderr, "gsm bench: unknown option or missing value '%s' (see gsm bench --help)\n", a);
            goto out;
        }
    }
    b->repeat = repeat ? repeat : b->matrix ? 1 : 3;
    if (b->matrix) {
        static const uint32_t ctxs[] = {512, 2048, 4096};
        b->n_ctxs = 3;
        memcpy(b->ctxs, ctxs, sizeof ctxs);
    } else {
        b->n_ctxs = 1;
        b->ctxs[0] = b->ctx;
    }
    uint32_t max_batch = b->matrix ? 8 : b->batch;
    for (uint32_t ci = 0; ci < b->n_ctxs; ci++) {
        if (b->ctxs[ci] < b->gen + 16) {
            fprintf(stderr, "gsm bench: --ctx %u leaves no room for a prompt and --gen %u\n", b->ctxs[ci], b->gen);
            goto out;
        }
    }
    b->n_batch = b->o.n_batch ? b->o.n_batch : 256;
    if (b->n_batch < max_batch) {
        fprintf(stderr, "gsm bench: -b %u is smaller than the batch of %u sequences\n", b->n_batch, max_batch);
        goto out;
    }

    /* model, device, prompts */
    rc = EXIT_RUNTIME;
    if (!load_model(&b->o, "bench", &b->ctx_, &b->model)) goto out;
    b->mi.struct_size = sizeof b->mi;
    gsmrt_device_info_init(&b->di, sizeof b->di);
    if (gsmrt_model_describe(b->model, &b->mi) != GSMRT_OK || gsmrt_context_device(b->ctx_, &b->di) != GSMRT_OK) {
        fprintf(stderr, "gsm bench: %s\n", gsmrt_context_last_error(b->ctx_));
        goto out;
    }
    static char corpus_buf[4096];
    if (!prompts_path) {
        const char *mp = b->o.model ? b->o.model : default_model_path();
        const char *slash = strrchr(mp, '/');
        snprintf(corpus_buf, sizeof corpus_buf, "%.*scalib-dialogues.txt", slash ? (int)(slash - mp + 1) : 0, mp);
        prompts_path = corpus_buf;
        if (access(prompts_path, R_OK) != 0) {
            fprintf(stderr, "gsm bench: %s not found; pass --prompts FILE\n", prompts_path);
            rc = EXIT_USAGE;
            goto out;
        }
    }
    b->corpus_path = prompts_path;
    char *text = cli_read_file("bench", prompts_path);
    if (!text) goto out;
    b->corpus.len = strlen(text);
    b->corpus.text = malloc(2 * b->corpus.len + 1);
    if (!b->corpus.text) {
        gsmrt_file_free(text);
        goto out;
    }
    memcpy(b->corpus.text, text, b->corpus.len);
    memcpy(b->corpus.text + b->corpus.len, text, b->corpus.len + 1);
    gsmrt_file_free(text);
    gsmrt_status st = kv_row(b);
    if (st == GSMRT_OK) st = make_prompts(b, max_batch);
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm bench: preparing the prompts: %s (%s)\n",
                st == GSMRT_E_INVALID_ARGUMENT ? "the prompt text is too short for the context"
                                                : gsmrt_context_last_error(b->ctx_),
                gsmrt_status_name(st));
        goto out;
    }

    /* the cells, context by context (a cut-short run still has whole contexts) */
    static const uint32_t batches[] = {1, 8};
    uint32_t n_cells = b->matrix ? 2 * 3 * MODE_COUNT : 1;
    struct cell *cells = calloc(n_cells, sizeof *cells);
    if (!cells) goto out;
    if (b->matrix) {
        uint32_t k = 0;
        for (uint32_t ci = 0; ci < 3; ci++)      /* a cut-short run still has whole contexts */
            for (uint32_t bi = 0; bi < 2; bi++)
                for (uint32_t m = 0; m < MODE_COUNT; m++)
                    cells[k++] = (struct cell){.batch = batches[bi], .ctx = b->ctxs[ci], .mode = (enum mode)m};
    } else {
        cells[0] = (struct cell){.batch = b->batch, .ctx = b->ctx, .mode = b->mode};
    }
    b->tty = isatty(STDERR_FILENO);
    b->t_start = now_ms();
    b->n_cells = n_cells;
    /* rows print as their cells finish (and the JSON is rewritten), so a long
     * matrix shows its results as it goes */
    print_header(b, stdout);
    print_table_header(stdout);
    /* the first failed write stops the run (main reports it) */
    bool out_ok = cli_stdout_flush();
    bool all_ok = true, json_ok = true;
    double wall_s = 0;
    for (uint32_t i0 = 0; i0 < n_cells && out_ok;) {
        uint32_t ci = ctx_index(b, cells[i0].ctx), i1 = i0;
        bool need_keep = false, need_swap = false;
        for (; i1 < n_cells && cells[i1].ctx == cells[i0].ctx; i1++) {
            need_keep = need_keep || cells[i1].mode != MODE_SWAP;
            need_swap = need_swap || cells[i1].mode == MODE_SWAP;
        }
        b->cell_i = i0;
        b->rep_i = 0;
        b->cur = &cells[i0];
        /* the context without sessions, then the kinds' sessions, each prefilled once */
        gsmrt_memory_usage base;
        struct kind keep, swap;
        memset(&keep, 0, sizeof keep);
        memset(&swap, 0, sizeof swap);
        keep.mode = MODE_KEEP;
        swap.mode = MODE_SWAP;
        st = context_memory(b, &base);
        if (st != GSMRT_OK) {
            kind_fail(b, &keep, st, "gsmrt_context_memory");
            swap.st = keep.st;
            snprintf(swap.err, sizeof swap.err, "%s", keep.err);
        } else {
            if (need_keep) kind_open(b, &keep, ci, MODE_KEEP, max_batch);
            if (need_swap) kind_open(b, &swap, ci, MODE_SWAP, max_batch);
        }
        struct quality q[MODE_COUNT];
        measure_quality(b, ci, &keep, &swap, q);
        for (uint32_t i = i0; i < i1; i++) {
            b->cell_i = i;
            run_cell(b, &cells[i], cells[i].mode == MODE_SWAP ? &swap : &keep, &base, &q[cells[i].mode]);
            all_ok = all_ok && cells[i].st == GSMRT_OK;
            if (cells[i].st != GSMRT_OK)
                fprintf(stderr, "%sgsm bench: %s\n", b->tty ? "\r\033[K" : "", cells[i].err);
            print_row(&cells[i], stdout);
            if (!(out_ok = cli_stdout_flush())) break;
            wall_s = (now_ms() - b->t_start) / 1000.0;
            if (b->json_path) json_ok = write_json(b, cells, i + 1, wall_s);
        }
        kind_close(&keep);
        kind_close(&swap);
        i0 = i1;
    }
    if (b->tty) fprintf(stderr, "\r\033[K");
    fprintf(stderr, "gsm bench: %u cell%s in %.1f s\n", n_cells, n_cells == 1 ? "" : "s", wall_s);
    printf("\n%u cell%s in %.1f s\n", n_cells, n_cells == 1 ? "" : "s", wall_s);
    rc = all_ok && json_ok ? 0 : EXIT_RUNTIME;
    free(cells);
out:
    for (uint32_t ci = 0; ci < MAX_CTX; ci++) {
        for (uint32_t i = 0; i < MAX_BATCH; i++) free(b->prompt[ci][i]);
        free(b->q_ids[ci]);
    }
    free(b->corpus.text);
    unload(b->ctx_, b->model, NULL);
    free(b);
    return rc;
}
