/* deepseek4_hparams.c -- the deepseek4 (DeepSeek-V4) architecture as data:
 * its hyper-parameters from GGUF metadata (the keys and types llama.cpp's
 * llama_model_deepseek4::load_arch_hparams and the generic loader read), its
 * tensor table (load_arch_tensors), its KV layout (raw window ring,
 * compressed rows, indexer rows, the compressors' pending-position rings)
 * and the descriptor that registers it. The forward is not written yet, so
 * check_runnable refuses every file: a half forward never runs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/deepseek4.h"
#include "model/hparams.h"
#include "model/hparams_keys.h"

#define TRY(x)                                   \
    do {                                         \
        gsmrt_status st_ = (x);                  \
        if (st_ != GSMRT_OK) return st_;         \
    } while (0)

#define EXPERT_GATING_SQRT_SOFTPLUS 4u   /* llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SQRT_SOFTPLUS */

/* ---- keys ------------------------------------------------------------------ */

/* compress_ratios: an INT32 (or UINT32) array with at least block_count
 * entries (llama.cpp: longer arrays cover MTP blocks), each 0, 4 or 128. */
static gsmrt_status read_ratios(struct gsmrt_hpk *r, struct gsmrt_hparams *hp)
{
    const char *suffix = "attention.compress_ratios";
    char k[GSMRT_HPK_MAX_KEY];
    gsmrt_hpk_key(r, suffix, k);
    uint32_t et;
    uint64_t n;
    TRY(gsmrt_gguf_get_arr_info(r->g, k, &et, &n, r->err));
    if (et != GSMRT_GGUF_TYPE_I32 && et != GSMRT_GGUF_TYPE_U32)
        return gsmrt_hpk_bad(r, suffix, "an array of %s (expected an array of i32)", gsmrt_gguf_type_name(et));
    if (n < hp->n_layer)
        return gsmrt_hpk_bad(r, suffix, "%llu entries, shorter than block_count %u (expected one per block)",
                             (unsigned long long)n, hp->n_layer);
    const void *data;
    TRY(gsmrt_gguf_get_arr(r->g, k, et, &data, &n, r->err));
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        int32_t v;
        memcpy(&v, (const uint8_t *)data + 4 * (size_t)il, 4);
        if (v != 0 && v != (int32_t)DS4_RATIO_CSA && v != (int32_t)DS4_RATIO_HCA)
            return gsmrt_hpk_bad(r, suffix, "block %u has ratio %d (expected 0, 4 or 128)", il, v);
        hp->compress_ratio[il] = (uint32_t)v;
    }
    return GSMRT_OK;
}

/* A "key or array" f32 (llama.cpp's get_key_or_arr): one f32 for every
 * block, or an array of f32 with exactly block_count entries. */
static gsmrt_status read_f32_layers(struct gsmrt_hpk *r, const char *suffix, uint32_t n_layer, float *out)
{
    char k[GSMRT_HPK_MAX_KEY];
    const struct gsmrt_gguf_kv *kv = gsmrt_gguf_find_kv(r->g, gsmrt_hpk_key(r, suffix, k));
    if (!kv) return gsmrt_hpk_bad(r, suffix, "missing");
    if (kv->type != GSMRT_GGUF_TYPE_ARRAY) {
        float v;
        TRY(gsmrt_hpk_f32(r, suffix, &v));
        for (uint32_t il = 0; il < n_layer; il++) out[il] = v;
        return GSMRT_OK;
    }
    if (kv->arr_type != GSMRT_GGUF_TYPE_F32)
        return gsmrt_hpk_bad(r, suffix, "an array of %s (expected f32 or an array of f32)",
                             gsmrt_gguf_type_name(kv->arr_type));
    if (kv->arr_count != n_layer)
        return gsmrt_hpk_bad(r, suffix, "%llu entries (expected block_count %u)", (unsigned long long)kv->arr_count,
                             n_layer);
    const void *data;
    uint64_t n;
    TRY(gsmrt_gguf_get_arr(r->g, k, GSMRT_GGUF_TYPE_F32, &data, &n, r->err));
    memcpy(out, data, 4 * (size_t)n_layer);
    return GSMRT_OK;
}

static gsmrt_status positive(struct gsmrt_hpk *r, const char *suffix, uint32_t v)
{
    return v ? GSMRT_OK : gsmrt_hpk_bad(r, suffix, "0 (expected > 0)");
}

