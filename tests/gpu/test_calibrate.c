/* test_calibrate.c -- GSM calibration through the API on the bundled model:
 * a run over a few hundred tokens of the bundled dialogues writes a file the
 * strict loader (gsm/calib_file.c) accepts for this model, with the asked
 * number of groups, every head in one, band masses summing to 1, and the same
 * bytes when run again (k-means is seeded); a file edited to name another
 * model is GSMRT_E_FORMAT naming the file and the key, as a profile and as a
 * session's calibration_path; profiles load, and an unknown name lists the
 * loaded ones; bad arguments are statuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "api_internal.h"
#include "gsm.h"
#include "gsmrt.h"

#ifndef GSMRT_SOURCE_DIR
#define GSMRT_SOURCE_DIR "."
#endif

static int n_errors;

static void count_errors(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level == GSMRT_LOG_ERROR) {
        n_errors++;
        fprintf(stderr, "gsmrt error: %s\n", msg);
    }
}

struct fx {
    gsmrt_context *ctx;
    gsmrt_model *model;
    char dir[64], data[128], calib[128], other[128];
    int n_progress;
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (s) s[n] = '\0';
    if (len) *len = (size_t)n;
    return s;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void on_progress(void *user, const char *stage, float fraction)
{
    struct fx *x = user;
    assert_string_equal(stage, "calibration");
    assert_true(fraction > 0 && fraction <= 1);
    x->n_progress++;
}

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof *x);
    snprintf(x->dir, sizeof x->dir, "/tmp/gsmrt-calib-XXXXXX");
    if (!mkdtemp(x->dir)) return -1;
    snprintf(x->data, sizeof x->data, "%s/data.txt", x->dir);
    snprintf(x->calib, sizeof x->calib, "%s/calib.json", x->dir);
    snprintf(x->other, sizeof x->other, "%s/other.json", x->dir);
    /* the first dialogue turns of the bundled calibration text: ~350 tokens */
    char *all = slurp(GSMRT_SOURCE_DIR "/models/calib-dialogues.txt", NULL);
    if (!all) return -1;
    all[1400] = '\0';
    spit(x->data, all);
    free(all);
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.log_cb = count_errors;
    cp.pipeline_cache_path = "";
    char err[512];
    if (gsmrt_context_create(&cp, &x->ctx, err, sizeof err) != GSMRT_OK) {
        fprintf(stderr, "context: %s\n", err);
        return -1;
    }
    if (gsmrt_model_load(x->ctx, GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf", NULL, &x->model) != GSMRT_OK) {
        fprintf(stderr, "model: %s\n", gsmrt_context_last_error(x->ctx));
        return -1;
    }
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    gsmrt_model_destroy(x->model);
    gsmrt_context_destroy(x->ctx);
    remove(x->data), remove(x->calib), remove(x->other);
    rmdir(x->dir);
    free(x);
    return n_errors ? -1 : 0;
}

static gsmrt_status calibrate(struct fx *x, const char *out)
{
    gsmrt_calibrate_params p;
    gsmrt_calibrate_params_init(&p, sizeof p);
    p.data_path = x->data;
    p.n_groups = 3;
    p.n_ctx = 128;   /* several windows from a short text */
    p.progress = on_progress;
    p.progress_user = x;
    return gsmrt_model_calibrate(x->model, &p, out);
}

static void test_calibrate_and_load(void **state)
{
    struct fx *x = *state;
    size_t n_tok = 0;
    char *text = slurp(x->data, NULL);
    assert_int_equal(gsmrt_model_tokenize(x->model, text, strlen(text), false, true, NULL, 0, &n_tok), GSMRT_OK);
    free(text);
    assert_true(n_tok > 200 && n_tok < 600);
    assert_int_equal(calibrate(x, x->calib), GSMRT_OK);
    assert_int_equal(x->n_progress, (int)((n_tok + 126) / 127));   /* BOS + 127 text tokens per window */

    struct gsmrt_gsm_model_id id;
    gsmrt_api_model_id(x->model, &id);
    assert_string_equal(id.name, "gsm-tiny");
    struct gsmrt_gsm_calib *c;
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (gsmrt_gsm_calib_load(x->calib, NULL, &id, &c, &err) != GSMRT_OK) fail_msg("%s", err.msg);
    assert_int_equal(c->model.n_layer, 4);
    assert_int_equal(c->model.n_head, 8);
    assert_int_equal(c->page_size, 32);
    /* bands 0, 8, 16, 32, 64 below the window of 128 */
    assert_int_equal(c->n_bands, 5);
    assert_int_equal(c->band_edges[4], 64);
    for (uint32_t l = 0; l < 4; l++) {
        const struct gsmrt_gsm_calib_layer *L = &c->layers[l];
        assert_int_equal(L->n_groups, 3);
        uint32_t used[3] = {0};
        for (uint32_t h = 0; h < 8; h++) {
            assert_true(L->head_group[h] < 3);
            used[L->head_group[h]]++;
            double sum = 0;
            for (uint32_t b = 0; b < c->n_bands; b++) sum += L->stats[h].band_mass[b];
            if (fabs(sum - 1.0) > 1e-4) fail_msg("layer %u head %u: band masses sum to %.6f", l, h, sum);
            assert_true(L->stats[h].sink_share > 0 && L->stats[h].sink_share <= 1);
            assert_true(L->stats[h].entropy > 0 && L->stats[h].entropy < 5.0);   /* ln 128 = 4.85 */
        }
        for (uint32_t g = 0; g < 3; g++) {
            assert_true(used[g] > 0);
            assert_true(L->groups[g].window <= 64);   /* a window is a band edge */
            assert_true(L->groups[g].threshold == 0.05f);
        }
    }
    gsmrt_gsm_calib_destroy(c);

    /* the same input gives the same file */
    assert_int_equal(calibrate(x, x->other), GSMRT_OK);
    char *a = slurp(x->calib, NULL), *b = slurp(x->other, NULL);
    assert_string_equal(a, b);
    free(a), free(b);
}

