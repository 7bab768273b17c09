/* calib_file.c -- calibration files: create, validate, write and read back
 * (format in calib_file.h). Reading trusts nothing: every key is walked,
 * every count and value is range-checked before use, and the identity of the
 * model is compared when the caller says which model is loaded. */
#include "calib_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "json_read.h"

#define FORMAT_NAME "gsmrt-gsm-calibration"
#define POS_MAX 16777216   /* 2^24 positions */

void gsmrt_gsm_calib_destroy(struct gsmrt_gsm_calib *c)
{
    if (!c) return;
    for (uint32_t l = 0; c->layers && l < c->model.n_layer; l++) {
        gsmrt_mem_free(c->alloc, c->layers[l].head_group);
        gsmrt_mem_free(c->alloc, c->layers[l].groups);
        gsmrt_mem_free(c->alloc, c->layers[l].stats);
    }
    gsmrt_mem_free(c->alloc, c->layers);
    gsmrt_mem_free(c->alloc, c);
}

/* Allocates layers with n_groups groups each (groups[] sized n_head so a
 * reader can fill any count up to n_head). */
static gsmrt_status alloc_layers(struct gsmrt_gsm_calib *c, struct gsmrt_err *err)
{
    const uint32_t n_layer = c->model.n_layer, n_head = c->model.n_head;
    c->layers = gsmrt_mem_calloc(c->alloc, n_layer, sizeof *c->layers);
    if (!c->layers) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration of %u layers", n_layer);
    for (uint32_t l = 0; l < n_layer; l++) {
        struct gsmrt_gsm_calib_layer *L = &c->layers[l];
        L->head_group = gsmrt_mem_calloc(c->alloc, n_head, sizeof *L->head_group);
        L->groups = gsmrt_mem_calloc(c->alloc, n_head, sizeof *L->groups);
        L->stats = gsmrt_mem_calloc(c->alloc, n_head, sizeof *L->stats);
        if (!L->head_group || !L->groups || !L->stats)
            return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration layer %u", l);
    }
    return GSMRT_OK;
}

static gsmrt_status check_id(const struct gsmrt_gsm_model_id *m, struct gsmrt_err *err)
{
    if (m->n_layer < 1 || m->n_layer > GSMRT_GSM_MAX_LAYERS || m->n_head < 1 || m->n_head > GSMRT_GSM_MAX_HEADS ||
        m->n_embd < 1 || m->n_vocab < 1)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "model with %u layers (1..%d), %u heads (1..%d), n_embd %u, n_vocab %u", m->n_layer,
                             GSMRT_GSM_MAX_LAYERS, m->n_head, GSMRT_GSM_MAX_HEADS, m->n_embd, m->n_vocab);
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_calib_create(const gsmrt_allocator *alloc, const struct gsmrt_gsm_model_id *model,
                                    uint32_t n_groups, uint32_t n_bands, struct gsmrt_gsm_calib **out,
                                    struct gsmrt_err *err)
{
    *out = NULL;
    gsmrt_status st = check_id(model, err);
    if (st != GSMRT_OK) return st;
    if (n_groups < 1 || n_groups > model->n_head || n_bands < 1 || n_bands > GSMRT_GSM_MAX_BANDS)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%u groups for %u heads, %u bands (1..%d)", n_groups,
                             model->n_head, n_bands, GSMRT_GSM_MAX_BANDS);
    struct gsmrt_gsm_calib *c = gsmrt_mem_calloc(alloc, 1, sizeof *c);
    if (!c) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration");
    c->alloc = alloc;
    c->model = *model;
    c->model.architecture[GSMRT_GSM_ID_MAX] = '\0';
    c->model.name[GSMRT_GSM_ID_MAX] = '\0';
    c->page_size = 32;
    c->n_bands = n_bands;
    for (uint32_t b = 0; b < n_bands; b++) c->band_edges[b] = b == 0 ? 0 : 16u << (2 * (b - 1));
    st = alloc_layers(c, err);
    if (st != GSMRT_OK) {
        gsmrt_gsm_calib_destroy(c);
        return st;
    }
    for (uint32_t l = 0; l < model->n_layer; l++) {
        c->layers[l].n_groups = n_groups;
        for (uint32_t h = 0; h < model->n_head; h++) {
            c->layers[l].head_group[h] = h % n_groups;
            c->layers[l].stats[h].band_mass[0] = 1;
        }
    }
    *out = c;
    return GSMRT_OK;
}

