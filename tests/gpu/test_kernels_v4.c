/* test_kernels_v4.c -- the DeepSeek V4 kernels (kernel_v4.c) against the
 * double-precision references of tests/ref/ref_v4.c (written from
 * tools/deepseek4_ref.py, which agrees with llama.cpp): odd widths, batches of
 * several tokens, outputs between guard floats, bad shapes refused by name,
 * and a decode session with all the layer's state on the device.
 * (test_kernels_v4_torch.c checks the same kernels on the PyTorch
 * reference's own outputs.)
 * Tolerances (fp32 kernels against double references):
 *   products and sums of O(1) terms: NMSE 1e-10 (fp32 rounding of sums of a
 *     few hundred terms is ~1e-7 relative, squared ~1e-14; 1e-10 leaves room);
 *   hc mixes (sigmoid; Sinkhorn: 20 rounds of divisions): max |diff| 2e-6 on
 *     values in (0, 2];
 *   routing: ids exact, weights 1e-6 relative (one sqrt, log1p, division);
 *   compressor rows and attention outputs (after RoPE / de-RoPE): NMSE 1e-9,
 *     because RoPE angles reach pos = 300 rad and fp32 cos/sin of those carry
 *     ~3e-5 absolute error;
 *   indexer scores: NMSE 1e-10 (sums of products); top-k ids exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_util.h"
#include "ref/ref.h"
#include "ref/ref_v4.h"
#include "weights_fixture.h"

static void fail_if_nmse(const char *what, const float *got, const float *want, size_t n, double tol)
{
    double e = ref_nmse(got, want, n);
    if (!(e <= tol)) fail_msg("%s: NMSE %.3g above %.3g", what, e, tol);
}

static void fail_if_diff(const char *what, const float *got, const float *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol)) fail_msg("%s[%zu]: %.9g, reference %.9g", what, i, got[i], want[i]);
}

static void upload(struct gpu *g, const void *data, size_t bytes, struct gsmrt_vk_buf *b, struct gsmrt_vk_range *r)
{
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, data, bytes, b, r);
}

/* ---- hyper-connections ---------------------------------------------------- */

static void hc_case(struct gpu *g, uint32_t n_tok, uint32_t E, uint32_t hc, int head)
{
    uint32_t W = hc * E, n_mix = head ? hc : (2 + hc) * hc, n_out = hc + hc * hc;
    struct test_weights fn;   /* fn [n_mix][hc * E], as the GGUF stores hc_*_fn */
    weights_make(g, GSMRT_WTYPE_F32, n_mix, W, 500 + E + head, &fn);
    float *x = malloc((size_t)n_tok * W * 4), base[80], scale[3] = {0.5f, 0.7f, 0.45f};
    ref_fill_uniform(x, (size_t)n_tok * W, 11 + n_tok, -2, 2);
    ref_fill_uniform(base, n_mix, 12, -0.5f, 0.5f);
    if (!head)   /* comb near the identity, as a trained model's */
        for (uint32_t s = 0; s < hc; s++) base[2 * hc + s * hc + s] += 2.0f;
    float *want_y = malloc((size_t)n_tok * E * 4), *want_mix = malloc((size_t)n_tok * n_out * 4);
    ref_hc_pre(x, fn.values, base, scale, n_tok, E, hc, 20, 1e-6f, 1e-6f, head, want_y, want_mix);

    struct gsmrt_vk_buf xb, bb, sb, rb;
    struct gsmrt_vk_range xr, br, sr, rr;
    upload(g, x, (size_t)n_tok * W * 4, &xb, &xr);
    upload(g, base, n_mix * 4, &bb, &br);
    upload(g, scale, sizeof scale, &sb, &sr);
    float *zero = calloc((size_t)n_tok * n_mix, 4);
    upload(g, zero, (size_t)n_tok * n_mix * 4, &rb, &rr);
    struct guarded y, mix;
    guarded_alloc(g, &y, (size_t)n_tok * E);
    guarded_alloc(g, &mix, (size_t)n_tok * n_out);
    struct gsmrt_k_hc_pre p = {
        .n_tok = n_tok, .n_embd = E, .hc = hc, .sinkhorn_iters = 20, .eps_rms = 1e-6f, .eps_hc = 1e-6f,
        .head = head != 0,
    };
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_matmul(g->rec, &fn.w, &xr, &rr, n_tok, W, n_mix, 0, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_hc_pre(g->rec, &p, &xr, &rr, &br, &sr, &y.range, head ? NULL : &mix.range, &gpu_err));
    submit(g);
    float *got_y = malloc((size_t)n_tok * E * 4), *got_mix = malloc((size_t)n_tok * n_out * 4);
    guarded_read(g, &y, got_y);
    guarded_read(g, &mix, got_mix);
    char what[64];
    snprintf(what, sizeof what, "hc_pre%s %u tokens, y", head ? " (head)" : "", n_tok);
    fail_if_nmse(what, got_y, want_y, (size_t)n_tok * E, 1e-10);
    if (!head) {
        fail_if_diff("hc_pre post and comb", got_mix, want_mix, (size_t)n_tok * n_out, 2e-6);
    } else {
        for (size_t i = 0; i < (size_t)n_tok * n_out; i++)
            if (got_mix[i] != GUARD_VALUE) fail_msg("the head's hc_pre wrote the mix buffer");
    }
    gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &bb), gsmrt_vk_buf_free(g->dev, &sb);
    gsmrt_vk_buf_free(g->dev, &rb);
    guarded_free(g, &y), guarded_free(g, &mix);
    weights_free(g, &fn);
    free(x), free(want_y), free(want_mix), free(zero), free(got_y), free(got_mix);
}

static void test_hc_pre(void **state)
{
    struct gpu *g = *state;
    hc_case(g, 1, 67, 4, 0);   /* decode */
    hc_case(g, 6, 67, 4, 0);   /* a batch, odd width */
    hc_case(g, 3, 130, 3, 0);  /* another stream count */
    hc_case(g, 5, 67, 4, 1);   /* the head */
    hc_case(g, 2, 4096, 4, 0); /* Flash's width */
    hc_case(g, 2, 4096, 4, 1);
}

