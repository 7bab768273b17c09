/* sort.h -- in-place heap sort of index arrays with a caller's ordering:
 * O(n log n), no allocation, deterministic for a strict total order (break
 * ties by index in `before`). Used by the gate and the tier policy. */
#ifndef GSMRT_GSM_SORT_H
#define GSMRT_GSM_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* true when a must come before b */
typedef bool (*gsmrt_gsm_before_fn)(const void *ctx, uint32_t a, uint32_t b);

void gsmrt_gsm_sort_idx(uint32_t *idx, size_t n, gsmrt_gsm_before_fn before, const void *ctx);

#endif
