/* api.c -- the public context and model functions of gsmrt.h: argument
 * checks, handle lifetimes, and the error text kept on the context. */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"

gsmrt_status gsmrt_api_fail(gsmrt_context *ctx, const struct gsmrt_err *err, gsmrt_status st)
{
    if (ctx) snprintf(ctx->last_error, sizeof ctx->last_error, "%s", err->msg);
    return st;
}

/* Copies the caller's params struct over the defaults, only as far as the
 * caller's struct_size reaches (older callers get defaults for new fields). */
static bool copy_params(void *dst, size_t full, const void *src)
{
    uint32_t size;
    memcpy(&size, src, sizeof size);
    if (size < sizeof(uint32_t)) return false;
    memcpy(dst, src, size < full ? size : full);
    memcpy(dst, &(uint32_t){(uint32_t)full}, sizeof(uint32_t));
    return true;
}

void gsmrt_context_params_init(gsmrt_context_params *p, size_t size)
{
    gsmrt_context_params d;
    memset(&d, 0, sizeof d);
    d.validation = -1;
    d.log_level = GSMRT_LOG_WARN;
    if (!p || size < sizeof(uint32_t)) return;
    memcpy(p, &d, size < sizeof d ? size : sizeof d);
    p->struct_size = (uint32_t)size;
}

gsmrt_status gsmrt_context_create(const gsmrt_context_params *params, gsmrt_context **out, char *err_text,
                                  size_t err_size)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    gsmrt_status st = GSMRT_OK;
    gsmrt_context_params p;
    gsmrt_context_params_init(&p, sizeof p);
    gsmrt_context *ctx = NULL;
    if (out) *out = NULL;
    if (!out || (params && !copy_params(&p, sizeof p, params))) {
        st = gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "context: out is NULL or params->struct_size is unset");
        goto done;
    }
    const gsmrt_allocator *a = p.allocator.alloc && p.allocator.free ? &p.allocator : NULL;
    ctx = gsmrt_mem_calloc(a, 1, sizeof *ctx);
    if (!ctx) {
        st = gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "context");
        goto done;
    }
    ctx->alloc = p.allocator;
    ctx->a = a ? &ctx->alloc : NULL;
    ctx->log = (struct gsmrt_log){p.log_cb, p.log_user, p.log_level};
    struct gsmrt_vk_instance_params ip = {ctx->a, ctx->log, p.validation};
    st = gsmrt_vk_instance_create(&ip, &ctx->inst, &err);
    if (st == GSMRT_OK) {
        struct gsmrt_vk_device_params dp = {p.device, p.pipeline_cache_path};
        st = gsmrt_vk_device_create(ctx->inst, &dp, &ctx->dev, &err);
    }
    if (st == GSMRT_OK) st = gsmrt_kernels_warm_up(ctx->dev, &err);
    if (st != GSMRT_OK) {
        gsmrt_vk_device_destroy(ctx->dev);
        gsmrt_vk_instance_destroy(ctx->inst);
        gsmrt_mem_free(a, ctx);
        goto done;
    }
    *out = ctx;
done:
    if (err_text && err_size) snprintf(err_text, err_size, "%s", st == GSMRT_OK ? "" : err.msg);
    return st;
}

gsmrt_status gsmrt_context_destroy(gsmrt_context *ctx)
{
    if (!ctx) return GSMRT_OK;
    if (ctx->n_models) {
        snprintf(ctx->last_error, sizeof ctx->last_error, "context still has %u model(s) alive", ctx->n_models);
        gsmrt_log(&ctx->log, GSMRT_LOG_WARN, "%s", ctx->last_error);
        return GSMRT_E_INVALID_ARGUMENT;
    }
    gsmrt_vk_device_destroy(ctx->dev);
    gsmrt_vk_instance_destroy(ctx->inst);
    gsmrt_mem_free(ctx->a, ctx);
    return GSMRT_OK;
}

const char *gsmrt_context_last_error(const gsmrt_context *ctx)
{
    return ctx ? ctx->last_error : "no context";
}

gsmrt_status gsmrt_context_memory(const gsmrt_context *ctx, gsmrt_memory_usage *u)
{
    if (!ctx || !u || u->struct_size < sizeof(uint32_t)) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_vk_usage vu;
    gsmrt_vk_usage(ctx->dev, &vu);
    gsmrt_memory_usage full;
    memset(&full, 0, sizeof full);
    full.struct_size = u->struct_size;
    full.weights_bytes = vu.role_bytes[GSMRT_VK_ROLE_WEIGHTS];
    full.kv_hot_bytes = vu.role_bytes[GSMRT_VK_ROLE_KV_HOT];
    full.kv_cold_bytes = vu.role_bytes[GSMRT_VK_ROLE_KV_COLD];
    full.scratch_bytes = vu.role_bytes[GSMRT_VK_ROLE_SCRATCH];
    full.staging_bytes = vu.role_bytes[GSMRT_VK_ROLE_STAGING] + vu.role_bytes[GSMRT_VK_ROLE_READBACK];
    for (uint32_t h = 0; h < vu.n_heaps; h++) {
        if (ctx->dev->caps.memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
            full.device_local_bytes += vu.heap_bytes[h];
            full.device_local_budget += vu.heap_budget[h];
        } else {
            full.host_visible_bytes += vu.heap_bytes[h];
        }
    }
    if (ctx->dev->forced_budget && ctx->dev->forced_budget < full.device_local_budget)
        full.device_local_budget = ctx->dev->forced_budget;
    full.memory_budget_reported = ctx->dev->caps.ext_memory_budget;
    memcpy(u, &full, u->struct_size < sizeof full ? u->struct_size : sizeof full);
    return GSMRT_OK;
}

