/* gguf_writer.h -- builds GGUF files in memory for tests: valid tiny deepseek2
 * models and, through raw writers and mutations, hand-crafted broken files.
 *
 * The writer is independent of runtime/gguf: it encodes the format from the
 * fact sheet (shared/docs/deepseek2-gguf.md §1), never by calling the parser.
 * Allocation failures abort the test process (test-only code). */
#ifndef GSMRT_TESTS_GGUF_WRITER_H
#define GSMRT_TESTS_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gw_buf {
    uint8_t *p;
    size_t len, cap;
};

#define GW_MAX_RECORDS 512

struct gw_kv_rec {
    char key[96];
    uint32_t type;
};

struct gw_tensor_rec {
    char name[80];
    uint32_t type, n_dims;
    int64_t ne[4];
    uint64_t offset, bytes;   /* offset into `data` (= the file's data section) */
};

struct gw {
    /* settings (set after gw_init, before the first add) */
    char magic[4];
    uint32_t version;
    uint32_t alignment;          /* data layout only; write general.alignment yourself */
    /* mutations, matched by exact name (NULL: none) */
    const char *drop_key, *drop_key2;   /* these keys are not written */
    const char *retype_key;      /* u32 -> i32, f32 -> f64, bool -> u8, string -> u32 0 */
    const char *drop_tensor;     /* the tensor is not written */
    const char *reshape_tensor;  /* its last dimension grows by 1 (data sized to match) */
    const char *retype_tensor;   /* F32 written as F16, anything else as F32 */
    /* output */
    struct gw_buf kv, ti, data;
    uint64_t n_kv, n_tensors;
    uint64_t rng;
    struct gw_kv_rec kvs[GW_MAX_RECORDS];
    struct gw_tensor_rec tensors[GW_MAX_RECORDS];
    size_t n_kv_rec, n_tensor_rec;
    uint64_t data_start;         /* set by gw_finish */
};

void gw_init(struct gw *w);
void gw_free(struct gw *w);

void gw_kv_u32(struct gw *w, const char *key, uint32_t v);
void gw_kv_i32(struct gw *w, const char *key, int32_t v);
void gw_kv_f32(struct gw *w, const char *key, float v);
void gw_kv_bool(struct gw *w, const char *key, bool v);
void gw_kv_str(struct gw *w, const char *key, const char *v);
void gw_kv_arr_str(struct gw *w, const char *key, size_t n, const char *const *v);
void gw_kv_arr_u32(struct gw *w, const char *key, size_t n, const uint32_t *v);
void gw_kv_arr_i32(struct gw *w, const char *key, size_t n, const int32_t *v);
void gw_kv_arr_f32(struct gw *w, const char *key, size_t n, const float *v);
/* key, u32 type, then `n` raw value bytes exactly as given */
void gw_kv_raw(struct gw *w, const char *key, uint32_t type, const void *value, size_t n);

/* A tensor with data (random but finite values), placed at the next aligned
 * offset. Returns the offset. */
uint64_t gw_tensor(struct gw *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne);
/* Only a tensor info, with any fields (no data is written). */
void gw_tensor_info(struct gw *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                    uint64_t offset);

/* header | kvs | tensor infos | zero padding to the alignment | data. The
 * file ends exactly at the end of the data. The caller frees *out (free). */
void gw_finish(struct gw *w, uint8_t **out, size_t *size);

/* ---- a tiny deepseek2 model (fact sheet §2-4) ---------------------------- */

struct gw_ds2 {
    uint32_t n_vocab, n_embd, n_layer, n_dense, n_ctx, n_head;
    uint32_t q_lora_rank, kv_lora_rank, n_rot, dk, dv;   /* dk = nope + rot */
    uint32_t n_ff, n_ff_exp, n_expert, n_expert_used, n_expert_shared;
    uint32_t n_group, n_group_used;
    bool yarn;                 /* rope.scaling.type yarn + factor + multiplier + orig ctx */
    float yarn_factor, yarn_log_multiplier;
    uint32_t n_ctx_orig;
    bool sigmoid, probs_b, norm_w, output, fused_gate_up;
    float weights_scale;
    bool per_layer_arrays;     /* write head_count and expert_used_count as arrays */
};

/* variant 0: V3-like (q_lora, sigmoid, bias, groups, YaRN, output, F32/F16/Q8_0);
 * variant 1: V2-Lite-like (no q_lora, softmax, no groups, no YaRN, tied output,
 * fused gate_up experts, per-layer arrays); variant 2: the smallest file, for
 * sweeps. */
void gw_ds2_spec(struct gw_ds2 *s, int variant);
void gw_ds2_build(struct gw *w, const struct gw_ds2 *s);

/* ggml sizes for the three types the writer fills */
uint64_t gw_type_bytes(uint32_t type, uint64_t n_elem);

#endif
