/* test_tokenizer.c -- byte-level BPE on a hand-made vocabulary whose merges
 * make every expected id derivable by hand; pre-tokenizer splits of each
 * regex set on tricky strings (contractions, digits, whitespace runs,
 * newlines, CJK, emoji), special-token parsing, byte fallback, pieces and
 * round trips, and the errors.
 *
 * The expected ids of test_bpe_hand_cases and test_specials were derived by
 * hand and then confirmed with llama.cpp itself (node-llama-cpp 3.22.1 =
 * llama.cpp v0.5.0, this vocabulary written to a vocab-only GGUF). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "support/fail_alloc.h"

#include "base/mem.h"
#include "text/pretok.h"
#include "text/tokenizer.h"

/* ---- the vocabulary ------------------------------------------------------
 * ids 0..255: one token per byte, in byte order, spelled in the GPT-2
 * alphabet (docs/deepseek2-gguf.md §8); then one token per merge below
 * (except "x y", whose result is deliberately missing); then specials. */

static const char *const merges[] = {
    "h e",        /* 0 -> 256 he */
    "l l",        /* 1 -> 257 ll */
    "he ll",      /* 2 -> 258 hell */
    "hell o",     /* 3 -> 259 hello */
    "\xC4\xA0 w", /* 4 -> 260 Ġw */
    "o r",        /* 5 -> 261 or */
    "\xC4\xA0w or", /* 6 -> 262 Ġwor */
    "l d",        /* 7 -> 263 ld */
    "\xC4\xA0wor ld", /* 8 -> 264 Ġworld */
    "a a",        /* 9 -> 265 aa */
    "b c",        /* 10 -> 266 bc */
    "a b",        /* 11 -> 267 ab */
    "x y",        /* 12 -> no token "xy": byte fallback */
    "\xC3\x83 \xC2\xA9", /* 13: "Ã ©" (é = C3 A9) -> no token: fallback drops it */
    "h e",        /* 14: a duplicate; the first rank stays */
};
#define N_MERGES (sizeof merges / sizeof merges[0])
enum { T_HE = 256, T_LL, T_HELL, T_HELLO, T_GW, T_OR, T_GWOR, T_LD, T_GWORLD, T_AA, T_BC, T_AB,
       T_BOS, T_END, T_USER, T_TOOL, T_EOT, T_UNUSED, N_TOK };

static char tok_text[N_TOK][16];
static const char *tok_ptr[N_TOK];
static int32_t tok_type[N_TOK];

static void gpt2_char(unsigned b, char *out)
{
    /* printable bytes stand for themselves; the rest map to U+0100.. in order */
    unsigned cp = b, n = 0;
    bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (!self) {
        for (unsigned c = 0; c < b; c++)
            if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)) n++;
        cp = 0x100 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

static void build_vocab(void)
{
    for (unsigned b = 0; b < 256; b++) {
        gpt2_char(b, tok_text[b]);
        tok_type[b] = GSMRT_TOKEN_TYPE_NORMAL;
    }
    const char *merged[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "or", "\xC4\xA0wor", "ld",
                            "\xC4\xA0world", "aa", "bc", "ab"};
    for (unsigned i = 0; i < 12; i++) {
        snprintf(tok_text[256 + i], sizeof tok_text[0], "%s", merged[i]);
        tok_type[256 + i] = GSMRT_TOKEN_TYPE_NORMAL;
    }
    snprintf(tok_text[T_BOS], 16, "<|bos|>");
    snprintf(tok_text[T_END], 16, "<|end|>");
    snprintf(tok_text[T_USER], 16, "<|user|>");
    snprintf(tok_text[T_TOOL], 16, "<tool>");
    snprintf(tok_text[T_EOT], 16, "<|eot_id|>");
    snprintf(tok_text[T_UNUSED], 16, "<unused0>");
    tok_type[T_BOS] = tok_type[T_END] = tok_type[T_USER] = tok_type[T_EOT] = GSMRT_TOKEN_TYPE_CONTROL;
    tok_type[T_TOOL] = GSMRT_TOKEN_TYPE_USER_DEFINED;
    tok_type[T_UNUSED] = GSMRT_TOKEN_TYPE_UNUSED;
    for (unsigned i = 0; i < N_TOK; i++) tok_ptr[i] = tok_text[i];
}

