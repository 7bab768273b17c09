/* test_kv_layout.c -- the generic paged KV cache builds what an
 * architecture's KV layout (model/arch.h) describes: per layer several
 * streams of rows (role, width, positions per row, ring), per layer different.
 * The layout under test is shaped like deepseek4's (llama.cpp
 * src/llama-kv-cache-dsv4.*): a raw sliding window in every layer; ratio-4
 * layers add compressed rows, indexer rows and the compressor's state rings;
 * ratio-128 layers add compressed rows and their state ring. Expected sizes
 * are worked out by hand from those rules, not by the code under test. GSM
 * must refuse such a layout by name (it tiers the MLA layout only). Byte
 * counts at both storage types: 4 bytes a value in F32, 2 in F16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_fixture.h"
#include "config.h"
#include "model/gsm_decode.h"
#include "model/model.h"

enum { D = 64, IDX = 32, WIN = 128, PAGE = 32, CTX = 1000 };

/* layer 0: window only; layer 1: ratio 4 (compressed + indexer + states); layer 2: ratio 128 */
static void v4_like_layout(const struct gsmrt_hparams *hp, uint32_t il, struct gsmrt_kv_layer_layout *out)
{
    (void)hp;
    struct gsmrt_kv_stream window = {.role = GSMRT_KV_ROLE_WINDOW, .row_floats = D, .ratio = 1, .ring_rows = WIN};
    *out = (struct gsmrt_kv_layer_layout){.n_streams = 1, .stream = {window}};
    if (il == 1) {
        out->n_streams = 5;
        out->stream[1] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_COMPRESSED, .row_floats = D, .ratio = 4,
                                                  .tiered = true};
        out->stream[2] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_INDEXER, .row_floats = IDX, .ratio = 4};
        out->stream[3] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_STATE, .row_floats = 2 * D, .ratio = 1,
                                                  .ring_rows = 8};
        out->stream[4] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_STATE, .row_floats = 2 * IDX, .ratio = 1,
                                                  .ring_rows = 8};
    } else if (il == 2) {
        out->n_streams = 3;
        out->stream[1] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_COMPRESSED, .row_floats = D, .ratio = 128,
                                                  .tiered = true};
        out->stream[2] = (struct gsmrt_kv_stream){.role = GSMRT_KV_ROLE_STATE, .row_floats = D, .ratio = 1,
                                                  .ring_rows = 128};
    }
}

static const struct gsmrt_arch v4_like = {.name = "v4-like", .kv_layout = v4_like_layout};

static struct gsmrt_hparams hparams(void)
{
    return (struct gsmrt_hparams){.arch = &v4_like, .n_layer = 3, .n_head = 4, .n_vocab = 16, .n_embd = 8};
}

struct want_line {
    uint32_t layer, stream, row_floats, n_rows_max, n_pages_max;
};

