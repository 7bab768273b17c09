/* gguf_writer.c -- in-memory GGUF writer for tests (see gguf_writer.h). Test
 * code: aborts on allocation failure; keeps a record of every key and tensor
 * it wrote so tests can compare what the parser returns. */
#include "data/gguf_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(struct gw_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void put_u32(struct gw_buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct gw_buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(struct gw_buf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static uint32_t rnd(struct gw *w)   /* xorshift64*, fixed seed: files are reproducible */
{
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return (uint32_t)((w->rng * 2685821657736338717ull) >> 32);
}

void gw_init(struct gw *w)
{
    memset(w, 0, sizeof *w);
    memcpy(w->magic, "GGUF", 4);
    w->version = 3;
    w->alignment = 32;
    w->rng = 0x9e3779b97f4a7c15ull;
}

void gw_free(struct gw *w)
{
    free(w->kv.p);
    free(w->ti.p);
    free(w->data.p);
    memset(&w->kv, 0, sizeof w->kv);
    memset(&w->ti, 0, sizeof w->ti);
    memset(&w->data, 0, sizeof w->data);
}

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Writes the key and its type; false if the key is dropped. */
static bool key(struct gw *w, const char *k, uint32_t type)
{
    if (is(w->drop_key, k) || is(w->drop_key2, k)) return false;
    put_str(&w->kv, k);
    put_u32(&w->kv, type);
    w->n_kv++;
    if (w->n_kv_rec < GW_MAX_RECORDS) {
        snprintf(w->kvs[w->n_kv_rec].key, sizeof w->kvs[0].key, "%s", k);
        w->kvs[w->n_kv_rec++].type = type;
    }
    return true;
}

void gw_kv_u32(struct gw *w, const char *k, uint32_t v)
{
    if (key(w, k, is(w->retype_key, k) ? 5 : 4)) put_u32(&w->kv, v);
}

void gw_kv_i32(struct gw *w, const char *k, int32_t v)
{
    if (key(w, k, is(w->retype_key, k) ? 4 : 5)) put(&w->kv, &v, 4);
}

void gw_kv_f32(struct gw *w, const char *k, float v)
{
    if (is(w->retype_key, k)) {
        double d = v;
        if (key(w, k, 12)) put(&w->kv, &d, 8);
        return;
    }
    if (key(w, k, 6)) put(&w->kv, &v, 4);
}

void gw_kv_bool(struct gw *w, const char *k, bool v)
{
    uint8_t b = v;
    if (key(w, k, is(w->retype_key, k) ? 0 : 7)) put(&w->kv, &b, 1);
}

void gw_kv_str(struct gw *w, const char *k, const char *v)
{
    if (is(w->retype_key, k)) {
        if (key(w, k, 4)) put_u32(&w->kv, 0);
        return;
    }
    if (key(w, k, 8)) put_str(&w->kv, v);
}

void gw_kv_arr_str(struct gw *w, const char *k, size_t n, const char *const *v)
{
    if (!key(w, k, 9)) return;
    put_u32(&w->kv, 8);
    put_u64(&w->kv, n);
    for (size_t i = 0; i < n; i++) put_str(&w->kv, v[i]);
}

static void arr_num(struct gw *w, const char *k, uint32_t et, size_t n, const void *v)
{
    if (!key(w, k, 9)) return;
    put_u32(&w->kv, et);
    put_u64(&w->kv, n);
    put(&w->kv, v, 4 * n);
}

void gw_kv_arr_u32(struct gw *w, const char *k, size_t n, const uint32_t *v) { arr_num(w, k, 4, n, v); }
void gw_kv_arr_i32(struct gw *w, const char *k, size_t n, const int32_t *v) { arr_num(w, k, 5, n, v); }
void gw_kv_arr_f32(struct gw *w, const char *k, size_t n, const float *v) { arr_num(w, k, 6, n, v); }

void gw_kv_raw(struct gw *w, const char *k, uint32_t type, const void *value, size_t n)
{
    if (key(w, k, type)) put(&w->kv, value, n);
}

uint64_t gw_type_bytes(uint32_t type, uint64_t n_elem)
{
    switch (type) {
    case 0: return 4 * n_elem;
    case 1: return 2 * n_elem;
    case 8: return n_elem / 32 * 34;
    case 26: return 4 * n_elem;   /* I32 */
    default: return 0;
    }
}

