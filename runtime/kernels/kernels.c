/* kernels.c -- the kernel table (SPIR-V plus interface), weight-type facts,
 * variant choice and the shared dispatch helpers of the record functions. */
#include <string.h>

#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

/* Binding count and push size per kernel; tests/unit/test_kernel_table.c
 * checks both against the SPIR-V itself. */
static const struct {
    uint32_t n_bindings, push_bytes;
} IFACE[GSMRT_KERNEL_COUNT] = {
    [GSMRT_KERNEL_MATVEC_F32] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_F16] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_Q8_0] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_F32_NOSG] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_F16_NOSG] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_Q8_0_NOSG] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATMUL_F32] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KERNEL_MATMUL_F16] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KERNEL_MATMUL_Q8_0] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KERNEL_GET_ROWS_F32] = {3, sizeof(struct gsmrt_pc_get_rows)},
    [GSMRT_KERNEL_GET_ROWS_F16] = {3, sizeof(struct gsmrt_pc_get_rows)},
    [GSMRT_KERNEL_GET_ROWS_Q8_0] = {3, sizeof(struct gsmrt_pc_get_rows)},
    [GSMRT_KERNEL_RMS_NORM] = {3, sizeof(struct gsmrt_pc_rms_norm)},
    [GSMRT_KERNEL_RMS_NORM_NOSG] = {3, sizeof(struct gsmrt_pc_rms_norm)},
    [GSMRT_KERNEL_SOFTMAX] = {2, sizeof(struct gsmrt_pc_softmax)},
    [GSMRT_KERNEL_SOFTMAX_NOSG] = {2, sizeof(struct gsmrt_pc_softmax)},
    [GSMRT_KERNEL_ROPE] = {2, sizeof(struct gsmrt_pc_rope)},
    [GSMRT_KERNEL_SWIGLU] = {3, sizeof(struct gsmrt_pc_n)},
    [GSMRT_KERNEL_ADD] = {3, sizeof(struct gsmrt_pc_n)},
    [GSMRT_KERNEL_SCALE] = {2, sizeof(struct gsmrt_pc_scale)},
    [GSMRT_KERNEL_HEAD_MATVEC_F32] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_F16] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_Q8_0] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_F32_NOSG] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_F16_NOSG] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_Q8_0_NOSG] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_F32] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_F16] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_Q8_0] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_F32_NOSG] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_F16_NOSG] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_Q8_0_NOSG] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_ROUTE] = {4, sizeof(struct gsmrt_pc_moe_route)},
    [GSMRT_KERNEL_MOE_COMBINE] = {3, sizeof(struct gsmrt_pc_moe_combine)},
    [GSMRT_KERNEL_ATTN_PARTIAL] = {7, sizeof(struct gsmrt_pc_attn_partial)},
    [GSMRT_KERNEL_ATTN_PARTIAL_NOSG] = {7, sizeof(struct gsmrt_pc_attn_partial)},
    [GSMRT_KERNEL_ATTN_MERGE] = {2, sizeof(struct gsmrt_pc_attn_merge)},
    [GSMRT_KERNEL_KV_STORE] = {4, sizeof(struct gsmrt_pc_kv_store)},
    [GSMRT_KERNEL_MATVEC_F32_ROWS] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_F16_ROWS] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_MATVEC_Q8_0_ROWS] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_F32_ROWS] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_F16_ROWS] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_HEAD_MATVEC_Q8_0_ROWS] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_F32_ROWS] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_F16_ROWS] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MOE_MATVEC_Q8_0_ROWS] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
    [GSMRT_KERNEL_MATMUL_F32_ROWS] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KERNEL_MATMUL_F16_ROWS] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KERNEL_MATMUL_Q8_0_ROWS] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KERNEL_ATTN_PREFILL] = {7, sizeof(struct gsmrt_pc_attn_prefill)},
    [GSMRT_KERNEL_PAGE_SUMMARY] = {3, sizeof(struct gsmrt_pc_page_summary)},
    [GSMRT_KERNEL_GATE_BOUND] = {5, sizeof(struct gsmrt_pc_gate_bound)},
    [GSMRT_KERNEL_GATE_SELECT] = {6, sizeof(struct gsmrt_pc_gate_select)},
    [GSMRT_KERNEL_ATTN_COLD] = {8, sizeof(struct gsmrt_pc_attn_cold)},
    [GSMRT_KERNEL_PAGE_MASS] = {5, sizeof(struct gsmrt_pc_page_mass)},
    [GSMRT_KERNEL_ATTN_STATS] = {7, sizeof(struct gsmrt_pc_attn_stats)},
    /* DeepSeek V4 (kernel_v4.c) */
    [GSMRT_KERNEL_HC_PRE] = {6, sizeof(struct gsmrt_pc_hc_pre)},
    [GSMRT_KERNEL_HC_POST] = {4, sizeof(struct gsmrt_pc_hc_post)},
    [GSMRT_KERNEL_MOE_ROUTE_V4] = {6, sizeof(struct gsmrt_pc_moe_route_v4)},
    [GSMRT_KERNEL_SWIGLU_CLAMP] = {3, sizeof(struct gsmrt_pc_swiglu_clamp)},
    [GSMRT_KERNEL_COMPRESS_POOL] = {4, sizeof(struct gsmrt_pc_compress_pool)},
    [GSMRT_KERNEL_INDEXER_SCORE] = {5, sizeof(struct gsmrt_pc_indexer_score)},
    [GSMRT_KERNEL_TOPK_ROWS] = {3, sizeof(struct gsmrt_pc_topk_rows)},
    [GSMRT_KERNEL_ATTN_V4] = {7, sizeof(struct gsmrt_pc_attn_v4)},
    [GSMRT_KERNEL_RING_STORE] = {3, sizeof(struct gsmrt_pc_ring_store)},
};

