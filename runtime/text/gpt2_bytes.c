/* gpt2_bytes.c -- the byte <-> code point table of byte-level BPE (see
 * gpt2_bytes.h). Built per tokenizer; no global state. */
#include "text/gpt2_bytes.h"

#include <stdbool.h>
#include <string.h>

#include "text/utf8.h"

void gsmrt_gpt2_bytes_init(struct gsmrt_gpt2_bytes *t)
{
    uint32_t next = 0x100;
    for (size_t i = 0; i < sizeof t->dec / sizeof t->dec[0]; i++) t->dec[i] = -1;
    for (unsigned b = 0; b < 256; b++) {
        bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        uint32_t cp = self ? b : next++;
        char u[4];
        size_t n = gsmrt_utf8_encode(cp, u);
        memcpy(t->enc[b], u, n);
        t->enc_len[b] = (uint8_t)n;
        t->dec[cp] = (int16_t)b;
    }
}

size_t gsmrt_gpt2_bytes_decode(const struct gsmrt_gpt2_bytes *t, const char *s, size_t len, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = gsmrt_utf8_decode(s + i, len - i, &cp);
        if (cp < 0x144 && t->dec[cp] >= 0) {
            out[w++] = (char)t->dec[cp];
        } else {
            memcpy(out + w, s + i, n);
            w += n;
        }
        i += n;
    }
    return w;
}
