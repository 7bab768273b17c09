/* test_kernels.c -- every kernel against its CPU reference (tests/ref) at odd
 * sizes, in both reduction variants (subgroup and shared memory), with guard
 * values around every output. ctest also runs this file with a forced small
 * binding range (so every weight is bound in several chunks) and with
 * GSMRT_DISABLE_SUBGROUP_OPS=1.
 *
 * Tolerances (normalised MSE against the reference):
 * - weight products: the reference uses the dequantised weights the kernel
 *   sees and double accumulation, so only fp32 rounding of the kernel's sums
 *   remains: ~n_cols * 2^-24 relative, NMSE well below 1e-10;
 * - norms, softmax, SwiGLU: a few ulp of exp/sqrt: 1e-10;
 * - RoPE: fp32 angles pos * base^(-2i/d) at positions up to 4096 carry
 *   ~4096 * 1e-7 rad of error, so NMSE up to ~1e-7: 1e-6;
 * - embedding gather, add and scale are exact in fp32: bit-exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "kernels/kernel_util.h"
#include "weights_fixture.h"

#define TOL_PRODUCT 1e-10
#define TOL_REDUCE 1e-10
#define TOL_ROPE 1e-6

static const enum gsmrt_wtype TYPES[] = {GSMRT_WTYPE_F32, GSMRT_WTYPE_F16, GSMRT_WTYPE_Q8_0};

/* Column counts: odd ones for F32/F16, whole Q8_0 blocks for Q8_0. */
static uint32_t cols_for(enum gsmrt_wtype t, uint32_t odd)
{
    return t == GSMRT_WTYPE_Q8_0 ? 32 * odd : odd;
}


static void check_nmse(const char *what, const float *got, const float *want, size_t n, double tol,
                       uint32_t a, uint32_t b)
{
    double e = ref_nmse(got, want, n);
    if (!(e <= tol)) fail_msg("%s %ux%u: NMSE %.3g above %.3g", what, a, b, e, tol);
}

static void matvec_body(struct gpu *g)
{
    static const uint32_t rows[] = {1, 7, 129, 2100};
    static const uint32_t odd_cols[] = {1, 7, 129};
    for (size_t t = 0; t < 3; t++)
        for (size_t r = 0; r < 4; r++)
            for (size_t c = 0; c < 3; c++) {
                uint32_t n_rows = rows[r], n_cols = cols_for(TYPES[t], odd_cols[c]);
                struct test_weights tw;
                weights_make(g, TYPES[t], n_rows, n_cols, 100 + t * 10 + r + c, &tw);
                float *x = malloc(n_cols * 4), *want = malloc(n_rows * 4), *got = malloc(n_rows * 4);
                ref_fill_uniform(x, n_cols, 7 + c, -1, 1);
                ref_matvec(tw.values, x, want, n_rows, n_cols);
                struct gsmrt_vk_buf xb;
                struct gsmrt_vk_range xr;
                upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, n_cols * 4, &xb, &xr);
                struct guarded y;
                guarded_alloc(g, &y, n_rows);
                GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
                GPU_OK(gsmrt_k_matvec(g->rec, &tw.w, &xr, &y.range, 0, &gpu_err));
                submit(g);
                guarded_read(g, &y, got);
                check_nmse(gsmrt_wtype_name(TYPES[t]), got, want, n_rows, TOL_PRODUCT, n_rows, n_cols);
                guarded_free(g, &y);
                gsmrt_vk_buf_free(g->dev, &xb);
                weights_free(g, &tw);
                free(x), free(want), free(got);
            }
}

static void test_matvec(void **state) { for_each_variant(*state, matvec_body); }