static gsmrt_status finite_positive(struct gsmrt_hpk *r, const char *suffix, float v)
{
    return isfinite(v) && v > 0 ? GSMRT_OK : gsmrt_hpk_bad(r, suffix, "%g (expected a finite value > 0)", (double)v);
}

static gsmrt_status read_attention(struct gsmrt_hpk *r, struct gsmrt_hparams *hp)
{
    uint32_t L = hp->n_layer;
    TRY(gsmrt_hpk_u32_layers(r, "attention.head_count", L, true, 0, 0, L, &hp->n_head));
    TRY(positive(r, "attention.head_count", hp->n_head));
    TRY(gsmrt_hpk_u32_layers(r, "attention.head_count_kv", L, false, 1, 0, L, &hp->n_head_kv));
    if (hp->n_head_kv != 1)
        return gsmrt_hpk_bad(r, "attention.head_count_kv", "%u (deepseek4 has one shared KV row: expected 1)",
                             hp->n_head_kv);
    TRY(gsmrt_hpk_u32(r, "attention.key_length", &hp->n_embd_head_k));
    TRY(positive(r, "attention.key_length", hp->n_embd_head_k));
    TRY(gsmrt_hpk_u32_opt(r, "attention.value_length", hp->n_embd_head_k, &hp->n_embd_head_v));
    if (hp->n_embd_head_v != hp->n_embd_head_k)
        return gsmrt_hpk_bad(r, "attention.value_length", "%u (expected key_length %u: K = V in deepseek4)",
                             hp->n_embd_head_v, hp->n_embd_head_k);
    TRY(gsmrt_hpk_u32_opt(r, "rope.dimension_count", hp->n_embd_head_k, &hp->n_rot));
    if (hp->n_rot == 0 || hp->n_rot % 2 != 0 || hp->n_rot > hp->n_embd_head_k)
        return gsmrt_hpk_bad(r, "rope.dimension_count", "%u (expected even, > 0 and <= key_length %u)", hp->n_rot,
                             hp->n_embd_head_k);
    TRY(gsmrt_hpk_f32(r, "attention.layer_norm_rms_epsilon", &hp->rms_eps));
    TRY(finite_positive(r, "attention.layer_norm_rms_epsilon", hp->rms_eps));
    TRY(gsmrt_hpk_u32(r, "attention.q_lora_rank", &hp->q_lora_rank));
    TRY(positive(r, "attention.q_lora_rank", hp->q_lora_rank));
    TRY(gsmrt_hpk_u32(r, "attention.sliding_window", &hp->n_swa));
    TRY(positive(r, "attention.sliding_window", hp->n_swa));

    TRY(gsmrt_hpk_u32(r, "attention.output_group_count", &hp->o_group_count));
    if (hp->o_group_count == 0 || hp->n_head % hp->o_group_count != 0)
        return gsmrt_hpk_bad(r, "attention.output_group_count", "%u (expected > 0 and dividing head_count %u)",
                             hp->o_group_count, hp->n_head);
    TRY(gsmrt_hpk_u32(r, "attention.output_lora_rank", &hp->o_lora_rank));
    TRY(positive(r, "attention.output_lora_rank", hp->o_lora_rank));

    TRY(read_ratios(r, hp));
    TRY(gsmrt_hpk_f32(r, "attention.compress_rope_freq_base", &hp->compress_rope_freq_base));
    if (!isfinite(hp->compress_rope_freq_base) || hp->compress_rope_freq_base <= 1.0f)
        return gsmrt_hpk_bad(r, "attention.compress_rope_freq_base", "%g (expected a finite value > 1)",
                             (double)hp->compress_rope_freq_base);

    /* llama.cpp reads the indexer keys for every file; they matter on CSA layers */
    TRY(gsmrt_hpk_u32(r, "attention.indexer.head_count", &hp->indexer_n_head));
    TRY(gsmrt_hpk_u32(r, "attention.indexer.key_length", &hp->indexer_head_dim));
    TRY(gsmrt_hpk_u32(r, "attention.indexer.top_k", &hp->indexer_top_k));
    bool any_csa = false;
    for (uint32_t il = 0; il < L; il++) any_csa = any_csa || hp->compress_ratio[il] == DS4_RATIO_CSA;
    if (any_csa) {
        TRY(positive(r, "attention.indexer.head_count", hp->indexer_n_head));
        if (hp->indexer_head_dim < hp->n_rot)
            return gsmrt_hpk_bad(r, "attention.indexer.key_length",
                                 "%u (expected >= rope.dimension_count %u: indexer queries are RoPE'd)",
                                 hp->indexer_head_dim, hp->n_rot);
        /* the runtime's own rule: llama.cpp clamps a top-k larger than the
         * rows any context can hold, which hides a broken file */
        uint32_t rows = hp->n_ctx_train / DS4_RATIO_CSA;
        if (hp->indexer_top_k == 0 || hp->indexer_top_k > rows)
            return gsmrt_hpk_bad(r, "attention.indexer.top_k",
                                 "%u (expected 1..%u: the ratio-4 rows a context_length of %u holds)",
                                 hp->indexer_top_k, rows, hp->n_ctx_train);
    }
    return GSMRT_OK;
}

