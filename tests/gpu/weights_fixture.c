/* weights_fixture.c -- see weights_fixture.h. */
#include "weights_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

void weights_make(struct gpu *g, enum gsmrt_wtype type, uint32_t n_rows, uint32_t n_cols,
                  uint64_t seed, struct test_weights *tw)
{
    size_t n = (size_t)n_rows * n_cols;
    size_t bytes = (size_t)gsmrt_wtype_row_bytes(type, n_cols) * n_rows;
    assert_true(bytes > 0);
    float *src = malloc(n * 4);
    void *raw = malloc(bytes);
    tw->values = malloc(n * 4);
    assert_non_null(src);
    assert_non_null(raw);
    assert_non_null(tw->values);
    ref_fill_uniform(src, n, seed, -1.0f, 1.0f);
    if (type == GSMRT_WTYPE_F32) memcpy(raw, src, bytes);
    else if (type == GSMRT_WTYPE_F16)
        for (size_t i = 0; i < n; i++) ((uint16_t *)raw)[i] = ref_f32_to_f16(src[i]);
    else ref_quantize_q8_0(src, n, raw);
    ref_dequantize((int)type, raw, n_rows, n_cols, tw->values);
    upload_buf(g, GSMRT_VK_ROLE_WEIGHTS, raw, bytes, &tw->buf, NULL);
    tw->w = (struct gsmrt_k_weights){&tw->buf, 0, type, n_rows, n_cols};
    free(src);
    free(raw);
}

void weights_free(struct gpu *g, struct test_weights *tw)
{
    gsmrt_vk_buf_free(g->dev, &tw->buf);
    free(tw->values);
}