/* More rows than one dispatch dimension holds (65535): the split dispatch. */
static void many_rows_body(struct gpu *g)
{
    uint32_t n_rows = 70001, n_cols = 3;
    struct test_weights tw;
    weights_make(g, GSMRT_WTYPE_F32, n_rows, n_cols, 5, &tw);
    float x[3] = {0.5f, -1.0f, 2.0f}, *want = malloc(n_rows * 4), *got = malloc(n_rows * 4);
    ref_matvec(tw.values, x, want, n_rows, n_cols);
    struct gsmrt_vk_buf xb;
    struct gsmrt_vk_range xr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, sizeof x, &xb, &xr);
    struct guarded y;
    guarded_alloc(g, &y, n_rows);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_matvec(g->rec, &tw.w, &xr, &y.range, 0, &gpu_err));
    submit(g);
    guarded_read(g, &y, got);
    check_nmse("F32", got, want, n_rows, TOL_PRODUCT, n_rows, n_cols);
    guarded_free(g, &y);
    gsmrt_vk_buf_free(g->dev, &xb);
    weights_free(g, &tw);
    free(want), free(got);
}

static void test_matvec_many_rows(void **state) { for_each_variant(*state, many_rows_body); }

static void test_matmul(void **state)
{
    struct gpu *g = *state;
    static const uint32_t rows[] = {1, 7, 129};
    static const uint32_t odd_cols[] = {1, 7, 129};
    static const uint32_t toks[] = {1, 7, 31};
    for (size_t t = 0; t < 3; t++)
        for (size_t r = 0; r < 3; r++)
            for (size_t c = 0; c < 3; c++)
                for (size_t k = 0; k < 3; k++) {
                    uint32_t n_rows = rows[r], n_cols = cols_for(TYPES[t], odd_cols[c]), n_tok = toks[k];
                    struct test_weights tw;
                    weights_make(g, TYPES[t], n_rows, n_cols, 300 + t * 10 + r + c, &tw);
                    size_t ny = (size_t)n_rows * n_tok;
                    float *x = malloc((size_t)n_cols * n_tok * 4), *want = malloc(ny * 4), *got = malloc(ny * 4);
                    ref_fill_uniform(x, (size_t)n_cols * n_tok, 11 + k, -1, 1);
                    ref_matmul(tw.values, x, want, n_rows, n_cols, n_tok);
                    struct gsmrt_vk_buf xb;
                    struct gsmrt_vk_range xr;
                    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, (size_t)n_cols * n_tok * 4, &xb, &xr);
                    struct guarded y;
                    guarded_alloc(g, &y, ny);
                    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
                    GPU_OK(gsmrt_k_matmul(g->rec, &tw.w, &xr, &y.range, n_tok, n_cols, n_rows, 0, &gpu_err));
                    submit(g);
                    guarded_read(g, &y, got);
                    check_nmse(gsmrt_wtype_name(TYPES[t]), got, want, ny, TOL_PRODUCT, n_rows, n_cols);
                    guarded_free(g, &y);
                    gsmrt_vk_buf_free(g->dev, &xb);
                    weights_free(g, &tw);
                    free(x), free(want), free(got);
                }
}

static void test_get_rows(void **state)
{
    struct gpu *g = *state;
    static const uint32_t rows[] = {1, 7, 129, 2100};
    static const uint32_t odd_cols[] = {1, 7, 129};
    for (size_t t = 0; t < 3; t++)
        for (size_t r = 0; r < 4; r++)
            for (size_t c = 0; c < 3; c++) {
                uint32_t n_rows = rows[r], n_cols = cols_for(TYPES[t], odd_cols[c]), n_ids = 13;
                struct test_weights tw;
                weights_make(g, TYPES[t], n_rows, n_cols, 500 + t * 10 + r + c, &tw);
                uint32_t ids[13];
                for (uint32_t i = 0; i < n_ids; i++) ids[i] = (i * 7919u + 3u) % n_rows;
                ids[n_ids - 1] = n_rows - 1;   /* the last row, in the last chunk */
                size_t ny = (size_t)n_ids * n_cols;
                float *want = malloc(ny * 4), *got = malloc(ny * 4);
                ref_get_rows(tw.values, ids, n_ids, n_cols, want);
                struct gsmrt_vk_buf ib;
                struct gsmrt_vk_range ir;
                upload_buf(g, GSMRT_VK_ROLE_SCRATCH, ids, sizeof ids, &ib, &ir);
                struct guarded y;
                guarded_alloc(g, &y, ny);
                GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
                GPU_OK(gsmrt_k_get_rows(g->rec, &tw.w, &ir, n_ids, &y.range, &gpu_err));
                submit(g);
                guarded_read(g, &y, got);
                if (memcmp(got, want, ny * 4) != 0)
                    fail_msg("get_rows %s %ux%u differs from the reference", gsmrt_wtype_name(TYPES[t]),
                             n_rows, n_cols);
                guarded_free(g, &y);
                gsmrt_vk_buf_free(g->dev, &ib);
                weights_free(g, &tw);
                free(want), free(got);
            }
}

