/* test_gsm_calib.c -- calibration files: write and read back every field,
 * the model identity check (both identities named), hostile input (every
 * truncation, hand-made bad files), and named profiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/mem.h"
#include "gsm.h"

static const struct gsmrt_gsm_model_id TINY = {"deepseek2", "gsm-tiny-1", 2, 4, 64, 512};

/* 2 layers x 4 heads; layer 0: groups {0,2},{1,3}; layer 1: {0},{1,2,3}; 3 bands. */
static struct gsmrt_gsm_calib *make(void)
{
    struct gsmrt_gsm_calib *c;
    struct gsmrt_err e;
    assert_int_equal(gsmrt_gsm_calib_create(NULL, &TINY, 2, 3, &c, &e), GSMRT_OK);
    c->band_edges[1] = 16;
    c->band_edges[2] = 256;
    const uint32_t hg1[4] = {0, 1, 1, 1};
    memcpy(c->layers[1].head_group, hg1, sizeof hg1);
    for (uint32_t l = 0; l < 2; l++) {
        for (uint32_t g = 0; g < 2; g++) {
            struct gsmrt_gsm_group_policy *P = &c->layers[l].groups[g];
            P->sink_tokens = 4 * g;
            P->window = 64 + 32 * l;
            P->hot_pages = 3 + g + l;
            P->threshold = g ? 0.1f : 0.0f;
        }
        for (uint32_t h = 0; h < 4; h++) {
            struct gsmrt_gsm_head_stats *S = &c->layers[l].stats[h];
            S->band_mass[0] = 0.5f;
            S->band_mass[1] = 0.25f + 0.125f * (float)(h % 2);
            S->band_mass[2] = 1.0f - S->band_mass[0] - S->band_mass[1];
            S->sink_share = 0.1f * (float)h;
            S->entropy = 1.5f + (float)l;
        }
    }
    assert_int_equal(gsmrt_gsm_calib_validate(c, &e), GSMRT_OK);
    return c;
}

static void assert_same(const struct gsmrt_gsm_calib *a, const struct gsmrt_gsm_calib *b)
{
    assert_memory_equal(&a->model, &b->model, sizeof a->model);
    assert_int_equal(a->page_size, b->page_size);
    assert_int_equal(a->n_bands, b->n_bands);
    assert_memory_equal(a->band_edges, b->band_edges, a->n_bands * sizeof a->band_edges[0]);
    for (uint32_t l = 0; l < a->model.n_layer; l++) {
        const struct gsmrt_gsm_calib_layer *x = &a->layers[l], *y = &b->layers[l];
        assert_int_equal(x->n_groups, y->n_groups);
        assert_memory_equal(x->head_group, y->head_group, a->model.n_head * sizeof x->head_group[0]);
        assert_memory_equal(x->groups, y->groups, x->n_groups * sizeof x->groups[0]);
        assert_memory_equal(x->stats, y->stats, a->model.n_head * sizeof x->stats[0]);
    }
}

static void test_roundtrip(void **state)
{
    (void)state;
    struct gsmrt_gsm_calib *c = make(), *d = NULL;
    /* floats with no short decimal form must come back bit for bit */
    uint32_t seed = 12345;
    for (uint32_t h = 0; h < 4; h++) {
        struct gsmrt_gsm_head_stats *S = &c->layers[1].stats[h];
        seed = seed * 1664525u + 1013904223u;
        S->entropy = (float)(seed >> 8) / (float)(1u << 24) * 7.0f;
        seed = seed * 1664525u + 1013904223u;
        S->sink_share = (float)(seed >> 8) / (float)(1u << 24);
        S->band_mass[0] = S->sink_share / 3.0f;
        S->band_mass[1] = 1.0f / 3.0f;
        S->band_mass[2] = 1.0f - S->band_mass[0] - S->band_mass[1];
    }
    c->layers[0].groups[1].threshold = 1.0f / 3.0f;
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    char path[] = "/tmp/gsm_calib_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gsmrt_gsm_calib_save(c, path, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_calib_load(path, NULL, &TINY, &d, &e), GSMRT_OK);
    assert_same(c, d);
    gsmrt_gsm_calib_destroy(d);
    /* without an expected identity too */
    assert_int_equal(gsmrt_gsm_calib_load(path, NULL, NULL, &d, &e), GSMRT_OK);
    assert_same(c, d);
    gsmrt_gsm_calib_destroy(d);
    unlink(path);
    assert_int_equal(gsmrt_gsm_calib_load(path, NULL, &TINY, &d, &e), GSMRT_E_IO);
    assert_null(d);
    gsmrt_gsm_calib_destroy(c);
}

