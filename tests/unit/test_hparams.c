/* test_hparams.c -- deepseek2 hyper-parameters and tensor-shape checks on
 * tiny files from tests/data/gguf_writer.c: every field read back against the
 * writer's spec, the derived RoPE/YaRN values and kq_scale against the fact
 * sheet's formulas (shared/docs/deepseek2-gguf.md §5-6, evaluated here in
 * double) and its worked DeepSeek-V3 number, and a matrix of bad metadata and
 * bad tensors, each naming the key or tensor. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/gguf_writer.h"
#include "model/arch.h"
#include "model/hparams.h"

/* What to change in the writer's file. Overrides drop the key and write it
 * again with the given value (so the type can change too). */
enum ov_kind { OV_NONE, OV_U32, OV_F32, OV_STR, OV_ARR_U32 };
struct mut {
    const char *drop_key, *drop_key2, *retype_key, *drop_tensor, *reshape_tensor, *retype_tensor;
    const char *ov_key;
    enum ov_kind ov;
    uint32_t u;
    float f;
    const char *s;
    uint32_t arr[8];
    size_t n_arr;
    const char *extra_tensor;    /* an F32 tensor of shape extra_ne */
    int64_t extra_ne[2];
    struct gw_ds2 *spec;         /* replaces the variant's spec when set */
};

static void make(int variant, const struct mut *m, struct gw *w, uint8_t **buf, size_t *n)
{
    struct gw_ds2 s;
    gw_ds2_spec(&s, variant);
    if (m && m->spec) s = *m->spec;
    gw_init(w);
    if (m) {
        w->drop_key = m->ov_key ? m->ov_key : m->drop_key;
        w->drop_key2 = m->drop_key2;
        w->retype_key = m->retype_key;
        w->drop_tensor = m->drop_tensor;
        w->reshape_tensor = m->reshape_tensor;
        w->retype_tensor = m->retype_tensor;
    }
    gw_ds2_build(w, &s);
    w->drop_key = NULL;
    if (m && m->ov_key) {
        switch (m->ov) {
        case OV_U32: gw_kv_u32(w, m->ov_key, m->u); break;
        case OV_F32: gw_kv_f32(w, m->ov_key, m->f); break;
        case OV_STR: gw_kv_str(w, m->ov_key, m->s); break;
        case OV_ARR_U32: gw_kv_arr_u32(w, m->ov_key, m->n_arr, m->arr); break;
        case OV_NONE: break;
        }
    }
    if (m && m->extra_tensor) gw_tensor(w, m->extra_tensor, 0, 2, m->extra_ne);
    gw_finish(w, buf, n);
}

static gsmrt_status load(int variant, const struct mut *m, struct gsmrt_hparams *hp, struct gsmrt_err *e)
{
    struct gw w;
    uint8_t *buf;
    size_t n;
    make(variant, m, &w, &buf, &n);
    struct gsmrt_gguf *g = NULL;
    gsmrt_err_clear(e);
    gsmrt_status st = gsmrt_gguf_open_memory(buf, n, "tiny.gguf", NULL, &g, e);
    if (st == GSMRT_OK) st = gsmrt_hparams_load(g, hp, e);
    gsmrt_gguf_close(g);
    free(buf);
    gw_free(&w);
    return st;
}

static void expect_fail_(int variant, const struct mut *m, const char *n1, const char *n2, int line)
{
    struct gsmrt_hparams hp;
    struct gsmrt_err e;
    memset(&hp, 0x5a, sizeof hp);
    gsmrt_status st = load(variant, m, &hp, &e);
    if (st != GSMRT_E_FORMAT || (n1 && !strstr(e.msg, n1)) || (n2 && !strstr(e.msg, n2)))
        print_error("line %d: status %s, message \"%s\", expected \"%s\" and \"%s\"\n", line,
                    gsmrt_status_name(st), e.msg, n1 ? n1 : "", n2 ? n2 : "");
    assert_int_equal(st, GSMRT_E_FORMAT);
    assert_memory_equal(e.msg, "tiny.gguf: ", 11);
    if (n1) assert_non_null(strstr(e.msg, n1));
    if (n2) assert_non_null(strstr(e.msg, n2));
    assert_int_equal(hp.n_layer, 0);   /* zeroed on failure */
}
#define expect_fail(variant, n1, n2, ...) expect_fail_(variant, &(struct mut){__VA_ARGS__}, n1, n2, __LINE__)

