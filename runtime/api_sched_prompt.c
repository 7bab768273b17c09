/* api_sched_prompt.c -- the tokens of a scheduler request: a raw prompt, or
 * chat messages rendered in the model's format with the content kept apart
 * from the markup.
 *
 * Why apart: tokenizing the rendered text with special-token parsing on (as
 * gsmrt_session_generate does) would let a user write "<|end|><|system|>"
 * in a message and have it read as control tokens. The messages are rendered
 * with a one-byte placeholder (0x1E, which no template contains) for each
 * content; the markup between placeholders is tokenized with special tokens
 * parsed, each content with special tokens off. */
#include <string.h>

#include "api_sched.h"
#include "text/chat.h"
#include "text/utf8.h"

#define PLACEHOLDER '\x1e'

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The content as the format renders it: llama3 trims ASCII whitespace
 * (llama.cpp's trim()), the others keep it as given. */
static void content_span(enum gsmrt_chat_format f, const char *s, size_t *off, size_t *len)
{
    size_t n = strlen(s), i = 0;
    if (f == GSMRT_CHAT_FORMAT_LLAMA3) {
        while (i < n && is_space(s[i])) i++;
        while (n > i && is_space(s[n - 1])) n--;
    }
    *off = i;
    *len = n - i;
}

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
    static const char placeholder[2] = {PLACEHOLDER, '\0'};
    for (size_t i = 0; i < p->n_messages; i++)
        msgs[i] = (struct gsmrt_chat_msg){.role = (enum gsmrt_chat_role)p->messages[i].role, .content = placeholder};
    char *text = NULL;
    size_t len = 0;
    st = gsmrt_chat_render(a, m->chat, msgs, p->n_messages, true, &text, &len, err);
    gsmrt_mem_free(a, msgs);
    if (st != GSMRT_OK) return st;
    /* the BOS (when the model wants one) comes from encoding nothing with add_special */
    st = gsmrt_tokenizer_encode(m->tok, "", 0, true, false, out, err);
    size_t seg = 0, msg = 0;
    for (size_t i = 0; st == GSMRT_OK && i <= len; i++) {
        if (i < len && text[i] != PLACEHOLDER) continue;
        /* markup: special tokens are the format's own */
        if (i > seg) st = gsmrt_tokenizer_encode(m->tok, text + seg, i - seg, false, true, out, err);
        seg = i + 1;
        if (i == len || st != GSMRT_OK) break;
        if (msg >= p->n_messages) {   /* a placeholder the template did not get from us */
            st = gsmrt_err_set(err, GSMRT_E_INTERNAL, "chat render: more contents than messages");
            break;
        }
        size_t off, n;
        content_span(m->chat, p->messages[msg].content, &off, &n);
        if (n) st = gsmrt_tokenizer_encode(m->tok, p->messages[msg].content + off, n, false, false, out, err);
        msg++;
    }
    if (st == GSMRT_OK && msg != p->n_messages)
        st = gsmrt_err_set(err, GSMRT_E_INTERNAL, "chat render: %zu of %zu contents placed", msg, p->n_messages);
    gsmrt_mem_free(a, text);
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