static void describe(const struct gsmrt_gsm_model_id *m, char *buf, size_t n)
{
    snprintf(buf, n, "\"%s\" (%s, %u layers, %u heads, n_embd %u, n_vocab %u)", m->name, m->architecture,
             m->n_layer, m->n_head, m->n_embd, m->n_vocab);
}

gsmrt_status gsmrt_gsm_calib_check_model(const struct gsmrt_gsm_calib *c, const struct gsmrt_gsm_model_id *model,
                                         struct gsmrt_err *err)
{
    const struct gsmrt_gsm_model_id *a = &c->model;
    if (strcmp(a->architecture, model->architecture) == 0 && strcmp(a->name, model->name) == 0 &&
        a->n_layer == model->n_layer && a->n_head == model->n_head && a->n_embd == model->n_embd &&
        a->n_vocab == model->n_vocab)
        return GSMRT_OK;
    char x[400], y[400];
    describe(a, x, sizeof x);
    describe(model, y, sizeof y);
    return gsmrt_err_set(err, GSMRT_E_FORMAT, "calibration made for model %s, not for the loaded model %s", x, y);
}

gsmrt_status gsmrt_gsm_calib_validate(const struct gsmrt_gsm_calib *c, struct gsmrt_err *err)
{
    if (check_id(&c->model, err) != GSMRT_OK) {   /* the message stands; in a file it is a format error */
        if (err) err->status = GSMRT_E_FORMAT;
        return GSMRT_E_FORMAT;
    }
    const uint32_t ps = c->page_size;
    if (ps < 8 || ps > 256 || (ps & (ps - 1)))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"page_size\": %u is not a power of two in [8, 256]", ps);
    if (c->n_bands < 1 || c->n_bands > GSMRT_GSM_MAX_BANDS)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"band_edges\": %u bands, expected 1 to %d", c->n_bands,
                             GSMRT_GSM_MAX_BANDS);
    for (uint32_t b = 0; b < c->n_bands; b++) {
        bool ok = b == 0 ? c->band_edges[0] == 0 : c->band_edges[b] > c->band_edges[b - 1];
        if (!ok || c->band_edges[b] > POS_MAX)
            return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                 "key \"band_edges[%u]\": %u (edges start at 0 and increase, at most %d)", b,
                                 c->band_edges[b], POS_MAX);
    }
    for (uint32_t l = 0; l < c->model.n_layer; l++) {
        const struct gsmrt_gsm_calib_layer *L = &c->layers[l];
        if (L->n_groups < 1 || L->n_groups > c->model.n_head)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"layers[%u].groups\": %u groups, expected 1 to %u", l,
                                 L->n_groups, c->model.n_head);
        for (uint32_t h = 0; h < c->model.n_head; h++)
            if (L->head_group[h] >= L->n_groups)
                return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"layers[%u].head_group[%u]\": %u out of range [0, %u]",
                                     l, h, L->head_group[h], L->n_groups - 1);
        for (uint32_t g = 0; g < L->n_groups; g++) {
            bool used = false;
            for (uint32_t h = 0; h < c->model.n_head && !used; h++) used = L->head_group[h] == g;
            if (!used)
                return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"layers[%u].head_group\": group %u has no head", l, g);
            const struct gsmrt_gsm_group_policy *P = &L->groups[g];
            if (P->sink_tokens > POS_MAX || P->window > POS_MAX || P->hot_pages > 1048576)
                return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                     "key \"layers[%u].groups[%u]\": sink_tokens %u, window %u (at most %d), "
                                     "hot_pages %u (at most 1048576)",
                                     l, g, P->sink_tokens, P->window, POS_MAX, P->hot_pages);
            if (!(P->threshold >= 0 && P->threshold < 1))
                return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                     "key \"layers[%u].groups[%u].threshold\": %g out of range [0, 1)", l, g,
                                     (double)P->threshold);
        }
        for (uint32_t h = 0; h < c->model.n_head; h++) {
            const struct gsmrt_gsm_head_stats *S = &L->stats[h];
            double sum = 0;
            for (uint32_t b = 0; b < c->n_bands; b++) {
                if (!(S->band_mass[b] >= 0 && S->band_mass[b] <= 1))
                    return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                         "key \"layers[%u].stats[%u].band_mass[%u]\": %g out of range [0, 1]", l, h, b,
                                         (double)S->band_mass[b]);
                sum += S->band_mass[b];
            }
            if (fabs(sum - 1.0) > 1e-3)
                return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                     "key \"layers[%u].stats[%u].band_mass\": sums to %g, expected 1 (+-0.001)", l, h,
                                     sum);
            if (!(S->sink_share >= 0 && S->sink_share <= 1))
                return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                     "key \"layers[%u].stats[%u].sink_share\": %g out of range [0, 1]", l, h,
                                     (double)S->sink_share);
            if (!(S->entropy >= 0 && S->entropy <= 64))
                return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                     "key \"layers[%u].stats[%u].entropy\": %g out of range [0, 64]", l, h,
                                     (double)S->entropy);
        }
    }
    return GSMRT_OK;
}

