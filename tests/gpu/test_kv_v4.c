/* test_kv_v4.c -- the paged cache the runtime builds for a deepseek4 file
 * (tests/data/v4/tiny-v4.gguf) at 8k, 128k and 1M positions: its device bytes
 * against the README's formula ("deepseek4" memory), evaluated here from the
 * file's configuration (tools/make_v4_gguf.py CONFIG); and GSM refusing the
 * V4 layout by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_fixture.h"
#include "config.h"
#include "model/gsm_decode.h"
#include "model/hparams.h"
#include "model/model.h"

enum { PAGE = 64 };

static struct gsmrt_gguf *gg;
static struct gsmrt_hparams *hp;

static int setup(void **state)
{
    int rc = gpu_setup(state);
    if (rc) return rc;
    const char *dir = getenv("GSMRT_V4_DIR");
    if (!dir) return 1;
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny-v4.gguf", dir);
    struct gsmrt_err e;
    hp = calloc(1, sizeof *hp);
    if (gsmrt_gguf_open(path, NULL, &gg, &e) != GSMRT_OK || gsmrt_hparams_load(gg, hp, &e) != GSMRT_OK) {
        fprintf(stderr, "%s: %s\n", path, e.msg);
        return 1;
    }
    return 0;
}

static int teardown(void **state)
{
    gsmrt_gguf_close(gg);
    free(hp);
    return gpu_teardown(state);
}

/* rows rounded up to whole pages, as fp32 bytes */
static uint64_t line_bytes(uint64_t rows, uint64_t row_floats)
{
    return (rows + PAGE - 1) / PAGE * PAGE * row_floats * 4;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The README's formula, for n positions, with the tiny file's numbers:
 * D = 64, dI = 64, n_swa = 16, a pass of P = 64 tokens, layers of ratio 0, 4,
 * 128, 4. Every layer: window min(n, n_swa + P) rows of D. CSA: ceil(n/4)
 * rows of D and of dI, four rings of min(n, 8 + P) rows, two of 2D and two
 * of 2dI. HCA: ceil(n/128) rows of D, two rings of min(n, 128 + P) rows of D. */
static uint64_t formula_bytes(uint64_t n)
{
    const uint64_t D = 64, DI = 64, SWA = 16, P = 64;
    uint64_t window = line_bytes(min_u64(n, SWA + P), D);
    uint64_t csa = window + line_bytes((n + 3) / 4, D) + line_bytes((n + 3) / 4, DI) +
                   2 * line_bytes(min_u64(n, 8 + P), 2 * D) + 2 * line_bytes(min_u64(n, 8 + P), 2 * DI);
    uint64_t hca = window + line_bytes((n + 127) / 128, D) + 2 * line_bytes(min_u64(n, 128 + P), D);
    return window + csa + hca + csa;
}

static void test_bytes_at_contexts(void **state)
{
    struct gpu *g = *state;
    const uint32_t ctx[] = {8192, 131072, 1048576};
    for (size_t i = 0; i < sizeof ctx / sizeof ctx[0]; i++) {
        struct gsmrt_kv_cache *kv;
        GPU_OK(gsmrt_kv_cache_create(g->dev, hp, ctx[i], PAGE, 0, 0, GSMRT_KV_F32, &kv, &gpu_err));
        uint64_t have = gsmrt_kv_cache_hot_bytes(kv), want = formula_bytes(ctx[i]);
        printf("deepseek4 tiny: %u positions: %.2f MiB of KV (formula %.2f MiB)\n", ctx[i], have / 1048576.0,
               want / 1048576.0);
        assert_int_equal(have, want);
        assert_int_equal(gsmrt_kv_cache_cold_bytes(kv), 0);
        assert_int_equal(kv->n_lines, 1 + 7 + 4 + 7);
        gsmrt_kv_cache_destroy(g->dev, kv);
    }
}

/* GSM's tier policy serves one tiered latent stream per layer: a V4 cache is
 * refused by name, not run half-gated. */
static void test_gsm_refused(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_kv_cache *kv;
    GPU_OK(gsmrt_kv_cache_create(g->dev, hp, 1024, PAGE, 0, 0, GSMRT_KV_F32, &kv, &gpu_err));
    struct gsmrt_gsm_config cfg;
    gsmrt_gsm_config_defaults(&cfg);
    struct gsmrt_gsm_decode *gsm = NULL;
    assert_int_equal(gsmrt_gsm_decode_create(g->dev, hp, kv, &cfg, true, NULL, &gsm, &gpu_err), GSMRT_E_UNSUPPORTED);
    assert_null(gsm);
    assert_non_null(strstr(gpu_err.msg, "layer 0's KV layout is not one tiered latent row per position"));
    gsmrt_kv_cache_destroy(g->dev, kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_at_contexts),
        cmocka_unit_test(test_gsm_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
