/* kmeans.h -- deterministic k-means++ for small feature sets (per-head
 * calibration features, a few dozen points of a few dimensions).
 *
 * Determinism: the PRNG state is passed in, nothing is global. The result
 * does not depend on the order of the input points: they are put in
 * lexicographic order before seeding, and clusters are numbered in the
 * lexicographic order of their centres. Every cluster is non-empty (k <= n). */
#ifndef GSMRT_GSM_KMEANS_H
#define GSMRT_GSM_KMEANS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* splitmix64: small, seedable, and good enough for seeding k-means++. */
struct gsmrt_gsm_rng {
    uint64_t state;
};

void gsmrt_gsm_rng_seed(struct gsmrt_gsm_rng *rng, uint64_t seed);
uint64_t gsmrt_gsm_rng_next(struct gsmrt_gsm_rng *rng);
double gsmrt_gsm_rng_uniform(struct gsmrt_gsm_rng *rng);   /* [0, 1), 53 bits */

struct gsmrt_gsm_kmeans_params {
    size_t k;          /* clusters, 1 <= k <= n */
    size_t max_iter;   /* Lloyd iterations per run (0: 100) */
    size_t n_init;     /* seeded runs; the lowest inertia wins, first on ties (0: 1) */
};

/* x: [n][d] points (finite). Writes assign[n] (cluster of each point, < k),
 * centers[k][d] (may be NULL) and the inertia (sum of squared distances to
 * the assigned centre; may be NULL). alloc: host allocator (NULL: libc). */
gsmrt_status gsmrt_gsm_kmeans(const float *x, size_t n, size_t d, const struct gsmrt_gsm_kmeans_params *p,
                              struct gsmrt_gsm_rng *rng, const gsmrt_allocator *alloc, uint32_t *assign,
                              float *centers, double *inertia, struct gsmrt_err *err);

#endif
