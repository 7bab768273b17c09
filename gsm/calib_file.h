/* calib_file.h -- the calibration file (JSON): which model it was made for,
 * per layer the head groups and each group's policy, and the per-head
 * statistics the grouping was made from. Written by `gsm calibrate`, read
 * (with hostile-input checks) at load; a calibration for another model is
 * GSMRT_E_FORMAT naming both identities.
 *
 * Format ("format": "gsmrt-gsm-calibration", "version": 1):
 *   { "format", "version",
 *     "model": { "architecture", "name", "n_layer", "n_head", "n_embd", "n_vocab" },
 *     "page_size": 32,                   page size hot_pages counts in
 *     "band_edges": [0, 32, 128, ...],   distance band b = [edge[b], edge[b+1]), last open
 *     "layers": [ { "head_group": [g of head 0, ...],
 *                   "groups": [ { "sink_tokens", "window", "hot_pages", "threshold" }, ... ],
 *                   "stats": [ { "band_mass": [...], "sink_share", "entropy" }, ... per head ] } ] } */
#ifndef GSMRT_GSM_CALIB_FILE_H
#define GSMRT_GSM_CALIB_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define GSMRT_GSM_CALIB_VERSION 1
#define GSMRT_GSM_MAX_BANDS 16
#define GSMRT_GSM_MAX_LAYERS 1024
#define GSMRT_GSM_MAX_HEADS 1024
#define GSMRT_GSM_ID_MAX 127   /* bytes of architecture and name strings */

/* What the caller (the runtime, from the GGUF) says the model is. */
struct gsmrt_gsm_model_id {
    char architecture[GSMRT_GSM_ID_MAX + 1];   /* "deepseek2", "llama" */
    char name[GSMRT_GSM_ID_MAX + 1];           /* a name or hash the caller chooses */
    uint32_t n_layer, n_head, n_embd, n_vocab;
};

struct gsmrt_gsm_group_policy {
    uint32_t sink_tokens;   /* first positions always active */
    uint32_t window;        /* recent positions always active */
    uint32_t hot_pages;     /* budget of hot pages the group reads besides those */
    float threshold;        /* gate threshold, [0, 1) */
};

struct gsmrt_gsm_head_stats {
    float band_mass[GSMRT_GSM_MAX_BANDS];   /* [n_bands] share of mass per distance band, sums to 1 */
    float sink_share;                       /* share of mass on the sink tokens, [0, 1] */
    float entropy;                          /* mean attention entropy in nats, >= 0 */
};

struct gsmrt_gsm_calib_layer {
    uint32_t n_groups;                        /* [1, n_head] */
    uint32_t *head_group;                     /* [n_head] group of each head */
    struct gsmrt_gsm_group_policy *groups;    /* [n_groups] */
    struct gsmrt_gsm_head_stats *stats;       /* [n_head] */
};

struct gsmrt_gsm_calib {
    const gsmrt_allocator *alloc;
    struct gsmrt_gsm_model_id model;
    uint32_t page_size;
    uint32_t n_bands;                          /* [1, GSMRT_GSM_MAX_BANDS] */
    uint32_t band_edges[GSMRT_GSM_MAX_BANDS];  /* increasing, band_edges[0] = 0 */
    struct gsmrt_gsm_calib_layer *layers;      /* [model.n_layer] */
};

/* An empty calibration for `model` with n_groups groups in every layer (heads
 * i -> i % n_groups, zero policy and statistics), for the caller to fill. */
gsmrt_status gsmrt_gsm_calib_create(const gsmrt_allocator *alloc, const struct gsmrt_gsm_model_id *model,
                                    uint32_t n_groups, uint32_t n_bands, struct gsmrt_gsm_calib **out,
                                    struct gsmrt_err *err);
void gsmrt_gsm_calib_destroy(struct gsmrt_gsm_calib *c);   /* NULL and half-built are fine */

/* Every invariant the reader checks (ranges, group ids, every group used). */
gsmrt_status gsmrt_gsm_calib_validate(const struct gsmrt_gsm_calib *c, struct gsmrt_err *err);

/* JSON text (caller frees with gsmrt_mem_free(alloc, *out)). */
gsmrt_status gsmrt_gsm_calib_to_json(const struct gsmrt_gsm_calib *c, const gsmrt_allocator *alloc, char **out,
                                     struct gsmrt_err *err);
gsmrt_status gsmrt_gsm_calib_save(const struct gsmrt_gsm_calib *c, const char *path, struct gsmrt_err *err);

/* Parses text[0, len); `name` (the file name) starts every message. With
 * `expect` non-NULL the model identity must match it. */
gsmrt_status gsmrt_gsm_calib_parse(const char *text, size_t len, const char *name, const gsmrt_allocator *alloc,
                                   const struct gsmrt_gsm_model_id *expect, struct gsmrt_gsm_calib **out,
                                   struct gsmrt_err *err);
gsmrt_status gsmrt_gsm_calib_load(const char *path, const gsmrt_allocator *alloc,
                                  const struct gsmrt_gsm_model_id *expect, struct gsmrt_gsm_calib **out,
                                  struct gsmrt_err *err);

/* GSMRT_E_FORMAT "calibration made for model X (...), not for Y (...)" unless equal. */
gsmrt_status gsmrt_gsm_calib_check_model(const struct gsmrt_gsm_calib *c, const struct gsmrt_gsm_model_id *model,
                                         struct gsmrt_err *err);

#endif