void gw_tensor_info(struct gw *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                    uint64_t offset)
{
    put_str(&w->ti, name);
    put_u32(&w->ti, n_dims);
    put(&w->ti, ne, 8 * (size_t)n_dims);
    put_u32(&w->ti, type);
    put_u64(&w->ti, offset);
    w->n_tensors++;
}

static uint16_t rnd_f16(struct gw *w)   /* finite, magnitude in [2^-8, 2) */
{
    uint32_t r = rnd(w);
    return (uint16_t)(((r >> 31) << 15) | ((7u + (r >> 8) % 9u) << 10) | (r & 0x3ffu));
}

uint64_t gw_tensor(struct gw *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne_in)
{
    if (is(w->drop_tensor, name)) return 0;
    int64_t ne[4] = {1, 1, 1, 1};
    memcpy(ne, ne_in, 8 * (size_t)n_dims);
    if (is(w->reshape_tensor, name)) ne[n_dims - 1] += 1;
    if (is(w->retype_tensor, name)) type = type == 0 ? 1 : 0;
    uint64_t n = 1;
    for (uint32_t i = 0; i < n_dims; i++) n *= (uint64_t)ne[i];
    uint64_t bytes = gw_type_bytes(type, n);
    /* pad the data section to the alignment, then append */
    while (w->data.len % w->alignment) put(&w->data, "", 1);
    uint64_t offset = w->data.len;
    gw_tensor_info(w, name, type, n_dims, ne, offset);
    if (w->n_tensor_rec < GW_MAX_RECORDS) {
        struct gw_tensor_rec *r = &w->tensors[w->n_tensor_rec++];
        snprintf(r->name, sizeof r->name, "%s", name);
        r->type = type;
        r->n_dims = n_dims;
        memcpy(r->ne, ne, sizeof ne);
        r->offset = offset;
        r->bytes = bytes;
    }
    for (uint64_t i = 0; i < n;) {
        if (type == 26) {   /* I32: small non-negative integers (table entries) */
            int32_t v = (int32_t)(rnd(w) % 8u);
            put(&w->data, &v, 4);
            i++;
        } else if (type == 0) {
            float f = (float)((int32_t)rnd(w)) / 2147483648.0f;
            put(&w->data, &f, 4);
            i++;
        } else if (type == 1) {
            uint16_t h = rnd_f16(w);
            put(&w->data, &h, 2);
            i++;
        } else {   /* Q8_0 block: f16 scale, 32 x i8 */
            uint16_t d = rnd_f16(w);
            put(&w->data, &d, 2);
            for (int j = 0; j < 32; j++) {
                int8_t q = (int8_t)(rnd(w) % 255u - 127);
                put(&w->data, &q, 1);
            }
            i += 32;
        }
    }
    return offset;
}

void gw_finish(struct gw *w, uint8_t **out, size_t *size)
{
    struct gw_buf f = {0};
    put(&f, w->magic, 4);
    put_u32(&f, w->version);
    put_u64(&f, w->n_tensors);
    put_u64(&f, w->n_kv);
    put(&f, w->kv.p, w->kv.len);
    put(&f, w->ti.p, w->ti.len);
    while (f.len % w->alignment) put(&f, "", 1);
    w->data_start = f.len;
    put(&f, w->data.p, w->data.len);
    if (!f.p) f.p = malloc(1);
    *out = f.p;
    *size = f.len;
}

/* ---- tiny deepseek2 ------------------------------------------------------- */

void gw_ds2_spec(struct gw_ds2 *s, int variant)
{
    memset(s, 0, sizeof *s);
    if (variant == 2) {
        *s = (struct gw_ds2){.n_vocab = 6, .n_embd = 32, .n_layer = 2, .n_dense = 1, .n_ctx = 64, .n_head = 1,
                             .q_lora_rank = 0, .kv_lora_rank = 8, .n_rot = 4, .dk = 12, .dv = 8, .n_ff = 8,
                             .n_ff_exp = 4, .n_expert = 2, .n_expert_used = 1, .n_expert_shared = 1,
                             .output = false, .probs_b = true, .yarn = true, .yarn_factor = 4.0f,
                             .yarn_log_multiplier = 0.1f, .n_ctx_orig = 16};
        return;
    }
    if (variant == 1) {
        *s = (struct gw_ds2){.n_vocab = 40, .n_embd = 64, .n_layer = 3, .n_dense = 1, .n_ctx = 128, .n_head = 4,
                             .q_lora_rank = 0, .kv_lora_rank = 32, .n_rot = 8, .dk = 24, .dv = 16, .n_ff = 96,
                             .n_ff_exp = 32, .n_expert = 4, .n_expert_used = 2, .n_expert_shared = 2,
                             .fused_gate_up = true, .per_layer_arrays = true, .weights_scale = 1.0f};
        return;
    }
    *s = (struct gw_ds2){.n_vocab = 48, .n_embd = 64, .n_layer = 2, .n_dense = 1, .n_ctx = 256, .n_head = 2,
                         .q_lora_rank = 32, .kv_lora_rank = 32, .n_rot = 16, .dk = 48, .dv = 32, .n_ff = 96,
                         .n_ff_exp = 32, .n_expert = 4, .n_expert_used = 2, .n_expert_shared = 1, .n_group = 2,
                         .n_group_used = 1, .yarn = true, .yarn_factor = 40.0f, .yarn_log_multiplier = 0.1f,
                         .n_ctx_orig = 64, .sigmoid = true, .probs_b = true, .norm_w = true, .output = true,
                         .weights_scale = 2.5f};
}

