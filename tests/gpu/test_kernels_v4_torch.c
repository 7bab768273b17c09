/* test_kernels_v4_torch.c -- the V4 kernels on cases the PyTorch reference
 * computed with its own modules (tools/v4_kernel_cases.py, run by the ctest
 * fixture make_v4_kernel_cases into the file $GSMRT_V4_KERNEL_CASES): the
 * hyper-connections of a block and of the head, the ratio-4 (overlap) and
 * ratio-128 compressors with their norm and YaRN RoPE, the lightning
 * indexer's scores and top-k selection, V4 routing (scored and hashed), the
 * clamped SwiGLU, and attention with sinks over the window and compressed rows
 * (then de-RoPE) on what Attention.forward of layers 0, 1 and 2 saw.
 * This ties the kernels' layouts to the reference that agrees with llama.cpp,
 * independently of tests/ref/ref_v4.c. Tolerances: the reference ran in
 * double, the kernels in fp32 (inputs rounded to fp32 first): NMSE 1e-10 for
 * sums, max |diff| 2e-6 for the mixes in (0, 2], NMSE 1e-9 after RoPE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_util.h"
#include "ref/ref.h"
#include "gpu_fixture.h"

static unsigned char *cases;
static size_t cases_bytes;

/* The record `name`, which must hold n floats. */
static const float *find(const char *name, size_t n)
{
    for (size_t off = 0; off + 36 <= cases_bytes;) {
        uint32_t count;
        memcpy(&count, cases + off + 32, 4);
        if (off + 36 + (size_t)count * 4 > cases_bytes) break;
        if (strncmp((const char *)cases + off, name, 32) == 0) {
            if (count != n) fail_msg("case %s holds %u floats, expected %zu", name, count, n);
            return (const float *)(cases + off + 36);
        }
        off += 36 + (size_t)count * 4;
    }
    fail_msg("case %s is not in %s", name, getenv("GSMRT_V4_KERNEL_CASES"));
    return NULL;
}

static void check_nmse(const char *what, const float *got, const float *want, size_t n, double tol)
{
    double e = ref_nmse(got, want, n);
    if (!(e <= tol)) fail_msg("%s: NMSE %.3g above %.3g", what, e, tol);
}

static void up(struct gpu *g, const void *data, size_t bytes, struct gsmrt_vk_buf *b, struct gsmrt_vk_range *r)
{
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, data, bytes, b, r);
}

