/* test_hparams_v4.c -- the deepseek4 architecture's hyper-parameters, tensor
 * checks and KV layout on the tiny V4 file (tests/data/v4/tiny-v4.gguf),
 * every value against the configuration tools/make_v4_gguf.py wrote it with
 * (tests/data/v4/manifest.json "config"), which llama.cpp loads; the broken
 * files make_v4_gguf.py --bad writes (ctest fixture make_v4_bad_files)
 * refused with the key or tensor named; and the refusal to run a V4 file
 * while the forward does not exist. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/arch.h"
#include "model/hparams.h"

static const char *env_dir(const char *name)
{
    const char *d = getenv(name);
    if (!d) fail_msg("%s is not set (ctest sets it)", name);
    return d;
}

static gsmrt_status load(const char *dir_env, const char *file, struct gsmrt_gguf **g, struct gsmrt_hparams *hp,
                         struct gsmrt_err *e)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", env_dir(dir_env), file);
    gsmrt_err_clear(e);
    *g = NULL;
    gsmrt_status st = gsmrt_gguf_open(path, NULL, g, e);
    if (st != GSMRT_OK) fail_msg("%s: %s", path, e->msg);
    return gsmrt_hparams_load(*g, hp, e);
}

static void test_tiny_hparams(void **state)
{
    (void)state;
    struct gsmrt_gguf *g;
    struct gsmrt_hparams *hp = calloc(1, sizeof *hp);
    struct gsmrt_err e;
    gsmrt_status st = load("GSMRT_V4_DIR", "tiny-v4.gguf", &g, hp, &e);
    if (st != GSMRT_OK) fail_msg("%s", e.msg);
    assert_string_equal(hp->arch->name, "deepseek4");
    assert_int_equal(hp->n_vocab, 1024);
    assert_int_equal(hp->n_embd, 64);
    assert_int_equal(hp->n_layer, 4);
    assert_int_equal(hp->n_ctx_train, 2048);
    assert_int_equal(hp->n_head, 4);
    assert_int_equal(hp->n_head_kv, 1);
    assert_int_equal(hp->n_embd_head_k, 64);
    assert_int_equal(hp->n_embd_head_v, 64);
    assert_int_equal(hp->n_rot, 16);
    assert_int_equal(hp->q_lora_rank, 32);
    assert_int_equal(hp->o_group_count, 2);
    assert_int_equal(hp->o_lora_rank, 16);
    assert_int_equal(hp->indexer_n_head, 16);
    assert_int_equal(hp->indexer_head_dim, 64);
    assert_int_equal(hp->indexer_top_k, 8);
    assert_int_equal(hp->n_expert, 8);
    assert_int_equal(hp->n_expert_used, 2);
    assert_int_equal(hp->n_ff_exp, 32);
    assert_int_equal(hp->n_expert_shared, 1);
    assert_int_equal(hp->hc_mult, 4);
    assert_int_equal(hp->hc_sinkhorn_iters, 20);
    assert_true(hp->hc_eps == 1e-6f);
    assert_int_equal(hp->n_swa, 16);
    static const uint32_t ratios[4] = {0, 4, 128, 4};
    for (int il = 0; il < 4; il++) {
        assert_int_equal(hp->compress_ratio[il], ratios[il]);
        assert_true(hp->swiglu_clamp_exp[il] == 2.0f);
        assert_true(hp->swiglu_clamp_shexp[il] == 2.0f);
    }
    assert_int_equal(hp->hash_layer_count, 2);
    assert_true(hp->rope_freq_base == 10000.0f);
    assert_true(hp->compress_rope_freq_base == 160000.0f);
    assert_int_equal(hp->rope_scaling_type, GSMRT_ROPE_SCALING_YARN);
    assert_true(hp->rope_scaling_factor == 4.0f);
    assert_int_equal(hp->n_ctx_orig_yarn, 256);
    assert_true(hp->yarn_beta_fast == 32.0f && hp->yarn_beta_slow == 1.0f);
    assert_true(hp->rms_eps == 1e-6f);
    assert_true(hp->expert_weights_scale == 1.5f);
    assert_true(hp->expert_weights_norm);
    gsmrt_gguf_close(g);
    free(hp);
}

/* The streams of every layer, from the file: D = 64, the indexer's head 64,
 * window 16 (+ the 64-token pass the forward records at most), ratios 0, 4,
 * 128, 4. */
