/* weights_fixture.h -- random weight matrices in F32/F16/Q8_0 for kernel
 * tests, with their exact dequantised values (what the kernel must see). */
#ifndef GSMRT_TEST_WEIGHTS_FIXTURE_H
#define GSMRT_TEST_WEIGHTS_FIXTURE_H

#include "gpu_fixture.h"

struct test_weights {
    struct gsmrt_vk_buf buf;
    struct gsmrt_k_weights w;
    float *values;   /* [n_rows][n_cols] dequantised, malloc'd */
};

void weights_make(struct gpu *g, enum gsmrt_wtype type, uint32_t n_rows, uint32_t n_cols,
                  uint64_t seed, struct test_weights *tw);
void weights_free(struct gpu *g, struct test_weights *tw);

#endif
