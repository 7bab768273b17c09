/* sampler.c -- the sampler chain (see sampler.h). Works on a private copy
 * of the logits as a candidate list that each stage shrinks; all stages
 * follow llama.cpp's samplers (llama-sampling.cpp) in their arithmetic. */
#include "sample/sampler.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"

/* ---- PRNG --------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void gsmrt_rng_seed(struct gsmrt_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t gsmrt_rng_next(struct gsmrt_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t out = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double gsmrt_rng_uniform(struct gsmrt_rng *r)
{
    return (double)(gsmrt_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- the sampler -------------------------------------------------------- */

struct cand {
    int32_t id;
    float logit;
    float p;
};

struct gsmrt_sampler {
    const gsmrt_allocator *alloc;
    struct gsmrt_sampler_params prm;
    uint32_t n_vocab;
    struct cand *cand;      /* [n_vocab] work list */
    struct cand *tmp;       /* [n_vocab] merge-sort buffer */
    int32_t *window;        /* [repeat_last_n] ring of accepted tokens */
    size_t n_window, head;
    uint32_t *count;        /* [n_vocab] occurrences in the window, built per call */
    struct gsmrt_rng rng;
};

struct gsmrt_sampler_params gsmrt_sampler_default_params(void)
{
    return (struct gsmrt_sampler_params){.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                                         .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 0};
}

gsmrt_status gsmrt_sampler_create(const gsmrt_allocator *a, const struct gsmrt_sampler_params *p, uint32_t n_vocab,
                                  struct gsmrt_sampler **out, struct gsmrt_err *err)
{
    if (!out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: NULL out");
    *out = NULL;
    if (!p) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: NULL params");
    if (n_vocab == 0 || n_vocab > INT32_MAX)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: n_vocab %u out of range [1, 2^31)", n_vocab);
    if (!(p->temperature >= 0.0f) || isinf(p->temperature))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: temperature %g out of range [0, inf)",
                             (double)p->temperature);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: top_p %g out of range (0, 1]", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: min_p %g out of range [0, 1]", (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: repeat_penalty %g out of range (0, inf)",
                             (double)p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sampler: repeat_last_n %d out of range [0, 2^31)",
                             (int)p->repeat_last_n);
    struct gsmrt_sampler *s = gsmrt_mem_calloc(a, 1, sizeof *s);
    if (!s) goto oom;
    s->alloc = a;
    s->prm = *p;
    s->n_vocab = n_vocab;
    s->cand = gsmrt_mem_calloc(a, n_vocab, sizeof *s->cand);
    s->tmp = gsmrt_mem_calloc(a, n_vocab, sizeof *s->tmp);
    s->count = gsmrt_mem_calloc(a, n_vocab, sizeof *s->count);
    if (!s->cand || !s->tmp || !s->count) goto oom;
    if (p->repeat_last_n > 0) {
        s->window = gsmrt_mem_calloc(a, (size_t)p->repeat_last_n, sizeof *s->window);
        if (!s->window) goto oom;
    }
    gsmrt_rng_seed(&s->rng, p->seed);
    *out = s;
    return GSMRT_OK;
oom:
    gsmrt_sampler_destroy(s);
    return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "sampler: n_vocab %u", n_vocab);
}

void gsmrt_sampler_destroy(struct gsmrt_sampler *s)
{
    if (!s) return;
    gsmrt_mem_free(s->alloc, s->cand);
    gsmrt_mem_free(s->alloc, s->tmp);
    gsmrt_mem_free(s->alloc, s->count);
    gsmrt_mem_free(s->alloc, s->window);
    gsmrt_mem_free(s->alloc, s);
}

void gsmrt_sampler_accept(struct gsmrt_sampler *s, int32_t token)
{
    if (!s || !s->window || token < 0 || (uint32_t)token >= s->n_vocab) return;
    size_t cap = (size_t)s->prm.repeat_last_n;
    s->window[s->head] = token;
    s->head = (s->head + 1) % cap;
    if (s->n_window < cap) s->n_window++;
}

