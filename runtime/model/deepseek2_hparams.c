/* deepseek2_hparams.c -- the deepseek2 architecture as data: its
 * hyper-parameters from GGUF metadata with their derived RoPE/YaRN and
 * attention-scale values, its tensor table, its KV layout (one MLA latent
 * row per position), and the descriptor that registers it
 * (shared/docs/deepseek2-gguf.md §3-6). Reads keys with exactly the types
 * llama.cpp reads them with; refuses what the decoder does not run (legacy
 * attn_kv_b files, head_count_kv != 1, MTP blocks, per-layer variation) with
 * a message that says so. The forward recorder is deepseek2.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/deepseek2.h"
#include "model/hparams.h"
#include "model/hparams_keys.h"

#define TRY(x)                                   \
    do {                                         \
        gsmrt_status st_ = (x);                  \
        if (st_ != GSMRT_OK) return st_;         \
    } while (0)

/* ---- keys ------------------------------------------------------------------ */

static gsmrt_status read_keys(struct gsmrt_hpk *r, struct gsmrt_hparams *hp)
{
    TRY(gsmrt_hpk_u32(r, "context_length", &hp->n_ctx_train));
    TRY(gsmrt_hpk_u32(r, "embedding_length", &hp->n_embd));
    TRY(gsmrt_hpk_u32(r, "block_count", &hp->n_layer));
    if (hp->n_ctx_train == 0) return gsmrt_hpk_bad(r, "context_length", "0 (expected > 0)");
    if (hp->n_embd == 0) return gsmrt_hpk_bad(r, "embedding_length", "0 (expected > 0)");
    if (hp->n_layer == 0 || hp->n_layer > GSMRT_HPARAMS_MAX_LAYERS)
        return gsmrt_hpk_bad(r, "block_count", "%u out of range [1, %d]", hp->n_layer, GSMRT_HPARAMS_MAX_LAYERS);
    uint32_t L = hp->n_layer, nextn, vocab_size;
    TRY(gsmrt_hpk_u32_opt(r, "vocab_size", 0, &vocab_size));   /* type-checked only; V is the token list's length */
    TRY(gsmrt_hpk_u32_opt(r, "nextn_predict_layers", 0, &nextn));
    if (nextn != 0) return gsmrt_hpk_bad(r, "nextn_predict_layers",
                                         "%u (MTP blocks are not supported; expected 0)", nextn);
    TRY(gsmrt_hpk_u32_opt(r, "leading_dense_block_count", 0, &hp->n_layer_dense_lead));
    if (hp->n_layer_dense_lead > L)
        return gsmrt_hpk_bad(r, "leading_dense_block_count", "%u exceeds block_count %u", hp->n_layer_dense_lead, L);
    uint32_t n_dense = hp->n_layer_dense_lead;
    bool any_moe = n_dense < L;

    TRY(gsmrt_hpk_u32_layers(r, "feed_forward_length", L, false, 0, 0, n_dense, &hp->n_ff));
    if (n_dense > 0 && hp->n_ff == 0)
        return gsmrt_hpk_bad(r, "feed_forward_length", "0 with %u dense blocks (expected > 0)", n_dense);
    if (n_dense == 0) hp->n_ff = 0;
    TRY(gsmrt_hpk_u32_layers(r, "attention.head_count", L, true, 0, 0, L, &hp->n_head));
    if (hp->n_head == 0) return gsmrt_hpk_bad(r, "attention.head_count", "0 (expected > 0)");
    TRY(gsmrt_hpk_u32_layers(r, "attention.head_count_kv", L, false, hp->n_head, 0, L, &hp->n_head_kv));

    TRY(gsmrt_hpk_u32_opt(r, "attention.key_length_mla", 0, &hp->n_embd_head_k_mla));
    TRY(gsmrt_hpk_u32_opt(r, "attention.value_length_mla", 0, &hp->n_embd_head_v_mla));
    hp->is_mla = hp->n_embd_head_k_mla != 0 && hp->n_embd_head_v_mla != 0;
    if (!hp->is_mla) {
        if (hp->n_embd_head_k_mla == 0 && hp->n_embd_head_v_mla == 0)
            return gsmrt_hpk_bad(r, "attention.key_length_mla",
                       "missing: legacy (non-MLA, attn_kv_b) deepseek2 files are not supported; "
                       "convert with a current converter (MLA form, attn_k_b/attn_v_b)");
        return gsmrt_hpk_bad(r, hp->n_embd_head_k_mla ? "attention.value_length_mla" : "attention.key_length_mla",
                   "missing or 0 while the other *_length_mla key is set (expected both > 0)");
    }
    if (hp->n_head_kv != 1)
        return gsmrt_hpk_bad(r, "attention.head_count_kv", "%u (the MLA layout needs 1)", hp->n_head_kv);

    TRY(gsmrt_hpk_f32(r, "attention.layer_norm_rms_epsilon", &hp->rms_eps));
    if (!isfinite(hp->rms_eps) || hp->rms_eps <= 0)
        return gsmrt_hpk_bad(r, "attention.layer_norm_rms_epsilon",
                             "%g (expected a finite value > 0)", (double)hp->rms_eps);

    TRY(gsmrt_hpk_u32(r, "attention.kv_lora_rank", &hp->kv_lora_rank));
    if (hp->kv_lora_rank == 0) return gsmrt_hpk_bad(r, "attention.kv_lora_rank", "0 (expected > 0)");

    /* q_lora_rank may be omitted only by the "lite" models (fact sheet §3). */
    if (gsmrt_hpk_has(r, "attention.q_lora_rank")) {
        TRY(gsmrt_hpk_u32(r, "attention.q_lora_rank", &hp->q_lora_rank));
    } else {
        uint64_t n_vocab = hp->n_vocab;
        bool lite = L == 27 || L == 26 || (L == 48 && n_vocab == 128256);
        if (!lite) return gsmrt_hpk_bad(r, "attention.q_lora_rank",
                                        "missing (required unless the model is a \"lite\" one)");
        hp->q_lora_rank = 0;
    }

    TRY(gsmrt_hpk_u32_opt(r, "attention.key_length", hp->n_embd / hp->n_head, &hp->n_embd_head_k));
    TRY(gsmrt_hpk_u32_opt(r, "attention.value_length", hp->n_embd / hp->n_head, &hp->n_embd_head_v));
    TRY(gsmrt_hpk_u32_opt(r, "rope.dimension_count", hp->n_embd_head_k, &hp->n_rot));
    if (hp->n_rot == 0 || hp->n_rot % 2 != 0 || hp->n_rot >= hp->n_embd_head_k_mla)
        return gsmrt_hpk_bad(r, "rope.dimension_count", "%u (expected even, > 0 and < key_length_mla %u)", hp->n_rot,
                   hp->n_embd_head_k_mla);
    uint64_t cached = (uint64_t)hp->kv_lora_rank + hp->n_rot;
    if (gsmrt_hpk_has(r, "attention.key_length") && hp->n_embd_head_k != cached)
        return gsmrt_hpk_bad(r, "attention.key_length",
                             "%u (expected kv_lora_rank + rope.dimension_count = %llu for MLA)",
                   hp->n_embd_head_k, (unsigned long long)cached);
    if (gsmrt_hpk_has(r, "attention.value_length") && hp->n_embd_head_v != hp->kv_lora_rank)
        return gsmrt_hpk_bad(r, "attention.value_length", "%u (expected kv_lora_rank = %u for MLA)", hp->n_embd_head_v,
                   hp->kv_lora_rank);
    if (cached > UINT32_MAX)
        return gsmrt_hpk_bad(r, "attention.kv_lora_rank", "%u plus the rope dims overflows", hp->kv_lora_rank);
    hp->n_embd_head_k = (uint32_t)cached;
    hp->n_embd_head_v = hp->kv_lora_rank;

    /* RoPE and YaRN */
    TRY(gsmrt_hpk_f32_opt(r, "rope.freq_base", 10000.0f, &hp->rope_freq_base));
    if (!isfinite(hp->rope_freq_base) || hp->rope_freq_base <= 1.0f)
        return gsmrt_hpk_bad(r, "rope.freq_base", "%g (expected a finite value > 1)", (double)hp->rope_freq_base);
    struct gsmrt_gguf_str type;
    TRY(gsmrt_hpk_str_opt(r, "rope.scaling.type", "linear", &type));
    static const char *const scaling[] = {"none", "linear", "yarn", "longrope"};
    hp->rope_scaling_type = (enum gsmrt_rope_scaling)-1;
    for (int i = 0; i < 4; i++)
        if (type.len == strlen(scaling[i]) && memcmp(type.ptr, scaling[i], type.len) == 0)
            hp->rope_scaling_type = (enum gsmrt_rope_scaling)i;
    if ((int)hp->rope_scaling_type < 0)
        return gsmrt_hpk_bad(r, "rope.scaling.type", "\"%.*s\" (expected none, linear, yarn or longrope)",
                   type.len > 64 ? 64 : (int)type.len, type.ptr);
    if (hp->rope_scaling_type == GSMRT_ROPE_SCALING_LONGROPE)
        return gsmrt_hpk_bad(r, "rope.scaling.type", "longrope is not supported for deepseek2");
    TRY(gsmrt_hpk_f32_opt(r, "rope.scaling.factor", 0.0f, &hp->rope_scaling_factor));
    if (hp->rope_scaling_factor == 0.0f) TRY(gsmrt_hpk_f32_opt(r, "rope.scale_linear", 0.0f, &hp->rope_scaling_factor));
    if (!isfinite(hp->rope_scaling_factor) || hp->rope_scaling_factor < 0)
        return gsmrt_hpk_bad(r, "rope.scaling.factor",
                             "%g (expected a finite value >= 0)", (double)hp->rope_scaling_factor);
    TRY(gsmrt_hpk_u32_opt(r, "rope.scaling.original_context_length", hp->n_ctx_train, &hp->n_ctx_orig_yarn));
    if (hp->n_ctx_orig_yarn == 0) return gsmrt_hpk_bad(r, "rope.scaling.original_context_length", "0 (expected > 0)");
    TRY(gsmrt_hpk_f32_opt(r, "rope.scaling.yarn_log_multiplier", 0.0f, &hp->yarn_log_multiplier));
    if (!isfinite(hp->yarn_log_multiplier) || hp->yarn_log_multiplier < 0)
        return gsmrt_hpk_bad(r, "rope.scaling.yarn_log_multiplier", "%g (expected a finite value >= 0)",
                   (double)hp->yarn_log_multiplier);
    TRY(gsmrt_hpk_f32_opt(r, "rope.scaling.attn_factor", 1.0f, &hp->rope_scaling_attn_factor));
    if (!isfinite(hp->rope_scaling_attn_factor) || hp->rope_scaling_attn_factor <= 0)
        return gsmrt_hpk_bad(r, "rope.scaling.attn_factor", "%g (expected a finite value > 0)",
                   (double)hp->rope_scaling_attn_factor);

    /* experts */
    TRY(gsmrt_hpk_u32_opt(r, "expert_count", 0, &hp->n_expert));
    TRY(gsmrt_hpk_u32_layers(r, "expert_used_count", L, false, 0, n_dense, L, &hp->n_expert_used));
    TRY(gsmrt_hpk_u32(r, "expert_shared_count", &hp->n_expert_shared));
    TRY(gsmrt_hpk_u32_layers(r, "expert_feed_forward_length", L, true, 0, n_dense, L, &hp->n_ff_exp));
    TRY(gsmrt_hpk_f32_opt(r, "expert_weights_scale", 0.0f, &hp->expert_weights_scale));
    if (!isfinite(hp->expert_weights_scale) || hp->expert_weights_scale < 0)
        return gsmrt_hpk_bad(r, "expert_weights_scale",
                             "%g (expected a finite value >= 0)", (double)hp->expert_weights_scale);
    TRY(gsmrt_hpk_bool_opt(r, "expert_weights_norm", false, &hp->expert_weights_norm));
    uint32_t gating;
    TRY(gsmrt_hpk_u32_opt(r, "expert_gating_func", 0, &gating));
    if (gating == 0)   /* llama.cpp's default, including its one model-specific exception (§3) */
        gating = ((L == 47 || L == 48) && hp->n_vocab == 154880) ? GSMRT_EXPERT_GATING_SIGMOID
                                                                  : GSMRT_EXPERT_GATING_SOFTMAX;
    if (gating != GSMRT_EXPERT_GATING_SOFTMAX && gating != GSMRT_EXPERT_GATING_SIGMOID)
        return gsmrt_hpk_bad(r, "expert_gating_func", "%u not supported (expected 1 softmax or 2 sigmoid)", gating);
    hp->expert_gating_func = (enum gsmrt_expert_gating)gating;
    TRY(gsmrt_hpk_u32_opt(r, "expert_group_count", 0, &hp->expert_group_count));
    TRY(gsmrt_hpk_u32_opt(r, "expert_group_used_count", 0, &hp->expert_group_used_count));
    if (any_moe) {
        if (hp->n_expert == 0) return gsmrt_hpk_bad(r, "expert_count",
                                                    "0 with %u MoE blocks (expected > 0)", L - n_dense);
        if (hp->n_expert_used == 0 || hp->n_expert_used > hp->n_expert)
            return gsmrt_hpk_bad(r, "expert_used_count",
                                 "%u out of range [1, expert_count %u]", hp->n_expert_used, hp->n_expert);
        if (hp->n_ff_exp == 0) return gsmrt_hpk_bad(r, "expert_feed_forward_length", "0 (expected > 0)");
        if (hp->n_expert_shared == 0)
            return gsmrt_hpk_bad(r, "expert_shared_count", "0 (expected > 0: MoE blocks need their shared experts)");
        uint32_t G = hp->expert_group_count, GU = hp->expert_group_used_count;
        if (G > 1) {
            if (G >= hp->n_expert || hp->n_expert % G != 0)
                return gsmrt_hpk_bad(r, "expert_group_count",
                                     "%u (expected < expert_count %u and dividing it)", G, hp->n_expert);
            if (GU == 0 || GU >= G)
                return gsmrt_hpk_bad(r, "expert_group_used_count", "%u out of range [1, expert_group_count %u)", GU, G);
            if ((uint64_t)GU * (hp->n_expert / G) < hp->n_expert_used)
                return gsmrt_hpk_bad(r, "expert_group_used_count",
                                     "%u groups of %u experts cannot supply expert_used_count %u",
                           GU, hp->n_expert / G, hp->n_expert_used);
        }
    }
    return GSMRT_OK;
}