static void check_spec(const struct gsmrt_hparams *hp, const struct gw_ds2 *s)
{
    assert_non_null(hp->arch);
    assert_string_equal(hp->arch->name, "deepseek2");
    assert_int_equal(hp->n_vocab, s->n_vocab);
    assert_int_equal(hp->n_embd, s->n_embd);
    assert_int_equal(hp->n_layer, s->n_layer);
    assert_int_equal(hp->n_ctx_train, s->n_ctx);
    assert_int_equal(hp->n_head, s->n_head);
    assert_int_equal(hp->n_head_kv, 1);
    assert_int_equal(hp->n_layer_dense_lead, s->n_dense);
    assert_int_equal(hp->n_ff, s->n_ff);
    assert_int_equal(hp->n_ff_exp, s->n_ff_exp);
    assert_int_equal(hp->n_expert, s->n_expert);
    assert_int_equal(hp->n_expert_used, s->n_expert_used);
    assert_int_equal(hp->n_expert_shared, s->n_expert_shared);
    assert_int_equal(hp->q_lora_rank, s->q_lora_rank);
    assert_int_equal(hp->kv_lora_rank, s->kv_lora_rank);
    assert_int_equal(hp->n_rot, s->n_rot);
    assert_int_equal(hp->n_embd_head_k_mla, s->dk);
    assert_int_equal(hp->n_embd_head_v_mla, s->dv);
    assert_int_equal(hp->n_embd_head_k, s->kv_lora_rank + s->n_rot);
    assert_int_equal(hp->n_embd_head_v, s->kv_lora_rank);
    assert_true(hp->rms_eps == 1e-6f);
    assert_true(hp->rope_freq_base == 10000.0f);
    assert_int_equal(hp->rope_scaling_type, s->yarn ? GSMRT_ROPE_SCALING_YARN : GSMRT_ROPE_SCALING_LINEAR);
    assert_true(hp->rope_scaling_factor == (s->yarn ? s->yarn_factor : 0.0f));
    assert_int_equal(hp->n_ctx_orig_yarn, s->yarn ? s->n_ctx_orig : s->n_ctx);
    assert_true(hp->yarn_log_multiplier == (s->yarn ? s->yarn_log_multiplier : 0.0f));
    assert_true(hp->rope_scaling_attn_factor == 1.0f);
    assert_true(hp->expert_weights_scale == s->weights_scale);
    assert_int_equal(hp->expert_weights_norm, s->norm_w);
    assert_int_equal(hp->expert_gating_func, s->sigmoid ? GSMRT_EXPERT_GATING_SIGMOID : GSMRT_EXPERT_GATING_SOFTMAX);
    assert_int_equal(hp->expert_group_count, s->n_group);
    assert_int_equal(hp->expert_group_used_count, s->n_group_used);
    assert_int_equal(hp->has_output, s->output);
    assert_int_equal(hp->has_exp_probs_b, s->probs_b);
    assert_int_equal(hp->has_ffn_gate_up_exps, s->fused_gate_up);
    assert_true(hp->is_mla);
}

