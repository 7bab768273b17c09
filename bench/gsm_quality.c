/* gsm_quality.c -- GSM against dense attention on the same model and inputs
 * (DESIGN.md "Quality and speed are measured"): top-1 agreement, perplexity
 * difference, recall of an early fact, KL divergence per token, decode speed
 * and KV bytes read per token, per context x low_freq_policy x gate_threshold.
 * Uses the public API only (include/gsmrt.h).
 *
 * The inputs are multi-turn retrieval chats built like tools/corpus.py's
 * retrieval dialogues, deterministically from a seed: facts in the first user
 * turn, held-out fortune turns as filler (tests/data/golden/heldout.txt), and
 * at each context (1k, 2k, 4k) the question for one of the facts with its
 * expected answer. One chat serves every context: it is fed up to the first
 * checkpoint, measured, continued to the next, and so on, so each session
 * prefills the longest context once. At a checkpoint the last --window tokens
 * (filler tail, questions, answers) go in one decode step per token (GSM's gate
 * takes part, as in generation); everything else is prompt steps (dense).
 * The answers are teacher-forced, so every session holds the same tokens:
 * "recall" counts the answers that greedy decoding reproduces exactly (every
 * token of the answer is the arg-max given the chat so far), the same as
 * gsmrt_session_generate at temperature 0 answering exactly.
 *
 *   usage: gsm_quality [-m MODEL] [--contexts 1024,2048,4096] [--thresholds 0,0.05,0.1,0.3]
 *                      [--policies keep,swap] [--chats N] [--json FILE] ...   (--help) */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gsmrt.h"