/* ---- writing ------------------------------------------------------------ */

struct builder {
    bool failed;
};

/* The shortest decimal that reads back as the same float, as a double, so
 * 0.1f is written "0.1" and not "0.10000000149011612". */
static double float_value(float f)
{
    char buf[32];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f) break;
    }
    return strtod(buf, NULL);
}

static cJSON *add_num(struct builder *b, cJSON *obj, const char *key, double v)
{
    cJSON *it = cJSON_AddNumberToObject(obj, key, v);
    if (!it) b->failed = true;
    return it;
}

static cJSON *add_obj(struct builder *b, cJSON *parent, const char *key)
{
    cJSON *it = key ? cJSON_AddObjectToObject(parent, key) : cJSON_CreateObject();
    if (it && !key && !cJSON_AddItemToArray(parent, it)) {
        cJSON_Delete(it);
        it = NULL;
    }
    if (!it) b->failed = true;
    return it;
}

static cJSON *add_arr(struct builder *b, cJSON *obj, const char *key)
{
    cJSON *it = cJSON_AddArrayToObject(obj, key);
    if (!it) b->failed = true;
    return it;
}

static void push_num(struct builder *b, cJSON *arr, double v)
{
    cJSON *n = cJSON_CreateNumber(v);
    if (!n || !cJSON_AddItemToArray(arr, n)) {
        cJSON_Delete(n);
        b->failed = true;
    }
}

gsmrt_status gsmrt_gsm_calib_to_json(const struct gsmrt_gsm_calib *c, const gsmrt_allocator *alloc, char **out,
                                     struct gsmrt_err *err)
{
    *out = NULL;
    gsmrt_status st = gsmrt_gsm_calib_validate(c, err);
    if (st != GSMRT_OK) return st;
    struct builder b = {false};
    cJSON *root = cJSON_CreateObject();
    if (!root) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration JSON");
    if (!cJSON_AddStringToObject(root, "format", FORMAT_NAME)) b.failed = true;
    add_num(&b, root, "version", GSMRT_GSM_CALIB_VERSION);
    cJSON *m = add_obj(&b, root, "model");
    if (m) {
        if (!cJSON_AddStringToObject(m, "architecture", c->model.architecture)) b.failed = true;
        if (!cJSON_AddStringToObject(m, "name", c->model.name)) b.failed = true;
        add_num(&b, m, "n_layer", c->model.n_layer);
        add_num(&b, m, "n_head", c->model.n_head);
        add_num(&b, m, "n_embd", c->model.n_embd);
        add_num(&b, m, "n_vocab", c->model.n_vocab);
    }
    add_num(&b, root, "page_size", c->page_size);
    cJSON *edges = add_arr(&b, root, "band_edges");
    for (uint32_t i = 0; edges && i < c->n_bands; i++) push_num(&b, edges, c->band_edges[i]);
    cJSON *layers = add_arr(&b, root, "layers");
    for (uint32_t l = 0; layers && !b.failed && l < c->model.n_layer; l++) {
        const struct gsmrt_gsm_calib_layer *L = &c->layers[l];
        cJSON *lo = add_obj(&b, layers, NULL);
        if (!lo) break;
        cJSON *hg = add_arr(&b, lo, "head_group");
        for (uint32_t h = 0; hg && h < c->model.n_head; h++) push_num(&b, hg, L->head_group[h]);
        cJSON *gs = add_arr(&b, lo, "groups");
        for (uint32_t g = 0; gs && g < L->n_groups; g++) {
            cJSON *go = add_obj(&b, gs, NULL);
            if (!go) break;
            add_num(&b, go, "sink_tokens", L->groups[g].sink_tokens);
            add_num(&b, go, "window", L->groups[g].window);
            add_num(&b, go, "hot_pages", L->groups[g].hot_pages);
            add_num(&b, go, "threshold", float_value(L->groups[g].threshold));
        }
        cJSON *ss = add_arr(&b, lo, "stats");
        for (uint32_t h = 0; ss && h < c->model.n_head; h++) {
            cJSON *so = add_obj(&b, ss, NULL);
            if (!so) break;
            cJSON *bm = add_arr(&b, so, "band_mass");
            for (uint32_t i = 0; bm && i < c->n_bands; i++) push_num(&b, bm, float_value(L->stats[h].band_mass[i]));
            add_num(&b, so, "sink_share", float_value(L->stats[h].sink_share));
            add_num(&b, so, "entropy", float_value(L->stats[h].entropy));
        }
    }
    char *text = b.failed ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration JSON");
    *out = gsmrt_mem_strdup(alloc, text);
    cJSON_free(text);
    if (!*out) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration JSON");
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_calib_save(const struct gsmrt_gsm_calib *c, const char *path, struct gsmrt_err *err)
{
    char *text;
    gsmrt_status st = gsmrt_gsm_calib_to_json(c, c->alloc, &text, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "%s: ", path);
        return st;
    }
    st = gsmrt_gsm_json_write_file(path, text, c->alloc, err);   /* its messages name the file */
    gsmrt_mem_free(c->alloc, text);
    return st;
}

