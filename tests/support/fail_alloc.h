/* fail_alloc.h -- a host allocator for out-of-memory tests: counts calls and
 * live blocks, and fails the call with a chosen index. Blocks come from
 * cmocka's test_malloc, so a block never freed also fails the test. */
#ifndef GSMRT_TEST_FAIL_ALLOC_H
#define GSMRT_TEST_FAIL_ALLOC_H

#include "gsmrt.h"

struct fail_alloc {
    long calls;        /* allocations asked for so far */
    long fail_at;      /* index (from 0) of the call that returns NULL; -1: none */
    long live;         /* blocks allocated and not yet freed */
    long live_bytes;
};

/* Resets the counts; the call with index fail_at (-1: none) will fail. */
void fail_alloc_init(struct fail_alloc *f, long fail_at);
gsmrt_allocator fail_alloc_allocator(struct fail_alloc *f);

#endif
