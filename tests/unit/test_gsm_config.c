/* test_gsm_config.c -- GSM configuration: defaults, the JSON reader (every
 * key wrong-typed and out of range, unknown and duplicate keys, syntax errors
 * with line:column, every truncation), the key=value setter, policy rules.
 * Expected values and messages are written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gsm.h"

static void test_defaults(void **state)
{
    (void)state;
    struct gsmrt_gsm_config c;
    gsmrt_gsm_config_defaults(&c);
    assert_true(c.enabled);
    assert_int_equal(c.num_groups, 8);
    assert_int_equal(c.page_size, 32);
    assert_true(c.gate_threshold == 0.05);
    assert_int_equal(c.low_freq_policy, GSMRT_GSM_LOW_FREQ_AUTO);
    assert_string_equal(c.calibration_path, "");
    assert_int_equal(c.warmup_steps, 8);
    assert_int_equal(c.min_context, 512);
    assert_int_equal(c.window, 128);
    assert_int_equal(c.sink_tokens, 4);
    assert_true(c.prefetch);
    assert_int_equal(c.hot_pages, 16);
    assert_true(c.ema_rate == 0.25);
    assert_true(c.promote_mass == 0.02 && c.demote_mass == 0.005 && c.prefetch_factor == 0.5);
    assert_int_equal(gsmrt_gsm_config_check(&c, NULL), GSMRT_OK);
}

static void test_low_freq_and_groups(void **state)
{
    (void)state;
    struct gsmrt_gsm_config c;
    gsmrt_gsm_config_defaults(&c);
    assert_int_equal(gsmrt_gsm_config_low_freq(&c, true), GSMRT_GSM_LOW_FREQ_KEEP);
    assert_int_equal(gsmrt_gsm_config_low_freq(&c, false), GSMRT_GSM_LOW_FREQ_SWAP);
    c.low_freq_policy = GSMRT_GSM_LOW_FREQ_SWAP;   /* forced on a unified device: stays swap */
    assert_int_equal(gsmrt_gsm_config_low_freq(&c, true), GSMRT_GSM_LOW_FREQ_SWAP);
    c.low_freq_policy = GSMRT_GSM_LOW_FREQ_KEEP;
    assert_int_equal(gsmrt_gsm_config_low_freq(&c, false), GSMRT_GSM_LOW_FREQ_KEEP);
    assert_string_equal(gsmrt_gsm_low_freq_name(GSMRT_GSM_LOW_FREQ_SWAP), "swap");
    /* the note: only for swap on a unified device */
    assert_null(gsmrt_gsm_config_low_freq_note(&c, true));   /* keep */
    c.low_freq_policy = GSMRT_GSM_LOW_FREQ_SWAP;
    assert_non_null(strstr(gsmrt_gsm_config_low_freq_note(&c, true), "no physical effect"));
    assert_null(gsmrt_gsm_config_low_freq_note(&c, false));
    c.low_freq_policy = GSMRT_GSM_LOW_FREQ_AUTO;
    assert_null(gsmrt_gsm_config_low_freq_note(&c, true));
    c.low_freq_policy = GSMRT_GSM_LOW_FREQ_KEEP;
    assert_int_equal(gsmrt_gsm_config_groups(&c, 4), 4);
    assert_int_equal(gsmrt_gsm_config_groups(&c, 16), 8);
}

static const char FULL[] = "{\n"
                           "  \"enabled\": false,\n"
                           "  \"num_groups\": 4,\n"
                           "  \"page_size\": 64,\n"
                           "  \"gate_threshold\": 0.1,\n"
                           "  \"low_freq_policy\": \"swap\",\n"
                           "  \"calibration_path\": \"models/calib.json\",\n"
                           "  \"warmup_steps\": 3,\n"
                           "  \"min_context\": 1024,\n"
                           "  \"window\": 256,\n"
                           "  \"sink_tokens\": 0,\n"
                           "  \"prefetch\": false,\n"
                           "  \"hot_pages\": 5,\n"
                           "  \"ema_rate\": 0.5,\n"
                           "  \"promote_mass\": 0.25,\n"
                           "  \"demote_mass\": 0.125,\n"
                           "  \"prefetch_factor\": 1\n"
                           "}\n";