static struct gsmrt_tokenizer *make(const char *pre)
{
    struct gsmrt_vocab_desc d = {
        .n_tokens = N_TOK, .tokens = tok_ptr, .token_types = tok_type,
        .n_merges = N_MERGES, .merges = merges, .pre = pre,
        .bos_id = T_BOS, .eos_id = T_END, .eot_id = -1, .add_bos = true,
    };
    struct gsmrt_tokenizer *t = NULL;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    gsmrt_status st = gsmrt_tokenizer_create(NULL, &d, &t, &err);
    if (st != GSMRT_OK) fail_msg("create: %s", err.msg);
    return t;
}

static void expect_ids(struct gsmrt_tokenizer *t, const char *text, bool add_special, bool parse_special,
                       const int32_t *ids, size_t n)
{
    struct gsmrt_tokens v = {0};
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    gsmrt_status st = gsmrt_tokenizer_encode(t, text, strlen(text), add_special, parse_special, &v, &err);
    if (st != GSMRT_OK) fail_msg("encode '%s': %s", text, err.msg);
    if (v.n != n) {
        for (size_t i = 0; i < v.n; i++) print_error("%d ", v.ids[i]);
        fail_msg("encode '%s': %zu tokens, expected %zu", text, v.n, n);
    }
    for (size_t i = 0; i < n; i++) assert_int_equal(v.ids[i], ids[i]);
    gsmrt_tokens_free(NULL, &v);
}
#define EXPECT(t, text, as, ps, ...)                                                         \
    do {                                                                                     \
        const int32_t ids_[] = {__VA_ARGS__};                                                \
        expect_ids(t, text, as, ps, ids_, sizeof ids_ / sizeof ids_[0]);                     \
    } while (0)

/* ---- BPE ---------------------------------------------------------------- */

static void test_bpe_hand_cases(void **state)
{
    (void)state;
    struct gsmrt_tokenizer *t = make("gpt-2");
    /* he(0), ll(1) -> hell(2) -> hello(3); Ġw(4) or(5) ld(7) -> Ġwor(6) -> Ġworld(8) */
    EXPECT(t, "hello world", false, false, T_HELLO, T_GWORLD);
    /* add_special puts BOS in front (add_bos) */
    EXPECT(t, "hello", true, false, T_BOS, T_HELLO);
    /* equal ranks: the leftmost pair first: aa + a; aa + aa */
    EXPECT(t, "aaa", false, false, T_AA, 'a');
    EXPECT(t, "aaaa", false, false, T_AA, T_AA);
    /* the lower rank wins even to the right: b c (10) before a b (11) */
    EXPECT(t, "abc", false, false, 'a', T_BC);
    EXPECT(t, "ab", false, false, T_AB);
    /* "hel": he + l; "oll" : o + ll */
    EXPECT(t, "hel oll", false, false, T_HE, 'l', 32 /* the space byte */, 'o', T_LL);
    /* a merge whose result is not a token: llama.cpp's per-byte fallback
     * gives the one-byte tokens x and y */
    EXPECT(t, "xy", false, false, 'x', 'y');
    /* ...and for a non-ASCII pair no encoded byte is a token: dropped */
    EXPECT(t, "caf\xC3\xA9!", false, false, 'c', 'a', 'f', '!');
    /* without a merge, é is its two byte tokens; ü likewise */
    EXPECT(t, "\xC3\xBC", false, false, 0xC3, 0xBC);
    /* control bytes go through the GPT-2 table: "\t" is byte 9 */
    EXPECT(t, "\t", false, false, 9);
    gsmrt_tokenizer_destroy(t);
}