static void test_tiny_kv_layout(void **state)
{
    (void)state;
    struct gsmrt_gguf *g;
    struct gsmrt_hparams *hp = calloc(1, sizeof *hp);
    struct gsmrt_err e;
    if (load("GSMRT_V4_DIR", "tiny-v4.gguf", &g, hp, &e) != GSMRT_OK) fail_msg("%s", e.msg);
    struct want {
        enum gsmrt_kv_role role;
        uint32_t row_floats, ratio, ring_rows;
    };
    const struct want window = {GSMRT_KV_ROLE_WINDOW, 64, 1, 16 + 64};
    const struct want csa[7] = {
        window,
        {GSMRT_KV_ROLE_COMPRESSED, 64, 4, 0},
        {GSMRT_KV_ROLE_STATE, 128, 1, 8 + 64},    /* kv: two overlapping blocks of 4, 2D wide */
        {GSMRT_KV_ROLE_STATE, 128, 1, 8 + 64},    /* score */
        {GSMRT_KV_ROLE_INDEXER, 64, 4, 0},
        {GSMRT_KV_ROLE_STATE, 128, 1, 8 + 64},    /* the indexer's compressor: kv, score */
        {GSMRT_KV_ROLE_STATE, 128, 1, 8 + 64},
    };
    const struct want hca[4] = {
        window,
        {GSMRT_KV_ROLE_COMPRESSED, 64, 128, 0},
        {GSMRT_KV_ROLE_STATE, 64, 1, 128 + 64},   /* kv: one block of 128, D wide */
        {GSMRT_KV_ROLE_STATE, 64, 1, 128 + 64},   /* score */
    };
    const struct {
        const struct want *w;
        uint32_t n;
    } layers[4] = {{&window, 1}, {csa, 7}, {hca, 4}, {csa, 7}};
    for (uint32_t il = 0; il < 4; il++) {
        struct gsmrt_kv_layer_layout lay;
        hp->arch->kv_layout(hp, il, &lay);
        assert_int_equal(lay.n_streams, layers[il].n);
        for (uint32_t s = 0; s < lay.n_streams; s++) {
            const struct want *w = &layers[il].w[s];
            assert_int_equal(lay.stream[s].role, w->role);
            assert_int_equal(lay.stream[s].row_floats, w->row_floats);
            assert_int_equal(lay.stream[s].ratio, w->ratio);
            assert_int_equal(lay.stream[s].ring_rows, w->ring_rows);
            assert_false(lay.stream[s].tiered);   /* GSM does not serve V4 yet */
        }
    }
    gsmrt_gguf_close(g);
    free(hp);
}

/* Until the forward exists, a valid V4 file is refused before any upload. */
static void test_not_runnable(void **state)
{
    (void)state;
    struct gsmrt_gguf *g;
    struct gsmrt_hparams *hp = calloc(1, sizeof *hp);
    struct gsmrt_err e;
    if (load("GSMRT_V4_DIR", "tiny-v4.gguf", &g, hp, &e) != GSMRT_OK) fail_msg("%s", e.msg);
    assert_non_null(hp->arch->check_runnable);
    gsmrt_err_clear(&e);
    assert_int_equal(hp->arch->check_runnable(g, hp, &e), GSMRT_E_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "tiny-v4.gguf: deepseek4"));
    assert_non_null(strstr(e.msg, "not implemented"));
    gsmrt_gguf_close(g);
    free(hp);
}

static void expect_refused(const char *file, const char *want)
{
    struct gsmrt_gguf *g;
    struct gsmrt_hparams *hp = calloc(1, sizeof *hp);
    struct gsmrt_err e;
    gsmrt_status st = load("GSMRT_V4_BAD_DIR", file, &g, hp, &e);
    if (st != GSMRT_E_FORMAT || !strstr(e.msg, want))
        fail_msg("%s: status %d, message \"%s\", expected GSMRT_E_FORMAT and \"%s\"", file, st, e.msg, want);
    assert_null(hp->arch);   /* nothing half-read is left */
    gsmrt_gguf_close(g);
    free(hp);
}

static void test_bad_files(void **state)
{
    (void)state;
    expect_refused("bad-ratio-len.gguf",
                   "key 'deepseek4.attention.compress_ratios': 3 entries, shorter than block_count 4");
    expect_refused("bad-no-indexer.gguf", "tensor 'blk.1.indexer.proj.weight' missing (expected shape [64, 16])");
    expect_refused("bad-topk.gguf", "key 'deepseek4.attention.indexer.top_k': 513 (expected 1..512");
}

/* ---- mutations of the tiny file ----------------------------------------------
 * The file read into memory and one metadata value patched in place (the
 * value's bytes follow the key: u32 type, then the scalar, or u32 element
 * type + u64 count + elements), so a bad value and its effect on the tensor
 * checks can be tested without a second writer. */