static void t1(struct gw *w, const char *name, uint32_t type, int64_t a)
{
    gw_tensor(w, name, type, 1, (int64_t[]){a});
}
static void t2(struct gw *w, const char *name, uint32_t type, int64_t a, int64_t b)
{
    gw_tensor(w, name, type, 2, (int64_t[]){a, b});
}
static void t3(struct gw *w, const char *name, uint32_t type, int64_t a, int64_t b, int64_t c)
{
    gw_tensor(w, name, type, 3, (int64_t[]){a, b, c});
}

/* Q8_0 where rows are whole blocks, else F16. */
static uint32_t q8_or_f16(int64_t ne0) { return ne0 % 32 == 0 ? 8 : 1; }

void gw_ds2_build(struct gw *w, const struct gw_ds2 *s)
{
    char k[128];
#define K(suffix) (snprintf(k, sizeof k, "deepseek2.%s", suffix), k)
    gw_kv_str(w, "general.architecture", "deepseek2");
    gw_kv_str(w, "general.name", "tiny-deepseek2-test");
    gw_kv_u32(w, "general.alignment", w->alignment);
    gw_kv_u32(w, "general.file_type", 1);
    gw_kv_u32(w, K("context_length"), s->n_ctx);
    gw_kv_u32(w, K("embedding_length"), s->n_embd);
    gw_kv_u32(w, K("block_count"), s->n_layer);
    gw_kv_u32(w, K("vocab_size"), s->n_vocab);
    gw_kv_u32(w, K("feed_forward_length"), s->n_ff);
    gw_kv_u32(w, K("leading_dense_block_count"), s->n_dense);
    uint32_t per[64];
    if (s->per_layer_arrays) {
        for (uint32_t i = 0; i < s->n_layer; i++) per[i] = s->n_head;
        gw_kv_arr_u32(w, K("attention.head_count"), s->n_layer, per);
        for (uint32_t i = 0; i < s->n_layer; i++) per[i] = i < s->n_dense ? 0 : s->n_expert_used;
        gw_kv_arr_u32(w, K("expert_used_count"), s->n_layer, per);
    } else {
        gw_kv_u32(w, K("attention.head_count"), s->n_head);
        gw_kv_u32(w, K("expert_used_count"), s->n_expert_used);
    }
    gw_kv_u32(w, K("attention.head_count_kv"), 1);
    gw_kv_u32(w, K("attention.key_length"), s->kv_lora_rank + s->n_rot);
    gw_kv_u32(w, K("attention.value_length"), s->kv_lora_rank);
    gw_kv_u32(w, K("attention.key_length_mla"), s->dk);
    gw_kv_u32(w, K("attention.value_length_mla"), s->dv);
    gw_kv_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-6f);
    gw_kv_u32(w, K("attention.q_lora_rank"), s->q_lora_rank);
    gw_kv_u32(w, K("attention.kv_lora_rank"), s->kv_lora_rank);
    gw_kv_u32(w, K("rope.dimension_count"), s->n_rot);
    gw_kv_f32(w, K("rope.freq_base"), 10000.0f);
    if (s->yarn) {
        gw_kv_str(w, K("rope.scaling.type"), "yarn");
        gw_kv_f32(w, K("rope.scaling.factor"), s->yarn_factor);
        gw_kv_u32(w, K("rope.scaling.original_context_length"), s->n_ctx_orig);
        gw_kv_f32(w, K("rope.scaling.yarn_log_multiplier"), s->yarn_log_multiplier);
    }
    gw_kv_u32(w, K("expert_count"), s->n_expert);
    gw_kv_u32(w, K("expert_shared_count"), s->n_expert_shared);
    gw_kv_u32(w, K("expert_feed_forward_length"), s->n_ff_exp);
    gw_kv_f32(w, K("expert_weights_scale"), s->weights_scale);
    if (s->norm_w) gw_kv_bool(w, K("expert_weights_norm"), true);
    gw_kv_u32(w, K("expert_gating_func"), s->sigmoid ? 2 : 1);
    if (s->n_group) {
        gw_kv_u32(w, K("expert_group_count"), s->n_group);
        gw_kv_u32(w, K("expert_group_used_count"), s->n_group_used);
    }
