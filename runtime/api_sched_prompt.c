/* api_sched_prompt.c -- the tokens of a scheduler request: a raw prompt, or
 * chat messages rendered in the model's format.
 *
 * Chat content never becomes control tokens: the messages are rendered with
 * the positions of their contents marked (gsmrt_chat_render_marked), and
 * only the text outside those ranges may hold the format's markers
 * (gsmrt_tokenizer_encode_markup): gsmrt_api_encode_chat, the path
 * gsmrt_session_generate takes too, so a conversation tokenizes alike
 * through a session and the scheduler. */
#include <string.h>

#include "api_sched.h"
#include "text/chat.h"
#include "text/utf8.h"

static gsmrt_status check_messages(const gsmrt_request_params *p, struct gsmrt_err *err)
{
    for (size_t i = 0; i < p->n_messages; i++) {
        const gsmrt_message *m = &p->messages[i];
        size_t bad;
        if ((unsigned)m->role > GSMRT_ROLE_ASSISTANT)
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "messages[%zu]: role %d is not system, user or "
                                 "assistant", i, (int)m->role);
        if (!m->content) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "messages[%zu]: no content", i);
        if (!gsmrt_utf8_valid(m->content, strlen(m->content), &bad))
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "messages[%zu].content: invalid UTF-8 at byte %zu",
                                 i, bad);
    }
    return GSMRT_OK;
}

static gsmrt_status encode_chat(const gsmrt_model *m, const gsmrt_request_params *p, struct gsmrt_tokens *out,
                                struct gsmrt_err *err)
{
    const gsmrt_allocator *a = m->ctx->a;
    gsmrt_status st = check_messages(p, err);
    if (st != GSMRT_OK) return st;
    struct gsmrt_chat_msg *msgs = gsmrt_mem_calloc(a, p->n_messages, sizeof *msgs);
    if (!msgs) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "chat messages");
    for (size_t i = 0; i < p->n_messages; i++)
        msgs[i] = (struct gsmrt_chat_msg){.role = (enum gsmrt_chat_role)p->messages[i].role,
                                          .content = p->messages[i].content};
    st = gsmrt_api_encode_chat(m, msgs, p->n_messages, true, out, err);
    gsmrt_mem_free(a, msgs);
    return st;
}

gsmrt_status gsmrt_sched_tokenize(const gsmrt_model *m, const gsmrt_request_params *p, struct gsmrt_tokens *out,
                                  struct gsmrt_err *err)
{
    if (p->prompt) {
        size_t bad, n = strlen(p->prompt);
        if (!gsmrt_utf8_valid(p->prompt, n, &bad))
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "prompt: invalid UTF-8 at byte %zu", bad);
        return gsmrt_tokenizer_encode(m->tok, p->prompt, n, true, false, out, err);
    }
    if (!p->messages || p->n_messages == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "a request needs a prompt or at least one message");
    return encode_chat(m, p, out, err);
}
