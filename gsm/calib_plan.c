/* calib_plan.c -- statistics from attention rows and the per-layer grouping
 * and policy choice of calibration (rules in calib_plan.h). */
#include "calib_plan.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"
#include "kmeans.h"

static uint32_t band_of(uint32_t dist, const uint32_t *edges, uint32_t n_bands)
{
    uint32_t b = 0;
    while (b + 1 < n_bands && dist >= edges[b + 1]) b++;
    return b;
}

void gsmrt_gsm_head_acc_add(struct gsmrt_gsm_head_acc *acc, const float *probs, uint32_t pos,
                            const uint32_t *edges, uint32_t n_bands, uint32_t sink_tokens)
{
    double sum = 0;
    for (uint32_t j = 0; j <= pos; j++)
        if (probs[j] > 0) sum += probs[j];
    if (!(sum > 0) || !isfinite(sum)) return;
    double band[GSMRT_GSM_MAX_BANDS] = {0}, sink = 0, ent = 0;
    for (uint32_t j = 0; j <= pos; j++) {
        if (!(probs[j] > 0)) continue;
        double p = probs[j] / sum;
        band[band_of(pos - j, edges, n_bands)] += p;
        if (j < sink_tokens) sink += p;
        ent -= p * log(p);
    }
    for (uint32_t b = 0; b < n_bands; b++) acc->band_mass[b] += band[b];
    acc->sink_share += sink;
    acc->entropy += ent;
    acc->n_rows++;
}

static double clamp01(double v)
{
    return v > 1 ? 1 : v > 0 ? v : 0;
}

void gsmrt_gsm_head_acc_finish(const struct gsmrt_gsm_head_acc *acc, uint32_t n_bands,
                               struct gsmrt_gsm_head_stats *out)
{
    memset(out, 0, sizeof *out);
    if (acc->n_rows == 0) {
        out->band_mass[0] = 1;
        return;
    }
    /* The band masses are shares of one distribution, but rows summed on the
     * device in float can total 1 + 1e-7: normalised and clamped here, a
     * tiny text's near-diagonal head gets exactly 1, not a value its own
     * check ([0, 1]) rejects. */
    double n = (double)acc->n_rows, total = 0;
    for (uint32_t b = 0; b < n_bands; b++) total += acc->band_mass[b] > 0 ? acc->band_mass[b] : 0;
    if (!(total > 0)) {
        out->band_mass[0] = 1;
    } else {
        for (uint32_t b = 0; b < n_bands; b++) out->band_mass[b] = (float)clamp01(acc->band_mass[b] / total);
    }
    out->sink_share = (float)clamp01(acc->sink_share / n);
    out->entropy = (float)(acc->entropy > 0 ? acc->entropy / n : 0);
}

/* Window and budget of a group from its mean band masses. */
static void choose(const struct gsmrt_gsm_calib *c, const double *mass, const struct gsmrt_gsm_plan_params *p,
                   struct gsmrt_gsm_group_policy *g)
{
    const uint32_t nb = c->n_bands;
    double cum = 0, far = 0;
    uint32_t b = 0;
    for (; b < nb; b++) {
        cum += mass[b];
        if (cum >= p->coverage - 1e-9) break;
    }
    if (b >= nb - 1) {   /* needs the open band (or never reached: rounding) */
        g->window = c->band_edges[nb - 1];
        far = mass[nb - 1];
    } else {
        g->window = c->band_edges[b + 1];
        far = 1.0 - cum;
    }
    if (far < 0) far = 0;
    if (far > 1) far = 1;
    g->hot_pages = (uint32_t)ceil((double)p->max_hot_pages * far - 1e-9);
    if (g->hot_pages > p->max_hot_pages) g->hot_pages = p->max_hot_pages;
}

gsmrt_status gsmrt_gsm_calib_plan_layer(struct gsmrt_gsm_calib *c, uint32_t layer,
                                        const struct gsmrt_gsm_plan_params *p, const gsmrt_allocator *alloc,
                                        struct gsmrt_err *err)
{
    const uint32_t n_head = c->model.n_head, nb = c->n_bands, d = nb + 2;
    if (layer >= c->model.n_layer || p->n_groups < 1 || p->n_groups > n_head || !(p->coverage > 0) ||
        p->coverage > 1 || !(p->threshold >= 0 && p->threshold < 1))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "calibration plan: layer %u of %u, %u groups for %u heads, coverage %g, threshold %g",
                             layer, c->model.n_layer, p->n_groups, n_head, p->coverage, (double)p->threshold);
    struct gsmrt_gsm_calib_layer *L = &c->layers[layer];
    float *x = gsmrt_mem_calloc(alloc, (size_t)n_head * d, sizeof *x);
    double *mass = gsmrt_mem_calloc(alloc, (size_t)p->n_groups * (nb + 1), sizeof *mass);
    uint32_t *assign = gsmrt_mem_calloc(alloc, n_head, sizeof *assign);
    gsmrt_status st = GSMRT_OK;
    if (!x || !mass || !assign) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration plan, layer %u", layer);
        goto out;
    }
    float ent_max = 0;
    for (uint32_t h = 0; h < n_head; h++)
        if (L->stats[h].entropy > ent_max) ent_max = L->stats[h].entropy;
    for (uint32_t h = 0; h < n_head; h++) {
        float *f = x + (size_t)h * d;
        for (uint32_t b = 0; b < nb; b++) f[b] = L->stats[h].band_mass[b];
        f[nb] = L->stats[h].sink_share;
        f[nb + 1] = ent_max > 0 ? L->stats[h].entropy / ent_max : 0;
    }
    struct gsmrt_gsm_rng rng;
    gsmrt_gsm_rng_seed(&rng, p->seed);
    struct gsmrt_gsm_kmeans_params kp = {p->n_groups, 100, 8};
    st = gsmrt_gsm_kmeans(x, n_head, d, &kp, &rng, alloc, assign, NULL, NULL, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "layer %u: ", layer);
        goto out;
    }
    /* mean band mass and sink share per group: mass[g][0, nb) and mass[g][nb] */
    uint32_t count[GSMRT_GSM_MAX_HEADS] = {0};
    for (uint32_t h = 0; h < n_head; h++) {
        double *m = mass + (size_t)assign[h] * (nb + 1);
        for (uint32_t b = 0; b < nb; b++) m[b] += L->stats[h].band_mass[b];
        m[nb] += L->stats[h].sink_share;
        count[assign[h]]++;
    }
    L->n_groups = p->n_groups;
    for (uint32_t h = 0; h < n_head; h++) L->head_group[h] = assign[h];
    for (uint32_t g = 0; g < p->n_groups; g++) {
        double *m = mass + (size_t)g * (nb + 1);
        for (uint32_t b = 0; b <= nb; b++) m[b] /= (double)count[g];   /* k-means leaves no group empty */
        struct gsmrt_gsm_group_policy *P = &L->groups[g];
        choose(c, m, p, P);
        P->sink_tokens = m[nb] >= p->sink_min ? p->sink_tokens : 0;
        P->threshold = p->threshold;
    }
out:
    gsmrt_mem_free(alloc, x);
    gsmrt_mem_free(alloc, mass);
    gsmrt_mem_free(alloc, assign);
    return st;
}