#undef K
    gw_kv_str(w, "tokenizer.ggml.model", "gpt2");
    const char *tokens[256];
    char tokbuf[256][8];
    for (uint32_t i = 0; i < s->n_vocab && i < 256; i++) {
        snprintf(tokbuf[i], sizeof tokbuf[i], "t%u", i);
        tokens[i] = tokbuf[i];
    }
    gw_kv_arr_str(w, "tokenizer.ggml.tokens", s->n_vocab, tokens);
    int32_t types[256];
    for (uint32_t i = 0; i < s->n_vocab && i < 256; i++) types[i] = 1;
    gw_kv_arr_i32(w, "tokenizer.ggml.token_type", s->n_vocab, types);
    gw_kv_u32(w, "tokenizer.ggml.bos_token_id", 0);

    int64_t E = s->n_embd, V = s->n_vocab, H = s->n_head, QL = s->q_lora_rank, KVL = s->kv_lora_rank,
            R = s->n_rot, DK = s->dk, DV = s->dv, NOPE = DK - R, F = s->n_ff, FE = s->n_ff_exp,
            NE = s->n_expert, NS = s->n_expert_shared;
    t2(w, "token_embd.weight", 1, E, V);
    t1(w, "output_norm.weight", 0, E);
    if (s->output) t2(w, "output.weight", q8_or_f16(E), E, V);
    char n[96];
#define N(suffix) (snprintf(n, sizeof n, "blk.%u.%s", il, suffix), n)
    for (uint32_t il = 0; il < s->n_layer; il++) {
        t1(w, N("attn_norm.weight"), 0, E);
        if (QL > 0) {
            t2(w, N("attn_q_a.weight"), 0, E, QL);
            t1(w, N("attn_q_a_norm.weight"), 0, QL);
            t2(w, N("attn_q_b.weight"), 1, QL, H * DK);
        } else {
            t2(w, N("attn_q.weight"), 1, E, H * DK);
        }
        t2(w, N("attn_kv_a_mqa.weight"), q8_or_f16(E), E, KVL + R);
        t1(w, N("attn_kv_a_norm.weight"), 0, KVL);
        t3(w, N("attn_k_b.weight"), 0, NOPE, KVL, H);
        t3(w, N("attn_v_b.weight"), 0, KVL, DV, H);
        t2(w, N("attn_output.weight"), q8_or_f16(H * DV), H * DV, E);
        t1(w, N("ffn_norm.weight"), 0, E);
        if (il < s->n_dense) {
            t2(w, N("ffn_gate.weight"), 1, E, F);
            t2(w, N("ffn_up.weight"), 0, E, F);
            t2(w, N("ffn_down.weight"), 1, F, E);
        } else {
            t2(w, N("ffn_gate_inp.weight"), 0, E, NE);
            if (s->probs_b) t1(w, N("exp_probs_b.bias"), 0, NE);
            if (s->fused_gate_up) {
                t3(w, N("ffn_gate_up_exps.weight"), 1, E, 2 * FE, NE);
            } else {
                t3(w, N("ffn_gate_exps.weight"), 1, E, FE, NE);
                t3(w, N("ffn_up_exps.weight"), 0, E, FE, NE);
            }
            t3(w, N("ffn_down_exps.weight"), q8_or_f16(FE), FE, E, NE);
            t2(w, N("ffn_gate_shexp.weight"), 1, E, FE * NS);
            t2(w, N("ffn_up_shexp.weight"), 1, E, FE * NS);
            t2(w, N("ffn_down_shexp.weight"), q8_or_f16(FE * NS), FE * NS, E);
        }
    }
#undef N
}
