/* kernels.c -- the kernel table (SPIR-V plus interface), the
 * product-kernel lookup and the shared dispatch helpers of the record functions. */
#include <string.h>

#include "kernels/kernel_util.h"
#include "kernels/kernels_push.h"

/* Binding count and push size per kernel; tests/unit/test_kernel_table.c
 * checks both against the SPIR-V itself. The product kernels share their
 * family's interface, whatever the weight type and variant. */
struct iface {
    uint32_t n_bindings, push_bytes;
};

static const struct iface FAMILY_IFACE[GSMRT_KFAMILY_COUNT] = {
    [GSMRT_KFAMILY_MATVEC] = {3, sizeof(struct gsmrt_pc_matvec)},
    [GSMRT_KFAMILY_MATMUL] = {3, sizeof(struct gsmrt_pc_matmul)},
    [GSMRT_KFAMILY_GET_ROWS] = {3, sizeof(struct gsmrt_pc_get_rows)},
    [GSMRT_KFAMILY_HEAD_MATVEC] = {3, sizeof(struct gsmrt_pc_head_matvec)},
    [GSMRT_KFAMILY_MOE_MATVEC] = {4, sizeof(struct gsmrt_pc_moe_matvec)},
};

static const struct iface IFACE[GSMRT_KERNEL_COUNT] = {
    [GSMRT_KERNEL_RMS_NORM] = {3, sizeof(struct gsmrt_pc_rms_norm)},
    [GSMRT_KERNEL_RMS_NORM_NOSG] = {3, sizeof(struct gsmrt_pc_rms_norm)},
    [GSMRT_KERNEL_SOFTMAX] = {2, sizeof(struct gsmrt_pc_softmax)},
    [GSMRT_KERNEL_SOFTMAX_NOSG] = {2, sizeof(struct gsmrt_pc_softmax)},
    [GSMRT_KERNEL_ROPE] = {2, sizeof(struct gsmrt_pc_rope)},
    [GSMRT_KERNEL_SWIGLU] = {3, sizeof(struct gsmrt_pc_n)},
    [GSMRT_KERNEL_ADD] = {3, sizeof(struct gsmrt_pc_n)},
    [GSMRT_KERNEL_SCALE] = {2, sizeof(struct gsmrt_pc_scale)},
    [GSMRT_KERNEL_MOE_ROUTE] = {4, sizeof(struct gsmrt_pc_moe_route)},
    [GSMRT_KERNEL_MOE_COMBINE] = {3, sizeof(struct gsmrt_pc_moe_combine)},
    [GSMRT_KERNEL_ATTN_PARTIAL] = {7, sizeof(struct gsmrt_pc_attn_partial)},
    [GSMRT_KERNEL_ATTN_PARTIAL_NOSG] = {7, sizeof(struct gsmrt_pc_attn_partial)},
    [GSMRT_KERNEL_ATTN_MERGE] = {2, sizeof(struct gsmrt_pc_attn_merge)},
    [GSMRT_KERNEL_KV_STORE] = {4, sizeof(struct gsmrt_pc_kv_store)},
    [GSMRT_KERNEL_ATTN_PREFILL] = {7, sizeof(struct gsmrt_pc_attn_prefill)},
    [GSMRT_KERNEL_PAGE_SUMMARY] = {3, sizeof(struct gsmrt_pc_page_summary)},
    [GSMRT_KERNEL_GATE_BOUND] = {5, sizeof(struct gsmrt_pc_gate_bound)},
    [GSMRT_KERNEL_GATE_SELECT] = {6, sizeof(struct gsmrt_pc_gate_select)},
    [GSMRT_KERNEL_ATTN_COLD] = {8, sizeof(struct gsmrt_pc_attn_cold)},
    [GSMRT_KERNEL_PAGE_MASS] = {5, sizeof(struct gsmrt_pc_page_mass)},
    [GSMRT_KERNEL_ATTN_STATS] = {7, sizeof(struct gsmrt_pc_attn_stats)},
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
        int family = gsmrt_spv_table[id].family;
        const struct iface *f = family ? &FAMILY_IFACE[family - 1] : &IFACE[id];
        d->n_bindings = f->n_bindings;
        d->push_bytes = f->push_bytes;
        d->code = gsmrt_spv_table[id].code;
    }
    return d;
}