/* The fact sheet's §5-6 formulas, in double. */
static void check_derived(const struct gsmrt_hparams *hp, const struct gw_ds2 *sp)
{
    double s = sp->yarn ? sp->yarn_factor : 1.0, ext = sp->yarn ? 1.0 : 0.0;
    double msad = sp->yarn ? sp->yarn_log_multiplier / 0.1 : 0.0;
    double attn = 1.0;
    if (ext != 0) {
        /* for deepseek2 the mscale ratio is 1 when msad != 0 */
        attn = msad != 0 ? 1.0 : (s <= 1 ? 1 : 1 + 0.1 * log(s));
        attn *= 1.0 / (1.0 + 0.1 * log(s));
    }
    double m_rope = attn * (ext != 0 ? 1.0 + 0.1 * log(s) : 1.0);
    double d = sp->n_rot, b = 10000.0, n_orig = sp->yarn ? sp->n_ctx_orig : sp->n_ctx;
    double lo = fmax(0.0, floor(d * log(n_orig / (32.0 * 2 * M_PI)) / (2 * log(b))));
    double hi = fmin(d - 1, ceil(d * log(n_orig / (1.0 * 2 * M_PI)) / (2 * log(b))));
    double attn_org = attn * (1 + 0.1 * log(s));
    double mscale = attn_org * (1 + 0.1 * msad * log(s));
    double kq = mscale * mscale / sqrt((double)sp->dk);
    assert_float_equal(hp->freq_scale, 1.0 / s, 1e-7);
    assert_float_equal(hp->ext_factor, ext, 0);
    assert_float_equal(hp->rope_attn_factor, attn, 1e-6);
    assert_float_equal(hp->rope_mscale, m_rope, 1e-6);
    assert_float_equal(hp->yarn_beta_fast, 32.0, 0);
    assert_float_equal(hp->yarn_beta_slow, 1.0, 0);
    assert_float_equal(hp->yarn_corr_dims[0], lo, 0);
    assert_float_equal(hp->yarn_corr_dims[1], hi, 0);
    assert_float_equal(hp->kq_scale, kq, 1e-6 * kq);
}

static void test_valid(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        struct gw_ds2 s;
        gw_ds2_spec(&s, variant);
        struct gsmrt_hparams hp;
        struct gsmrt_err e;
        gsmrt_status st = load(variant, NULL, &hp, &e);
        if (st != GSMRT_OK) print_error("variant %d: %s\n", variant, e.msg);
        assert_int_equal(st, GSMRT_OK);
        check_spec(&hp, &s);
        check_derived(&hp, &s);
    }
}

/* The fact sheet's worked V3 example: s = 40, mscale_all_dim = 1, DK = 192:
 * kq_scale = 1.87385 / sqrt(192) = 0.135234, m_rope = 1. */
static void test_v3_numbers(void **state)
{
    (void)state;
    struct gw_ds2 s;
    gw_ds2_spec(&s, 0);
    s.dk = 192;
    s.n_rot = 64;
    s.n_ctx_orig = 4096;
    struct gsmrt_hparams hp;
    struct gsmrt_err e;
    assert_int_equal(load(0, &(struct mut){.spec = &s}, &hp, &e), GSMRT_OK);
    assert_float_equal(hp.kq_scale, 0.135234, 2e-6);
    assert_float_equal(hp.rope_mscale, 1.0, 1e-6);
    assert_float_equal(hp.freq_scale, 0.025, 1e-9);
    check_derived(&hp, &s);

    /* YaRN without yarn_log_multiplier: m_rope = 1 + 0.1 ln s (the llama.cpp quirk of §5) */
    s.yarn_log_multiplier = 0;
    assert_int_equal(load(0, &(struct mut){.spec = &s}, &hp, &e), GSMRT_OK);
    assert_float_equal(hp.rope_mscale, 1.0 + 0.1 * log(40.0), 1e-6);
    assert_float_equal(hp.kq_scale, pow(1.0 + 0.1 * log(40.0), 2) / sqrt(192.0), 1e-6);
    check_derived(&hp, &s);
}

static void test_defaults(void **state)
{
    (void)state;
    struct gsmrt_hparams hp;
    struct gsmrt_err e;
    /* absent expert_gating_func: softmax (variant 0 writes sigmoid) */
    assert_int_equal(load(0, &(struct mut){.drop_key = "deepseek2.expert_gating_func"}, &hp, &e), GSMRT_OK);
    assert_int_equal(hp.expert_gating_func, GSMRT_EXPERT_GATING_SOFTMAX);
    /* absent rope.scaling.type: linear; absent factor: freq_scale 1 */
    assert_int_equal(load(1, NULL, &hp, &e), GSMRT_OK);
    assert_int_equal(hp.rope_scaling_type, GSMRT_ROPE_SCALING_LINEAR);
    assert_float_equal(hp.freq_scale, 1.0, 0);
    assert_float_equal(hp.kq_scale, 1.0 / sqrt(24.0), 1e-7);
    /* absent head_count_kv: head_count (4 in variant 1), which MLA refuses */
    expect_fail(1, "'deepseek2.attention.head_count_kv'", "4 (the MLA layout needs 1)",
                .drop_key = "deepseek2.attention.head_count_kv");
    /* absent q_lora_rank on a "lite" block count */
    struct gw_ds2 s;
    gw_ds2_spec(&s, 2);
    s.n_layer = 26;
    assert_int_equal(load(2, &(struct mut){.spec = &s, .drop_key = "deepseek2.attention.q_lora_rank"}, &hp, &e),
                     GSMRT_OK);
    assert_int_equal(hp.q_lora_rank, 0);
    assert_int_equal(hp.n_layer, 26);
}

