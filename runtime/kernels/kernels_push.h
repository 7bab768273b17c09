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
struct gsmrt_pc_rows {   /* include/rms_norm_body.glsl (eps), softmax_body.glsl (scale) */
    uint32_t n_cols, n_rows;
    float f;
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

/* 128 bytes is Vulkan's guaranteed minimum maxPushConstantsSize. */
_Static_assert(sizeof(struct gsmrt_pc_matvec) == 12 && sizeof(struct gsmrt_pc_matvec) <= 128, "");
_Static_assert(sizeof(struct gsmrt_pc_matmul) == 24, "");
_Static_assert(sizeof(struct gsmrt_pc_get_rows) == 16, "");
_Static_assert(sizeof(struct gsmrt_pc_rows) == 12, "");
_Static_assert(sizeof(struct gsmrt_pc_rope) == 52 && sizeof(struct gsmrt_pc_rope) <= 128, "");
_Static_assert(sizeof(struct gsmrt_pc_n) == 4, "");
_Static_assert(sizeof(struct gsmrt_pc_scale) == 8, "");

#endif
