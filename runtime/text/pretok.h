/* pretok.h -- the pre-tokenizer of byte-level BPE: splits text into pieces
 * with the regex list of a `tokenizer.ggml.pre` type, as llama.cpp does
 * (each regex of the list splits every piece the previous ones produced;
 * text between matches stays a piece of its own). PCRE2 in UTF + UCP mode. */
#ifndef GSMRT_TEXT_PRETOK_H
#define GSMRT_TEXT_PRETOK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct gsmrt_pretok;

/* A piece: bytes text[off .. off+len). */
struct gsmrt_span {
    size_t off;
    size_t len;
};

/* Compiles the regex list of pre-tokenizer `name` (NULL or "" means
 * "default"). An unknown name is GSMRT_E_UNSUPPORTED, with a message that
 * names it and lists the known ones. */
gsmrt_status gsmrt_pretok_create(const gsmrt_allocator *a, const char *name, struct gsmrt_pretok **out,
                                 struct gsmrt_err *err);
void gsmrt_pretok_destroy(struct gsmrt_pretok *p);   /* NULL is fine */

/* The canonical name of the regex set ("llama3" for "llama-bpe"). */
const char *gsmrt_pretok_name(const struct gsmrt_pretok *p);

/* True for the types where llama.cpp looks a whole piece up in the
 * vocabulary before merging (tokenizer_ignore_merges: llama3). */
bool gsmrt_pretok_ignore_merges(const struct gsmrt_pretok *p);

/* Splits text[0..len) (valid UTF-8, which the caller checks) into pieces.
 * *spans is allocated with the pre-tokenizer's allocator (free it with
 * gsmrt_mem_free); on failure *spans is NULL and *n_spans 0. The pieces
 * cover the text in order. Thread-safe: `p` is only read. */
gsmrt_status gsmrt_pretok_split(const struct gsmrt_pretok *p, const char *text, size_t len,
                                struct gsmrt_span **spans, size_t *n_spans, struct gsmrt_err *err);

#endif