static void test_hyper_connections(void **state)
{
    struct gpu *g = *state;
    uint32_t T = 5, hc = 4, E = 64, W = hc * E, n_mix = (2 + hc) * hc, n_out = hc + hc * hc;
    const float *x = find("hc.x", (size_t)T * W);
    for (int head = 0; head <= 1; head++) {
        uint32_t rows = head ? hc : n_mix;
        const float *fn = find(head ? "head.fn" : "hc.fn", (size_t)rows * W);
        struct gsmrt_vk_buf fb, xb, bb, sb, rb, yb, mb;
        struct gsmrt_vk_range xr, br, sr, rr, yr, mr;
        upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, fn, (size_t)rows * W * 4, &fb, NULL);
        struct gsmrt_k_weights w = {.buf = &fb, .offset = 0, .type = GSMRT_WTYPE_F32, .n_rows = rows, .n_cols = W};
        up(g, x, (size_t)T * W * 4, &xb, &xr);
        up(g, find(head ? "head.base" : "hc.base", rows), rows * 4, &bb, &br);
        up(g, find(head ? "head.scale" : "hc.scale", head ? 1 : 3), head ? 4 : 12, &sb, &sr);
        float *zero = calloc((size_t)T * n_out + (size_t)T * n_mix + (size_t)T * E, 4);
        up(g, zero, (size_t)T * n_mix * 4, &rb, &rr);
        up(g, zero, (size_t)T * E * 4, &yb, &yr);
        up(g, zero, (size_t)T * n_out * 4, &mb, &mr);
        struct gsmrt_k_hc_pre p = {.n_tok = T, .n_embd = E, .hc = hc, .sinkhorn_iters = 20, .eps_rms = 1e-6f,
                                   .eps_hc = 1e-6f, .head = head != 0};
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_matmul(g->rec, &w, &xr, &rr, T, W, rows, 0, &gpu_err));
        gsmrt_vk_rec_barrier(g->rec);
        GPU_OK(gsmrt_k_hc_pre(g->rec, &p, &xr, &rr, &br, &sr, &yr, head ? NULL : &mr, &gpu_err));
        submit(g);
        float *y = malloc((size_t)T * E * 4), *mix = malloc((size_t)T * n_out * 4);
        GPU_OK(gsmrt_vk_download(g->dev, &yb, 0, y, (size_t)T * E * 4, &gpu_err));
        GPU_OK(gsmrt_vk_download(g->dev, &mb, 0, mix, (size_t)T * n_out * 4, &gpu_err));
        check_nmse(head ? "head hc" : "hc_pre", y, find(head ? "head.h" : "hc.h", (size_t)T * E), (size_t)T * E,
                   1e-10);
        if (!head) {
            const float *post = find("hc.post", (size_t)T * hc), *comb = find("hc.comb", (size_t)T * hc * hc);
            for (uint32_t t = 0; t < T; t++) {
                for (uint32_t s = 0; s < hc; s++)
                    if (!(fabsf(mix[t * n_out + s] - post[t * hc + s]) <= 2e-6f))
                        fail_msg("token %u: post[%u] %.8f, reference %.8f", t, s, mix[t * n_out + s], post[t * hc + s]);
                for (uint32_t k = 0; k < hc * hc; k++)
                    if (!(fabsf(mix[t * n_out + hc + k] - comb[t * hc * hc + k]) <= 2e-6f))
                        fail_msg("token %u: comb[%u][%u] %.8f, reference %.8f", t, k / hc, k % hc, mix[t * n_out + hc + k],
                                 comb[t * hc * hc + k]);
            }
            /* post-mixing around the made-up sub-block output */
            struct gsmrt_vk_buf ffb, xnb;
            struct gsmrt_vk_range ffr, xnr;
            up(g, find("hc.f", (size_t)T * E), (size_t)T * E * 4, &ffb, &ffr);
            float *xz = calloc((size_t)T * W, 4);
            up(g, xz, (size_t)T * W * 4, &xnb, &xnr);
            GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
            GPU_OK(gsmrt_k_hc_post(g->rec, &ffr, &xr, &mr, &xnr, T, E, hc, &gpu_err));
            submit(g);
            GPU_OK(gsmrt_vk_download(g->dev, &xnb, 0, xz, (size_t)T * W * 4, &gpu_err));
            check_nmse("hc_post", xz, find("hc.xn", (size_t)T * W), (size_t)T * W, 1e-10);
            gsmrt_vk_buf_free(g->dev, &ffb), gsmrt_vk_buf_free(g->dev, &xnb);
            free(xz);
        }
        gsmrt_vk_buf_free(g->dev, &fb), gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &bb);
        gsmrt_vk_buf_free(g->dev, &sb), gsmrt_vk_buf_free(g->dev, &rb), gsmrt_vk_buf_free(g->dev, &yb);
        gsmrt_vk_buf_free(g->dev, &mb);
        free(zero), free(y), free(mix);
    }
}

