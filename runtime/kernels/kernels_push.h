/* kernels_push.h -- C mirrors of the kernels' push-constant blocks. Field
 * order and types match the `Push` block of the named shader; sizes are
 * checked here and offsets in tests/unit/test_kernel_table.c. */
#ifndef GSMRT_KERNELS_PUSH_H
#define GSMRT_KERNELS_PUSH_H

#include <stdint.h>

struct gsmrt_pc_matvec {   /* include/matvec_body.glsl */
    uint32_t n_cols, n_rows, y_offset;
};
struct gsmrt_pc_matmul {   /* include/matmul_body.glsl */
    uint32_t n_cols, n_rows, n_tok, x_stride, y_stride, y_offset;
};
struct gsmrt_pc_get_rows {   /* include/get_rows_body.glsl */
    uint32_t n_cols, row_begin, n_rows, n_ids;
};
struct gsmrt_pc_rms_norm {   /* include/rms_norm_body.glsl */
    uint32_t n_cols, n_rows;
    float eps;
    uint32_t x_stride, y_stride;
};
struct gsmrt_pc_softmax {   /* include/softmax_body.glsl */
    uint32_t n_cols, n_rows;
    float scale;
};
struct gsmrt_pc_rope {   /* rope.comp */
    uint32_t n_tok, n_heads, head_stride, row_stride, rot_offset, n_dims, mode;
    float freq_base, freq_scale, ext_factor, attn_factor, corr_low, corr_high;
};
struct gsmrt_pc_n {   /* swiglu.comp, add.comp */
    uint32_t n;
};
struct gsmrt_pc_scale {   /* scale.comp */
    uint32_t n;
    float s;
};

struct gsmrt_pc_head_matvec {   /* include/head_matvec_body.glsl */
    uint32_t n_cols, n_rows, n_heads, n_tok, x_stride, x_head, x_off, y_stride, y_head, y_off;
};
struct gsmrt_pc_moe_matvec {   /* include/moe_matvec_body.glsl */
    uint32_t n_cols, n_rows, n_tok, n_used, x_per_slot, expert_begin, n_experts;
};
struct gsmrt_pc_moe_route {   /* moe_route.comp */
    uint32_t n_tok, n_expert, n_used, gating, has_bias, n_groups, n_groups_used, norm;
    float scale;
};
struct gsmrt_pc_moe_combine {   /* moe_combine.comp */
    uint32_t n_tok, n_used, width;
};
struct gsmrt_pc_attn_partial {   /* include/attn_partial_body.glsl */
    uint32_t n_heads, q_stride, q_head, q_off, page_size, n_splits;
    float scale;
    uint32_t q_tok0, io_tok0;
};
struct gsmrt_pc_attn_prefill {   /* attn_prefill.comp */
    uint32_t n_heads, q_stride, q_head, q_off, n_tok, n_splits;
    float scale;
    uint32_t tok0;
};
struct gsmrt_pc_attn_merge {   /* attn_merge.comp */
    uint32_t n_rows, n_splits, width, y_stride, p_row0, y_row0;
};
struct gsmrt_pc_kv_store {   /* kv_store.comp */
    uint32_t n_tok, width, src_stride, page_size, tok0;
};

struct gsmrt_pc_page_summary {   /* page_summary.comp */
    uint32_t n_list, row, page_size;
};
struct gsmrt_pc_gate_bound {   /* gate_bound.comp */
    uint32_t n_heads, n_pages, q_head, q_off;
    float scale;
    uint32_t q_stride, q_tok0;
};

struct gsmrt_pc_gate_select {   /* gate_select.comp */
    uint32_t n_heads, n_splits, width, n_cold;
};
struct gsmrt_pc_attn_cold {   /* attn_cold.comp */
    uint32_t n_heads, n_cold, split_base, n_splits_total, q_head, q_off;
    float scale;
    uint32_t q_stride, q_tok0;
};
struct gsmrt_pc_page_mass {   /* page_mass.comp */
    uint32_t n_heads, n_total, width, n_cold, split_base;
};

struct gsmrt_pc_attn_stats {   /* attn_stats.comp */
    uint32_t n_heads, q_stride, q_head, q_off, n_bands, sink_tokens;
    float scale;
    uint32_t tok0;
};

