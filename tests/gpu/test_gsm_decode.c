/* test_gsm_decode.c -- GSM inside the decoder: after a 600-token prompt, 24
 * decode steps with the gate (sink 1 page, window 2, hot 2, the rest cold)
 * against dense attention on the same tokens. Threshold 0 gives the dense
 * logits (NMSE below 1e-9: only the order of fp32 sums differs); threshold
 * 0.05 reports agreement and the gate's own figures stay within the
 * threshold. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_fixture.h"
#include "model/gsm_decode.h"
#include "model/model.h"
#include "ref/ref.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

enum { PROMPT = 600, STEPS = 24 };

static int32_t argmax(const float *x, uint32_t n)
{
    uint32_t b = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return (int32_t)b;
}

/* Runs prompt + steps; the decode inputs are `tokens` when given, else the
 * greedy choices (written to tokens). Returns the decode steps' logits. */
static float *run(struct gpu *g, struct gsmrt_dmodel *m, const struct gsmrt_gsm_decode_config *cfg,
                  int32_t *prompt, int32_t *tokens, bool given, float *gate_info)
{
    const struct gsmrt_hparams *hp = &m->hp;
    struct gsmrt_kv_cache *kv;
    struct gsmrt_forward *f;
    struct gsmrt_gsm_decode *gsm = NULL;
    GPU_OK(gsmrt_kv_cache_create(g->dev, hp, 1024, 32, &kv, &gpu_err));
    GPU_OK(gsmrt_forward_create(m, 128, 1024, &f, &gpu_err));
    if (cfg) {
        GPU_OK(gsmrt_gsm_decode_create(g->dev, hp, kv, cfg, &gsm, &gpu_err));
        f->gsm = gsm;
    }
    float *logits = malloc((size_t)STEPS * hp->n_vocab * 4);
    for (uint32_t t = 0; t < PROMPT; t += 128) {
        uint32_t n = PROMPT - t < 128 ? PROMPT - t : 128;
        GPU_OK(gsmrt_forward_run(f, kv, prompt + t, n, t, 1, logits, &gpu_err));
    }
    int32_t next = argmax(logits, hp->n_vocab);
    for (uint32_t i = 0; i < STEPS; i++) {
        if (!given) tokens[i] = next;
        GPU_OK(gsmrt_forward_run(f, kv, &tokens[i], 1, PROMPT + i, 1, logits + (size_t)i * hp->n_vocab, &gpu_err));
        next = argmax(logits + (size_t)i * hp->n_vocab, hp->n_vocab);
        if (gsm) assert_true(gsm->use);   /* past min_context with cold pages: the gate ran */
    }
    if (gsm && gate_info) memcpy(gate_info, gsm->last_info, hp->n_head * 16);
    gsmrt_gsm_decode_destroy(g->dev, gsm);
    gsmrt_forward_destroy(f);
    gsmrt_kv_cache_destroy(g->dev, kv);
    return logits;
}

static void test_gsm_against_dense(void **state)
{
    struct gpu *g = *state;
    const char *path = getenv("GSMRT_TEST_MODEL");
    if (!path || !*path) path = GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf";
    struct gsmrt_gguf *gg;
    struct gsmrt_hparams hp;
    struct gsmrt_dmodel *m;
    GPU_OK(gsmrt_gguf_open(path, NULL, &gg, &gpu_err));
    GPU_OK(gsmrt_hparams_load(gg, &hp, &gpu_err));
    GPU_OK(gsmrt_dmodel_load(g->dev, gg, &hp, NULL, NULL, &m, &gpu_err));
    int32_t prompt[PROMPT], tokens[STEPS];
    for (int i = 0; i < PROMPT; i++) prompt[i] = (int32_t)((i * 7919u + 11u) % hp.n_vocab);
    float *dense = run(g, m, NULL, prompt, tokens, false, NULL);
    struct gsmrt_gsm_decode_config cfg = {0.0f, 1, 2, 2, 256, 0};
    float *exact = run(g, m, &cfg, prompt, tokens, true, NULL);
    size_t n = (size_t)STEPS * hp.n_vocab;
    double e = ref_nmse(exact, dense, n);
    printf("GSM threshold 0 vs dense over %d decode steps: NMSE %.3g, max |delta| %.3g\n", STEPS, e,
           ref_max_abs_diff(exact, dense, n));
    assert_true(e < 1e-9);
    cfg.threshold = 0.05f;
    float info[64 * 4];
    float *gated = run(g, m, &cfg, prompt, tokens, true, info);
    int agree = 0;
    for (int i = 0; i < STEPS; i++)
        agree += argmax(gated + (size_t)i * hp.n_vocab, hp.n_vocab) == argmax(dense + (size_t)i * hp.n_vocab, hp.n_vocab);
    double computed = 0;
    for (uint32_t h = 0; h < hp.n_head; h++) {
        assert_true(info[4 * h + 2] <= cfg.threshold + 1e-6f);
        computed += info[4 * h];
    }
    printf("GSM threshold 0.05: top-1 agreement %d/%d, NMSE %.3g, last step: %.1f of %u cold pages computed per "
           "head on average\n",
           agree, STEPS, ref_nmse(gated, dense, n), computed / hp.n_head, (PROMPT + STEPS) / 32 - 5 + 1);
    free(dense), free(exact), free(gated);
    gsmrt_dmodel_destroy(m);
    gsmrt_gguf_close(gg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gsm_against_dense)};
    return cmocka_run_group_tests_name("gsm_decode", tests, gpu_setup, gpu_teardown);
}
