/* tokenizer.h -- byte-level BPE, as llama.cpp's "gpt2" tokenizer model.
 *
 * Built from plain arrays (the GGUF keys of docs/deepseek2-gguf.md §8), so it
 * does not depend on the GGUF reader. Encoding: control/user-defined tokens
 * are cut out of the text first (longest text first, llama.cpp's
 * tokenizer_st_partition), the rest is pre-tokenized by the regex set of
 * `pre` (pretok.h), each piece is mapped byte -> GPT-2 code point and merged
 * by merge rank (lowest first, leftmost on ties). A merged symbol missing
 * from the vocabulary falls back, like llama.cpp, to the one-byte tokens of
 * its encoded bytes (bytes with no such token are dropped).
 *
 * A tokenizer is immutable after create: any number of threads may encode
 * and look up pieces at once. */
#ifndef GSMRT_TEXT_TOKENIZER_H
#define GSMRT_TEXT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* tokenizer.ggml.token_type values */
enum gsmrt_token_type {
    GSMRT_TOKEN_TYPE_NORMAL = 1,
    GSMRT_TOKEN_TYPE_UNKNOWN = 2,
    GSMRT_TOKEN_TYPE_CONTROL = 3,
    GSMRT_TOKEN_TYPE_USER_DEFINED = 4,
    GSMRT_TOKEN_TYPE_UNUSED = 5,
    GSMRT_TOKEN_TYPE_BYTE = 6
};

/* What the tokenizer is made from. Everything is copied by create; the
 * caller keeps ownership of the arrays. */
struct gsmrt_vocab_desc {
    uint32_t n_tokens;
    const char *const *tokens;     /* [n_tokens] texts, GPT-2 byte alphabet for normal tokens */
    const uint32_t *token_lens;    /* [n_tokens] byte lengths; NULL: texts are NUL-terminated */
    const int32_t *token_types;    /* [n_tokens] enum gsmrt_token_type; NULL: all normal */
    uint32_t n_merges;
    const char *const *merges;     /* [n_merges] "left right"; rank = index */
    const uint32_t *merge_lens;    /* [n_merges]; NULL: NUL-terminated */
    const char *pre;               /* tokenizer.ggml.pre; NULL or "" = "default" */
    int32_t bos_id;                /* -1 if absent */
    int32_t eos_id;                /* -1 if absent */
    int32_t eot_id;                /* -1 if absent */
    bool add_bos;                  /* tokenizer.ggml.add_bos_token */
};

struct gsmrt_tokenizer;

/* A growable list of token ids, owned by the caller; zero-initialise it.
 * Encoding appends; free it with gsmrt_tokens_free. */
struct gsmrt_tokens {
    int32_t *ids;   /* [n] */
    size_t n;
    size_t cap;
};

/* Builds the tokenizer. Errors: GSMRT_E_INVALID_ARGUMENT (NULL arrays),
 * GSMRT_E_FORMAT (duplicate token text, token type out of range, add_bos
 * without a valid bos_id; other special ids out of range are ignored, as
 * llama.cpp does, and read back as -1; empty texts are never matched),
 * GSMRT_E_UNSUPPORTED (unknown pre-tokenizer; the message lists the known
 * ones), GSMRT_E_OUT_OF_HOST_MEMORY. *out is NULL on failure. */
gsmrt_status gsmrt_tokenizer_create(const gsmrt_allocator *a, const struct gsmrt_vocab_desc *desc,
                                    struct gsmrt_tokenizer **out, struct gsmrt_err *err);
void gsmrt_tokenizer_destroy(struct gsmrt_tokenizer *t);   /* NULL is fine */

/* Appends the tokens of text[0..len) to *out, as llama_tokenize(text,
 * add_special, parse_special): add_special puts BOS in front when the model
 * asks for it (add_bos); parse_special lets control tokens written in the
 * text become those tokens (user-defined tokens are always matched).
 * text must be valid UTF-8 (GSMRT_E_INVALID_ARGUMENT with the byte offset
 * otherwise). On failure *out is left as it was. */
gsmrt_status gsmrt_tokenizer_encode(const struct gsmrt_tokenizer *t, const char *text, size_t len,
                                    bool add_special, bool parse_special, struct gsmrt_tokens *out,
                                    struct gsmrt_err *err);

/* A byte range of a text: off, len. */
struct gsmrt_text_range {
    size_t off, len;
};

/* Encodes markup with embedded plain text, such as a rendered chat: control
 * tokens written in the text become those tokens, except where their text
 * overlaps one of the plain ranges (sorted, not overlapping, inside the
 * text), which stays text however it is written. So message content can
 * never forge a chat marker, while the rest of the text tokenizes exactly as
 * gsmrt_tokenizer_encode(..., parse_special = true) does (the same
 * fragments reach the BPE). GSMRT_E_INVALID_ARGUMENT for ranges out of the
 * text or out of order, and as gsmrt_tokenizer_encode. */
gsmrt_status gsmrt_tokenizer_encode_markup(const struct gsmrt_tokenizer *t, const char *text, size_t len,
                                           bool add_special, const struct gsmrt_text_range *plain, size_t n_plain,
                                           struct gsmrt_tokens *out, struct gsmrt_err *err);

/* The bytes a token stands for, as llama_token_to_piece: normal tokens are
 * decoded from the GPT-2 alphabet to raw bytes (possibly part of a UTF-8
 * character); user-defined tokens give their text; control and unknown
 * tokens give their text only when `special`, else nothing; unused and byte
 * tokens give nothing. The pointer stays valid for the tokenizer's life.
 * GSMRT_E_INVALID_ARGUMENT for an id out of range. */
gsmrt_status gsmrt_tokenizer_piece(const struct gsmrt_tokenizer *t, int32_t id, bool special, const char **bytes,
                                   size_t *len, struct gsmrt_err *err);

/* The token whose stored text is exactly text[0..len), or -1. */
int32_t gsmrt_tokenizer_find(const struct gsmrt_tokenizer *t, const char *text, size_t len);

uint32_t gsmrt_tokenizer_n_tokens(const struct gsmrt_tokenizer *t);
/* The type of a token; 0 for an id out of range. */
int32_t gsmrt_tokenizer_token_type(const struct gsmrt_tokenizer *t, int32_t id);
int32_t gsmrt_tokenizer_bos(const struct gsmrt_tokenizer *t);   /* -1 if absent */
int32_t gsmrt_tokenizer_eos(const struct gsmrt_tokenizer *t);
int32_t gsmrt_tokenizer_eot(const struct gsmrt_tokenizer *t);
bool gsmrt_tokenizer_add_bos(const struct gsmrt_tokenizer *t);
/* The canonical name of the pre-tokenizer in use ("qwen2", "deepseek-llm"...). */
const char *gsmrt_tokenizer_pre(const struct gsmrt_tokenizer *t);

/* End of generation: EOS, EOT, or a control token whose text is one of the
 * usual end markers (<|endoftext|>, <|im_end|>, <|eot_id|>, <|end|>,
 * <｜end▁of▁sentence｜>, ...), as llama.cpp's EOG auto-detection. */
bool gsmrt_tokenizer_is_eog(const struct gsmrt_tokenizer *t, int32_t id);

void gsmrt_tokens_free(const gsmrt_allocator *a, struct gsmrt_tokens *v);

#endif