void gsmrt_sampler_reset(struct gsmrt_sampler *s, uint64_t seed)
{
    if (!s) return;
    s->n_window = s->head = 0;
    s->prm.seed = seed;
    gsmrt_rng_seed(&s->rng, seed);
}

/* Higher logit first, then lower id: a total order, so every stage is
 * deterministic. Merge sort: stable, O(n log n), no recursion into qsort. */
static bool cand_before(const struct cand *x, const struct cand *y)
{
    return x->logit > y->logit || (x->logit == y->logit && x->id < y->id);
}

static void sort_cands(struct cand *v, struct cand *tmp, size_t n)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = cand_before(&v[j], &v[i]) ? v[j++] : v[i++];
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* p = softmax(logit) over the first n (sorted) candidates. */
static void softmax(struct cand *c, size_t n)
{
    float max = c[0].logit;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        c[i].p = expf(c[i].logit - max);
        sum += c[i].p;
    }
    for (size_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / sum);
}

gsmrt_status gsmrt_sampler_sample(struct gsmrt_sampler *s, const float *logits, int32_t *token, struct gsmrt_err *err)
{
    if (!s || !logits || !token) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sample: NULL argument");
    *token = -1;
    const struct gsmrt_sampler_params *p = &s->prm;
    size_t n = s->n_vocab;
    for (size_t i = 0; i < n; i++) {
        if (isnan(logits[i]))
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "sample: logit %zu is NaN", i);
        s->cand[i] = (struct cand){(int32_t)i, logits[i], 0.0f};
    }

    /* repetition penalty: once per distinct token in the window */
    if (p->repeat_penalty != 1.0f && s->n_window > 0) {
        for (size_t i = 0; i < s->n_window; i++) s->count[s->window[i]]++;
        for (size_t i = 0; i < s->n_window; i++) {
            int32_t id = s->window[i];
            if (s->count[id] == 0) continue;
            s->count[id] = 0;
            float *l = &s->cand[id].logit;
            if (*l <= 0.0f) *l *= p->repeat_penalty;
            else *l /= p->repeat_penalty;
        }
    }

    if (p->temperature == 0.0f) {   /* greedy: first maximum */
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (s->cand[i].logit > s->cand[best].logit) best = i;
        *token = s->cand[best].id;
        return GSMRT_OK;
    }

    sort_cands(s->cand, s->tmp, n);
    if (s->cand[0].logit == -INFINITY) {   /* nothing is possible: take the lowest id */
        *token = s->cand[0].id;
        return GSMRT_OK;
    }
    size_t keep = n;
    while (keep > 1 && s->cand[keep - 1].logit == -INFINITY) keep--;

    if (p->top_k > 0 && (size_t)p->top_k < keep) keep = (size_t)p->top_k;

    if (p->top_p < 1.0f) {   /* smallest prefix whose mass reaches top_p */
        softmax(s->cand, keep);
        double cum = 0.0;
        for (size_t i = 0; i < keep; i++) {
            cum += s->cand[i].p;
            if (cum >= p->top_p) {
                keep = i + 1;
                break;
            }
        }
    }

    if (p->min_p > 0.0f) {   /* p_i >= min_p * p_max, i.e. logit_i >= logit_max + log(min_p) */
        float min_logit = s->cand[0].logit + logf(p->min_p);
        size_t k = 1;
        while (k < keep && s->cand[k].logit >= min_logit) k++;
        keep = k;
    }

    for (size_t i = 0; i < keep; i++) s->cand[i].logit /= p->temperature;
    softmax(s->cand, keep);
    double u = gsmrt_rng_uniform(&s->rng), cum = 0.0;
    for (size_t i = 0; i < keep; i++) {
        cum += s->cand[i].p;
        if (u < cum) {
            *token = s->cand[i].id;
            return GSMRT_OK;
        }
    }
    *token = s->cand[keep - 1].id;   /* rounding left u just above the total */
    return GSMRT_OK;
}
