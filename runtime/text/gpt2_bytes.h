/* gpt2_bytes.h -- the byte-level BPE alphabet (docs/deepseek2-gguf.md §8):
 * every byte stands for one printable code point, so token texts are plain
 * strings. '!'..'~', 0xA1..0xAC and 0xAE..0xFF map to themselves; the other
 * 68 bytes map to U+0100, U+0101, ... in byte order. */
#ifndef GSMRT_TEXT_GPT2_BYTES_H
#define GSMRT_TEXT_GPT2_BYTES_H

#include <stddef.h>
#include <stdint.h>

struct gsmrt_gpt2_bytes {
    char enc[256][2];      /* byte -> UTF-8 of its code point (1 or 2 bytes) */
    uint8_t enc_len[256];
    int16_t dec[0x144];    /* code point -> byte; -1 where none maps */
};

void gsmrt_gpt2_bytes_init(struct gsmrt_gpt2_bytes *t);

/* Decodes s[0..len) from the alphabet into raw bytes (out holds len bytes;
 * the result is never longer). Code points outside the alphabet are kept as
 * their UTF-8 bytes (llama.cpp writes an "[UNK_BYTE_..]" marker there; no
 * byte-level vocabulary has such tokens). Returns the decoded length. */
size_t gsmrt_gpt2_bytes_decode(const struct gsmrt_gpt2_bytes *t, const char *s, size_t len, char *out);

#endif