static void test_other_model(void **state)
{
    (void)state;
    struct gsmrt_gsm_calib *c = make(), *d = NULL;
    struct gsmrt_err e;
    char *text;
    assert_int_equal(gsmrt_gsm_calib_to_json(c, NULL, &text, &e), GSMRT_OK);
    struct gsmrt_gsm_model_id other = TINY;
    strcpy(other.name, "gsm-tiny-2");
    other.n_vocab = 1000;
    assert_int_equal(gsmrt_gsm_calib_parse(text, strlen(text), "calib.json", NULL, &other, &d, &e), GSMRT_E_FORMAT);
    assert_null(d);
    assert_string_equal(e.msg, "calib.json: calibration made for model \"gsm-tiny-1\" (deepseek2, 2 layers, 4 heads, "
                               "n_embd 64, n_vocab 512), not for the loaded model \"gsm-tiny-2\" (deepseek2, 2 "
                               "layers, 4 heads, n_embd 64, n_vocab 1000)");
    other = TINY;
    strcpy(other.architecture, "llama");
    assert_int_equal(gsmrt_gsm_calib_parse(text, strlen(text), "calib.json", NULL, &other, &d, &e), GSMRT_E_FORMAT);
    assert_int_equal(gsmrt_gsm_calib_check_model(c, &TINY, &e), GSMRT_OK);
    gsmrt_mem_free(NULL, text);
    gsmrt_gsm_calib_destroy(c);
}

static void test_truncations(void **state)
{
    (void)state;
    struct gsmrt_gsm_calib *c = make(), *d;
    struct gsmrt_err e;
    char *text;
    assert_int_equal(gsmrt_gsm_calib_to_json(c, NULL, &text, &e), GSMRT_OK);
    size_t n = strlen(text), n_ok = 0;
    /* the last '}' ends the object: every prefix shorter than that fails */
    size_t close_at = n;
    while (close_at > 0 && text[close_at - 1] != '}') close_at--;
    for (size_t len = 0; len <= n; len++) {
        char *buf = malloc(len ? len : 1);
        assert_non_null(buf);
        memcpy(buf, text, len);
        gsmrt_status st = gsmrt_gsm_calib_parse(buf, len, "calib.json", NULL, &TINY, &d, &e);
        if (len < close_at) {
            assert_int_equal(st, GSMRT_E_FORMAT);
            assert_null(d);
        } else {
            assert_int_equal(st, GSMRT_OK);
            gsmrt_gsm_calib_destroy(d);
            n_ok++;
        }
        free(buf);
    }
    assert_int_equal(n_ok, n - close_at + 1);
    gsmrt_mem_free(NULL, text);
    gsmrt_gsm_calib_destroy(c);
}

/* Replaces the first occurrence of `from` in text by `to` (a fresh string). */
static char *edit(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    assert_non_null(out);
    size_t head = (size_t)(at - text);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    return out;
}

struct mutation {
    const char *from, *to, *msg;
};

