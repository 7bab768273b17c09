/* calib_plan.h -- the pure part of `gsm calibrate`: per-head statistics
 * accumulated from attention rows, heads grouped per layer by k-means over
 * those statistics, and each group's window and hot-page budget chosen from
 * its mean mass per distance band. (Running the model and collecting the rows
 * is the runtime's part.) */
#ifndef GSMRT_GSM_CALIB_PLAN_H
#define GSMRT_GSM_CALIB_PLAN_H

#include <stdint.h>

#include "base/err.h"
#include "calib_file.h"

/* Running sums for one head of one layer. Zero-initialise. */
struct gsmrt_gsm_head_acc {
    double band_mass[GSMRT_GSM_MAX_BANDS];
    double sink_share;
    double entropy;
    uint64_t n_rows;
};

/* Adds one attention row: probs[0, pos] are the softmax weights of the
 * query at position pos over key positions 0..pos (renormalised here; a row
 * summing to 0 is ignored). Key j is at distance pos - j, in band b when
 * edges[b] <= distance < edges[b + 1] (the last band is open); it is a sink
 * when j < sink_tokens. Entropy is -sum p ln p, in nats. */
void gsmrt_gsm_head_acc_add(struct gsmrt_gsm_head_acc *acc, const float *probs, uint32_t pos,
                            const uint32_t *edges, uint32_t n_bands, uint32_t sink_tokens);

/* Means over the rows (a head with no rows: all mass in band 0). */
void gsmrt_gsm_head_acc_finish(const struct gsmrt_gsm_head_acc *acc, uint32_t n_bands,
                               struct gsmrt_gsm_head_stats *out);

struct gsmrt_gsm_plan_params {
    uint32_t n_groups;        /* k-means clusters, 1..n_head */
    double coverage;          /* the window covers bands holding this share of the mass, (0, 1] */
    uint32_t max_hot_pages;   /* budget of a group whose mass is all beyond its window */
    uint32_t sink_tokens;     /* given to groups whose mean sink share >= sink_min */
    double sink_min;
    float threshold;          /* gate threshold of every group, [0, 1) */
    uint64_t seed;            /* k-means++ seed */
};

/* Groups the heads of `layer` (stats already filled in c) and sets each
 * group's policy:
 *   features per head: band_mass[0..n_bands), sink_share, entropy / max entropy
 *   of the layer (0 if all are 0);
 *   window: the upper edge of the first band where the group's cumulative
 *   mean mass reaches `coverage`; when that is the last (open) band, its lower
 *   edge, the widest finite window;
 *   hot_pages: ceil(max_hot_pages * far), far = the mean mass beyond the
 *   window's bands (for the open-band case: the open band's mass);
 *   sink_tokens: as above; threshold: as given. */
gsmrt_status gsmrt_gsm_calib_plan_layer(struct gsmrt_gsm_calib *c, uint32_t layer,
                                        const struct gsmrt_gsm_plan_params *p, const gsmrt_allocator *alloc,
                                        struct gsmrt_err *err);

#endif
