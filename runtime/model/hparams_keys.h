/* hparams_keys.h -- reading an architecture's "<arch>.<key>" metadata with
 * exactly the types llama.cpp reads them with; every failure names the file
 * and the key. Used by the architectures' hyper-parameter readers. */
#ifndef GSMRT_MODEL_HPARAMS_KEYS_H
#define GSMRT_MODEL_HPARAMS_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "gguf/gguf.h"
#include "model/hparams.h"

#define GSMRT_HPK_MAX_KEY 96

struct gsmrt_hpk {
    const struct gsmrt_gguf *g;
    const char *arch;   /* the key prefix */
    struct gsmrt_err *err;
    uint32_t per_layer[GSMRT_HPARAMS_MAX_LAYERS];
};

/* "<arch>.<suffix>" into buf. */
const char *gsmrt_hpk_key(const struct gsmrt_hpk *r, const char *suffix, char buf[GSMRT_HPK_MAX_KEY]);
gsmrt_status gsmrt_hpk_u32(struct gsmrt_hpk *r, const char *suffix, uint32_t *out);
gsmrt_status gsmrt_hpk_u32_opt(struct gsmrt_hpk *r, const char *suffix, uint32_t def, uint32_t *out);
gsmrt_status gsmrt_hpk_f32(struct gsmrt_hpk *r, const char *suffix, float *out);
gsmrt_status gsmrt_hpk_f32_opt(struct gsmrt_hpk *r, const char *suffix, float def, float *out);
gsmrt_status gsmrt_hpk_bool_opt(struct gsmrt_hpk *r, const char *suffix, bool def, bool *out);
gsmrt_status gsmrt_hpk_str_opt(struct gsmrt_hpk *r, const char *suffix, const char *def, struct gsmrt_gguf_str *out);
bool gsmrt_hpk_has(const struct gsmrt_hpk *r, const char *suffix);
/* A k/arr key whose entries for blocks [from, to) must all be equal (the
 * value is *out); r->per_layer holds every block's value afterwards. */
gsmrt_status gsmrt_hpk_u32_layers(struct gsmrt_hpk *r, const char *suffix, uint32_t n_layer, bool required,
                                  uint32_t def, uint32_t from, uint32_t to, uint32_t *out);
/* GSMRT_E_FORMAT "FILE: key '<arch>.<suffix>': <message>". */
gsmrt_status gsmrt_hpk_bad(const struct gsmrt_hpk *r, const char *suffix, const char *fmt, ...) GSMRT_PRINTF(3, 4);

#endif
