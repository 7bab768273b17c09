/* model.h -- a loaded model on the device: hyper-parameters, weights in
 * device-local memory, and the decoder's forward pass over a paged KV cache.
 *
 * What is particular to an architecture (which tensors, what the KV cache
 * holds, how a step is recorded) is its module's, behind model/arch.h.
 *
 * Shapes are C order (outermost first). A GGUF tensor with ne = [n_cols,
 * n_rows, n_mats] is the C array W[n_mats][n_rows][n_cols]: ne[0] is the
 * contiguous dimension, as in ggml. */
#ifndef GSMRT_MODEL_MODEL_H
#define GSMRT_MODEL_MODEL_H

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "model/arch.h"
#include "model/hparams.h"
#include "vk/vk.h"

/* One weight tensor uploaded to the device. */
struct gsmrt_tensor {
    struct gsmrt_vk_buf buf;
    struct gsmrt_k_weights w;   /* w.buf points at buf above: never copy the struct */
    struct gsmrt_vk_range range;   /* the whole tensor, for 1-D F32 tensors (norms, biases) */
};

typedef void (*gsmrt_model_progress)(void *user, const char *stage, float fraction);

struct gsmrt_dmodel {
    struct gsmrt_hparams hp;
    const struct gsmrt_arch *arch;  /* hp.arch */
    struct gsmrt_vk_device *dev;    /* not owned */
    struct gsmrt_tensor *tensors;   /* [n_tensors], in GGUF order */
    uint64_t n_tensors;
    /* [n_layer + 1][arch->n_tensors]: the tensor of each row of the
     * architecture's tensor table, row 0 for the global ones, row il + 1 for
     * block il; NULL where the table says it is absent */
    struct gsmrt_tensor **slots;
    uint64_t weight_bytes;
    const gsmrt_allocator *alloc;
};

/* Uploads every tensor of g (whose hparams were already loaded into hp) to
 * device-local memory and files them by the architecture's tensor table.
 * progress may be NULL. */
gsmrt_status gsmrt_dmodel_load(struct gsmrt_vk_device *dev, const struct gsmrt_gguf *g,
                               const struct gsmrt_hparams *hp, gsmrt_model_progress progress,
                               void *progress_user, struct gsmrt_dmodel **out, struct gsmrt_err *err);
void gsmrt_dmodel_destroy(struct gsmrt_dmodel *m);
/* The tensor of table row `slot` in block il (il < 0: a global one), or NULL. */
struct gsmrt_tensor *gsmrt_dmodel_tensor(const struct gsmrt_dmodel *m, int64_t il, uint32_t slot);

/* ---- the paged KV cache of one sequence ------------------------------------ */

/* The architecture's KV layout (model/arch.h) gives each layer one or more
 * streams of fp32 rows; each (layer, stream) is a "line" of the cache. A
 * line's rows sit page_size to a page, in two pools: HOT (device-local,
 * n_hot_slots pages) and COLD (host-visible, n_cold_slots pages; none for a
 * dense or "keep" cache or an untiered stream). The page table (one row per
 * line, on the device) holds an entry per logical page: its slot in the hot
 * pool, or slot | GSMRT_KV_COLD in the cold pool (shaders/include/kv_tier.glsl).
 * A dense line has one hot slot per page, page p in slot p; GSM
 * (model/gsm_decode.c) manages the entries of tiered lines otherwise. */
#define GSMRT_KV_COLD 0x80000000u

struct gsmrt_kv_line {
    uint32_t layer, stream;
    struct gsmrt_kv_stream s;       /* role, row width, ratio, ring */
    uint32_t n_rows_max;            /* rows for the whole context (or the ring) */
    uint32_t n_pages_max, n_pages;  /* pages allocated so far */
    uint32_t n_hot_slots, n_cold_slots;
    bool managed;                   /* entries set by GSM's tier policy, not by reserve */
    struct gsmrt_vk_buf hot;        /* [n_hot_slots][page_size][row_floats] values of the cache's type */
    struct gsmrt_vk_buf cold;       /* [n_cold_slots][...]; unallocated when n_cold_slots is 0 */
};

struct gsmrt_kv_cache {
    uint32_t n_layer, page_size;
    enum gsmrt_kv_type type;        /* storage type of every pool's rows */
    uint32_t n_ctx;                 /* capacity in positions */
    uint32_t n_lines;
    struct gsmrt_kv_line *lines;    /* [n_lines], layer by layer */
    uint32_t *line_of;              /* [n_layer + 1]: lines of layer l are [line_of[l], line_of[l + 1]) */
    uint32_t table_stride;          /* entries per line row of the table (keeps rows aligned) */
    bool table_dirty;               /* host entries changed since the last upload */
    uint32_t *entries;              /* [n_lines][table_stride] host copy of the table */
    struct gsmrt_vk_buf table;      /* uint [n_lines][table_stride] */
    const gsmrt_allocator *alloc;
};

/* The cache of hp's architecture for n_ctx positions, its rows stored as
 * `type` (F16: every stream's rows must have an even width). n_hot_slots and
 * n_cold_slots size the tiered lines (n_hot_slots 0: a dense cache, a hot
 * slot for every page of n_ctx); untiered lines are always dense. */
