/* sampler.h -- the sampler chain over one step's logits.
 *
 * Order, as llama.cpp's default chain (common_sampler): repetition penalty
 * -> top-k -> top-p -> min-p -> temperature -> draw. Temperature 0 is greedy:
 * the argmax of the penalised logits, ties to the lowest id. The random
 * state (xoshiro256**, seeded through splitmix64) lives in the sampler, so
 * the same seed and the same logits reproduce a run. No global state. A
 * sampler is used by one thread at a time. */
#ifndef GSMRT_SAMPLE_SAMPLER_H
#define GSMRT_SAMPLE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct gsmrt_sampler_params {
    float temperature;      /* >= 0; 0 = greedy */
    int32_t top_k;          /* <= 0: off */
    float top_p;            /* (0, 1]; 1: off */
    float min_p;            /* [0, 1]; 0: off */
    float repeat_penalty;   /* > 0; 1: off. Positive logits are divided, negative multiplied */
    int32_t repeat_last_n;  /* window of accepted tokens the penalty looks at; 0: off */
    uint64_t seed;
};

/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
 * repeat_penalty 1.0 (off), repeat_last_n 64, seed 0. */
struct gsmrt_sampler_params gsmrt_sampler_default_params(void);

struct gsmrt_sampler;

/* GSMRT_E_INVALID_ARGUMENT names the parameter and its range; nothing is
 * clamped. *out is NULL on failure. */
gsmrt_status gsmrt_sampler_create(const gsmrt_allocator *a, const struct gsmrt_sampler_params *p, uint32_t n_vocab,
                                  struct gsmrt_sampler **out, struct gsmrt_err *err);
void gsmrt_sampler_destroy(struct gsmrt_sampler *s);   /* NULL is fine */

/* Picks a token from logits[n_vocab] (not modified). NaN logits are
 * GSMRT_E_INVALID_ARGUMENT; -inf is allowed (never picked unless all are).
 * Does not record the token: call gsmrt_sampler_accept for that. */
gsmrt_status gsmrt_sampler_sample(struct gsmrt_sampler *s, const float *logits, int32_t *token, struct gsmrt_err *err);

/* Records a token of the sequence (prompt or generated) for the repetition
 * window. Ids out of range are ignored. */
void gsmrt_sampler_accept(struct gsmrt_sampler *s, int32_t token);

/* Forgets the window and restarts the random stream from `seed`. */
void gsmrt_sampler_reset(struct gsmrt_sampler *s, uint64_t seed);

/* The PRNG alone, for tests and reuse: xoshiro256** (Blackman & Vigna), its
 * 256-bit state filled by four splitmix64 outputs of the seed. */
struct gsmrt_rng {
    uint64_t s[4];
};
void gsmrt_rng_seed(struct gsmrt_rng *r, uint64_t seed);
uint64_t gsmrt_rng_next(struct gsmrt_rng *r);
/* Uniform in [0, 1): the top 53 bits of the next output. */
double gsmrt_rng_uniform(struct gsmrt_rng *r);

#endif