/* ---- reading ------------------------------------------------------------ */

#define GET(obj, key) cJSON_GetObjectItemCaseSensitive((obj), (key))
#define TRY(expr)                        \
    do {                                 \
        st = (expr);                     \
        if (st != GSMRT_OK) return st;   \
    } while (0)

static gsmrt_status read_u32(const cJSON *obj, const char *key, const char *path, int64_t lo, int64_t hi,
                             uint32_t *out, struct gsmrt_err *err)
{
    int64_t v;
    gsmrt_status st = gsmrt_gsm_json_int(GET(obj, key), path, lo, hi, &v, err);
    if (st == GSMRT_OK) *out = (uint32_t)v;
    return st;
}

static gsmrt_status read_f32(const cJSON *item, const char *path, double lo, double hi, bool hi_open, float *out,
                             struct gsmrt_err *err)
{
    double v;
    gsmrt_status st = gsmrt_gsm_json_num(item, path, lo, hi, hi_open, &v, err);
    if (st == GSMRT_OK) *out = (float)v;
    return st;
}

static gsmrt_status read_model(const cJSON *root, struct gsmrt_gsm_model_id *m, struct gsmrt_err *err)
{
    static const char *const keys[] = {"architecture", "name", "n_layer", "n_head", "n_embd", "n_vocab"};
    const cJSON *o = GET(root, "model");
    const char *s;
    gsmrt_status st;
    TRY(gsmrt_gsm_json_object(o, "model", err));
    TRY(gsmrt_gsm_json_check_keys(o, "model", keys, 6, err));
    TRY(gsmrt_gsm_json_str(GET(o, "architecture"), "model.architecture", GSMRT_GSM_ID_MAX, &s, err));
    memcpy(m->architecture, s, strlen(s) + 1);
    TRY(gsmrt_gsm_json_str(GET(o, "name"), "model.name", GSMRT_GSM_ID_MAX, &s, err));
    memcpy(m->name, s, strlen(s) + 1);
    TRY(read_u32(o, "n_layer", "model.n_layer", 1, GSMRT_GSM_MAX_LAYERS, &m->n_layer, err));
    TRY(read_u32(o, "n_head", "model.n_head", 1, GSMRT_GSM_MAX_HEADS, &m->n_head, err));
    TRY(read_u32(o, "n_embd", "model.n_embd", 1, UINT32_MAX, &m->n_embd, err));
    TRY(read_u32(o, "n_vocab", "model.n_vocab", 1, UINT32_MAX, &m->n_vocab, err));
    return GSMRT_OK;
}

