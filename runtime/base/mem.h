/* mem.h -- host memory through the context's gsmrt_allocator, and checked
 * size arithmetic for sizes that come from untrusted input.
 *
 * gsmrt_mem_alloc keeps the requested size in a small header in front of the
 * block, so gsmrt_mem_free can hand the allocator its size without every
 * caller tracking it. A NULL allocator (or NULL functions in it) means libc. */
#ifndef GSMRT_BASE_MEM_H
#define GSMRT_BASE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gsmrt.h"

void *gsmrt_mem_alloc(const gsmrt_allocator *a, size_t size);   /* uninitialised */
void *gsmrt_mem_calloc(const gsmrt_allocator *a, size_t n, size_t size);   /* zeroed */
void gsmrt_mem_free(const gsmrt_allocator *a, void *p);   /* NULL is fine */
char *gsmrt_mem_strdup(const gsmrt_allocator *a, const char *s);

/* a*b and a+b; false (and *out untouched) on overflow. */
static inline bool gsmrt_size_mul(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b) return false;
    *out = a * b;
    return true;
}
static inline bool gsmrt_size_add(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b) return false;
    *out = a + b;
    return true;
}
static inline bool gsmrt_u64_mul(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b != 0 && a > UINT64_MAX / b) return false;
    *out = a * b;
    return true;
}
static inline bool gsmrt_u64_add(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > UINT64_MAX - b) return false;
    *out = a + b;
    return true;
}
static inline uint64_t gsmrt_align_up(uint64_t v, uint64_t align)   /* align: power of two */
{
    return (v + align - 1) & ~(align - 1);
}

#endif
