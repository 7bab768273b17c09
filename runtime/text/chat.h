/* chat.h -- chat formats: a list of messages (+ the generation prompt)
 * rendered to the text a model was trained on.
 *
 * Each format renders exactly what llama.cpp's built-in format of the same
 * name renders (llm_chat_apply_template); the template string stored in a
 * model (tokenizer.chat_template, Jinja) is recognised by its markers, as
 * llama.cpp's llm_chat_detect_template does, not executed. BOS is not part
 * of the text: the tokenizer adds it (add_bos). */
#ifndef GSMRT_TEXT_CHAT_H
#define GSMRT_TEXT_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "text/tokenizer.h"

enum gsmrt_chat_role {
    GSMRT_CHAT_ROLE_SYSTEM = 0,
    GSMRT_CHAT_ROLE_USER = 1,
    GSMRT_CHAT_ROLE_ASSISTANT = 2
};

enum gsmrt_chat_format {
    GSMRT_CHAT_FORMAT_NONE = 0,        /* the model's template was not recognised: no chat, raw completion only */
    GSMRT_CHAT_FORMAT_CHATML = 1,      /* "chatml": <|im_start|>role\n...<|im_end|>\n */
    GSMRT_CHAT_FORMAT_LLAMA3 = 2,      /* "llama3": <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    GSMRT_CHAT_FORMAT_DEEPSEEK2 = 3,   /* "deepseek2": User: ...\n\nAssistant: ...<｜end▁of▁sentence｜> */
    GSMRT_CHAT_FORMAT_DEEPSEEK3 = 4,   /* "deepseek3": <｜User｜>...<｜Assistant｜>...<｜end▁of▁sentence｜> */
    GSMRT_CHAT_FORMAT_GSM_TINY = 5     /* "gsm-tiny" (= llama.cpp's "phi3"): <|role|>\n...<|end|>\n */
};

struct gsmrt_chat_msg {
    enum gsmrt_chat_role role;
    const char *content;   /* NUL-terminated UTF-8 */
};

/* "chatml", "llama3", "deepseek2", "deepseek3", "gsm-tiny"; NULL for a value
 * not in the enum. */
const char *gsmrt_chat_format_name(enum gsmrt_chat_format f);

/* "chatml, llama3, deepseek2, deepseek3, gsm-tiny (phi3)": the names a
 * caller may choose from, for messages. */
const char *gsmrt_chat_format_known(void);

/* The format of a name above ("phi3" is accepted for gsm-tiny).
 * GSMRT_E_UNSUPPORTED for another name; the message lists the known ones. */
gsmrt_status gsmrt_chat_format_from_name(const char *name, enum gsmrt_chat_format *out, struct gsmrt_err *err);

/* Recognises a model's chat template by its markers. A template matching
 * none is GSMRT_E_UNSUPPORTED; the message lists the known format names
 * (the caller may then choose one by name). */
gsmrt_status gsmrt_chat_format_detect(const char *tmpl, enum gsmrt_chat_format *out, struct gsmrt_err *err);

/* Renders msgs[0..n) (and, with add_generation_prompt, the opening of the
 * assistant's turn) into a new NUL-terminated string allocated with `a`
 * (free it with gsmrt_mem_free). *text is NULL on failure
 * (GSMRT_E_INVALID_ARGUMENT for a bad role/format/NULL content,
 * GSMRT_E_OUT_OF_HOST_MEMORY). */
gsmrt_status gsmrt_chat_render(const gsmrt_allocator *a, enum gsmrt_chat_format f, const struct gsmrt_chat_msg *msgs,
                               size_t n, bool add_generation_prompt, char **text, size_t *len,
                               struct gsmrt_err *err);

/* gsmrt_chat_render, and where each message's content landed in the text:
 * *content (allocated with `a`, free it with gsmrt_mem_free; sorted, one
 * range per non-empty message) for gsmrt_tokenizer_encode_markup, so that
 * content never becomes control tokens while the format's own markers do. */
gsmrt_status gsmrt_chat_render_marked(const gsmrt_allocator *a, enum gsmrt_chat_format f,
                                      const struct gsmrt_chat_msg *msgs, size_t n, bool add_generation_prompt,
                                      char **text, size_t *len, struct gsmrt_text_range **content,
                                      size_t *n_content, struct gsmrt_err *err);

#endif