static gsmrt_status read_layer(const cJSON *lo, uint32_t l, struct gsmrt_gsm_calib *c, struct gsmrt_err *err)
{
    static const char *const lkeys[] = {"head_group", "groups", "stats"};
    static const char *const gkeys[] = {"sink_tokens", "window", "hot_pages", "threshold"};
    static const char *const skeys[] = {"band_mass", "sink_share", "entropy"};
    struct gsmrt_gsm_calib_layer *L = &c->layers[l];
    const uint32_t n_head = c->model.n_head;
    char path[96];
    size_t n;
    gsmrt_status st;
    snprintf(path, sizeof path, "layers[%u]", l);
    TRY(gsmrt_gsm_json_object(lo, path, err));
    TRY(gsmrt_gsm_json_check_keys(lo, path, lkeys, 3, err));

    snprintf(path, sizeof path, "layers[%u].groups", l);
    const cJSON *gs = GET(lo, "groups");
    TRY(gsmrt_gsm_json_array(gs, path, SIZE_MAX, &n, err));
    if (n < 1 || n > n_head)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"%s\": %zu groups, expected 1 to %u (n_head)", path, n, n_head);
    L->n_groups = (uint32_t)n;
    uint32_t g = 0;
    for (const cJSON *go = gs->child; go; go = go->next, g++) {
        struct gsmrt_gsm_group_policy *P = &L->groups[g];
        snprintf(path, sizeof path, "layers[%u].groups[%u]", l, g);
        TRY(gsmrt_gsm_json_object(go, path, err));
        TRY(gsmrt_gsm_json_check_keys(go, path, gkeys, 4, err));
        char kp[128];
        snprintf(kp, sizeof kp, "%s.sink_tokens", path);
        TRY(read_u32(go, "sink_tokens", kp, 0, POS_MAX, &P->sink_tokens, err));
        snprintf(kp, sizeof kp, "%s.window", path);
        TRY(read_u32(go, "window", kp, 0, POS_MAX, &P->window, err));
        snprintf(kp, sizeof kp, "%s.hot_pages", path);
        TRY(read_u32(go, "hot_pages", kp, 0, 1048576, &P->hot_pages, err));
        snprintf(kp, sizeof kp, "%s.threshold", path);
        TRY(read_f32(GET(go, "threshold"), kp, 0, 1, true, &P->threshold, err));
    }

    snprintf(path, sizeof path, "layers[%u].head_group", l);
    const cJSON *hg = GET(lo, "head_group");
    TRY(gsmrt_gsm_json_array(hg, path, n_head, NULL, err));
    uint32_t h = 0;
    for (const cJSON *it = hg->child; it; it = it->next, h++) {
        char kp[128];
        int64_t v;
        snprintf(kp, sizeof kp, "%s[%u]", path, h);
        TRY(gsmrt_gsm_json_int(it, kp, 0, (int64_t)L->n_groups - 1, &v, err));
        L->head_group[h] = (uint32_t)v;
    }

    snprintf(path, sizeof path, "layers[%u].stats", l);
    const cJSON *ss = GET(lo, "stats");
    TRY(gsmrt_gsm_json_array(ss, path, n_head, NULL, err));
    h = 0;
    for (const cJSON *so = ss->child; so; so = so->next, h++) {
        struct gsmrt_gsm_head_stats *S = &L->stats[h];
        char sp[96], kp[128];
        snprintf(sp, sizeof sp, "layers[%u].stats[%u]", l, h);
        TRY(gsmrt_gsm_json_object(so, sp, err));
        TRY(gsmrt_gsm_json_check_keys(so, sp, skeys, 3, err));
        snprintf(kp, sizeof kp, "%s.band_mass", sp);
        const cJSON *bm = GET(so, "band_mass");
        TRY(gsmrt_gsm_json_array(bm, kp, c->n_bands, NULL, err));
        uint32_t b = 0;
        for (const cJSON *it = bm->child; it; it = it->next, b++) {
            snprintf(kp, sizeof kp, "%s.band_mass[%u]", sp, b);
            TRY(read_f32(it, kp, 0, 1, false, &S->band_mass[b], err));
        }
        snprintf(kp, sizeof kp, "%s.sink_share", sp);
        TRY(read_f32(GET(so, "sink_share"), kp, 0, 1, false, &S->sink_share, err));
        snprintf(kp, sizeof kp, "%s.entropy", sp);
        TRY(read_f32(GET(so, "entropy"), kp, 0, 64, false, &S->entropy, err));
    }
    return GSMRT_OK;
}

