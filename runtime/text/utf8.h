/* utf8.h -- UTF-8 validation, decoding, and a streaming assembler that turns
 * token bytes into whole code points.
 *
 * Token pieces of a byte-level BPE vocabulary can end in the middle of a
 * multi-byte character; a stream holds those bytes back until the character
 * is complete, and replaces ill-formed input with U+FFFD (one per maximal
 * subpart, as Unicode 15 §3.9 and the WHATWG decoder do). Strict UTF-8:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
#ifndef GSMRT_TEXT_UTF8_H
#define GSMRT_TEXT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Checks that s[0..len) is well-formed UTF-8. On failure *bad_offset (may be
 * NULL) is the byte offset of the first ill-formed sequence. A NUL byte is
 * well-formed UTF-8 and is accepted. */
bool gsmrt_utf8_valid(const char *s, size_t len, size_t *bad_offset);

/* Decodes the code point at s[0..len) (len >= 1). Returns its byte length
 * (1..4) and stores it in *cp; for an ill-formed sequence returns the length
 * of its maximal subpart (at least 1) and stores 0xFFFD. */
size_t gsmrt_utf8_decode(const char *s, size_t len, uint32_t *cp);

/* Writes the UTF-8 form of cp (<= 0x10FFFF, not a surrogate) into out[4];
 * returns its length. Anything else is written as U+FFFD. */
size_t gsmrt_utf8_encode(uint32_t cp, char out[4]);

/* Streaming assembler. Plain value, no allocation: zero it with _init. */
struct gsmrt_utf8_stream {
    unsigned char pending[4];   /* bytes of an incomplete character */
    uint8_t n_pending;          /* how many of pending[] are set */
    uint8_t need;               /* total length of that character */
};

void gsmrt_utf8_stream_init(struct gsmrt_utf8_stream *s);

/* The most bytes that gsmrt_utf8_stream_push of n bytes (or a flush, n = 0)
 * can write: every byte may become a 3-byte U+FFFD, held bytes included. */
static inline size_t gsmrt_utf8_stream_bound(size_t n)
{
    return n > (SIZE_MAX - 12) / 3 ? SIZE_MAX : 3 * n + 12;
}

/* Feeds n bytes; writes only whole, valid code points (and U+FFFD for
 * ill-formed input) to out and returns how many bytes it wrote. `out` must
 * hold gsmrt_utf8_stream_bound(n) bytes. A trailing incomplete character is
 * kept in the stream for the next call. */
size_t gsmrt_utf8_stream_push(struct gsmrt_utf8_stream *s, const void *bytes, size_t n, char *out);

/* Ends the stream: an incomplete held character becomes one U+FFFD (at most
 * 3 bytes written to out). The stream is empty afterwards. */
size_t gsmrt_utf8_stream_flush(struct gsmrt_utf8_stream *s, char *out);

#endif
