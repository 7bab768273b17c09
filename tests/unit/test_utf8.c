/* test_utf8.c -- the UTF-8 validator, decoder and streaming assembler:
 * characters split across pushes, ill-formed bytes (one U+FFFD per maximal
 * subpart, as in Unicode §3.9 / WHATWG), flush of a dangling prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "text/utf8.h"

#define FFFD "\xEF\xBF\xBD"

/* Pushes each chunk in turn, then flushes; returns the concatenated output. */
static const char *run(const char *const *chunks, size_t n_chunks, const size_t *lens)
{
    static char out[1024];
    struct gsmrt_utf8_stream s;
    gsmrt_utf8_stream_init(&s);
    size_t w = 0;
    for (size_t i = 0; i < n_chunks; i++) {
        size_t n = lens ? lens[i] : strlen(chunks[i]);
        assert_true(w + gsmrt_utf8_stream_bound(n) < sizeof out);
        w += gsmrt_utf8_stream_push(&s, chunks[i], n, out + w);
    }
    w += gsmrt_utf8_stream_flush(&s, out + w);
    out[w] = '\0';
    return out;
}

static void test_split_characters(void **state)
{
    (void)state;
    struct gsmrt_utf8_stream s;
    char out[64];
    gsmrt_utf8_stream_init(&s);
    /* é = C3 A9: nothing comes out until the second byte */
    assert_int_equal(gsmrt_utf8_stream_push(&s, "\xC3", 1, out), 0);
    assert_int_equal(gsmrt_utf8_stream_push(&s, "\xA9", 1, out), 2);
    assert_memory_equal(out, "\xC3\xA9", 2);
    /* 😀 = F0 9F 98 80 over three pushes, with ASCII before and after */
    assert_int_equal(gsmrt_utf8_stream_push(&s, "a\xF0", 2, out), 1);
    assert_int_equal(out[0], 'a');
    assert_int_equal(gsmrt_utf8_stream_push(&s, "\x9F\x98", 2, out), 0);
    assert_int_equal(gsmrt_utf8_stream_push(&s, "\x80z", 2, out), 5);
    assert_memory_equal(out, "\xF0\x9F\x98\x80z", 5);
    assert_int_equal(gsmrt_utf8_stream_flush(&s, out), 0);

    /* 中 (E4 B8 AD) byte by byte, as three single-byte token pieces */
    const char *c3[] = {"\xE4", "\xB8", "\xAD"};
    assert_string_equal(run(c3, 3, NULL), "\xE4\xB8\xAD");
    /* every split point of a mixed string gives the string back */
    const char *text = "h\xC3\xA9llo \xE4\xB8\xAD\xF0\x9F\x98\x80!";
    size_t n = strlen(text);
    for (size_t cut = 0; cut <= n; cut++) {
        const char *parts[] = {text, text + cut};
        size_t lens[] = {cut, n - cut};
        assert_string_equal(run(parts, 2, lens), text);
    }
}

static void test_invalid_bytes(void **state)
{
    (void)state;
    const char *a[] = {"\xFF"};
    assert_string_equal(run(a, 1, NULL), FFFD);
    const char *b[] = {"\xC3" "A"};   /* a lead byte cut short by ASCII */
    assert_string_equal(run(b, 1, NULL), FFFD "A");
    const char *c[] = {"x\xE2\x82"};  /* a dangling prefix at the end: one U+FFFD on flush */
    assert_string_equal(run(c, 1, NULL), "x" FFFD);
    const char *d[] = {"\xC0\xAF"};   /* overlong '/': C0 is never a lead, AF never a lead */
    assert_string_equal(run(d, 1, NULL), FFFD FFFD);
    const char *e[] = {"\xED\xA0\x80"};   /* a surrogate: three maximal subparts */
    assert_string_equal(run(e, 1, NULL), FFFD FFFD FFFD);
    const char *f[] = {"\xF0\x9F\x98", "A"};   /* cut short across pushes */
    assert_string_equal(run(f, 2, NULL), FFFD "A");
    const char *g[] = {"\xF4\x90\x80\x80"};   /* above U+10FFFF */
    assert_string_equal(run(g, 1, NULL), FFFD FFFD FFFD FFFD);
    const char *h[] = {"\x80" "ok"};   /* a lone continuation byte */
    assert_string_equal(run(h, 1, NULL), FFFD "ok");
}

static void test_validate_and_decode(void **state)
{
    (void)state;
    size_t bad = 99;
    assert_true(gsmrt_utf8_valid("", 0, &bad));
    assert_true(gsmrt_utf8_valid("plain", 5, &bad));
    assert_true(gsmrt_utf8_valid("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF", 13, &bad));
    assert_true(gsmrt_utf8_valid("a\0b", 3, &bad));
    assert_false(gsmrt_utf8_valid("ab\xC3", 3, &bad));
    assert_int_equal(bad, 2);
    assert_false(gsmrt_utf8_valid("abc\xED\xA0\x80", 6, &bad));
    assert_int_equal(bad, 3);
    assert_false(gsmrt_utf8_valid("\xE0\x80\xAF", 3, &bad));   /* overlong 3-byte */
    assert_int_equal(bad, 0);
    assert_false(gsmrt_utf8_valid("ok\xF5\x80\x80\x80", 6, NULL));

    uint32_t cp;
    assert_int_equal(gsmrt_utf8_decode("\xE2\x82\xAC", 3, &cp), 3);
    assert_int_equal(cp, 0x20AC);
    assert_int_equal(gsmrt_utf8_decode("\xE2\x82", 2, &cp), 2);
    assert_int_equal(cp, 0xFFFD);
    char buf[4];
    assert_int_equal(gsmrt_utf8_encode(0x1F600, buf), 4);
    assert_memory_equal(buf, "\xF0\x9F\x98\x80", 4);
    assert_int_equal(gsmrt_utf8_encode(0xD800, buf), 3);   /* surrogates are written as U+FFFD */
    assert_memory_equal(buf, FFFD, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_characters),
        cmocka_unit_test(test_invalid_bytes),
        cmocka_unit_test(test_validate_and_decode),
    };
    return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
