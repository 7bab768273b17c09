/* kernel_util.h -- helpers shared by the record functions of runtime/kernels. */
#ifndef GSMRT_KERNEL_UTIL_H
#define GSMRT_KERNEL_UTIL_H

#include "kernels/kernels.h"

#define GSMRT_K_MATVEC_WG 32       /* invocations per matvec row */
#define GSMRT_K_MATMUL_TILE 16     /* matmul workgroup: 16 rows x 16 tokens */
#define GSMRT_K_ELEMENTWISE_WG 64

bool gsmrt_k_use_subgroups(const struct gsmrt_vk_device *dev);
/* Matrix-vector products with one output row per invocation and no
 * reduction (fastest on CPU devices, where barriers are costly). */
bool gsmrt_k_row_per_invocation(const struct gsmrt_vk_device *dev);
uint32_t gsmrt_k_reduce_wg_size(const struct gsmrt_vk_device *dev);
/* n_groups workgroups as (gx, gy) with gx within maxComputeWorkGroupCount[0];
 * kernels recover the index with flat_group() and skip the excess. */
void gsmrt_k_split_groups(const struct gsmrt_vk_device *dev, uint32_t n_groups, uint32_t *gx,
                          uint32_t *gy);
gsmrt_status gsmrt_k_pipeline(struct gsmrt_vk_rec *rec, enum gsmrt_kernel id, const uint32_t *spec,
                              uint32_t n_spec, struct gsmrt_vk_pipeline **out,
                              struct gsmrt_err *err);

#endif