static gsmrt_status read_rope(struct gsmrt_hpk *r, struct gsmrt_hparams *hp)
{
    TRY(gsmrt_hpk_f32_opt(r, "rope.freq_base", 10000.0f, &hp->rope_freq_base));
    if (!isfinite(hp->rope_freq_base) || hp->rope_freq_base <= 1.0f)
        return gsmrt_hpk_bad(r, "rope.freq_base", "%g (expected a finite value > 1)", (double)hp->rope_freq_base);
    struct gsmrt_gguf_str type;
    TRY(gsmrt_hpk_str_opt(r, "rope.scaling.type", "none", &type));
    static const char *const scaling[] = {"none", "linear", "yarn"};
    hp->rope_scaling_type = (enum gsmrt_rope_scaling)-1;
    for (int i = 0; i < 3; i++)
        if (type.len == strlen(scaling[i]) && memcmp(type.ptr, scaling[i], type.len) == 0)
            hp->rope_scaling_type = (enum gsmrt_rope_scaling)i;
    if ((int)hp->rope_scaling_type < 0)
        return gsmrt_hpk_bad(r, "rope.scaling.type", "\"%.*s\" (expected none, linear or yarn)",
                             type.len > 64 ? 64 : (int)type.len, type.ptr);
    TRY(gsmrt_hpk_f32_opt(r, "rope.scaling.factor", 0.0f, &hp->rope_scaling_factor));
    if (!isfinite(hp->rope_scaling_factor) || hp->rope_scaling_factor < 0)
        return gsmrt_hpk_bad(r, "rope.scaling.factor", "%g (expected a finite value >= 0)",
                             (double)hp->rope_scaling_factor);
    TRY(gsmrt_hpk_u32_opt(r, "rope.scaling.original_context_length", hp->n_ctx_train, &hp->n_ctx_orig_yarn));
    TRY(positive(r, "rope.scaling.original_context_length", hp->n_ctx_orig_yarn));
    TRY(gsmrt_hpk_f32_opt(r, "rope.scaling.yarn_beta_fast", 32.0f, &hp->yarn_beta_fast));
    TRY(finite_positive(r, "rope.scaling.yarn_beta_fast", hp->yarn_beta_fast));
    TRY(gsmrt_hpk_f32_opt(r, "rope.scaling.yarn_beta_slow", 1.0f, &hp->yarn_beta_slow));
    TRY(finite_positive(r, "rope.scaling.yarn_beta_slow", hp->yarn_beta_slow));
    hp->freq_scale = hp->rope_scaling_factor > 0 ? 1.0f / hp->rope_scaling_factor : 1.0f;
    return GSMRT_OK;
}