static void test_hc_post(void **state)
{
    struct gpu *g = *state;
    for (uint32_t n_tok = 1; n_tok <= 7; n_tok += 6) {
        uint32_t E = 71, hc = 4, n_out = hc + hc * hc;
        size_t nx = (size_t)n_tok * hc * E;
        float *f = malloc((size_t)n_tok * E * 4), *x = malloc(nx * 4), *mix = malloc((size_t)n_tok * n_out * 4);
        ref_fill_uniform(f, (size_t)n_tok * E, 21, -1, 1);
        ref_fill_uniform(x, nx, 22, -1, 1);
        ref_fill_uniform(mix, (size_t)n_tok * n_out, 23, 0, 2);
        float *want = malloc(nx * 4), *got = malloc(nx * 4);
        ref_hc_post(f, x, mix, n_tok, E, hc, want);
        struct gsmrt_vk_buf fb, xb, mb;
        struct gsmrt_vk_range fr, xr, mr;
        upload(g, f, (size_t)n_tok * E * 4, &fb, &fr);
        upload(g, x, nx * 4, &xb, &xr);
        upload(g, mix, (size_t)n_tok * n_out * 4, &mb, &mr);
        struct guarded xn;
        guarded_alloc(g, &xn, nx);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_hc_post(g->rec, &fr, &xr, &mr, &xn.range, n_tok, E, hc, &gpu_err));
        submit(g);
        guarded_read(g, &xn, got);
        fail_if_nmse("hc_post", got, want, nx, 1e-12);
        gsmrt_vk_buf_free(g->dev, &fb), gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &mb);
        guarded_free(g, &xn);
        free(f), free(x), free(mix), free(want), free(got);
    }
}

static void test_hc_bad_shapes(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_buf b;
    struct gsmrt_vk_range r;
    float z[64] = {0};
    upload(g, z, sizeof z, &b, &r);
    struct gsmrt_k_hc_pre p = {.n_tok = 1, .n_embd = 4, .hc = GSMRT_K_V4_MAX_HC + 1, .sinkhorn_iters = 20};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    assert_int_equal(gsmrt_k_hc_pre(g->rec, &p, &r, &r, &r, &r, &r, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "hc_pre"));
    p.hc = 4;
    assert_int_equal(gsmrt_k_hc_pre(g->rec, &p, &r, &r, &r, &r, &r, NULL, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "no mix output"));
    submit(g);
    gsmrt_vk_buf_free(g->dev, &b);
}

/* ---- MoE routing and the clamped SwiGLU -------------------------------------- */

static void route_case(struct gpu *g, size_t NE, size_t K, int hashed, int ties)
{
    const size_t n_tok = 9, n_vocab = 50;
    float *logits = malloc(n_tok * NE * 4), *bias = malloc(NE * 4);
    ref_fill_uniform(logits, n_tok * NE, 60 + NE + hashed, -4, 4);
    ref_fill_uniform(bias, NE, 61 + NE, -0.3f, 0.3f);
    if (ties) {   /* equal scores and no bias: the lowest indices win */
        for (size_t i = 0; i < 3 * NE; i++) logits[i] = 0.25f;
        memset(bias, 0, NE * 4);
    }
    uint32_t tokens[9] = {3, 49, 0, 17, 17, 8, 21, 33, 2};
    int32_t *tab = malloc(n_vocab * K * 4);
    for (size_t v = 0; v < n_vocab; v++)   /* distinct experts per token, as the converter writes */
        for (size_t k = 0; k < K; k++) tab[v * K + k] = (int32_t)((v * 7 + k * 3) % NE);
    uint32_t *want_ids = malloc(n_tok * K * 4), *ids = malloc(n_tok * K * 4);
    float *want_w = malloc(n_tok * K * 4), *w = malloc(n_tok * K * 4);
    ref_moe_route_v4(logits, bias, tokens, tab, n_tok, NE, K, hashed, 1, 1.5f, want_ids, want_w);
    if (ties && !hashed)
        for (size_t k = 0; k < K; k++)
            if (want_ids[k] != k) fail_msg("reference tie-break: slot %zu is %u", k, want_ids[k]);
    struct gsmrt_vk_buf lb, bb, tb, hb;
    struct gsmrt_vk_range lr, br, tr, hr;
    upload(g, logits, n_tok * NE * 4, &lb, &lr);
    upload(g, bias, NE * 4, &bb, &br);
    upload(g, tokens, sizeof tokens, &tb, &tr);
    upload(g, tab, n_vocab * K * 4, &hb, &hr);
    struct guarded ib, wb;
    guarded_alloc(g, &ib, n_tok * K);
    guarded_alloc(g, &wb, n_tok * K);
    struct gsmrt_k_moe_route_v4 p = {
        .n_tok = (uint32_t)n_tok, .n_expert = (uint32_t)NE, .n_used = (uint32_t)K, .hashed = hashed != 0,
        .n_vocab = (uint32_t)n_vocab, .norm = true, .scale = 1.5f,
    };
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_moe_route_v4(g->rec, &p, &lr, hashed ? NULL : &br, hashed ? &tr : NULL, hashed ? &hr : NULL,
                                &ib.range, &wb.range, &gpu_err));
    submit(g);
    guarded_read(g, &ib, (float *)ids);
    guarded_read(g, &wb, w);
    for (size_t i = 0; i < n_tok * K; i++) {
        if (ids[i] != want_ids[i])
            fail_msg("%zu experts, %s: slot %zu chose %u, reference %u", NE, hashed ? "hashed" : "scored", i, ids[i],
                     want_ids[i]);
        if (!(fabsf(w[i] - want_w[i]) <= 1e-6f * fmaxf(1.0f, fabsf(want_w[i]))))
            fail_msg("%zu experts: weight %zu is %.9g, reference %.9g", NE, i, w[i], want_w[i]);
    }
    gsmrt_vk_buf_free(g->dev, &lb), gsmrt_vk_buf_free(g->dev, &bb), gsmrt_vk_buf_free(g->dev, &tb);
    gsmrt_vk_buf_free(g->dev, &hb);
    guarded_free(g, &ib), guarded_free(g, &wb);
    free(logits), free(bias), free(tab), free(want_ids), free(ids), free(want_w), free(w);
}