static void compressor_case(struct gpu *g, uint32_t ratio, uint32_t n_pos)
{
    uint32_t dim = 64, n_rot = 16, overlap = ratio == 4, width = overlap ? 2 * dim : dim, n_blocks = n_pos / ratio;
    char name[32];
#define CASE(field, n) (snprintf(name, sizeof name, "c%u.%s", ratio, field), find(name, n))
    const float *kv = CASE("kv", (size_t)n_pos * width), *sc = CASE("score", (size_t)n_pos * width);
    const float *ape = CASE("ape", (size_t)ratio * width), *norm = CASE("norm", dim);
    const float *want = CASE("rows", (size_t)n_blocks * dim);
#undef CASE
    int32_t *pos = malloc(n_blocks * 4);
    for (uint32_t b = 0; b < n_blocks; b++) pos[b] = (int32_t)(b * ratio);
    struct gsmrt_vk_buf kb, sb, ab, nb, pb, ob;
    struct gsmrt_vk_range kr, sr, ar, nr, pr, or_;
    up(g, kv, (size_t)n_pos * width * 4, &kb, &kr);
    up(g, sc, (size_t)n_pos * width * 4, &sb, &sr);
    up(g, ape, (size_t)ratio * width * 4, &ab, &ar);
    up(g, norm, dim * 4, &nb, &nr);
    up(g, pos, n_blocks * 4, &pb, &pr);
    float *got = calloc((size_t)n_blocks * dim, 4);
    up(g, got, (size_t)n_blocks * dim * 4, &ob, &or_);
    struct gsmrt_k_compress_pool p = {.n_blocks = n_blocks, .block0 = 0, .dim = dim, .ratio = ratio,
                                      .overlap = overlap, .row_pos0 = 0, .n_rows = n_pos, .out_stride = dim};
    struct gsmrt_rope_params rp = {.n_tok = n_blocks, .n_heads = 1, .head_stride = dim, .row_stride = dim,
                                   .rot_offset = dim - n_rot};
    /* the tiny file's compressed-layer RoPE: base 160000, YaRN factor 4 from 256 positions */
    gsmrt_v4_rope_params(&(struct gsmrt_v4_rope){.n_rot = n_rot, .freq_base = 160000.0f,
                                                 .scaling = GSMRT_V4_ROPE_YARN, .factor = 4.0f, .orig_ctx = 256,
                                                 .beta_fast = 32.0f, .beta_slow = 1.0f},
                         &rp);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_compress_pool(g->rec, &p, &kr, &sr, &ar, &or_, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rms_norm(g->rec, &or_, &nr, &or_, n_blocks, dim, 1e-6f, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rope(g->rec, &or_, &pr, &rp, &gpu_err));
    submit(g);
    GPU_OK(gsmrt_vk_download(g->dev, &ob, 0, got, (size_t)n_blocks * dim * 4, &gpu_err));
    char what[48];
    snprintf(what, sizeof what, "compressor ratio %u", ratio);
    check_nmse(what, got, want, (size_t)n_blocks * dim, 1e-9);
    gsmrt_vk_buf_free(g->dev, &kb), gsmrt_vk_buf_free(g->dev, &sb), gsmrt_vk_buf_free(g->dev, &ab);
    gsmrt_vk_buf_free(g->dev, &nb), gsmrt_vk_buf_free(g->dev, &pb), gsmrt_vk_buf_free(g->dev, &ob);
    free(pos), free(got);
}

static void test_compressors(void **state)
{
    compressor_case(*state, 4, 38);
    compressor_case(*state, 128, 300);
}

static void test_swiglu_clamp(void **state)
{
    struct gpu *g = *state;
    size_t n = 1000;
    struct gsmrt_vk_buf gb, ub, yb;
    struct gsmrt_vk_range gr, ur, yr;
    up(g, find("swiglu.g", n), n * 4, &gb, &gr);
    up(g, find("swiglu.u", n), n * 4, &ub, &ur);
    float *y = calloc(n, 4);
    up(g, y, n * 4, &yb, &yr);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_swiglu_clamp(g->rec, &gr, &ur, &yr, (uint32_t)n, 2.0f, &gpu_err));   /* the tiny file's limit */
    submit(g);
    GPU_OK(gsmrt_vk_download(g->dev, &yb, 0, y, n * 4, &gpu_err));
    check_nmse("swiglu_clamp", y, find("swiglu.y", n), n, 1e-12);
    gsmrt_vk_buf_free(g->dev, &gb), gsmrt_vk_buf_free(g->dev, &ub), gsmrt_vk_buf_free(g->dev, &yb);
    free(y);
}

/* A weight matrix [rows][cols] of F32 values, for the existing products. */
static struct gsmrt_k_weights weights(struct gpu *g, const float *v, uint32_t rows, uint32_t cols,
                                      struct gsmrt_vk_buf *b)
{
    upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, v, (size_t)rows * cols * 4, b, NULL);
    return (struct gsmrt_k_weights){.buf = b, .offset = 0, .type = GSMRT_WTYPE_F32, .n_rows = rows, .n_cols = cols};
}

static void scratch(struct gpu *g, size_t bytes, struct gsmrt_vk_buf *b, struct gsmrt_vk_range *r)
{
    float *z = calloc(bytes / 4 + 1, 4);
    up(g, z, bytes, b, r);
    free(z);
}

/* The indexer chain as a decoder records it: q = wq_b qr, its RoPE (the
 * compressed layers' YaRN), w = proj h / sqrt(dI nI), the scores, the top-8. */