/* DeepSeek V4 (kernel_v4.c) */
struct gsmrt_pc_hc_pre {   /* hc_pre.comp */
    uint32_t n_tok, n_embd, hc, iters;
    float eps_rms, eps_hc;
    uint32_t head;
};
struct gsmrt_pc_hc_post {   /* hc_post.comp */
    uint32_t n_tok, n_embd, hc;
};
struct gsmrt_pc_moe_route_v4 {   /* moe_route_v4.comp */
    uint32_t n_tok, n_expert, n_used, hashed, norm;
    float scale;
    uint32_t n_vocab;
};
struct gsmrt_pc_swiglu_clamp {   /* swiglu_clamp.comp */
    uint32_t n;
    float limit;
};
struct gsmrt_pc_compress_pool {   /* compress_pool.comp */
    uint32_t n_blocks, block0, dim, ratio, overlap, row_pos0, n_rows, out_stride;
};
struct gsmrt_pc_indexer_score {   /* indexer_score.comp */
    uint32_t n_tok, n_heads, head_dim, q_stride, n_rows, k_stride, s_stride, ratio;
};
struct gsmrt_pc_topk_rows {   /* topk_rows.comp */
    uint32_t n_tok, n_rows, s_stride, k, ratio;
};
struct gsmrt_pc_attn_v4 {   /* attn_v4.comp */
    uint32_t n_tok, n_heads, q_stride, raw_rows, raw_stride, n_comp, comp_stride, n_swa, mode, top_k, ratio;
    float scale;
};
struct gsmrt_pc_ring_store {   /* ring_store.comp */
    uint32_t n_tok, width, src_stride, n_rows, dst_stride;
};

/* 128 bytes is Vulkan's guaranteed minimum maxPushConstantsSize. */
_Static_assert(sizeof(struct gsmrt_pc_matvec) == 12 && sizeof(struct gsmrt_pc_matvec) <= 128, "");
_Static_assert(sizeof(struct gsmrt_pc_matmul) == 24, "");
_Static_assert(sizeof(struct gsmrt_pc_get_rows) == 16, "");
_Static_assert(sizeof(struct gsmrt_pc_rms_norm) == 20, "");
_Static_assert(sizeof(struct gsmrt_pc_softmax) == 12, "");
_Static_assert(sizeof(struct gsmrt_pc_rope) == 52 && sizeof(struct gsmrt_pc_rope) <= 128, "");
_Static_assert(sizeof(struct gsmrt_pc_n) == 4, "");
_Static_assert(sizeof(struct gsmrt_pc_scale) == 8, "");
_Static_assert(sizeof(struct gsmrt_pc_head_matvec) == 40, "");
_Static_assert(sizeof(struct gsmrt_pc_moe_matvec) == 28, "");
_Static_assert(sizeof(struct gsmrt_pc_moe_route) == 36, "");
_Static_assert(sizeof(struct gsmrt_pc_moe_combine) == 12, "");
_Static_assert(sizeof(struct gsmrt_pc_attn_partial) == 36, "");
_Static_assert(sizeof(struct gsmrt_pc_attn_merge) == 24, "");
_Static_assert(sizeof(struct gsmrt_pc_attn_prefill) == 32, "");
_Static_assert(sizeof(struct gsmrt_pc_page_summary) == 12, "");
_Static_assert(sizeof(struct gsmrt_pc_gate_bound) == 28, "");
_Static_assert(sizeof(struct gsmrt_pc_gate_select) == 16, "");
_Static_assert(sizeof(struct gsmrt_pc_attn_cold) == 36, "");
_Static_assert(sizeof(struct gsmrt_pc_page_mass) == 20, "");
_Static_assert(sizeof(struct gsmrt_pc_kv_store) == 20, "");
_Static_assert(sizeof(struct gsmrt_pc_attn_stats) == 32, "");
_Static_assert(sizeof(struct gsmrt_pc_hc_pre) == 28, "");
_Static_assert(sizeof(struct gsmrt_pc_hc_post) == 12, "");
_Static_assert(sizeof(struct gsmrt_pc_moe_route_v4) == 28, "");
_Static_assert(sizeof(struct gsmrt_pc_swiglu_clamp) == 8, "");
_Static_assert(sizeof(struct gsmrt_pc_compress_pool) == 32, "");
_Static_assert(sizeof(struct gsmrt_pc_indexer_score) == 32, "");
_Static_assert(sizeof(struct gsmrt_pc_topk_rows) == 20, "");
_Static_assert(sizeof(struct gsmrt_pc_attn_v4) == 48, "");
_Static_assert(sizeof(struct gsmrt_pc_ring_store) == 20, "");

#endif
