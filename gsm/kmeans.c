/* kmeans.c -- k-means++ seeding and Lloyd iterations in double precision over
 * a sorted copy of the points, with order-free numbering of the clusters.
 * Sized for calibration (n = heads of a layer): the sorts are insertion
 * sorts, O(n^2), which is nothing at that size. */
#include "kmeans.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "base/mem.h"

void gsmrt_gsm_rng_seed(struct gsmrt_gsm_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t gsmrt_gsm_rng_next(struct gsmrt_gsm_rng *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double gsmrt_gsm_rng_uniform(struct gsmrt_gsm_rng *rng)
{
    return (double)(gsmrt_gsm_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp_rows(const double *a, const double *b, size_t d)
{
    for (size_t j = 0; j < d; j++) {
        if (a[j] < b[j]) return -1;
        if (a[j] > b[j]) return 1;
    }
    return 0;
}

static int cmp_rows_f(const float *a, const float *b, size_t d)
{
    for (size_t j = 0; j < d; j++) {
        if (a[j] < b[j]) return -1;
        if (a[j] > b[j]) return 1;
    }
    return 0;
}

static double dist2(const double *a, const double *b, size_t d)
{
    double s = 0;
    for (size_t j = 0; j < d; j++) {
        double t = a[j] - b[j];
        s += t * t;
    }
    return s;
}

/* k-means++: the first centre uniformly, each next one with probability
 * proportional to the squared distance to the nearest centre so far. */
static void seed_pp(const double *pts, size_t n, size_t d, size_t k, struct gsmrt_gsm_rng *rng, double *c,
                    double *d2, uint8_t *chosen)
{
    memset(chosen, 0, n);
    size_t first = (size_t)(gsmrt_gsm_rng_uniform(rng) * (double)n);
    if (first >= n) first = n - 1;
    chosen[first] = 1;
    memcpy(c, pts + first * d, d * sizeof *c);
    for (size_t i = 0; i < n; i++) d2[i] = dist2(pts + i * d, c, d);
    for (size_t j = 1; j < k; j++) {
        double total = 0;
        for (size_t i = 0; i < n; i++) total += d2[i];
        size_t pick = n;
        if (total > 0) {
            double r = gsmrt_gsm_rng_uniform(rng) * total, cum = 0;
            for (size_t i = 0; i < n && pick == n; i++) {
                cum += d2[i];
                if (d2[i] > 0 && cum > r) pick = i;
            }
            for (size_t i = n; pick == n && i-- > 0;)   /* rounding left r past the end */
                if (d2[i] > 0) pick = i;
        }
        for (size_t i = 0; i < n && pick == n; i++)   /* all remaining points coincide with centres */
            if (!chosen[i]) pick = i;
        chosen[pick] = 1;
        double *cj = c + j * d;
        memcpy(cj, pts + pick * d, d * sizeof *c);
        for (size_t i = 0; i < n; i++) {
            double t = dist2(pts + i * d, cj, d);
            if (t < d2[i]) d2[i] = t;
        }
    }
}

static size_t nearest(const double *p, const double *c, size_t k, size_t d)
{
    size_t best = 0;
    double bd = dist2(p, c, d);
    for (size_t j = 1; j < k; j++) {
        double t = dist2(p, c + j * d, d);
        if (t < bd) bd = t, best = j;
    }
    return best;
}

static void update_centres(const double *pts, size_t n, size_t d, size_t k, const uint32_t *a, double *c,
                           size_t *cnt)
{
    memset(cnt, 0, k * sizeof *cnt);
    for (size_t i = 0; i < n; i++) cnt[a[i]]++;
    for (size_t j = 0; j < k; j++)
        if (cnt[j]) memset(c + j * d, 0, d * sizeof *c);   /* an empty cluster keeps its centre */
    for (size_t i = 0; i < n; i++)
        for (size_t t = 0; t < d; t++) c[a[i] * d + t] += pts[i * d + t];
    for (size_t j = 0; j < k; j++)
        for (size_t t = 0; cnt[j] && t < d; t++) c[j * d + t] /= (double)cnt[j];
}

static void lloyd(const double *pts, size_t n, size_t d, size_t k, size_t max_iter, double *c, uint32_t *a,
                  size_t *cnt)
{
    for (size_t i = 0; i < n; i++) a[i] = (uint32_t)nearest(pts + i * d, c, k, d);
    for (size_t it = 0; it < max_iter; it++) {
        update_centres(pts, n, d, k, a, c, cnt);
        bool changed = false;
        for (size_t i = 0; i < n; i++) {
            uint32_t j = (uint32_t)nearest(pts + i * d, c, k, d);
            if (j != a[i]) a[i] = j, changed = true;
        }
        if (!changed) break;
    }
    update_centres(pts, n, d, k, a, c, cnt);
    /* Every cluster gets a point: an empty one takes the point farthest from
     * its own centre among clusters that can spare one (k <= n makes this end). */
    for (size_t j = 0; j < k; j++) {
        if (cnt[j]) continue;
        size_t pick = n;
        double far = -1;
        for (size_t i = 0; i < n; i++) {
            if (cnt[a[i]] < 2) continue;
            double t = dist2(pts + i * d, c + a[i] * d, d);
            if (t > far) far = t, pick = i;
        }
        a[pick] = (uint32_t)j;
        update_centres(pts, n, d, k, a, c, cnt);
    }
}

gsmrt_status gsmrt_gsm_kmeans(const float *x, size_t n, size_t d, const struct gsmrt_gsm_kmeans_params *p,
                              struct gsmrt_gsm_rng *rng, const gsmrt_allocator *alloc, uint32_t *assign,
                              float *centers, double *inertia, struct gsmrt_err *err)
{
    if (!x || !p || !rng || !assign || n == 0 || d == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "k-means: no points (n %zu, d %zu)", n, d);
    size_t k = p->k;
    if (k == 0 || k > n || k > UINT32_MAX)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "k-means: k = %zu clusters for %zu points", k, n);
    size_t nd, kd;
    if (!gsmrt_size_mul(n, d, &nd) || !gsmrt_size_mul(k, d, &kd) || nd > SIZE_MAX / sizeof(double))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "k-means: %zu x %zu points too many", n, d);
    for (size_t i = 0; i < nd; i++)
        if (!isfinite(x[i]))
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "k-means: point %zu, feature %zu is not finite",
                                 i / d, i % d);
    size_t max_iter = p->max_iter ? p->max_iter : 100, n_init = p->n_init ? p->n_init : 1;

    gsmrt_status st = GSMRT_OK;
    size_t *order = gsmrt_mem_calloc(alloc, n, sizeof *order);
    size_t *cnt = gsmrt_mem_calloc(alloc, k, sizeof *cnt);
    size_t *label = gsmrt_mem_calloc(alloc, k, sizeof *label);
    double *pts = gsmrt_mem_calloc(alloc, nd, sizeof *pts);
    double *d2 = gsmrt_mem_calloc(alloc, n, sizeof *d2);
    double *c = gsmrt_mem_calloc(alloc, kd, sizeof *c);
    double *best_c = gsmrt_mem_calloc(alloc, kd, sizeof *best_c);
    uint32_t *a = gsmrt_mem_calloc(alloc, n, sizeof *a);
    uint32_t *best_a = gsmrt_mem_calloc(alloc, n, sizeof *best_a);
    uint8_t *chosen = gsmrt_mem_calloc(alloc, n, 1);
    if (!order || !cnt || !label || !pts || !d2 || !c || !best_c || !a || !best_a || !chosen) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "k-means on %zu points", n);
        goto out;
    }

    /* Points in lexicographic order (ties: input order; equal rows are interchangeable). */
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i], j = i;
        while (j > 0 && cmp_rows_f(x + order[j - 1] * d, x + v * d, d) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t t = 0; t < d; t++) pts[i * d + t] = x[order[i] * d + t];

    double best = INFINITY;
    for (size_t run = 0; run < n_init; run++) {
        seed_pp(pts, n, d, k, rng, c, d2, chosen);
        lloyd(pts, n, d, k, max_iter, c, a, cnt);
        double s = 0;
        for (size_t i = 0; i < n; i++) s += dist2(pts + i * d, c + a[i] * d, d);
        if (run == 0 || s < best) {
            best = s;
            memcpy(best_c, c, kd * sizeof *c);
            memcpy(best_a, a, n * sizeof *a);
        }
    }

    /* Number clusters by the lexicographic order of their centres. */
    for (size_t j = 0; j < k; j++) label[j] = j;
    for (size_t i = 1; i < k; i++) {
        size_t v = label[i], j = i;
        while (j > 0 && cmp_rows(best_c + label[j - 1] * d, best_c + v * d, d) > 0) {
            label[j] = label[j - 1];
            j--;
        }
        label[j] = v;
    }
    for (size_t j = 0; j < k; j++) cnt[label[j]] = j;   /* cnt: old id -> new id */
    for (size_t i = 0; i < n; i++) assign[order[i]] = (uint32_t)cnt[best_a[i]];
    if (centers)
        for (size_t j = 0; j < k; j++)
            for (size_t t = 0; t < d; t++) centers[cnt[j] * d + t] = (float)best_c[j * d + t];
    if (inertia) *inertia = best;
out:
    gsmrt_mem_free(alloc, order);
    gsmrt_mem_free(alloc, cnt);
    gsmrt_mem_free(alloc, label);
    gsmrt_mem_free(alloc, pts);
    gsmrt_mem_free(alloc, d2);
    gsmrt_mem_free(alloc, c);
    gsmrt_mem_free(alloc, best_c);
    gsmrt_mem_free(alloc, a);
    gsmrt_mem_free(alloc, best_a);
    gsmrt_mem_free(alloc, chosen);
    return st;
}
