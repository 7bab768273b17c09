/* test_kernels_model.c -- the decoder's model kernels against tests/ref:
 * per-head products (MLA absorption), expert routing in every mode the
 * deepseek2 fact sheet lists, expert products bound in chunks of experts,
 * the weighted combine, the paged cache store (bit-exact) and paged MLA
 * attention over one and many splits with a scrambled page table.
 * Tolerances as in test_kernels.c: 1e-10 NMSE for products (fp32 sums);
 * attention 1e-9 (exp and a two-level sum); routing ids exact, weights 1e-6. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_util.h"
#include "ref/ref.h"
#include "kv_pool.h"
#include "weights_fixture.h"

static void fail_if_nmse(const char *what, const float *got, const float *want, size_t n, double tol)
{
    double e = ref_nmse(got, want, n);
    if (!(e <= tol)) fail_msg("%s: NMSE %.3g above %.3g", what, e, tol);
}

static void *dl(struct gpu *g, const struct gsmrt_vk_buf *b, size_t bytes)
{
    void *p = malloc(bytes);
    GPU_OK(gsmrt_vk_download(g->dev, b, 0, p, bytes, &gpu_err));
    return p;
}

static void scratch(struct gpu *g, size_t bytes, struct gsmrt_vk_buf *b, struct gsmrt_vk_range *r)
{
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_SCRATCH, bytes, b, &gpu_err));
    GPU_OK(gsmrt_vk_buf_range(g->dev, b, 0, (bytes + 3) & ~(size_t)3, r, &gpu_err));
}

static void head_matvec_body(struct gpu *g)
{
    static const enum gsmrt_wtype types[] = {GSMRT_WTYPE_F32, GSMRT_WTYPE_F16, GSMRT_WTYPE_Q8_0};
    for (int ti = 0; ti < 3; ti++)
        for (uint32_t n_tok = 1; n_tok <= 7; n_tok += 6) {
            /* MLA shapes: 7 heads, q row = 7 * 48 with nope 32 first; absorb into kv_lora 64 */
            uint32_t H = 7, R = 64, C = 32, x_stride = 7 * 48 + 3, y_stride = 7 * 64 + 1;
            struct test_weights tw;
            weights_make(g, types[ti], H * R, C, 900 + ti, &tw);
            size_t nx = n_tok * x_stride, ny = n_tok * y_stride;
            float *x = malloc(nx * 4), *want = calloc(ny, 4), *got;
            ref_fill_uniform(x, nx, 5 + n_tok, -1, 1);
            ref_head_matvec(tw.values, x, want, H, R, C, n_tok, x_stride, 48, 0, y_stride, 64, 0);
            struct gsmrt_vk_buf xb, yb;
            struct gsmrt_vk_range xr, yr;
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, nx * 4, &xb, &xr);
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, want, ny * 4, &yb, &yr);   /* unwritten gaps match */
            float *blank = calloc(ny, 4);
            for (size_t t = 0; t < n_tok; t++) blank[t * y_stride + y_stride - 1] = want[t * y_stride + y_stride - 1];
            GPU_OK(gsmrt_vk_upload(g->dev, &yb, 0, blank, ny * 4, &gpu_err));
            struct gsmrt_k_head_matvec p = {H, n_tok, x_stride, 48, 0, y_stride, 64, 0};
            GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
            GPU_OK(gsmrt_k_head_matvec(g->rec, &tw.w, &p, &xr, &yr, &gpu_err));
            submit(g);
            got = dl(g, &yb, ny * 4);
            fail_if_nmse(gsmrt_wtype_name(types[ti]), got, want, ny, 1e-10);
            gsmrt_vk_buf_free(g->dev, &xb);
            gsmrt_vk_buf_free(g->dev, &yb);
            weights_free(g, &tw);
            free(x), free(want), free(got), free(blank);
        }
}


static void test_head_matvec(void **state) { for_each_variant(*state, head_matvec_body); }

struct route_case {
    int gating, norm;
    size_t n_groups, n_groups_used;
    float scale;
    int bias;
};