static gsmrt_status read_ffn(struct gsmrt_hpk *r, struct gsmrt_hparams *hp)
{
    uint32_t L = hp->n_layer, ff;
    TRY(gsmrt_hpk_u32_layers(r, "feed_forward_length", L, false, 0, 0, L, &ff));   /* type-checked only */
    TRY(gsmrt_hpk_u32(r, "expert_count", &hp->n_expert));
    TRY(positive(r, "expert_count", hp->n_expert));
    TRY(gsmrt_hpk_u32_layers(r, "expert_used_count", L, true, 0, 0, L, &hp->n_expert_used));
    if (hp->n_expert_used == 0 || hp->n_expert_used > hp->n_expert)
        return gsmrt_hpk_bad(r, "expert_used_count", "%u out of range [1, expert_count %u]", hp->n_expert_used,
                             hp->n_expert);
    TRY(gsmrt_hpk_u32_layers(r, "expert_feed_forward_length", L, true, 0, 0, L, &hp->n_ff_exp));
    TRY(positive(r, "expert_feed_forward_length", hp->n_ff_exp));
    TRY(gsmrt_hpk_u32(r, "expert_shared_count", &hp->n_expert_shared));
    TRY(positive(r, "expert_shared_count", hp->n_expert_shared));
    TRY(gsmrt_hpk_f32(r, "expert_weights_scale", &hp->expert_weights_scale));
    TRY(finite_positive(r, "expert_weights_scale", hp->expert_weights_scale));
    char k[GSMRT_HPK_MAX_KEY];
    if (!gsmrt_hpk_has(r, "expert_weights_norm")) return gsmrt_hpk_bad(r, "expert_weights_norm", "missing");
    TRY(gsmrt_gguf_get_bool_opt(r->g, gsmrt_hpk_key(r, "expert_weights_norm", k), false, &hp->expert_weights_norm,
                                r->err));
    uint32_t gating;
    TRY(gsmrt_hpk_u32(r, "expert_gating_func", &gating));
    if (gating != EXPERT_GATING_SQRT_SOFTPLUS)
        return gsmrt_hpk_bad(r, "expert_gating_func", "%u (deepseek4 scores experts by sqrt-softplus: expected %u)",
                             gating, EXPERT_GATING_SQRT_SOFTPLUS);
    TRY(read_f32_layers(r, "swiglu_clamp_exp", L, hp->swiglu_clamp_exp));
    if (gsmrt_hpk_has(r, "swiglu_clamp_shexp")) {
        TRY(read_f32_layers(r, "swiglu_clamp_shexp", L, hp->swiglu_clamp_shexp));
    } else {
        memcpy(hp->swiglu_clamp_shexp, hp->swiglu_clamp_exp, sizeof hp->swiglu_clamp_shexp);
    }
    for (uint32_t il = 0; il < L; il++)
        if (!isfinite(hp->swiglu_clamp_exp[il]) || !isfinite(hp->swiglu_clamp_shexp[il]))
            return gsmrt_hpk_bad(r, "swiglu_clamp_exp", "block %u: not finite (expected a limit, or 0 for none)", il);
    TRY(gsmrt_hpk_u32(r, "hash_layer_count", &hp->hash_layer_count));
    if (hp->hash_layer_count > L)
        return gsmrt_hpk_bad(r, "hash_layer_count", "%u exceeds block_count %u", hp->hash_layer_count, L);
    return GSMRT_OK;
}

static gsmrt_status read_keys(struct gsmrt_hpk *r, struct gsmrt_hparams *hp)
{
    TRY(gsmrt_hpk_u32(r, "context_length", &hp->n_ctx_train));
    TRY(positive(r, "context_length", hp->n_ctx_train));
    TRY(gsmrt_hpk_u32(r, "embedding_length", &hp->n_embd));
    TRY(positive(r, "embedding_length", hp->n_embd));
    TRY(gsmrt_hpk_u32(r, "block_count", &hp->n_layer));
    if (hp->n_layer == 0 || hp->n_layer > GSMRT_HPARAMS_MAX_LAYERS)
        return gsmrt_hpk_bad(r, "block_count", "%u out of range [1, %d]", hp->n_layer, GSMRT_HPARAMS_MAX_LAYERS);
    uint32_t nextn, vocab_size;
    TRY(gsmrt_hpk_u32_opt(r, "vocab_size", 0, &vocab_size));   /* type-checked only; V is the token list's length */
    TRY(gsmrt_hpk_u32_opt(r, "nextn_predict_layers", 0, &nextn));
    if (nextn != 0)
        return gsmrt_hpk_bad(r, "nextn_predict_layers", "%u (MTP blocks are not supported; expected 0)", nextn);

    TRY(gsmrt_hpk_u32(r, "hyper_connection.count", &hp->hc_mult));
    if (hp->hc_mult == 0 || hp->hc_mult > DS4_MAX_HC)
        return gsmrt_hpk_bad(r, "hyper_connection.count", "%u out of range [1, %u]", hp->hc_mult, DS4_MAX_HC);
    TRY(gsmrt_hpk_u32(r, "hyper_connection.sinkhorn_iterations", &hp->hc_sinkhorn_iters));
    TRY(positive(r, "hyper_connection.sinkhorn_iterations", hp->hc_sinkhorn_iters));
    TRY(gsmrt_hpk_f32(r, "hyper_connection.epsilon", &hp->hc_eps));
    TRY(finite_positive(r, "hyper_connection.epsilon", hp->hc_eps));
    uint32_t embd_out;
    TRY(gsmrt_hpk_u32_opt(r, "embedding_length_out", hp->hc_mult * hp->n_embd, &embd_out));
    if (embd_out != hp->hc_mult * hp->n_embd)
        return gsmrt_hpk_bad(r, "embedding_length_out", "%u (expected hyper_connection.count x embedding_length = %u)",
                             embd_out, hp->hc_mult * hp->n_embd);

    TRY(read_attention(r, hp));
    TRY(read_rope(r, hp));
    TRY(read_ffn(r, hp));
    return GSMRT_OK;
}

