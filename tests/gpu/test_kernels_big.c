/* test_kernels_big.c -- weights larger than one real binding: each matrix
 * here is over 128 MiB (lavapipe's maxStorageBufferRange), so the kernels
 * must bind it in chunks at the device's true limit. Raw F32, F16 and Q8_0
 * data are generated directly (no float copy of the whole matrix), and the
 * reference dequantises row by row. Tolerance as in test_kernels.c (1e-10
 * NMSE: fp32 summation only). */
#include <stdlib.h>
#include <string.h>

#include "gpu_fixture.h"
#include "ref/ref.h"

#define BIG_BYTES ((128ull << 20) + (5ull << 20))   /* a little over 128 MiB */

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *make_raw(enum gsmrt_wtype type, uint32_t n_rows, uint32_t n_cols, size_t *bytes)
{
    size_t row = (size_t)gsmrt_wtype_row_bytes(type, n_cols);
    *bytes = row * n_rows;
    uint8_t *raw = malloc(*bytes);
    assert_non_null(raw);
    uint64_t s = 0x1234567ull + type;
    if (type == GSMRT_WTYPE_F32) {
        float *f = (float *)raw;
        for (size_t i = 0; i < (size_t)n_rows * n_cols; i++) f[i] = (float)(rng(&s) >> 40) / 16777216.0f - 0.5f;
    } else if (type == GSMRT_WTYPE_F16) {
        uint16_t *h = (uint16_t *)raw;
        for (size_t i = 0; i < (size_t)n_rows * n_cols; i++)
            h[i] = ref_f32_to_f16((float)(rng(&s) >> 40) / 16777216.0f - 0.5f);
    } else {
        for (size_t b = 0; b < *bytes / 34; b++) {
            uint16_t d = ref_f32_to_f16(0.001f + (float)(rng(&s) >> 44) / 1048576.0f * 0.01f);
            memcpy(raw + b * 34, &d, 2);
            uint64_t q = rng(&s), q2 = rng(&s), q3 = rng(&s), q4 = rng(&s);
            memcpy(raw + b * 34 + 2, &q, 8);
            memcpy(raw + b * 34 + 10, &q2, 8);
            memcpy(raw + b * 34 + 18, &q3, 8);
            memcpy(raw + b * 34 + 26, &q4, 8);
        }
    }
    return raw;
}

static void run(struct gpu *g, enum gsmrt_wtype type, uint32_t n_cols)
{
    uint64_t row_bytes = gsmrt_wtype_row_bytes(type, n_cols);
    uint32_t n_rows = (uint32_t)(BIG_BYTES / row_bytes);
    size_t bytes;
    uint8_t *raw = make_raw(type, n_rows, n_cols, &bytes);
    assert_true(bytes > g->dev->caps.max_storage_buffer_range);
    struct gsmrt_vk_buf wb;
    upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, raw, bytes, &wb, NULL);
    struct gsmrt_k_weights w = {&wb, 0, type, n_rows, n_cols};

    float *x = malloc(n_cols * 4), *want = malloc((size_t)n_rows * 4), *got = malloc((size_t)n_rows * 4);
    float *row = malloc(n_cols * 4);
    ref_fill_uniform(x, n_cols, 77, -1, 1);
    for (uint32_t r = 0; r < n_rows; r++) {
        ref_dequantize((int)type, raw + (size_t)r * row_bytes, 1, n_cols, row);
        ref_matvec(row, x, &want[r], 1, n_cols);
    }
    struct gsmrt_vk_buf xb;
    struct gsmrt_vk_range xr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, n_cols * 4, &xb, &xr);
    struct guarded y;
    guarded_alloc(g, &y, n_rows);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_matvec(g->rec, &w, &xr, &y.range, 0, &gpu_err));
    submit(g);
    guarded_read(g, &y, got);
    double e = ref_nmse(got, want, n_rows);
    if (!(e <= 1e-10)) fail_msg("%s %ux%u: NMSE %.3g", gsmrt_wtype_name(type), n_rows, n_cols, e);
    guarded_free(g, &y);

    /* Gather rows from the first, a middle and the last chunk. */
    uint32_t ids[4] = {0, n_rows / 2, n_rows - 2, n_rows - 1};
    struct gsmrt_vk_buf ib;
    struct gsmrt_vk_range ir;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, ids, sizeof ids, &ib, &ir);
    struct guarded rows;
    guarded_alloc(g, &rows, 4 * (size_t)n_cols);
    float *gathered = malloc(4 * (size_t)n_cols * 4);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_get_rows(g->rec, &w, &ir, 4, &rows.range, &gpu_err));
    submit(g);
    guarded_read(g, &rows, gathered);
    for (int i = 0; i < 4; i++) {
        ref_dequantize((int)type, raw + (size_t)ids[i] * row_bytes, 1, n_cols, row);
        if (memcmp(row, gathered + (size_t)i * n_cols, n_cols * 4) != 0)
            fail_msg("%s: gathered row %u differs", gsmrt_wtype_name(type), ids[i]);
    }
    guarded_free(g, &rows);
    gsmrt_vk_buf_free(g->dev, &ib);
    gsmrt_vk_buf_free(g->dev, &xb);
    gsmrt_vk_buf_free(g->dev, &wb);
    free(raw), free(x), free(want), free(got), free(row), free(gathered);
}

static void test_big_f32(void **state) { run(*state, GSMRT_WTYPE_F32, 4100); }
static void test_big_f16(void **state) { run(*state, GSMRT_WTYPE_F16, 8200); }
static void test_big_q8_0(void **state) { run(*state, GSMRT_WTYPE_Q8_0, 32 * 1025); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_f32),
        cmocka_unit_test(test_big_f16),
        cmocka_unit_test(test_big_q8_0),
    };
    return cmocka_run_group_tests_name("kernels_big", tests, gpu_setup, gpu_teardown);
}