static void test_indexer(void **state)
{
    struct gpu *g = *state;
    uint32_t T = 6, nI = 16, dI = 64, R = 32, E = 64, n_rows = 40, top_k = 8, n_rot = 16;
    const float *posf = find("idx.pos", T), *want_s = find("idx.scores", (size_t)T * n_rows);
    const float *chosen = find("idx.chosen", (size_t)T * n_rows);
    int32_t pos[6];
    for (uint32_t t = 0; t < T; t++) pos[t] = (int32_t)posf[t];
    struct gsmrt_vk_buf wqb, prb, qrb, hb, kb, pb, qb, wb, sb, ib;
    struct gsmrt_vk_range qrr, hr, kr, pr, qr, wr, sr, ir;
    struct gsmrt_k_weights wq = weights(g, find("idx.wq_b", (size_t)nI * dI * R), nI * dI, R, &wqb);
    struct gsmrt_k_weights proj = weights(g, find("idx.proj", (size_t)nI * E), nI, E, &prb);
    up(g, find("idx.qr", (size_t)T * R), (size_t)T * R * 4, &qrb, &qrr);
    up(g, find("idx.h", (size_t)T * E), (size_t)T * E * 4, &hb, &hr);
    up(g, find("idx.k", (size_t)n_rows * dI), (size_t)n_rows * dI * 4, &kb, &kr);
    up(g, pos, sizeof pos, &pb, &pr);
    scratch(g, (size_t)T * nI * dI * 4, &qb, &qr);
    scratch(g, (size_t)T * nI * 4, &wb, &wr);
    scratch(g, (size_t)T * n_rows * 4, &sb, &sr);
    scratch(g, (size_t)T * top_k * 4, &ib, &ir);
    struct gsmrt_rope_params rp = {.n_tok = T, .n_heads = nI, .head_stride = dI, .row_stride = nI * dI,
                                   .rot_offset = dI - n_rot};
    gsmrt_v4_rope_params(&(struct gsmrt_v4_rope){.n_rot = n_rot, .freq_base = 160000.0f,
                                                 .scaling = GSMRT_V4_ROPE_YARN, .factor = 4.0f, .orig_ctx = 256,
                                                 .beta_fast = 32.0f, .beta_slow = 1.0f},
                         &rp);
    struct gsmrt_k_indexer ip = {.n_tok = T, .n_heads = nI, .head_dim = dI, .q_stride = nI * dI, .n_rows = n_rows,
                                 .k_stride = dI, .s_stride = n_rows, .ratio = 4};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_matmul(g->rec, &wq, &qrr, &qr, T, R, nI * dI, 0, &gpu_err));
    GPU_OK(gsmrt_k_matmul(g->rec, &proj, &hr, &wr, T, E, nI, 0, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rope(g->rec, &qr, &pr, &rp, &gpu_err));
    GPU_OK(gsmrt_k_scale(g->rec, &wr, &wr, T * nI, 1.0f / sqrtf((float)(dI * nI)), &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_indexer_score(g->rec, &ip, &qr, &wr, &kr, &pr, &sr, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_topk_rows(g->rec, &sr, &pr, &ir, T, n_rows, n_rows, top_k, 4, &gpu_err));
    submit(g);
    float *got_s = malloc((size_t)T * n_rows * 4);
    uint32_t ids[6 * 8];
    GPU_OK(gsmrt_vk_download(g->dev, &sb, 0, got_s, (size_t)T * n_rows * 4, &gpu_err));
    GPU_OK(gsmrt_vk_download(g->dev, &ib, 0, ids, sizeof ids, &gpu_err));
    double num = 0, den = 0;
    for (size_t i = 0; i < (size_t)T * n_rows; i++) {
        if (isinf(want_s[i])) {
            if (!(isinf(got_s[i]) && got_s[i] < 0)) fail_msg("score %zu of an invisible row: %g", i, got_s[i]);
            continue;
        }
        num += ((double)got_s[i] - want_s[i]) * ((double)got_s[i] - want_s[i]);
        den += (double)want_s[i] * want_s[i];
    }
    if (!(num <= 1e-10 * den)) fail_msg("indexer scores: NMSE %.3g", num / den);
    for (uint32_t t = 0; t < T; t++) {   /* the same rows as the reference's torch.topk, ascending */
        uint32_t k = 0;
        for (uint32_t b = 0; b < n_rows; b++)
            if (chosen[t * n_rows + b] != 0.0f) {
                if (k >= top_k || ids[t * top_k + k] != b)
                    fail_msg("token %u (pos %d): selection slot %u is %d, the reference chose row %u", t, pos[t], k,
                             k < top_k ? (int)ids[t * top_k + k] : -1, b);
                k++;
            }
        for (; k < top_k; k++)
            if (ids[t * top_k + k] != 0xffffffffu) fail_msg("token %u: slot %u should be empty", t, k);
    }
    gsmrt_vk_buf_free(g->dev, &wqb), gsmrt_vk_buf_free(g->dev, &prb), gsmrt_vk_buf_free(g->dev, &qrb);
    gsmrt_vk_buf_free(g->dev, &hb), gsmrt_vk_buf_free(g->dev, &kb), gsmrt_vk_buf_free(g->dev, &pb);
    gsmrt_vk_buf_free(g->dev, &qb), gsmrt_vk_buf_free(g->dev, &wb), gsmrt_vk_buf_free(g->dev, &sb);
    gsmrt_vk_buf_free(g->dev, &ib);
    free(got_s);
}

/* Router logits (the existing product), then moe_route_v4, on a scored and a hash layer. */
static void test_routing(void **state)
{
    struct gpu *g = *state;
    uint32_t T = 7, NE = 8, K = 2, E = 64, n_vocab = 1024;
    for (int hashed = 0; hashed <= 1; hashed++) {
        const char *tag = hashed ? "hash" : "moe";
        char name[32];
#define CASE(field, n) (snprintf(name, sizeof name, "%s.%s", tag, field), find(name, n))
        const float *want_ids = CASE("ids", (size_t)T * K), *want_w = CASE("w", (size_t)T * K);
        struct gsmrt_vk_buf gb, hb, bb, tb, tab_b, lb, ib, wb;
        struct gsmrt_vk_range hr, br, tr, tabr, lr, ir, wr;
        struct gsmrt_k_weights gate = weights(g, CASE("gate_inp", (size_t)NE * E), NE, E, &gb);
        up(g, CASE("h", (size_t)T * E), (size_t)T * E * 4, &hb, &hr);
        uint32_t tokens[7];
        int32_t *tab = malloc((size_t)n_vocab * K * 4);
        if (hashed) {
            const float *tf = CASE("tokens", T), *tabf = find("hash.tid2eid", (size_t)n_vocab * K);
            for (uint32_t t = 0; t < T; t++) tokens[t] = (uint32_t)tf[t];
            for (size_t i = 0; i < (size_t)n_vocab * K; i++) tab[i] = (int32_t)tabf[i];
        } else {
            memset(tokens, 0, sizeof tokens), memset(tab, 0, (size_t)n_vocab * K * 4);
        }
        static const float no_bias[8] = {0};   /* a hash layer has no exp_probs_b (the kernel gets NULL) */
        up(g, hashed ? no_bias : CASE("bias", NE), NE * 4, &bb, &br);
        up(g, tokens, sizeof tokens, &tb, &tr);
        up(g, tab, (size_t)n_vocab * K * 4, &tab_b, &tabr);
        scratch(g, (size_t)T * NE * 4, &lb, &lr);
        scratch(g, (size_t)T * K * 4, &ib, &ir);
        scratch(g, (size_t)T * K * 4, &wb, &wr);
#undef CASE
        struct gsmrt_k_moe_route_v4 p = {.n_tok = T, .n_expert = NE, .n_used = K, .hashed = hashed != 0,
                                         .n_vocab = n_vocab, .norm = true, .scale = 1.5f};
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_matmul(g->rec, &gate, &hr, &lr, T, E, NE, 0, &gpu_err));
        gsmrt_vk_rec_barrier(g->rec);
        GPU_OK(gsmrt_k_moe_route_v4(g->rec, &p, &lr, hashed ? NULL : &br, hashed ? &tr : NULL, hashed ? &tabr : NULL,
                                    &ir, &wr, &gpu_err));
        submit(g);
        uint32_t ids[7 * 2];
        float w[7 * 2];
        GPU_OK(gsmrt_vk_download(g->dev, &ib, 0, ids, sizeof ids, &gpu_err));
        GPU_OK(gsmrt_vk_download(g->dev, &wb, 0, w, sizeof w, &gpu_err));
        for (uint32_t i = 0; i < T * K; i++) {
            if (ids[i] != (uint32_t)want_ids[i])
                fail_msg("%s: token %u slot %u chose expert %u, the reference %u", tag, i / K, i % K, ids[i],
                         (uint32_t)want_ids[i]);
            if (!(fabsf(w[i] - want_w[i]) <= 1e-6f * fmaxf(1.0f, fabsf(want_w[i]))))
                fail_msg("%s: weight %u is %.8f, the reference %.8f", tag, i, w[i], want_w[i]);
        }
        gsmrt_vk_buf_free(g->dev, &gb), gsmrt_vk_buf_free(g->dev, &hb), gsmrt_vk_buf_free(g->dev, &bb);
        gsmrt_vk_buf_free(g->dev, &tb), gsmrt_vk_buf_free(g->dev, &tab_b), gsmrt_vk_buf_free(g->dev, &lb);
        gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &wb);
        free(tab);
    }
}

