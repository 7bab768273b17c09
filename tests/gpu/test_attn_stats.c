/* test_attn_stats.c -- the calibration statistics kernel (attn_stats.comp):
 *   - a hand-computed case: zero queries give uniform weights, so the band
 *     masses are counts over n, the sink mass 1/n per sink key, the entropy ln n;
 *   - odd sizes (5 heads, 13 tokens, pages in a scrambled order, rows of 1 key
 *     and rows longer than the kernel keeps in shared memory) against the
 *     double-precision reference tests/ref ref_attn_stats;
 *   - the rows averaged equal what gsm/calib_plan.c's gsmrt_gsm_head_acc_add
 *     makes of the reference's softmax rows (the semantics calibration uses);
 *   - the reference case with the cache in F32 and in F16 (the reference then
 *     reads the values an F16 pool holds, tests/ref's own rounding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_plan.h"
#include "gpu_fixture.h"
#include "kv_pool.h"
#include "ref/ref.h"

enum { KVL = 64, R = 16, ROW = KVL + R, P = 32 };

struct setup {
    uint32_t n_tok, n_heads, q_stride, q_head, q_off, n_slots, n_pages, n_bands, sink;
    float scale;
    const int32_t *pos;
    const uint32_t *edges;
    float *qa, *qr, *kv;
    uint32_t *pages;
    enum gsmrt_kv_type type;   /* the pool's storage type */
};

/* Runs the kernel on s, returns out [n_tok][n_heads][n_bands + 2] (caller frees). */
static float *run_kernel(struct gpu *g, const struct setup *s)
{
    struct gsmrt_vk_buf qab, qrb, kvb, pb, posb, eb;
    struct gsmrt_vk_range qar, qrr, kvr, pr, posr, er;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, s->qa, (size_t)s->n_tok * s->n_heads * KVL * 4, &qab, &qar);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, s->qr, (size_t)s->n_tok * s->q_stride * 4, &qrb, &qrr);
    kv_pool_upload(g, GSMRT_VK_ROLE_KV_HOT, s->kv, (size_t)s->n_slots * P * ROW, s->type, &kvb, &kvr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, s->pages, (size_t)s->n_pages * 4, &pb, &pr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, s->pos, (size_t)s->n_tok * 4, &posb, &posr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, s->edges, (size_t)s->n_bands * 4, &eb, &er);
    size_t n_out = (size_t)s->n_tok * s->n_heads * (s->n_bands + 2);
    struct guarded out;
    guarded_alloc(g, &out, n_out);
    struct gsmrt_k_attn_stats p = {s->n_tok,  s->n_heads, KVL,       R,        s->q_stride, s->q_head,
                                   s->q_off,  P,          s->n_bands, s->sink, s->scale, 0, s->type};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_attn_stats(g->rec, &p, &qar, &qrr, &kvr, &pr, &posr, &er, &out.range, &gpu_err));
    submit(g);
    float *o = malloc(n_out * 4);
    assert_non_null(o);
    guarded_read(g, &out, o);
    guarded_free(g, &out);
    gsmrt_vk_buf_free(g->dev, &qab), gsmrt_vk_buf_free(g->dev, &qrb), gsmrt_vk_buf_free(g->dev, &kvb);
    gsmrt_vk_buf_free(g->dev, &pb), gsmrt_vk_buf_free(g->dev, &posb), gsmrt_vk_buf_free(g->dev, &eb);
    return o;
}

static void alloc_setup(struct setup *s, uint64_t seed, float q_range)
{
    s->qa = malloc((size_t)s->n_tok * s->n_heads * KVL * 4);
    s->qr = malloc((size_t)s->n_tok * s->q_stride * 4);
    s->kv = malloc((size_t)s->n_slots * P * ROW * 4);
    s->pages = malloc((size_t)s->n_pages * 4);
    assert_true(s->qa && s->qr && s->kv && s->pages);
    ref_fill_uniform(s->qa, (size_t)s->n_tok * s->n_heads * KVL, seed, -q_range, q_range);
    ref_fill_uniform(s->qr, (size_t)s->n_tok * s->q_stride, seed + 1, -q_range, q_range);
    ref_fill_uniform(s->kv, (size_t)s->n_slots * P * ROW, seed + 2, -1, 1);
    kv_pool_round(s->kv, (size_t)s->n_slots * P * ROW, s->type);   /* the values the pool holds */
    /* logical page i lives in slot (7 i + 3) mod n_slots: scrambled, all distinct (n_slots odd, not 7k) */
    for (uint32_t i = 0; i < s->n_pages; i++) s->pages[i] = (7 * i + 3) % s->n_slots;
}