/* YaRN's ggml_rope_yarn_corr_dim: the dimension index whose wavelength fits
 * n_rot_turns turns in n_ctx_orig positions. */
static float corr_dim(float n_dims, float n_ctx_orig, float n_rot_turns, float base)
{
    return n_dims * logf(n_ctx_orig / (n_rot_turns * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

static float get_mscale(float s, float m) { return s <= 1.0f ? 1.0f : 1.0f + 0.1f * m * logf(s); }

/* Fact sheet §5 (rope angles, attn_factor of llama_context) and §6 (kq_scale),
 * in float as llama.cpp computes them. */
static void derive(struct gsmrt_hparams *hp)
{
    float s = hp->rope_scaling_factor == 0.0f ? 1.0f : hp->rope_scaling_factor;
    hp->freq_scale = 1.0f / s;
    hp->ext_factor = hp->rope_scaling_type == GSMRT_ROPE_SCALING_YARN ? 1.0f : 0.0f;
    float msad = hp->yarn_log_multiplier / 0.1f;   /* mscale_all_dim */
    float attn_factor = 1.0f;
    if (hp->ext_factor != 0.0f) {
        if (msad != 0.0f) {
            float m = msad != 1.0f ? msad : 1.0f;   /* deepseek2: HF "mscale" taken equal to msad */
            attn_factor = get_mscale(s, m) / get_mscale(s, msad);
        } else {
            attn_factor = get_mscale(s, 1.0f);
        }
        attn_factor *= 1.0f / (1.0f + 0.1f * logf(s));
    }
    attn_factor *= hp->rope_scaling_attn_factor;
    hp->rope_attn_factor = attn_factor;
    hp->rope_mscale = attn_factor * (hp->ext_factor != 0.0f ? 1.0f + 0.1f * logf(1.0f / hp->freq_scale) : 1.0f);

    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    float d = (float)hp->n_rot, n_orig = (float)hp->n_ctx_orig_yarn;
    float lo = floorf(corr_dim(d, n_orig, hp->yarn_beta_fast, hp->rope_freq_base));
    float hi = ceilf(corr_dim(d, n_orig, hp->yarn_beta_slow, hp->rope_freq_base));
    hp->yarn_corr_dims[0] = lo > 0.0f ? lo : 0.0f;
    hp->yarn_corr_dims[1] = hi < d - 1.0f ? hi : d - 1.0f;

    float attn_factor_org = attn_factor * (1.0f + 0.1f * logf(1.0f / hp->freq_scale));
    float mscale = attn_factor_org * (1.0f + 0.1f * msad * logf(1.0f / hp->freq_scale));
    hp->kq_scale = mscale * mscale / sqrtf((float)hp->n_embd_head_k_mla);
}

static gsmrt_status read_hparams(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    struct gsmrt_hpk *r = &(struct gsmrt_hpk){.g = g, .arch = "deepseek2", .err = err};
    TRY(read_keys(r, hp));
    derive(hp);
    return GSMRT_OK;
}

/* ---- tensors --------------------------------------------------------------- */

enum dim { D_E, D_V, D_QL, D_HDK, D_KVLR, D_KVL, D_NOPE, D_H, D_DV, D_HDV, D_F, D_NE, D_FE, D_2FE, D_FENS };

static uint64_t dim_value(const struct gsmrt_hparams *hp, uint8_t d)
{
    uint64_t H = hp->n_head;
    switch ((enum dim)d) {
    case D_E: return hp->n_embd;
    case D_V: return hp->n_vocab;
    case D_QL: return hp->q_lora_rank;
    case D_HDK: return H * hp->n_embd_head_k_mla;
    case D_KVLR: return (uint64_t)hp->kv_lora_rank + hp->n_rot;
    case D_KVL: return hp->kv_lora_rank;
    case D_NOPE: return (uint64_t)hp->n_embd_head_k_mla - hp->n_rot;
    case D_H: return H;
    case D_DV: return hp->n_embd_head_v_mla;
    case D_HDV: return H * hp->n_embd_head_v_mla;
    case D_F: return hp->n_ff;
    case D_NE: return hp->n_expert;
    case D_FE: return hp->n_ff_exp;
    case D_2FE: return 2ull * hp->n_ff_exp;
    case D_FENS: return (uint64_t)hp->n_ff_exp * hp->n_expert_shared;
    }
    return 0;
}

enum when { ALWAYS, Q_LORA, NO_Q_LORA, DENSE, MOE, MOE_SPLIT, MOE_FUSED, MOE_PROBS_B, OUTPUT };

/* A row of the table: its slot, name, condition, number of dims and the dims. */
#define ROW(slot, nm, layer, w, n, ...) \
    [slot] = {.name = nm, .per_layer = layer, .when = w, .n_dims = n, .dims = {__VA_ARGS__}}
#define GLOBAL(slot, nm, w, n, ...) ROW(slot, nm, false, w, n, __VA_ARGS__)
#define LAYER(slot, nm, w, n, ...) ROW(slot, nm, true, w, n, __VA_ARGS__)

static const struct gsmrt_tensor_spec tensors[DS2_N_TENSORS] = {
    GLOBAL(DS2_TOKEN_EMBD, "token_embd.weight", ALWAYS, 2, D_E, D_V),
    GLOBAL(DS2_OUTPUT_NORM, "output_norm.weight", ALWAYS, 1, D_E),
    GLOBAL(DS2_OUTPUT, "output.weight", OUTPUT, 2, D_E, D_V),
    LAYER(DS2_ATTN_NORM, "attn_norm.weight", ALWAYS, 1, D_E),
    LAYER(DS2_ATTN_Q_A, "attn_q_a.weight", Q_LORA, 2, D_E, D_QL),
    LAYER(DS2_ATTN_Q_A_NORM, "attn_q_a_norm.weight", Q_LORA, 1, D_QL),
    LAYER(DS2_ATTN_Q_B, "attn_q_b.weight", Q_LORA, 2, D_QL, D_HDK),
    LAYER(DS2_ATTN_Q, "attn_q.weight", NO_Q_LORA, 2, D_E, D_HDK),
    LAYER(DS2_ATTN_KV_A_MQA, "attn_kv_a_mqa.weight", ALWAYS, 2, D_E, D_KVLR),
    LAYER(DS2_ATTN_KV_A_NORM, "attn_kv_a_norm.weight", ALWAYS, 1, D_KVL),
    LAYER(DS2_ATTN_K_B, "attn_k_b.weight", ALWAYS, 3, D_NOPE, D_KVL, D_H),
    LAYER(DS2_ATTN_V_B, "attn_v_b.weight", ALWAYS, 3, D_KVL, D_DV, D_H),
    LAYER(DS2_ATTN_OUTPUT, "attn_output.weight", ALWAYS, 2, D_HDV, D_E),
    LAYER(DS2_FFN_NORM, "ffn_norm.weight", ALWAYS, 1, D_E),
    LAYER(DS2_FFN_GATE, "ffn_gate.weight", DENSE, 2, D_E, D_F),
    LAYER(DS2_FFN_UP, "ffn_up.weight", DENSE, 2, D_E, D_F),
    LAYER(DS2_FFN_DOWN, "ffn_down.weight", DENSE, 2, D_F, D_E),
    LAYER(DS2_FFN_GATE_INP, "ffn_gate_inp.weight", MOE, 2, D_E, D_NE),
    LAYER(DS2_EXP_PROBS_B, "exp_probs_b.bias", MOE_PROBS_B, 1, D_NE),
    LAYER(DS2_FFN_GATE_EXPS, "ffn_gate_exps.weight", MOE_SPLIT, 3, D_E, D_FE, D_NE),
    LAYER(DS2_FFN_UP_EXPS, "ffn_up_exps.weight", MOE_SPLIT, 3, D_E, D_FE, D_NE),
    LAYER(DS2_FFN_GATE_UP_EXPS, "ffn_gate_up_exps.weight", MOE_FUSED, 3, D_E, D_2FE, D_NE),
    LAYER(DS2_FFN_DOWN_EXPS, "ffn_down_exps.weight", MOE, 3, D_FE, D_E, D_NE),
    LAYER(DS2_FFN_GATE_SHEXP, "ffn_gate_shexp.weight", MOE, 2, D_E, D_FENS),
    LAYER(DS2_FFN_UP_SHEXP, "ffn_up_shexp.weight", MOE, 2, D_E, D_FENS),
    LAYER(DS2_FFN_DOWN_SHEXP, "ffn_down_shexp.weight", MOE, 2, D_FENS, D_E),
};

/* Whether a tensor of kind `w` belongs in block `il` (il < 0: global). */
static bool applies(const struct gsmrt_hparams *hp, uint8_t w, int64_t il)
{
    bool moe = il >= (int64_t)hp->n_layer_dense_lead;
    switch ((enum when)w) {
    case ALWAYS: return true;
    case Q_LORA: return hp->q_lora_rank > 0;
    case NO_Q_LORA: return hp->q_lora_rank == 0;
    case DENSE: return !moe;
    case MOE: return moe;
    case MOE_SPLIT: return moe && !hp->has_ffn_gate_up_exps;
    case MOE_FUSED: return moe && hp->has_ffn_gate_up_exps;
    case MOE_PROBS_B: return moe && hp->has_exp_probs_b;
    case OUTPUT: return hp->has_output;
    }
    return false;
}

/* Optional tensors: decided by the first MoE block, then required in all. */
static void probe_tensors(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp)
{
    char name[GSMRT_GGUF_MAX_NAME + 32];
    hp->has_output = gsmrt_gguf_find_tensor(g, "output.weight") != NULL;
    if (hp->n_layer_dense_lead < hp->n_layer) {
        snprintf(name, sizeof name, "blk.%u.ffn_gate_up_exps.weight", hp->n_layer_dense_lead);
        hp->has_ffn_gate_up_exps = gsmrt_gguf_find_tensor(g, name) != NULL;
        snprintf(name, sizeof name, "blk.%u.exp_probs_b.bias", hp->n_layer_dense_lead);
        hp->has_exp_probs_b = gsmrt_gguf_find_tensor(g, name) != NULL;
    }
}

static gsmrt_status unknown_tensor(const struct gsmrt_gguf *g, const char *name, struct gsmrt_err *err)
{
    const char *dot = strchr(name, '.');
    dot = dot ? strchr(dot + 1, '.') : NULL;
    if (strncmp(name, "blk.", 4) == 0 && dot && strcmp(dot + 1, "attn_kv_b.weight") == 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT,
                             "%s: tensor '%s': legacy attn_kv_b is not supported (expected attn_k_b/attn_v_b, "
                             "the MLA form of current converters)",
                             gsmrt_gguf_name(g), name);
    return GSMRT_OK;
}

static gsmrt_status check_runnable(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    if (!hp->is_mla || hp->has_ffn_gate_up_exps)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "%s: only deepseek2 models in the MLA form with split expert tensors are "
                             "supported so far",
                             gsmrt_gguf_name(g));
    return GSMRT_OK;
}

/* ---- KV layout ---------------------------------------------------------------- */

/* MLA: every layer caches one row [c_kv (KVL) | k_pe (R)] per position, for
 * the whole context, read by every head; GSM tiers it by page. */
static void kv_layout(const struct gsmrt_hparams *hp, uint32_t il, struct gsmrt_kv_layer_layout *out)
{
    (void)il;
    *out = (struct gsmrt_kv_layer_layout){
        .n_streams = 1,
        .stream = {{.role = GSMRT_KV_ROLE_LATENT,
                    .row_floats = hp->kv_lora_rank + hp->n_rot,
                    .ratio = 1,
                    .ring_rows = 0,
                    .tiered = true}},
    };
}

/* ---- the descriptor -------------------------------------------------------------- */

const struct gsmrt_arch gsmrt_arch_deepseek2 = {
    .name = "deepseek2",
    .read_hparams = read_hparams,
    .probe_tensors = probe_tensors,
    .tensors = tensors,
    .n_tensors = DS2_N_TENSORS,
    .applies = applies,
    .dim = dim_value,
    .unknown_tensor = unknown_tensor,
    .check_runnable = check_runnable,
    .kv_layout = kv_layout,
    .forward_init = gsmrt_ds2_forward_init,
    .forward_fini = gsmrt_ds2_forward_fini,
    .record_step = gsmrt_ds2_record_step,
};