static void test_bad_keys(void **state)
{
    (void)state;
    /* missing required keys */
    expect_fail(0, "key 'deepseek2.attention.kv_lora_rank' missing", NULL,
                .drop_key = "deepseek2.attention.kv_lora_rank");
    expect_fail(0, "key 'deepseek2.embedding_length' missing", NULL, .drop_key = "deepseek2.embedding_length");
    expect_fail(0, "key 'deepseek2.block_count' missing", NULL, .drop_key = "deepseek2.block_count");
    expect_fail(0, "key 'deepseek2.context_length' missing", NULL, .drop_key = "deepseek2.context_length");
    expect_fail(0, "'deepseek2.attention.layer_norm_rms_epsilon' missing", NULL,
                .drop_key = "deepseek2.attention.layer_norm_rms_epsilon");
    expect_fail(0, "'deepseek2.expert_shared_count' missing", NULL, .drop_key = "deepseek2.expert_shared_count");
    expect_fail(0, "'deepseek2.expert_feed_forward_length' missing", NULL,
                .drop_key = "deepseek2.expert_feed_forward_length");
    expect_fail(0, "'deepseek2.attention.head_count' missing", NULL, .drop_key = "deepseek2.attention.head_count");
    expect_fail(0, "'deepseek2.attention.q_lora_rank'", "missing", .drop_key = "deepseek2.attention.q_lora_rank");
    expect_fail(0, "key 'general.architecture' missing", NULL, .drop_key = "general.architecture");
    expect_fail(0, "key 'tokenizer.ggml.tokens' missing", NULL, .drop_key = "tokenizer.ggml.tokens");
    expect_fail(0, "'deepseek2.attention.key_length_mla'", "missing or 0",
                .drop_key = "deepseek2.attention.key_length_mla");
    expect_fail(0, "'deepseek2.attention.key_length_mla'", "legacy (non-MLA, attn_kv_b) deepseek2 files are not",
                .drop_key = "deepseek2.attention.key_length_mla", .drop_key2 = "deepseek2.attention.value_length_mla");

    /* wrong types (exact match, as llama.cpp) */
    expect_fail(0, "key 'deepseek2.block_count': expected type u32, found i32", NULL,
                .retype_key = "deepseek2.block_count");
    expect_fail(0, "'deepseek2.attention.layer_norm_rms_epsilon': expected type f32, found f64", NULL,
                .retype_key = "deepseek2.attention.layer_norm_rms_epsilon");
    expect_fail(0, "'deepseek2.expert_weights_norm': expected type bool, found u8", NULL,
                .retype_key = "deepseek2.expert_weights_norm");
    expect_fail(0, "'general.architecture': expected type string, found u32", NULL,
                .retype_key = "general.architecture");
    expect_fail(0, "'deepseek2.expert_feed_forward_length'", "expected a u32", .ov_key =
                "deepseek2.expert_feed_forward_length", .ov = OV_F32, .f = 32);
    expect_fail(0, "'tokenizer.ggml.tokens': expected an array of string", NULL, .ov_key = "tokenizer.ggml.tokens",
                .ov = OV_ARR_U32, .n_arr = 2);

    /* out of range / unsupported values */
    /* an architecture that is not registered is refused by name, listing the registered ones */
    expect_fail(0, "'general.architecture': architecture \"gpt9\" is not supported (supported: deepseek2)", NULL,
                .ov_key = "general.architecture", .ov = OV_STR, .s = "gpt9");
    expect_fail(0, "'general.architecture': architecture \"llama\" is not supported (supported: deepseek2)", NULL,
                .ov_key = "general.architecture", .ov = OV_STR, .s = "llama");
    expect_fail(0, "'deepseek2.block_count': 0 out of range", NULL, .ov_key = "deepseek2.block_count", .ov = OV_U32);
    expect_fail(0, "'deepseek2.leading_dense_block_count': 3 exceeds block_count 2", NULL,
                .ov_key = "deepseek2.leading_dense_block_count", .ov = OV_U32, .u = 3);
    expect_fail(0, "'deepseek2.attention.head_count_kv': 2 (the MLA layout needs 1)", NULL,
                .ov_key = "deepseek2.attention.head_count_kv", .ov = OV_U32, .u = 2);
    expect_fail(0, "'deepseek2.expert_used_count': 5 out of range", NULL, .ov_key = "deepseek2.expert_used_count",
                .ov = OV_U32, .u = 5);
    expect_fail(0, "'deepseek2.attention.layer_norm_rms_epsilon': 0", NULL,
                .ov_key = "deepseek2.attention.layer_norm_rms_epsilon", .ov = OV_F32, .f = 0);
    expect_fail(0, "'deepseek2.rope.freq_base'", "expected a finite value > 1", .ov_key = "deepseek2.rope.freq_base",
                .ov = OV_F32, .f = NAN);
    expect_fail(0, "'deepseek2.rope.scaling.type': \"bogus\"", NULL, .ov_key = "deepseek2.rope.scaling.type",
                .ov = OV_STR, .s = "bogus");
    expect_fail(0, "'deepseek2.expert_gating_func': 3 not supported", NULL,
                .ov_key = "deepseek2.expert_gating_func", .ov = OV_U32, .u = 3);
    expect_fail(0, "'deepseek2.attention.kv_lora_rank': 0", NULL, .ov_key = "deepseek2.attention.kv_lora_rank",
                .ov = OV_U32, .u = 0);
    expect_fail(0, "'deepseek2.expert_group_count': 3", NULL, .ov_key = "deepseek2.expert_group_count",
                .ov = OV_U32, .u = 3);
    expect_fail(0, "'deepseek2.expert_group_used_count': 2 out of range", NULL,
                .ov_key = "deepseek2.expert_group_used_count", .ov = OV_U32, .u = 2);
    expect_fail(0, "'deepseek2.nextn_predict_layers': 1", "not supported", .ov_key = "deepseek2.nextn_predict_layers",
                .ov = OV_U32, .u = 1);
    expect_fail(0, "'deepseek2.rope.dimension_count': 48", NULL, .ov_key = "deepseek2.rope.dimension_count",
                .ov = OV_U32, .u = 48);
    expect_fail(0, "'deepseek2.attention.key_length': 40", "expected kv_lora_rank + rope.dimension_count = 48",
                .ov_key = "deepseek2.attention.key_length", .ov = OV_U32, .u = 40);
    expect_fail(0, "'deepseek2.attention.value_length_mla'", "missing or 0",
                .ov_key = "deepseek2.attention.value_length_mla", .ov = OV_U32, .u = 0);
    /* per-layer arrays: wrong length, values that differ between blocks */
    expect_fail(0, "'deepseek2.attention.head_count': array has 3 entries, expected 2", NULL,
                .ov_key = "deepseek2.attention.head_count", .ov = OV_ARR_U32, .arr = {2, 2, 2}, .n_arr = 3);
    expect_fail(0, "'deepseek2.attention.head_count': block 0 has 2, block 1 has 3", NULL,
                .ov_key = "deepseek2.attention.head_count", .ov = OV_ARR_U32, .arr = {2, 3}, .n_arr = 2);
}