static void test_moe_route_v4(void **state)
{
    struct gpu *g = *state;
    route_case(g, 8, 2, 0, 0);     /* the tiny file's 8 experts, 2 used */
    route_case(g, 8, 2, 1, 0);     /* its hash layers */
    route_case(g, 256, 6, 0, 0);   /* Flash's 256 experts */
    route_case(g, 256, 6, 1, 0);
    route_case(g, 64, 4, 0, 1);    /* ties */
}

/* A token outside the table (the loader refuses such prompts and tables;
 * this is the kernel's own guard) routes to expert 0 with weight 0. */
static void test_moe_route_v4_guard(void **state)
{
    struct gpu *g = *state;
    float logits[2 * 8];
    ref_fill_uniform(logits, 16, 7, -1, 1);
    uint32_t tokens[2] = {1, 1000};
    int32_t tab[4 * 2] = {1, 2, 3, 99, 5, 6, 7, 0};   /* token 1 has an out-of-range entry */
    struct gsmrt_vk_buf lb, tb, hb;
    struct gsmrt_vk_range lr, tr, hr;
    upload(g, logits, sizeof logits, &lb, &lr);
    upload(g, tokens, sizeof tokens, &tb, &tr);
    upload(g, tab, sizeof tab, &hb, &hr);
    struct guarded ib, wb;
    guarded_alloc(g, &ib, 4);
    guarded_alloc(g, &wb, 4);
    struct gsmrt_k_moe_route_v4 p = {.n_tok = 2, .n_expert = 8, .n_used = 2, .hashed = true, .n_vocab = 4,
                                     .norm = false, .scale = 1.0f};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_moe_route_v4(g->rec, &p, &lr, NULL, &tr, &hr, &ib.range, &wb.range, &gpu_err));
    submit(g);
    uint32_t ids[4];
    float w[4];
    guarded_read(g, &ib, (float *)ids);
    guarded_read(g, &wb, w);
    double p3 = sqrt(log1p(exp((double)logits[3])));
    assert_int_equal(ids[0], 3);
    assert_true(fabs(w[0] - p3) < 1e-6);
    assert_int_equal(ids[1], 0), assert_true(w[1] == 0.0f);
    assert_int_equal(ids[2], 0), assert_true(w[2] == 0.0f);
    assert_int_equal(ids[3], 0), assert_true(w[3] == 0.0f);
    p.hashed = false;   /* scored routing without its bias: refused, named */
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    assert_int_equal(gsmrt_k_moe_route_v4(g->rec, &p, &lr, NULL, NULL, NULL, &ib.range, &wb.range, &gpu_err),
                     GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "exp_probs_b"));
    submit(g);
    gsmrt_vk_buf_free(g->dev, &lb), gsmrt_vk_buf_free(g->dev, &tb), gsmrt_vk_buf_free(g->dev, &hb);
    guarded_free(g, &ib), guarded_free(g, &wb);
}

static void test_swiglu_clamp(void **state)
{
    struct gpu *g = *state;
    static const float limits[] = {2.0f, 7.0f, 0.0f};   /* Flash-like, wider than the inputs, none */
    size_t n = 1001;
    float *a = malloc(n * 4), *u = malloc(n * 4), *want = malloc(n * 4), *got = malloc(n * 4);
    ref_fill_uniform(a, n, 81, -6, 6);
    ref_fill_uniform(u, n, 82, -6, 6);
    struct gsmrt_vk_buf ab, ub;
    struct gsmrt_vk_range ar, ur;
    upload(g, a, n * 4, &ab, &ar);
    upload(g, u, n * 4, &ub, &ur);
    for (size_t li = 0; li < 3; li++) {
        ref_swiglu_clamp(a, u, want, n, limits[li]);
        struct guarded y;
        guarded_alloc(g, &y, n);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_swiglu_clamp(g->rec, &ar, &ur, &y.range, (uint32_t)n, limits[li], &gpu_err));
        submit(g);
        guarded_read(g, &y, got);
        for (size_t i = 0; i < n; i++)
            if (!(fabsf(got[i] - want[i]) <= 1e-6f * fmaxf(1.0f, fabsf(want[i]))))
                fail_msg("limit %g: y[%zu] = %.9g, reference %.9g", limits[li], i, got[i], want[i]);
        guarded_free(g, &y);
    }
    gsmrt_vk_buf_free(g->dev, &ab), gsmrt_vk_buf_free(g->dev, &ub);
    free(a), free(u), free(want), free(got);
}

/* ---- the compressor ------------------------------------------------------- */

/* Pooling, then the existing rms_norm and rope (with gsmrt_v4_rope_params)
 * against Compressor.rows. ring: the kv/score rows are kept as a ring of
 * 2 * ratio positions (what decode keeps), else as positions 0.. . */
