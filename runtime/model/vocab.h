/* vocab.h -- building a model's tokenizer and chat format from GGUF keys. */
#ifndef GSMRT_MODEL_VOCAB_H
#define GSMRT_MODEL_VOCAB_H

#include "gguf/gguf.h"
#include "text/chat.h"
#include "text/tokenizer.h"

/* Reads tokenizer.ggml.* (model "gpt2" only) and recognises
 * tokenizer.chat_template, unless chat_format names a format; a template
 * that is absent or not recognised gives GSMRT_CHAT_FORMAT_NONE (the model
 * can complete raw text but not chat). A vocabulary whose token texts are
 * all empty is GSMRT_E_FORMAT naming tokenizer.ggml.tokens. The tokenizer
 * must not outlive g (it may point into the mapping). */
gsmrt_status gsmrt_vocab_load(const struct gsmrt_gguf *g, const gsmrt_allocator *a, const char *chat_format,
                              struct gsmrt_tokenizer **tok, enum gsmrt_chat_format *format,
                              struct gsmrt_err *err);

#endif