static void test_bad_files(void **state)
{
    (void)state;
    struct gsmrt_gsm_calib *c = make(), *d;
    struct gsmrt_err e;
    char *text;
    assert_int_equal(gsmrt_gsm_calib_to_json(c, NULL, &text, &e), GSMRT_OK);
    /* the compact forms of fields as cJSON_Print writes them */
    static const struct mutation muts[] = {
        {"\"version\":\t1", "\"version\":\t2", "calib.json: key \"version\": 2 out of range [1, 1]"},
        {"\"gsmrt-gsm-calibration\"", "\"something\"",
         "calib.json: key \"format\": \"something\", expected \"gsmrt-gsm-calibration\""},
        {"\"page_size\":\t32", "\"page_size\":\t48",
         "calib.json: key \"page_size\": 48 is not a power of two in [8, 256]"},
        {"\"page_size\":\t32", "\"page_sizes\":\t32", NULL},
        {"\"n_layer\":\t2", "\"n_layer\":\t3",   /* the identity is checked first */
         "calib.json: calibration made for model \"gsm-tiny-1\" (deepseek2, 3 layers, 4 heads, n_embd 64, n_vocab "
         "512), not for the loaded model \"gsm-tiny-1\" (deepseek2, 2 layers, 4 heads, n_embd 64, n_vocab 512)"},
        {"\"n_layer\":\t2", "\"n_layer\":\t2.5", "calib.json: key \"model.n_layer\": 2.5 is not an integer"},
        {"\"n_head\":\t4", "\"n_head\":\t5000", "calib.json: key \"model.n_head\": 5000 out of range [1, 1024]"},
        {"\"name\":\t\"gsm-tiny-1\"", "\"name\":\t7",
         "calib.json: key \"model.name\": expected a string, found a number"},
        {"\"head_group\":\t[0, 1, 0, 1]", "\"head_group\":\t[0, 1, 2, 1]",
         "calib.json: key \"layers[0].head_group[2]\": 2 out of range [0, 1]"},
        {"\"head_group\":\t[0, 1, 0, 1]", "\"head_group\":\t[0, 0, 0, 0]",
         "calib.json: key \"layers[0].head_group\": group 1 has no head"},
        {"\"head_group\":\t[0, 1, 0, 1]", "\"head_group\":\t[0, 1, 0]",
         "calib.json: key \"layers[0].head_group\": array of 3 elements, expected 4"},
        {"\"threshold\":\t0.1", "\"threshold\":\t1",
         "calib.json: key \"layers[0].groups[1].threshold\": 1 out of range [0, 1)"},
        {"\"window\":\t64", "\"window\":\t-1",
         "calib.json: key \"layers[0].groups[0].window\": -1 out of range [0, 16777216]"},
        {"\"window\":\t64", "\"widow\":\t64", NULL},
        {"\"sink_share\":\t0", "\"sink_share\":\t1.5",
         "calib.json: key \"layers[0].stats[0].sink_share\": 1.5 out of range [0, 1]"},
        {"\"band_mass\":\t[0.5, 0.25, 0.25]", "\"band_mass\":\t[0.5, 0.25, 0.5]",
         "calib.json: key \"layers[0].stats[0].band_mass\": sums to 1.25, expected 1 (+-0.001)"},
        {"\"band_mass\":\t[0.5, 0.25, 0.25]", "\"band_mass\":\t[0.5, 0.5]",
         "calib.json: key \"layers[0].stats[0].band_mass\": array of 2 elements, expected 3"},
        {"\"band_edges\":\t[0, 16, 256]", "\"band_edges\":\t[0, 256, 16]",
         "calib.json: key \"band_edges[2]\": 16 (edges start at 0 and increase, at most 16777216)"},
        {"\"band_edges\":\t[0, 16, 256]", "\"band_edges\":\t[]",
         "calib.json: key \"band_edges\": 0 bands, expected 1 to 16"},
        {"\"entropy\":\t1.5", "\"entropy\":\t\"high\"",
         "calib.json: key \"layers[0].stats[0].entropy\": expected a number, found a string"},
        {"\"layers\":\t[", "\"layers\":\t[3, ", "calib.json: key \"layers\": array of 3 elements, expected 2"},
        {"\"groups\":\t[", "\"groups\":\t[], \"x\": [", NULL},
    };
    for (size_t i = 0; i < sizeof muts / sizeof muts[0]; i++) {
        char *bad = edit(text, muts[i].from, muts[i].to);
        gsmrt_err_clear(&e);
        gsmrt_status st = gsmrt_gsm_calib_parse(bad, strlen(bad), "calib.json", NULL, &TINY, &d, &e);
        if (st != GSMRT_E_FORMAT || (muts[i].msg && strcmp(e.msg, muts[i].msg) != 0))
            print_error("case %zu (%s): %s\n", i, muts[i].to, e.msg);
        assert_int_equal(st, GSMRT_E_FORMAT);
        assert_null(d);
        if (muts[i].msg) assert_string_equal(e.msg, muts[i].msg);
        else assert_non_null(strstr(e.msg, "unknown key"));
        free(bad);
    }
    gsmrt_mem_free(NULL, text);
    gsmrt_gsm_calib_destroy(c);
}

