/* test_gsm_kernels.c -- GSM's device kernels against the CPU reference in
 * gsm/gate.c: page summaries bit-exact (min and max are exact), including
 * partly filled pages; per-page score bounds never below the reference's
 * double bound nor below any true score of the page (computed in double), and
 * at most a rounding margin above the reference; with the cache in either
 * storage type (F16: the summaries are of the rounded values the pool holds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "gpu_fixture.h"
#include "kv_pool.h"
#include "ref/ref.h"

enum { KVL = 64, R = 16, ROW = KVL + R, P = 32, H = 5 };

static void summaries_and_bounds(struct gpu *g, enum gsmrt_kv_type type)
{
    const uint32_t n_slots = 19, q_stride = H * 48 + 3;
    size_t n_kv = (size_t)n_slots * P * ROW;
    float *kv = malloc(n_kv * 4);
    ref_fill_uniform(kv, n_kv, 5, -2, 2);
    kv_pool_round(kv, n_kv, type);   /* the values the pool holds */
    /* pages in a scrambled order, the last one partly filled */
    /* summaries kept by logical page: index = the slot here */
    uint32_t list[7][3] = {{3, P, 3}, {17, P, 17}, {0, P, 0}, {9, P, 9}, {11, P, 11}, {5, P, 5}, {14, 13, 14}};
    uint32_t n_list = 7, pages[7][4];
    for (uint32_t i = 0; i < n_list; i++) pages[i][0] = list[i][0], pages[i][1] = list[i][1], pages[i][2] = list[i][2], pages[i][3] = 0;
    struct gsmrt_vk_buf kvb, lb, sb, pb, qab, qrb, ubb;
    struct gsmrt_vk_range kvr, lr, sr, pr, qar, qrr, ubr;
    kv_pool_upload(g, GSMRT_VK_ROLE_KV_HOT, kv, n_kv, type, &kvb, &kvr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, list, sizeof list, &lb, &lr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, pages, sizeof pages, &pb, &pr);
    float *sum0 = calloc((size_t)n_slots * 2 * ROW, 4);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, sum0, (size_t)n_slots * 2 * ROW * 4, &sb, &sr);
    /* the query is the second token of the buffers (q_tok0 = 1) */
    float qa2[2 * H * KVL], *qr2 = malloc(2 * q_stride * 4), *qa = qa2 + H * KVL, *qr = qr2 + q_stride;
    ref_fill_uniform(qa2, 2 * H * KVL, 6, -1, 1);
    ref_fill_uniform(qr2, 2 * q_stride, 7, -1, 1);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qa2, sizeof qa2, &qab, &qar);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qr2, 2 * q_stride * 4, &qrb, &qrr);
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_SCRATCH, H * n_list * 4, &ubb, &gpu_err));
    GPU_OK(gsmrt_vk_buf_whole(g->dev, &ubb, &ubr, &gpu_err));
    const float scale = 1.0f / sqrtf(48.0f);

    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_page_summary(g->rec, &kvr, type, &lr, &sr, n_list, ROW, P, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    struct gsmrt_k_gate_bound gb = {H, n_list, KVL, R, 48, 32, q_stride, 1, scale};
    GPU_OK(gsmrt_k_gate_bound(g->rec, &gb, &qar, &qrr, &sr, &pr, &ubr, &gpu_err));
    submit(g);

    float *sum = malloc((size_t)n_slots * 2 * ROW * 4), ub[H * 7];
    GPU_OK(gsmrt_vk_download(g->dev, &sb, 0, sum, (size_t)n_slots * 2 * ROW * 4, &gpu_err));
    GPU_OK(gsmrt_vk_download(g->dev, &ubb, 0, ub, sizeof ub, &gpu_err));
    for (uint32_t i = 0; i < n_list; i++) {
        uint32_t slot = list[i][0], rows = list[i][1];
        float kmin[ROW], kmax[ROW];
        gsmrt_gsm_summary_build(kv + (size_t)slot * P * ROW, rows, ROW, kmin, kmax);
        if (memcmp(kmin, sum + (size_t)2 * slot * ROW, sizeof kmin) ||
            memcmp(kmax, sum + (size_t)(2 * slot + 1) * ROW, sizeof kmax))
            fail_msg("summary of slot %u differs from the reference", slot);
        for (uint32_t h = 0; h < H; h++) {
            float q[ROW];
            memcpy(q, qa + h * KVL, KVL * 4);
            memcpy(q + KVL, qr + h * 48 + 32, R * 4);
            double want = gsmrt_gsm_page_bound(q, kmin, kmax, ROW, scale);
            double got = ub[h * n_list + i];
            if (!(got >= want)) fail_msg("bound of head %u page %u: %.9g below the reference %.9g", h, i, got, want);
            if (got > want + 1e-4 * fabs(want) + 1e-4) fail_msg("bound %.9g far above the reference %.9g", got, want);
            for (uint32_t r = 0; r < rows; r++) {   /* never below a true score */
                const float *k = kv + ((size_t)slot * P + r) * ROW;
                double s = 0;
                for (int c = 0; c < ROW; c++) s += (double)q[c] * k[c];
                if (!(got >= s * scale)) fail_msg("bound %.9g below a true score %.9g", got, s * scale);
            }
        }
    }
    gsmrt_vk_buf_free(g->dev, &kvb), gsmrt_vk_buf_free(g->dev, &lb), gsmrt_vk_buf_free(g->dev, &sb);
    gsmrt_vk_buf_free(g->dev, &pb), gsmrt_vk_buf_free(g->dev, &qab), gsmrt_vk_buf_free(g->dev, &qrb);
    gsmrt_vk_buf_free(g->dev, &ubb);
    free(kv), free(sum0), free(sum), free(qr2);
}

static void test_summaries_and_bounds(void **state)
{
    summaries_and_bounds(*state, GSMRT_KV_F32);
    summaries_and_bounds(*state, GSMRT_KV_F16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_summaries_and_bounds)};
    return cmocka_run_group_tests_name("gsm_kernels", tests, gpu_setup, gpu_teardown);
}