static struct gsmrt_vk_kernel_desc DESCS[GSMRT_KERNEL_COUNT];

const struct gsmrt_vk_kernel_desc *gsmrt_kernel_desc(enum gsmrt_kernel id)
{
    if ((unsigned)id >= GSMRT_KERNEL_COUNT) return NULL;
    struct gsmrt_vk_kernel_desc *d = &DESCS[id];
    /* Filled from constant tables: every thread writes the same values. */
    if (!d->code) {
        d->name = gsmrt_spv_table[id].name;
        d->code_bytes = gsmrt_spv_table[id].size;
        d->n_bindings = IFACE[id].n_bindings;
        d->push_bytes = IFACE[id].push_bytes;
        d->code = gsmrt_spv_table[id].code;
    }
    return d;
}

uint64_t gsmrt_wtype_row_bytes(enum gsmrt_wtype type, uint64_t n_cols)
{
    switch (type) {
    case GSMRT_WTYPE_F32: return 4 * n_cols;
    case GSMRT_WTYPE_F16: return 2 * n_cols;
    case GSMRT_WTYPE_Q8_0:
        return n_cols % GSMRT_Q8_0_BLOCK ? 0 : n_cols / GSMRT_Q8_0_BLOCK * GSMRT_Q8_0_BLOCK_BYTES;
    default: return 0;
    }
}

const char *gsmrt_wtype_name(enum gsmrt_wtype type)
{
    switch (type) {
    case GSMRT_WTYPE_F32: return "F32";
    case GSMRT_WTYPE_F16: return "F16";
    case GSMRT_WTYPE_Q8_0: return "Q8_0";
    default: return "unknown";
    }
}

bool gsmrt_k_row_per_invocation(const struct gsmrt_vk_device *dev)
{
    return dev->row_per_invocation;
}

bool gsmrt_k_use_subgroups(const struct gsmrt_vk_device *dev)
{
    return dev->caps.subgroup_arithmetic && dev->caps.subgroup_basic && !dev->disable_subgroup_ops;
}

