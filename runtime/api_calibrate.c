/* api_calibrate.c -- GSM calibration and profiles in the public API
 * (gsmrt_model_calibrate, gsmrt_model_load_profile) and the model identity
 * every calibration file is checked against. The run itself is
 * model/calibrate.c; the file format and the planning are gsm/. */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "base/file.h"
#include "gsm.h"
#include "model/calibrate.h"

void gsmrt_api_model_id(const gsmrt_model *m, struct gsmrt_gsm_model_id *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->architecture, sizeof id->architecture, "%s", m->hp.arch->name);
    snprintf(id->name, sizeof id->name, "%s", m->name[0] ? m->name : "unnamed");
    id->n_layer = m->hp.n_layer;
    id->n_head = m->hp.n_head;
    id->n_embd = m->hp.n_embd;
    id->n_vocab = m->hp.n_vocab;
}

gsmrt_status gsmrt_api_load_calib(const gsmrt_model *m, const char *path, struct gsmrt_gsm_calib **out,
                                  struct gsmrt_err *err)
{
    *out = NULL;
    struct gsmrt_gsm_model_id id;
    gsmrt_api_model_id(m, &id);
    struct gsmrt_gsm_calib *c;
    gsmrt_status st = gsmrt_gsm_calib_load(path, m->ctx->a, NULL, &c, err);   /* messages name the file */
    if (st != GSMRT_OK) return st;
    st = gsmrt_gsm_calib_check_model(c, &id, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "%s: key \"model\": ", path);
        gsmrt_gsm_calib_destroy(c);
        return st;
    }
    *out = c;
    return GSMRT_OK;
}

gsmrt_status gsmrt_api_pick_profile(gsmrt_model *m, const char *name, const struct gsmrt_gsm_calib **out,
                                    struct gsmrt_err *err)
{
    *out = NULL;
    if (!name || !*name) return GSMRT_OK;
    return gsmrt_gsm_profiles_pick(&m->profiles, name, out, err);
}

void gsmrt_calibrate_params_init(gsmrt_calibrate_params *p, size_t size)
{
    gsmrt_calibrate_params d;
    memset(&d, 0, sizeof d);
    d.threshold = 0.05f;
    if (!p || size < sizeof(uint32_t)) return;
    memcpy(p, &d, size < sizeof d ? size : sizeof d);
    p->struct_size = (uint32_t)size;
}

/* The calibration text: a regular file (never blocking on a FIFO), at most
 * GSMRT_TEXT_FILE_MAX_BYTES, with no NUL byte (it would cut the text short). */
static gsmrt_status slurp(const gsmrt_allocator *a, const char *path, char **out, size_t *len, struct gsmrt_err *err)
{
    gsmrt_status st = gsmrt_file_read_all(a, path, GSMRT_TEXT_FILE_MAX_BYTES, true, out, len, err);
    if (st != GSMRT_OK) gsmrt_err_prefix(err, "calibration text: ");
    return st;
}

gsmrt_status gsmrt_model_calibrate(gsmrt_model *m, const gsmrt_calibrate_params *params, const char *out_path)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (!m) return GSMRT_E_INVALID_ARGUMENT;
    gsmrt_context *ctx = m->ctx;
    gsmrt_calibrate_params p;
    gsmrt_calibrate_params_init(&p, sizeof p);
    if (params && params->struct_size >= sizeof(uint32_t))
        memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);
    const struct gsmrt_hparams *hp = &m->hp;
    uint32_t ctx_max = hp->n_ctx_train ? hp->n_ctx_train : 1024;
    if (!params || params->struct_size < sizeof(uint32_t) || !out_path || !p.data_path)
        return gsmrt_api_fail(ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT,
                                            "calibrate: params (with struct_size and data_path) and out_path are "
                                            "required"));
    uint32_t n_groups = p.n_groups ? p.n_groups : (hp->n_head < 8 ? hp->n_head : 8);
    uint32_t n_ctx = p.n_ctx ? p.n_ctx : (ctx_max < 1024 ? ctx_max : 1024);
    if (n_groups > hp->n_head || n_ctx < 16 || n_ctx > ctx_max || !(p.threshold >= 0 && p.threshold < 1))
        return gsmrt_api_fail(ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT,
                                            "calibrate: n_groups %u (1..%u, the heads), n_ctx %u (16..%u), "
                                            "threshold %g ([0, 1))",
                                            n_groups, hp->n_head, n_ctx, ctx_max, (double)p.threshold));
    char *text = NULL;
    size_t len = 0;
    struct gsmrt_tokens toks = {NULL, 0, 0};
    struct gsmrt_gsm_calib *c = NULL;
    gsmrt_status st = slurp(ctx->a, p.data_path, &text, &len, &err);
    if (st == GSMRT_OK) {
        /* no BOS here: calibrate.c puts one in front of every window */
        st = gsmrt_tokenizer_encode(m->tok, text, len, false, true, &toks, &err);
        if (st != GSMRT_OK) gsmrt_err_prefix(&err, "%s: ", p.data_path);
    }
    if (st == GSMRT_OK && toks.n == 0)
        st = gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "%s: no tokens to calibrate on", p.data_path);
    if (st == GSMRT_OK) {
        struct gsmrt_gsm_model_id id;
        gsmrt_api_model_id(m, &id);
        struct gsmrt_calib_run_params rp = {n_ctx, 256, n_groups, p.threshold, 4, 32, 16, 0.9, p.progress,
                                            p.progress_user};
        size_t n = p.max_tokens && p.max_tokens < toks.n ? p.max_tokens : toks.n;
        st = gsmrt_calib_run(m->dm, toks.ids, n, gsmrt_tokenizer_bos(m->tok), &id, &rp, &c, &err);
    }
    if (st == GSMRT_OK) st = gsmrt_gsm_calib_save(c, out_path, &err);
    gsmrt_gsm_calib_destroy(c);
    gsmrt_tokens_free(ctx->a, &toks);
    gsmrt_mem_free(ctx->a, text);
    return st == GSMRT_OK ? GSMRT_OK : gsmrt_api_fail(ctx, &err, st);
}

gsmrt_status gsmrt_model_load_profile(gsmrt_model *m, const char *name, const char *calib_path)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (!m) return GSMRT_E_INVALID_ARGUMENT;
    if (!name || !calib_path)
        return gsmrt_api_fail(m->ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "load_profile: NULL name or path"));
    struct gsmrt_gsm_calib *c;
    gsmrt_status st = gsmrt_api_load_calib(m, calib_path, &c, &err);
    if (st != GSMRT_OK) return gsmrt_api_fail(m->ctx, &err, st);
    st = gsmrt_gsm_profiles_add(&m->profiles, name, c, &err);
    if (st != GSMRT_OK) {
        gsmrt_gsm_calib_destroy(c);
        return gsmrt_api_fail(m->ctx, &err, st);
    }
    return GSMRT_OK;
}