static void test_specials(void **state)
{
    (void)state;
    struct gsmrt_tokenizer *t = make("gpt-2");
    EXPECT(t, "<|user|>hello<|end|>", false, true, T_USER, T_HELLO, T_END);
    EXPECT(t, "<|user|>hello<|end|>", true, true, T_BOS, T_USER, T_HELLO, T_END);
    /* parse_special off: the text is plain text ("<|", "user", "|>" ...) */
    struct gsmrt_tokens v = {0};
    assert_int_equal(gsmrt_tokenizer_encode(t, "<|end|>", 7, false, false, &v, NULL), GSMRT_OK);
    for (size_t i = 0; i < v.n; i++) assert_true(v.ids[i] < 256);
    assert_int_equal(v.n, 7);
    /* user-defined tokens are matched either way */
    EXPECT(t, "a<tool>b", false, false, 'a', T_TOOL, 'b');
    EXPECT(t, "<tool><tool>", false, true, T_TOOL, T_TOOL);
    /* a special token glued to text on both sides */
    EXPECT(t, "hello<|end|>hello", false, true, T_HELLO, T_END, T_HELLO);
    /* appending keeps what the list held */
    assert_int_equal(gsmrt_tokenizer_encode(t, "ab", 2, false, false, &v, NULL), GSMRT_OK);
    assert_int_equal(v.n, 8);
    assert_int_equal(v.ids[7], T_AB);
    /* invalid UTF-8 is refused and the list is untouched */
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    assert_int_equal(gsmrt_tokenizer_encode(t, "ok\xFF", 3, true, false, &v, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "byte 2"));
    assert_int_equal(v.n, 8);
    gsmrt_tokens_free(NULL, &v);
    /* EOG: eos, and <|eot_id|> by its text */
    assert_true(gsmrt_tokenizer_is_eog(t, T_END));
    assert_true(gsmrt_tokenizer_is_eog(t, T_EOT));
    assert_false(gsmrt_tokenizer_is_eog(t, T_USER));
    assert_int_equal(gsmrt_tokenizer_find(t, "<|user|>", 8), T_USER);
    assert_int_equal(gsmrt_tokenizer_find(t, "nope", 4), -1);
    gsmrt_tokenizer_destroy(t);
}

static void test_pieces_round_trip(void **state)
{
    (void)state;
    struct gsmrt_tokenizer *t = make("qwen2");
    const char *bytes;
    size_t len;
    assert_int_equal(gsmrt_tokenizer_piece(t, T_GWORLD, false, &bytes, &len, NULL), GSMRT_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(bytes, " world", 6);
    assert_int_equal(gsmrt_tokenizer_piece(t, 0xC3, false, &bytes, &len, NULL), GSMRT_OK);
    assert_int_equal(len, 1);
    assert_int_equal((unsigned char)bytes[0], 0xC3);   /* half a character: raw byte */
    assert_int_equal(gsmrt_tokenizer_piece(t, T_END, false, &bytes, &len, NULL), GSMRT_OK);
    assert_int_equal(len, 0);   /* control: only when asked */
    assert_int_equal(gsmrt_tokenizer_piece(t, T_END, true, &bytes, &len, NULL), GSMRT_OK);
    assert_int_equal(len, 7);
    assert_memory_equal(bytes, "<|end|>", 7);
    assert_int_equal(gsmrt_tokenizer_piece(t, T_TOOL, false, &bytes, &len, NULL), GSMRT_OK);
    assert_memory_equal(bytes, "<tool>", 6);
    assert_int_equal(gsmrt_tokenizer_piece(t, T_UNUSED, true, &bytes, &len, NULL), GSMRT_OK);
    assert_int_equal(len, 0);
    assert_int_equal(gsmrt_tokenizer_piece(t, N_TOK, true, &bytes, &len, NULL), GSMRT_E_INVALID_ARGUMENT);

    /* every text decodes back to itself (no merge here drops bytes) */
    const char *texts[] = {
        "hello world", "  leading and trailing  ", "line1\nline2\r\n\n\ttab",
        "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C 12345", "emoji \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!",
        "<|user|>hi<|end|>", "we'll see, it's 3.14", "",
    };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        struct gsmrt_tokens v = {0};
        assert_int_equal(gsmrt_tokenizer_encode(t, texts[k], strlen(texts[k]), true, true, &v, NULL), GSMRT_OK);
        char out[256];
        size_t w = 0;
        for (size_t i = 0; i < v.n; i++) {
            assert_int_equal(gsmrt_tokenizer_piece(t, v.ids[i], i > 0, &bytes, &len, NULL), GSMRT_OK);
            memcpy(out + w, bytes, len);
            w += len;
        }
        assert_int_equal(w, strlen(texts[k]));
        assert_memory_equal(out, texts[k], w);
        gsmrt_tokens_free(NULL, &v);
    }
    gsmrt_tokenizer_destroy(t);
}