static uint8_t *read_tiny(size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny-v4.gguf", env_dir("GSMRT_V4_DIR"));
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("%s: cannot open", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)len);
    assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);
    *n = (size_t)len;
    return buf;
}

/* The bytes of key's value after its u32 type (and, for an array, after
 * the element type and count): element `index` of 4-byte values. */
static uint8_t *value_at(uint8_t *buf, size_t n, const char *key, uint32_t index)
{
    size_t kl = strlen(key);
    for (size_t i = 8; i + kl + 8 < n; i++) {
        uint64_t len;
        memcpy(&len, buf + i - 8, 8);
        if (len != kl || memcmp(buf + i, key, kl) != 0) continue;
        uint32_t type;
        memcpy(&type, buf + i + kl, 4);
        uint8_t *v = buf + i + kl + 4;
        if (type == 9 /* array */) v += 4 + 8;
        return v + 4 * (size_t)index;
    }
    fail_msg("key %s not in the tiny file", key);
    return NULL;
}

static void expect_patched(const char *key, uint32_t index, uint32_t value, const char *want)
{
    size_t n;
    uint8_t *buf = read_tiny(&n);
    memcpy(value_at(buf, n, key, index), &value, 4);
    struct gsmrt_gguf *g = NULL;
    struct gsmrt_hparams *hp = calloc(1, sizeof *hp);
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    gsmrt_status st = gsmrt_gguf_open_memory(buf, n, "tiny-v4.gguf", NULL, &g, &e);
    if (st == GSMRT_OK) st = gsmrt_hparams_load(g, hp, &e);
    if (st != GSMRT_E_FORMAT || !strstr(e.msg, want))
        fail_msg("%s[%u] = %u: status %d, message \"%s\", expected GSMRT_E_FORMAT and \"%s\"", key, index, value,
                 st, e.msg, want);
    gsmrt_gguf_close(g);
    free(hp);
    free(buf);
}

static void test_bad_values(void **state)
{
    (void)state;
    /* the patch itself changes nothing when it writes the file's own value */
    size_t n;
    uint8_t *buf = read_tiny(&n);
    uint32_t r2;
    memcpy(&r2, value_at(buf, n, "deepseek4.attention.compress_ratios", 2), 4);
    assert_int_equal(r2, 128);
    free(buf);

    const char *ratios = "deepseek4.attention.compress_ratios";
    expect_patched(ratios, 2, 16,
                   "key 'deepseek4.attention.compress_ratios': block 2 has ratio 16 (expected 0, 4 or 128)");
    /* a ratio that contradicts the tensors: the compressor's rows are per ratio */
    expect_patched(ratios, 2, 4, "tensor 'blk.2.attn_compressor_kv.weight': shape [64, 64], expected [64, 128]");
    expect_patched(ratios, 1, 128, "tensor 'blk.1.attn_compressor_kv.weight': shape [64, 128], expected [64, 64]");
    expect_patched(ratios, 1, 0, "tensor 'blk.1.attn_compressor_kv.weight': unexpected");
    expect_patched(ratios, 0, 128, "tensor 'blk.0.attn_compressor_kv.weight' missing (expected shape [64, 64])");
    /* hash routing on a block that has the bias instead of the table */
    expect_patched("deepseek4.hash_layer_count", 0, 3, "tensor 'blk.2.exp_probs_b.bias': unexpected");
    expect_patched("deepseek4.hash_layer_count", 0, 5, "key 'deepseek4.hash_layer_count': 5 exceeds block_count 4");
    expect_patched("deepseek4.expert_gating_func", 0, 1, "key 'deepseek4.expert_gating_func': 1 (deepseek4 scores");
    expect_patched("deepseek4.hyper_connection.count", 0, 9, "key 'deepseek4.hyper_connection.count': 9 out of range");
    expect_patched("deepseek4.attention.output_group_count", 0, 3,
                   "key 'deepseek4.attention.output_group_count': 3 (expected > 0 and dividing head_count 4)");
    expect_patched("deepseek4.attention.indexer.top_k", 0, 0,
                   "key 'deepseek4.attention.indexer.top_k': 0 (expected 1..512");
    expect_patched("deepseek4.attention.head_count_kv", 0, 2, "key 'deepseek4.attention.head_count_kv': 2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_hparams),
        cmocka_unit_test(test_tiny_kv_layout),
        cmocka_unit_test(test_not_runnable),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
