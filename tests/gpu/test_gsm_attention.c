/* test_gsm_attention.c -- GSM's exactness contract on the device
 * (DESIGN.md, issue 5 item 4), for one decode token over a paged latent
 * cache split into active pages (sink, window with a partly filled newest
 * page, hot pages) in the hot pool and full cold pages in a host-visible cold
 * pool:
 *   - gate_threshold 0: every cold page is computed and the output equals
 *     dense attention over all keys (NMSE below 1e-9, fp32 rounding);
 *   - threshold > 0: per head, the softmax mass actually skipped (measured
 *     against dense attention in double) never exceeds the bound the gate
 *     reported, the gate value bounds the whole cold share, and the output
 *     moves by at most 2 * skipped * max|v|;
 *   - head groups: pages a group keeps HOT (in the hot pool) are computed
 *     first for its heads; the other group has threshold 0;
 *   - page_mass: each page's share of the mass (threshold 0: the dense share)
 *     and how many heads read it;
 *   - the query and the output at other tokens of batch-sized buffers.
 * Two kinds of cache: uniform random keys (bounds are loose, nothing can be
 * skipped) and structured keys (each page clustered around its own centre,
 * strong keys in the active pages, as a real chat has them), where the gate
 * really skips pages; queries flat (gain 1) and peaked (gain 8). Every case
 * runs with the cache in F32 and in F16; the dense reference then attends
 * over the values an F16 pool holds (tests/ref's own rounding), so
 * threshold 0 is dense at the same tolerance in both types. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_fixture.h"
#include "kv_pool.h"
#include "ref/ref.h"

enum { H = 5, KVL = 64, R = 16, ROW = KVL + R, P = 32, N_PAGES = 40, LAST_ROWS = 17 };

static void run_type(struct gpu *g, float q_gain, float threshold, bool structured, enum gsmrt_kv_type type)
{
    /* logical pages 0..N_PAGES-1; active: sink 0, hot 5 and 20, window N-2, N-1 (newest, partly filled) */
    static const uint32_t active[] = {0, 5, 20, N_PAGES - 2, N_PAGES - 1};
    const uint32_t n_active = 5, n_cold = N_PAGES - n_active;
    uint32_t is_active[N_PAGES] = {0};
    for (uint32_t i = 0; i < n_active; i++) is_active[active[i]] = 1;
    size_t n_keys = (size_t)(N_PAGES - 1) * P + LAST_ROWS;
    float *keys = malloc(N_PAGES * P * ROW * 4);   /* logical order */
    ref_fill_uniform(keys, (size_t)N_PAGES * P * ROW, 11, -1, 1);
    float qa[H * KVL], qr[H * R];
    ref_fill_uniform(qa, H * KVL, 12, -q_gain, q_gain);
    ref_fill_uniform(qr, H * R, 13, -q_gain, q_gain);
    if (structured) {
        /* page p: centre in [-0.3, 0.3] plus noise of 0.05; in the active
         * pages every 4th row points along head 0's query (a retrieved fact) */
        for (uint32_t pg = 0; pg < N_PAGES; pg++) {
            float centre[ROW];
            ref_fill_uniform(centre, ROW, 100 + pg, -0.3f, 0.3f);
            for (uint32_t r = 0; r < P; r++) {
                float *row = keys + ((size_t)pg * P + r) * ROW;
                for (int j = 0; j < ROW; j++) row[j] = centre[j] + 0.05f * row[j];
                if (is_active[pg] && r % 4 == 0)
                    for (int j = 0; j < ROW; j++) row[j] = (j < KVL ? qa[j] : qr[j - KVL]) / q_gain;
            }
        }
    }
    kv_pool_round(keys, (size_t)N_PAGES * P * ROW, type);   /* the values the pools hold */
    const float scale = 1.0f / sqrtf(48.0f);

    /* the hot pool holds the active pages (slots in a scrambled order) and
     * three listed pages group 0 keeps HOT (forced for heads 0-2); the cold
     * pool the rest. Heads 3-4 are group 1, threshold 0 (always exact). */
    const uint32_t n_forced = 3, n_hot_slots = 8 + n_forced;
    float *hot = calloc((size_t)n_hot_slots * P * ROW, 4), *cold = calloc((size_t)n_cold * P * ROW, 4);
    uint32_t active_slots[5] = {6, 2, 7, 0, 4}, cold_list[N_PAGES][4], summ_list[N_PAGES][3], cold_logical[N_PAGES];
    for (uint32_t i = 0; i < n_active; i++)
        memcpy(hot + (size_t)active_slots[i] * P * ROW, keys + (size_t)active[i] * P * ROW, P * ROW * 4);
    uint32_t c = 0;
    for (uint32_t pg = 0; pg < N_PAGES; pg++) {
        if (is_active[pg]) continue;
        uint32_t slot = (c * 13 + 3) % n_cold;   /* 13 is coprime with 35 */
        memcpy(cold + (size_t)slot * P * ROW, keys + (size_t)pg * P * ROW, P * ROW * 4);
        bool forced = c % 11 == 5;   /* c = 5, 16, 27 */
        uint32_t entry = slot | 0x80000000u;
        if (forced) {
            entry = 8 + c / 11;
            memcpy(hot + (size_t)entry * P * ROW, keys + (size_t)pg * P * ROW, P * ROW * 4);
        }
        cold_list[c][0] = entry, cold_list[c][1] = P, cold_list[c][2] = c, cold_list[c][3] = forced ? 1u : 0u;
        summ_list[c][0] = slot, summ_list[c][1] = P, summ_list[c][2] = c;   /* summaries from the cold copy */
        cold_logical[c] = pg;
        c++;
    }
    uint32_t heads[H][2];
    for (uint32_t h = 0; h < H; h++) {
        float t = h < 3 ? threshold : 0.0f;
        heads[h][0] = h < 3 ? 0 : 1;
        memcpy(&heads[h][1], &t, 4);
    }
    int32_t last_pos = (int32_t)((n_active - 1) * P + LAST_ROWS - 1);   /* active keys - 1 */
    uint32_t n_exact = (uint32_t)((last_pos + 1 + 255) / 256), n_total = n_exact + n_cold;

    /* the query is token 2 of a 3-token batch; the output goes to token 1 */
    float qa3[3 * H * KVL] = {0}, qr3[3 * H * R] = {0};
    memcpy(qa3 + 2 * H * KVL, qa, sizeof qa);
    memcpy(qr3 + 2 * H * R, qr, sizeof qr);
    struct gsmrt_vk_buf b[15];
    struct gsmrt_vk_range r[15];
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qa3, sizeof qa3, &b[0], &r[0]);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qr3, sizeof qr3, &b[1], &r[1]);
    kv_pool_upload(g, GSMRT_VK_ROLE_KV_HOT, hot, (size_t)n_hot_slots * P * ROW, type, &b[2], &r[2]);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, active_slots, sizeof active_slots, &b[3], &r[3]);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, &last_pos, 4, &b[4], &r[4]);
    kv_pool_upload(g, GSMRT_VK_ROLE_KV_COLD, cold, (size_t)n_cold * P * ROW, type, &b[5], &r[5]);
    size_t n_zero = (size_t)n_cold * 2 * ROW + (size_t)H * n_total * (2 + KVL) + (3 + H) * n_cold;
    float *zeros = calloc(n_zero, 4);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, (size_t)n_cold * 2 * ROW * 4, &b[6], &r[6]);   /* summaries */
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, cold_list, n_cold * 16, &b[7], &r[7]);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, heads, sizeof heads, &b[8], &r[8]);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, H * n_cold * 4, &b[9], &r[9]);                    /* ub */
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, H * n_cold * 4, &b[10], &r[10]);                  /* sel */
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, H * 4 * 4, &b[11], &r[11]);                       /* info */
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, (size_t)H * n_total * (2 + KVL) * 4, &b[12], &r[12]);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, 2 * H * KVL * 4, &b[13], &r[13]);                 /* out */
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zeros, (3 + H) * n_cold * 4, &b[14], &r[14]);            /* mass */
    struct gsmrt_vk_buf sb;
    struct gsmrt_vk_range sr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, summ_list, n_cold * 12, &sb, &sr);

    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_page_summary(g->rec, &r[5], type, &sr, &r[6], n_cold, ROW, P, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    struct gsmrt_k_attn_gsm ap = {H, KVL, R, P, H * R, R, 0, 2, 1, (uint32_t)last_pos + 1, n_cold, scale, type};
    struct gsmrt_k_attn_gsm_bufs bufs = {r[0], r[1], r[2], r[5], r[3], r[4], r[6], r[7], r[8],
                                         r[9], r[10], r[11], r[12], r[14], r[13]};
    GPU_OK(gsmrt_k_attn_gsm(g->rec, &ap, &bufs, &gpu_err));
    submit(g);
    float out[H * KVL], info[H * 4], mass[3 * N_PAGES];
    uint32_t sel[H * N_PAGES];
    GPU_OK(gsmrt_vk_download(g->dev, &b[13], H * KVL * 4, out, sizeof out, &gpu_err));
    GPU_OK(gsmrt_vk_download(g->dev, &b[11], 0, info, sizeof info, &gpu_err));
    GPU_OK(gsmrt_vk_download(g->dev, &b[10], 0, sel, H * n_cold * 4, &gpu_err));
    GPU_OK(gsmrt_vk_download(g->dev, &b[14], 0, mass, 3 * n_cold * 4, &gpu_err));
    double want_mass[N_PAGES] = {0};

    for (uint32_t h = 0; h < H; h++) {
        /* dense softmax over every key, in double */
        double *s = malloc(n_keys * sizeof *s), m = -INFINITY, l = 0, vmax = 0;
        for (size_t k = 0; k < n_keys; k++) {
            const float *row = keys + k * ROW;
            double d = 0;
            for (int j = 0; j < KVL; j++) d += (double)qa[h * KVL + j] * row[j];
            for (int j = 0; j < R; j++) d += (double)qr[h * R + j] * row[KVL + j];
            s[k] = d * scale;
            m = fmax(m, s[k]);
            for (int j = 0; j < KVL; j++) vmax = fmax(vmax, fabs(row[j]));
        }
        for (size_t k = 0; k < n_keys; k++) l += exp(s[k] - m);
        double dense[KVL] = {0}, cold_share = 0, skipped = 0;
        for (size_t k = 0; k < n_keys; k++) {
            double pk = exp(s[k] - m) / l;
            for (int j = 0; j < KVL; j++) dense[j] += pk * keys[k * ROW + j];
            uint32_t pg = (uint32_t)(k / P);
            if (is_active[pg]) continue;
            cold_share += pk;
            bool selected = false;
            for (uint32_t i = 0; i < (uint32_t)info[4 * h]; i++)
                if (cold_logical[sel[h * n_cold + i]] == pg) selected = true;
            if (!selected) skipped += pk;
        }
        double err = 0, ref_sq = 0;
        for (int j = 0; j < KVL; j++) {
            err = fmax(err, fabs(out[h * KVL + j] - dense[j]));
            ref_sq += dense[j] * dense[j];
        }
        float head_threshold = h < 3 ? threshold : 0.0f;
        /* the pages group 0 keeps HOT come first in its heads' selection */
        for (uint32_t i = 0; h < 3 && i < n_forced; i++) assert_int_equal(sel[h * n_cold + i] % 11, 5);
        if (threshold == 0.0f)   /* every page computed: each page's share of the dense mass */
            for (uint32_t ci = 0; ci < n_cold; ci++)
                for (uint32_t k = 0; k < P; k++) want_mass[ci] += exp(s[cold_logical[ci] * P + k] - m) / l / H;
        if (head_threshold == 0.0f) {
            assert_int_equal((uint32_t)info[4 * h], n_cold);
            double nmse = 0;
            for (int j = 0; j < KVL; j++) nmse += (out[h * KVL + j] - dense[j]) * (out[h * KVL + j] - dense[j]);
            if (!(nmse / ref_sq < 1e-9)) fail_msg("threshold 0, head %u: NMSE %.3g against dense", h, nmse / ref_sq);
        }
        if (!(skipped <= info[4 * h + 2] + 1e-6))
            fail_msg("head %u: skipped mass %.6g above the reported bound %.6g", h, skipped, info[4 * h + 2]);
        if (!(info[4 * h + 2] <= head_threshold + 1e-6)) fail_msg("head %u: skip bound above the threshold", h);
        if (!(cold_share <= info[4 * h + 1] + 1e-6))
            fail_msg("head %u: cold share %.6g above the gate value %.6g", h, cold_share, info[4 * h + 1]);
        if (!(err <= 2 * skipped * vmax + 1e-5)) fail_msg("head %u: output moved by %.3g", h, err);
        printf("%s %s gain %4.1f threshold %.2f head %u: gate %.4f, %2u/%u cold pages computed, skipped %.2e <= bound "
               "%.2e, max |err| %.2e\n",
               gsmrt_kv_type_name(type), structured ? "structured" : "uniform   ", q_gain, threshold, h, info[4 * h + 1], (uint32_t)info[4 * h], n_cold, skipped, info[4 * h + 2], err);
        free(s);
    }
    for (uint32_t ci = 0; ci < n_cold; ci++) {
        if (threshold == 0.0f && !(fabs(mass[ci] - want_mass[ci]) <= 1e-5 + 1e-4 * want_mass[ci]))
            fail_msg("page %u: mass %.6g, dense share %.6g", cold_logical[ci], mass[ci], want_mass[ci]);
        uint32_t readers = 0;
        for (uint32_t h = 0; h < H; h++)
            for (uint32_t i = 0; i < (uint32_t)info[4 * h]; i++) readers += sel[h * n_cold + i] == ci;
        assert_int_equal((uint32_t)mass[2 * n_cold + ci], readers);
        if (ci % 11 == 5) assert_true(readers == H);   /* forced for 0-2, exact for 3-4 */
    }
    gsmrt_vk_buf_free(g->dev, &sb);
    for (int i = 0; i < 15; i++) gsmrt_vk_buf_free(g->dev, &b[i]);
    free(keys), free(hot), free(cold), free(zeros);
}

static void run(struct gpu *g, float q_gain, float threshold, bool structured)
{
    run_type(g, q_gain, threshold, structured, GSMRT_KV_F32);
    run_type(g, q_gain, threshold, structured, GSMRT_KV_F16);
}

static void test_threshold_zero_is_dense(void **state)
{
    for (int structured = 0; structured < 2; structured++) {
        run(*state, 1.0f, 0.0f, structured);
        run(*state, 8.0f, 0.0f, structured);
    }
}

static void test_skipped_mass_within_bound(void **state)
{
    static const float thresholds[] = {0.01f, 0.05f, 0.3f};
    for (int i = 0; i < 3; i++)
        for (int structured = 0; structured < 2; structured++) {
            run(*state, 1.0f, thresholds[i], structured);
            run(*state, 8.0f, thresholds[i], structured);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threshold_zero_is_dense),
        cmocka_unit_test(test_skipped_mass_within_bound),
    };
    return cmocka_run_group_tests_name("gsm_attention", tests, gpu_setup, gpu_teardown);
}