/* ---- pre-tokenizers ----------------------------------------------------- */

static void expect_split(const char *pre, const char *text, const char *const *pieces, size_t n)
{
    struct gsmrt_pretok *p = NULL;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    if (gsmrt_pretok_create(NULL, pre, &p, &err) != GSMRT_OK) fail_msg("%s", err.msg);
    struct gsmrt_span *sp = NULL;
    size_t n_sp = 0;
    assert_int_equal(gsmrt_pretok_split(p, text, strlen(text), &sp, &n_sp, &err), GSMRT_OK);
    bool ok = n_sp == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = sp[i].len == strlen(pieces[i]) && memcmp(text + sp[i].off, pieces[i], sp[i].len) == 0;
    if (!ok) {
        for (size_t i = 0; i < n_sp; i++) print_error("[%.*s] ", (int)sp[i].len, text + sp[i].off);
        fail_msg("%s: split of '%s' differs", pre, text);
    }
    gsmrt_mem_free(NULL, sp);
    gsmrt_pretok_destroy(p);
}
#define SPLIT(pre, text, ...)                                                        \
    do {                                                                             \
        const char *const pieces_[] = {__VA_ARGS__};                                 \
        expect_split(pre, text, pieces_, sizeof pieces_ / sizeof pieces_[0]);        \
    } while (0)

static void test_pretok_gpt2_default(void **state)
{
    (void)state;
    /* \s+(?!\S) leaves the last space of a run to the next word */
    SPLIT("gpt-2", "Hello world's  123 foo!!\n\n bar",
          "Hello", " world", "'s", " ", " 123", " foo", "!!", "\n\n", " bar");
    /* contractions are case-sensitive in gpt-2 */
    SPLIT("gpt2", "WE'LL we'll", "WE", "'", "LL", " we", "'ll");
    /* default: punctuation first, then gpt-2, then digit runs, then triples */
    SPLIT("default", "a+b=1234", "a", "+", "b", "=", "123", "4");
    SPLIT(NULL, "x  y", "x", " ", " y");
    SPLIT("starcoder", "v12 x", "v", "1", "2", " x");
}

static void test_pretok_llama3_qwen2(void **state)
{
    (void)state;
    SPLIT("llama3", "Hello world's  123456 foo!!\n\n bar",
          "Hello", " world", "'s", " ", " ", "123", "456", " foo", "!!\n\n", " bar");
    SPLIT("llama-bpe", "WE'LL", "WE", "'LL");
    /* \s*[\r\n]+ takes spaces and newlines up to the last newline */
    SPLIT("llama3", "a \n\n  b", "a", " \n\n", " ", " b");
    SPLIT("qwen2", "Hello world's  123456 foo!!\n\n bar",
          "Hello", " world", "'s", " ", " ", "1", "2", "3", "4", "5", "6", " foo", "!!\n\n", " bar");
    /* emoji (with a skin-tone modifier) is neither letter nor digit */
    SPLIT("qwen2", "hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!", "hi", " \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!");
    /* CJK letters form one word; a leading non-letter joins it */
    SPLIT("qwen2", "\xE4\xBD\xA0\xE5\xA5\xBD,\xE4\xB8\x96\xE7\x95\x8C",
          "\xE4\xBD\xA0\xE5\xA5\xBD", ",\xE4\xB8\x96\xE7\x95\x8C");
    SPLIT("qwen2", "tab\tend\n", "tab", "\tend", "\n");
}

static void test_pretok_deepseek(void **state)
{
    (void)state;
    /* v3: digits in threes first, then kana/CJK runs, then the main regex */
    SPLIT("deepseek-v3", "abc 12345 \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C x",
          "abc", " ", "123", "45", " ", "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", " x");
    /* an ASCII punctuation mark joins the letters after it */
    SPLIT("deepseek-v3", "a.hello world", "a", ".hello", " world");
    SPLIT("deepseek-v3", "don't\n\n", "don", "'t", "\n\n");
    /* llm (V2): newlines alone, Latin letter runs with one leading space,
     * ASCII punctuation, CJK runs, digit runs */
    SPLIT("deepseek-llm", "Hello, world!\n 12 \xE4\xB8\xAD\xE6\x96\x87",
          "Hello", ",", " world", "!", "\n", " ", "12", " ", "\xE4\xB8\xAD\xE6\x96\x87");
    /* \s+$ : trailing whitespace of a piece is its own piece */
    SPLIT("deepseek-llm", "ok   ", "ok", "   ");
    /* coder: '=' is a symbol, not punctuation; digits one by one */
    SPLIT("deepseek-coder", "x=12", "x", "=", "1", "2");
}

