/* hparams.c -- deepseek2 hyper-parameters from GGUF metadata, their derived
 * RoPE/YaRN and attention-scale values, and the shape check of every tensor
 * (shared/docs/deepseek2-gguf.md §3-6). Reads keys with exactly the types
 * llama.cpp reads them with; refuses what the decoder does not run (legacy
 * attn_kv_b files, head_count_kv != 1, MTP blocks, per-layer variation) with
 * a message that says so. Allocates nothing. */
#include "model/hparams.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_KEY 96
#define MAX_TNAME (GSMRT_GGUF_MAX_NAME + 32)

/* ---- keys ------------------------------------------------------------------ */

struct rd {
    const struct gsmrt_gguf *g;
    const char *arch;
    struct gsmrt_err *err;
    uint32_t per_layer[GSMRT_HPARAMS_MAX_LAYERS];
};

static const char *akey(const struct rd *r, const char *suffix, char buf[MAX_KEY])
{
    snprintf(buf, MAX_KEY, "%s.%s", r->arch, suffix);
    return buf;
}

static gsmrt_status u32_req(struct rd *r, const char *suffix, uint32_t *out)
{
    char k[MAX_KEY];
    return gsmrt_gguf_get_u32(r->g, akey(r, suffix, k), out, r->err);
}

static gsmrt_status u32_opt(struct rd *r, const char *suffix, uint32_t def, uint32_t *out)
{
    char k[MAX_KEY];
    return gsmrt_gguf_get_u32_opt(r->g, akey(r, suffix, k), def, out, r->err);
}

static gsmrt_status f32_opt(struct rd *r, const char *suffix, float def, float *out)
{
    char k[MAX_KEY];
    return gsmrt_gguf_get_f32_opt(r->g, akey(r, suffix, k), def, out, r->err);
}

static bool has_key(const struct rd *r, const char *suffix)
{
    char k[MAX_KEY];
    return gsmrt_gguf_find_kv(r->g, akey(r, suffix, k)) != NULL;
}

/* A k/arr key whose entries for blocks [from, to) must all be equal: the
 * decoder runs one shape for every block of a kind. */
static gsmrt_status u32_layers(struct rd *r, const char *suffix, uint32_t n_layer, bool required, uint32_t def,
                               uint32_t from, uint32_t to, uint32_t *out)
{
    char k[MAX_KEY];
    akey(r, suffix, k);
    gsmrt_status st = gsmrt_gguf_get_u32_per_layer(r->g, k, n_layer, required, def, r->per_layer, r->err);
    if (st != GSMRT_OK) return st;
    *out = from < to ? r->per_layer[from] : r->per_layer[0];
    for (uint32_t i = from; i < to; i++)
        if (r->per_layer[i] != *out)
            return gsmrt_err_set(r->err, GSMRT_E_FORMAT,
                                 "%s: key '%s': block %u has %u, block %u has %u (per-block values are not supported)",
                                 gsmrt_gguf_name(r->g), k, from, *out, i, r->per_layer[i]);
    return GSMRT_OK;
}

static gsmrt_status bad(const struct rd *r, const char *suffix, const char *fmt, ...) GSMRT_PRINTF(3, 4);
static gsmrt_status bad(const struct rd *r, const char *suffix, const char *fmt, ...)
{
    char k[MAX_KEY], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gsmrt_err_set(r->err, GSMRT_E_FORMAT, "%s: key '%s': %s", gsmrt_gguf_name(r->g), akey(r, suffix, k), msg);
}

static bool finite_f(float v) { return isfinite(v); }

#define TRY(x)                                   \
    do {                                         \
        gsmrt_status st_ = (x);                  \
        if (st_ != GSMRT_OK) return st_;         \
    } while (0)