static void compressor_case(struct gpu *g, uint32_t ratio, int overlap, uint32_t n_pos, uint32_t first, int ring)
{
    uint32_t dim = overlap ? 38 : 40, width = overlap ? 2 * dim : dim, n_rot = 16;
    uint32_t n_blocks = n_pos / ratio - first;
    float *kv = malloc((size_t)n_pos * width * 4), *sc = malloc((size_t)n_pos * width * 4);
    float *ape = malloc((size_t)ratio * width * 4), *norm = malloc(dim * 4);
    ref_fill_uniform(kv, (size_t)n_pos * width, 90 + ratio, -1, 1);
    ref_fill_uniform(sc, (size_t)n_pos * width, 91 + ratio, -3, 3);
    ref_fill_uniform(ape, (size_t)ratio * width, 92, -1, 1);
    ref_fill_uniform(norm, dim, 93, 0.5f, 1.5f);
    struct ref_v4_rope rr = {.D = dim, .n_rot = n_rot, .base = 160000.0, .scaling = 2, .factor = 4.0,
                             .orig_ctx = 256, .beta_fast = 32, .beta_slow = 1};
    float *want = malloc((size_t)n_blocks * dim * 4), *got = malloc((size_t)n_blocks * dim * 4);
    ref_compressor(kv, sc, ape, norm, dim, ratio, overlap, first, n_blocks, 1e-6f, &rr, want);

    uint32_t n_rows = n_pos, row_pos0 = 0;
    float *kv_in = kv, *sc_in = sc;
    if (ring) {   /* only the positions the blocks need, position p at p % n_rows */
        n_rows = 2 * ratio;
        kv_in = malloc((size_t)n_rows * width * 4), sc_in = malloc((size_t)n_rows * width * 4);
        uint32_t lo = first > 0 ? (first - 1) * ratio : 0;
        for (uint32_t q = lo; q < n_pos && q < lo + n_rows; q++) {
            memcpy(kv_in + (q % n_rows) * width, kv + (size_t)q * width, width * 4);
            memcpy(sc_in + (q % n_rows) * width, sc + (size_t)q * width, width * 4);
        }
    }
    int32_t *pos = malloc(n_blocks * 4);
    for (uint32_t j = 0; j < n_blocks; j++) pos[j] = (int32_t)((first + j) * ratio);
    struct gsmrt_vk_buf kb, sb, ab, nb, pb;
    struct gsmrt_vk_range kr, sr, ar, nr, pr;
    upload(g, kv_in, (size_t)n_rows * width * 4, &kb, &kr);
    upload(g, sc_in, (size_t)n_rows * width * 4, &sb, &sr);
    upload(g, ape, (size_t)ratio * width * 4, &ab, &ar);
    upload(g, norm, dim * 4, &nb, &nr);
    upload(g, pos, n_blocks * 4, &pb, &pr);
    struct guarded out;
    guarded_alloc(g, &out, (size_t)n_blocks * dim);
    struct gsmrt_k_compress_pool p = {
        .n_blocks = n_blocks, .block0 = first, .dim = dim, .ratio = ratio, .overlap = overlap != 0,
        .row_pos0 = row_pos0, .n_rows = n_rows, .out_stride = dim,
    };
    struct gsmrt_rope_params rp = {.n_tok = n_blocks, .n_heads = 1, .head_stride = dim, .row_stride = dim,
                                   .rot_offset = dim - n_rot};
    gsmrt_v4_rope_params(&(struct gsmrt_v4_rope){.n_rot = n_rot, .freq_base = 160000.0f,
                                                 .scaling = GSMRT_V4_ROPE_YARN, .factor = 4.0f, .orig_ctx = 256,
                                                 .beta_fast = 32.0f, .beta_slow = 1.0f},
                         &rp);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_compress_pool(g->rec, &p, &kr, &sr, &ar, &out.range, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rms_norm(g->rec, &out.range, &nr, &out.range, n_blocks, dim, 1e-6f, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rope(g->rec, &out.range, &pr, &rp, &gpu_err));
    submit(g);
    guarded_read(g, &out, got);
    char what[96];
    snprintf(what, sizeof what, "compressor ratio %u%s, blocks %u..%u%s", ratio, overlap ? " (overlap)" : "", first,
             first + n_blocks - 1, ring ? ", ring" : "");
    fail_if_nmse(what, got, want, (size_t)n_blocks * dim, 1e-9);
    gsmrt_vk_buf_free(g->dev, &kb), gsmrt_vk_buf_free(g->dev, &sb), gsmrt_vk_buf_free(g->dev, &ab);
    gsmrt_vk_buf_free(g->dev, &nb), gsmrt_vk_buf_free(g->dev, &pb);
    guarded_free(g, &out);
    if (ring) free(kv_in), free(sc_in);
    free(kv), free(sc), free(ape), free(norm), free(want), free(got), free(pos);
}

static void test_compressor(void **state)
{
    struct gpu *g = *state;
    compressor_case(g, 4, 1, 39, 0, 0);     /* CSA: blocks 0..8, block 0 without a predecessor */
    compressor_case(g, 4, 1, 40, 6, 0);     /* later blocks only */
    compressor_case(g, 4, 1, 28, 6, 1);     /* decode: one block from a ring of 8 positions */
    compressor_case(g, 16, 0, 70, 0, 0);    /* the tiny file's other ratio */
    compressor_case(g, 128, 0, 300, 0, 0);  /* HCA */
    compressor_case(g, 128, 0, 256, 1, 1);  /* HCA decode from a ring */
}

static void test_compressor_bad_shapes(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_buf b;
    struct gsmrt_vk_range r;
    float z[64] = {0};
    upload(g, z, sizeof z, &b, &r);
    /* overlap needs two blocks of positions kept */
    struct gsmrt_k_compress_pool p = {.n_blocks = 1, .dim = 4, .ratio = 4, .overlap = true, .n_rows = 4,
                                      .out_stride = 4};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    assert_int_equal(gsmrt_k_compress_pool(g->rec, &p, &r, &r, &r, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "compress_pool"));
    submit(g);
    gsmrt_vk_buf_free(g->dev, &b);
}

/* ---- the lightning indexer ------------------------------------------------- */

static void test_indexer_score(void **state)
{
    struct gpu *g = *state;
    /* 5 queries at positions around block boundaries, 16 heads of 24, 37 rows */
    size_t n_tok = 5, H = 16, D = 24, n_rows = 37, ratio = 4;
    int32_t pos[5] = {3, 4, 7, 100, 147};   /* 1, 1, 2, 25, 37 rows visible */
    float *q = malloc(n_tok * H * D * 4), *w = malloc(n_tok * H * 4), *k = malloc(n_rows * D * 4);
    ref_fill_uniform(q, n_tok * H * D, 101, -1, 1);
    ref_fill_uniform(w, n_tok * H, 102, -0.5f, 0.5f);
    ref_fill_uniform(k, n_rows * D, 103, -1, 1);
    float *want = malloc(n_tok * n_rows * 4), *got = malloc(n_tok * n_rows * 4);
    ref_indexer_scores(q, w, k, pos, n_tok, H, D, n_rows, ratio, want);
    struct gsmrt_vk_buf qb, wb, kb, pb;
    struct gsmrt_vk_range qr, wr, kr, pr;
    upload(g, q, n_tok * H * D * 4, &qb, &qr);
    upload(g, w, n_tok * H * 4, &wb, &wr);
    upload(g, k, n_rows * D * 4, &kb, &kr);
    upload(g, pos, sizeof pos, &pb, &pr);
    struct guarded s;
    guarded_alloc(g, &s, n_tok * n_rows);
    struct gsmrt_k_indexer p = {.n_tok = (uint32_t)n_tok, .n_heads = (uint32_t)H, .head_dim = (uint32_t)D,
                                .q_stride = (uint32_t)(H * D), .n_rows = (uint32_t)n_rows, .k_stride = (uint32_t)D,
                                .s_stride = (uint32_t)n_rows, .ratio = (uint32_t)ratio};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_indexer_score(g->rec, &p, &qr, &wr, &kr, &pr, &s.range, &gpu_err));
    submit(g);
    guarded_read(g, &s, got);
    double num = 0, den = 0;
    for (size_t i = 0; i < n_tok * n_rows; i++) {
        if (isinf(want[i])) {
            if (!(isinf(got[i]) && got[i] < 0)) fail_msg("score %zu of an invisible row is %g, not -inf", i, got[i]);
            continue;
        }
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    if (!(num <= 1e-10 * den)) fail_msg("indexer scores: NMSE %.3g above 1e-10", num / den);
    gsmrt_vk_buf_free(g->dev, &qb), gsmrt_vk_buf_free(g->dev, &wb), gsmrt_vk_buf_free(g->dev, &kb);
    gsmrt_vk_buf_free(g->dev, &pb);
    guarded_free(g, &s);
    free(q), free(w), free(k), free(want), free(got);
}

/* Top-k on the device: random scores, scores with many exact ties (the
 * lower row must win), negative and -inf scores, fewer visible rows than k,
 * and a long row list (several rows per invocation). */
static void topk_case(struct gpu *g, size_t n_rows, size_t k, int ties)
{
    size_t n_tok = 6, ratio = 4;
    int32_t pos[6] = {2, 9, 31, (int32_t)(4 * n_rows / 2), (int32_t)(4 * n_rows - 1), (int32_t)(4 * n_rows + 50)};
    float *s = malloc(n_tok * n_rows * 4);
    ref_fill_uniform(s, n_tok * n_rows, 200 + n_rows + ties, -2, 2);
    if (ties)
        for (size_t i = 0; i < n_tok * n_rows; i++) s[i] = floorf(s[i] * 2.0f) * 0.5f;   /* 8 distinct values */
    s[3 * n_rows] = -INFINITY;   /* a visible row scored -inf still counts as a row */
    uint32_t *want = malloc(n_tok * k * 4), *got = malloc(n_tok * k * 4);
    ref_topk_rows(s, pos, n_tok, n_rows, k, ratio, want);
    struct gsmrt_vk_buf sb, pb;
    struct gsmrt_vk_range sr, pr;
    upload(g, s, n_tok * n_rows * 4, &sb, &sr);
    upload(g, pos, sizeof pos, &pb, &pr);
    struct guarded ids;
    guarded_alloc(g, &ids, n_tok * k);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_topk_rows(g->rec, &sr, &pr, &ids.range, (uint32_t)n_tok, (uint32_t)n_rows, (uint32_t)n_rows,
                             (uint32_t)k, (uint32_t)ratio, &gpu_err));
    submit(g);
    guarded_read(g, &ids, (float *)got);
    for (size_t i = 0; i < n_tok * k; i++)
        if (got[i] != want[i])
            fail_msg("%zu rows, top-%zu%s: token %zu slot %zu is row %d, reference %d", n_rows, k, ties ? " (ties)" : "",
                     i / k, i % k, (int)got[i], (int)want[i]);
    gsmrt_vk_buf_free(g->dev, &sb), gsmrt_vk_buf_free(g->dev, &pb);
    guarded_free(g, &ids);
    free(s), free(want), free(got);
}