static gsmrt_status read_hparams(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    struct gsmrt_hpk *r = &(struct gsmrt_hpk){.g = g, .arch = "deepseek4", .err = err};
    return read_keys(r, hp);
}

/* ---- tensors --------------------------------------------------------------- */

enum dim {
    D_E, D_V, D_HCE, D_HC, D_HCMIX, D_1, D_3, D_H, D_QL, D_HD, D_D, D_WOA_IN, D_WOA_OUT, D_GOL, D_2D, D_R4, D_R128,
    D_NI, D_NIDI, D_2DI, D_DI, D_NE, D_NUSED, D_FE, D_FENS
};

static uint64_t dim_value(const struct gsmrt_hparams *hp, uint8_t d)
{
    uint64_t H = hp->n_head, D = hp->n_embd_head_k, G = hp->o_group_count;
    switch ((enum dim)d) {
    case D_E: return hp->n_embd;
    case D_V: return hp->n_vocab;
    case D_HCE: return (uint64_t)hp->hc_mult * hp->n_embd;
    case D_HC: return hp->hc_mult;
    case D_HCMIX: return (2ull + hp->hc_mult) * hp->hc_mult;
    case D_1: return 1;
    case D_3: return 3;
    case D_H: return H;
    case D_QL: return hp->q_lora_rank;
    case D_HD: return H * D;
    case D_D: return D;
    case D_WOA_IN: return G ? H * D / G : 0;   /* the file's wo_a: heads of one group in */
    case D_WOA_OUT: return G * hp->o_lora_rank;
    case D_GOL: return G * hp->o_lora_rank;
    case D_2D: return 2 * D;
    case D_R4: return DS4_RATIO_CSA;
    case D_R128: return DS4_RATIO_HCA;
    case D_NI: return hp->indexer_n_head;
    case D_NIDI: return (uint64_t)hp->indexer_n_head * hp->indexer_head_dim;
    case D_2DI: return 2ull * hp->indexer_head_dim;
    case D_DI: return hp->indexer_head_dim;
    case D_NE: return hp->n_expert;
    case D_NUSED: return hp->n_expert_used;
    case D_FE: return hp->n_ff_exp;
    case D_FENS: return (uint64_t)hp->n_ff_exp * hp->n_expert_shared;
    }
    return 0;
}

enum when { ALWAYS, CSA, HCA, HASHED, BIASED };

#define ROW(slot, nm, layer, w, n, ...) \
    [slot] = {.name = nm, .per_layer = layer, .when = w, .n_dims = n, .dims = {__VA_ARGS__}}
#define GLOBAL(slot, nm, n, ...) ROW(slot, nm, false, ALWAYS, n, __VA_ARGS__)
#define LAYER(slot, nm, w, n, ...) ROW(slot, nm, true, w, n, __VA_ARGS__)

