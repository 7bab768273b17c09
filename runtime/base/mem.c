/* mem.c -- allocation through the context's allocator (see mem.h). */
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

/* The header in front of each block: the size the caller asked for. 16 bytes
 * keep the returned pointer 16-byte aligned, enough for any C scalar. */
#define HEADER_BYTES 16

void *gsmrt_mem_alloc(const gsmrt_allocator *a, size_t size)
{
    size_t total;
    if (!gsmrt_size_add(size, HEADER_BYTES, &total)) return NULL;
    unsigned char *base;
    if (a && a->alloc) base = a->alloc(a->user, total, HEADER_BYTES);
    else base = malloc(total);
    if (!base) return NULL;
    memcpy(base, &total, sizeof total);
    return base + HEADER_BYTES;
}

void *gsmrt_mem_calloc(const gsmrt_allocator *a, size_t n, size_t size)
{
    size_t bytes;
    if (!gsmrt_size_mul(n, size, &bytes)) return NULL;
    void *p = gsmrt_mem_alloc(a, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

void gsmrt_mem_free(const gsmrt_allocator *a, void *p)
{
    if (!p) return;
    unsigned char *base = (unsigned char *)p - HEADER_BYTES;
    size_t total;
    memcpy(&total, base, sizeof total);
    if (a && a->free) a->free(a->user, base, total);
    else free(base);
}

char *gsmrt_mem_strdup(const gsmrt_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = gsmrt_mem_alloc(a, n);
    if (d) memcpy(d, s, n);
    return d;
}