static void test_topk_rows(void **state)
{
    struct gpu *g = *state;
    topk_case(g, 37, 8, 0);      /* the tiny file's top-k 8 */
    topk_case(g, 37, 8, 1);
    topk_case(g, 3001, 512, 0);  /* Flash's top-512, more rows than invocations */
    topk_case(g, 3001, 512, 1);
    topk_case(g, 5, 8, 0);       /* never more than the visible rows */
}

/* ---- attention -------------------------------------------------------------- */

/* attn_v4, then de-RoPE with rope at the negated positions, against
 * ref_attn_v4 and the reference's inverse RoPE. The raw rows are a ring of
 * n_swa + n_tok - 1 rows holding only the positions the batch's windows need. */
static void attn_case(struct gpu *g, uint32_t n_tok, int32_t pos0, uint32_t H, uint32_t D, int mode, uint32_t top_k,
                      uint32_t ratio)
{
    uint32_t n_swa = 16, n_rot = 16, n_pos = (uint32_t)pos0 + n_tok, ring = n_swa + n_tok - 1;
    uint32_t n_comp = mode ? n_pos / ratio + 1 : 0;   /* one row more than any token sees */
    float *q = malloc((size_t)n_tok * H * D * 4), *raw = malloc((size_t)n_pos * D * 4);
    float *comp = malloc(((size_t)n_comp + 1) * D * 4), sinks[8];
    ref_fill_uniform(q, (size_t)n_tok * H * D, 300 + D, -3, 3);
    ref_fill_uniform(raw, (size_t)n_pos * D, 301, -1, 1);
    ref_fill_uniform(comp, ((size_t)n_comp + 1) * D, 302, -1, 1);
    ref_fill_uniform(sinks, H, 303, -1, 2);
    int32_t *pos = malloc(n_tok * 4), *neg = malloc(n_tok * 4);
    for (uint32_t t = 0; t < n_tok; t++) pos[t] = pos0 + (int32_t)t, neg[t] = -pos[t];
    uint32_t *ids = NULL;
    if (mode == 1) {   /* a selection as topk_rows gives it, from random scores */
        float *sc = malloc((size_t)n_tok * n_comp * 4);
        ref_fill_uniform(sc, (size_t)n_tok * n_comp, 304, -1, 1);
        ids = malloc((size_t)n_tok * top_k * 4);
        ref_topk_rows(sc, pos, n_tok, n_comp, top_k, ratio, ids);
        free(sc);
    }
    size_t n_out = (size_t)n_tok * H * D;
    float *want = malloc(n_out * 4), *got = malloc(n_out * 4);
    ref_attn_v4(q, raw, comp, ids, pos, sinks, n_tok, H, D, n_swa, mode, top_k, ratio, 1.0f / sqrtf((float)D), want);
    struct ref_v4_rope rr = {.D = D, .n_rot = n_rot, .base = 160000.0, .scaling = 2, .factor = 4.0, .orig_ctx = 256,
                             .beta_fast = 32, .beta_slow = 1};
    ref_v4_rope(want, pos, n_tok, H, &rr, 1);

    float *ringv = malloc((size_t)ring * D * 4);
    for (size_t i = 0; i < (size_t)ring * D; i++) ringv[i] = NAN;   /* rows no window needs: never read */
    for (uint32_t p = n_pos > ring ? n_pos - ring : 0; p < n_pos; p++)
        memcpy(ringv + (size_t)(p % ring) * D, raw + (size_t)p * D, D * 4);
    struct gsmrt_vk_buf qb, rb, cb, ib, pb, nb, sb;
    struct gsmrt_vk_range qr, rr_, cr, ir, pr, nr, sr;
    upload(g, q, (size_t)n_tok * H * D * 4, &qb, &qr);
    upload(g, ringv, (size_t)ring * D * 4, &rb, &rr_);
    upload(g, comp, ((size_t)n_comp + 1) * D * 4, &cb, &cr);
    uint32_t none = 0;
    upload(g, ids ? (void *)ids : (void *)&none, ids ? (size_t)n_tok * top_k * 4 : 4, &ib, &ir);
    upload(g, pos, n_tok * 4, &pb, &pr);
    upload(g, neg, n_tok * 4, &nb, &nr);
    upload(g, sinks, H * 4, &sb, &sr);
    struct guarded out;
    guarded_alloc(g, &out, n_out);
    struct gsmrt_k_attn_v4 p = {
        .n_tok = n_tok, .n_heads = H, .head_dim = D, .q_stride = H * D, .raw_rows = ring, .raw_stride = D,
        .n_swa = n_swa, .mode = (enum gsmrt_v4_comp_mode)mode, .n_comp = n_comp, .comp_stride = D, .top_k = top_k,
        .ratio = ratio, .scale = 1.0f / sqrtf((float)D),
    };
    struct gsmrt_rope_params rp = {.n_tok = n_tok, .n_heads = H, .head_stride = D, .row_stride = H * D,
                                   .rot_offset = D - n_rot};
    gsmrt_v4_rope_params(&(struct gsmrt_v4_rope){.n_rot = n_rot, .freq_base = 160000.0f,
                                                 .scaling = GSMRT_V4_ROPE_YARN, .factor = 4.0f, .orig_ctx = 256,
                                                 .beta_fast = 32.0f, .beta_slow = 1.0f},
                         &rp);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_attn_v4(g->rec, &p, &qr, &rr_, mode ? &cr : NULL, ids ? &ir : NULL, &pr, &sr, &out.range, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rope(g->rec, &out.range, &nr, &rp, &gpu_err));
    submit(g);
    guarded_read(g, &out, got);
    char what[96];
    snprintf(what, sizeof what, "attn_v4 mode %d, %u tokens at %d, %u heads of %u", mode, n_tok, pos0, H, D);
    fail_if_nmse(what, got, want, n_out, 1e-9);
    gsmrt_vk_buf_free(g->dev, &qb), gsmrt_vk_buf_free(g->dev, &rb), gsmrt_vk_buf_free(g->dev, &cb);
    gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &pb), gsmrt_vk_buf_free(g->dev, &nb);
    gsmrt_vk_buf_free(g->dev, &sb);
    guarded_free(g, &out);
    free(q), free(raw), free(comp), free(pos), free(neg), free(ids), free(want), free(got), free(ringv);
}