static void test_parse_full(void **state)
{
    (void)state;
    struct gsmrt_gsm_config c;
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    gsmrt_gsm_config_defaults(&c);
    assert_int_equal(gsmrt_gsm_config_parse(FULL, strlen(FULL), "gsm.json", &c, &e), GSMRT_OK);
    assert_false(c.enabled);
    assert_int_equal(c.num_groups, 4);
    assert_int_equal(c.page_size, 64);
    assert_true(c.gate_threshold == 0.1);
    assert_int_equal(c.low_freq_policy, GSMRT_GSM_LOW_FREQ_SWAP);
    assert_string_equal(c.calibration_path, "models/calib.json");
    assert_int_equal(c.warmup_steps, 3);
    assert_int_equal(c.min_context, 1024);
    assert_int_equal(c.window, 256);
    assert_int_equal(c.sink_tokens, 0);
    assert_false(c.prefetch);
    assert_int_equal(c.hot_pages, 5);
    assert_true(c.ema_rate == 0.5 && c.promote_mass == 0.25 && c.demote_mass == 0.125 && c.prefetch_factor == 1);

    /* keys are optional: an empty object changes nothing; null clears the path */
    struct gsmrt_gsm_config d = c;
    assert_int_equal(gsmrt_gsm_config_parse("{}", 2, "gsm.json", &d, &e), GSMRT_OK);
    assert_memory_equal(&d, &c, sizeof c);
    assert_int_equal(gsmrt_gsm_config_parse("{\"calibration_path\": null}", 26, "gsm.json", &d, &e), GSMRT_OK);
    assert_string_equal(d.calibration_path, "");
}

struct bad_case {
    const char *json;
    const char *msg;   /* the whole message */
};

static const struct bad_case BAD[] = {
    {"{\"gate_threshold\": 1.5}", "gsm.json: key \"gate_threshold\": 1.5 out of range [0, 1)"},
    {"{\"gate_threshold\": 1}", "gsm.json: key \"gate_threshold\": 1 out of range [0, 1)"},
    {"{\"gate_threshold\": -0.01}", "gsm.json: key \"gate_threshold\": -0.01 out of range [0, 1)"},
    {"{\"gate_threshold\": \"0.1\"}", "gsm.json: key \"gate_threshold\": expected a number"},
    {"{\"enabled\": 1}", "gsm.json: key \"enabled\": expected true or false, found a number"},
    {"{\"prefetch\": \"yes\"}", "gsm.json: key \"prefetch\": expected true or false, found a string"},
    {"{\"num_groups\": 2.5}", "gsm.json: key \"num_groups\": 2.5 is not an integer"},
    {"{\"num_groups\": 0}", "gsm.json: key \"num_groups\": 0 out of range [1, 256]"},
    {"{\"num_groups\": 257}", "gsm.json: key \"num_groups\": 257 out of range [1, 256]"},
    {"{\"num_groups\": [8]}", "gsm.json: key \"num_groups\": expected an integer"},
    {"{\"page_size\": 48}", "gsm.json: key \"page_size\": 48 is not a power of two in [8, 64]"},
    {"{\"page_size\": 4}", "gsm.json: key \"page_size\": 4 out of range [8, 64]"},
    {"{\"page_size\": 512}", "gsm.json: key \"page_size\": 512 out of range [8, 64]"},
    /* the kernels take pages of at most 64 positions: the range says so (issue 12) */
    {"{\"page_size\": 128}", "gsm.json: key \"page_size\": 128 out of range [8, 64]"},
    {"{\"low_freq_policy\": \"disk\"}",
     "gsm.json: key \"low_freq_policy\": \"disk\" is not one of \"auto\", \"keep\", \"swap\""},
    {"{\"low_freq_policy\": 1}", "gsm.json: key \"low_freq_policy\": expected a string, found a number"},
    {"{\"calibration_path\": 7}", "gsm.json: key \"calibration_path\": expected a string, found a number"},
    {"{\"warmup_steps\": -1}", "gsm.json: key \"warmup_steps\": -1 out of range [0, 1e+06]"},
    {"{\"min_context\": 1e300}", "gsm.json: key \"min_context\": 1e+300 out of range [0, 1.67772e+07]"},
    {"{\"window\": true}", "gsm.json: key \"window\": expected an integer"},
    {"{\"sink_tokens\": 0.5}", "gsm.json: key \"sink_tokens\": 0.5 is not an integer"},
    {"{\"hot_pages\": 2000000}", "gsm.json: key \"hot_pages\": 2e+06 out of range [0, 1.04858e+06]"},
    {"{\"ema_rate\": 0}", "gsm.json: key \"ema_rate\": 0 out of range (0, 1]"},
    {"{\"ema_rate\": 1.01}", "gsm.json: key \"ema_rate\": 1.01 out of range (0, 1]"},
    {"{\"promote_mass\": 2}", "gsm.json: key \"promote_mass\": 2 out of range [0, 1]"},
    {"{\"demote_mass\": 0.5}", "gsm.json: key \"demote_mass\": 0.5 out of range [0, promote_mass = 0.02]"},
    {"{\"prefetch_factor\": 0}", "gsm.json: key \"prefetch_factor\": 0 out of range (0, 1]"},
    {"{\"dense_fallback\": -1}", "gsm.json: key \"dense_fallback\": -1 out of range [0, 1e+06]"},
    {"{\"gate_treshold\": 0.1}",
     "gsm.json: unknown key \"gate_treshold\" (known: enabled, num_groups, page_size, gate_threshold, "
     "low_freq_policy, calibration_path, warmup_steps, min_context, window, sink_tokens, prefetch, hot_pages, "
     "ema_rate, promote_mass, demote_mass, prefetch_factor, dense_fallback)"},
    {"{\"Window\": 3}", NULL},   /* keys are case-sensitive: unknown */
    {"{\"window\": 3, \"window\": 4}", "gsm.json: key \"window\" appears twice"},
    {"[1, 2]", "gsm.json: the top level must be a JSON object"},
    {"{\"window\": 3} x", "gsm.json: line 1, column 15: data after the JSON value"},
    {"{\"window\": 3}\n  }", "gsm.json: line 2, column 3: data after the JSON value"},
    {"{\n\n  \"window\": @\n}", "gsm.json: line 3, column 13: JSON syntax error"},
    {"", "gsm.json: line 1, column 1: JSON syntax error (unexpected end)"},
};

