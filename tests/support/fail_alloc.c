/* fail_alloc.c -- see fail_alloc.h. */
#include "fail_alloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

void fail_alloc_init(struct fail_alloc *f, long fail_at)
{
    f->calls = 0;
    f->fail_at = fail_at;
    f->live = 0;
    f->live_bytes = 0;
}

static void *f_alloc(void *user, size_t size, size_t align)
{
    struct fail_alloc *f = user;
    (void)align;   /* test_malloc returns max_align_t-aligned memory; we ask for at most 16 */
    if (f->calls++ == f->fail_at) return NULL;
    void *p = test_malloc(size);
    if (p) f->live++, f->live_bytes += (long)size;
    return p;
}

static void f_free(void *user, void *p, size_t size)
{
    struct fail_alloc *f = user;
    f->live--, f->live_bytes -= (long)size;
    test_free(p);
}

gsmrt_allocator fail_alloc_allocator(struct fail_alloc *f)
{
    return (gsmrt_allocator){f, f_alloc, f_free};
}
