/* hparams.c -- a model's hyper-parameters and the check of every tensor's
 * shape, for any registered architecture (model/arch.h): picks the
 * architecture named by general.architecture, lets it read its keys, then
 * checks the file's tensors against its tensor table. Allocates nothing. */
#include "model/hparams.h"

#include <stdio.h>
#include <string.h>

#include "model/arch.h"

#define MAX_TNAME (GSMRT_GGUF_MAX_NAME + 32)

#define TRY(x)                                   \
    do {                                         \
        gsmrt_status st_ = (x);                  \
        if (st_ != GSMRT_OK) return st_;         \
    } while (0)

/* ---- tensors --------------------------------------------------------------- */

static void fmt_shape(char *buf, size_t cap, const uint64_t *ne, int n)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%llu", i ? ", " : "", (unsigned long long)ne[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

static void want_shape(const struct gsmrt_hparams *hp, const struct gsmrt_tensor_spec *w, uint64_t ne[4])
{
    for (int i = 0; i < 4; i++) ne[i] = i < w->n_dims ? hp->arch->dim(hp, w->dims[i]) : 1;
}

/* Parses "blk.N.suffix" with N a plain decimal < n_layer; returns the suffix. */
static const char *layer_suffix(const char *name, uint32_t n_layer, uint32_t *il)
{
    if (strncmp(name, "blk.", 4) != 0) return NULL;
    const char *p = name + 4;
    uint64_t v = 0;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 6) v = v * 10 + (uint64_t)(*p++ - '0'), nd++;
    if (nd == 0 || *p != '.' || (nd > 1 && name[4] == '0') || v >= n_layer) return NULL;
    *il = (uint32_t)v;
    return p + 1;
}

/* The table row for a tensor name: a global row, or a per-layer row for
 * "blk.N.suffix" (N < n_layer, *il = N). */
static const struct gsmrt_tensor_spec *spec_of(const struct gsmrt_arch *a, const struct gsmrt_hparams *hp,
                                               const char *name, int64_t *il)
{
    uint32_t l;
    const char *suffix = layer_suffix(name, hp->n_layer, &l);
    *il = suffix ? (int64_t)l : -1;
    for (uint32_t i = 0; i < a->n_tensors; i++) {
        const struct gsmrt_tensor_spec *s = &a->tensors[i];
        if (s->name && s->per_layer == (suffix != NULL) && strcmp(suffix ? suffix : name, s->name) == 0) return s;
    }
    return NULL;
}

static gsmrt_status check_one(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp,
                              const struct gsmrt_gguf_tensor *t, struct gsmrt_err *err)
{
    const struct gsmrt_arch *a = hp->arch;
    int64_t il;
    const struct gsmrt_tensor_spec *w = spec_of(a, hp, t->name, &il);
    if (!w && a->unknown_tensor) TRY(a->unknown_tensor(g, t->name, err));
    if (!w || !a->applies(hp, w->when, il))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': unexpected in a %s model with these "
                             "hyper-parameters (block %lld; -1: global)",
                             gsmrt_gguf_name(g), t->name, a->name, (long long)il);
    uint64_t want_ne[4], have_ne[4];
    want_shape(hp, w, want_ne);
    bool same = true;
    for (int i = 0; i < 4; i++) {
        have_ne[i] = (uint64_t)t->ne[i];
        same = same && have_ne[i] == want_ne[i];
    }
    if (!same) {
        char hs[128], ws[128];
        fmt_shape(hs, sizeof hs, have_ne, (int)t->n_dims);
        fmt_shape(ws, sizeof ws, want_ne, w->n_dims);
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': shape %s, expected %s", gsmrt_gguf_name(g),
                             t->name, hs, ws);
    }
    if (w->n_dims == 1 && t->type != GSMRT_GGML_TYPE_F32)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': type %s, expected F32 for a 1-D tensor",
                             gsmrt_gguf_name(g), t->name, gsmrt_ggml_type_name(t->type));
    return GSMRT_OK;
}

static gsmrt_status check_present(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp, const char *name,
                                  const struct gsmrt_tensor_spec *w, struct gsmrt_err *err)
{
    if (gsmrt_gguf_find_tensor(g, name)) return GSMRT_OK;
    uint64_t ne[4];
    char ws[128];
    want_shape(hp, w, ne);
    fmt_shape(ws, sizeof ws, ne, w->n_dims);
    return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s' missing (expected shape %s)", gsmrt_gguf_name(g),
                         name, ws);
}

static gsmrt_status check_tensors(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    const struct gsmrt_arch *a = hp->arch;
    if (a->probe_tensors) a->probe_tensors(g, hp);
    for (uint64_t i = 0; i < gsmrt_gguf_n_tensors(g); i++) TRY(check_one(g, hp, gsmrt_gguf_tensor_at(g, i), err));
    for (uint32_t i = 0; i < a->n_tensors; i++)
        if (a->tensors[i].name && !a->tensors[i].per_layer && a->applies(hp, a->tensors[i].when, -1))
            TRY(check_present(g, hp, a->tensors[i].name, &a->tensors[i], err));
    char name[MAX_TNAME];
    for (uint32_t il = 0; il < hp->n_layer; il++)
        for (uint32_t i = 0; i < a->n_tensors; i++) {
            const struct gsmrt_tensor_spec *s = &a->tensors[i];
            if (!s->name || !s->per_layer || !a->applies(hp, s->when, il)) continue;
            snprintf(name, sizeof name, "blk.%u.%s", il, s->name);
            TRY(check_present(g, hp, name, s, err));
        }
    return GSMRT_OK;
}

/* ---- entry ------------------------------------------------------------------ */

gsmrt_status gsmrt_hparams_load(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err)
{
    if (!g || !hp) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gsmrt_hparams_load: NULL argument");
    memset(hp, 0, sizeof *hp);
    struct gsmrt_gguf_str name;
    TRY(gsmrt_gguf_get_str(g, "general.architecture", &name, err));
    const struct gsmrt_arch *arch = gsmrt_arch_find(name.ptr, name.len);
    char names[256];
    if (!arch)
        return gsmrt_err_set(err, GSMRT_E_FORMAT,
                             "%s: key 'general.architecture': architecture \"%.*s\" is not supported (supported: %s)",
                             gsmrt_gguf_name(g), name.len > 64 ? 64 : (int)name.len, name.ptr,
                             gsmrt_arch_supported(names, sizeof names));

    uint32_t et;
    uint64_t n_tokens;
    TRY(gsmrt_gguf_get_arr_info(g, "tokenizer.ggml.tokens", &et, &n_tokens, err));
    if (et != GSMRT_GGUF_TYPE_STRING)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key 'tokenizer.ggml.tokens': expected an array of string, "
                             "found an array of %s", gsmrt_gguf_name(g), gsmrt_gguf_type_name(et));
    if (n_tokens == 0 || n_tokens > INT32_MAX)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key 'tokenizer.ggml.tokens': %llu tokens (expected 1..%d)",
                             gsmrt_gguf_name(g), (unsigned long long)n_tokens, INT32_MAX);
    hp->n_vocab = (uint32_t)n_tokens;
    hp->arch = arch;

    gsmrt_status st = arch->read_hparams(g, hp, err);
    if (st == GSMRT_OK) st = check_tensors(g, hp, err);
    if (st != GSMRT_OK) {
        memset(hp, 0, sizeof *hp);
        return st;
    }
    return GSMRT_OK;
}
