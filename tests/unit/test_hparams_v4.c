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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_hparams),
        cmocka_unit_test(test_tiny_kv_layout),
        cmocka_unit_test(test_not_runnable),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