static gsmrt_status read_calib(const cJSON *root, const struct gsmrt_gsm_model_id *expect,
                               struct gsmrt_gsm_calib *c, struct gsmrt_err *err)
{
    static const char *const keys[] = {"format", "version", "model", "page_size", "band_edges", "layers"};
    gsmrt_status st;
    const char *fmt;
    int64_t v;
    TRY(gsmrt_gsm_json_check_keys(root, NULL, keys, 6, err));
    TRY(gsmrt_gsm_json_str(GET(root, "format"), "format", 64, &fmt, err));
    if (strcmp(fmt, FORMAT_NAME) != 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"format\": \"%s\", expected \"%s\"", fmt, FORMAT_NAME);
    TRY(gsmrt_gsm_json_int(GET(root, "version"), "version", GSMRT_GSM_CALIB_VERSION, GSMRT_GSM_CALIB_VERSION, &v,
                           err));
    TRY(read_model(root, &c->model, err));
    if (expect) TRY(gsmrt_gsm_calib_check_model(c, expect, err));
    TRY(gsmrt_gsm_json_int(GET(root, "page_size"), "page_size", 8, 256, &v, err));
    c->page_size = (uint32_t)v;
    if (c->page_size & (c->page_size - 1))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"page_size\": %u is not a power of two in [8, 256]",
                             c->page_size);
    size_t n;
    const cJSON *edges = GET(root, "band_edges");
    TRY(gsmrt_gsm_json_array(edges, "band_edges", SIZE_MAX, &n, err));
    if (n < 1 || n > GSMRT_GSM_MAX_BANDS)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key \"band_edges\": %zu bands, expected 1 to %d", n,
                             GSMRT_GSM_MAX_BANDS);
    c->n_bands = (uint32_t)n;
    uint32_t b = 0;
    for (const cJSON *it = edges->child; it; it = it->next, b++) {
        char kp[32];
        snprintf(kp, sizeof kp, "band_edges[%u]", b);
        TRY(gsmrt_gsm_json_int(it, kp, 0, POS_MAX, &v, err));
        c->band_edges[b] = (uint32_t)v;
    }
    const cJSON *layers = GET(root, "layers");
    TRY(gsmrt_gsm_json_array(layers, "layers", c->model.n_layer, NULL, err));
    TRY(alloc_layers(c, err));
    uint32_t l = 0;
    for (const cJSON *lo = layers->child; lo; lo = lo->next, l++) TRY(read_layer(lo, l, c, err));
    return gsmrt_gsm_calib_validate(c, err);   /* the cross-field rules (edges increase, groups used, sums) */
}

gsmrt_status gsmrt_gsm_calib_parse(const char *text, size_t len, const char *name, const gsmrt_allocator *alloc,
                                   const struct gsmrt_gsm_model_id *expect, struct gsmrt_gsm_calib **out,
                                   struct gsmrt_err *err)
{
    *out = NULL;
    cJSON *root = NULL;
    struct gsmrt_gsm_calib *c = NULL;
    gsmrt_status st = gsmrt_gsm_json_parse(text, len, &root, err);
    if (st != GSMRT_OK) goto fail;
    c = gsmrt_mem_calloc(alloc, 1, sizeof *c);
    if (!c) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration");
        goto fail;
    }
    c->alloc = alloc;
    st = read_calib(root, expect, c, err);
    if (st != GSMRT_OK) goto fail;
    cJSON_Delete(root);
    *out = c;
    return GSMRT_OK;
fail:
    cJSON_Delete(root);
    gsmrt_gsm_calib_destroy(c);
    gsmrt_err_prefix(err, "%s: ", name);
    return st;
}

gsmrt_status gsmrt_gsm_calib_load(const char *path, const gsmrt_allocator *alloc,
                                  const struct gsmrt_gsm_model_id *expect, struct gsmrt_gsm_calib **out,
                                  struct gsmrt_err *err)
{
    *out = NULL;
    char *text;
    size_t len;
    gsmrt_status st = gsmrt_gsm_json_slurp(path, alloc, &text, &len, err);
    if (st != GSMRT_OK) return st;
    st = gsmrt_gsm_calib_parse(text, len, path, alloc, expect, out, err);
    gsmrt_mem_free(alloc, text);
    return st;
}