static void test_moe_route(void **state)
{
    struct gpu *g = *state;
    static const struct route_case cases[] = {
        {1, 0, 0, 0, 0.0f, 0},   /* V2-Lite: softmax, no norm */
        {1, 0, 0, 0, 16.0f, 0},  /* V2: routed scale */
        {2, 1, 8, 4, 2.5f, 1},   /* V3: sigmoid, bias, groups, norm, scale */
        {2, 1, 4, 1, 1.0f, 1},   /* one group kept */
    };
    size_t n_tok = 9, NE = 64, K = 6;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const struct route_case *c = &cases[ci];
        float *logits = malloc(n_tok * NE * 4), bias[64];
        ref_fill_uniform(logits, n_tok * NE, 30 + ci, -3, 3);
        ref_fill_uniform(bias, NE, 40 + ci, -0.2f, 0.2f);
        uint32_t want_ids[9 * 6];
        float want_w[9 * 6];
        ref_moe_route(logits, c->bias ? bias : NULL, n_tok, NE, K, c->gating, c->n_groups, c->n_groups_used,
                      c->norm, c->scale, want_ids, want_w);
        struct gsmrt_vk_buf lb, bb, ib, wb;
        struct gsmrt_vk_range lr, br, ir, wr;
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, logits, n_tok * NE * 4, &lb, &lr);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, bias, sizeof bias, &bb, &br);
        scratch(g, sizeof want_ids, &ib, &ir);
        scratch(g, sizeof want_w, &wb, &wr);
        struct gsmrt_k_moe_route p = {(uint32_t)n_tok, (uint32_t)NE, (uint32_t)K, (uint32_t)c->gating,
                                      (uint32_t)c->n_groups, (uint32_t)c->n_groups_used, c->norm != 0, c->scale};
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_moe_route(g->rec, &lr, c->bias ? &br : NULL, &ir, &wr, &p, &gpu_err));
        submit(g);
        uint32_t *ids = dl(g, &ib, sizeof want_ids);
        float *w = dl(g, &wb, sizeof want_w);
        for (size_t i = 0; i < n_tok * K; i++) {
            if (ids[i] != want_ids[i]) fail_msg("case %zu: slot %zu chose expert %u, reference %u", ci, i, ids[i], want_ids[i]);
            if (fabsf(w[i] - want_w[i]) > 1e-6f * fmaxf(1.0f, fabsf(want_w[i])))
                fail_msg("case %zu: weight %zu is %g, reference %g", ci, i, w[i], want_w[i]);
        }
        gsmrt_vk_buf_free(g->dev, &lb), gsmrt_vk_buf_free(g->dev, &bb);
        gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &wb);
        free(logits), free(ids), free(w);
    }
}

static void moe_body(struct gpu *g)
{
    static const enum gsmrt_wtype types[] = {GSMRT_WTYPE_F32, GSMRT_WTYPE_F16, GSMRT_WTYPE_Q8_0};
    uint32_t NE = 8, K = 2, n_tok = 5, E = 64, FE = 96;
    uint32_t ids[5 * 2] = {0, 7, 3, 4, 7, 1, 2, 2, 5, 6};
    for (int ti = 0; ti < 3; ti++) {
        struct test_weights up, down;
        weights_make(g, types[ti], NE * FE, E, 70 + ti, &up);     /* [NE][FE][E] */
        weights_make(g, types[ti], NE * E, FE, 80 + ti, &down);   /* [NE][E][FE] */
        float *x = malloc(n_tok * E * 4), *h = malloc(n_tok * K * FE * 4), *want = malloc(n_tok * K * E * 4);
        ref_fill_uniform(x, n_tok * E, 90, -1, 1);
        ref_moe_matvec(up.values, x, ids, h, n_tok, K, FE, E, 0);
        ref_moe_matvec(down.values, h, ids, want, n_tok, K, E, FE, 1);
        struct gsmrt_vk_buf xb, ib, hb, yb;
        struct gsmrt_vk_range xr, ir, hr, yr;
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, n_tok * E * 4, &xb, &xr);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, ids, sizeof ids, &ib, &ir);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, h, n_tok * K * FE * 4, &hb, &hr);   /* the down input */
        scratch(g, n_tok * K * E * 4, &yb, &yr);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_moe_matvec(g->rec, &down.w, NE, &hr, &ir, &yr, n_tok, K, true, &gpu_err));
        submit(g);
        float *got = dl(g, &yb, n_tok * K * E * 4);
        fail_if_nmse("moe down", got, want, n_tok * K * E, 1e-10);
        free(got);
        struct gsmrt_vk_buf hb2;
        struct gsmrt_vk_range hr2;
        scratch(g, n_tok * K * FE * 4, &hb2, &hr2);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_moe_matvec(g->rec, &up.w, NE, &xr, &ir, &hr2, n_tok, K, false, &gpu_err));
        submit(g);
        got = dl(g, &hb2, n_tok * K * FE * 4);
        fail_if_nmse("moe up", got, h, n_tok * K * FE, 1e-10);
        free(got);
        gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &hb);
        gsmrt_vk_buf_free(g->dev, &yb), gsmrt_vk_buf_free(g->dev, &hb2);
        weights_free(g, &up), weights_free(g, &down);
        free(x), free(h), free(want);
    }
}

