/* gguf_convert.c -- test tool: rewrites a GGUF with its matrices in F32 or
 * Q8_0, as tools/export_gguf.py does (1-D tensors, attn_k_b and attn_v_b stay
 * F32; Q8_0 only where a row is whole blocks, else F16), so the decoder's
 * golden tests can run every weight type from the one committed model.
 * Q8_0 follows ggml: d = max|x| / 127 (stored as F16), q = roundf(x / d).
 *
 *   usage: gguf_convert IN.gguf f32|q8_0 OUT.gguf */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "ref/ref.h"

static void put(FILE *f, const void *p, size_t n)
{
    if (fwrite(p, 1, n, f) != n) {
        perror("gguf_convert: write");
        exit(1);
    }
}
static void put_u32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put_u64(FILE *f, uint64_t v) { put(f, &v, 8); }
static void put_str(FILE *f, const char *s, uint64_t n)
{
    put_u64(f, n);
    put(f, s, n);
}

static float *to_f32(const struct gsmrt_gguf_tensor *t, size_t n)
{
    float *x = malloc(n * 4);
    if (!x) exit(1);
    ref_dequantize((int)t->type, t->data, 1, n, x);
    return x;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[2], "f32") && strcmp(argv[2], "q8_0"))) {
        fprintf(stderr, "usage: gguf_convert IN.gguf f32|q8_0 OUT.gguf\n");
        return 2;
    }
    bool q8 = strcmp(argv[2], "q8_0") == 0;
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct gsmrt_gguf *g;
    if (gsmrt_gguf_open(argv[1], NULL, &g, &err) != GSMRT_OK) {
        fprintf(stderr, "gguf_convert: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(argv[3], "wb");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    uint64_t n_t = gsmrt_gguf_n_tensors(g), n_kv = gsmrt_gguf_n_kv(g);
    put(f, "GGUF", 4);
    put_u32(f, 3);
    put_u64(f, n_t);
    put_u64(f, n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        const struct gsmrt_gguf_kv *kv = gsmrt_gguf_kv_at(g, i);
        put_str(f, kv->key.ptr, kv->key.len);
        put_u32(f, kv->type);
        if (kv->key.len == 17 && memcmp(kv->key.ptr, "general.file_type", 17) == 0) {
            put_u32(f, q8 ? 7 : 0);   /* llama_ftype: 0 all F32, 7 mostly Q8_0 */
        } else if (kv->type == GSMRT_GGUF_TYPE_STRING) {
            put_str(f, kv->value, kv->value_bytes);
        } else if (kv->type == GSMRT_GGUF_TYPE_ARRAY) {
            put_u32(f, kv->arr_type);
            put_u64(f, kv->arr_count);
            put(f, kv->value, kv->value_bytes);
        } else {
            put(f, kv->value, kv->value_bytes);
        }
    }
    /* New types and sizes, offsets aligned to 32 from the data start. */
    uint32_t *types = calloc(n_t, 4);
    uint64_t *bytes = calloc(n_t, 8), off = 0;
    for (uint64_t i = 0; i < n_t; i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
        size_t n = (size_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        bool keep_f32 = t->n_dims == 1 || strstr(t->name, "attn_k_b") || strstr(t->name, "attn_v_b");
        types[i] = !q8 || keep_f32 ? 0 : (t->ne[0] % 32 == 0 ? 8 : 1);
        bytes[i] = types[i] == 0 ? n * 4 : types[i] == 1 ? n * 2 : n / 32 * 34;
        put_str(f, t->name, strlen(t->name));
        put_u32(f, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put_u64(f, (uint64_t)t->ne[d]);
        put_u32(f, types[i]);
        put_u64(f, off);
        off = (off + bytes[i] + 31) & ~(uint64_t)31;
    }
    static const uint8_t zeros[32];
    long pos = ftell(f);
    put(f, zeros, (size_t)((32 - pos % 32) % 32));
    for (uint64_t i = 0; i < n_t; i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
        size_t n = (size_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        float *x = to_f32(t, n);
        if (types[i] == 0) put(f, x, n * 4);
        else if (types[i] == 1) {
            uint16_t *h = malloc(n * 2);
            for (size_t k = 0; k < n; k++) h[k] = ref_f32_to_f16(x[k]);
            put(f, h, n * 2);
            free(h);
        } else {
            uint8_t *q = malloc(n / 32 * 34);
            ref_quantize_q8_0(x, n, q);
            put(f, q, n / 32 * 34);
            free(q);
        }
        free(x);
        put(f, zeros, (size_t)((32 - bytes[i] % 32) % 32));
    }
    if (fclose(f) != 0) {
        perror(argv[3]);
        return 1;
    }
    free(types);
    free(bytes);
    gsmrt_gguf_close(g);
    return 0;
}