gsmrt_status gsmrt_context_device(const gsmrt_context *ctx, gsmrt_device_info *info)
{
    if (!ctx || !info || info->struct_size < sizeof(uint32_t)) return GSMRT_E_INVALID_ARGUMENT;
    gsmrt_device_info_fill(info, ctx->dev->index, &ctx->dev->caps);
    return GSMRT_OK;
}

void gsmrt_model_params_init(gsmrt_model_params *p, size_t size)
{
    if (!p || size < sizeof(uint32_t)) return;
    memset(p, 0, size);
    p->struct_size = (uint32_t)size;
}

gsmrt_status gsmrt_model_load(gsmrt_context *ctx, const char *path, const gsmrt_model_params *params,
                              gsmrt_model **out)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (out) *out = NULL;
    gsmrt_model_params p;
    gsmrt_model_params_init(&p, sizeof p);
    if (!ctx || !path || !out || (params && !copy_params(&p, sizeof p, params)))
        return gsmrt_api_fail(ctx, &err, gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "model_load: NULL argument"));
    gsmrt_model *m = gsmrt_mem_calloc(ctx->a, 1, sizeof *m);
    if (!m) return gsmrt_api_fail(ctx, &err, gsmrt_err_set(&err, GSMRT_E_OUT_OF_HOST_MEMORY, "model"));
    m->ctx = ctx;
    gsmrt_gsm_profiles_init(&m->profiles);
    if (p.progress) p.progress(p.progress_user, "reading the model file", 0.0f);
    gsmrt_status st = gsmrt_gguf_open(path, ctx->a, &m->gguf, &err);
    if (st == GSMRT_OK) st = gsmrt_hparams_load(m->gguf, &m->hp, &err);
    if (st == GSMRT_OK) st = gsmrt_vocab_load(m->gguf, ctx->a, p.chat_format, &m->tok, &m->chat, &err);
    if (st == GSMRT_OK)
        st = gsmrt_dmodel_load(ctx->dev, m->gguf, &m->hp, p.progress, p.progress_user, &m->dm,
                               &err);
    if (st == GSMRT_OK) {
        struct gsmrt_gguf_str name;
        if (gsmrt_gguf_get_str_opt(m->gguf, "general.name", "", &name, &err) == GSMRT_OK)
            snprintf(m->name, sizeof m->name, "%.*s", (int)(name.len < 127 ? name.len : 127), name.ptr);
    }
    if (st != GSMRT_OK) {
        gsmrt_dmodel_destroy(m->dm);
        gsmrt_tokenizer_destroy(m->tok);
        gsmrt_gguf_close(m->gguf);
        gsmrt_mem_free(ctx->a, m);
        return gsmrt_api_fail(ctx, &err, st);
    }
    if (p.progress) p.progress(p.progress_user, "done", 1.0f);
    ctx->n_models++;
    *out = m;
    return GSMRT_OK;
}

gsmrt_status gsmrt_model_destroy(gsmrt_model *m)
{
    if (!m) return GSMRT_OK;
    if (m->n_sessions) {
        snprintf(m->ctx->last_error, sizeof m->ctx->last_error, "model still has %u session(s) alive",
                 m->n_sessions);
        return GSMRT_E_INVALID_ARGUMENT;
    }
    gsmrt_context *ctx = m->ctx;
    gsmrt_gsm_profiles_deinit(&m->profiles);
    gsmrt_dmodel_destroy(m->dm);
    gsmrt_tokenizer_destroy(m->tok);
    gsmrt_gguf_close(m->gguf);
    gsmrt_mem_free(ctx->a, m);
    ctx->n_models--;
    return GSMRT_OK;
}

gsmrt_status gsmrt_model_describe(const gsmrt_model *m, gsmrt_model_info *info)
{
    if (!m || !info || info->struct_size < sizeof(uint32_t)) return GSMRT_E_INVALID_ARGUMENT;
    gsmrt_model_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = info->struct_size;
    snprintf(full.name, sizeof full.name, "%s", m->name);
    snprintf(full.arch, sizeof full.arch, "%s", m->hp.arch->name);
    snprintf(full.chat_format, sizeof full.chat_format, "%s", gsmrt_chat_format_name(m->chat));
    full.n_vocab = m->hp.n_vocab;
    full.n_ctx_train = m->hp.n_ctx_train;
    full.n_layer = m->hp.n_layer;
    full.n_embd = m->hp.n_embd;
    full.n_head = m->hp.n_head;
    full.weight_bytes = m->dm->weight_bytes;
    memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
    return GSMRT_OK;
}

gsmrt_status gsmrt_model_tokenize(const gsmrt_model *m, const char *text, size_t len, bool add_special,
                                  bool parse_special, int32_t *tokens, size_t cap, size_t *n_tokens)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (n_tokens) *n_tokens = 0;
    if (!m || !text || !n_tokens || (cap && !tokens)) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_tokens v = {NULL, 0, 0};
    gsmrt_status st = gsmrt_tokenizer_encode(m->tok, text, len, add_special, parse_special, &v, &err);
    if (st != GSMRT_OK) return gsmrt_api_fail(m->ctx, &err, st);
    if (cap) memcpy(tokens, v.ids, (v.n < cap ? v.n : cap) * sizeof *tokens);   /* tokens may be NULL when cap is 0 */
    *n_tokens = v.n;
    gsmrt_tokens_free(m->ctx->a, &v);
    return GSMRT_OK;
}
