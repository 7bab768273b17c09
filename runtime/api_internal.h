/* api_internal.h -- the structs behind the public handles of gsmrt.h. */
#ifndef GSMRT_API_INTERNAL_H
#define GSMRT_API_INTERNAL_H

#include <stdatomic.h>

#include "api_devices.h"
#include "base/mem.h"
#include "model/gsm_decode.h"
#include "model/model.h"
#include "model/vocab.h"
#include "profiles.h"
#include "sample/sampler.h"

struct gsmrt_context {
    gsmrt_allocator alloc;              /* copied from the params */
    const gsmrt_allocator *a;           /* &alloc, or NULL for libc */
    struct gsmrt_log log;
    struct gsmrt_vk_instance *inst;
    struct gsmrt_vk_device *dev;
    uint32_t n_models;                  /* alive */
    char last_error[1024];
};

struct gsmrt_model {
    gsmrt_context *ctx;
    struct gsmrt_gguf *gguf;            /* kept open: the tokenizer may point into it */
    struct gsmrt_hparams hp;
    struct gsmrt_dmodel *dm;
    struct gsmrt_tokenizer *tok;
    enum gsmrt_chat_format chat;
    char name[128];
    uint32_t n_sessions;                /* alive */
    struct gsmrt_gsm_profiles profiles; /* GSM calibrations by name (gsmrt_model_load_profile), owned */
};

struct chat_msg {
    gsmrt_role role;
    char *text;
};

struct gsmrt_session {
    gsmrt_model *model;
    struct gsmrt_kv_cache *kv;
    struct gsmrt_forward *fwd;
    struct gsmrt_gsm_decode *gsm;       /* NULL: dense attention */
    struct gsmrt_gsm_calib *calib;      /* the session's calibration (calibration_path), or NULL; owned */
    uint32_t n_ctx, n_batch;
    enum gsmrt_kv_type kv_type;         /* the cache's storage type (session params' cache_type) */
    struct gsmrt_tokens past;           /* tokens whose rows are in the cache, in order */
    float *logits;                      /* [n_vocab] after the last evaluated token */
    struct chat_msg *msgs;
    uint32_t n_msgs, cap_msgs;
    atomic_bool cancel;
};

/* The model's identity as calibration files record it (api_calibrate.c):
 * the architecture's name, general.name ("unnamed" if absent), layer and head counts,
 * embedding and vocabulary sizes. */
void gsmrt_api_model_id(const gsmrt_model *m, struct gsmrt_gsm_model_id *id);

/* Loads a calibration file for m. Another model's file is GSMRT_E_FORMAT
 * "PATH: key \"model\": calibration made for model ..., not for ...". */
gsmrt_status gsmrt_api_load_calib(const gsmrt_model *m, const char *path, struct gsmrt_gsm_calib **out,
                                  struct gsmrt_err *err);

/* The calibration of profile `name` (loaded with gsmrt_model_load_profile;
 * owned by the model, valid until it is destroyed). NULL or "" name: *out =
 * NULL and GSMRT_OK (no profile asked for: the session's own calibration or
 * none applies). An unknown name is GSMRT_E_INVALID_ARGUMENT listing the
 * loaded names. */
gsmrt_status gsmrt_api_pick_profile(gsmrt_model *m, const char *name, const struct gsmrt_gsm_calib **out,
                                    struct gsmrt_err *err);

/* The tokens of the first n_msgs messages of the history rendered in the
 * model's chat format (with the opening of the assistant's turn when
 * generation_prompt), appended to *out: only the format's markers become
 * control tokens, never message content (api_history.c). */
gsmrt_status gsmrt_api_chat_prompt(const gsmrt_session *s, uint32_t n_msgs, bool generation_prompt,
                                   struct gsmrt_tokens *out, struct gsmrt_err *err);

/* The same for messages given by the caller (the scheduler's requests):
 * msgs[0..n) rendered in m's chat format, appended to *out as tokens.
 * GSMRT_E_UNSUPPORTED when the model's template was not recognised. */
struct gsmrt_chat_msg;
gsmrt_status gsmrt_api_encode_chat(const gsmrt_model *m, const struct gsmrt_chat_msg *msgs, size_t n,
                                   bool generation_prompt, struct gsmrt_tokens *out, struct gsmrt_err *err);

/* A calibration's hot-page budgets count pages of its own page_size: one
 * made with other pages than the session's is GSMRT_E_INVALID_ARGUMENT,
 * naming `what` (its file or profile) and both sizes. */
gsmrt_status gsmrt_api_check_calib_pages(const struct gsmrt_gsm_calib *calib, const char *what, uint32_t page_size,
                                         struct gsmrt_err *err);

/* Records the error text on the context and returns st. */
gsmrt_status gsmrt_api_fail(gsmrt_context *ctx, const struct gsmrt_err *err, gsmrt_status st);

#endif
