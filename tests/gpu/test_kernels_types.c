/* test_kernels_types.c -- every product kernel (matvec, matmul, per-head and
 * per-expert products) and the embedding gather, in every variant the device
 * runs, for every weight type of the table (runtime/gguf/wtype_table.def)
 * beyond the F32 / F16 / Q8_0 of test_kernels*.c, against an independent
 * reference: tests/data/wtypes/<TYPE>.gguf (tools/make_wtype_data.py) holds
 * weights quantised by llama.cpp's own quantiser and, beside them, their
 * dequantisation by gguf-py's numpy code. A table row without such a file
 * fails the test.
 *
 * Tolerances: the kernels see the same dequantised values as the reference
 * (scale x integer is exact in fp32 for these formats; the offset types round
 * once), and sum in fp32 in another order with the scale factored out of each
 * piece, so products differ by summation rounding only: NMSE 1e-10 (a single
 * wrong nibble, sign or scale bit gives 1e-4 or more). The gather is
 * elementwise: within 1e-6 of each value's magnitude. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "ref/ref.h"
#include "weights_fixture.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

#define ROWS 39   /* 3 heads or experts of 13 rows */
#define COLS 768  /* 3 super-blocks of 256 */
#define GROUPS 3
#define TOL 1e-10

struct typed {
    const struct gsmrt_wtype_info *type;
    struct gsmrt_gguf *file;
    struct gsmrt_vk_buf buf;
    struct gsmrt_k_weights w;
    const float *ref;   /* [ROWS][COLS], in the mapped file */
};

static struct typed CUR;   /* the type under test, for the variant bodies */

static void open_type(struct gpu *g, const struct gsmrt_wtype_info *t, struct typed *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/wtypes/%s.gguf", GSMRT_SOURCE_DIR, t->name);
    out->type = t;
    GPU_OK(gsmrt_gguf_open(path, NULL, &out->file, &gpu_err));
    const struct gsmrt_gguf_tensor *w = gsmrt_gguf_find_tensor(out->file, "w");
    const struct gsmrt_gguf_tensor *ref = gsmrt_gguf_find_tensor(out->file, "ref");
    if (!w || !ref) fail_msg("%s: tensors 'w' and 'ref' expected", path);
    if (w->type != t->ggml_type || w->ne[0] != COLS || w->ne[1] != ROWS || ref->type != 0 ||
        ref->ne[0] != COLS || ref->ne[1] != ROWS)
        fail_msg("%s: expected w %s [%d][%d] and ref F32 of the same shape", path, t->name, ROWS, COLS);
    assert_int_equal(w->data_bytes, gsmrt_wtype_row_bytes((enum gsmrt_wtype)t->ggml_type, COLS) * ROWS);
    upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, w->data, (size_t)w->data_bytes, &out->buf, NULL);
    out->w = (struct gsmrt_k_weights){
        .buf = &out->buf, .offset = 0, .type = (enum gsmrt_wtype)t->ggml_type, .n_rows = ROWS, .n_cols = COLS};
    out->ref = ref->data;
}

static void close_type(struct gpu *g, struct typed *t)
{
    gsmrt_vk_buf_free(g->dev, &t->buf);
    gsmrt_gguf_close(t->file);
}

static void check(const char *what, const float *got, const float *want, size_t n)
{
    double e = ref_nmse(got, want, n);
    if (!(e <= TOL))
        fail_msg("%s %s: NMSE %.3g above %.3g", CUR.type->name, what, e, TOL);
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

static void matvec_body(struct gpu *g)
{
    float x[COLS], want[ROWS];
    ref_fill_uniform(x, COLS, 11, -1, 1);
    ref_matvec(CUR.ref, x, want, ROWS, COLS);
    struct gsmrt_vk_buf xb, yb;
    struct gsmrt_vk_range xr, yr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, sizeof x, &xb, &xr);
    scratch(g, sizeof want, &yb, &yr);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_matvec(g->rec, &CUR.w, &xr, &yr, 0, &gpu_err));
    submit(g);
    float *got = dl(g, &yb, sizeof want);
    check("matvec", got, want, ROWS);
    free(got);
    gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &yb);
}