static void lines_type(struct gpu *g, enum gsmrt_kv_type type, uint32_t value_bytes)
{
    struct gsmrt_hparams hp = hparams();
    struct gsmrt_kv_cache *kv;
    GPU_OK(gsmrt_kv_cache_create(g->dev, &hp, CTX, PAGE, 0, 0, type, &kv, &gpu_err));
    /* rows: window min(1000, 128) = 128 (4 pages); ratio 4: ceil(1000/4) = 250
     * (8 pages); rings of 8 (1 page) and 128 (4 pages); ratio 128: ceil(1000/128)
     * = 8 (1 page) */
    const struct want_line want[] = {
        {0, 0, D, 128, 4},
        {1, 0, D, 128, 4}, {1, 1, D, 250, 8}, {1, 2, IDX, 250, 8}, {1, 3, 2 * D, 8, 1}, {1, 4, 2 * IDX, 8, 1},
        {2, 0, D, 128, 4}, {2, 1, D, 8, 1},   {2, 2, D, 128, 4},
    };
    assert_int_equal(kv->n_lines, 9);
    uint32_t want_of[] = {0, 1, 6, 9};
    assert_memory_equal(kv->line_of, want_of, sizeof want_of);
    uint64_t hot = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct gsmrt_kv_line *l = gsmrt_kv_cache_line(kv, want[i].layer, want[i].stream);
        assert_non_null(l);
        assert_ptr_equal(l, &kv->lines[i]);
        assert_int_equal(l->s.row_floats, want[i].row_floats);
        assert_int_equal(l->n_rows_max, want[i].n_rows_max);
        assert_int_equal(l->n_pages_max, want[i].n_pages_max);
        assert_int_equal(l->n_hot_slots, want[i].n_pages_max);   /* dense: a slot per page */
        assert_int_equal(l->n_cold_slots, 0);
        hot += (uint64_t)want[i].n_pages_max * PAGE * want[i].row_floats * value_bytes;
    }
    assert_null(gsmrt_kv_cache_line(kv, 0, 1));
    assert_null(gsmrt_kv_cache_line(kv, 3, 0));
    assert_int_equal(gsmrt_kv_cache_hot_bytes(kv), hot);
    assert_int_equal(gsmrt_kv_cache_cold_bytes(kv), 0);
    assert_int_equal(kv->table_stride, 64);   /* the longest line has 8 pages */

    /* 300 positions: window 128 rows (4 pages), ratio 4: 75 rows (3 pages),
     * rings of 8: 1 page, ratio 128: 3 rows (1 page), ring of 128: 4 pages */
    GPU_OK(gsmrt_kv_cache_reserve(g->dev, kv, 300, &gpu_err));
    const uint32_t pages_300[] = {4, 4, 3, 3, 1, 1, 4, 1, 4};
    for (uint32_t i = 0; i < kv->n_lines; i++) {
        assert_int_equal(kv->lines[i].n_pages, pages_300[i]);
        for (uint32_t p = 0; p < pages_300[i]; p++) assert_int_equal(kv->entries[i * kv->table_stride + p], p);
    }
    /* each (layer, stream) binds its own pool and its own row of the table */
    struct gsmrt_vk_range h1, c1, t1, h2, c2, t2;
    GPU_OK(gsmrt_kv_cache_bind(g->dev, kv, 1, 2, &h1, &c1, &t1, &gpu_err));
    GPU_OK(gsmrt_kv_cache_bind(g->dev, kv, 2, 1, &h2, &c2, &t2, &gpu_err));
    assert_int_equal(h1.size, 8 * PAGE * IDX * value_bytes);
    assert_int_equal(h2.size, 1 * PAGE * D * value_bytes);
    assert_int_equal(t2.offset - t1.offset, (7 - 3) * 64 * 4);   /* lines 3 and 7 */
    assert_int_equal(gsmrt_kv_cache_bind(g->dev, kv, 0, 1, &h1, &c1, &t1, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "layer 0 has no stream 1"));
    gsmrt_kv_cache_destroy(g->dev, kv);
}

static void test_lines(void **state)
{
    lines_type(*state, GSMRT_KV_F32, 4);
    lines_type(*state, GSMRT_KV_F16, 2);
}

