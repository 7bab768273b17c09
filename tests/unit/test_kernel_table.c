/* test_kernel_table.c -- the kernel table agrees with the SPIR-V it embeds:
 * binding count and push-constant size are read back from each blob by a
 * small reflection pass over the SPIR-V word stream (independent of the
 * hand-written table), and the C push-constant mirrors have the offsets the
 * shaders declare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kernels.h"
#include "kernels/kernels_push.h"

enum {
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    DEC_BINDING = 33,
    DEC_OFFSET = 35,
    SC_UNIFORM = 2,
    SC_PUSH_CONSTANT = 9,
    SC_STORAGE_BUFFER = 12,
};

struct reflection {
    uint32_t n_bindings;
    uint32_t push_bytes;
    uint32_t max_binding;
};

#define MAX_IDS 4096

static void reflect(const uint32_t *w, size_t n_words, struct reflection *r)
{
    static uint32_t ptr_class[MAX_IDS], ptr_type[MAX_IDS], struct_size[MAX_IDS];
    static uint8_t has_binding[MAX_IDS];
    static uint32_t binding_of[MAX_IDS];
    memset(ptr_class, 0, sizeof ptr_class);
    memset(ptr_type, 0, sizeof ptr_type);
    memset(struct_size, 0, sizeof struct_size);
    memset(has_binding, 0, sizeof has_binding);
    memset(r, 0, sizeof *r);
    assert_int_equal(w[0], 0x07230203);   /* SPIR-V magic */
    assert_true(w[3] <= MAX_IDS);         /* id bound */
    /* Pass 1: types and decorations. */
    for (size_t i = 5; i < n_words;) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        assert_true(wc > 0 && i + wc <= n_words);
        if (op == OP_TYPE_POINTER) {
            ptr_class[w[i + 1]] = w[i + 2];
            ptr_type[w[i + 1]] = w[i + 3];
        } else if (op == OP_DECORATE && w[i + 2] == DEC_BINDING) {
            has_binding[w[i + 1]] = 1;
            binding_of[w[i + 1]] = w[i + 3];
        } else if (op == OP_MEMBER_DECORATE && w[i + 3] == DEC_OFFSET) {
            uint32_t end = w[i + 4] + 4;   /* every push member is a 4-byte scalar */
            if (end > struct_size[w[i + 1]]) struct_size[w[i + 1]] = end;
        }
        i += wc;
    }
    /* Pass 2: variables. */
    for (size_t i = 5; i < n_words;) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        if (op == OP_VARIABLE) {
            uint32_t type = w[i + 1], id = w[i + 2], sc = w[i + 3];
            if ((sc == SC_STORAGE_BUFFER || sc == SC_UNIFORM) && has_binding[id]) {
                r->n_bindings++;
                if (binding_of[id] > r->max_binding) r->max_binding = binding_of[id];
            }
            if (sc == SC_PUSH_CONSTANT) r->push_bytes = struct_size[ptr_type[type]];
        }
        i += wc;
    }
}

static void test_table_matches_spirv(void **state)
{
    (void)state;
    for (int k = 0; k < GSMRT_KERNEL_COUNT; k++) {
        const struct gsmrt_vk_kernel_desc *d = gsmrt_kernel_desc((enum gsmrt_kernel)k);
        assert_non_null(d);
        assert_non_null(d->code);
        assert_int_equal(d->code_bytes % 4, 0);
        struct reflection r;
        reflect(d->code, d->code_bytes / 4, &r);
        if (r.n_bindings != d->n_bindings || r.push_bytes != d->push_bytes)
            fail_msg("kernel %s: SPIR-V has %u bindings and %u push bytes, table says %u and %u", d->name,
                     r.n_bindings, r.push_bytes, d->n_bindings, d->push_bytes);
        /* bindings are 0..n-1 */
        assert_int_equal(r.max_binding + 1, r.n_bindings);
    }
    assert_null(gsmrt_kernel_desc(GSMRT_KERNEL_COUNT));
}

