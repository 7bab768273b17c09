/* utf8.c -- strict UTF-8 (see utf8.h). One table of lead-byte rules drives
 * the validator, the decoder and the stream, so the three agree on what is
 * ill-formed and on where a maximal subpart ends. */
#include "text/utf8.h"

#include <string.h>

/* The length of the character a lead byte starts (0: not a lead byte) and
 * the allowed range of its second byte (Unicode table 3-7). */
static unsigned lead_len(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80) return 1;
    if (b < 0xC2) return 0;
    if (b < 0xE0) return 2;
    if (b < 0xF0) {
        if (b == 0xE0) *lo = 0xA0;
        if (b == 0xED) *hi = 0x9F;   /* no surrogates */
        return 3;
    }
    if (b < 0xF5) {
        if (b == 0xF0) *lo = 0x90;
        if (b == 0xF4) *hi = 0x8F;   /* nothing above U+10FFFF */
        return 4;
    }
    return 0;
}

/* Whether b may stand at position i (>= 1) of the character led by lead. */
static bool cont_ok(unsigned char lead, size_t i, unsigned char b)
{
    unsigned char lo, hi;
    (void)lead_len(lead, &lo, &hi);
    if (i > 1) lo = 0x80, hi = 0xBF;
    return b >= lo && b <= hi;
}

static uint32_t assemble(const unsigned char *p, size_t n)
{
    if (n == 1) return p[0];
    uint32_t cp = p[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) cp = (cp << 6) | (p[i] & 0x3F);
    return cp;
}

size_t gsmrt_utf8_decode(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char lo, hi;
    size_t n = lead_len(p[0], &lo, &hi);
    if (n == 0) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if (i >= len || !cont_ok(p[0], i, p[i])) {
            *cp = 0xFFFD;
            return i;   /* the maximal subpart: lead plus the valid continuations */
        }
    }
    *cp = assemble(p, n);
    return n;
}

bool gsmrt_utf8_valid(const char *s, size_t len, size_t *bad_offset)
{
    size_t i = 0;
    while (i < len) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = gsmrt_utf8_decode(s + i, len - i, &cp);
        unsigned char lo, hi;
        if (cp == 0xFFFD && n != lead_len(b, &lo, &hi)) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += n;
    }
    return true;
}

size_t gsmrt_utf8_encode(uint32_t cp, char out[4])
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

void gsmrt_utf8_stream_init(struct gsmrt_utf8_stream *s)
{
    memset(s, 0, sizeof *s);
}

static size_t put_fffd(char *out)
{
    memcpy(out, "\xEF\xBF\xBD", 3);
    return 3;
}

size_t gsmrt_utf8_stream_push(struct gsmrt_utf8_stream *s, const void *bytes, size_t n, char *out)
{
    const unsigned char *p = bytes;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = p[i];
        if (s->n_pending > 0) {
            if (cont_ok(s->pending[0], s->n_pending, b)) {
                s->pending[s->n_pending++] = b;
                if (s->n_pending == s->need) {
                    memcpy(out + w, s->pending, s->need);
                    w += s->need;
                    s->n_pending = 0;
                }
                continue;
            }
            /* the held bytes are a maximal subpart; b starts afresh */
            w += put_fffd(out + w);
            s->n_pending = 0;
        }
        unsigned char lo, hi;
        unsigned len = lead_len(b, &lo, &hi);
        if (len == 1) {
            out[w++] = (char)b;
        } else if (len == 0) {
            w += put_fffd(out + w);
        } else {
            s->pending[0] = b;
            s->n_pending = 1;
            s->need = (uint8_t)len;
        }
    }
    return w;
}

size_t gsmrt_utf8_stream_flush(struct gsmrt_utf8_stream *s, char *out)
{
    size_t w = 0;
    if (s->n_pending > 0) w = put_fffd(out);
    s->n_pending = 0;
    return w;
}
