/* model.h -- a loaded model on the device: hyper-parameters, weights in
 * device-local memory, and the decoder's forward pass over a paged KV cache.
 *
 * Shapes are C order (outermost first). A GGUF tensor with ne = [n_cols,
 * n_rows, n_mats] is the C array W[n_mats][n_rows][n_cols]: ne[0] is the
 * contiguous dimension, as in ggml. */
#ifndef GSMRT_MODEL_MODEL_H
#define GSMRT_MODEL_MODEL_H

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "model/hparams.h"
#include "vk/vk.h"

/* One weight tensor uploaded to the device. */
struct gsmrt_tensor {
    struct gsmrt_vk_buf buf;
    struct gsmrt_k_weights w;   /* w.buf points at buf above: never copy the struct */
    struct gsmrt_vk_range range;   /* the whole tensor, for 1-D F32 tensors (norms, biases) */
};

struct gsmrt_layer {
    struct gsmrt_tensor *attn_norm;       /* [E] */
    struct gsmrt_tensor *attn_q;          /* [H*DK][E] (q_lora_rank 0) */
    struct gsmrt_tensor *attn_q_a;        /* [QL][E] */
    struct gsmrt_tensor *attn_q_a_norm;   /* [QL] */
    struct gsmrt_tensor *attn_q_b;        /* [H*DK][QL] */
    struct gsmrt_tensor *attn_kv_a_mqa;   /* [KVL+R][E] */
    struct gsmrt_tensor *attn_kv_a_norm;  /* [KVL] */
    struct gsmrt_tensor *attn_k_b;        /* [H][KVL][NOPE] */
    struct gsmrt_tensor *attn_v_b;        /* [H][DV][KVL] */
    struct gsmrt_tensor *attn_output;     /* [E][H*DV] */
    struct gsmrt_tensor *ffn_norm;        /* [E] */
    struct gsmrt_tensor *ffn_gate, *ffn_up;   /* [F][E] dense */
    struct gsmrt_tensor *ffn_down;            /* [E][F] dense */
    struct gsmrt_tensor *ffn_gate_inp;        /* [NE][E] router */
    struct gsmrt_tensor *exp_probs_b;         /* [NE] or NULL */
    struct gsmrt_tensor *ffn_gate_exps, *ffn_up_exps;   /* [NE][FE][E] */
    struct gsmrt_tensor *ffn_down_exps;                 /* [NE][E][FE] */
    struct gsmrt_tensor *ffn_gate_shexp, *ffn_up_shexp; /* [FE*NS][E] */
    struct gsmrt_tensor *ffn_down_shexp;                /* [E][FE*NS] */
};

typedef void (*gsmrt_model_progress)(void *user, const char *stage, float fraction);

struct gsmrt_dmodel {
    struct gsmrt_hparams hp;
    struct gsmrt_vk_device *dev;    /* not owned */
    struct gsmrt_tensor *tensors;   /* [n_tensors], in GGUF order */
    uint64_t n_tensors;
    struct gsmrt_tensor *token_embd;   /* [V][E] */
    struct gsmrt_tensor *output_norm;  /* [E] */
    struct gsmrt_tensor *output;       /* [V][E]; token_embd when tied */
    struct gsmrt_layer *layers;        /* [L] */
    uint64_t weight_bytes;
    const gsmrt_allocator *alloc;
};

/* Uploads every tensor of g (whose hparams were already loaded into hp) to
 * device-local memory. progress may be NULL. */
gsmrt_status gsmrt_dmodel_load(struct gsmrt_vk_device *dev, const struct gsmrt_gguf *g,
                               const struct gsmrt_hparams *hp, gsmrt_model_progress progress,
                               void *progress_user, struct gsmrt_dmodel **out, struct gsmrt_err *err);
void gsmrt_dmodel_destroy(struct gsmrt_dmodel *m);

/* ---- the paged KV cache of one sequence ------------------------------------ */

/* Latent rows [c (KVL) | k_pe (R)] in fp32, page_size rows per page, in two
 * pools per layer: HOT (device-local, n_hot_slots pages) and COLD
 * (host-visible, n_cold_slots pages; none for a dense or "keep" cache). The
 * page table (one row per layer, on the device) holds an entry per logical
 * page: its slot in the hot pool, or slot | GSMRT_KV_COLD in the cold pool
 * (shaders/include/kv_tier.glsl). A dense cache has one hot slot per page,
 * page p in slot p; GSM (model/gsm_decode.c) manages the entries otherwise. */