static void test_bad_tensors(void **state)
{
    (void)state;
    /* missing required tensors */
    expect_fail(0, "tensor 'blk.1.ffn_down_exps.weight' missing (expected shape [32, 64, 4])", NULL,
                .drop_tensor = "blk.1.ffn_down_exps.weight");
    expect_fail(0, "tensor 'token_embd.weight' missing (expected shape [64, 48])", NULL,
                .drop_tensor = "token_embd.weight");
    expect_fail(0, "tensor 'blk.0.ffn_gate.weight' missing", NULL, .drop_tensor = "blk.0.ffn_gate.weight");
    expect_fail(0, "tensor 'blk.0.attn_k_b.weight' missing (expected shape [32, 32, 2])", NULL,
                .drop_tensor = "blk.0.attn_k_b.weight");
    expect_fail(1, "tensor 'blk.2.ffn_gate_up_exps.weight' missing", NULL,
                .drop_tensor = "blk.2.ffn_gate_up_exps.weight");
    /* optional tensors must be in every MoE block or none (variant 1 has 2 MoE blocks) */
    struct gw_ds2 s;
    gw_ds2_spec(&s, 1);
    s.probs_b = true;
    expect_fail(1, "tensor 'blk.2.exp_probs_b.bias' missing (expected shape [4])", NULL, .spec = &s,
                .drop_tensor = "blk.2.exp_probs_b.bias");
    expect_fail(1, "tensor 'blk.2.exp_probs_b.bias': unexpected", NULL, .spec = &s,
                .drop_tensor = "blk.1.exp_probs_b.bias");

    /* shapes contradicting the hyper-parameters */
    expect_fail(0, "tensor 'blk.0.attn_q_b.weight': shape [32, 97], expected [32, 96]", NULL,
                .reshape_tensor = "blk.0.attn_q_b.weight");
    expect_fail(0, "tensor 'blk.1.ffn_gate_exps.weight': shape [64, 32, 5], expected [64, 32, 4]", NULL,
                .reshape_tensor = "blk.1.ffn_gate_exps.weight");
    expect_fail(0, "tensor 'token_embd.weight': shape [64, 49], expected [64, 48]", NULL,
                .reshape_tensor = "token_embd.weight");
    expect_fail(0, "tensor 'output_norm.weight': shape [65], expected [64]", NULL,
                .reshape_tensor = "output_norm.weight");
    /* a key that contradicts the tensors: expert_count 8 where the tensors have 4 */
    expect_fail(0, "tensor 'blk.1.ffn_gate_inp.weight': shape [64, 4], expected [64, 8]", NULL,
                .ov_key = "deepseek2.expert_count", .ov = OV_U32, .u = 8);
    expect_fail(0, "tensor 'blk.0.ffn_gate.weight': shape [64, 96], expected [64, 128]", NULL,
                .ov_key = "deepseek2.feed_forward_length", .ov = OV_U32, .u = 128);
    /* 1-D tensors must be F32 */
    expect_fail(0, "tensor 'blk.1.attn_norm.weight': type F16, expected F32", NULL,
                .retype_tensor = "blk.1.attn_norm.weight");

    /* tensors that do not belong */
    expect_fail(0, "tensor 'blk.0.attn_kv_b.weight': legacy attn_kv_b is not supported", NULL,
                .extra_tensor = "blk.0.attn_kv_b.weight", .extra_ne = {32, 64});
    expect_fail(0, "tensor 'blk.0.surprise.weight': unexpected", NULL, .extra_tensor = "blk.0.surprise.weight",
                .extra_ne = {4, 4});
    expect_fail(0, "tensor 'blk.2.attn_norm.weight': unexpected", NULL, .extra_tensor = "blk.2.attn_norm.weight",
                .extra_ne = {64, 1});
    expect_fail(0, "tensor 'blk.01.attn_norm.weight': unexpected", NULL, .extra_tensor = "blk.01.attn_norm.weight",
                .extra_ne = {64, 1});
    expect_fail(0, "tensor 'blk.0.attn_q.weight': unexpected", NULL, .extra_tensor = "blk.0.attn_q.weight",
                .extra_ne = {64, 96});
    expect_fail(0, "tensor 'blk.0.ffn_gate_inp.weight': unexpected", NULL,
                .extra_tensor = "blk.0.ffn_gate_inp.weight", .extra_ne = {64, 4});
    expect_fail(1, "tensor 'output.weight': shape [64, 4], expected [64, 40]", NULL, .extra_tensor = "output.weight",
                .extra_ne = {64, 4});
}

static void test_null_args(void **state)
{
    (void)state;
    struct gsmrt_hparams hp;
    struct gsmrt_err e;
    assert_int_equal(gsmrt_hparams_load(NULL, &hp, &e), GSMRT_E_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),        cmocka_unit_test(test_v3_numbers),
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_bad_tensors),  cmocka_unit_test(test_null_args),
    };
    return cmocka_run_group_tests_name("hparams", tests, NULL, NULL);
}
