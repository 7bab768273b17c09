/* config.h -- GSM configuration: defaults, the JSON file (--gsm-config) and
 * "key=value" settings from the command line, all with the same checks.
 *
 * Keys are the DESIGN.md names in snake_case; CLI options are their kebab-case
 * twins (--gate-threshold), and gsmrt_gsm_config_set accepts either spelling.
 * Loading layers on top of what the struct already holds, so the usual order
 * is defaults, then the file, then CLI options. A failed load or set leaves
 * the struct as it was. */
#ifndef GSMRT_GSM_CONFIG_H
#define GSMRT_GSM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Where COLD pages live. AUTO (the default) resolves to KEEP on a unified-
 * memory device, where swapping moves nothing physically, and to SWAP on a
 * device whose device-local and host-visible memory differ. SWAP can still be
 * forced on a unified device so the code path is exercised (e.g. lavapipe). */
enum gsmrt_gsm_low_freq {
    GSMRT_GSM_LOW_FREQ_AUTO = 0,
    GSMRT_GSM_LOW_FREQ_KEEP = 1,   /* cold pages stay device-local, outside the active set */
    GSMRT_GSM_LOW_FREQ_SWAP = 2,   /* cold pages sit in host-visible memory */
};

#define GSMRT_GSM_PATH_MAX 1024

struct gsmrt_gsm_config {
    bool enabled;                /* default true; GSM still stays off below min_context */
    uint32_t num_groups;         /* head groups per layer, [1, 256], default 8 (at most the head
                                    count: with fewer heads each head is its own group) */
    uint32_t page_size;          /* positions per page, power of two in [8, 64], default 32 */
    double gate_threshold;       /* [0, 1), default 0.05, see GSMRT_GSM_DEFAULT_GATE_THRESHOLD */
    enum gsmrt_gsm_low_freq low_freq_policy;   /* "auto" (default) | "keep" | "swap" */
    char calibration_path[GSMRT_GSM_PATH_MAX]; /* "" (default): no calibration, one policy for all */
    uint32_t warmup_steps;       /* dense decode steps per sequence first, [0, 1e6], default 8 */
    uint32_t min_context;        /* GSM off below this many tokens, [0, 2^24], default 512 */
    uint32_t window;             /* recent positions always active, [0, 2^24], default 128 */
    uint32_t sink_tokens;        /* first positions always active, [0, 2^24], default 4 */
    bool prefetch;               /* copy near-threshold cold pages back early, default true */

    /* Tuning beyond DESIGN.md's list (same file, same checks). */
    uint32_t hot_pages;          /* hot-page budget per layer without calibration, [0, 2^20], default 16 */
    double ema_rate;             /* moving-average rate of received mass, (0, 1], default 0.25 */
    double promote_mass;         /* a page whose average share reaches this is promoted, [0, 1], 0.02 */
    double demote_mass;          /* a hot page whose average share falls below this is demoted,
                                    [0, promote_mass], default 0.005 */
    uint32_t dense_fallback;     /* a layer whose gate computed (nearly) every page runs dense attention
                                    for this many decode steps, then tries the gate again; 0: never,
                                    [0, 1e6], default 16 */
    double prefetch_factor;      /* prefetch cold pages whose mass bound is >= factor * threshold,
                                    (0, 1], default 0.5 */
};

/* Why 0.05: the gate bounds the softmax share the skipped pages can hold, and
 * skipping a share e moves the attention output (a convex combination of
 * values) by at most 2e * max|v|. 5% keeps that worst case small while the
 * bound, which is loose (it assumes every token of a page reaches the page's
 * best score), lets most far pages be skipped; the measured sweep in issue 5
 * (0, 0.05, 0.1, 0.3) decides whether it stays. */
#define GSMRT_GSM_DEFAULT_GATE_THRESHOLD 0.05

/* Why these: warm-up of 8 steps lets an average of rate 0.25 reach 90% of a
 * steady value (1 - 0.75^8 = 0.90); below 512 tokens (16 pages of 32) a dense
 * step reads little and GSM's bound pass and bookkeeping cost about as much as
 * they save; 4 sink tokens follow the attention-sink literature; a 128-token
 * window is 4 pages. */
void gsmrt_gsm_config_defaults(struct gsmrt_gsm_config *cfg);

/* Parses a JSON object of configuration keys (all optional) over *cfg.
 * `name` (the file name) starts every message:
 *   gsm.json: key "gate_threshold": 1.5 out of range [0, 1) */
gsmrt_status gsmrt_gsm_config_parse(const char *text, size_t len, const char *name, struct gsmrt_gsm_config *cfg,
                                    struct gsmrt_err *err);

/* Reads and parses a file (alloc: host allocator, NULL for libc). */
gsmrt_status gsmrt_gsm_config_load(const char *path, const gsmrt_allocator *alloc, struct gsmrt_gsm_config *cfg,
                                   struct gsmrt_err *err);

/* One "key=value" setting, key in snake_case or kebab-case ("gate-threshold=0.1").
 * Booleans: true/false/1/0/on/off/yes/no. Messages read
 *   key "gate_threshold": 1.5 out of range [0, 1) */
gsmrt_status gsmrt_gsm_config_set(struct gsmrt_gsm_config *cfg, const char *key_value, struct gsmrt_err *err);

/* Cross-key checks (demote_mass <= promote_mass); run by parse and set. */
gsmrt_status gsmrt_gsm_config_check(const struct gsmrt_gsm_config *cfg, struct gsmrt_err *err);

/* The effective policy (never AUTO) for a device with or without unified memory. */
enum gsmrt_gsm_low_freq gsmrt_gsm_config_low_freq(const struct gsmrt_gsm_config *cfg, bool unified_memory);

/* What to tell the user about the effective policy, or NULL: on a unified-
 * memory device "swap" moves nothing physically (DESIGN.md: report that). */
const char *gsmrt_gsm_config_low_freq_note(const struct gsmrt_gsm_config *cfg, bool unified_memory);

/* "auto" / "keep" / "swap". */
const char *gsmrt_gsm_low_freq_name(enum gsmrt_gsm_low_freq p);

/* Number of groups used for a layer of n_head heads: min(num_groups, n_head). */
uint32_t gsmrt_gsm_config_groups(const struct gsmrt_gsm_config *cfg, uint32_t n_head);

#endif