/* attn_v4 and the de-RoPE on what the reference's Attention.forward saw: its
 * RoPE'd queries, raw rows (kept here as the ring a decoder keeps), compressed
 * rows and the indexer's choice, against its de-RoPE'd output. */
static void attn_case(struct gpu *g, int il, int chunk, uint32_t n_tok, uint32_t pos0)
{
    uint32_t H = 4, D = 64, n_rot = 16, n_swa = 16, n_pos = pos0 + n_tok;
    uint32_t ratio = il == 0 ? 0 : il == 1 ? 4 : 128, n_comp = ratio ? n_pos / ratio : 0, top_k = 8;
    enum gsmrt_v4_comp_mode mode = il == 0 ? GSMRT_V4_COMP_NONE : il == 1 ? GSMRT_V4_COMP_SELECTED : GSMRT_V4_COMP_ALL;
    char name[32];
#define CASE(field, n) (snprintf(name, sizeof name, "a%d.%d.%s", il, chunk, field), find(name, n))
    const float *q = CASE("q", (size_t)n_tok * H * D), *want = CASE("o", (size_t)n_tok * H * D);
    const float *kv = CASE("kv", (size_t)n_pos * D);
    const float *comp = ratio ? CASE("comp", (size_t)n_comp * D) : NULL;
    const float *sel = mode == GSMRT_V4_COMP_SELECTED ? CASE("sel", (size_t)n_tok * n_comp) : NULL;
#undef CASE
    snprintf(name, sizeof name, "a%d.sinks", il);
    const float *sinks = find(name, H);
    uint32_t ring = n_swa + n_tok - 1;
    float *ringv = malloc((size_t)ring * D * 4);
    for (size_t i = 0; i < (size_t)ring * D; i++) ringv[i] = NAN;   /* never read */
    for (uint32_t p = n_pos > ring ? n_pos - ring : 0; p < n_pos; p++)
        memcpy(ringv + (size_t)(p % ring) * D, kv + (size_t)p * D, D * 4);
    uint32_t *ids = malloc((size_t)n_tok * top_k * 4);
    for (uint32_t t = 0; t < n_tok; t++) {   /* the reference's boolean choice as topk_rows writes it */
        uint32_t k = 0;
        for (uint32_t b = 0; sel && b < n_comp; b++)
            if (sel[(size_t)t * n_comp + b] != 0.0f) ids[t * top_k + k++] = b;
        while (k < top_k) ids[t * top_k + k++] = 0xffffffffu;
    }
    int32_t *pos = malloc(n_tok * 4), *neg = malloc(n_tok * 4);
    for (uint32_t t = 0; t < n_tok; t++) pos[t] = (int32_t)(pos0 + t), neg[t] = -pos[t];
    struct gsmrt_vk_buf qb, rb, cb, ib, pb, nb, sb, ob;
    struct gsmrt_vk_range qr, rr, cr, ir, pr, nr, sr, or_;
    up(g, q, (size_t)n_tok * H * D * 4, &qb, &qr);
    up(g, ringv, (size_t)ring * D * 4, &rb, &rr);
    up(g, comp ? comp : ringv, comp ? (size_t)n_comp * D * 4 : 4, &cb, &cr);
    up(g, ids, (size_t)n_tok * top_k * 4, &ib, &ir);
    up(g, pos, n_tok * 4, &pb, &pr);
    up(g, neg, n_tok * 4, &nb, &nr);
    up(g, sinks, H * 4, &sb, &sr);
    float *got = calloc((size_t)n_tok * H * D, 4);
    up(g, got, (size_t)n_tok * H * D * 4, &ob, &or_);
    struct gsmrt_k_attn_v4 p = {
        .n_tok = n_tok, .n_heads = H, .head_dim = D, .q_stride = H * D, .raw_rows = ring, .raw_stride = D,
        .n_swa = n_swa, .mode = mode, .n_comp = n_comp, .comp_stride = D, .top_k = top_k, .ratio = ratio,
        .scale = 1.0f / sqrtf((float)D),
    };
    struct gsmrt_rope_params rp = {.n_tok = n_tok, .n_heads = H, .head_stride = D, .row_stride = H * D,
                                   .rot_offset = D - n_rot};
    /* ratio-0 layers: rope.freq_base unscaled; compressed layers: the compressor base with YaRN */
    struct gsmrt_v4_rope v4r = {.n_rot = n_rot, .freq_base = 10000.0f, .scaling = GSMRT_V4_ROPE_NONE};
    if (ratio)
        v4r = (struct gsmrt_v4_rope){.n_rot = n_rot, .freq_base = 160000.0f, .scaling = GSMRT_V4_ROPE_YARN,
                                     .factor = 4.0f, .orig_ctx = 256, .beta_fast = 32.0f, .beta_slow = 1.0f};
    gsmrt_v4_rope_params(&v4r, &rp);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_attn_v4(g->rec, &p, &qr, &rr, ratio ? &cr : NULL,
                           mode == GSMRT_V4_COMP_SELECTED ? &ir : NULL, &pr, &sr, &or_, &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_k_rope(g->rec, &or_, &nr, &rp, &gpu_err));
    submit(g);
    GPU_OK(gsmrt_vk_download(g->dev, &ob, 0, got, (size_t)n_tok * H * D * 4, &gpu_err));
    char what[64];
    snprintf(what, sizeof what, "attention layer %d (ratio %u), %u tokens at %u", il, ratio, n_tok, pos0);
    check_nmse(what, got, want, (size_t)n_tok * H * D, 1e-9);
    gsmrt_vk_buf_free(g->dev, &qb), gsmrt_vk_buf_free(g->dev, &rb), gsmrt_vk_buf_free(g->dev, &cb);
    gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &pb), gsmrt_vk_buf_free(g->dev, &nb);
    gsmrt_vk_buf_free(g->dev, &sb), gsmrt_vk_buf_free(g->dev, &ob);
    free(ringv), free(ids), free(pos), free(neg), free(got);
}