static void test_create_args(void **state)
{
    (void)state;
    struct gsmrt_gsm_calib *c;
    struct gsmrt_err e;
    assert_int_equal(gsmrt_gsm_calib_create(NULL, &TINY, 5, 3, &c, &e), GSMRT_E_INVALID_ARGUMENT);   /* > heads */
    assert_null(c);
    assert_int_equal(gsmrt_gsm_calib_create(NULL, &TINY, 2, 17, &c, &e), GSMRT_E_INVALID_ARGUMENT);
    struct gsmrt_gsm_model_id z = TINY;
    z.n_layer = 0;
    assert_int_equal(gsmrt_gsm_calib_create(NULL, &z, 1, 1, &c, &e), GSMRT_E_INVALID_ARGUMENT);
    /* created defaults: heads round-robin, band edges 0, 16, 64 */
    assert_int_equal(gsmrt_gsm_calib_create(NULL, &TINY, 3, 3, &c, &e), GSMRT_OK);
    assert_int_equal(c->layers[1].head_group[3], 0);
    assert_int_equal(c->band_edges[1], 16);
    assert_int_equal(c->band_edges[2], 64);
    assert_int_equal(gsmrt_gsm_calib_validate(c, &e), GSMRT_OK);
    /* an invalid calibration is not written */
    c->layers[0].groups[1].threshold = 2;
    char *text = NULL;
    assert_int_equal(gsmrt_gsm_calib_to_json(c, NULL, &text, &e), GSMRT_E_FORMAT);
    assert_null(text);
    assert_string_equal(e.msg, "key \"layers[0].groups[1].threshold\": 2 out of range [0, 1)");
    gsmrt_gsm_calib_destroy(c);
}

static void test_profiles(void **state)
{
    (void)state;
    struct gsmrt_gsm_profiles set;
    struct gsmrt_err e;
    const struct gsmrt_gsm_calib *got;
    gsmrt_gsm_profiles_init(&set);
    assert_int_equal(gsmrt_gsm_profiles_pick(&set, NULL, &got, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_string_equal(e.msg, "profile \"\" not loaded (loaded: none)");
    struct gsmrt_gsm_calib *a = make(), *b = make(), *x = make();
    b->layers[0].groups[0].window = 999;
    assert_int_equal(gsmrt_gsm_profiles_add(&set, "chat", a, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_profiles_add(&set, "code-v2.1", b, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_profiles_add(&set, "chat", x, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_string_equal(e.msg, "profile \"chat\" is already loaded");
    assert_int_equal(gsmrt_gsm_profiles_add(&set, "bad name", x, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_gsm_profiles_add(&set, "", x, &e), GSMRT_E_INVALID_ARGUMENT);
    gsmrt_gsm_calib_destroy(x);   /* not taken on failure */
    assert_int_equal(gsmrt_gsm_profiles_pick(&set, "code-v2.1", &got, &e), GSMRT_OK);
    assert_ptr_equal(got, b);
    assert_int_equal(gsmrt_gsm_profiles_pick(&set, NULL, &got, &e), GSMRT_OK);
    assert_ptr_equal(got, a);
    assert_int_equal(gsmrt_gsm_profiles_pick(&set, "", &got, &e), GSMRT_OK);
    assert_ptr_equal(got, a);
    assert_int_equal(gsmrt_gsm_profiles_pick(&set, "prose", &got, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_null(got);
    assert_string_equal(e.msg, "profile \"prose\" not loaded (loaded: chat, code-v2.1)");
    /* load from a file, for the right and the wrong model */
    char path[] = "/tmp/gsm_profile_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gsmrt_gsm_calib_save(a, path, &e), GSMRT_OK);
    assert_int_equal(gsmrt_gsm_profiles_load(&set, "file", path, NULL, &TINY, &e), GSMRT_OK);
    struct gsmrt_gsm_model_id other = TINY;
    other.n_layer = 3;
    assert_int_equal(gsmrt_gsm_profiles_load(&set, "other", path, NULL, &other, &e), GSMRT_E_FORMAT);
    assert_true(strncmp(e.msg, path, strlen(path)) == 0);
    assert_int_equal(gsmrt_gsm_profiles_load(&set, "chat", path, NULL, &TINY, &e), GSMRT_E_INVALID_ARGUMENT);
    unlink(path);
    assert_int_equal(set.n, 3);
    gsmrt_gsm_profiles_deinit(&set);
    gsmrt_gsm_profiles_deinit(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),  cmocka_unit_test(test_other_model),
        cmocka_unit_test(test_truncations), cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_create_args), cmocka_unit_test(test_profiles),
    };
    return cmocka_run_group_tests_name("gsm_calib", tests, NULL, NULL);
}