static void free_setup(struct setup *s)
{
    free(s->qa), free(s->qr), free(s->kv), free(s->pages);
}

/* Zero queries: every key weighs 1/n. Token 0 at position 3 (n = 4), token 1
 * at 40 (n = 41, two pages); edges {0, 2, 16}, one sink token. */
static void test_hand_computed(void **state)
{
    struct gpu *g = *state;
    static const int32_t pos[2] = {3, 40};
    static const uint32_t edges[3] = {0, 2, 16};
    struct setup s = {2, 1, 48, 48, 32, 3, 2, 3, 1, 0.2f, pos, edges, NULL, NULL, NULL, NULL};
    alloc_setup(&s, 11, 1.0f);
    memset(s.qa, 0, (size_t)s.n_tok * KVL * 4);
    memset(s.qr, 0, (size_t)s.n_tok * s.q_stride * 4);
    float *o = run_kernel(g, &s);
    /* n = 4: distances 0..3 -> band 0 {0, 1}, band 1 {2, 3}, band 2 {} */
    const float want0[5] = {0.5f, 0.5f, 0.0f, 0.25f, logf(4.0f)};
    /* n = 41: band 0 {0, 1}: 2, band 1 [2, 16): 14, band 2 [16, 40]: 25 */
    const float want1[5] = {2 / 41.0f, 14 / 41.0f, 25 / 41.0f, 1 / 41.0f, logf(41.0f)};
    for (int i = 0; i < 5; i++) {
        if (fabsf(o[i] - want0[i]) > 1e-6f) fail_msg("token 0 stat %d: %.9g, expected %.9g", i, o[i], want0[i]);
        if (fabsf(o[5 + i] - want1[i]) > 1e-5f) fail_msg("token 1 stat %d: %.9g, expected %.9g", i, o[5 + i], want1[i]);
    }
    free(o);
    free_setup(&s);
}

/* Odd sizes against the reference, and the accumulated rows against
 * gsmrt_gsm_head_acc_add over the reference's rows. */