static void test_moe_matvec(void **state) { for_each_variant(*state, moe_body); }

/* Experts bound a few at a time: a binding range smaller than the tensor. */
static void test_moe_matvec_chunked(void **state)
{
    struct gpu *g = *state;
    uint64_t saved = g->dev->binding_range;
    g->dev->binding_range = 3 * 96 * 64 * 4 + 64;   /* three F32 experts per chunk */
    for_each_variant(g, moe_body);
    g->dev->binding_range = saved;
}

static void test_moe_combine(void **state)
{
    struct gpu *g = *state;
    size_t n_tok = 7, K = 6, W = 129;
    float *w = malloc(n_tok * K * 4), *z = malloc(n_tok * K * W * 4), *want = malloc(n_tok * W * 4);
    ref_fill_uniform(w, n_tok * K, 1, 0, 1);
    ref_fill_uniform(z, n_tok * K * W, 2, -1, 1);
    ref_moe_combine(w, z, want, n_tok, K, W);
    struct gsmrt_vk_buf wb, zb, yb;
    struct gsmrt_vk_range wr, zr, yr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, w, n_tok * K * 4, &wb, &wr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, z, n_tok * K * W * 4, &zb, &zr);
    scratch(g, n_tok * W * 4, &yb, &yr);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_moe_combine(g->rec, &wr, &zr, &yr, (uint32_t)n_tok, (uint32_t)K, (uint32_t)W, &gpu_err));
    submit(g);
    float *got = dl(g, &yb, n_tok * W * 4);
    fail_if_nmse("moe_combine", got, want, n_tok * W, 1e-12);
    gsmrt_vk_buf_free(g->dev, &wb), gsmrt_vk_buf_free(g->dev, &zb), gsmrt_vk_buf_free(g->dev, &yb);
    free(w), free(z), free(want), free(got);
}

/* Cache store then attention, at several context lengths, decode (1 query)
 * and prefill (several causal queries), pages in scrambled order, with the
 * cache in either storage type. The store is checked bit-exactly against
 * the pool image tests/ref makes (F16: its own round-to-nearest-even); the
 * attention against ref_attn_mla over the values the pool holds, so F16
 * keeps the 1e-9 tolerance: the rounding is in both. */
