/* vocab.c -- the tokenizer and chat format of a GGUF model, from its
 * tokenizer.* keys (shared/docs/deepseek2-gguf.md §8). */
#include <string.h>

#include "base/mem.h"
#include "model/vocab.h"

static char *dup_str(const gsmrt_allocator *a, struct gsmrt_gguf_str s)
{
    char *d = gsmrt_mem_alloc(a, s.len + 1);
    if (d) {
        memcpy(d, s.ptr, s.len);
        d[s.len] = '\0';
    }
    return d;
}

/* Fills parallel arrays of pointers and lengths for a string array key. */
static gsmrt_status str_array(const struct gsmrt_gguf *g, const gsmrt_allocator *a, const char *key,
                              const char ***ptrs, uint32_t **lens, uint32_t *n, struct gsmrt_err *err)
{
    uint32_t type;
    uint64_t count;
    gsmrt_status st = gsmrt_gguf_get_arr_info(g, key, &type, &count, err);
    if (st != GSMRT_OK) return st;
    if (count > UINT32_MAX / 2)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': %llu entries", gsmrt_gguf_name(g), key,
                             (unsigned long long)count);
    struct gsmrt_gguf_str *s = gsmrt_mem_calloc(a, count ? count : 1, sizeof *s);
    *ptrs = gsmrt_mem_calloc(a, count ? count : 1, sizeof **ptrs);
    *lens = gsmrt_mem_calloc(a, count ? count : 1, sizeof **lens);
    if (!s || !*ptrs || !*lens) st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "%s", key);
    if (st == GSMRT_OK) st = gsmrt_gguf_get_arr_str(g, key, s, count, err);
    for (uint64_t i = 0; st == GSMRT_OK && i < count; i++) {
        if (s[i].len > UINT32_MAX) st = gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: key '%s': entry %llu too long",
                                                      gsmrt_gguf_name(g), key, (unsigned long long)i);
        (*ptrs)[i] = s[i].ptr;
        (*lens)[i] = (uint32_t)s[i].len;
    }
    gsmrt_mem_free(a, s);
    *n = (uint32_t)count;
    return st;
}

static int32_t opt_id(const struct gsmrt_gguf *g, const char *key, struct gsmrt_err *err, gsmrt_status *st)
{
    uint32_t v = UINT32_MAX;
    if (*st == GSMRT_OK) *st = gsmrt_gguf_get_u32_opt(g, key, UINT32_MAX, &v, err);
    return v == UINT32_MAX ? -1 : (int32_t)v;
}

gsmrt_status gsmrt_vocab_load(const struct gsmrt_gguf *g, const gsmrt_allocator *a, const char *chat_format,
                              struct gsmrt_tokenizer **tok, enum gsmrt_chat_format *format,
                              struct gsmrt_err *err)
{
    *tok = NULL;
    struct gsmrt_gguf_str model, pre, tmpl;
    gsmrt_status st = gsmrt_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
    if (st != GSMRT_OK) return st;
    if (model.len != 4 || memcmp(model.ptr, "gpt2", 4) != 0)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "%s: tokenizer.ggml.model '%.*s' is not supported (only gpt2)",
                             gsmrt_gguf_name(g), (int)(model.len > 64 ? 64 : model.len), model.ptr);
    struct gsmrt_vocab_desc d;
    memset(&d, 0, sizeof d);
    const char **tokens = NULL, **merges = NULL;
    uint32_t *token_lens = NULL, *merge_lens = NULL;
    char *pre_name = NULL, *tmpl_text = NULL;
    st = str_array(g, a, "tokenizer.ggml.tokens", &tokens, &token_lens, &d.n_tokens, err);
    if (st == GSMRT_OK) {   /* such a vocabulary would tokenize every text to BOS alone */
        uint32_t n_text = 0;
        for (uint32_t i = 0; i < d.n_tokens; i++) n_text += token_lens[i] > 0;
        if (n_text == 0)
            st = gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tokenizer.ggml.tokens: all %u token texts are empty",
                               gsmrt_gguf_name(g), d.n_tokens);
    }
    if (st == GSMRT_OK) st = str_array(g, a, "tokenizer.ggml.merges", &merges, &merge_lens, &d.n_merges, err);
    const void *raw_types = NULL;
    int32_t *types = NULL;   /* an aligned copy: metadata in the file is unaligned */
    uint64_t n_types = 0;
    if (st == GSMRT_OK && gsmrt_gguf_find_kv(g, "tokenizer.ggml.token_type")) {
        st = gsmrt_gguf_get_arr(g, "tokenizer.ggml.token_type", GSMRT_GGUF_TYPE_I32, &raw_types, &n_types, err);
        if (st == GSMRT_OK && n_types != d.n_tokens)
            st = gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tokenizer.ggml.token_type has %llu entries for %u tokens",
                               gsmrt_gguf_name(g), (unsigned long long)n_types, d.n_tokens);
        if (st == GSMRT_OK && !(types = gsmrt_mem_alloc(a, n_types ? n_types * sizeof *types : 1)))
            st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "token types");
        if (st == GSMRT_OK && n_types) memcpy(types, raw_types, n_types * sizeof *types);
    }
    if (st == GSMRT_OK) st = gsmrt_gguf_get_str_opt(g, "tokenizer.ggml.pre", "default", &pre, err);
    if (st == GSMRT_OK && !(pre_name = dup_str(a, pre))) st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pre");
    d.bos_id = opt_id(g, "tokenizer.ggml.bos_token_id", err, &st);
    d.eos_id = opt_id(g, "tokenizer.ggml.eos_token_id", err, &st);
    d.eot_id = opt_id(g, "tokenizer.ggml.eot_token_id", err, &st);
    if (st == GSMRT_OK) st = gsmrt_gguf_get_bool_opt(g, "tokenizer.ggml.add_bos_token", false, &d.add_bos, err);
    if (st == GSMRT_OK) {
        d.tokens = tokens;
        d.token_lens = token_lens;
        d.token_types = types;
        d.merges = merges;
        d.merge_lens = merge_lens;
        d.pre = pre_name;
        st = gsmrt_tokenizer_create(a, &d, tok, err);
    }
    if (st == GSMRT_OK) {
        if (chat_format && *chat_format) {
            st = gsmrt_chat_format_from_name(chat_format, format, err);
        } else {
            st = gsmrt_gguf_get_str_opt(g, "tokenizer.chat_template", "", &tmpl, err);
            if (st == GSMRT_OK && !(tmpl_text = dup_str(a, tmpl)))
                st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "chat template");
            /* a template we cannot read leaves the model without chat, not unusable:
             * raw completion needs no template (the chat then asks for a format) */
            if (st == GSMRT_OK && gsmrt_chat_format_detect(tmpl_text, format, NULL) != GSMRT_OK)
                *format = GSMRT_CHAT_FORMAT_NONE;
            if (st != GSMRT_OK)
                gsmrt_err_prefix(err, "%s: tokenizer.chat_template: ", gsmrt_gguf_name(g));
        }
    }
    gsmrt_mem_free(a, tokens), gsmrt_mem_free(a, token_lens);
    gsmrt_mem_free(a, merges), gsmrt_mem_free(a, merge_lens);
    gsmrt_mem_free(a, pre_name), gsmrt_mem_free(a, tmpl_text), gsmrt_mem_free(a, types);
    if (st != GSMRT_OK) {
        gsmrt_tokenizer_destroy(*tok);
        *tok = NULL;
    }
    return st;
}