static void matmul_body(struct gpu *g)
{
    enum { T = 5 };
    float *x = malloc(T * COLS * 4), want[T * ROWS];
    ref_fill_uniform(x, T * COLS, 12, -1, 1);
    ref_matmul(CUR.ref, x, want, ROWS, COLS, T);
    struct gsmrt_vk_buf xb, yb;
    struct gsmrt_vk_range xr, yr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, T * COLS * 4, &xb, &xr);
    scratch(g, sizeof want, &yb, &yr);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_matmul(g->rec, &CUR.w, &xr, &yr, T, COLS, ROWS, 0, &gpu_err));
    submit(g);
    float *got = dl(g, &yb, sizeof want);
    check("matmul", got, want, T * ROWS);
    free(got), free(x);
    gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &yb);
}

static void head_body(struct gpu *g)
{
    /* 3 heads of 13 rows; x rows hold the heads' inputs COLS + 5 apart */
    enum { T = 2, R = ROWS / GROUPS, XH = COLS + 5, XS = GROUPS * XH + 1, YH = R + 2, YS = GROUPS * YH };
    float *x = malloc(T * XS * 4), *want = calloc(T * YS, 4);
    ref_fill_uniform(x, T * XS, 13, -1, 1);
    ref_head_matvec(CUR.ref, x, want, GROUPS, R, COLS, T, XS, XH, 3, YS, YH, 1);
    struct gsmrt_vk_buf xb, yb;
    struct gsmrt_vk_range xr, yr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, T * XS * 4, &xb, &xr);
    float *zero = calloc(T * YS, 4);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, zero, T * YS * 4, &yb, &yr);   /* the gaps stay 0, as in want */
    struct gsmrt_k_head_matvec p = {.n_heads = GROUPS, .n_tok = T, .x_stride = XS, .x_head = XH, .x_off = 3,
                                    .y_stride = YS, .y_head = YH, .y_off = 1};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_head_matvec(g->rec, &CUR.w, &p, &xr, &yr, &gpu_err));
    submit(g);
    float *got = dl(g, &yb, T * YS * 4);
    check("head_matvec", got, want, T * YS);
    free(got), free(x), free(want), free(zero);
    gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &yb);
}

static void moe_body(struct gpu *g)
{
    /* 3 experts of 13 rows, 2 of them per token; slot inputs shared (up) and per slot (down) */
    enum { T = 3, K = 2, R = ROWS / GROUPS };
    const uint32_t ids[T * K] = {2, 0, 1, 2, 0, 1};
    for (int per_slot = 0; per_slot <= 1; per_slot++) {
        size_t nx = (size_t)T * (per_slot ? K : 1) * COLS;
        float *x = malloc(nx * 4), want[T * K * R];
        ref_fill_uniform(x, nx, 14 + per_slot, -1, 1);
        ref_moe_matvec(CUR.ref, x, ids, want, T, K, R, COLS, per_slot);
        struct gsmrt_vk_buf xb, ib, yb;
        struct gsmrt_vk_range xr, ir, yr;
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, nx * 4, &xb, &xr);
        upload_buf(g, GSMRT_VK_ROLE_SCRATCH, ids, sizeof ids, &ib, &ir);
        scratch(g, sizeof want, &yb, &yr);
        GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
        GPU_OK(gsmrt_k_moe_matvec(g->rec, &CUR.w, GROUPS, &xr, &ir, &yr, T, K, per_slot, &gpu_err));
        submit(g);
        float *got = dl(g, &yb, sizeof want);
        check(per_slot ? "moe_matvec (slot inputs)" : "moe_matvec", got, want, T * K * R);
        free(got), free(x);
        gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &yb);
    }
}

static void products_body(struct gpu *g)
{
    matvec_body(g);
    matmul_body(g);
    head_body(g);
    moe_body(g);
}

static void get_rows_check(struct gpu *g)
{
    enum { N = 4 };
    const uint32_t ids[N] = {38, 0, 17, 38};
    float *want = malloc(N * COLS * 4);
    ref_get_rows(CUR.ref, ids, N, COLS, want);
    struct gsmrt_vk_buf ib, yb;
    struct gsmrt_vk_range ir, yr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, ids, sizeof ids, &ib, &ir);
    scratch(g, N * COLS * 4, &yb, &yr);
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    GPU_OK(gsmrt_k_get_rows(g->rec, &CUR.w, &ir, N, &yr, &gpu_err));
    submit(g);
    float *got = dl(g, &yb, N * COLS * 4);
    for (size_t i = 0; i < (size_t)N * COLS; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-6f * fmaxf(fabsf(want[i]), 1e-30f)))
            fail_msg("%s get_rows: value %zu (row %u, column %zu) is %.9g, reference %.9g", CUR.type->name, i,
                     ids[i / COLS], i % COLS, got[i], want[i]);
    free(got), free(want);
    gsmrt_vk_buf_free(g->dev, &ib), gsmrt_vk_buf_free(g->dev, &yb);
}