gsmrt_status gsmrt_k_product_kernel(const struct gsmrt_vk_device *dev, enum gsmrt_kfamily family,
                                    enum gsmrt_wtype type, enum gsmrt_kernel *id, struct gsmrt_err *err)
{
    const struct gsmrt_wtype_info *t = gsmrt_wtype_find((uint32_t)type);
    if (!t || (unsigned)family >= GSMRT_KFAMILY_COUNT)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "no kernel for weights of type %s (supported: %s)",
                             gsmrt_wtype_name(type), gsmrt_wtype_supported_list());
    const uint16_t *v = gsmrt_spv_variants[family][t->index];
    enum gsmrt_kvariant want = gsmrt_k_row_per_invocation(dev) ? GSMRT_KVARIANT_ROWS
                               : gsmrt_k_use_subgroups(dev)     ? GSMRT_KVARIANT
                                                                : GSMRT_KVARIANT_NOSG;
    /* A family without that variant (matmul's tiles reduce nothing; the
     * gather has one form) runs its plain one. */
    uint16_t k = v[want] ? v[want] : v[GSMRT_KVARIANT];
    *id = (enum gsmrt_kernel)(k - 1);
    return GSMRT_OK;
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
    /* The bundled model's types and its test variants; others compile on first use. */
    static const enum gsmrt_wtype warm_types[] = {GSMRT_WTYPE_F32, GSMRT_WTYPE_F16, GSMRT_WTYPE_Q8_0};
    static const enum gsmrt_kernel with_wg[] = {
        GSMRT_KERNEL_ROPE, GSMRT_KERNEL_SWIGLU, GSMRT_KERNEL_ADD, GSMRT_KERNEL_SCALE,
    };
    static const enum gsmrt_kernel reductions[][2] = {
        {GSMRT_KERNEL_RMS_NORM, GSMRT_KERNEL_RMS_NORM_NOSG},
        {GSMRT_KERNEL_SOFTMAX, GSMRT_KERNEL_SOFTMAX_NOSG},
    };
    struct gsmrt_vk_pipeline *p;
    gsmrt_status st = GSMRT_OK;
    uint32_t elementwise_wg = GSMRT_K_ELEMENTWISE_WG, matvec_wg = GSMRT_K_MATVEC_WG;
    const uint32_t tiles[2] = {GSMRT_K_MATMUL_TILE, GSMRT_K_MATMUL_TILE};
    enum gsmrt_kvariant reduce = sg ? GSMRT_KVARIANT : GSMRT_KVARIANT_NOSG;
    for (size_t i = 0; i < sizeof warm_types / sizeof warm_types[0] && st == GSMRT_OK; i++) {
        const struct gsmrt_wtype_info *t = gsmrt_wtype_find((uint32_t)warm_types[i]);
        enum gsmrt_kernel gather = gsmrt_spv_variants[GSMRT_KFAMILY_GET_ROWS][t->index][GSMRT_KVARIANT] - 1;
        enum gsmrt_kernel matvec = gsmrt_spv_variants[GSMRT_KFAMILY_MATVEC][t->index][reduce] - 1;
        enum gsmrt_kernel matmul = gsmrt_spv_variants[GSMRT_KFAMILY_MATMUL][t->index][GSMRT_KVARIANT] - 1;
        st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(gather), &elementwise_wg, 1, &p, err);
        if (st == GSMRT_OK) st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(matvec), &matvec_wg, 1, &p, err);
        if (st == GSMRT_OK) st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(matmul), tiles, 2, &p, err);
    }
    for (size_t i = 0; i < sizeof with_wg / sizeof with_wg[0] && st == GSMRT_OK; i++)
        st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(with_wg[i]), &elementwise_wg, 1, &p, err);
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0] && st == GSMRT_OK; i++)
        st = gsmrt_vk_pipeline_get(dev, gsmrt_kernel_desc(reductions[i][sg ? 0 : 1]), &wg, 1, &p, err);
    return st;   /* the pipeline cache is saved once, when the device is destroyed */
}