gsmrt_status gsmrt_kv_cache_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                   uint32_t n_ctx, uint32_t page_size, uint32_t n_hot_slots,
                                   uint32_t n_cold_slots, enum gsmrt_kv_type type, struct gsmrt_kv_cache **out,
                                   struct gsmrt_err *err);
/* Bytes of one page of line l. */
uint64_t gsmrt_kv_cache_page_bytes(const struct gsmrt_kv_cache *kv, const struct gsmrt_kv_line *l);
void gsmrt_kv_cache_destroy(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv);
/* Makes sure pages exist for positions [0, n_pos) (managed lines: only
 * checks the context), then uploads the table if it changed. */
gsmrt_status gsmrt_kv_cache_reserve(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv,
                                    uint32_t n_pos, struct gsmrt_err *err);
/* The line of stream `stream` of layer il, or NULL if the layer has no such stream. */
struct gsmrt_kv_line *gsmrt_kv_cache_line(const struct gsmrt_kv_cache *kv, uint32_t il, uint32_t stream);
/* Bindings of stream `stream` of layer il: its hot pool, its cold pool (the
 * hot pool when there is none) and its row of the page table. */
gsmrt_status gsmrt_kv_cache_bind(const struct gsmrt_vk_device *dev, const struct gsmrt_kv_cache *kv, uint32_t il,
                                 uint32_t stream, struct gsmrt_vk_range *hot, struct gsmrt_vk_range *cold,
                                 struct gsmrt_vk_range *table, struct gsmrt_err *err);
/* Device-local and host-visible bytes the pools hold. */
uint64_t gsmrt_kv_cache_hot_bytes(const struct gsmrt_kv_cache *kv);
uint64_t gsmrt_kv_cache_cold_bytes(const struct gsmrt_kv_cache *kv);

/* ---- the forward pass ----------------------------------------------------- */

/* One step's inputs and outputs, the recording, and the architecture's own
 * scratch (its forward_init); one recording, reused. */
struct gsmrt_forward {
    struct gsmrt_dmodel *m;
    uint32_t max_tok, n_ctx;
    struct gsmrt_vk_rec *rec;
    struct gsmrt_vk_buf tokens, pos;             /* uint / int [max_tok] */
    struct gsmrt_vk_buf logits;                  /* [max_tok][V] */
    int32_t *pos_host, *tok_host;                /* [max_tok] positions and ids being uploaded */
    struct gsmrt_gsm_decode *gsm;                /* GSM state, or NULL for dense attention (not owned) */
    uint32_t n_dispatches;                       /* in the last step */
    struct gsmrt_attn_stats_sink *stats;         /* calibration: attention statistics of every layer
                                                    are recorded here; NULL normally (not owned) */
    void *arch_state;                            /* the architecture's activations, owned */
};

gsmrt_status gsmrt_forward_create(struct gsmrt_dmodel *m, uint32_t max_tok, uint32_t n_ctx,
                                  struct gsmrt_forward **out, struct gsmrt_err *err);
void gsmrt_forward_destroy(struct gsmrt_forward *f);

/* Runs tokens[0..n_tok) at positions pos0.. through the model, appending
 * their cache rows to kv, in one submission (with f->gsm when set). Logits
 * of the last n_logits tokens are copied to logits_out [n_logits][V]
 * (n_logits 0: none). */
gsmrt_status gsmrt_forward_run(struct gsmrt_forward *f, struct gsmrt_kv_cache *kv, const int32_t *tokens,
                               uint32_t n_tok, uint32_t pos0, uint32_t n_logits, float *logits_out,
                               struct gsmrt_err *err);

/* One sequence of a batched step: its cache, GSM state (NULL: dense), the
 * tokens it adds at positions pos0.., and where the logits of its last
 * n_logits tokens go ([n_logits][V]). tok0 is set by the step. */
struct gsmrt_seq_step {
    struct gsmrt_kv_cache *kv;
    struct gsmrt_gsm_decode *gsm;
    const int32_t *tokens;
    uint32_t n_tok, pos0;
    uint32_t n_logits;
    float *logits_out;
    uint32_t tok0;
};

/* Several sequences in one pass: the weights run once over all their tokens
 * (matrix-matrix), attention per sequence over its own cache; one
 * submission. At most max_tok tokens in all; the logits rows wanted must
 * form one block (every sequence wants its last token's, or only one
 * sequence wants any). */
gsmrt_status gsmrt_forward_run_batch(struct gsmrt_forward *f, struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                     struct gsmrt_err *err);

/* Records the attention statistics of layer il for every token of the step
 * into f->stats (model/calibrate.c); the forward pass calls it after the
 * layer's attention when f->stats is set. qa, qr, pos: the step's absorbed
 * queries, roped queries and positions. Dense caches only. */
gsmrt_status gsmrt_attn_stats_record(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                     uint32_t il, const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                     const struct gsmrt_vk_range *pos, struct gsmrt_err *err);

#endif