static void attn_body_type(struct gpu *g, enum gsmrt_kv_type type)
{
    static const uint32_t lens[] = {1, 7, 129, 300, 1000};
    const uint32_t H = 5, KVL = 64, R = 16, ROW = KVL + R, P = 32, q_stride = 5 * 48 + 2;
    for (size_t li = 0; li < 5; li++)
        for (uint32_t n_tok = 1; n_tok <= 4; n_tok += 3) {
            uint32_t n_keys = lens[li] < n_tok ? n_tok : lens[li];
            uint32_t n_pages = (n_keys + P - 1) / P, n_slots = n_pages + 3;
            uint32_t *pages = malloc(n_pages * 4);
            for (uint32_t i = 0; i < n_pages; i++) pages[i] = (i * 7 + 2) % n_slots;   /* distinct: 7 coprime */
            /* distinctness needs gcd(7, n_slots) == 1 */
            if (n_slots % 7 == 0)
                for (uint32_t i = 0; i < n_pages; i++) pages[i] = n_pages - 1 - i;
            size_t n_vals = (size_t)n_slots * P * ROW, pool_bytes = kv_pool_bytes(n_vals, type);
            float *kv = calloc(n_vals, 4), *rows = malloc((size_t)n_keys * ROW * 4);
            ref_fill_uniform(rows, (size_t)n_keys * ROW, 100 + li, -1, 1);
            int32_t *all_pos = malloc(n_keys * 4);
            for (uint32_t p = 0; p < n_keys; p++) all_pos[p] = (int32_t)p;
            struct gsmrt_vk_buf kvb, pgb, rb, apb;
            struct gsmrt_vk_range kvr, pgr, rr, apr;
            kv_pool_upload(g, GSMRT_VK_ROLE_KV_HOT, kv, n_vals, type, &kvb, &kvr);
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, pages, n_pages * 4, &pgb, &pgr);
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, rows, (size_t)n_keys * ROW * 4, &rb, &rr);
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, all_pos, n_keys * 4, &apb, &apr);
            GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
            GPU_OK(gsmrt_k_kv_store(g->rec, &rr, &pgr, &apr, &kvr, type, n_keys, 0, ROW, ROW, P, &gpu_err));
            submit(g);
            for (uint32_t p = 0; p < n_keys; p++)
                memcpy(kv + ((size_t)pages[p / P] * P + p % P) * ROW, rows + (size_t)p * ROW, ROW * 4);
            void *stored = dl(g, &kvb, pool_bytes), *image = kv_pool_image(kv, n_vals, type);
            if (memcmp(stored, image, pool_bytes) != 0) fail_msg("kv_store (%s): cache differs", gsmrt_kv_type_name(type));
            free(stored), free(image);
            kv_pool_round(kv, n_vals, type);   /* what the kernels read */

            /* the last n_tok positions query, causally */
            int32_t qpos[4];
            for (uint32_t t = 0; t < n_tok; t++) qpos[t] = (int32_t)(n_keys - n_tok + t);
            float *qa = malloc(n_tok * H * KVL * 4), *qr = malloc(n_tok * q_stride * 4);
            ref_fill_uniform(qa, n_tok * H * KVL, 7, -1, 1);
            ref_fill_uniform(qr, n_tok * q_stride, 8, -1, 1);
            float scale = 1.0f / sqrtf(48.0f);
            float *want = malloc(n_tok * H * KVL * 4);
            ref_attn_mla(qa, qr, kv, pages, qpos, want, n_tok, H, KVL, R, q_stride, 48, 32, P, scale);
            struct gsmrt_vk_buf qab, qrb, qpb, partb, outb;
            struct gsmrt_vk_range qar, qrr, qpr, partr, outr;
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qa, n_tok * H * KVL * 4, &qab, &qar);
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qr, n_tok * q_stride * 4, &qrb, &qrr);
            upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qpos, n_tok * 4, &qpb, &qpr);
            scratch(g, (size_t)n_tok * H * gsmrt_k_attn_splits(n_keys) * (2 + KVL) * 4, &partb, &partr);
            scratch(g, n_tok * H * KVL * 4, &outb, &outr);
            struct gsmrt_k_attn p = {.n_tok = n_tok, .n_heads = H, .kv_lora = KVL, .rope_dim = R,
                                     .q_stride = q_stride, .q_head = 48, .q_off = 32, .page_size = P,
                                     .n_keys = n_keys, .scale = scale, .kv_type = type};
            GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
            GPU_OK(gsmrt_k_attn_mla(g->rec, &p, &qar, &qrr, &kvr, NULL, &pgr, &qpr, &partr, &outr, &gpu_err));
            submit(g);
            float *got = dl(g, &outb, n_tok * H * KVL * 4);
            char what[96];
            snprintf(what, sizeof what, "attention (%s cache) over %u keys, %u queries", gsmrt_kv_type_name(type),
                     n_keys, n_tok);
            fail_if_nmse(what, got, want, n_tok * H * KVL, 1e-9);
            free(got);
            gsmrt_vk_buf_free(g->dev, &kvb), gsmrt_vk_buf_free(g->dev, &pgb), gsmrt_vk_buf_free(g->dev, &rb);
            gsmrt_vk_buf_free(g->dev, &apb), gsmrt_vk_buf_free(g->dev, &qab), gsmrt_vk_buf_free(g->dev, &qrb);
            gsmrt_vk_buf_free(g->dev, &qpb), gsmrt_vk_buf_free(g->dev, &partb), gsmrt_vk_buf_free(g->dev, &outb);
            free(pages), free(kv), free(rows), free(all_pos), free(qa), free(qr), free(want);
        }
}