static gsmrt_status read_deepseek2(struct rd *r, struct gsmrt_hparams *hp)
{
    TRY(u32_req(r, "context_length", &hp->n_ctx_train));
    TRY(u32_req(r, "embedding_length", &hp->n_embd));
    TRY(u32_req(r, "block_count", &hp->n_layer));
    if (hp->n_ctx_train == 0) return bad(r, "context_length", "0 (expected > 0)");
    if (hp->n_embd == 0) return bad(r, "embedding_length", "0 (expected > 0)");
    if (hp->n_layer == 0 || hp->n_layer > GSMRT_HPARAMS_MAX_LAYERS)
        return bad(r, "block_count", "%u out of range [1, %d]", hp->n_layer, GSMRT_HPARAMS_MAX_LAYERS);
    uint32_t L = hp->n_layer, nextn, vocab_size;
    TRY(u32_opt(r, "vocab_size", 0, &vocab_size));   /* type-checked only; V is the token list's length */
    TRY(u32_opt(r, "nextn_predict_layers", 0, &nextn));
    if (nextn != 0) return bad(r, "nextn_predict_layers", "%u (MTP blocks are not supported; expected 0)", nextn);
    TRY(u32_opt(r, "leading_dense_block_count", 0, &hp->n_layer_dense_lead));
    if (hp->n_layer_dense_lead > L)
        return bad(r, "leading_dense_block_count", "%u exceeds block_count %u", hp->n_layer_dense_lead, L);
    uint32_t n_dense = hp->n_layer_dense_lead;
    bool any_moe = n_dense < L;

    TRY(u32_layers(r, "feed_forward_length", L, false, 0, 0, n_dense, &hp->n_ff));
    if (n_dense > 0 && hp->n_ff == 0)
        return bad(r, "feed_forward_length", "0 with %u dense blocks (expected > 0)", n_dense);
    if (n_dense == 0) hp->n_ff = 0;
    TRY(u32_layers(r, "attention.head_count", L, true, 0, 0, L, &hp->n_head));
    if (hp->n_head == 0) return bad(r, "attention.head_count", "0 (expected > 0)");
    TRY(u32_layers(r, "attention.head_count_kv", L, false, hp->n_head, 0, L, &hp->n_head_kv));

    TRY(u32_opt(r, "attention.key_length_mla", 0, &hp->n_embd_head_k_mla));
    TRY(u32_opt(r, "attention.value_length_mla", 0, &hp->n_embd_head_v_mla));
    hp->is_mla = hp->n_embd_head_k_mla != 0 && hp->n_embd_head_v_mla != 0;
    if (!hp->is_mla) {
        if (hp->n_embd_head_k_mla == 0 && hp->n_embd_head_v_mla == 0)
            return bad(r, "attention.key_length_mla",
                       "missing: legacy (non-MLA, attn_kv_b) deepseek2 files are not supported; "
                       "convert with a current converter (MLA form, attn_k_b/attn_v_b)");
        return bad(r, hp->n_embd_head_k_mla ? "attention.value_length_mla" : "attention.key_length_mla",
                   "missing or 0 while the other *_length_mla key is set (expected both > 0)");
    }
    if (hp->n_head_kv != 1)
        return bad(r, "attention.head_count_kv", "%u (the MLA layout needs 1)", hp->n_head_kv);

    char k[MAX_KEY];
    TRY(gsmrt_gguf_get_f32(r->g, akey(r, "attention.layer_norm_rms_epsilon", k), &hp->rms_eps, r->err));
    if (!finite_f(hp->rms_eps) || hp->rms_eps <= 0)
        return bad(r, "attention.layer_norm_rms_epsilon", "%g (expected a finite value > 0)", (double)hp->rms_eps);

    TRY(u32_req(r, "attention.kv_lora_rank", &hp->kv_lora_rank));
    if (hp->kv_lora_rank == 0) return bad(r, "attention.kv_lora_rank", "0 (expected > 0)");

    /* q_lora_rank may be omitted only by the "lite" models (fact sheet §3). */
    if (has_key(r, "attention.q_lora_rank")) {
        TRY(u32_req(r, "attention.q_lora_rank", &hp->q_lora_rank));
    } else {
        uint64_t n_vocab = hp->n_vocab;
        bool lite = L == 27 || L == 26 || (L == 48 && n_vocab == 128256);
        if (!lite) return bad(r, "attention.q_lora_rank", "missing (required unless the model is a \"lite\" one)");
        hp->q_lora_rank = 0;
    }

    TRY(u32_opt(r, "attention.key_length", hp->n_embd / hp->n_head, &hp->n_embd_head_k));
    TRY(u32_opt(r, "attention.value_length", hp->n_embd / hp->n_head, &hp->n_embd_head_v));
    TRY(u32_opt(r, "rope.dimension_count", hp->n_embd_head_k, &hp->n_rot));
    if (hp->n_rot == 0 || hp->n_rot % 2 != 0 || hp->n_rot >= hp->n_embd_head_k_mla)
        return bad(r, "rope.dimension_count", "%u (expected even, > 0 and < key_length_mla %u)", hp->n_rot,
                   hp->n_embd_head_k_mla);
    uint64_t cached = (uint64_t)hp->kv_lora_rank + hp->n_rot;
    if (has_key(r, "attention.key_length") && hp->n_embd_head_k != cached)
        return bad(r, "attention.key_length", "%u (expected kv_lora_rank + rope.dimension_count = %llu for MLA)",
                   hp->n_embd_head_k, (unsigned long long)cached);
    if (has_key(r, "attention.value_length") && hp->n_embd_head_v != hp->kv_lora_rank)
        return bad(r, "attention.value_length", "%u (expected kv_lora_rank = %u for MLA)", hp->n_embd_head_v,
                   hp->kv_lora_rank);
    if (cached > UINT32_MAX)
        return bad(r, "attention.kv_lora_rank", "%u plus the rope dims overflows", hp->kv_lora_rank);
    hp->n_embd_head_k = (uint32_t)cached;
    hp->n_embd_head_v = hp->kv_lora_rank;

    /* RoPE and YaRN */
    TRY(f32_opt(r, "rope.freq_base", 10000.0f, &hp->rope_freq_base));
    if (!finite_f(hp->rope_freq_base) || hp->rope_freq_base <= 1.0f)
        return bad(r, "rope.freq_base", "%g (expected a finite value > 1)", (double)hp->rope_freq_base);
    struct gsmrt_gguf_str type;
    TRY(gsmrt_gguf_get_str_opt(r->g, akey(r, "rope.scaling.type", k), "linear", &type, r->err));
    static const char *const scaling[] = {"none", "linear", "yarn", "longrope"};
    hp->rope_scaling_type = (enum gsmrt_rope_scaling)-1;
    for (int i = 0; i < 4; i++)
        if (type.len == strlen(scaling[i]) && memcmp(type.ptr, scaling[i], type.len) == 0)
            hp->rope_scaling_type = (enum gsmrt_rope_scaling)i;
    if ((int)hp->rope_scaling_type < 0)
        return bad(r, "rope.scaling.type", "\"%.*s\" (expected none, linear, yarn or longrope)",
                   type.len > 64 ? 64 : (int)type.len, type.ptr);
    if (hp->rope_scaling_type == GSMRT_ROPE_SCALING_LONGROPE)
        return bad(r, "rope.scaling.type", "longrope is not supported for deepseek2");
    TRY(f32_opt(r, "rope.scaling.factor", 0.0f, &hp->rope_scaling_factor));
    if (hp->rope_scaling_factor == 0.0f) TRY(f32_opt(r, "rope.scale_linear", 0.0f, &hp->rope_scaling_factor));
    if (!finite_f(hp->rope_scaling_factor) || hp->rope_scaling_factor < 0)
        return bad(r, "rope.scaling.factor", "%g (expected a finite value >= 0)", (double)hp->rope_scaling_factor);
    TRY(u32_opt(r, "rope.scaling.original_context_length", hp->n_ctx_train, &hp->n_ctx_orig_yarn));
    if (hp->n_ctx_orig_yarn == 0) return bad(r, "rope.scaling.original_context_length", "0 (expected > 0)");
    TRY(f32_opt(r, "rope.scaling.yarn_log_multiplier", 0.0f, &hp->yarn_log_multiplier));
    if (!finite_f(hp->yarn_log_multiplier) || hp->yarn_log_multiplier < 0)
        return bad(r, "rope.scaling.yarn_log_multiplier", "%g (expected a finite value >= 0)",
                   (double)hp->yarn_log_multiplier);
    TRY(f32_opt(r, "rope.scaling.attn_factor", 1.0f, &hp->rope_scaling_attn_factor));
    if (!finite_f(hp->rope_scaling_attn_factor) || hp->rope_scaling_attn_factor <= 0)
        return bad(r, "rope.scaling.attn_factor", "%g (expected a finite value > 0)",
                   (double)hp->rope_scaling_attn_factor);

    /* experts */
    TRY(u32_opt(r, "expert_count", 0, &hp->n_expert));
    TRY(u32_layers(r, "expert_used_count", L, false, 0, n_dense, L, &hp->n_expert_used));
    TRY(u32_req(r, "expert_shared_count", &hp->n_expert_shared));
    TRY(u32_layers(r, "expert_feed_forward_length", L, true, 0, n_dense, L, &hp->n_ff_exp));
    TRY(f32_opt(r, "expert_weights_scale", 0.0f, &hp->expert_weights_scale));
    if (!finite_f(hp->expert_weights_scale) || hp->expert_weights_scale < 0)
        return bad(r, "expert_weights_scale", "%g (expected a finite value >= 0)", (double)hp->expert_weights_scale);
    TRY(gsmrt_gguf_get_bool_opt(r->g, akey(r, "expert_weights_norm", k), false, &hp->expert_weights_norm, r->err));
    uint32_t gating;
    TRY(u32_opt(r, "expert_gating_func", 0, &gating));
    if (gating == 0)   /* llama.cpp's default, including its one model-specific exception (§3) */
        gating = ((L == 47 || L == 48) && hp->n_vocab == 154880) ? GSMRT_EXPERT_GATING_SIGMOID
                                                                  : GSMRT_EXPERT_GATING_SOFTMAX;
    if (gating != GSMRT_EXPERT_GATING_SOFTMAX && gating != GSMRT_EXPERT_GATING_SIGMOID)
        return bad(r, "expert_gating_func", "%u not supported (expected 1 softmax or 2 sigmoid)", gating);
    hp->expert_gating_func = (enum gsmrt_expert_gating)gating;
    TRY(u32_opt(r, "expert_group_count", 0, &hp->expert_group_count));
    TRY(u32_opt(r, "expert_group_used_count", 0, &hp->expert_group_used_count));
    if (any_moe) {
        if (hp->n_expert == 0) return bad(r, "expert_count", "0 with %u MoE blocks (expected > 0)", L - n_dense);
        if (hp->n_expert_used == 0 || hp->n_expert_used > hp->n_expert)
            return bad(r, "expert_used_count", "%u out of range [1, expert_count %u]", hp->n_expert_used, hp->n_expert);
        if (hp->n_ff_exp == 0) return bad(r, "expert_feed_forward_length", "0 (expected > 0)");
        if (hp->n_expert_shared == 0)
            return bad(r, "expert_shared_count", "0 (expected > 0: MoE blocks need their shared experts)");
        uint32_t G = hp->expert_group_count, GU = hp->expert_group_used_count;
        if (G > 1) {
            if (G >= hp->n_expert || hp->n_expert % G != 0)
                return bad(r, "expert_group_count", "%u (expected < expert_count %u and dividing it)", G, hp->n_expert);
            if (GU == 0 || GU >= G)
                return bad(r, "expert_group_used_count", "%u out of range [1, expert_group_count %u)", GU, G);
            if ((uint64_t)GU * (hp->n_expert / G) < hp->n_expert_used)
                return bad(r, "expert_group_used_count", "%u groups of %u experts cannot supply expert_used_count %u",
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

/* ---- tensors --------------------------------------------------------------- */

enum dim { D_E, D_V, D_QL, D_HDK, D_KVLR, D_KVL, D_NOPE, D_H, D_DV, D_HDV, D_F, D_NE, D_FE, D_2FE, D_FENS };

static uint64_t dim_value(const struct gsmrt_hparams *hp, enum dim d)
{
    uint64_t H = hp->n_head;
    switch (d) {
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

struct want {
    const char *name;   /* global name, or the suffix after "blk.N." */
    enum when when;
    int n;              /* dims */
    enum dim d[3];
};

static const struct want global_tensors[] = {
    {"token_embd.weight", ALWAYS, 2, {D_E, D_V}},
    {"output_norm.weight", ALWAYS, 1, {D_E}},
    {"output.weight", OUTPUT, 2, {D_E, D_V}},
};

static const struct want layer_tensors[] = {
    {"attn_norm.weight", ALWAYS, 1, {D_E}},
    {"attn_q_a.weight", Q_LORA, 2, {D_E, D_QL}},
    {"attn_q_a_norm.weight", Q_LORA, 1, {D_QL}},
    {"attn_q_b.weight", Q_LORA, 2, {D_QL, D_HDK}},
    {"attn_q.weight", NO_Q_LORA, 2, {D_E, D_HDK}},
    {"attn_kv_a_mqa.weight", ALWAYS, 2, {D_E, D_KVLR}},
    {"attn_kv_a_norm.weight", ALWAYS, 1, {D_KVL}},
    {"attn_k_b.weight", ALWAYS, 3, {D_NOPE, D_KVL, D_H}},
    {"attn_v_b.weight", ALWAYS, 3, {D_KVL, D_DV, D_H}},
    {"attn_output.weight", ALWAYS, 2, {D_HDV, D_E}},
    {"ffn_norm.weight", ALWAYS, 1, {D_E}},
    {"ffn_gate.weight", DENSE, 2, {D_E, D_F}},
    {"ffn_up.weight", DENSE, 2, {D_E, D_F}},
    {"ffn_down.weight", DENSE, 2, {D_F, D_E}},
    {"ffn_gate_inp.weight", MOE, 2, {D_E, D_NE}},
    {"exp_probs_b.bias", MOE_PROBS_B, 1, {D_NE}},
    {"ffn_gate_exps.weight", MOE_SPLIT, 3, {D_E, D_FE, D_NE}},
    {"ffn_up_exps.weight", MOE_SPLIT, 3, {D_E, D_FE, D_NE}},
    {"ffn_gate_up_exps.weight", MOE_FUSED, 3, {D_E, D_2FE, D_NE}},
    {"ffn_down_exps.weight", MOE, 3, {D_FE, D_E, D_NE}},
    {"ffn_gate_shexp.weight", MOE, 2, {D_E, D_FENS}},
    {"ffn_up_shexp.weight", MOE, 2, {D_E, D_FENS}},
    {"ffn_down_shexp.weight", MOE, 2, {D_FENS, D_E}},
};

#define N_GLOBAL (sizeof global_tensors / sizeof global_tensors[0])
#define N_LAYER_T (sizeof layer_tensors / sizeof layer_tensors[0])

/* Whether a tensor of kind `w` belongs in block `il` (il < 0: global). */
static bool active(const struct gsmrt_hparams *hp, enum when w, int64_t il)
{
    bool moe = il >= (int64_t)hp->n_layer_dense_lead;
    switch (w) {
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

static void fmt_shape(char *buf, size_t cap, const uint64_t *ne, int n)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%llu", i ? ", " : "", (unsigned long long)ne[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

static void want_shape(const struct gsmrt_hparams *hp, const struct want *w, uint64_t ne[4])
{
    for (int i = 0; i < 4; i++) ne[i] = i < w->n ? dim_value(hp, w->d[i]) : 1;
}

/* Parses "blk.N.suffix" with N a plain decimal < n_layer; returns the suffix. */
static const char *layer_suffix(const char *name, uint32_t n_layer, uint32_t *il)
{
    if (strncmp(name, "blk.", 4) != 0) return NULL;
    const char *p = name + 4;
    uint64_t v = 0;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 6) v = v * 10 + (uint64_t)(*p++ - '0'), nd++;
    if (nd == 0 || *p != '.' || (nd > 1 && name[4] == '0') || v >= n_layer) return NULL;
    *il = (uint32_t)v;
    return p + 1;
}

static gsmrt_status check_one(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp,
                              const struct gsmrt_gguf_tensor *t, struct gsmrt_err *err)
{
    const struct want *w = NULL;
    int64_t il = -1;
    uint32_t l;
    const char *suffix = layer_suffix(t->name, hp->n_layer, &l);
    if (suffix) {
        il = l;
        for (size_t i = 0; i < N_LAYER_T; i++)
            if (strcmp(suffix, layer_tensors[i].name) == 0) w = &layer_tensors[i];
        if (!w && strcmp(suffix, "attn_kv_b.weight") == 0)
            return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                 "%s: tensor '%s': legacy attn_kv_b is not supported (expected attn_k_b/attn_v_b, "
                                 "the MLA form of current converters)",
                                 gsmrt_gguf_name(g), t->name);
    } else {
        for (size_t i = 0; i < N_GLOBAL; i++)
            if (strcmp(t->name, global_tensors[i].name) == 0) w = &global_tensors[i];
    }
    if (!w || !active(hp, w->when, il))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': unexpected in a deepseek2 model with these "
                             "hyper-parameters (block %lld, q_lora_rank %u, %u dense blocks)",
                             gsmrt_gguf_name(g), t->name, (long long)il, hp->q_lora_rank, hp->n_layer_dense_lead);
    uint64_t want_ne[4], have_ne[4];
    want_shape(hp, w, want_ne);
    bool same = true;
    for (int i = 0; i < 4; i++) {
        have_ne[i] = (uint64_t)t->ne[i];
        same = same && have_ne[i] == want_ne[i];
    }
    if (!same) {
        char hs[128], ws[128];
        fmt_shape(hs, sizeof hs, have_ne, (int)t->n_dims);
        fmt_shape(ws, sizeof ws, want_ne, w->n);
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': shape %s, expected %s", gsmrt_gguf_name(g),
                             t->name, hs, ws);
    }
    if (w->n == 1 && t->type != GSMRT_GGML_TYPE_F32)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': type %s, expected F32 for a 1-D tensor",
                             gsmrt_gguf_name(g), t->name, gsmrt_ggml_type_name(t->type));
    return GSMRT_OK;
}

static gsmrt_status check_present(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp, const char *name,
                                  const struct want *w, struct gsmrt_err *err)
{
    if (gsmrt_gguf_find_tensor(g, name)) return GSMRT_OK;
    uint64_t ne[4];
    char ws[128];
    want_shape(hp, w, ne);
    fmt_shape(ws, sizeof ws, ne, w->n);
    return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s' missing (expected shape %s)", gsmrt_gguf_name(g),
                         name, ws);
}

static gsmrt_status check_tensors(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    /* optional tensors: decided by the first MoE block, then required in all */
    char name[MAX_TNAME];
    hp->has_output = gsmrt_gguf_find_tensor(g, "output.weight") != NULL;
    if (hp->n_layer_dense_lead < hp->n_layer) {
        snprintf(name, sizeof name, "blk.%u.ffn_gate_up_exps.weight", hp->n_layer_dense_lead);
        hp->has_ffn_gate_up_exps = gsmrt_gguf_find_tensor(g, name) != NULL;
        snprintf(name, sizeof name, "blk.%u.exp_probs_b.bias", hp->n_layer_dense_lead);
        hp->has_exp_probs_b = gsmrt_gguf_find_tensor(g, name) != NULL;
    }
    for (uint64_t i = 0; i < gsmrt_gguf_n_tensors(g); i++) TRY(check_one(g, hp, gsmrt_gguf_tensor_at(g, i), err));
    for (size_t i = 0; i < N_GLOBAL; i++)
        if (active(hp, global_tensors[i].when, -1))
            TRY(check_present(g, hp, global_tensors[i].name, &global_tensors[i], err));
    for (uint32_t il = 0; il < hp->n_layer; il++)
        for (size_t i = 0; i < N_LAYER_T; i++) {
            if (!active(hp, layer_tensors[i].when, il)) continue;
            snprintf(name, sizeof name, "blk.%u.%s", il, layer_tensors[i].name);
            TRY(check_present(g, hp, name, &layer_tensors[i], err));
        }
    return GSMRT_OK;
}

/* ---- entry ------------------------------------------------------------------ */

gsmrt_status gsmrt_hparams_load(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    if (!g || !hp) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gsmrt_hparams_load: NULL argument");
    memset(hp, 0, sizeof *hp);
    struct gsmrt_gguf_str arch;
    TRY(gsmrt_gguf_get_str(g, "general.architecture", &arch, err));
    int al = arch.len > 64 ? 64 : (int)arch.len;
    if (arch.len == 9 && memcmp(arch.ptr, "deepseek2", 9) == 0) {
        hp->arch = GSMRT_ARCH_DEEPSEEK2;
    } else if (arch.len == 5 && memcmp(arch.ptr, "llama", 5) == 0) {
        return gsmrt_err_set(err, GSMRT_E_FORMAT,
                             "%s: key 'general.architecture': \"llama\" is not supported yet (supported: deepseek2)",
                             gsmrt_gguf_name(g));
    } else {
        return gsmrt_err_set(err, GSMRT_E_FORMAT,
                             "%s: key 'general.architecture': unknown architecture \"%.*s\" (supported: deepseek2)",
                             gsmrt_gguf_name(g), al, arch.ptr);
    }

    uint32_t et;
    uint64_t n_tokens;
    TRY(gsmrt_gguf_get_arr_info(g, "tokenizer.ggml.tokens", &et, &n_tokens, err));
    if (et != GSMRT_GGUF_TYPE_STRING)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key 'tokenizer.ggml.tokens': expected an array of string, "
                             "found an array of %s", gsmrt_gguf_name(g), gsmrt_gguf_type_name(et));
    if (n_tokens == 0 || n_tokens > INT32_MAX)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key 'tokenizer.ggml.tokens': %llu tokens (expected 1..%d)",
                             gsmrt_gguf_name(g), (unsigned long long)n_tokens, INT32_MAX);
    hp->n_vocab = (uint32_t)n_tokens;

    struct rd *r = &(struct rd){.g = g, .arch = "deepseek2", .err = err};
    gsmrt_status st = read_deepseek2(r, hp);
    if (st == GSMRT_OK) {
        derive(hp);
        st = check_tensors(g, hp, err);
    }
    if (st != GSMRT_OK) {
        memset(hp, 0, sizeof *hp);
        return st;
    }
    return GSMRT_OK;
}
