/* chat.c -- chat formats (see chat.h). Each renderer writes through a small
 * growable buffer; detection checks markers in llama.cpp's order, so a
 * template that carries several markers gets the format llama.cpp picks. */
#include "text/chat.h"

#include <string.h>

#include "base/mem.h"

#define EOS_DS "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"   /* <｜end▁of▁sentence｜> */
#define USER_DS "<\xEF\xBD\x9CUser\xEF\xBD\x9C>"                                        /* <｜User｜> */
#define ASSISTANT_DS "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>"                           /* <｜Assistant｜> */

static const struct {
    enum gsmrt_chat_format f;
    const char *name;
} names[] = {
    {GSMRT_CHAT_FORMAT_CHATML, "chatml"},       {GSMRT_CHAT_FORMAT_LLAMA3, "llama3"},
    {GSMRT_CHAT_FORMAT_DEEPSEEK2, "deepseek2"}, {GSMRT_CHAT_FORMAT_DEEPSEEK3, "deepseek3"},
    {GSMRT_CHAT_FORMAT_GSM_TINY, "gsm-tiny"},
};
#define N_NAMES (sizeof names / sizeof names[0])
static const char known[] = "chatml, llama3, deepseek2, deepseek3, gsm-tiny (phi3)";

const char *gsmrt_chat_format_known(void)
{
    return known;
}

const char *gsmrt_chat_format_name(enum gsmrt_chat_format f)
{
    for (size_t i = 0; i < N_NAMES; i++)
        if (names[i].f == f) return names[i].name;
    return NULL;
}

gsmrt_status gsmrt_chat_format_from_name(const char *name, enum gsmrt_chat_format *out, struct gsmrt_err *err)
{
    if (!name || !out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat format: NULL argument");
    for (size_t i = 0; i < N_NAMES; i++) {
        if (strcmp(names[i].name, name) == 0) {
            *out = names[i].f;
            return GSMRT_OK;
        }
    }
    if (strcmp(name, "phi3") == 0) {
        *out = GSMRT_CHAT_FORMAT_GSM_TINY;
        return GSMRT_OK;
    }
    return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "chat format '%s' is not known (known: %s)", name, known);
}

gsmrt_status gsmrt_chat_format_detect(const char *tmpl, enum gsmrt_chat_format *out, struct gsmrt_err *err)
{
    if (!tmpl || !out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat template: NULL argument");
#define HAS(s) (strstr(tmpl, (s)) != NULL)
    /* a template that is itself a format name */
    if (gsmrt_chat_format_from_name(tmpl, out, NULL) == GSMRT_OK) return GSMRT_OK;
    if (HAS("<|im_start|>") && !HAS("<|im_sep|>") && !HAS("<end_of_utterance>")) {
        *out = GSMRT_CHAT_FORMAT_CHATML;
    } else if (HAS("<|assistant|>") && HAS("<|end|>") && !HAS("<|im_start|>")) {
        *out = GSMRT_CHAT_FORMAT_GSM_TINY;
    } else if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>")) {
        *out = GSMRT_CHAT_FORMAT_LLAMA3;
    } else if (HAS(ASSISTANT_DS) && HAS(USER_DS) && HAS(EOS_DS)) {
        *out = GSMRT_CHAT_FORMAT_DEEPSEEK3;
    } else if (HAS("'Assistant: ' + message['content'] + eos_token")) {
        *out = GSMRT_CHAT_FORMAT_DEEPSEEK2;
    } else {
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "chat template not recognised (known formats: %s; choose one by name)", known);
    }
#undef HAS
    return GSMRT_OK;
}

/* ---- rendering ---------------------------------------------------------- */