static void test_other_model(void **state)
{
    struct fx *x = *state;
    char *text = slurp(x->calib, NULL);
    assert_non_null(text);
    char *name = strstr(text, "\"gsm-tiny\"");
    assert_non_null(name);
    memcpy(name, "\"gsm-huge\"", 10);
    spit(x->other, text);
    free(text);
    /* as a profile */
    assert_int_equal(gsmrt_model_load_profile(x->model, "other", x->other), GSMRT_E_FORMAT);
    const char *msg = gsmrt_context_last_error(x->ctx);
    if (!strstr(msg, x->other) || !strstr(msg, "key \"model\"") || !strstr(msg, "gsm-huge") || !strstr(msg, "gsm-tiny"))
        fail_msg("message: %s", msg);
    /* as a session's calibration */
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    char settings[256];
    snprintf(settings, sizeof settings, "calibration_path=%s", x->other);
    sp.gsm_settings = settings;
    gsmrt_session *s = NULL;
    assert_int_equal(gsmrt_session_create(x->model, &sp, &s), GSMRT_E_FORMAT);
    assert_null(s);
    msg = gsmrt_context_last_error(x->ctx);
    if (!strstr(msg, x->other) || !strstr(msg, "key \"model\"")) fail_msg("message: %s", msg);
    /* the right file: the session keeps it */
    snprintf(settings, sizeof settings, "calibration_path=%s", x->calib);
    assert_int_equal(gsmrt_session_create(x->model, &sp, &s), GSMRT_OK);
    assert_non_null(s->calib);
    assert_int_equal(s->calib->layers[0].n_groups, 3);
    gsmrt_session_destroy(s);
    /* a missing file is an I/O error naming it */
    snprintf(settings, sizeof settings, "calibration_path=%s/none.json", x->dir);
    assert_int_equal(gsmrt_session_create(x->model, &sp, &s), GSMRT_E_IO);
    assert_non_null(strstr(gsmrt_context_last_error(x->ctx), "none.json"));
}

static void test_profiles(void **state)
{
    struct fx *x = *state;
    struct gsmrt_err err = {GSMRT_OK, ""};
    const struct gsmrt_gsm_calib *c = (const void *)1;
    assert_int_equal(gsmrt_api_pick_profile(x->model, NULL, &c, &err), GSMRT_OK);   /* none asked for */
    assert_null(c);
    assert_int_equal(gsmrt_api_pick_profile(x->model, "chat", &c, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "loaded: none"));
    assert_int_equal(gsmrt_model_load_profile(x->model, "chat", x->calib), GSMRT_OK);
    assert_int_equal(gsmrt_model_load_profile(x->model, "code.v2", x->calib), GSMRT_OK);
    assert_int_equal(gsmrt_model_load_profile(x->model, "chat", x->calib), GSMRT_E_INVALID_ARGUMENT);   /* taken */
    assert_int_equal(gsmrt_model_load_profile(x->model, "bad name", x->calib), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_model_load_profile(x->model, NULL, x->calib), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_api_pick_profile(x->model, "code.v2", &c, &err), GSMRT_OK);
    assert_non_null(c);
    assert_int_equal(c->layers[3].n_groups, 3);
    assert_int_equal(gsmrt_api_pick_profile(x->model, "prose", &c, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_null(c);
    if (!strstr(err.msg, "\"prose\"") || !strstr(err.msg, "loaded: chat, code.v2")) fail_msg("message: %s", err.msg);
}

static void test_bad_arguments(void **state)
{
    struct fx *x = *state;
    gsmrt_calibrate_params p;
    gsmrt_calibrate_params_init(&p, sizeof p);
    assert_true(p.threshold == 0.05f && p.n_groups == 0 && p.n_ctx == 0 && p.max_tokens == 0);
    assert_int_equal(gsmrt_model_calibrate(NULL, &p, x->calib), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_model_calibrate(x->model, NULL, x->calib), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, x->calib), GSMRT_E_INVALID_ARGUMENT);   /* no data */
    p.data_path = x->data;
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, NULL), GSMRT_E_INVALID_ARGUMENT);
    p.n_groups = 9;   /* more than the 8 heads */
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, x->calib), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gsmrt_context_last_error(x->ctx), "n_groups 9"));
    p.n_groups = 0;
    p.threshold = 1.0f;
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, x->calib), GSMRT_E_INVALID_ARGUMENT);
    p.threshold = 0.05f;
    p.n_ctx = 8;
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, x->calib), GSMRT_E_INVALID_ARGUMENT);
    p.n_ctx = 0;
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.txt", x->dir);
    p.data_path = missing;
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, x->calib), GSMRT_E_IO);
    assert_non_null(strstr(gsmrt_context_last_error(x->ctx), "missing.txt"));
    /* an unwritable output leaves nothing behind and says which file */
    p.data_path = x->data;
    p.max_tokens = 20;
    char bad_out[160];
    snprintf(bad_out, sizeof bad_out, "%s/no/such/dir.json", x->dir);
    assert_int_equal(gsmrt_model_calibrate(x->model, &p, bad_out), GSMRT_E_IO);
    assert_non_null(strstr(gsmrt_context_last_error(x->ctx), "dir.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calibrate_and_load),
        cmocka_unit_test(test_other_model),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("calibrate", tests, setup, teardown);
}