static void test_parse_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        struct gsmrt_gsm_config c, before;
        struct gsmrt_err e;
        gsmrt_err_clear(&e);
        gsmrt_gsm_config_defaults(&c);
        before = c;
        gsmrt_status st = gsmrt_gsm_config_parse(BAD[i].json, strlen(BAD[i].json), "gsm.json", &c, &e);
        if (st != GSMRT_E_FORMAT || (BAD[i].msg && strcmp(e.msg, BAD[i].msg) != 0))
            print_error("case %zu: %s\n  got  %s\n  want %s\n", i, BAD[i].json, e.msg, BAD[i].msg ? BAD[i].msg : "");
        assert_int_equal(st, GSMRT_E_FORMAT);
        if (BAD[i].msg) assert_string_equal(e.msg, BAD[i].msg);
        else assert_non_null(strstr(e.msg, "unknown key"));
        assert_memory_equal(&c, &before, sizeof c);   /* a failed load changes nothing */
    }
}

/* Every proper prefix of a valid file fails cleanly (exact-size copies, so
 * ASan sees any read past the end). */
static void test_truncations(void **state)
{
    (void)state;
    size_t n = strlen(FULL);
    size_t n_ok = 0;
    for (size_t len = 0; len < n; len++) {
        char *buf = malloc(len ? len : 1);
        assert_non_null(buf);
        memcpy(buf, FULL, len);
        struct gsmrt_gsm_config c;
        struct gsmrt_err e;
        gsmrt_gsm_config_defaults(&c);
        gsmrt_status st = gsmrt_gsm_config_parse(buf, len, "gsm.json", &c, &e);
        /* the prefix ending right after the closing brace is the whole object */
        if (st == GSMRT_OK) n_ok++;
        else assert_int_equal(st, GSMRT_E_FORMAT);
        free(buf);
    }
    assert_int_equal(n_ok, 1);   /* only FULL minus its final newline */
}