uint32_t gsmrt_k_reduce_wg_size(const struct gsmrt_vk_device *dev)
{
    /* 64 invocations per row: enough to hide latency on GPUs, a few SIMD
     * passes on llvmpipe; never below the subgroup size. */
    uint32_t wg = 64;
    if (dev->caps.subgroup_size > wg) wg = dev->caps.subgroup_size;
    if (wg > dev->caps.max_workgroup_invocations) wg = dev->caps.max_workgroup_invocations;
    return wg;
}

void gsmrt_k_split_groups(const struct gsmrt_vk_device *dev, uint32_t n_groups, uint32_t *gx,
                          uint32_t *gy)
{
    uint32_t max_x = dev->caps.max_workgroup_count[0];
    if (n_groups == 0) n_groups = 1;
    *gx = n_groups < max_x ? n_groups : max_x;
    *gy = (n_groups + *gx - 1) / *gx;
}

gsmrt_status gsmrt_k_pipeline(struct gsmrt_vk_rec *rec, enum gsmrt_kernel id, const uint32_t *spec,
                              uint32_t n_spec, struct gsmrt_vk_pipeline **out,
                              struct gsmrt_err *err)
{
    return gsmrt_vk_pipeline_get(rec->dev, gsmrt_kernel_desc(id), spec, n_spec, out, err);
}

gsmrt_status gsmrt_kernels_warm_up(struct gsmrt_vk_device *dev, struct gsmrt_err *err)
{
    bool sg = gsmrt_k_use_subgroups(dev);
    uint32_t wg = gsmrt_k_reduce_wg_size(dev);
    static const enum gsmrt_kernel with_wg[] = {
        GSMRT_KERNEL_GET_ROWS_F32, GSMRT_KERNEL_GET_ROWS_F16, GSMRT_KERNEL_GET_ROWS_Q8_0,
        GSMRT_KERNEL_ROPE, GSMRT_KERNEL_SWIGLU, GSMRT_KERNEL_ADD, GSMRT_KERNEL_SCALE,
    };
    static const enum gsmrt_kernel reductions[][2] = {
        {GSMRT_KERNEL_MATVEC_F32, GSMRT_KERNEL_MATVEC_F32_NOSG},
        {GSMRT_KERNEL_MATVEC_F16, GSMRT_KERNEL_MATVEC_F16_NOSG},
        {GSMRT_KERNEL_MATVEC_Q8_0, GSMRT_KERNEL_MATVEC_Q8_0_NOSG},
        {GSMRT_KERNEL_RMS_NORM, GSMRT_KERNEL_RMS_NORM_NOSG},
        {GSMRT_KERNEL_SOFTMAX, GSMRT_KERNEL_SOFTMAX_NOSG},
    };
    struct gsmrt_vk_pipeline *p;
    gsmrt_status st = GSMRT_OK;
    uint32_t elementwise_wg = GSMRT_K_ELEMENTWISE_WG;
    for (size_t i = 0; i < sizeof with_wg / sizeof with_wg[0] && st == GSMRT_OK; i++)
        st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(with_wg[i]), &elementwise_wg, 1, &p, err);
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0] && st == GSMRT_OK; i++) {
        enum gsmrt_kernel id = reductions[i][sg ? 0 : 1];
        uint32_t w = id <= GSMRT_KERNEL_MATVEC_Q8_0_NOSG ? GSMRT_K_MATVEC_WG : wg;
        st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(id), &w, 1, &p, err);
    }
    const uint32_t tiles[2] = {GSMRT_K_MATMUL_TILE, GSMRT_K_MATMUL_TILE};
    for (enum gsmrt_kernel id = GSMRT_KERNEL_MATMUL_F32; id <= GSMRT_KERNEL_MATMUL_Q8_0 && st == GSMRT_OK;
         id++)
        st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(id), tiles, 2, &p, err);
    return st;   /* the pipeline cache is saved once, when the device is destroyed */
}
