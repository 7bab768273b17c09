/* api_history.c -- the chat history of a session as the public API edits
 * it (removing messages, its size in tokens), and its rendering into the
 * prompt a chat turn evaluates. */
#include <string.h>

#include "api_internal.h"
#include "text/chat.h"

static const gsmrt_allocator *alloc_of(const gsmrt_session *s) { return s->model->ctx->a; }

gsmrt_status gsmrt_api_encode_chat(const gsmrt_model *m, const struct gsmrt_chat_msg *msgs, size_t n,
                                   bool generation_prompt, struct gsmrt_tokens *out, struct gsmrt_err *err)
{
    const gsmrt_allocator *a = m->ctx->a;
    if (m->chat == GSMRT_CHAT_FORMAT_NONE)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "the model's chat template (tokenizer.chat_template) is not recognised, so it cannot "
                             "chat; choose a format by name when loading it (gsmrt_model_params.chat_format: %s)",
                             gsmrt_chat_format_known());
    char *text = NULL;
    size_t len = 0, n_content = 0;
    struct gsmrt_text_range *content = NULL;
    /* the format's markers are control tokens; what the messages say never is */
    gsmrt_status st = gsmrt_chat_render_marked(a, m->chat, msgs, n, generation_prompt, &text, &len, &content,
                                               &n_content, err);
    if (st == GSMRT_OK) st = gsmrt_tokenizer_encode_markup(m->tok, text, len, true, content, n_content, out, err);
    gsmrt_mem_free(a, content);
    gsmrt_mem_free(a, text);
    return st;
}

gsmrt_status gsmrt_api_chat_prompt(const gsmrt_session *s, uint32_t n_msgs, bool generation_prompt,
                                   struct gsmrt_tokens *out, struct gsmrt_err *err)
{
    const gsmrt_allocator *a = alloc_of(s);
    struct gsmrt_chat_msg *msgs = gsmrt_mem_calloc(a, n_msgs ? n_msgs : 1, sizeof *msgs);
    if (!msgs) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "chat");
    for (uint32_t i = 0; i < n_msgs; i++)
        msgs[i] = (struct gsmrt_chat_msg){.role = (enum gsmrt_chat_role)s->msgs[i].role, .content = s->msgs[i].text};
    gsmrt_status st = gsmrt_api_encode_chat(s->model, msgs, n_msgs, generation_prompt, out, err);
    gsmrt_mem_free(a, msgs);
    return st;
}

uint32_t gsmrt_session_n_messages(const gsmrt_session *s)
{
    return s ? s->n_msgs : 0;
}

uint32_t gsmrt_session_n_past(const gsmrt_session *s)
{
    return s ? (uint32_t)s->past.n : 0;
}

uint32_t gsmrt_session_n_ctx(const gsmrt_session *s)
{
    return s ? s->n_ctx : 0;
}

gsmrt_status gsmrt_session_prompt_tokens(const gsmrt_session *s, size_t *n_tokens)
{
    if (n_tokens) *n_tokens = 0;
    if (!s || !n_tokens) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct gsmrt_tokens t = {NULL, 0, 0};
    gsmrt_status st = gsmrt_api_chat_prompt(s, s->n_msgs, true, &t, &err);
    if (st == GSMRT_OK) *n_tokens = t.n;
    gsmrt_tokens_free(alloc_of(s), &t);
    return st == GSMRT_OK ? GSMRT_OK : gsmrt_api_fail(s->model->ctx, &err, st);
}

/* After the history changed: the cache keeps only what still starts the
 * rendered history (the next turn re-evaluates the rest). Without the
 * tokens (no memory) it keeps nothing, which is always correct. */
static void trim_past(gsmrt_session *s)
{
    struct gsmrt_tokens t = {NULL, 0, 0};
    size_t k = 0;
    if (gsmrt_api_chat_prompt(s, s->n_msgs, false, &t, NULL) == GSMRT_OK)
        while (k < s->past.n && k < t.n && s->past.ids[k] == t.ids[k]) k++;
    s->past.n = k;
    gsmrt_tokens_free(alloc_of(s), &t);
}

gsmrt_status gsmrt_session_remove_messages(gsmrt_session *s, uint32_t first, uint32_t n)
{
    if (!s) return GSMRT_E_INVALID_ARGUMENT;
    struct gsmrt_err err = {GSMRT_OK, ""};
    if (first > s->n_msgs || n > s->n_msgs - first)   /* no first + n: it may wrap */
        return gsmrt_api_fail(s->model->ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT,
                                            "remove messages %u..+%u: the history holds %u", first, n, s->n_msgs));
    if (n == 0) return GSMRT_OK;
    for (uint32_t i = first; i < first + n; i++) gsmrt_mem_free(alloc_of(s), s->msgs[i].text);
    memmove(s->msgs + first, s->msgs + first + n, (s->n_msgs - first - n) * sizeof *s->msgs);
    s->n_msgs -= n;
    trim_past(s);
    return GSMRT_OK;
}

gsmrt_status gsmrt_session_pop_messages(gsmrt_session *s, uint32_t n)
{
    if (!s) return GSMRT_E_INVALID_ARGUMENT;
    if (n > s->n_msgs) {
        struct gsmrt_err err = {GSMRT_OK, ""};
        return gsmrt_api_fail(s->model->ctx, &err,
                              gsmrt_err_set(&err, GSMRT_E_INVALID_ARGUMENT, "pop %u messages: the history holds %u",
                                            n, s->n_msgs));
    }
    return gsmrt_session_remove_messages(s, s->n_msgs - n, n);
}