static void against_reference(struct gpu *g, enum gsmrt_kv_type type)
{
    /* 13 tokens, one with a single key, two past the shared-memory limit (2048) */
    static const int32_t pos[13] = {0, 1, 7, 31, 32, 33, 129, 500, 1023, 2047, 2048, 2100, 77};
    static const uint32_t edges[6] = {0, 16, 64, 256, 1024, 2049};
    const uint32_t H = 5;
    struct setup s = {13, H, H * 48 + 3, 48, 32, 69, 66, 6, 4, 1.0f / sqrtf(48.0f), pos, edges,
                      NULL, NULL, NULL, NULL, type};
    /* queries from [-3, 3]: scores spread over several units, peaked and flat rows alike */
    alloc_setup(&s, 21, 3.0f);
    float *o = run_kernel(g, &s);
    const uint32_t W = s.n_bands + 2;
    float *want = malloc((size_t)s.n_tok * H * W * 4);
    ref_attn_stats(s.qa, s.qr, s.kv, s.pages, pos, s.n_tok, H, KVL, R, s.q_stride, s.q_head, s.q_off, P, s.scale,
                   edges, s.n_bands, s.sink, want);
    /* masses: fp32 sums of up to 2101 weights in a different order: 2e-5 absolute;
     * entropy: ln l - sum w (s - m) in fp32, values up to ~7.6: 1e-4 relative */
    for (uint32_t t = 0; t < s.n_tok; t++)
        for (uint32_t h = 0; h < H; h++) {
            const float *a = o + ((size_t)t * H + h) * W, *b = want + ((size_t)t * H + h) * W;
            double sum = 0;
            for (uint32_t k = 0; k < W; k++) {
                double tol = k == W - 1 ? 1e-4 * fabs(b[k]) + 2e-5 : 2e-5;
                if (fabs((double)a[k] - b[k]) > tol)
                    fail_msg("token %u (pos %d) head %u stat %u: %.9g, reference %.9g", t, pos[t], h, k, a[k], b[k]);
                if (k < s.n_bands) sum += a[k];
            }
            if (fabs(sum - 1.0) > 1e-5) fail_msg("token %u head %u: band masses sum to %.9g", t, h, sum);
        }
    double ent_spread = 0;   /* the case must have peaked and flat rows to mean something */
    for (uint32_t i = 0; i < s.n_tok * H; i++)
        if (pos[i / H] > 1000) ent_spread = fmax(ent_spread, fabs(want[i * W + W - 1] - log(pos[i / H] + 1.0)));
    assert_true(ent_spread > 0.5);

    /* per head, the mean of the kernel's rows = gsmrt_gsm_head_acc_add over the reference rows */
    for (uint32_t h = 0; h < H; h++) {
        struct gsmrt_gsm_head_acc acc;
        memset(&acc, 0, sizeof acc);
        double mean[8] = {0};
        for (uint32_t t = 0; t < s.n_tok; t++) {
            double *w = malloc(((size_t)pos[t] + 1) * sizeof *w);
            float *wf = malloc(((size_t)pos[t] + 1) * sizeof *wf);
            ref_attn_probs(s.qa, s.qr, s.kv, s.pages, pos, t, h, H, KVL, R, s.q_stride, s.q_head, s.q_off, P, s.scale,
                           w);
            for (int32_t p = 0; p <= pos[t]; p++) wf[p] = (float)w[p];
            gsmrt_gsm_head_acc_add(&acc, wf, (uint32_t)pos[t], edges, s.n_bands, s.sink);
            for (uint32_t k = 0; k < W; k++) mean[k] += o[((size_t)t * H + h) * W + k] / s.n_tok;
            free(w), free(wf);
        }
        struct gsmrt_gsm_head_stats st;
        gsmrt_gsm_head_acc_finish(&acc, s.n_bands, &st);
        for (uint32_t b = 0; b < s.n_bands; b++)
            if (fabs(st.band_mass[b] - mean[b]) > 1e-5)
                fail_msg("head %u band %u: acc %.9g, kernel rows %.9g", h, b, st.band_mass[b], mean[b]);
        if (fabs(st.sink_share - mean[s.n_bands]) > 1e-5 || fabs(st.entropy - mean[s.n_bands + 1]) > 1e-3)
            fail_msg("head %u: sink %.9g / %.9g, entropy %.9g / %.9g", h, st.sink_share, mean[s.n_bands], st.entropy,
                     mean[s.n_bands + 1]);
    }
    free(o), free(want);
    free_setup(&s);
}

static void test_against_reference(void **state)
{
    against_reference(*state, GSMRT_KV_F32);
    against_reference(*state, GSMRT_KV_F16);
}

static void test_bad_arguments(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_range r = {VK_NULL_HANDLE, 0, 4096};
    struct gsmrt_k_attn_stats p = {1, 1, KVL, R, 48, 48, 32, P, 17, 0, 1.0f, 0};   /* 17 bands: too many */
    /* refused before anything is recorded */
    assert_int_equal(gsmrt_k_attn_stats(g->rec, &p, &r, &r, &r, &r, &r, &r, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    p.n_bands = 4;
    p.page_size = 24;   /* not a power of two */
    assert_int_equal(gsmrt_k_attn_stats(g->rec, &p, &r, &r, &r, &r, &r, &r, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    p.page_size = P;
    r.size = 8;   /* output too small for 1 x 1 x 6 floats */
    assert_int_equal(gsmrt_k_attn_stats(g->rec, &p, &r, &r, &r, &r, &r, &r, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_computed),
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("attn_stats", tests, gpu_setup, gpu_teardown);
}