/* Every table row but the three of test_kernels*.c. */
static bool tested_elsewhere(uint32_t id)
{
    return id == GSMRT_WTYPE_F32 || id == GSMRT_WTYPE_F16 || id == GSMRT_WTYPE_Q8_0;
}

static void test_every_type(void **state)
{
    struct gpu *g = *state;
    int n_types = 0;
    const char *only = getenv("GSMRT_TEST_WTYPE");   /* one type, for debugging */
    for (uint32_t id = 0; id < 256; id++) {
        const struct gsmrt_wtype_info *t = gsmrt_wtype_find(id);
        if (!t || tested_elsewhere(id) || (only && *only && strcmp(only, t->name) != 0)) continue;
        open_type(g, t, &CUR);
        for_each_variant(g, products_body);
        get_rows_check(g);
        /* the weights bound as several chunks of rows, each start aligned: the
         * fewest rows whose bytes are a multiple of the offset alignment (and
         * at least 7), in a range that still holds x (COLS floats) */
        uint64_t saved = g->dev->binding_range, row_bytes = gsmrt_wtype_row_bytes(CUR.w.type, COLS);
        uint64_t align = g->dev->caps.min_storage_buffer_offset_alignment, rows = 1;
        while ((rows * row_bytes) % align != 0 || rows < 7) rows++;
        g->dev->binding_range = (rows * row_bytes > COLS * 4 ? rows * row_bytes : COLS * 4) + 64;
        assert_true(g->dev->binding_range < ROWS * row_bytes);   /* at least 2 chunks */
        for_each_variant(g, matvec_body);
        g->dev->binding_range = saved;
        close_type(g, &CUR);
        print_message("%-8s matvec, matmul, head_matvec, moe_matvec, get_rows: ok\n", t->name);
        n_types++;
    }
    assert_true(n_types > 0);
}

/* A known ggml type outside the table is refused by name, as unsupported,
 * by every record function: never run with another type's kernel. */
static void test_unsupported_refused(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_buf wb, xb, yb;
    struct gsmrt_vk_range xr, yr;
    static const uint8_t raw[4096];
    upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, raw, sizeof raw, &wb, NULL);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, raw, sizeof raw, &xb, &xr);
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, raw, sizeof raw, &yb, &yr);
    struct gsmrt_k_weights w = {.buf = &wb, .offset = 0, .type = (enum gsmrt_wtype)19 /* IQ1_S */,
                                .n_rows = 4, .n_cols = 256};
    struct gsmrt_k_head_matvec hp = {.n_heads = 2, .n_tok = 1, .x_stride = 256, .x_head = 0, .x_off = 0,
                                     .y_stride = 4, .y_head = 2, .y_off = 0};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    gsmrt_status st[5] = {
        gsmrt_k_matvec(g->rec, &w, &xr, &yr, 0, &gpu_err),
        gsmrt_k_matmul(g->rec, &w, &xr, &yr, 1, 256, 4, 0, &gpu_err),
        gsmrt_k_get_rows(g->rec, &w, &xr, 1, &yr, &gpu_err),
        gsmrt_k_head_matvec(g->rec, &w, &hp, &xr, &yr, &gpu_err),
        gsmrt_k_moe_matvec(g->rec, &w, 2, &xr, &xr, &yr, 1, 1, false, &gpu_err),
    };
    for (int i = 0; i < 5; i++) assert_int_equal(st[i], GSMRT_E_UNSUPPORTED);
    assert_non_null(strstr(gpu_err.msg, "IQ1_S"));
    submit(g);   /* nothing was recorded */
    gsmrt_vk_buf_free(g->dev, &wb), gsmrt_vk_buf_free(g->dev, &xb), gsmrt_vk_buf_free(g->dev, &yb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_unsupported_refused),
    };
    return cmocka_run_group_tests_name("kernels_types", tests, gpu_setup, gpu_teardown);
}
