/* pretok.c -- pre-tokenizer regex sets (data reproduced from llama.cpp's
 * llama-vocab.cpp) and the split loop over PCRE2.
 *
 * llama.cpp runs these with std::regex on a text where every non-ASCII code
 * point is collapsed to its Unicode category; PCRE2 with PCRE2_UCP matches
 * the same classes directly. `$` must mean end of piece only
 * (PCRE2_DOLLAR_ENDONLY), as in ECMAScript. Each regex sees one piece at a
 * time, so look-arounds never cross a piece boundary (as in llama.cpp). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/pretok.h"

#include <pcre2.h>
#include <string.h>

#include "base/mem.h"

/* ---- the regex sets ----------------------------------------------------- */

#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_CONTRACTIONS_CI "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_LLAMA3 RE_CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*" \
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 RE_CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*" \
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_CJK_LLM "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

#define MAX_REGEX 6

struct preset {
    const char *name;          /* canonical */
    const char *aliases[8];    /* other tokenizer.ggml.pre values with this set */
    bool ignore_merges;
    const char *regex[MAX_REGEX];
};

/* Non-ASCII characters are written as \x{...}: as literal text, an editor's
 * Unicode normalisation (NFC) silently turns some of deepseek-llm's letters
 * into others (U+1FD3 into U+0390, U+212A into 'K'), which breaks ranges. */