static void attn_body(struct gpu *g)
{
    attn_body_type(g, GSMRT_KV_F32);
    attn_body_type(g, GSMRT_KV_F16);
}

/* F16 rows are packed two to a word: an odd width is refused, not half written. */
static void test_kv_store_f16_odd_width(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_buf b;
    struct gsmrt_vk_range r;
    scratch(g, 4096, &b, &r);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    struct gsmrt_err e = {GSMRT_OK, ""};
    assert_int_equal(gsmrt_k_kv_store(g->rec, &r, &r, &r, &r, GSMRT_KV_F16, 1, 0, 79, 79, 32, &e),
                     GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(e.msg, "even width"));
    submit(g);
    gsmrt_vk_buf_free(g->dev, &b);
}

static void test_attention(void **state) { for_each_variant(*state, attn_body); }

/* Pages split over two pools (entries with the cold bit read the second
 * buffer, shaders/include/kv_tier.glsl) and one sequence's tokens in the
 * middle of a batch's buffers (tok0): decode and prefill against the
 * reference over the same rows in one flat cache. */
static void attn_tiers_batch_type(struct gpu *g, enum gsmrt_kv_type type)
{
    const uint32_t H = 4, KVL = 64, R = 16, ROW = KVL + R, P = 32, q_stride = 4 * 48, T = 9, tok0 = 3;
    const uint32_t n_keys = 700, n_pages = (n_keys + P - 1) / P, n_hot = 8, n_cold = n_pages;
    for (uint32_t n_tok = 1; n_tok <= 5; n_tok += 4) {
        /* page p: even pages cold (slot n_pages - 1 - p), odd pages hot while slots last */
        uint32_t *entries = malloc(n_pages * 4), *flat = malloc(n_pages * 4), hot_used = 0;
        for (uint32_t p = 0; p < n_pages; p++) {
            bool hot = p % 2 == 1 && hot_used < n_hot;
            uint32_t slot = hot ? hot_used++ : n_pages - 1 - p;
            entries[p] = hot ? slot : slot | 0x80000000u;
            flat[p] = hot ? slot : n_hot + slot;   /* the reference's cache: hot slots, then cold */
        }
        float *flat_kv = calloc((size_t)(n_hot + n_cold) * P * ROW, 4);
        ref_fill_uniform(flat_kv, (size_t)(n_hot + n_cold) * P * ROW, 31, -1, 1);
        kv_pool_round(flat_kv, (size_t)(n_hot + n_cold) * P * ROW, type);   /* exact in either type */
        int32_t pos[9] = {0};
        for (uint32_t t = 0; t < n_tok; t++) pos[tok0 + t] = (int32_t)(n_keys - n_tok + t);
        float *qa = malloc(T * H * KVL * 4), *qr = malloc(T * q_stride * 4), *want = malloc(n_tok * H * KVL * 4);
        ref_fill_uniform(qa, T * H * KVL, 32, -1, 1);
        ref_fill_uniform(qr, T * q_stride, 33, -1, 1);
        float scale = 1.0f / sqrtf(48.0f);
        ref_attn_mla(qa + tok0 * H * KVL, qr + tok0 * q_stride, flat_kv, flat, pos + tok0, want, n_tok, H, KVL, R,
                     q_stride, 48, 32, P, scale);
        struct gsmrt_vk_buf hb, cb, eb, qab, qrb, pb, partb, outb;
        struct gsmrt_vk_range hr, cr, er, qar, qrr, pr, partr, outr;
        kv_pool_upload(g, GSMRT_VK_ROLE_KV_HOT, flat_kv, (size_t)n_hot * P * ROW, type, &hb, &hr);
        kv_pool_upload(g, GSMRT_VK_ROLE_KV_COLD, flat_kv + (size_t)n_hot * P * ROW, (size_t)n_cold * P * ROW, type,
                       &cb, &cr);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, entries, n_pages * 4, &eb, &er);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qa, T * H * KVL * 4, &qab, &qar);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, qr, T * q_stride * 4, &qrb, &qrr);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, pos, T * 4, &pb, &pr);
        uint32_t splits = gsmrt_k_attn_splits(n_keys) + 1;   /* a batch's larger stride */
        scratch(g, (size_t)T * H * splits * (2 + KVL) * 4, &partb, &partr);
        scratch(g, T * H * KVL * 4, &outb, &outr);
        struct gsmrt_k_attn p = {n_tok, H, KVL, R, q_stride, 48, 32, P, n_keys, scale, tok0, splits, type};
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_attn_mla(g->rec, &p, &qar, &qrr, &hr, &cr, &er, &pr, &partr, &outr, &gpu_err));
        submit(g);
        float *got = dl(g, &outb, T * H * KVL * 4);
        char what[64];
        snprintf(what, sizeof what, "two-tier %s (%s cache) at tok0 3", n_tok == 1 ? "decode" : "prefill",
                 gsmrt_kv_type_name(type));
        fail_if_nmse(what, got + tok0 * H * KVL, want, n_tok * H * KVL, 1e-9);
        free(got);
        struct gsmrt_vk_buf *bufs[] = {&hb, &cb, &eb, &qab, &qrb, &pb, &partb, &outb};
        for (size_t i = 0; i < 8; i++) gsmrt_vk_buf_free(g->dev, bufs[i]);
        free(entries), free(flat), free(flat_kv), free(qa), free(qr), free(want);
    }
}