struct sbuf {
    const gsmrt_allocator *a;
    char *s;
    size_t n, cap;
    bool oom;
    struct gsmrt_text_range *content;   /* where message content was written; NULL: not recorded */
    size_t n_content;
    bool record;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    size_t need;
    if (!gsmrt_size_add(b->n, n, &need) || !gsmrt_size_add(need, 1, &need)) {
        b->oom = true;
        return;
    }
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need) {
            if (cap > SIZE_MAX / 2) {
                cap = need;
                break;
            }
            cap *= 2;
        }
        char *ns = gsmrt_mem_alloc(b->a, cap);
        if (!ns) {
            b->oom = true;
            return;
        }
        if (b->n) memcpy(ns, b->s, b->n);
        gsmrt_mem_free(b->a, b->s);
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void puts_(struct sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Message content: written like any text, and its range recorded (one
 * range per message; the caller sized the array). */
static void put_content(struct sbuf *b, const char *s, size_t n)
{
    size_t off = b->n;
    put(b, s, n);
    if (b->record && !b->oom && n > 0) b->content[b->n_content++] = (struct gsmrt_text_range){off, n};
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* llama.cpp's trim(): leading and trailing ASCII whitespace */
static void put_trimmed(struct sbuf *b, const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n && is_space(s[i])) i++;
    while (n > i && is_space(s[n - 1])) n--;
    put_content(b, s + i, n - i);
}

static const char *role_name(enum gsmrt_chat_role r)
{
    switch (r) {
    case GSMRT_CHAT_ROLE_SYSTEM: return "system";
    case GSMRT_CHAT_ROLE_USER: return "user";
    case GSMRT_CHAT_ROLE_ASSISTANT: return "assistant";
    }
    return NULL;
}

static void render_one(struct sbuf *b, enum gsmrt_chat_format f, const struct gsmrt_chat_msg *m)
{
    const char *role = role_name(m->role);
    switch (f) {
    case GSMRT_CHAT_FORMAT_CHATML:
        puts_(b, "<|im_start|>");
        puts_(b, role);
        puts_(b, "\n");
        put_content(b, m->content, strlen(m->content));
        puts_(b, "<|im_end|>\n");
        break;
    case GSMRT_CHAT_FORMAT_LLAMA3:
        puts_(b, "<|start_header_id|>");
        puts_(b, role);
        puts_(b, "<|end_header_id|>\n\n");
        put_trimmed(b, m->content);
        puts_(b, "<|eot_id|>");
        break;
    case GSMRT_CHAT_FORMAT_DEEPSEEK2:
        if (m->role == GSMRT_CHAT_ROLE_SYSTEM) {
            put_content(b, m->content, strlen(m->content));
            puts_(b, "\n\n");
        } else if (m->role == GSMRT_CHAT_ROLE_USER) {
            puts_(b, "User: ");
            put_content(b, m->content, strlen(m->content));
            puts_(b, "\n\n");
        } else {
            puts_(b, "Assistant: ");
            put_content(b, m->content, strlen(m->content));
            puts_(b, EOS_DS);
        }
        break;
    case GSMRT_CHAT_FORMAT_DEEPSEEK3:
        if (m->role == GSMRT_CHAT_ROLE_SYSTEM) {
            put_content(b, m->content, strlen(m->content));
            puts_(b, "\n\n");
        } else if (m->role == GSMRT_CHAT_ROLE_USER) {
            puts_(b, USER_DS);
            put_content(b, m->content, strlen(m->content));
        } else {
            puts_(b, ASSISTANT_DS);
            put_content(b, m->content, strlen(m->content));
            puts_(b, EOS_DS);
        }
        break;
    case GSMRT_CHAT_FORMAT_NONE:   /* refused by gsmrt_chat_render_marked */
        break;
    case GSMRT_CHAT_FORMAT_GSM_TINY:
        puts_(b, "<|");
        puts_(b, role);
        puts_(b, "|>\n");
        put_content(b, m->content, strlen(m->content));
        puts_(b, "<|end|>\n");
        break;
    }
}

static const char *generation_prompt(enum gsmrt_chat_format f)
{
    switch (f) {
    case GSMRT_CHAT_FORMAT_CHATML: return "<|im_start|>assistant\n";
    case GSMRT_CHAT_FORMAT_LLAMA3: return "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case GSMRT_CHAT_FORMAT_DEEPSEEK2: return "Assistant:";
    case GSMRT_CHAT_FORMAT_DEEPSEEK3: return ASSISTANT_DS;
    case GSMRT_CHAT_FORMAT_GSM_TINY: return "<|assistant|>\n";
    case GSMRT_CHAT_FORMAT_NONE: return "";
    }
    return "";
}

gsmrt_status gsmrt_chat_render(const gsmrt_allocator *a, enum gsmrt_chat_format f, const struct gsmrt_chat_msg *msgs,
                               size_t n, bool add_generation_prompt, char **text, size_t *len,
                               struct gsmrt_err *err)
{
    return gsmrt_chat_render_marked(a, f, msgs, n, add_generation_prompt, text, len, NULL, NULL, err);
}

gsmrt_status gsmrt_chat_render_marked(const gsmrt_allocator *a, enum gsmrt_chat_format f,
                                      const struct gsmrt_chat_msg *msgs, size_t n, bool add_generation_prompt,
                                      char **text, size_t *len, struct gsmrt_text_range **content,
                                      size_t *n_content, struct gsmrt_err *err)
{
    if (!text) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat render: NULL text");
    *text = NULL;
    if (len) *len = 0;
    if (content) *content = NULL;
    if (n_content) *n_content = 0;
    if (!content != !n_content)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat render: content without n_content");
    if (!gsmrt_chat_format_name(f))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat render: format %d is not known", (int)f);
    if (n && !msgs) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat render: NULL messages");
    for (size_t i = 0; i < n; i++) {
        if (!role_name(msgs[i].role))
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat render: message %zu: role %d is not "
                                 "system, user or assistant", i, (int)msgs[i].role);
        if (!msgs[i].content)
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "chat render: message %zu: NULL content", i);
    }
    struct sbuf b = {.a = a, .record = content != NULL};
    size_t bytes;
    if (b.record && (!gsmrt_size_mul(n ? n : 1, sizeof *b.content, &bytes) ||
                     !(b.content = gsmrt_mem_alloc(a, bytes))))
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "chat render: %zu messages", n);
    put(&b, "", 0);   /* an empty conversation still gives a string */
    for (size_t i = 0; i < n; i++) render_one(&b, f, &msgs[i]);
    if (add_generation_prompt) puts_(&b, generation_prompt(f));
    if (b.oom) {
        gsmrt_mem_free(a, b.s);
        gsmrt_mem_free(a, b.content);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "chat render: %zu messages", n);
    }
    *text = b.s;
    if (len) *len = b.n;
    if (content) {
        *content = b.content;
        *n_content = b.n_content;
    }
    return GSMRT_OK;
}