#define MAX_LIST 8        /* contexts, thresholds, policies */
#define MAX_QUESTIONS 9   /* facts per chat: one per fact kind */
#define MAX_FORTUNES 1024

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of the whole process (lavapipe's worker threads included): on a
 * shared machine a steadier measure of the work than the wall clock. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- deterministic random numbers (splitmix64) ---------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t rng_below(uint64_t *s, uint32_t n) { return (uint32_t)(rng_next(s) % n); }
static const char *rng_pick(uint64_t *s, const char *const *v, uint32_t n) { return v[rng_below(s, n)]; }
#define PICK(s, arr) rng_pick((s), (arr), (uint32_t)(sizeof(arr) / sizeof(arr)[0]))

/* ---- the dialogue vocabulary of tools/corpus.py ----------------------------- */

static const char *const FIRST_NAMES[] = {
    "Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry", "Irene", "Jack", "Karen", "Liam",
    "Maria", "Nora", "Oscar", "Paula", "Quinn", "Rosa", "Sam", "Tina", "Uma", "Victor", "Wendy", "Xavier",
    "Yara", "Zoe", "Amir", "Bianca", "Chen", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas"};
static const char *const CITIES[] = {"Paris", "Berlin", "Madrid", "Lisbon", "Oslo", "Vienna", "Prague",
                                     "Dublin", "Athens", "Rome", "Warsaw", "Cairo", "Lima", "Quito",
                                     "Tokyo", "Seoul", "Hanoi", "Delhi", "Nairobi", "Dakar", "Sydney"};
static const char *const COLORS[] = {"red",    "blue",  "green",  "yellow", "purple", "orange", "black",
                                     "white", "silver", "golden", "pink",   "brown",  "violet", "grey"};
static const char *const ANIMALS[] = {"cat", "dog", "parrot", "rabbit", "hamster", "horse", "turtle", "ferret"};
static const char *const OBJECTS[] = {"car", "bike", "boat", "kite", "lamp", "clock", "guitar", "piano"};
static const char *const SYL[] = {"ba", "be", "bi", "bo", "ka", "ke", "ki", "ko", "la", "le", "li", "lo",
                                  "ma", "me", "mi", "mo", "na", "ne", "ni", "no", "ra", "re", "ri", "ro",
                                  "sa", "se", "ta", "te", "to", "va", "zo", "dor", "mar", "lin", "tis"};
static const char *const ACKS[] = {"Got it. I will remember that.", "OK, noted.",
                                   "Understood. I will keep that in mind.", "Thanks, I have noted it.",
                                   "Sure, I will remember.", "Noted."};
static const char *const ASKS[] = {"Tell me a fortune.", "Give me a fortune.", "Say something wise.",
                                   "Another one, please.", "Tell me a joke.", "Share a thought.",
                                   "What does the fortune cookie say?"};
static const char *const REPLIES[] = {"Nice one.", "Ha!", "Indeed.", "Very true.", "I like that."};

static void rand_digits(uint64_t *s, uint32_t lo, uint32_t hi, char *out)
{
    uint32_t n = lo + rng_below(s, hi - lo + 1);
    out[0] = (char)('1' + rng_below(s, 9));
    for (uint32_t i = 1; i < n; i++) out[i] = (char)('0' + rng_below(s, 10));
    out[n] = 0;
}

struct fact {
    char value[64];
    char statement[160], question[96], answer[160];
};

/* make_fact() of tools/corpus.py for one of its nine kinds. */
static void make_fact(uint64_t *s, uint32_t kind, struct fact *f)
{
    char d[16], w[32] = "";
    switch (kind) {
    case 0:
        snprintf(f->value, sizeof f->value, "%.63s", PICK(s, FIRST_NAMES));
        snprintf(f->statement, sizeof f->statement, "My name is %.63s.", f->value);
        snprintf(f->question, sizeof f->question, "What is my name?");
        snprintf(f->answer, sizeof f->answer, "Your name is %.63s.", f->value);
        break;
    case 1:
        for (uint32_t i = 0, n = 2 + rng_below(s, 2); i < n; i++) w[i] = (char)('A' + rng_below(s, 26)), w[i + 1] = 0;
        rand_digits(s, 3, 4, d);
        snprintf(f->value, sizeof f->value, "%.8s-%.8s", w, d);
        snprintf(f->statement, sizeof f->statement, "The secret code is %.63s.", f->value);
        snprintf(f->question, sizeof f->question, "What is the secret code?");
        snprintf(f->answer, sizeof f->answer, "The secret code is %.63s.", f->value);
        break;
    case 2:
        rand_digits(s, 3, 6, f->value);
        snprintf(f->statement, sizeof f->statement, "My lucky number is %.63s.", f->value);
        snprintf(f->question, sizeof f->question, "What is my lucky number?");
        snprintf(f->answer, sizeof f->answer, "Your lucky number is %.63s.", f->value);
        break;
    case 3:
        snprintf(f->value, sizeof f->value, "%.63s", PICK(s, CITIES));
        snprintf(f->statement, sizeof f->statement, "I live in %.63s.", f->value);
        snprintf(f->question, sizeof f->question, "Where do I live?");
        snprintf(f->answer, sizeof f->answer, "You live in %.63s.", f->value);
        break;
    case 4: {
        const char *a = PICK(s, ANIMALS);
        snprintf(f->value, sizeof f->value, "%.63s", PICK(s, FIRST_NAMES));
        snprintf(f->statement, sizeof f->statement, "My %.63s is called %.63s.", a, f->value);
        snprintf(f->question, sizeof f->question, "What is my %.63s called?", a);
        snprintf(f->answer, sizeof f->answer, "Your %.63s is called %.63s.", a, f->value);
        break;
    }
    case 5:
        rand_digits(s, 2, 4, f->value);
        snprintf(f->statement, sizeof f->statement, "The meeting is in room %.63s.", f->value);
        snprintf(f->question, sizeof f->question, "Which room is the meeting in?");
        snprintf(f->answer, sizeof f->answer, "The meeting is in room %.63s.", f->value);
        break;
    case 6:
        for (uint32_t i = 0, n = 1 + rng_below(s, 3); i < n; i++) strcat(w, PICK(s, SYL));
        rand_digits(s, 2, 3, d);
        snprintf(f->value, sizeof f->value, "%.24s%.8s", w, d);
        snprintf(f->statement, sizeof f->statement, "The password is %.63s.", f->value);
        snprintf(f->question, sizeof f->question, "What is the password?");
        snprintf(f->answer, sizeof f->answer, "The password is %.63s.", f->value);
        break;
    case 7: {
        const char *o = PICK(s, OBJECTS);
        snprintf(f->value, sizeof f->value, "%.63s", PICK(s, COLORS));
        snprintf(f->statement, sizeof f->statement, "My %.63s is %.63s.", o, f->value);
        snprintf(f->question, sizeof f->question, "What color is my %.63s?", o);
        snprintf(f->answer, sizeof f->answer, "Your %.63s is %.63s.", o, f->value);
        break;
    }
    default: {
        const char *o = PICK(s, OBJECTS);
        rand_digits(s, 2, 3, f->value);
        snprintf(f->statement, sizeof f->statement, "I paid %.63s euros for my %.63s.", f->value, o);
        snprintf(f->question, sizeof f->question, "How much did I pay for my %.63s?", o);
        snprintf(f->answer, sizeof f->answer, "You paid %.63s euros for your %.63s.", f->value, o);
        break;
    }
    }
}

/* ---- chats as token ids ------------------------------------------------------- */

struct tokens {
    int32_t *id;
    size_t n, cap;
};

static int tokens_push(struct tokens *t, const int32_t *id, size_t n)
{
    if (t->n + n > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->n + n) cap *= 2;
        int32_t *p = realloc(t->id, cap * sizeof *p);
        if (!p) return 1;
        t->id = p, t->cap = cap;
    }
    memcpy(t->id + t->n, id, n * sizeof *id);
    t->n += n;
    return 0;
}

/* One checkpoint: the chat up to `end` tokens; [win, end) is fed one token per
 * step; answer k occupies [ans_lo[k], ans_hi[k]) (content tokens: the answer
 * without its "\n" and <|end|>). */
struct checkpoint {
    uint32_t context;
    size_t win, end;
    uint32_t n_ans;
    size_t ans_lo[MAX_QUESTIONS], ans_hi[MAX_QUESTIONS];
};

struct chat {
    struct tokens t;
    struct checkpoint cp[MAX_LIST];
    uint32_t n_cp;
};

static const char *const ROLE_NAME[] = {"system", "user", "assistant"};

/* Appends "<|role|>\n{content}<|end|>\n" (the gsm-tiny chat format, tools/README.md).
 * *content_lo/hi (may be NULL) receive the span of the content's tokens. */
static int push_message(const gsmrt_model *m, struct tokens *t, int role, const char *content, size_t *content_lo,
                        size_t *content_hi)
{
    char buf[2048];
    int32_t ids[1024];
    size_t n = 0;
    snprintf(buf, sizeof buf, "<|%s|>\n%s<|end|>\n", ROLE_NAME[role], content);
    if (gsmrt_model_tokenize(m, buf, strlen(buf), false, true, ids, 1024, &n) != GSMRT_OK || n > 1024 || n < 4)
        return 1;
    /* ids: <|role|>, "\n", content..., <|end|>, "\n": the text between control
     * tokens is tokenized on its own, so "\n" stays a token of its own unless the
     * content starts with white space (never here) */
    size_t base = t->n;
    if (content_lo) *content_lo = base + 2;
    if (content_hi) *content_hi = base + n - 2;
    return tokens_push(t, ids, n);
}

struct fortunes {
    char *text;              /* the file, split in place */
    const char *item[MAX_FORTUNES];
    uint32_t n;
};

/* Paragraphs of the held-out fortunes, separated by empty lines; those of
 * 20..400 bytes (a filler turn of roughly 5..120 tokens). */
static int fortunes_load(const char *path, struct fortunes *f)
{
    char err[1200];
    size_t len = 0;
    if (gsmrt_file_load_text(path, GSMRT_TEXT_FILE_MAX_BYTES, &f->text, &len, err, sizeof err) != GSMRT_OK) {
        fprintf(stderr, "gsm_quality: %s\n", err);
        return 1;
    }
    f->n = 0;
    char *p = f->text;
    while (*p && f->n < MAX_FORTUNES) {
        char *e = strstr(p, "\n\n");
        if (e) *e = 0;
        size_t l = strlen(p);
        while (l && (p[l - 1] == '\n' || p[l - 1] == ' ')) p[--l] = 0;
        if (l >= 20 && l <= 400 && !strstr(p, "<|")) f->item[f->n++] = p;
        if (!e) break;
        p = e + 2;
        while (*p == '\n') p++;
    }
    return f->n < 16;
}

/* fortune_turn() of tools/corpus.py: a user turn and the assistant's reply. */
static int push_filler(const gsmrt_model *m, struct tokens *t, uint64_t *s, const struct fortunes *f)
{
    const char *fortune = f->item[rng_below(s, f->n)];
    uint32_t u = rng_below(s, 100);
    if (u < 12) {
        char rep[512];
        snprintf(rep, sizeof rep, "Repeat after me: %s", fortune);
        return push_message(m, t, GSMRT_ROLE_USER, rep, NULL, NULL) ||
               push_message(m, t, GSMRT_ROLE_ASSISTANT, fortune, NULL, NULL);
    }
    if (u < 20)
        return push_message(m, t, GSMRT_ROLE_USER, fortune, NULL, NULL) ||
               push_message(m, t, GSMRT_ROLE_ASSISTANT, PICK(s, REPLIES), NULL, NULL);
    return push_message(m, t, GSMRT_ROLE_USER, PICK(s, ASKS), NULL, NULL) ||
           push_message(m, t, GSMRT_ROLE_ASSISTANT, fortune, NULL, NULL);
}

/* A chat for contexts[0..n) (ascending): n * q facts stated in the first user
 * turn (at most 3 per turn, the rest in the turns right after it), filler, and
 * before each context's end the questions for q facts with their answers, so
 * that the last answer ends at most `window` / 2 tokens before the context. */
static int chat_build(const gsmrt_model *m, uint64_t seed, const uint32_t *contexts, uint32_t n_ctx_list, uint32_t q,
                      uint32_t window, const struct fortunes *fort, struct chat *c, char *why, size_t why_size)
{
    uint64_t s = seed;
    struct fact facts[MAX_QUESTIONS];
    uint32_t kinds[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, n_facts = n_ctx_list * q;
    for (uint32_t i = 8; i > 0; i--) {
        uint32_t j = rng_below(&s, i + 1), k = kinds[i];
        kinds[i] = kinds[j], kinds[j] = k;
    }
    for (uint32_t i = 0; i < n_facts; i++) make_fact(&s, kinds[i], &facts[i]);
    memset(c, 0, sizeof *c);
    size_t nb = 0;
    int32_t bos[4];
    if (gsmrt_model_tokenize(m, "", 0, true, true, bos, 4, &nb) != GSMRT_OK || nb > 4) return 1;
    if (tokens_push(&c->t, bos, nb)) return 1;
    for (uint32_t i = 0; i < n_facts; i += 3) {
        char turn[512] = "";
        for (uint32_t k = i; k < n_facts && k < i + 3; k++) {
            if (k > i) strcat(turn, " ");
            strcat(turn, facts[k].statement);
        }
        if (push_message(m, &c->t, GSMRT_ROLE_USER, turn, NULL, NULL) ||
            push_message(m, &c->t, GSMRT_ROLE_ASSISTANT, PICK(&s, ACKS), NULL, NULL))
            return 1;
    }
    struct tokens block = {0}, turn = {0};
    int rc = 0;
    for (uint32_t ci = 0; ci < n_ctx_list && !rc; ci++) {
        struct checkpoint *cp = &c->cp[c->n_cp];
        block.n = 0;
        cp->context = contexts[ci];
        cp->n_ans = q;
        size_t lo[MAX_QUESTIONS], hi[MAX_QUESTIONS];
        for (uint32_t k = 0; k < q && !rc; k++) {
            const struct fact *f = &facts[ci * q + k];
            rc = push_message(m, &block, GSMRT_ROLE_USER, f->question, NULL, NULL) ||
                 push_message(m, &block, GSMRT_ROLE_ASSISTANT, f->answer, &lo[k], &hi[k]);
        }
        size_t target = contexts[ci] - window / 4;   /* leave room for a short filler after */
        if (rc || c->t.n + block.n > target) {
            snprintf(why, why_size, "context %u is too short for the facts and questions of this chat", contexts[ci]);
            rc = 1;
            break;
        }
        for (uint32_t misses = 0; misses < 40 && target - c->t.n - block.n > 16;) {
            turn.n = 0;
            if ((rc = push_filler(m, &turn, &s, fort)) != 0) break;
            if (c->t.n + turn.n + block.n <= target) rc = tokens_push(&c->t, turn.id, turn.n);
            else misses++;
        }
        size_t at = c->t.n;
        if (rc || tokens_push(&c->t, block.id, block.n)) break;
        for (uint32_t k = 0; k < q; k++) cp->ans_lo[k] = at + lo[k], cp->ans_hi[k] = at + hi[k];
        cp->end = c->t.n;
        size_t prev = c->n_cp ? c->cp[c->n_cp - 1].end : 1;
        cp->win = cp->end > window && cp->end - window > prev ? cp->end - window : prev;
        if (cp->ans_lo[0] <= cp->win) {
            snprintf(why, why_size, "--window %u is shorter than the questions and answers (%zu tokens)", window,
                     block.n);
            rc = 1;
        }
        c->n_cp++;
    }
    free(block.id);
    free(turn.id);
    return rc;
}

/* ---- measurements ------------------------------------------------------------ */

/* log-softmax of a row of logits, in double. */
static void log_softmax(const float *x, uint32_t n, double *out)
{
    double mx = x[0], sum = 0;
    for (uint32_t i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (uint32_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    double lse = mx + log(sum);
    for (uint32_t i = 0; i < n; i++) out[i] = (double)x[i] - lse;
}

static uint32_t argmax(const float *x, uint32_t n)
{
    uint32_t b = 0;
    for (uint32_t i = 1; i < n; i++) b = x[i] > x[b] ? i : b;
    return b;
}

/* Whether greedy decoding reproduces answer [lo, hi) of the chat, given the
 * logits of window [win, ...) (logits row i follows token win + i). */
static bool recalled(const float *logits, uint32_t V, const struct tokens *t, size_t win, size_t lo, size_t hi)
{
    for (size_t j = lo; j < hi; j++)
        if ((int32_t)argmax(logits + (j - 1 - win) * V, V) != t->id[j]) return false;
    return true;
}

/* One table row: a (context, policy, threshold), summed over the chats. */
struct row {
    uint32_t context;
    const char *policy;   /* NULL: dense */
    double threshold;
    bool failed;
    char error[256];
    uint64_t n_pos, n_top1, n_nll;
    double nll, nll_dense;
    double *kl;           /* n_pos values */
    double kl_sum, kl_max;
    uint32_t recall, recall_dense, n_questions;
    double decode_ms, decode_cpu_ms;
    uint64_t decode_tokens;
    uint64_t head_gates, head_gates_fired;
    double skipped_bound_sum;
    uint64_t steps, bytes_hot, bytes_cold, bytes_dense, pages_gated, pages_cold, pages_cold_computed;
    uint64_t prefetch_hits, prefetch_misses, kv_device_bytes, kv_host_bytes;
    double skipped_bound_max;
    bool swap;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(double *v, uint64_t n, double p)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    uint64_t k = (uint64_t)ceil(p * (double)n);
    return v[k ? k - 1 : 0];
}

struct run {
    gsmrt_context *ctx;
    gsmrt_model *model;
    uint32_t V, n_ctx;
    const struct chat *chat;
    float **dense_logits;   /* per checkpoint, [end - win][V]; filled by the dense run */
    double *lp_d, *lp_g;    /* scratch rows [V] */
};

static void stats_sub(struct row *r, const gsmrt_gsm_stats *a, const gsmrt_gsm_stats *b)
{
    r->steps += b->steps - a->steps;
    r->bytes_hot += b->bytes_read_hot - a->bytes_read_hot;
    r->bytes_cold += b->bytes_read_cold - a->bytes_read_cold;
    r->bytes_dense += b->bytes_read_dense - a->bytes_read_dense;
    r->pages_gated += b->pages_gated - a->pages_gated;
    r->pages_cold += b->pages_cold - a->pages_cold;
    r->pages_cold_computed += b->pages_cold_computed - a->pages_cold_computed;
    r->prefetch_hits += b->prefetch_hits - a->prefetch_hits;
    r->prefetch_misses += b->prefetch_misses - a->prefetch_misses;
    r->head_gates += b->head_gates - a->head_gates;
    r->head_gates_fired += b->head_gates_fired - a->head_gates_fired;
    r->skipped_bound_sum += b->skipped_bound_mean * (double)b->head_gates - a->skipped_bound_mean * (double)a->head_gates;
    r->skipped_bound_max = b->skipped_bound_max > r->skipped_bound_max ? b->skipped_bound_max : r->skipped_bound_max;
    r->kv_device_bytes = b->kv_device_bytes;
    r->kv_host_bytes = b->kv_host_bytes;
    r->swap = b->swap;
}

/* Runs the chat through one session: dense (settings NULL; keeps the logits in
 * run->dense_logits) or GSM with `settings`. rows[i] gets checkpoint i. */
static gsmrt_status run_session(struct run *run, const char *settings, struct row *rows, char *err, size_t err_size)
{
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = run->n_ctx;
    sp.gsm = settings != NULL;
    sp.gsm_settings = settings;
    gsmrt_session *s = NULL;
    gsmrt_status st = gsmrt_session_create(run->model, &sp, &s);
    const struct chat *c = run->chat;
    uint32_t V = run->V;
    float *logits = NULL;
    size_t past = 0;
    for (uint32_t i = 0; st == GSMRT_OK && i < c->n_cp; i++) {
        const struct checkpoint *cp = &c->cp[i];
        struct row *r = &rows[i];
        size_t w = cp->end - cp->win;
        st = gsmrt_session_feed(s, c->t.id + past, cp->win - past, 0, NULL);
        if (st != GSMRT_OK) break;
        if (!settings) {
            logits = run->dense_logits[i] = malloc(w * V * sizeof *logits);
        } else {
            free(logits);
            logits = malloc(w * V * sizeof *logits);
        }
        if (!logits) {
            st = GSMRT_E_OUT_OF_HOST_MEMORY;
            break;
        }
        gsmrt_gsm_stats a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        a.struct_size = b.struct_size = sizeof a;
        gsmrt_session_gsm_stats(s, &a);
        double t0 = now_ms(), c0 = cpu_ms();
        st = gsmrt_session_feed(s, c->t.id + cp->win, w, 1, logits);
        double t1 = now_ms(), c1 = cpu_ms();
        if (st != GSMRT_OK) break;
        gsmrt_session_gsm_stats(s, &b);
        past = cp->end;
        r->decode_ms += t1 - t0;
        r->decode_cpu_ms += c1 - c0;
        r->decode_tokens += w;
        stats_sub(r, &a, &b);
        const float *dl = run->dense_logits[i];
        for (uint32_t k = 0; k < cp->n_ans; k++) {
            r->n_questions++;
            r->recall += recalled(logits, V, &c->t, cp->win, cp->ans_lo[k], cp->ans_hi[k]);
            r->recall_dense += recalled(dl, V, &c->t, cp->win, cp->ans_lo[k], cp->ans_hi[k]);
        }
        double *kl = realloc(r->kl, (r->n_pos + w) * sizeof *kl);
        if (!kl) {
            st = GSMRT_E_OUT_OF_HOST_MEMORY;
            break;
        }
        r->kl = kl;
        for (size_t p = 0; p < w; p++) {
            const float *g = logits + p * V, *d = dl + p * V;
            log_softmax(d, V, run->lp_d);
            log_softmax(g, V, run->lp_g);
            double k = 0;
            for (uint32_t v = 0; v < V; v++) k += exp(run->lp_d[v]) * (run->lp_d[v] - run->lp_g[v]);
            k = k > 0 ? k : 0;   /* rounding can make an exact match a hair negative */
            r->kl[r->n_pos++] = k;
            r->kl_sum += k;
            r->kl_max = k > r->kl_max ? k : r->kl_max;
            r->n_top1 += argmax(g, V) == argmax(d, V);
            if (cp->win + p + 1 < cp->end) {   /* the next token is known: score it */
                int32_t next = c->t.id[cp->win + p + 1];
                r->nll -= run->lp_g[next];
                r->nll_dense -= run->lp_d[next];
                r->n_nll++;
            }
        }
    }
    if (settings) free(logits);
    if (st != GSMRT_OK) snprintf(err, err_size, "%s", gsmrt_context_last_error(run->ctx));
    gsmrt_session_destroy(s);
    return st;
}

/* ---- options, table, JSON -------------------------------------------------------- */

static void usage(FILE *to)
{
    fprintf(to,
            "usage: gsm_quality [options]\n"
            "  -m MODEL            GGUF model (default models/gsm-tiny.gguf)\n"
            "  --contexts LIST     context lengths, ascending (default 1024,2048,4096); each is\n"
            "                      a checkpoint of one chat: questions end just before it\n"
            "  --thresholds LIST   gate_threshold values in [0,1) (default 0,0.05,0.1,0.3)\n"
            "  --policies LIST     low_freq_policy values: keep, swap, auto (default keep,swap)\n"
            "  --chats N           chats (default 1); each is one dialogue through every context\n"
            "  --questions N       facts asked per context and chat (default 2; contexts x N <= 9)\n"
            "  --window N          tokens fed one decode step each before every checkpoint\n"
            "                      (default 128; 16..1024)\n"
            "  --set K=V;...       extra GSM settings for every GSM session (README \"GSM configuration\")\n"
            "  --filler FILE       fortunes for filler turns (default tests/data/golden/heldout.txt)\n"
            "  --seed N            chat seed (default 1)\n"
            "  --json FILE         also write the table as JSON\n"
            "  --expect-exact      exit 1 unless every threshold-0 row has top-1 100 %%, KL < 1e-6 and the\n"
            "                      dense recall, and nothing was logged as an error (for ctest)\n"
            "  --help\n");
}

static int parse_u32(const char *opt, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *e;
    unsigned long x = strtoul(v, &e, 10);
    if (*v == 0 || *e || *v == '-' || x < lo || x > hi) {
        fprintf(stderr, "gsm_quality: %s \"%s\": expected an integer in [%u, %u]\n", opt, v, lo, hi);
        return 1;
    }
    *out = (uint32_t)x;
    return 0;
}

/* Splits a comma-separated list in place into at most MAX_LIST items. */
static int split_list(const char *opt, char *v, char **items, uint32_t *n)
{
    *n = 0;
    for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == MAX_LIST) {
            fprintf(stderr, "gsm_quality: %s: at most %d values\n", opt, MAX_LIST);
            return 1;
        }
        items[(*n)++] = tok;
    }
    if (!*n) fprintf(stderr, "gsm_quality: %s: empty list\n", opt);
    return *n == 0;
}

static uint32_t n_errors_logged;

static void on_log(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level == GSMRT_LOG_ERROR) n_errors_logged++;
    if (level <= GSMRT_LOG_WARN) fprintf(stderr, "\ngsmrt: %s\n", msg);
}

static double row_tok_s(const struct row *r) { return r->decode_ms > 0 ? r->decode_tokens * 1e3 / r->decode_ms : 0; }
static double row_cpu_tok_s(const struct row *r)
{
    return r->decode_cpu_ms > 0 ? r->decode_tokens * 1e3 / r->decode_cpu_ms : 0;
}
static double row_ppl(double nll, uint64_t n) { return n ? exp(nll / (double)n) : 0; }
static double row_bpt(uint64_t bytes, uint64_t steps) { return steps ? (double)bytes / (double)steps : 0; }

int main(int argc, char **argv)
{
    const char *model_path = "models/gsm-tiny.gguf", *json_path = NULL, *extra = NULL;
    const char *filler_path = "tests/data/golden/heldout.txt";
    char ctx_arg[256] = "1024,2048,4096", thr_arg[256] = "0,0.05,0.1,0.3", pol_arg[256] = "keep,swap";
    uint32_t n_chats = 1, n_q = 2, window = 128, seed = 1;
    bool expect_exact = false;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--expect-exact")) {
            expect_exact = true;
            continue;
        } else if (!v) {
            fprintf(stderr, "gsm_quality: unknown option or missing value: %s\n", o);
            usage(stderr);
            return 2;
        } else if (!strcmp(o, "-m")) model_path = v;
        else if (!strcmp(o, "--json")) json_path = v;
        else if (!strcmp(o, "--set")) extra = v;
        else if (!strcmp(o, "--filler")) filler_path = v;
        else if (!strcmp(o, "--contexts")) snprintf(ctx_arg, sizeof ctx_arg, "%s", v);
        else if (!strcmp(o, "--thresholds")) snprintf(thr_arg, sizeof thr_arg, "%s", v);
        else if (!strcmp(o, "--policies")) snprintf(pol_arg, sizeof pol_arg, "%s", v);
        else if (!strcmp(o, "--chats")) bad = parse_u32(o, v, 1, 1000, &n_chats);
        else if (!strcmp(o, "--questions")) bad = parse_u32(o, v, 1, MAX_QUESTIONS, &n_q);
        else if (!strcmp(o, "--window")) bad = parse_u32(o, v, 16, 1024, &window);
        else if (!strcmp(o, "--seed")) bad = parse_u32(o, v, 0, 0xFFFFFFFFu, &seed);
        else {
            fprintf(stderr, "gsm_quality: unknown option: %s\n", o);
            usage(stderr);
            return 2;
        }
        if (bad) return 2;
        i++;
    }
    char *ctx_s[MAX_LIST], *thr_s[MAX_LIST], *pol_s[MAX_LIST];
    uint32_t n_ctxs, n_thr, n_pol, contexts[MAX_LIST];
    double thresholds[MAX_LIST];
    if (split_list("--contexts", ctx_arg, ctx_s, &n_ctxs) || split_list("--thresholds", thr_arg, thr_s, &n_thr) ||
        split_list("--policies", pol_arg, pol_s, &n_pol))
        return 2;
    for (uint32_t i = 0; i < n_ctxs; i++) {
        if (parse_u32("--contexts", ctx_s[i], 256, 1u << 20, &contexts[i])) return 2;
        if (i && contexts[i] <= contexts[i - 1]) {
            fprintf(stderr, "gsm_quality: --contexts: values must be ascending\n");
            return 2;
        }
    }
    for (uint32_t i = 0; i < n_thr; i++) {
        char *e;
        thresholds[i] = strtod(thr_s[i], &e);
        if (*e || !(thresholds[i] >= 0 && thresholds[i] < 1)) {
            fprintf(stderr, "gsm_quality: --thresholds \"%s\": expected a number in [0, 1)\n", thr_s[i]);
            return 2;
        }
    }
    for (uint32_t i = 0; i < n_pol; i++)
        if (strcmp(pol_s[i], "keep") && strcmp(pol_s[i], "swap") && strcmp(pol_s[i], "auto")) {
            fprintf(stderr, "gsm_quality: --policies \"%s\": expected keep, swap or auto\n", pol_s[i]);
            return 2;
        }
    if (n_ctxs * n_q > MAX_QUESTIONS) {
        fprintf(stderr, "gsm_quality: --questions %u x %u contexts: at most %d facts per chat\n", n_q, n_ctxs,
                MAX_QUESTIONS);
        return 2;
    }
    for (uint32_t i = 0; i < n_ctxs; i++)
        if (window >= contexts[i] / 2) {
            fprintf(stderr, "gsm_quality: --window %u: must be under half of every context\n", window);
            return 2;
        }

    struct fortunes fort = {0};
    if (fortunes_load(filler_path, &fort)) {
        fprintf(stderr, "gsm_quality: %s: cannot read fortunes (paragraphs separated by empty lines)\n", filler_path);
        return 1;
    }
    double t_start = now_ms();
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.log_cb = on_log;
    gsmrt_context *ctx = NULL;
    char err[512] = "";
    if (gsmrt_context_create(&cp, &ctx, err, sizeof err) != GSMRT_OK) {
        fprintf(stderr, "gsm_quality: %s\n", err);
        return 1;
    }
    gsmrt_device_info dev;
    gsmrt_device_info_init(&dev, sizeof dev);
    gsmrt_context_device(ctx, &dev);
    gsmrt_model *model = NULL;
    if (gsmrt_model_load(ctx, model_path, NULL, &model) != GSMRT_OK) {
        fprintf(stderr, "gsm_quality: %s\n", gsmrt_context_last_error(ctx));
        gsmrt_context_destroy(ctx);
        return 1;
    }
    gsmrt_model_info mi;
    memset(&mi, 0, sizeof mi);
    mi.struct_size = sizeof mi;
    gsmrt_model_describe(model, &mi);

    /* rows[config][checkpoint]; config 0 is dense, then policy-major */
    uint32_t n_cfg = 1 + n_pol * n_thr;
    struct row *rows = calloc((size_t)n_cfg * n_ctxs, sizeof *rows);
    char (*settings)[512] = calloc(n_cfg, sizeof *settings);
    struct run run = {ctx, model, mi.n_vocab, contexts[n_ctxs - 1], NULL, NULL, NULL, NULL};
    run.dense_logits = calloc(n_ctxs, sizeof *run.dense_logits);
    run.lp_d = malloc(mi.n_vocab * sizeof *run.lp_d);
    run.lp_g = malloc(mi.n_vocab * sizeof *run.lp_g);
    int rc = !rows || !settings || !run.dense_logits || !run.lp_d || !run.lp_g;
    for (uint32_t c = 0; c < n_cfg && !rc; c++) {
        for (uint32_t i = 0; i < n_ctxs; i++) {
            struct row *r = &rows[c * n_ctxs + i];
            r->context = contexts[i];
            if (c) r->policy = pol_s[(c - 1) / n_thr], r->threshold = thresholds[(c - 1) % n_thr];
        }
        if (c)
            snprintf(settings[c], sizeof settings[c], "gate_threshold=%s;low_freq_policy=%s%s%s",
                     thr_s[(c - 1) % n_thr], pol_s[(c - 1) / n_thr], extra ? ";" : "", extra ? extra : "");
    }
    struct chat chat;
    memset(&chat, 0, sizeof chat);
    for (uint32_t ch = 0; ch < n_chats && !rc; ch++) {
        char why[256] = "could not tokenize the chat";
        if (chat_build(model, 0x6A09E667F3BCC908ull ^ ((uint64_t)seed << 32 | ch), contexts, n_ctxs, n_q, window, &fort,
                       &chat, why, sizeof why)) {
            fprintf(stderr, "gsm_quality: chat %u: %s\n", ch + 1, why);
            rc = 1;
            break;
        }
        run.chat = &chat;
        for (uint32_t c = 0; c < n_cfg && !rc; c++) {
            fprintf(stderr, "\r[chat %u/%u] session %u/%u %-40s %6.0f s", ch + 1, n_chats, c + 1, n_cfg,
                    c ? settings[c] : "dense", (now_ms() - t_start) / 1e3);
            struct row *r = &rows[c * n_ctxs];
            if (r->failed) continue;
            char e[256] = "";
            gsmrt_status st = run_session(&run, c ? settings[c] : NULL, r, e, sizeof e);
            if (st != GSMRT_OK) {
                fprintf(stderr, "\ngsm_quality: %s: %s (%s)\n", c ? settings[c] : "dense", gsmrt_status_name(st), e);
                if (!c) rc = 1;   /* nothing to compare against */
                for (uint32_t i = 0; i < n_ctxs; i++)
                    r[i].failed = true, snprintf(r[i].error, sizeof r[i].error, "%.40s: %.200s", gsmrt_status_name(st), e);
            }
        }
        for (uint32_t i = 0; i < n_ctxs; i++) free(run.dense_logits[i]), run.dense_logits[i] = NULL;
        free(chat.t.id);
        memset(&chat, 0, sizeof chat);
    }
    double total_s = (now_ms() - t_start) / 1e3;
    fprintf(stderr, "\r%-100s\r", "");
    fprintf(stderr, "gsm_quality: %u sessions x %u chats in %.0f s\n", n_cfg, n_chats, total_s);

    if (!rc) {
        printf("GSM against dense: %s (%s), %s; %u chat(s), %u question(s) per context and chat, last %u tokens "
               "of each context fed one decode step each%s%s\n",
               mi.name, model_path, dev.name, n_chats, n_q, window, extra ? "; settings " : "", extra ? extra : "");
        if (contexts[n_ctxs - 1] > mi.n_ctx_train)
            printf("note: the model was trained on %u tokens; beyond that its quality is extrapolation\n",
                   mi.n_ctx_train);
        printf("%5s %-6s %5s %7s %16s %6s %6s %9s %9s %7s %6s %6s %9s %6s %8s %6s %15s\n", "ctx", "policy", "thr",
               "top1%", "dPPL (ppl)", "recall", "dense", "KL mean", "KL p99", "tok/s", "xdense", "xcpu", "KV B/tok",
               "fewer", "skip max", "fired%", "cold comp/all");
    }
    FILE *jf = NULL;
    char *json = NULL;   /* built in memory, saved by the runtime's safe writer at the end */
    size_t json_len = 0;
    if (!rc && json_path) {
        jf = open_memstream(&json, &json_len);
        if (!jf) fprintf(stderr, "gsm_quality: %s: out of memory\n", json_path), rc = 1;
        else
            fprintf(jf,
                    "{\"model\": \"%s\", \"model_name\": \"%s\", \"device\": \"%s\", \"n_ctx_train\": %u, "
                    "\"chats\": %u, \"questions\": %u, \"window\": %u, \"extra_settings\": \"%s\", "
                    "\"seconds\": %.1f, \"rows\": [",
                    model_path, mi.name, dev.name, mi.n_ctx_train, n_chats, n_q, window, extra ? extra : "", total_s);
    }
    bool exact_ok = n_errors_logged == 0, first = true;
    for (uint32_t i = 0; i < n_ctxs && !rc; i++) {
        const struct row *d = &rows[i];
        double d_tok = row_tok_s(d), d_ctok = row_cpu_tok_s(d), d_ppl = row_ppl(d->nll_dense, d->n_nll);
        /* the dense row's bytes per token: what the GSM sessions report dense would have read */
        double d_bpt = 0;
        for (uint32_t c = 1; c < n_cfg && d_bpt == 0; c++)
            d_bpt = row_bpt(rows[c * n_ctxs + i].bytes_dense, rows[c * n_ctxs + i].steps);
        for (uint32_t c = 0; c < n_cfg; c++) {
            struct row *r = &rows[c * n_ctxs + i];
            if (r->failed) {
                printf("%5u %-6s %5.2f  failed: %s\n", r->context, r->policy, r->threshold, r->error);
                if (jf)
                    fprintf(jf, "%s{\"context\": %u, \"policy\": \"%s\", \"threshold\": %g, \"error\": \"%s\"}",
                            first ? "" : ", ", r->context, r->policy, r->threshold, gsmrt_status_name(GSMRT_E_INTERNAL));
                first = false;
                exact_ok = exact_ok && r->threshold > 0;
                continue;
            }
            double top1 = r->n_pos ? 100.0 * r->n_top1 / r->n_pos : 0, kl_mean = r->n_pos ? r->kl_sum / r->n_pos : 0;
            double kl_p99 = percentile(r->kl, r->n_pos, 0.99), ppl = row_ppl(r->nll, r->n_nll);
            double tok = row_tok_s(r), ctok = row_cpu_tok_s(r), bpt = c ? row_bpt(r->bytes_hot + r->bytes_cold, r->steps) : d_bpt;
            double rbpt = c ? row_bpt(r->bytes_dense, r->steps) : d_bpt;
            char recall[32], recall_d[32], comp[32] = "-", bpts[32] = "-", fewer[16] = "-", skip[16] = "-";
            snprintf(recall, sizeof recall, "%u/%u", r->recall, r->n_questions);
            snprintf(recall_d, sizeof recall_d, "%u/%u", r->recall_dense, r->n_questions);
            if (c) snprintf(comp, sizeof comp, "%llu/%llu", (unsigned long long)r->pages_cold_computed,
                            (unsigned long long)r->pages_cold);
            if (bpt > 0) snprintf(bpts, sizeof bpts, "%.0f", bpt);
            if (bpt > 0 && rbpt > 0) snprintf(fewer, sizeof fewer, "%.2fx", rbpt / bpt);
            if (c) snprintf(skip, sizeof skip, "%.4f", r->skipped_bound_max);
            char dppl[32];
            if (c) snprintf(dppl, sizeof dppl, "%+.4f (%.3f)", ppl - d_ppl, ppl);
            else snprintf(dppl, sizeof dppl, "0 (%.3f)", ppl);
            char fired[16] = "-";
            if (c && r->head_gates) snprintf(fired, sizeof fired, "%.1f", 100.0 * r->head_gates_fired / r->head_gates);
            printf("%5u %-6s %5s %7.2f %16s %6s %6s %9.2e %9.2e %7.1f %6.2f %6.2f %9s %6s %8s %6s %15s\n", r->context,
                   c ? r->policy : "dense", c ? thr_s[(c - 1) % n_thr] : "-", top1, dppl, recall, recall_d, kl_mean,
                   kl_p99, tok, d_tok > 0 ? tok / d_tok : 0, d_ctok > 0 ? ctok / d_ctok : 0, bpts, fewer, skip, fired,
                   comp);
            if (jf) {
                fprintf(jf,
                        "%s{\"context\": %u, \"policy\": \"%s\", \"threshold\": %g, \"positions\": %llu, "
                        "\"top1_agreement\": %.6f, \"ppl\": %.6f, \"ppl_dense\": %.6f, \"delta_ppl\": %.6f, "
                        "\"recall\": %u, \"recall_dense\": %u, \"questions\": %u, \"kl_mean\": %.9g, "
                        "\"kl_p99\": %.9g, \"kl_max\": %.9g, \"decode_tok_s\": %.3f, \"decode_tok_s_dense\": %.3f, "
                        "\"decode_tok_per_cpu_s\": %.3f, \"decode_tok_per_cpu_s_dense\": %.3f, "
                        "\"head_gates\": %llu, \"head_gates_fired\": %llu, \"skipped_bound_mean\": %.9g, "
                        "\"gated_steps\": %llu, \"kv_bytes_per_token\": %.1f, \"kv_bytes_per_token_dense\": %.1f, "
                        "\"bytes_read_hot\": %llu, \"bytes_read_cold\": %llu, \"bytes_read_dense\": %llu, "
                        "\"pages_gated\": %llu, \"pages_cold\": %llu, \"pages_cold_computed\": %llu, "
                        "\"skipped_bound_max\": %.9g, \"prefetch_hits\": %llu, \"prefetch_misses\": %llu, "
                        "\"swap\": %s, \"kv_device_bytes\": %llu, \"kv_host_bytes\": %llu}",
                        first ? "" : ", ", r->context, c ? r->policy : "dense", r->threshold,
                        (unsigned long long)r->n_pos, top1 / 100, ppl, d_ppl, ppl - d_ppl, r->recall, r->recall_dense,
                        r->n_questions, kl_mean, kl_p99, r->kl_max, tok, d_tok, ctok, d_ctok,
                        (unsigned long long)r->head_gates, (unsigned long long)r->head_gates_fired,
                        r->head_gates ? r->skipped_bound_sum / (double)r->head_gates : 0.0, (unsigned long long)r->steps, bpt, rbpt,
                        (unsigned long long)r->bytes_hot, (unsigned long long)r->bytes_cold,
                        (unsigned long long)r->bytes_dense, (unsigned long long)r->pages_gated,
                        (unsigned long long)r->pages_cold, (unsigned long long)r->pages_cold_computed,
                        r->skipped_bound_max, (unsigned long long)r->prefetch_hits,
                        (unsigned long long)r->prefetch_misses, r->swap ? "true" : "false",
                        (unsigned long long)r->kv_device_bytes, (unsigned long long)r->kv_host_bytes);
            }
            first = false;
            if (c && r->threshold == 0 &&
                (r->n_top1 != r->n_pos || r->kl_max >= 1e-6 || r->recall != r->recall_dense || r->n_pos == 0)) {
                exact_ok = false;
                fprintf(stderr, "gsm_quality: context %u, %s, threshold 0: top-1 %llu/%llu, KL max %.3g, recall %u "
                                "against dense %u: not exact\n", r->context, r->policy, (unsigned long long)r->n_top1,
                        (unsigned long long)r->n_pos, r->kl_max, r->recall, r->recall_dense);
            }
        }
    }
    if (jf) {
        fprintf(jf, "]}\n");
        char werr[1200] = "out of memory";
        if (fclose(jf) != 0 || gsmrt_file_save(json_path, json, json_len, werr, sizeof werr) != GSMRT_OK)
            fprintf(stderr, "gsm_quality: %s\n", werr), rc = 1;
        free(json);
    }
    bool any_exact = false;
    for (uint32_t i = 0; i < n_thr; i++) any_exact = any_exact || thresholds[i] == 0;
    if (!rc && expect_exact && (!exact_ok || !any_exact)) {
        fprintf(stderr, "gsm_quality: --expect-exact failed (%u errors logged%s)\n", n_errors_logged,
                any_exact ? "" : ", no threshold 0 among --thresholds");
        rc = 1;
    }
    for (uint32_t c = 0; rows && c < n_cfg * n_ctxs; c++) free(rows[c].kl);
    free(rows);
    free(settings);
    free(run.dense_logits);
    free(run.lp_d);
    free(run.lp_g);
    gsmrt_file_free(fort.text);
    gsmrt_model_destroy(model);
    gsmrt_context_destroy(ctx);
    return rc;
}