/* Row kernels: n_rows x n_cols in, same out. */
static void rows_body(struct gpu *g)
{
    static const uint32_t rows[] = {1, 7, 129};
    static const uint32_t cols[] = {1, 7, 129, 1000};
    for (size_t r = 0; r < 3; r++)
        for (size_t c = 0; c < 4; c++) {
            uint32_t n_rows = rows[r], n_cols = cols[c];
            size_t n = (size_t)n_rows * n_cols;
            float *x = malloc(n * 4), *w = malloc(n_cols * 4), *want = malloc(n * 4), *got = malloc(n * 4);
            ref_fill_uniform(x, n, 21 + r + c, -4, 4);
            ref_fill_uniform(w, n_cols, 31 + c, 0.5f, 1.5f);
            struct gsmrt_vk_buf xb, wb;
            struct gsmrt_vk_range xr, wr;
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, n * 4, &xb, &xr);
            upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, w, n_cols * 4, &wb, &wr);
            struct guarded y;
            guarded_alloc(g, &y, n);

            ref_rms_norm(x, w, want, n_rows, n_cols, 1e-6f);
            GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
            GPU_OK(gsmrt_k_rms_norm(g->rec, &xr, &wr, &y.range, n_rows, n_cols, 1e-6f, &gpu_err));
            submit(g);
            guarded_read(g, &y, got);
            check_nmse("rms_norm", got, want, n, TOL_REDUCE, n_rows, n_cols);

            ref_softmax(x, want, n_rows, n_cols, 0.7f);
            GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
            GPU_OK(gsmrt_k_softmax(g->rec, &xr, &y.range, n_rows, n_cols, 0.7f, &gpu_err));
            submit(g);
            guarded_read(g, &y, got);
            check_nmse("softmax", got, want, n, TOL_REDUCE, n_rows, n_cols);

            guarded_free(g, &y);
            gsmrt_vk_buf_free(g->dev, &xb);
            gsmrt_vk_buf_free(g->dev, &wb);
            free(x), free(w), free(want), free(got);
        }
}

static void test_rows(void **state) { for_each_variant(*state, rows_body); }

static void test_elementwise(void **state)
{
    struct gpu *g = *state;
    static const uint32_t sizes[] = {1, 7, 129, 100003};
    for (size_t s = 0; s < 4; s++) {
        uint32_t n = sizes[s];
        float *a = malloc(n * 4), *b = malloc(n * 4), *want = malloc(n * 4), *got = malloc(n * 4);
        ref_fill_uniform(a, n, 41 + s, -6, 6);
        ref_fill_uniform(b, n, 51 + s, -2, 2);
        struct gsmrt_vk_buf ab, bb;
        struct gsmrt_vk_range ar, br;
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, a, n * 4, &ab, &ar);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, b, n * 4, &bb, &br);
        struct guarded y;
        guarded_alloc(g, &y, n);

        ref_swiglu(a, b, want, n);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_swiglu(g->rec, &ar, &br, &y.range, n, &gpu_err));
        submit(g);
        guarded_read(g, &y, got);
        check_nmse("swiglu", got, want, n, TOL_REDUCE, n, 1);

        ref_add(a, b, want, n);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_add(g->rec, &ar, &br, &y.range, n, &gpu_err));
        submit(g);
        guarded_read(g, &y, got);
        if (memcmp(got, want, n * 4) != 0) fail_msg("add of %u differs", n);

        ref_scale(a, want, n, -0.375f);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_scale(g->rec, &ar, &y.range, n, -0.375f, &gpu_err));
        submit(g);
        guarded_read(g, &y, got);
        if (memcmp(got, want, n * 4) != 0) fail_msg("scale of %u differs", n);

        guarded_free(g, &y);
        gsmrt_vk_buf_free(g->dev, &ab);
        gsmrt_vk_buf_free(g->dev, &bb);
        free(a), free(b), free(want), free(got);
    }
}

