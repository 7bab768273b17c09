/* test_base.c -- status table, error records, the allocator wrapper and
 * checked size arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/mem.h"

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(gsmrt_status_name(GSMRT_OK), "GSMRT_OK");
    assert_string_equal(gsmrt_status_name(GSMRT_E_FORMAT), "GSMRT_E_FORMAT");
    assert_string_equal(gsmrt_status_name(GSMRT_E_INTERNAL), "GSMRT_E_INTERNAL");
    assert_string_equal(gsmrt_status_name((gsmrt_status)999), "GSMRT_UNKNOWN_STATUS");
    assert_string_equal(gsmrt_status_message(GSMRT_E_NO_DEVICE), "no usable Vulkan device or loader");
    /* every value below the count has a distinct name */
    for (int a = 0; a < GSMRT_STATUS_COUNT_; a++)
        for (int b = a + 1; b < GSMRT_STATUS_COUNT_; b++)
            assert_string_not_equal(gsmrt_status_name((gsmrt_status)a), gsmrt_status_name((gsmrt_status)b));
    assert_int_equal(gsmrt_version(), GSMRT_VERSION);
    assert_string_equal(gsmrt_version_string(), "0.1.0");
}

static void test_err_set_and_prefix(void **state)
{
    (void)state;
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    assert_int_equal(gsmrt_err_set(&e, GSMRT_E_FORMAT, "tensor '%s': type %d", "blk.0.x", 12), GSMRT_E_FORMAT);
    gsmrt_err_prefix(&e, "%s: ", "model.gguf");
    assert_string_equal(e.msg, "model.gguf: tensor 'blk.0.x': type 12");
    assert_int_equal(e.status, GSMRT_E_FORMAT);
    /* NULL records are accepted everywhere */
    assert_int_equal(gsmrt_err_set(NULL, GSMRT_E_IO, "x"), GSMRT_E_IO);
    gsmrt_err_prefix(NULL, "y");
    /* an overlong prefix is cut (at 511 bytes), the message is kept */
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gsmrt_err_prefix(&e, "%s", big);
    assert_int_equal(strlen(e.msg), 511 + strlen("model.gguf: tensor 'blk.0.x': type 12"));
    assert_string_equal(e.msg + 511, "model.gguf: tensor 'blk.0.x': type 12");
    /* and many prefixes never overflow the record */
    for (int i = 0; i < 10; i++) gsmrt_err_prefix(&e, "%s", big);
    assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
    assert_int_equal(e.msg[0], 'a');
}

struct counting {
    size_t live_bytes, n_alloc, n_free;
};

static void *count_alloc(void *user, size_t size, size_t align)
{
    struct counting *c = user;
    assert_true(align >= 16);
    c->live_bytes += size;
    c->n_alloc++;
    return malloc(size);
}

static void count_free(void *user, void *p, size_t size)
{
    struct counting *c = user;
    c->live_bytes -= size;
    c->n_free++;
    free(p);
}

static void test_allocator_gets_sizes_back(void **state)
{
    (void)state;
    struct counting c = {0, 0, 0};
    gsmrt_allocator a = {&c, count_alloc, count_free};
    char *p = gsmrt_mem_alloc(&a, 100);
    int *q = gsmrt_mem_calloc(&a, 10, sizeof(int));
    char *s = gsmrt_mem_strdup(&a, "hello");
    assert_non_null(p);
    assert_non_null(q);
    assert_string_equal(s, "hello");
    for (int i = 0; i < 10; i++) assert_int_equal(q[i], 0);
    assert_int_equal((uintptr_t)q % 16, 0);
    assert_int_equal(c.n_alloc, 3);
    gsmrt_mem_free(&a, p);
    gsmrt_mem_free(&a, q);
    gsmrt_mem_free(&a, s);
    gsmrt_mem_free(&a, NULL);
    assert_int_equal(c.live_bytes, 0);   /* free saw the sizes alloc was asked for */
    assert_int_equal(c.n_free, 3);
    /* overflowing requests fail before reaching the allocator */
    assert_null(gsmrt_mem_calloc(&a, SIZE_MAX / 2, 4));
    assert_null(gsmrt_mem_alloc(&a, SIZE_MAX - 4));
    assert_int_equal(c.n_alloc, 3);
}

static void test_checked_math(void **state)
{
    (void)state;
    size_t s;
    uint64_t u;
    assert_true(gsmrt_size_mul(3, 4, &s) && s == 12);
    assert_false(gsmrt_size_mul(SIZE_MAX / 2 + 1, 2, &s));
    assert_true(gsmrt_size_add(SIZE_MAX - 1, 1, &s) && s == SIZE_MAX);
    assert_false(gsmrt_size_add(SIZE_MAX, 1, &s));
    assert_false(gsmrt_u64_mul(UINT64_MAX, 2, &u));
    assert_false(gsmrt_u64_add(UINT64_MAX, 1, &u));
    assert_int_equal(gsmrt_align_up(17, 16), 32);
    assert_int_equal(gsmrt_align_up(32, 16), 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_err_set_and_prefix),
        cmocka_unit_test(test_allocator_gets_sizes_back),
        cmocka_unit_test(test_checked_math),
    };
    return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
