/* kv_pool.h -- test helpers for KV pools of either storage type: the bytes
 * a pool of `type` holds for given values, written here from ref's own half
 * rounding (tests/ref), not from the shaders', and the values the kernels
 * then read back (what the CPU references must attend over). */
#ifndef GSMRT_TEST_KV_POOL_H
#define GSMRT_TEST_KV_POOL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_fixture.h"
#include "kernels/kernels.h"
#include "ref/ref.h"

/* Bytes of n values in a pool of `type`. */
static inline size_t kv_pool_bytes(size_t n, enum gsmrt_kv_type type)
{
    return n * gsmrt_kv_type_bytes(type);
}

/* A malloc'ed image of a pool of `type` holding vals[0..n): F32 the floats,
 * F16 their halves (element i at half i, two to a little-endian word). */
static inline void *kv_pool_image(const float *vals, size_t n, enum gsmrt_kv_type type)
{
    void *img = malloc(kv_pool_bytes(n, type) + 4);
    if (type == GSMRT_KV_F16)
        for (size_t i = 0; i < n; i++) ((uint16_t *)img)[i] = ref_f32_to_f16(vals[i]);
    else
        memcpy(img, vals, n * 4);
    return img;
}

/* The values a pool of `type` returns for vals (F16: rounded), in place. */
static inline void kv_pool_round(float *vals, size_t n, enum gsmrt_kv_type type)
{
    if (type == GSMRT_KV_F16) ref_round_f16(vals, n);
}

/* A pool of `type` holding vals[0..n), uploaded. */
static inline void kv_pool_upload(struct gpu *g, enum gsmrt_vk_role role, const float *vals, size_t n,
                                  enum gsmrt_kv_type type, struct gsmrt_vk_buf *buf, struct gsmrt_vk_range *range)
{
    void *img = kv_pool_image(vals, n, type);
    upload_buf(g, role, img, kv_pool_bytes(n, type), buf, range);
    free(img);
}

#endif