/* RoPE on deepseek2's layout: heads of 48 floats whose last 16 rotate, both
 * pair layouts, with and without YaRN, positions up to 4096. */
static void test_rope(void **state)
{
    struct gpu *g = *state;
    static const uint32_t toks[] = {1, 7, 129};
    for (int yarn = 0; yarn < 2; yarn++)
        for (int neox = 0; neox < 2; neox++)
            for (size_t k = 0; k < 3; k++) {
                struct ref_rope rp = {
                    .n_tok = toks[k], .n_heads = 7, .head_stride = 48, .row_stride = 7 * 48 + 5,
                    .rot_offset = 32, .n_dims = 16, .neox = neox, .freq_base = 10000.0f,
                    .freq_scale = yarn ? 0.25f : 1.0f, .ext_factor = yarn ? 1.0f : 0.0f,
                    .attn_factor = yarn ? 0.9f : 1.0f, .n_ctx_orig = 4096,
                };
                size_t n = rp.n_tok * rp.row_stride;
                float *x = malloc(n * 4), *want = malloc(n * 4), *got = malloc(n * 4);
                int32_t *pos = malloc(rp.n_tok * 4);
                ref_fill_uniform(x, n, 61 + k, -1, 1);
                for (size_t t = 0; t < rp.n_tok; t++) pos[t] = (int32_t)((t * 4093u + 17u * k) % 4097u);
                memcpy(want, x, n * 4);
                ref_rope(want, pos, &rp);

                float corr[2];
                gsmrt_rope_yarn_corr_dims(16, 4096, 10000.0f, 32.0f, 1.0f, corr);
                struct gsmrt_rope_params p = {
                    (uint32_t)rp.n_tok, 7, 48, (uint32_t)rp.row_stride, 32, 16,
                    neox ? GSMRT_ROPE_NEOX : GSMRT_ROPE_NORM, rp.freq_base, rp.freq_scale, rp.ext_factor,
                    rp.attn_factor, corr[0], corr[1],
                };
                struct gsmrt_vk_buf pb;
                struct gsmrt_vk_range pr;
                upload_buf(g, GSMRT_VK_ROLE_SCRATCH, pos, rp.n_tok * 4, &pb, &pr);
                struct guarded y;
                guarded_alloc(g, &y, n);
                GPU_OK(gsmrt_vk_upload(g->dev, &y.buf, GUARD_FLOATS * 4, x, n * 4, &gpu_err));
                GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
                GPU_OK(gsmrt_k_rope(g->rec, &y.range, &pr, &p, &gpu_err));
                submit(g);
                guarded_read(g, &y, got);
                check_nmse(neox ? "rope neox" : "rope norm", got, want, n, TOL_ROPE, (uint32_t)rp.n_tok,
                           (uint32_t)yarn);
                /* the unrotated part of each head is untouched */
                for (size_t t = 0; t < rp.n_tok; t++)
                    for (size_t i = 0; i < 32; i++)
                        if (got[t * rp.row_stride + 48 + i] != x[t * rp.row_stride + 48 + i])
                            fail_msg("rope wrote outside the rotated dims");
                guarded_free(g, &y);
                gsmrt_vk_buf_free(g->dev, &pb);
                free(x), free(want), free(got), free(pos);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matvec),   cmocka_unit_test(test_matvec_many_rows),
        cmocka_unit_test(test_matmul),   cmocka_unit_test(test_get_rows),
        cmocka_unit_test(test_rows),     cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_rope),
    };
    return cmocka_run_group_tests_name("kernels", tests, gpu_setup, gpu_teardown);
}