static const struct gsmrt_tensor_spec tensors[DS4_N_TENSORS] = {
    GLOBAL(DS4_TOKEN_EMBD, "token_embd.weight", 2, D_E, D_V),
    GLOBAL(DS4_OUTPUT_NORM, "output_norm.weight", 1, D_E),
    GLOBAL(DS4_OUTPUT, "output.weight", 2, D_E, D_V),
    GLOBAL(DS4_HC_HEAD_FN, "output_hc_fn.weight", 2, D_HCE, D_HC),
    GLOBAL(DS4_HC_HEAD_BASE, "output_hc_base.weight", 1, D_HC),
    GLOBAL(DS4_HC_HEAD_SCALE, "output_hc_scale.weight", 1, D_1),
    LAYER(DS4_ATTN_NORM, "attn_norm.weight", ALWAYS, 1, D_E),
    LAYER(DS4_ATTN_SINKS, "attn_sinks.weight", ALWAYS, 1, D_H),
    LAYER(DS4_ATTN_Q_A, "attn_q_a.weight", ALWAYS, 2, D_E, D_QL),
    LAYER(DS4_ATTN_Q_A_NORM, "attn_q_a_norm.weight", ALWAYS, 1, D_QL),
    LAYER(DS4_ATTN_Q_B, "attn_q_b.weight", ALWAYS, 2, D_QL, D_HD),
    LAYER(DS4_ATTN_KV, "attn_kv.weight", ALWAYS, 2, D_E, D_D),
    LAYER(DS4_ATTN_KV_NORM, "attn_kv_a_norm.weight", ALWAYS, 1, D_D),
    LAYER(DS4_ATTN_OUT_A, "attn_output_a.weight", ALWAYS, 2, D_WOA_IN, D_WOA_OUT),
    LAYER(DS4_ATTN_OUT_B, "attn_output_b.weight", ALWAYS, 2, D_GOL, D_E),
    LAYER(DS4_HC_ATTN_FN, "hc_attn_fn.weight", ALWAYS, 2, D_HCE, D_HCMIX),
    LAYER(DS4_HC_ATTN_BASE, "hc_attn_base.weight", ALWAYS, 1, D_HCMIX),
    LAYER(DS4_HC_ATTN_SCALE, "hc_attn_scale.weight", ALWAYS, 1, D_3),
    LAYER(DS4_HC_FFN_FN, "hc_ffn_fn.weight", ALWAYS, 2, D_HCE, D_HCMIX),
    LAYER(DS4_HC_FFN_BASE, "hc_ffn_base.weight", ALWAYS, 1, D_HCMIX),
    LAYER(DS4_HC_FFN_SCALE, "hc_ffn_scale.weight", ALWAYS, 1, D_3),
    /* ratio 4: the overlapping compressor, two half-feature blocks (2D wide) */
    LAYER(DS4_CSA_COMP_WKV, "attn_compressor_kv.weight", CSA, 2, D_E, D_2D),
    LAYER(DS4_CSA_COMP_WGATE, "attn_compressor_gate.weight", CSA, 2, D_E, D_2D),
    LAYER(DS4_CSA_COMP_APE, "attn_compressor_ape.weight", CSA, 2, D_2D, D_R4),
    LAYER(DS4_CSA_COMP_NORM, "attn_compressor_norm.weight", CSA, 1, D_D),
    /* ratio 128: one block per row (D wide) */
    LAYER(DS4_HCA_COMP_WKV, "attn_compressor_kv.weight", HCA, 2, D_E, D_D),
    LAYER(DS4_HCA_COMP_WGATE, "attn_compressor_gate.weight", HCA, 2, D_E, D_D),
    LAYER(DS4_HCA_COMP_APE, "attn_compressor_ape.weight", HCA, 2, D_D, D_R128),
    LAYER(DS4_HCA_COMP_NORM, "attn_compressor_norm.weight", HCA, 1, D_D),
    LAYER(DS4_INDEXER_PROJ, "indexer.proj.weight", CSA, 2, D_E, D_NI),
    LAYER(DS4_INDEXER_Q_B, "indexer.attn_q_b.weight", CSA, 2, D_QL, D_NIDI),
    LAYER(DS4_INDEXER_COMP_WKV, "indexer_compressor_kv.weight", CSA, 2, D_E, D_2DI),
    LAYER(DS4_INDEXER_COMP_WGATE, "indexer_compressor_gate.weight", CSA, 2, D_E, D_2DI),
    LAYER(DS4_INDEXER_COMP_APE, "indexer_compressor_ape.weight", CSA, 2, D_2DI, D_R4),
    LAYER(DS4_INDEXER_COMP_NORM, "indexer_compressor_norm.weight", CSA, 1, D_DI),
    LAYER(DS4_FFN_NORM, "ffn_norm.weight", ALWAYS, 1, D_E),
    LAYER(DS4_FFN_GATE_INP, "ffn_gate_inp.weight", ALWAYS, 2, D_E, D_NE),
    [DS4_FFN_TID2EID] = {.name = "ffn_gate_tid2eid.weight", .per_layer = true, .when = HASHED, .n_dims = 2,
                         .dims = {D_NUSED, D_V}, .i32 = true},
    LAYER(DS4_FFN_EXP_PROBS_B, "exp_probs_b.bias", BIASED, 1, D_NE),
    LAYER(DS4_FFN_GATE_EXPS, "ffn_gate_exps.weight", ALWAYS, 3, D_E, D_FE, D_NE),
    LAYER(DS4_FFN_UP_EXPS, "ffn_up_exps.weight", ALWAYS, 3, D_E, D_FE, D_NE),
    LAYER(DS4_FFN_DOWN_EXPS, "ffn_down_exps.weight", ALWAYS, 3, D_FE, D_E, D_NE),
    LAYER(DS4_FFN_GATE_SHEXP, "ffn_gate_shexp.weight", ALWAYS, 2, D_E, D_FENS),
    LAYER(DS4_FFN_UP_SHEXP, "ffn_up_shexp.weight", ALWAYS, 2, D_E, D_FENS),
    LAYER(DS4_FFN_DOWN_SHEXP, "ffn_down_shexp.weight", ALWAYS, 2, D_FENS, D_E),
};

