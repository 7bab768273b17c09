/* sort.c -- heap sort of index arrays (see sort.h). */
#include "sort.h"

static void sift_down(uint32_t *h, size_t root, size_t n, gsmrt_gsm_before_fn before, const void *ctx)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        /* a max-heap on "comes later": the root is the element that goes last */
        if (c + 1 < n && before(ctx, h[c], h[c + 1])) c++;
        if (!before(ctx, h[root], h[c])) return;
        uint32_t t = h[root];
        h[root] = h[c];
        h[c] = t;
        root = c;
    }
}

void gsmrt_gsm_sort_idx(uint32_t *idx, size_t n, gsmrt_gsm_before_fn before, const void *ctx)
{
    for (size_t i = n / 2; i-- > 0;) sift_down(idx, i, n, before, ctx);
    for (size_t end = n; end > 1; end--) {
        uint32_t t = idx[0];
        idx[0] = idx[end - 1];
        idx[end - 1] = t;
        sift_down(idx, 0, end - 1, before, ctx);
    }
}