#define GSMRT_KV_COLD 0x80000000u

struct gsmrt_kv_cache {
    uint32_t n_layer, row_floats, page_size;
    uint32_t n_ctx;                 /* capacity in positions */
    uint32_t n_pages_max, n_pages;  /* pages allocated so far */
    uint32_t n_hot_slots, n_cold_slots;
    uint32_t table_stride;          /* entries per layer row of the table (keeps rows aligned) */
    bool managed;                   /* entries set by GSM's tier policy, not by reserve */
    bool table_dirty;               /* host entries changed since the last upload */
    uint32_t *entries;              /* [n_layer][table_stride] host copy of the table */
    struct gsmrt_vk_buf *hot;       /* [n_layer] pools [n_hot_slots][page_size][row_floats] */
    struct gsmrt_vk_buf *cold;      /* [n_layer] [n_cold_slots][...], or NULL */
    struct gsmrt_vk_buf table;      /* uint [n_layer][table_stride] */
    const gsmrt_allocator *alloc;
};

/* n_hot_slots 0: a dense cache (a hot slot for every page of n_ctx). */
gsmrt_status gsmrt_kv_cache_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                   uint32_t n_ctx, uint32_t page_size, uint32_t n_hot_slots,
                                   uint32_t n_cold_slots, struct gsmrt_kv_cache **out, struct gsmrt_err *err);
void gsmrt_kv_cache_destroy(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv);
/* Makes sure pages exist for positions [0, n_pos) (a managed cache: only
 * checks the context), then uploads the table if it changed. */
gsmrt_status gsmrt_kv_cache_reserve(struct gsmrt_vk_device *dev, struct gsmrt_kv_cache *kv,
                                    uint32_t n_pos, struct gsmrt_err *err);
/* Bindings of layer il: its hot pool, its cold pool (the hot pool when there
 * is none) and its row of the page table. */
gsmrt_status gsmrt_kv_cache_bind(const struct gsmrt_vk_device *dev, const struct gsmrt_kv_cache *kv, uint32_t il,
                                 struct gsmrt_vk_range *hot, struct gsmrt_vk_range *cold,
                                 struct gsmrt_vk_range *table, struct gsmrt_err *err);
/* Device-local and host-visible bytes the pools hold. */
uint64_t gsmrt_kv_cache_hot_bytes(const struct gsmrt_kv_cache *kv);
uint64_t gsmrt_kv_cache_cold_bytes(const struct gsmrt_kv_cache *kv);

/* ---- the forward pass ----------------------------------------------------- */

/* Activations for up to max_tok tokens per step; one recording, reused. */
struct gsmrt_forward {
    struct gsmrt_dmodel *m;
    uint32_t max_tok, n_ctx;
    struct gsmrt_vk_rec *rec;
    struct gsmrt_vk_buf tokens, pos;             /* uint / int [max_tok] */
    struct gsmrt_vk_buf x, h, proj;              /* [max_tok][E] */
    struct gsmrt_vk_buf q, qa_lat, q_a;          /* [T][H*DK], [T][H][KVL], [T][QL] */
    struct gsmrt_vk_buf kv_new;                  /* [T][KVL+R] */
    struct gsmrt_vk_buf partial, o_lat, o;       /* attention partials, [T][H][KVL], [T][H*DV] */
    struct gsmrt_vk_buf ff_g, ff_u, ff_act;      /* [T][max(F, FE*NS)] */
    struct gsmrt_vk_buf router, ids, wts;        /* [T][NE], [T][K], [T][K] */
    struct gsmrt_vk_buf ex_g, ex_u, ex_act;      /* [T][K][FE] */
    struct gsmrt_vk_buf ex_down, moe_y;          /* [T][K][E], [T][E] */
    struct gsmrt_vk_buf logits;                  /* [max_tok][V] */
    int32_t *pos_host, *tok_host;                /* [max_tok] positions and ids being uploaded */
    struct gsmrt_gsm_decode *gsm;                /* GSM state, or NULL for dense attention (not owned) */
    uint32_t n_dispatches;                       /* in the last step */
    struct gsmrt_attn_stats_sink *stats;         /* calibration: attention statistics of every layer
                                                    are recorded here; NULL normally (not owned) */
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