static void test_attn_v4(void **state)
{
    struct gpu *g = *state;
    attn_case(g, 1, 0, 3, 72, 0, 0, 0);       /* the first token: itself and the sink */
    attn_case(g, 5, 40, 3, 72, 0, 0, 0);      /* a batch, window only (ratio 0) */
    attn_case(g, 5, 40, 3, 72, 1, 8, 4);      /* CSA: window + top-8 of 10 visible rows */
    attn_case(g, 4, 9, 2, 72, 1, 8, 4);       /* fewer visible rows than top-k: padded selection */
    attn_case(g, 1, 300, 2, 512, 1, 80, 4);   /* Flash's head width, keys in two tiles */
    attn_case(g, 6, 250, 2, 72, 2, 0, 128);   /* HCA: a row becomes visible inside the batch (pos 255) */
    attn_case(g, 3, 200, 1, 40, 2, 0, 4);     /* every compressed row: 16 + 50 keys */
}

/* ring_store: rows land at pos % n_rows, the rest of the ring untouched
 * (bit-exact: a copy), across the wrap; a ring shorter than the batch is refused. */
static void test_ring_store(void **state)
{
    struct gpu *g = *state;
    uint32_t n_tok = 7, width = 70, src_stride = 73, n_rows = 10, dst_stride = 71;
    float *src = malloc((size_t)n_tok * src_stride * 4), *want = malloc((size_t)n_rows * dst_stride * 4);
    float *got = malloc((size_t)n_rows * dst_stride * 4);
    ref_fill_uniform(src, (size_t)n_tok * src_stride, 401, -1, 1);
    int32_t pos[7] = {36, 37, 38, 39, 40, 41, 42};   /* rows 6..9, then 0..2 */
    for (size_t i = 0; i < (size_t)n_rows * dst_stride; i++) want[i] = GUARD_VALUE;
    for (uint32_t t = 0; t < n_tok; t++)
        memcpy(want + (size_t)(pos[t] % n_rows) * dst_stride, src + (size_t)t * src_stride, width * 4);
    struct gsmrt_vk_buf sb, pb;
    struct gsmrt_vk_range sr, pr;
    upload(g, src, (size_t)n_tok * src_stride * 4, &sb, &sr);
    upload(g, pos, sizeof pos, &pb, &pr);
    struct guarded dst;
    guarded_alloc(g, &dst, (size_t)n_rows * dst_stride);
    struct gsmrt_k_ring_store p = {.n_tok = n_tok, .width = width, .src_stride = src_stride, .n_rows = n_rows,
                                   .dst_stride = dst_stride};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_ring_store(g->rec, &p, &sr, &pr, &dst.range, &gpu_err));
    p.n_rows = 6;
    assert_int_equal(gsmrt_k_ring_store(g->rec, &p, &sr, &pr, &dst.range, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "ring_store"));
    submit(g);
    guarded_read(g, &dst, got);
    if (memcmp(got, want, (size_t)n_rows * dst_stride * 4) != 0) fail_msg("ring_store: the ring differs from a copy");
    gsmrt_vk_buf_free(g->dev, &sb), gsmrt_vk_buf_free(g->dev, &pb);
    guarded_free(g, &dst);
    free(src), free(want), free(got);
}