static void test_attention(void **state)
{
    struct gpu *g = *state;
    attn_case(g, 0, 0, 23, 0), attn_case(g, 0, 1, 5, 23);     /* window only */
    attn_case(g, 1, 0, 45, 0), attn_case(g, 1, 1, 5, 45);     /* CSA: window + the indexer's rows */
    attn_case(g, 2, 0, 300, 0), attn_case(g, 2, 1, 5, 300);   /* HCA: window + every visible row */
}

int main(void)
{
    const char *path = getenv("GSMRT_V4_KERNEL_CASES");
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        fprintf(stderr, "test_kernels_v4_torch: GSMRT_V4_KERNEL_CASES (%s) is not a readable file; "
                        "write it with tools/v4_kernel_cases.py (ctest fixture make_v4_kernel_cases)\n",
                path ? path : "unset");
        return 1;
    }
    fseek(f, 0, SEEK_END);
    cases_bytes = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    cases = malloc(cases_bytes ? cases_bytes : 1);
    if (fread(cases, 1, cases_bytes, f) != cases_bytes) {
        fprintf(stderr, "test_kernels_v4_torch: cannot read %s\n", path);
        return 1;
    }
    fclose(f);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hyper_connections),
        cmocka_unit_test(test_compressors),
        cmocka_unit_test(test_swiglu_clamp),
        cmocka_unit_test(test_indexer),
        cmocka_unit_test(test_routing),
        cmocka_unit_test(test_attention),
    };
    int rc = cmocka_run_group_tests_name("kernels_v4_torch", tests, gpu_setup, gpu_teardown);
    free(cases);
    return rc;
}