static bool applies(const struct gsmrt_hparams *hp, uint8_t w, int64_t il)
{
    uint32_t ratio = il >= 0 ? hp->compress_ratio[il] : 0;
    bool hashed = il >= 0 && il < (int64_t)hp->hash_layer_count;
    switch ((enum when)w) {
    case ALWAYS: return true;
    case CSA: return ratio == DS4_RATIO_CSA;
    case HCA: return ratio == DS4_RATIO_HCA;
    case HASHED: return hashed;
    case BIASED: return il >= 0 && !hashed;
    }
    return false;
}

static gsmrt_status check_runnable(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    (void)hp;
    return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                         "%s: deepseek4 (DeepSeek-V4) files are recognised and checked, but their forward pass "
                         "is not implemented yet; this build cannot run them",
                         gsmrt_gguf_name(g));
}

/* ---- KV layout ---------------------------------------------------------------- */

/* Per layer: the raw window ring (one D row per position; n_swa plus one
 * pass, so a pass's stores never overwrite a row its queries read); on a
 * compressed layer the compressed rows (one per `ratio` positions, the whole
 * context) and the compressor's pending kv and score rings; on a ratio-4
 * layer also the indexer's rows and rings. CSA's compressor is 2D wide and
 * keeps two blocks (the previous one's first half-features join the next
 * row); HCA's is D wide and keeps one. Not tiered: GSM does not serve V4. */
static void kv_layout(const struct gsmrt_hparams *hp, uint32_t il, struct gsmrt_kv_layer_layout *out)
{
    uint32_t D = hp->n_embd_head_k, DI = hp->indexer_head_dim, ratio = hp->compress_ratio[il];
    *out = (struct gsmrt_kv_layer_layout){
        .n_streams = 1,
        .stream = {{.role = GSMRT_KV_ROLE_WINDOW, .row_floats = D, .ratio = 1,
                    .ring_rows = hp->n_swa + DS4_PASS_TOKENS}},
    };
    if (ratio == 0) return;
    bool csa = ratio == DS4_RATIO_CSA;
    uint32_t width = csa ? 2 * D : D, pending = (csa ? 2 * ratio : ratio) + DS4_PASS_TOKENS;
    struct gsmrt_kv_stream *s = out->stream;
    s[out->n_streams++] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_COMPRESSED, .row_floats = D, .ratio = ratio};
    for (int i = 0; i < 2; i++)   /* kv, then score */
        s[out->n_streams++] = (struct gsmrt_kv_stream){
            .role = GSMRT_KV_ROLE_STATE, .row_floats = width, .ratio = 1, .ring_rows = pending};
    if (!csa) return;
    s[out->n_streams++] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_INDEXER, .row_floats = DI, .ratio = ratio};
    for (int i = 0; i < 2; i++)
        s[out->n_streams++] = (struct gsmrt_kv_stream){
            .role = GSMRT_KV_ROLE_STATE, .row_floats = 2 * DI, .ratio = 1, .ring_rows = pending};
}

/* ---- the descriptor -------------------------------------------------------------- */

const struct gsmrt_arch gsmrt_arch_deepseek4 = {
    .name = "deepseek4",
    .read_hparams = read_hparams,
    .tensors = tensors,
    .n_tensors = DS4_N_TENSORS,
    .applies = applies,
    .dim = dim_value,
    .check_runnable = check_runnable,
    .kv_layout = kv_layout,
};
