/* test_gsm_decode.c -- GSM inside the decoder: after a 600-token prompt, 24
 * decode steps with the gate (sink 1 page, window 2, hot 2, the rest gated)
 * against dense attention on the same tokens, under keep and under swap
 * (pages copied between a small device-local pool and a host-visible one).
 * Threshold 0 gives the dense logits (NMSE below 1e-9: only the order of
 * fp32 sums differs); threshold 0.05 keeps the reported skipped share within
 * the threshold (this prompt is arbitrary tokens: how much the gate saves
 * on real chats is bench/gsm_quality's job). Batched steps of sequences with
 * different lengths and policies give what each gives alone. Both cache
 * types (F32, F16) at threshold 0, each against dense at the same type
 * (the threshold-0.05 run in the default F16 only); the KV bytes GSM counts
 * follow the type (F16: half of F32's). */
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

struct seq {
    struct gsmrt_kv_cache *kv;
    struct gsmrt_gsm_decode *gsm;
};

/* A sequence's cache and GSM state (cfg NULL: dense; swap: two pools). */
static struct seq seq_create(struct gpu *g, const struct gsmrt_hparams *hp, const struct gsmrt_gsm_config *cfg,
                             bool swap, enum gsmrt_kv_type type)
{
    struct seq s = {NULL, NULL};
    uint32_t n_hot = 0, n_cold = 0;
    if (cfg) gsmrt_gsm_decode_kv_slots(cfg, NULL, swap, 1024, 128, &n_hot, &n_cold);
    GPU_OK(gsmrt_kv_cache_create(g->dev, hp, 1024, 32, n_hot, n_cold, type, &s.kv, &gpu_err));
    if (cfg) GPU_OK(gsmrt_gsm_decode_create(g->dev, hp, s.kv, cfg, swap, NULL, &s.gsm, &gpu_err));
    return s;
}

static void seq_destroy(struct gpu *g, struct seq *s)
{
    gsmrt_gsm_decode_destroy(g->dev, s->gsm);
    gsmrt_kv_cache_destroy(g->dev, s->kv);
}

/* Runs prompt + steps; the decode inputs are `tokens` when given, else the
 * greedy choices (written to tokens). Returns the decode steps' logits and
 * the GSM totals in *stats. */
static float *run(struct gpu *g, struct gsmrt_dmodel *m, const struct gsmrt_gsm_config *cfg, bool swap,
                  enum gsmrt_kv_type type, int32_t *prompt, int32_t *tokens, bool given, struct gsmrt_gsm_totals *stats)
{
    const struct gsmrt_hparams *hp = &m->hp;
    struct gsmrt_forward *f;
    struct seq s = seq_create(g, hp, cfg, swap, type);
    GPU_OK(gsmrt_forward_create(m, 128, 1024, &f, &gpu_err));
    f->gsm = s.gsm;
    if (swap) {   /* every layer's latent line: fewer hot slots than pages, and a cold pool */
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            const struct gsmrt_kv_line *l = gsmrt_kv_cache_line(s.kv, il, 0);
            assert_true(l->n_hot_slots < l->n_pages_max && l->n_cold_slots > 0 && l->cold.block != NULL);
        }
    }
    float *logits = malloc((size_t)STEPS * hp->n_vocab * 4);
    for (uint32_t t = 0; t < PROMPT; t += 128) {
        uint32_t n = PROMPT - t < 128 ? PROMPT - t : 128;
        GPU_OK(gsmrt_forward_run(f, s.kv, prompt + t, n, t, 1, logits, &gpu_err));
    }
    int32_t next = argmax(logits, hp->n_vocab);
    for (uint32_t i = 0; i < STEPS; i++) {
        if (!given) tokens[i] = next;
        GPU_OK(gsmrt_forward_run(f, s.kv, &tokens[i], 1, PROMPT + i, 1, logits + (size_t)i * hp->n_vocab, &gpu_err));
        next = argmax(logits + (size_t)i * hp->n_vocab, hp->n_vocab);
        if (s.gsm) assert_true(s.gsm->use);   /* past min_context with pages to gate: the gate ran */
    }
    if (s.gsm && stats) *stats = s.gsm->stats;
    seq_destroy(g, &s);
    gsmrt_forward_destroy(f);
    return logits;
}

struct fixture {
    struct gsmrt_gguf *gg;
    struct gsmrt_hparams hp;
    struct gsmrt_dmodel *m;
    int32_t prompt[PROMPT], tokens[STEPS];
    float *dense[2];   /* dense logits by cache type (GSMRT_KV_F32, GSMRT_KV_F16), on the F32 greedy tokens */
};