/* Tiered slots apply to tiered streams only; the others stay dense. */
static void tiered_slots_type(struct gpu *g, enum gsmrt_kv_type type, uint32_t value_bytes)
{
    struct gsmrt_hparams hp = hparams();
    struct gsmrt_kv_cache *kv;
    GPU_OK(gsmrt_kv_cache_create(g->dev, &hp, CTX, PAGE, 2, 6, type, &kv, &gpu_err));
    for (uint32_t i = 0; i < kv->n_lines; i++) {
        const struct gsmrt_kv_line *l = &kv->lines[i];
        bool tiered = l->s.role == GSMRT_KV_ROLE_COMPRESSED;
        assert_int_equal(l->managed, tiered);
        assert_int_equal(l->n_hot_slots, tiered ? 2 : l->n_pages_max);
        assert_int_equal(l->n_cold_slots, tiered ? 6 : 0);
    }
    /* hot + cold bytes: two tiered lines (ratio 4 and 128), width D */
    uint64_t page = (uint64_t)PAGE * D * value_bytes;
    assert_int_equal(gsmrt_kv_cache_cold_bytes(kv), 2 * 6 * page);
    /* GSM tiers the MLA layout only: this one is refused, by layer */
    struct gsmrt_gsm_config cfg;
    gsmrt_gsm_config_defaults(&cfg);
    struct gsmrt_gsm_decode *gsm = NULL;
    assert_int_equal(gsmrt_gsm_decode_create(g->dev, &hp, kv, &cfg, true, NULL, &gsm, &gpu_err), GSMRT_E_UNSUPPORTED);
    assert_null(gsm);
    assert_non_null(strstr(gpu_err.msg, "layer 0's KV layout is not one tiered latent row per position"));
    gsmrt_kv_cache_destroy(g->dev, kv);
}

static void test_tiered_slots(void **state)
{
    tiered_slots_type(*state, GSMRT_KV_F32, 4);
    tiered_slots_type(*state, GSMRT_KV_F16, 2);
}

/* A layout with a zero-width stream is refused with the architecture's name. */
static void bad_layout(const struct gsmrt_hparams *hp, uint32_t il, struct gsmrt_kv_layer_layout *out)
{
    (void)hp;
    *out = (struct gsmrt_kv_layer_layout){.n_streams = 1, .stream = {{.row_floats = il == 1 ? 0 : 8, .ratio = 1}}};
}

static void test_bad_layout(void **state)
{
    struct gpu *g = *state;
    const struct gsmrt_arch bad = {.name = "broken", .kv_layout = bad_layout};
    struct gsmrt_hparams hp = hparams();
    hp.arch = &bad;
    struct gsmrt_kv_cache *kv = NULL;
    assert_int_equal(gsmrt_kv_cache_create(g->dev, &hp, CTX, PAGE, 0, 0, GSMRT_KV_F32, &kv, &gpu_err),
                     GSMRT_E_INVALID_ARGUMENT);
    assert_null(kv);
    assert_non_null(strstr(gpu_err.msg, "broken KV layout: layer 1 stream 0 has rows of 0 floats"));
}

/* An F16 cache packs two values a word: a layout with an odd row width is
 * refused by name (F32 takes it). */
static void odd_layout(const struct gsmrt_hparams *hp, uint32_t il, struct gsmrt_kv_layer_layout *out)
{
    (void)hp;
    *out = (struct gsmrt_kv_layer_layout){.n_streams = 1, .stream = {{.row_floats = il == 2 ? 9 : 8, .ratio = 1}}};
}

static void test_odd_width_f16(void **state)
{
    struct gpu *g = *state;
    const struct gsmrt_arch odd = {.name = "odd", .kv_layout = odd_layout};
    struct gsmrt_hparams hp = hparams();
    hp.arch = &odd;
    struct gsmrt_kv_cache *kv = NULL;
    assert_int_equal(gsmrt_kv_cache_create(g->dev, &hp, CTX, PAGE, 0, 0, GSMRT_KV_F16, &kv, &gpu_err),
                     GSMRT_E_UNSUPPORTED);
    assert_null(kv);
    assert_non_null(strstr(gpu_err.msg, "odd KV layout: layer 2 stream 0 has rows of 9 floats"));
    assert_non_null(strstr(gpu_err.msg, "f32"));
    GPU_OK(gsmrt_kv_cache_create(g->dev, &hp, CTX, PAGE, 0, 0, GSMRT_KV_F32, &kv, &gpu_err));
    gsmrt_kv_cache_destroy(g->dev, kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_tiered_slots),
        cmocka_unit_test(test_bad_layout),
        cmocka_unit_test(test_odd_width_f16),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