static void test_set(void **state)
{
    (void)state;
    struct gsmrt_gsm_config c;
    struct gsmrt_err e;
    gsmrt_gsm_config_defaults(&c);
    assert_int_equal(gsmrt_gsm_config_set(&c, "gate-threshold=0.1", &e), GSMRT_OK);
    assert_true(c.gate_threshold == 0.1);
    assert_int_equal(gsmrt_gsm_config_set(&c, "gate_threshold=0", &e), GSMRT_OK);
    assert_true(c.gate_threshold == 0);
    assert_int_equal(gsmrt_gsm_config_set(&c, "page-size=64", &e), GSMRT_OK);
    assert_int_equal(c.page_size, 64);
    assert_int_equal(gsmrt_gsm_config_set(&c, "low-freq-policy=swap", &e), GSMRT_OK);
    assert_int_equal(c.low_freq_policy, GSMRT_GSM_LOW_FREQ_SWAP);
    assert_int_equal(gsmrt_gsm_config_set(&c, "enabled=off", &e), GSMRT_OK);
    assert_false(c.enabled);
    assert_int_equal(gsmrt_gsm_config_set(&c, "prefetch=no", &e), GSMRT_OK);
    assert_false(c.prefetch);
    assert_int_equal(gsmrt_gsm_config_set(&c, "enabled=true", &e), GSMRT_OK);
    assert_true(c.enabled);
    assert_int_equal(gsmrt_gsm_config_set(&c, "calibration-path=/tmp/c.json", &e), GSMRT_OK);
    assert_string_equal(c.calibration_path, "/tmp/c.json");
    assert_int_equal(gsmrt_gsm_config_set(&c, "calibration_path=", &e), GSMRT_OK);
    assert_string_equal(c.calibration_path, "");
    assert_int_equal(gsmrt_gsm_config_set(&c, "min-context=0", &e), GSMRT_OK);
    assert_int_equal(c.min_context, 0);

    static const struct bad_case bad[] = {
        {"gate-threshold=1.5", "key \"gate_threshold\": 1.5 out of range [0, 1)"},
        {"gate_threshold=abc", "key \"gate_threshold\": \"abc\" is not a number"},
        {"gate_threshold=", "key \"gate_threshold\": \"\" is not a number"},
        {"gate_threshold=0.1x", "key \"gate_threshold\": \"0.1x\" is not a number"},
        {"gate_threshold=nan", "key \"gate_threshold\": \"nan\" is not a number"},
        {"page-size=48", "key \"page_size\": 48 is not a power of two in [8, 64]"},
        {"num-groups=3.5", "key \"num_groups\": 3.5 is not an integer"},
        {"window=-4", "key \"window\": -4 out of range [0, 1.67772e+07]"},
        {"enabled=maybe", "key \"enabled\": \"maybe\" is not a boolean (true/false)"},
        {"low-freq-policy=disk", "key \"low_freq_policy\": \"disk\" is not one of \"auto\", \"keep\", \"swap\""},
        {"demote-mass=0.9", "key \"demote_mass\": 0.9 out of range [0, promote_mass = 0.02]"},
        {"gate-treshold=0.1", "unknown key \"gate_treshold\""},
        {"gate_threshold", "expected key=value, got \"gate_threshold\""},
        {"=1", "bad key in \"=1\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gsmrt_gsm_config before = c;
        gsmrt_err_clear(&e);
        assert_int_equal(gsmrt_gsm_config_set(&c, bad[i].json, &e), GSMRT_E_INVALID_ARGUMENT);
        assert_int_equal(e.status, GSMRT_E_INVALID_ARGUMENT);
        assert_string_equal(e.msg, bad[i].msg);
        assert_memory_equal(&c, &before, sizeof c);
    }
    assert_int_equal(gsmrt_gsm_config_set(&c, NULL, NULL), GSMRT_E_INVALID_ARGUMENT);
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/gsm_config_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{ \"window\": 64, \"page_size\": 16 }";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    struct gsmrt_gsm_config c;
    struct gsmrt_err e;
    gsmrt_gsm_config_defaults(&c);
    assert_int_equal(gsmrt_gsm_config_load(path, NULL, &c, &e), GSMRT_OK);
    assert_int_equal(c.window, 64);
    assert_int_equal(c.page_size, 16);
    /* a bad value names the file */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("{\"gate_threshold\": 1.5}", f);
    fclose(f);
    assert_int_equal(gsmrt_gsm_config_load(path, NULL, &c, &e), GSMRT_E_FORMAT);
    char want[256];
    snprintf(want, sizeof want, "%s: key \"gate_threshold\": 1.5 out of range [0, 1)", path);
    assert_string_equal(e.msg, want);
    unlink(path);
    assert_int_equal(gsmrt_gsm_config_load(path, NULL, &c, &e), GSMRT_E_IO);
    assert_non_null(strstr(e.msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),   cmocka_unit_test(test_low_freq_and_groups),
        cmocka_unit_test(test_parse_full), cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_truncations), cmocka_unit_test(test_set),
        cmocka_unit_test(test_load_file),
    };
    return cmocka_run_group_tests_name("gsm_config", tests, NULL, NULL);
}