static void load(struct gpu *g, struct fixture *x)
{
    const char *path = getenv("GSMRT_TEST_MODEL");
    if (!path || !*path) path = GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf";
    GPU_OK(gsmrt_gguf_open(path, NULL, &x->gg, &gpu_err));
    GPU_OK(gsmrt_hparams_load(x->gg, &x->hp, &gpu_err));
    GPU_OK(gsmrt_dmodel_load(g->dev, x->gg, &x->hp, NULL, NULL, &x->m, &gpu_err));
    for (int i = 0; i < PROMPT; i++) x->prompt[i] = (int32_t)((i * 7919u + 11u) % x->hp.n_vocab);
    x->dense[GSMRT_KV_F32] = run(g, x->m, NULL, false, GSMRT_KV_F32, x->prompt, x->tokens, false, NULL);
    x->dense[GSMRT_KV_F16] = run(g, x->m, NULL, false, GSMRT_KV_F16, x->prompt, x->tokens, true, NULL);
}

static void unload(struct fixture *x)
{
    free(x->dense[0]), free(x->dense[1]);
    gsmrt_dmodel_destroy(x->m);
    gsmrt_gguf_close(x->gg);
}

/* Sink one page, window two, two hot pages; GSM from 256 keys, no warm-up. */
static struct gsmrt_gsm_config small_config(float threshold)
{
    struct gsmrt_gsm_config c;
    gsmrt_gsm_config_defaults(&c);
    c.page_size = 32;
    c.sink_tokens = 32;
    c.window = 64;
    c.hot_pages = 2;
    c.min_context = 256;
    c.warmup_steps = 0;
    c.gate_threshold = threshold;
    c.dense_fallback = 0;   /* every step through the gate, even when it saves nothing */
    return c;
}

static void test_gsm_against_dense(void **state)
{
    struct gpu *g = *state;
    struct fixture x;
    load(g, &x);
    size_t n = (size_t)STEPS * x.hp.n_vocab;
    uint64_t keys_read = 0;   /* what dense attention reads over the steps, in rows per layer */
    for (uint32_t i = 0; i < STEPS; i++) keys_read += PROMPT + i + 1;
    for (int type = GSMRT_KV_F32; type <= GSMRT_KV_F16; type++)
        for (int swap = 0; swap < 2; swap++) {
            const char *policy = swap ? "swap" : "keep", *tname = gsmrt_kv_type_name((enum gsmrt_kv_type)type);
            const float *dense = x.dense[type];
            struct gsmrt_gsm_config cfg = small_config(0.0f);
            struct gsmrt_gsm_totals st;
            float *exact = run(g, x.m, &cfg, swap, (enum gsmrt_kv_type)type, x.prompt, x.tokens, true, &st);
            double e = ref_nmse(exact, dense, n);
            printf("GSM %s %s cache threshold 0 vs dense over %d decode steps: NMSE %.3g, max |delta| %.3g; "
                   "%llu demotions, %llu promotions, %llu cold pages computed, KV bytes read %.2f MB hot + %.2f MB "
                   "cold of %.2f MB dense\n",
                   policy, tname, STEPS, e, ref_max_abs_diff(exact, dense, n), (unsigned long long)st.moves_demoted,
                   (unsigned long long)st.moves_promoted, (unsigned long long)st.pages_cold_computed,
                   st.bytes_hot / 1e6, st.bytes_cold / 1e6, st.bytes_dense / 1e6);
            assert_true(e < 1e-9);
            assert_true(st.steps == STEPS && st.bytes_hot + st.bytes_cold == st.bytes_dense);
            /* every layer of every step gated: dense bytes are the keys times the row's bytes in this type */
            uint64_t row_bytes = (uint64_t)(x.hp.kv_lora_rank + x.hp.n_rot) * (type == GSMRT_KV_F16 ? 2 : 4);
            assert_int_equal(st.bytes_dense, (uint64_t)x.hp.n_layer * keys_read * row_bytes);
            if (swap) assert_true(st.moves_demoted > 0 && st.bytes_cold > 0);
            free(exact);
            if (type != GSMRT_KV_F16) continue;   /* the gated run in the default type only: it is slow on CPUs */
            cfg.gate_threshold = 0.05;
            float *gated = run(g, x.m, &cfg, swap, (enum gsmrt_kv_type)type, x.prompt, x.tokens, true, &st);
            int agree = 0;
            for (int i = 0; i < STEPS; i++)
                agree += argmax(gated + (size_t)i * x.hp.n_vocab, x.hp.n_vocab) ==
                         argmax(dense + (size_t)i * x.hp.n_vocab, x.hp.n_vocab);
            printf("GSM %s %s cache threshold 0.05: top-1 agreement %d/%d, NMSE %.3g, skipped-share bound max %.4f "
                   "mean %.4f, KV bytes read %.1f%% of dense, prefetch %llu hits %llu misses\n",
                   policy, tname, agree, STEPS, ref_nmse(gated, dense, n), st.skipped_bound_max,
                   st.skipped_bound_sum / st.head_gates, 100.0 * (st.bytes_hot + st.bytes_cold) / st.bytes_dense,
                   (unsigned long long)st.prefetch_hits, (unsigned long long)st.prefetch_misses);
            assert_true(st.skipped_bound_max <= cfg.gate_threshold + 1e-6);
            free(gated);
        }
    unload(&x);
}