static const struct preset presets[] = {
    {"default", {0}, false,
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {"gpt-2", {"gpt2", "mpt", "olmo", "jais", "trillion", "phi-2", "roberta-bpe"}, false, {RE_GPT2}},
    {"llama3", {"llama-bpe", "llama-v3", "falcon3"}, true, {RE_LLAMA3}},
    {"dbrx", {"smaug-bpe"}, false, {RE_LLAMA3}},
    {"qwen2", {"stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan"}, false, {RE_QWEN2}},
    {"starcoder", {"refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, false,
     {"\\p{N}", RE_GPT2}},
    {"deepseek-llm", {0}, false,
     {"[\r\n]",
      "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-"
      "\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
      "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}"
      "\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}"
      "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"
      "\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}"
      "\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
      "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}"
      "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
      "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-"
      "\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"
      "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
      "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}"
      "\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-"
      "\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
      "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
      "\\s+$",
      RE_CJK_LLM,
      "\\p{N}+"}},
    {"deepseek-coder", {0}, false,
     {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK_LLM, "\\p{N}"}},
    {"deepseek-v3", {"hunyuan-dense"}, false,
     {"\\p{N}{1,3}",
      "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
      "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

static const char known_names[] =
    "default, gpt-2 (gpt2, mpt, olmo, jais, trillion, phi-2, roberta-bpe), "
    "llama3 (llama-bpe, llama-v3, falcon3), dbrx (smaug-bpe), "
    "qwen2 (stablelm2, deepseek-r1-qwen, megrez, hunyuan), "
    "starcoder (refact, command-r, smollm, codeshell, exaone, minerva-7b), "
    "deepseek-llm, deepseek-coder, deepseek-v3 (hunyuan-dense)";

/* ---- the compiled object ------------------------------------------------ */

struct gsmrt_pretok {
    const gsmrt_allocator *alloc;
    const struct preset *preset;
    pcre2_general_context *gctx;   /* routes PCRE2's allocations to `alloc` */
    pcre2_code *code[MAX_REGEX];
    size_t n_code;
};

static void *pcre_malloc(size_t size, void *user)
{
    return gsmrt_mem_alloc(user, size);
}

static void pcre_free(void *p, void *user)
{
    gsmrt_mem_free(user, p);
}

static const struct preset *find_preset(const char *name)
{
    for (size_t i = 0; i < N_PRESETS; i++) {
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
        for (size_t j = 0; j < 8 && presets[i].aliases[j]; j++)
            if (strcmp(presets[i].aliases[j], name) == 0) return &presets[i];
    }
    return NULL;
}

gsmrt_status gsmrt_pretok_create(const gsmrt_allocator *a, const char *name, struct gsmrt_pretok **out,
                                 struct gsmrt_err *err)
{
    if (!out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "pretok: NULL out");
    *out = NULL;
    if (!name || !*name) name = "default";
    const struct preset *ps = find_preset(name);
    if (!ps)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "pre-tokenizer '%s' is not supported (known: %s)", name,
                             known_names);
    struct gsmrt_pretok *p = gsmrt_mem_calloc(a, 1, sizeof *p);
    if (!p) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pre-tokenizer '%s'", name);
    p->alloc = a;
    p->preset = ps;
    gsmrt_status st = GSMRT_E_OUT_OF_HOST_MEMORY;
    /* the general context keeps a copy of its user pointer: the allocator */
    p->gctx = pcre2_general_context_create(pcre_malloc, pcre_free, (void *)a);
    if (!p->gctx) {
        gsmrt_err_set(err, st, "pre-tokenizer '%s': PCRE2 context", name);
        goto fail;
    }
    pcre2_compile_context *cctx = pcre2_compile_context_create(p->gctx);
    if (!cctx) {
        gsmrt_err_set(err, st, "pre-tokenizer '%s': PCRE2 context", name);
        goto fail;
    }
    for (size_t i = 0; i < MAX_REGEX && ps->regex[i]; i++) {
        int ec;
        PCRE2_SIZE eo;
        p->code[i] = pcre2_compile((PCRE2_SPTR)ps->regex[i], PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &ec, &eo, cctx);
        if (!p->code[i]) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(ec, msg, sizeof msg);
            st = ec == PCRE2_ERROR_HEAP_FAILED || ec == PCRE2_ERROR_NOMEMORY ? GSMRT_E_OUT_OF_HOST_MEMORY
                                                                            : GSMRT_E_INTERNAL;
            gsmrt_err_set(err, st, "pre-tokenizer '%s': regex %zu at offset %zu: %s", name, i, (size_t)eo,
                          (const char *)msg);
            pcre2_compile_context_free(cctx);
            goto fail;
        }
        p->n_code = i + 1;
    }
    pcre2_compile_context_free(cctx);
    *out = p;
    return GSMRT_OK;
fail:
    gsmrt_pretok_destroy(p);
    return st;
}

void gsmrt_pretok_destroy(struct gsmrt_pretok *p)
{
    if (!p) return;
    for (size_t i = 0; i < MAX_REGEX; i++) pcre2_code_free(p->code[i]);
    pcre2_general_context_free(p->gctx);
    gsmrt_mem_free(p->alloc, p);
}

const char *gsmrt_pretok_name(const struct gsmrt_pretok *p)
{
    return p->preset->name;
}

bool gsmrt_pretok_ignore_merges(const struct gsmrt_pretok *p)
{
    return p->preset->ignore_merges;
}

/* ---- splitting ---------------------------------------------------------- */

struct span_vec {
    const gsmrt_allocator *alloc;
    struct gsmrt_span *v;
    size_t n, cap;
};

static bool push_span(struct span_vec *sv, size_t off, size_t len)
{
    if (sv->n == sv->cap) {
        size_t cap = sv->cap ? sv->cap * 2 : 64, bytes;
        if (!gsmrt_size_mul(cap, sizeof *sv->v, &bytes)) return false;
        struct gsmrt_span *nv = gsmrt_mem_alloc(sv->alloc, bytes);
        if (!nv) return false;
        if (sv->n) memcpy(nv, sv->v, sv->n * sizeof *sv->v);
        gsmrt_mem_free(sv->alloc, sv->v);
        sv->v = nv;
        sv->cap = cap;
    }
    sv->v[sv->n].off = off;
    sv->v[sv->n].len = len;
    sv->n++;
    return true;
}

/* Splits one piece with one regex: matches, and the text between them. */
static gsmrt_status split_piece(const pcre2_code *code, pcre2_match_data *md, const char *text, size_t off,
                                size_t len, struct span_vec *out, struct gsmrt_err *err)
{
    const PCRE2_SPTR subj = (PCRE2_SPTR)(text + off);
    size_t start = 0, pos = 0;
    while (pos <= len) {
        int rc = pcre2_match(code, subj, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return gsmrt_err_set(err, rc == PCRE2_ERROR_NOMEMORY ? GSMRT_E_OUT_OF_HOST_MEMORY : GSMRT_E_INTERNAL,
                                 "pre-tokenizer: match at byte %zu: %s", off + pos, (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) {   /* empty match: none of the sets has one; step one character */
            pos = me + 1;
            while (pos < len && (subj[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (ms > start && !push_span(out, off + start, ms - start)) goto oom;
        if (!push_span(out, off + ms, me - ms)) goto oom;
        start = pos = me;
    }
    if (start < len && !push_span(out, off + start, len - start)) goto oom;
    return GSMRT_OK;
oom:
    return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pre-tokenizer: %zu pieces", out->n);
}

gsmrt_status gsmrt_pretok_split(const struct gsmrt_pretok *p, const char *text, size_t len,
                                struct gsmrt_span **spans, size_t *n_spans, struct gsmrt_err *err)
{
    if (!spans || !n_spans || !p || (!text && len))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "pretok_split: NULL argument");
    *spans = NULL;
    *n_spans = 0;
    gsmrt_status st = GSMRT_OK;
    struct span_vec cur = {p->alloc, NULL, 0, 0}, next = {p->alloc, NULL, 0, 0};
    pcre2_match_data *md = NULL;
    if (len == 0) return GSMRT_OK;
    md = pcre2_match_data_create(1, p->gctx);
    if (!md || !push_span(&cur, 0, len)) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pre-tokenizer: match data");
        goto done;
    }
    for (size_t r = 0; r < p->n_code; r++) {
        next.n = 0;
        for (size_t i = 0; i < cur.n; i++) {
            st = split_piece(p->code[r], md, text, cur.v[i].off, cur.v[i].len, &next, err);
            if (st != GSMRT_OK) goto done;
        }
        struct span_vec t = cur;
        cur = next;
        next = t;
    }
    *spans = cur.v;
    *n_spans = cur.n;
    cur.v = NULL;
done:
    pcre2_match_data_free(md);
    gsmrt_mem_free(p->alloc, cur.v);
    gsmrt_mem_free(p->alloc, next.v);
    return st;
}