static void test_errors(void **state)
{
    (void)state;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    struct gsmrt_vocab_desc d = {
        .n_tokens = N_TOK, .tokens = tok_ptr, .token_types = tok_type,
        .n_merges = N_MERGES, .merges = merges, .pre = "klingon-bpe",
        .bos_id = T_BOS, .eos_id = T_END, .eot_id = -1, .add_bos = true,
    };
    struct gsmrt_tokenizer *t = (struct gsmrt_tokenizer *)1;
    assert_int_equal(gsmrt_tokenizer_create(NULL, &d, &t, &err), GSMRT_E_UNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(err.msg, "'klingon-bpe'"));
    assert_non_null(strstr(err.msg, "deepseek-v3"));

    d.pre = "qwen2";
    d.bos_id = -1;   /* add_bos without a BOS */
    assert_int_equal(gsmrt_tokenizer_create(NULL, &d, &t, &err), GSMRT_E_FORMAT);
    d.bos_id = T_BOS;
    int32_t types[N_TOK];
    memcpy(types, tok_type, sizeof types);
    types[3] = 9;
    d.token_types = types;
    assert_int_equal(gsmrt_tokenizer_create(NULL, &d, &t, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "token 3"));
    d.token_types = tok_type;
    const char *dup[N_TOK];
    memcpy(dup, tok_ptr, sizeof dup);
    dup[T_AB] = "aa";
    d.tokens = dup;
    assert_int_equal(gsmrt_tokenizer_create(NULL, &d, &t, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "unique"));
    d.tokens = tok_ptr;
    d.eos_id = 100000;   /* out of range: ignored, as llama.cpp */
    assert_int_equal(gsmrt_tokenizer_create(NULL, &d, &t, &err), GSMRT_OK);
    assert_int_equal(gsmrt_tokenizer_eos(t), -1);
    assert_string_equal(gsmrt_tokenizer_pre(t), "qwen2");
    gsmrt_tokenizer_destroy(t);
}

/* Every allocation failing in turn: clean errors, no leaks (cmocka's
 * allocator checks the frees). */

static void test_oom_sweep(void **state)
{
    (void)state;
    int clean = -1;
    for (int i = 0; i < 10000 && clean < 0; i++) {
        struct fail_alloc c;
        fail_alloc_init(&c, i);
        gsmrt_allocator a = fail_alloc_allocator(&c);
        struct gsmrt_vocab_desc d = {
            .n_tokens = N_TOK, .tokens = tok_ptr, .token_types = tok_type,
            .n_merges = N_MERGES, .merges = merges, .pre = "llama3",
            .bos_id = T_BOS, .eos_id = T_END, .eot_id = -1, .add_bos = true,
        };
        struct gsmrt_tokenizer *t = NULL;
        gsmrt_status st = gsmrt_tokenizer_create(&a, &d, &t, NULL);
        if (st != GSMRT_OK) {
            assert_int_equal(st, GSMRT_E_OUT_OF_HOST_MEMORY);
            assert_null(t);
            continue;
        }
        struct gsmrt_tokens v = {0};
        const char *text = "<|user|>hello world, 12345<|end|>";
        st = gsmrt_tokenizer_encode(t, text, strlen(text), true, true, &v, NULL);
        if (st == GSMRT_OK) clean = i;
        else assert_int_equal(st, GSMRT_E_OUT_OF_HOST_MEMORY);
        gsmrt_tokens_free(&a, &v);
        gsmrt_tokenizer_destroy(t);
    }
    assert_true(clean > 0);
}

int main(void)
{
    build_vocab();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_hand_cases),
        cmocka_unit_test(test_specials),
        cmocka_unit_test(test_pieces_round_trip),
        cmocka_unit_test(test_pretok_gpt2_default),
        cmocka_unit_test(test_pretok_llama3_qwen2),
        cmocka_unit_test(test_pretok_deepseek),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_oom_sweep),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, NULL, NULL);
}
