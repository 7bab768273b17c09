/* api_internal.h -- the structs behind the public handles of gsmrt.h. */
#ifndef GSMRT_API_INTERNAL_H
#define GSMRT_API_INTERNAL_H

#include <stdatomic.h>

#include "api_devices.h"
#include "base/mem.h"
#include "model/gsm_decode.h"
#include "model/model.h"
#include "model/vocab.h"
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
    uint32_t n_ctx, n_batch;
    struct gsmrt_tokens past;           /* tokens whose rows are in the cache, in order */
    float *logits;                      /* [n_vocab] after the last evaluated token */
    struct chat_msg *msgs;
    uint32_t n_msgs, cap_msgs;
    atomic_bool cancel;
};

/* Records the error text on the context and returns st. */
gsmrt_status gsmrt_api_fail(gsmrt_context *ctx, const struct gsmrt_err *err, gsmrt_status st);

#endif
