/* test_check_tensors.c -- gsmrt_check_tensors (--check-tensors) on GGUF
 * files made here: finite F32/F16/Q8_0 weights pass; one NaN or infinity
 * written into a tensor's data is found and the message names the tensor
 * and the element (or, for Q8_0, the block whose scale it is). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/gguf_writer.h"

#include "gguf/gguf.h"
#include "model/check_tensors.h"

struct file {
    uint8_t *data;
    size_t size;
    uint64_t data_start, off[3];
};

static void make(struct file *f)
{
    struct gw w;
    gw_init(&w);
    gw_kv_str(&w, "general.architecture", "deepseek2");
    const int64_t ne[2] = {64, 3};
    f->off[0] = gw_tensor(&w, "a.f32", GSMRT_GGML_TYPE_F32, 2, ne);
    f->off[1] = gw_tensor(&w, "b.f16", GSMRT_GGML_TYPE_F16, 2, ne);
    f->off[2] = gw_tensor(&w, "c.q8_0", GSMRT_GGML_TYPE_Q8_0, 2, ne);
    gw_finish(&w, &f->data, &f->size);
    f->data_start = w.data_start;
    gw_free(&w);
}

static gsmrt_status check(const struct file *f, struct gsmrt_err *err)
{
    struct gsmrt_gguf *g = NULL;
    gsmrt_status st = gsmrt_gguf_open_memory(f->data, f->size, "w.gguf", NULL, &g, err);
    assert_int_equal(st, GSMRT_OK);
    st = gsmrt_check_tensors(g, err);
    gsmrt_gguf_close(g);
    return st;
}

static void test_finite_weights_pass(void **state)
{
    (void)state;
    struct file f;
    make(&f);
    struct gsmrt_err err = {GSMRT_OK, ""};
    assert_int_equal(check(&f, &err), GSMRT_OK);
    free(f.data);
}

static void test_non_finite_found(void **state)
{
    (void)state;
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct file f;
    make(&f);
    const float nan = NAN;
    memcpy(f.data + f.data_start + f.off[0] + 4 * 70, &nan, 4);   /* element 70 of a.f32 */
    assert_int_equal(check(&f, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "tensor 'a.f32': element 70 is not finite"));
    free(f.data);

    make(&f);
    const uint16_t inf16 = 0xFC00;   /* -infinity */
    memcpy(f.data + f.data_start + f.off[1] + 2 * 5, &inf16, 2);
    assert_int_equal(check(&f, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "tensor 'b.f16': element 5 is not finite"));
    free(f.data);

    make(&f);
    const uint16_t nan16 = 0x7E00;
    memcpy(f.data + f.data_start + f.off[2] + 34 * 4, &nan16, 2);   /* the scale of block 4 */
    assert_int_equal(check(&f, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "tensor 'c.q8_0': the scale of block 4 is not finite"));
    free(f.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finite_weights_pass),
        cmocka_unit_test(test_non_finite_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
