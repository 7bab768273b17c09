/* hparams.h -- a model's hyper-parameters read from GGUF metadata, the values
 * the decoder derives from them, and the check of every tensor's shape.
 *
 * Key names, types, defaults and the tensor table: shared/docs/deepseek2-gguf.md
 * §2-4; the derived RoPE/YaRN and attention-scale values: §5-6. Names follow
 * llama.cpp's llama_hparams where one exists. */
#ifndef GSMRT_MODEL_HPARAMS_H
#define GSMRT_MODEL_HPARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "gguf/gguf.h"

struct gsmrt_arch;   /* model/arch.h */

enum gsmrt_rope_scaling {
    GSMRT_ROPE_SCALING_NONE = 0,
    GSMRT_ROPE_SCALING_LINEAR = 1,
    GSMRT_ROPE_SCALING_YARN = 2,
    GSMRT_ROPE_SCALING_LONGROPE = 3
};

enum gsmrt_expert_gating {
    GSMRT_EXPERT_GATING_SOFTMAX = 1,
    GSMRT_EXPERT_GATING_SIGMOID = 2
};

#define GSMRT_HPARAMS_MAX_LAYERS 512   /* llama.cpp's LLAMA_MAX_LAYERS */

/* The fields below are deepseek2's, read by its module
 * (model/deepseek2_hparams.c); another architecture reads its own keys into
 * the fields it shares with deepseek2 (n_vocab, n_embd, n_layer, n_head,
 * n_ctx_train, rms_eps, ...) and adds the ones it needs; fields it does not
 * use stay 0. Per-layer keys ("k/arr" in the fact sheet) must hold one value
 * for every layer they apply to; per-layer variation is refused. Symbols in
 * comments are the fact sheet's. */
struct gsmrt_hparams {
    const struct gsmrt_arch *arch;   /* the registered architecture of general.architecture */
    uint32_t n_vocab;              /* V: length of tokenizer.ggml.tokens */
    uint32_t n_embd;               /* E */
    uint32_t n_layer;              /* L */
    uint32_t n_ctx_train;
    uint32_t n_head;               /* H */
    uint32_t n_head_kv;            /* 1 for MLA */
    uint32_t n_layer_dense_lead;   /* blocks [0, n_layer_dense_lead) are dense, the rest MoE */
    uint32_t n_ff;                 /* F: dense FFN width (0 if there are no dense blocks) */
    uint32_t n_ff_exp;             /* FE: width of one routed expert and of each shared expert */
    uint32_t n_expert;             /* NE */
    uint32_t n_expert_used;        /* K */
    uint32_t n_expert_shared;      /* NS */
    uint32_t q_lora_rank;          /* QL; 0: attn_q instead of attn_q_a/attn_q_b */
    uint32_t kv_lora_rank;         /* KVL */
    uint32_t n_rot;                /* R: rope dims at the end of each q/k head */
    uint32_t n_embd_head_k_mla;    /* DK = NOPE + R */
    uint32_t n_embd_head_v_mla;    /* DV */
    uint32_t n_embd_head_k;        /* attention.key_length: KVL + R for MLA (the cached row) */
    uint32_t n_embd_head_v;        /* attention.value_length: KVL for MLA */
    float rms_eps;
    float rope_freq_base;
    enum gsmrt_rope_scaling rope_scaling_type;
    float rope_scaling_factor;     /* s as stored (0 = none); freq_scale below is 1/s */
    uint32_t n_ctx_orig_yarn;      /* rope.scaling.original_context_length, default n_ctx_train */
    float yarn_log_multiplier;     /* as stored: 0.1 x mscale_all_dim */
    float rope_scaling_attn_factor;   /* rope.scaling.attn_factor, default 1 */
    float expert_weights_scale;    /* 0 or 1: not applied */
    bool expert_weights_norm;
    enum gsmrt_expert_gating expert_gating_func;
    uint32_t expert_group_count;   /* group routing only when > 1 */
    uint32_t expert_group_used_count;
    bool has_output;               /* else the output layer is token_embd */
    bool has_exp_probs_b;          /* every MoE block has exp_probs_b.bias */
    bool has_ffn_gate_up_exps;     /* MoE blocks use the fused ffn_gate_up_exps [E, 2FE, NE] */
    bool is_mla;                   /* attn_k_b/attn_v_b form (always true once loaded) */

    /* derived, fact sheet §5-6 */
    float freq_scale;              /* 1/s */
    float ext_factor;              /* 1 for YaRN, else 0 */
    float rope_attn_factor;        /* attn_factor passed to rope (llama_context's yarn_attn_factor) */
    float rope_mscale;             /* m_rope: what cos/sin are multiplied by */
    float yarn_beta_fast;          /* 32 */
    float yarn_beta_slow;          /* 1 */
    float yarn_corr_dims[2];       /* low, high (dimension-pair indices) */
    float kq_scale;                /* score scale, mscale^2 / sqrt(DK) */
};

/* Reads the hyper-parameters of `g` into *hp through the architecture that
 * general.architecture names (model/arch.h) and checks every tensor against
 * them and the architecture's tensor table: required tensors present, no
 * unexpected tensor, exact ne (trailing dims 1), 1-D tensors F32. Keys must
 * have exactly the types llama.cpp reads them with. GSMRT_E_FORMAT on an
 * architecture that is not registered (the message lists the registered
 * ones), a missing key, a wrongly typed or out-of-range value, or a tensor
 * whose shape contradicts the hyper-parameters; the message starts with the
 * file name and names the key or tensor (with its shape and the expected
 * one). *hp is zeroed first and complete only on success. */
gsmrt_status gsmrt_hparams_load(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err);

#endif