static void test_push_mirror_offsets(void **state)
{
    (void)state;
    /* Offsets in declaration order, 4 bytes apart, as std430 push blocks of
     * 4-byte scalars lay them out. */
    assert_int_equal(offsetof(struct gsmrt_pc_matvec, y_offset), 8);
    assert_int_equal(offsetof(struct gsmrt_pc_matmul, y_offset), 20);
    assert_int_equal(offsetof(struct gsmrt_pc_get_rows, n_ids), 12);
    assert_int_equal(offsetof(struct gsmrt_pc_rms_norm, y_stride), 16);
    assert_int_equal(offsetof(struct gsmrt_pc_softmax, scale), 8);
    assert_int_equal(offsetof(struct gsmrt_pc_rope, mode), 24);
    assert_int_equal(offsetof(struct gsmrt_pc_rope, corr_high), 48);
    assert_int_equal(offsetof(struct gsmrt_pc_scale, s), 4);
}

static void test_weight_row_bytes(void **state)
{
    (void)state;
    assert_int_equal(gsmrt_wtype_row_bytes(GSMRT_WTYPE_F32, 7), 28);
    assert_int_equal(gsmrt_wtype_row_bytes(GSMRT_WTYPE_F16, 7), 14);
    assert_int_equal(gsmrt_wtype_row_bytes(GSMRT_WTYPE_Q8_0, 64), 68);
    assert_int_equal(gsmrt_wtype_row_bytes(GSMRT_WTYPE_Q8_0, 33), 0);   /* not whole blocks */
    assert_int_equal(gsmrt_wtype_row_bytes((enum gsmrt_wtype)19, 256), 0);   /* IQ1_S: not run */
    assert_null(gsmrt_wtype_find(19));
    assert_string_equal(gsmrt_wtype_name((enum gsmrt_wtype)19), "IQ1_S");   /* refused by its name */
    assert_string_equal(gsmrt_wtype_name((enum gsmrt_wtype)99), "unknown");
}

/* Kernel selection is a lookup: for every product family, every row of the
 * weight-type table and every variant, the kernel the table names is the one
 * compiled from that family's source for that type (its name says so), and
 * only the families without a reduction lack variants. */
static void test_variant_lookup(void **state)
{
    (void)state;
    static const struct {
        enum gsmrt_kfamily family;
        const char *name;
        bool reduces, has_rows;
    } families[] = {
        {GSMRT_KFAMILY_MATVEC, "matvec", true, true},
        {GSMRT_KFAMILY_HEAD_MATVEC, "head_matvec", true, true},
        {GSMRT_KFAMILY_MOE_MATVEC, "moe_matvec", true, true},
        {GSMRT_KFAMILY_MATMUL, "matmul", false, true},
        {GSMRT_KFAMILY_GET_ROWS, "get_rows", false, false},
    };
    static const char *const suffix[GSMRT_KVARIANT_COUNT] = {
        [GSMRT_KVARIANT] = "", [GSMRT_KVARIANT_NOSG] = "_nosg", [GSMRT_KVARIANT_ROWS] = "_rows"};
    assert_int_equal(sizeof families / sizeof families[0], GSMRT_KFAMILY_COUNT);
    for (size_t f = 0; f < GSMRT_KFAMILY_COUNT; f++)
        for (uint32_t id = 0; id < 64; id++) {
            const struct gsmrt_wtype_info *t = gsmrt_wtype_find(id);
            if (!t) continue;
            for (int v = 0; v < GSMRT_KVARIANT_COUNT; v++) {
                uint16_t k = gsmrt_spv_variants[families[f].family][t->index][v];
                bool present = v == GSMRT_KVARIANT || (v == GSMRT_KVARIANT_NOSG && families[f].reduces) ||
                               (v == GSMRT_KVARIANT_ROWS && families[f].has_rows);
                if (!present) {
                    assert_int_equal(k, 0);
                    continue;
                }
                char want[64];
                snprintf(want, sizeof want, "%s_%s%s", families[f].name, t->glsl, suffix[v]);
                if (k == 0) fail_msg("no kernel %s", want);
                assert_string_equal(gsmrt_kernel_desc((enum gsmrt_kernel)(k - 1))->name, want);
                assert_int_equal(gsmrt_spv_table[k - 1].family, (int)families[f].family + 1);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_matches_spirv),
        cmocka_unit_test(test_push_mirror_offsets),
        cmocka_unit_test(test_weight_row_bytes),
        cmocka_unit_test(test_variant_lookup),
    };
    return cmocka_run_group_tests_name("kernel_table", tests, NULL, NULL);
}