/* A decode session of 45 tokens on one ratio-4 layer, all state on the
 * device as a decoder keeps it: the raw window in a ring of n_swa rows, the
 * compressor's pending positions in rings of 2 * ratio rows, each compressed
 * row made when its block completes (pool, norm, RoPE, stored at its index),
 * then attention over the window and every visible row and the de-RoPE. Every
 * step against the references over the whole history: the window wraps twice
 * and 11 blocks complete. */
static void up_int(struct gpu *g, const struct gsmrt_vk_buf *b, int32_t v)
{
    GPU_OK(gsmrt_vk_upload(g->dev, b, 0, &v, 4, &gpu_err));
}

static void test_decode_session(void **state)
{
    struct gpu *g = *state;
    const uint32_t H = 2, D = 64, n_rot = 16, n_swa = 16, ratio = 4, n_steps = 45, W = 2 * D;
    const uint32_t max_blocks = n_steps / ratio;
    float *q = malloc((size_t)n_steps * H * D * 4), *raw = malloc((size_t)n_steps * D * 4);
    float *kvc = malloc((size_t)n_steps * W * 4), *sc = malloc((size_t)n_steps * W * 4);
    float *ape = malloc((size_t)ratio * W * 4), norm[64], sinks[2] = {0.3f, -0.5f};
    ref_fill_uniform(q, (size_t)n_steps * H * D, 501, -3, 3);
    ref_fill_uniform(raw, (size_t)n_steps * D, 502, -1, 1);
    ref_fill_uniform(kvc, (size_t)n_steps * W, 503, -1, 1);
    ref_fill_uniform(sc, (size_t)n_steps * W, 504, -2, 2);
    ref_fill_uniform(ape, (size_t)ratio * W, 505, -1, 1);
    ref_fill_uniform(norm, D, 506, 0.5f, 1.5f);
    struct ref_v4_rope rr = {.D = D, .n_rot = n_rot, .base = 160000.0, .scaling = 2, .factor = 4.0, .orig_ctx = 256,
                             .beta_fast = 32, .beta_slow = 1};
    float *comp_all = malloc((size_t)max_blocks * D * 4);
    ref_compressor(kvc, sc, ape, norm, D, ratio, 1, 0, max_blocks, 1e-6f, &rr, comp_all);
    struct gsmrt_rope_params rp = {.n_tok = 1, .n_heads = H, .head_stride = D, .row_stride = H * D,
                                   .rot_offset = D - n_rot};
    gsmrt_v4_rope_params(&(struct gsmrt_v4_rope){.n_rot = n_rot, .freq_base = 160000.0f,
                                                 .scaling = GSMRT_V4_ROPE_YARN, .factor = 4.0f, .orig_ctx = 256,
                                                 .beta_fast = 32.0f, .beta_slow = 1.0f},
                         &rp);
    struct gsmrt_rope_params rp_row = rp;   /* the compressed row: one head of D */
    rp_row.n_heads = 1, rp_row.row_stride = D;

    /* device state */
    struct gsmrt_vk_buf qb, rawb, kvb, scb, ringb, kvringb, scringb, apeb, normb, scratchb, compb, sinkb, outb;
    struct gsmrt_vk_buf posb, negb, startb, blockb;
    struct gsmrt_vk_range qr, rawr, kvr, scr, ringr, kvringr, scringr, aper, normr, scratchr, compr, sinkr, outr;
    struct gsmrt_vk_range posr, negr, startr, blockr;
    float *zeros = calloc((size_t)max_blocks * D + (size_t)n_swa * D + 2 * (size_t)ratio * W, 4);
    upload(g, zeros, (size_t)H * D * 4, &qb, &qr);
    upload(g, zeros, D * 4, &rawb, &rawr);
    upload(g, zeros, W * 4, &kvb, &kvr);
    upload(g, zeros, W * 4, &scb, &scr);
    upload(g, zeros, (size_t)n_swa * D * 4, &ringb, &ringr);
    upload(g, zeros, 2 * (size_t)ratio * W * 4, &kvringb, &kvringr);
    upload(g, zeros, 2 * (size_t)ratio * W * 4, &scringb, &scringr);
    upload(g, ape, (size_t)ratio * W * 4, &apeb, &aper);
    upload(g, norm, D * 4, &normb, &normr);
    upload(g, zeros, D * 4, &scratchb, &scratchr);
    upload(g, zeros, (size_t)max_blocks * D * 4, &compb, &compr);
    upload(g, sinks, sizeof sinks, &sinkb, &sinkr);
    upload(g, zeros, (size_t)H * D * 4, &outb, &outr);
    int32_t zero = 0;
    upload(g, &zero, 4, &posb, &posr), upload(g, &zero, 4, &negb, &negr);
    upload(g, &zero, 4, &startb, &startr), upload(g, &zero, 4, &blockb, &blockr);

    float want[2 * 64], got[2 * 64];
    for (uint32_t p = 0; p < n_steps; p++) {
        /* this step's projections, as the layer's products would leave them */
        GPU_OK(gsmrt_vk_upload(g->dev, &qb, 0, q + (size_t)p * H * D, (size_t)H * D * 4, &gpu_err));
        GPU_OK(gsmrt_vk_upload(g->dev, &rawb, 0, raw + (size_t)p * D, D * 4, &gpu_err));
        GPU_OK(gsmrt_vk_upload(g->dev, &kvb, 0, kvc + (size_t)p * W, W * 4, &gpu_err));
        GPU_OK(gsmrt_vk_upload(g->dev, &scb, 0, sc + (size_t)p * W, W * 4, &gpu_err));
        bool completes = (p + 1) % ratio == 0;
        uint32_t b = (p + 1) / ratio - 1;
        up_int(g, &posb, (int32_t)p), up_int(g, &negb, -(int32_t)p);
        up_int(g, &startb, (int32_t)(b * ratio)), up_int(g, &blockb, (int32_t)b);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_ring_store(g->rec, &(struct gsmrt_k_ring_store){.n_tok = 1, .width = D, .src_stride = D,
                                                                       .n_rows = n_swa, .dst_stride = D},
                                  &rawr, &posr, &ringr, &gpu_err));
        struct gsmrt_k_ring_store cs = {.n_tok = 1, .width = W, .src_stride = W, .n_rows = 2 * ratio, .dst_stride = W};
        GPU_OK(gsmrt_k_ring_store(g->rec, &cs, &kvr, &posr, &kvringr, &gpu_err));
        GPU_OK(gsmrt_k_ring_store(g->rec, &cs, &scr, &posr, &scringr, &gpu_err));
        gsmrt_vk_rec_barrier(g->rec);
        if (completes) {
            struct gsmrt_k_compress_pool cp = {.n_blocks = 1, .block0 = b, .dim = D, .ratio = ratio, .overlap = true,
                                               .row_pos0 = 0, .n_rows = 2 * ratio, .out_stride = D};
            GPU_OK(gsmrt_k_compress_pool(g->rec, &cp, &kvringr, &scringr, &aper, &scratchr, &gpu_err));
            gsmrt_vk_rec_barrier(g->rec);
            GPU_OK(gsmrt_k_rms_norm(g->rec, &scratchr, &normr, &scratchr, 1, D, 1e-6f, &gpu_err));
            gsmrt_vk_rec_barrier(g->rec);
            GPU_OK(gsmrt_k_rope(g->rec, &scratchr, &startr, &rp_row, &gpu_err));
            gsmrt_vk_rec_barrier(g->rec);
            GPU_OK(gsmrt_k_ring_store(g->rec, &(struct gsmrt_k_ring_store){.n_tok = 1, .width = D, .src_stride = D,
                                                                           .n_rows = max_blocks, .dst_stride = D},
                                      &scratchr, &blockr, &compr, &gpu_err));
            gsmrt_vk_rec_barrier(g->rec);
        }
        struct gsmrt_k_attn_v4 ap = {
            .n_tok = 1, .n_heads = H, .head_dim = D, .q_stride = H * D, .raw_rows = n_swa, .raw_stride = D,
            .n_swa = n_swa, .mode = GSMRT_V4_COMP_ALL, .n_comp = max_blocks, .comp_stride = D, .ratio = ratio,
            .scale = 1.0f / sqrtf((float)D),
        };
        GPU_OK(gsmrt_k_attn_v4(g->rec, &ap, &qr, &ringr, &compr, NULL, &posr, &sinkr, &outr, &gpu_err));
        gsmrt_vk_rec_barrier(g->rec);
        GPU_OK(gsmrt_k_rope(g->rec, &outr, &negr, &rp, &gpu_err));
        submit(g);
        GPU_OK(gsmrt_vk_download(g->dev, &outb, 0, got, (size_t)H * D * 4, &gpu_err));
        int32_t pp = (int32_t)p;
        ref_attn_v4(q + (size_t)p * H * D, raw, comp_all, NULL, &pp, sinks, 1, H, D, n_swa, 2, 0, ratio,
                    1.0f / sqrtf((float)D), want);
        ref_v4_rope(want, &pp, 1, H, &rr, 1);
        char what[48];
        snprintf(what, sizeof what, "decode step at position %u", p);
        fail_if_nmse(what, got, want, (size_t)H * D, 1e-9);
    }
    struct gsmrt_vk_buf *all[] = {&qb,    &rawb,  &kvb,   &scb,   &ringb,  &kvringb, &scringb, &apeb, &normb,
                                  &scratchb, &compb, &sinkb, &outb, &posb, &negb, &startb, &blockb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gsmrt_vk_buf_free(g->dev, all[i]);
    free(q), free(raw), free(kvc), free(sc), free(ape), free(comp_all), free(zeros);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hc_pre),
        cmocka_unit_test(test_hc_post),
        cmocka_unit_test(test_hc_bad_shapes),
        cmocka_unit_test(test_moe_route_v4),
        cmocka_unit_test(test_moe_route_v4_guard),
        cmocka_unit_test(test_swiglu_clamp),
        cmocka_unit_test(test_compressor),
        cmocka_unit_test(test_compressor_bad_shapes),
        cmocka_unit_test(test_indexer_score),
        cmocka_unit_test(test_topk_rows),
        cmocka_unit_test(test_attn_v4),
        cmocka_unit_test(test_ring_store),
        cmocka_unit_test(test_decode_session),
    };
    return cmocka_run_group_tests_name("kernels_v4", tests, gpu_setup, gpu_teardown);
}