static void attn_tiers_batch_body(struct gpu *g)
{
    attn_tiers_batch_type(g, GSMRT_KV_F32);
    attn_tiers_batch_type(g, GSMRT_KV_F16);
}

static void test_attention_tiers_batch(void **state) { for_each_variant(*state, attn_tiers_batch_body); }

/* RMSNorm in place on the first 64 of every 80-float row (MLA's latent). */
static void test_rms_norm_strided_in_place(void **state)
{
    struct gpu *g = *state;
    size_t n_rows = 9, n = n_rows * 80;
    float *x = malloc(n * 4), w[64], *want = malloc(n * 4);
    ref_fill_uniform(x, n, 4, -2, 2);
    ref_fill_uniform(w, 64, 5, 0.5f, 1.5f);
    memcpy(want, x, n * 4);
    for (size_t r = 0; r < n_rows; r++) ref_rms_norm(x + r * 80, w, want + r * 80, 1, 64, 1e-6f);
    struct gsmrt_vk_buf xb, wb;
    struct gsmrt_vk_range xr, wr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, n * 4, &xb, &xr);
    upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, w, sizeof w, &wb, &wr);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_rms_norm_strided(g->rec, &xr, &wr, &xr, (uint32_t)n_rows, 64, 80, 80, 1e-6f, &gpu_err));
    submit(g);
    float *got = dl(g, &xb, n * 4);
    fail_if_nmse("strided rms_norm", got, want, n, 1e-10);
    for (size_t r = 0; r < n_rows; r++)
        if (memcmp(got + r * 80 + 64, x + r * 80 + 64, 16 * 4) != 0) fail_msg("rms_norm wrote past n_cols");
    gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &wb);
    free(x), free(want), free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_matvec),     cmocka_unit_test(test_moe_route),
        cmocka_unit_test(test_moe_matvec),      cmocka_unit_test(test_moe_matvec_chunked),
        cmocka_unit_test(test_moe_combine),     cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_tiers_batch), cmocka_unit_test(test_kv_store_f16_odd_width),
        cmocka_unit_test(test_rms_norm_strided_in_place),
    };
    return cmocka_run_group_tests_name("kernels_model", tests, gpu_setup, gpu_teardown);
}