/* Three sequences of different lengths (dense, keep, swap) stepped together
 * give what each gives alone. */
static void test_batch_equals_alone(void **state)
{
    struct gpu *g = *state;
    struct fixture x;
    load(g, &x);
    const uint32_t V = x.hp.n_vocab, lens[3] = {PROMPT, 400, 300};
    struct gsmrt_gsm_config cfg = small_config(0.0f);
    /* the three in the default F16 cache, one of them F32: a batch may mix types */
    const enum gsmrt_kv_type types[3] = {GSMRT_KV_F16, GSMRT_KV_F32, GSMRT_KV_F16};
    struct seq seqs[3] = {seq_create(g, &x.hp, NULL, false, types[0]), seq_create(g, &x.hp, &cfg, false, types[1]),
                          seq_create(g, &x.hp, &cfg, true, types[2])};
    struct gsmrt_forward *f;
    GPU_OK(gsmrt_forward_create(x.m, 128, 1024, &f, &gpu_err));
    float *batched = malloc((size_t)3 * STEPS * V * 4), *alone = malloc((size_t)STEPS * V * 4);
    for (int i = 0; i < 3; i++)   /* prompts one sequence at a time */
        for (uint32_t t = 0; t < lens[i]; t += 128) {
            struct gsmrt_seq_step s = {seqs[i].kv, seqs[i].gsm, x.prompt + t, lens[i] - t < 128 ? lens[i] - t : 128,
                                       t, 1, batched, 0};
            GPU_OK(gsmrt_forward_run_batch(f, &s, 1, &gpu_err));
        }
    for (uint32_t k = 0; k < STEPS; k++) {
        struct gsmrt_seq_step s[3];
        for (int i = 0; i < 3; i++)
            s[i] = (struct gsmrt_seq_step){seqs[i].kv, seqs[i].gsm, &x.tokens[k], 1, lens[i] + k, 1,
                                           batched + ((size_t)i * STEPS + k) * V, 0};
        GPU_OK(gsmrt_forward_run_batch(f, s, 3, &gpu_err));
    }
    for (int i = 0; i < 3; i++) seq_destroy(g, &seqs[i]);
    for (int i = 0; i < 3; i++) {
        struct seq one = seq_create(g, &x.hp, i ? &cfg : NULL, i == 2, types[i]);
        f->gsm = one.gsm;
        for (uint32_t t = 0; t < lens[i]; t += 128)
            GPU_OK(gsmrt_forward_run(f, one.kv, x.prompt + t, lens[i] - t < 128 ? lens[i] - t : 128, t, 1, alone,
                                     &gpu_err));
        for (uint32_t k = 0; k < STEPS; k++)
            GPU_OK(gsmrt_forward_run(f, one.kv, &x.tokens[k], 1, lens[i] + k, 1, alone + (size_t)k * V, &gpu_err));
        double e = ref_nmse(batched + (size_t)i * STEPS * V, alone, (size_t)STEPS * V);
        printf("sequence %d (%s, %s cache, %u-token prompt): batched vs alone NMSE %.3g\n", i,
               i == 0 ? "dense" : i == 1 ? "keep" : "swap", gsmrt_kv_type_name(types[i]), lens[i], e);
        assert_true(e < 1e-9);
        seq_destroy(g, &one);
    }
    free(batched), free(alone);
    gsmrt_forward_destroy(f);
    unload(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gsm_against_dense),
                                       cmocka_unit_test(test_batch_equals_alone)};
    return cmocka_run_group_tests_name("gsm_decode", tests, gpu_setup, gpu_teardown);
}
