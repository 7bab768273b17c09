/* test_gguf.c -- the GGUF parser against files from tests/data/gguf_writer.c:
 * a valid tiny deepseek2 file read back key by key and tensor by tensor, the
 * hand-crafted bad-file matrix, every truncation and single-byte corruption
 * of a small valid file, an out-of-memory sweep, and the mmap path on a real
 * temporary file. Every host allocation goes through a counting allocator
 * that must be back to zero after each close or failed open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "data/gguf_writer.h"
#include "gguf/gguf.h"

/* ---- a counting allocator that can fail the n-th allocation -------------- */

struct counting {
    size_t live, n_alloc, fail_at;   /* fail_at: 1-based allocation to refuse, 0 = none */
};
static struct counting cnt;

static void *count_alloc(void *user, size_t size, size_t align)
{
    struct counting *c = user;
    (void)align;
    c->n_alloc++;
    if (c->fail_at && c->n_alloc == c->fail_at) return NULL;
    c->live++;
    return malloc(size);
}

static void count_free(void *user, void *p, size_t size)
{
    struct counting *c = user;
    (void)size;
    c->live--;
    free(p);
}

static const gsmrt_allocator counting_allocator = {&cnt, count_alloc, count_free};

static void reset_count(void) { memset(&cnt, 0, sizeof cnt); }

/* ---- helpers --------------------------------------------------------------- */

static void build_ds2(struct gw *w, int variant, uint8_t **buf, size_t *n)
{
    struct gw_ds2 s;
    gw_ds2_spec(&s, variant);
    gw_init(w);
    gw_ds2_build(w, &s);
    gw_finish(w, buf, n);
}

/* A small generic file: two keys, two tensors. Callers add to it first. */
static void small_begin(struct gw *w)
{
    gw_init(w);
    gw_kv_str(w, "general.architecture", "test");
    gw_kv_u32(w, "test.count", 7);
}

static void small_end(struct gw *w, uint8_t **buf, size_t *n)
{
    gw_tensor(w, "a.weight", 0, 2, (int64_t[]){4, 3});
    gw_tensor(w, "b.weight", 8, 1, (int64_t[]){64});
    gw_finish(w, buf, n);
}

/* Opens `buf` as "bad.gguf" and expects status `want` (GSMRT_E_FORMAT for
 * expect_format) with every needle in the message, which must start with the
 * name; nothing may leak. */
static void expect_status_(gsmrt_status want, const uint8_t *buf, size_t n, const char *n1, const char *n2,
                           int line)
{
    struct gsmrt_gguf *g = (struct gsmrt_gguf *)1;
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    reset_count();
    gsmrt_status st = gsmrt_gguf_open_memory(buf, n, "bad.gguf", &counting_allocator, &g, &e);
    if (st != want || (n1 && !strstr(e.msg, n1)) || (n2 && !strstr(e.msg, n2)))
        print_error("line %d: status %s, message \"%s\", expected \"%s\" and \"%s\"\n", line,
                    gsmrt_status_name(st), e.msg, n1 ? n1 : "", n2 ? n2 : "");
    assert_int_equal(st, want);
    assert_null(g);
    assert_int_equal(e.status, want);
    assert_memory_equal(e.msg, "bad.gguf: ", 10);
    if (n1) assert_non_null(strstr(e.msg, n1));
    if (n2) assert_non_null(strstr(e.msg, n2));
    assert_int_equal(cnt.live, 0);
}
#define expect_format(buf, n, n1, n2) expect_status_(GSMRT_E_FORMAT, buf, n, n1, n2, __LINE__)
#define expect_unsupported(buf, n, n1, n2) expect_status_(GSMRT_E_UNSUPPORTED, buf, n, n1, n2, __LINE__)

static struct gsmrt_gguf *open_ok(const uint8_t *buf, size_t n)
{
    struct gsmrt_gguf *g = NULL;
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    gsmrt_status st = gsmrt_gguf_open_memory(buf, n, "tiny.gguf", &counting_allocator, &g, &e);
    if (st != GSMRT_OK) print_error("%s\n", e.msg);
    assert_int_equal(st, GSMRT_OK);
    assert_non_null(g);
    return g;
}

/* Every key and tensor the writer recorded, read back. */
static void check_against_writer(const struct gsmrt_gguf *g, const struct gw *w, const uint8_t *buf)
{
    assert_int_equal(gsmrt_gguf_n_kv(g), w->n_kv);
    assert_int_equal(gsmrt_gguf_n_tensors(g), w->n_tensors);
    assert_int_equal(gsmrt_gguf_data_offset(g), w->data_start);
    for (size_t i = 0; i < w->n_kv_rec; i++) {
        const struct gsmrt_gguf_kv *kv = gsmrt_gguf_find_kv(g, w->kvs[i].key);
        assert_non_null(kv);
        assert_ptr_equal(kv, gsmrt_gguf_kv_at(g, i));
        assert_int_equal(kv->type, w->kvs[i].type);
        assert_int_equal(kv->key.len, strlen(w->kvs[i].key));
        assert_memory_equal(kv->key.ptr, w->kvs[i].key, kv->key.len);
    }
    assert_null(gsmrt_gguf_kv_at(g, w->n_kv));
    for (size_t i = 0; i < w->n_tensor_rec; i++) {
        const struct gw_tensor_rec *r = &w->tensors[i];
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_find_tensor(g, r->name);
        assert_non_null(t);
        assert_ptr_equal(t, gsmrt_gguf_tensor_at(g, i));
        assert_string_equal(t->name, r->name);
        assert_int_equal(t->n_dims, r->n_dims);
        for (int d = 0; d < 4; d++) assert_int_equal(t->ne[d], d < (int)r->n_dims ? r->ne[d] : 1);
        assert_int_equal(t->type, r->type);
        assert_int_equal(t->offset, r->offset);
        assert_int_equal(t->data_bytes, r->bytes);
        assert_ptr_equal(t->data, buf + w->data_start + r->offset);
        assert_memory_equal(t->data, w->data.p + r->offset, r->bytes);
        assert_int_equal((w->data_start + t->offset) % gsmrt_gguf_alignment(g), 0);
    }
    assert_null(gsmrt_gguf_tensor_at(g, w->n_tensors));
    assert_null(gsmrt_gguf_find_tensor(g, "no.such.tensor"));
    assert_null(gsmrt_gguf_find_kv(g, "no.such.key"));
}

/* ---- valid files ------------------------------------------------------------- */

static void test_valid_deepseek2(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        struct gw w;
        uint8_t *buf;
        size_t n;
        build_ds2(&w, variant, &buf, &n);
        reset_count();
        struct gsmrt_gguf *g = open_ok(buf, n);
        assert_string_equal(gsmrt_gguf_name(g), "tiny.gguf");
        assert_int_equal(gsmrt_gguf_version(g), 3);
        assert_int_equal(gsmrt_gguf_alignment(g), 32);
        assert_int_equal(gsmrt_gguf_file_bytes(g), n);
        assert_int_equal(gsmrt_gguf_trailing_bytes(g), 0);
        check_against_writer(g, &w, buf);
        gsmrt_gguf_close(g);
        assert_int_equal(cnt.live, 0);
        free(buf);
        gw_free(&w);
    }
}

static void test_typed_getters(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;
    build_ds2(&w, 0, &buf, &n);
    reset_count();
    struct gsmrt_gguf *g = open_ok(buf, n);
    struct gsmrt_err e;
    gsmrt_err_clear(&e);

    uint32_t u = 0;
    float f = 0;
    bool b = false;
    struct gsmrt_gguf_str s;
    assert_int_equal(gsmrt_gguf_get_u32(g, "deepseek2.embedding_length", &u, &e), GSMRT_OK);
    assert_int_equal(u, 64);
    assert_int_equal(gsmrt_gguf_get_f32(g, "deepseek2.attention.layer_norm_rms_epsilon", &f, &e), GSMRT_OK);
    assert_true(f == 1e-6f);
    assert_int_equal(gsmrt_gguf_get_bool(g, "deepseek2.expert_weights_norm", &b, &e), GSMRT_OK);
    assert_true(b);
    assert_int_equal(gsmrt_gguf_get_str(g, "general.architecture", &s, &e), GSMRT_OK);
    assert_int_equal(s.len, 9);
    assert_memory_equal(s.ptr, "deepseek2", 9);

    /* exact type match: a u32 read as i32 / u64, an f32 read as f64 */
    int32_t i32;
    uint64_t u64;
    double d;
    assert_int_equal(gsmrt_gguf_get_i32(g, "deepseek2.block_count", &i32, &e), GSMRT_E_FORMAT);
    assert_string_equal(e.msg, "tiny.gguf: key 'deepseek2.block_count': expected type i32, found u32");
    assert_int_equal(gsmrt_gguf_get_u64(g, "deepseek2.block_count", &u64, &e), GSMRT_E_FORMAT);
    assert_int_equal(gsmrt_gguf_get_f64(g, "deepseek2.rope.freq_base", &d, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "'deepseek2.rope.freq_base': expected type f64, found f32"));
    assert_int_equal(gsmrt_gguf_get_u32(g, "tokenizer.ggml.tokens", &u, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "found array of string"));
    /* missing keys */
    u = 5;
    assert_int_equal(gsmrt_gguf_get_u32(g, "deepseek2.nope", &u, &e), GSMRT_E_FORMAT);
    assert_string_equal(e.msg, "tiny.gguf: key 'deepseek2.nope' missing (expected a u32)");
    assert_int_equal(u, 5);
    assert_int_equal(gsmrt_gguf_get_u32_opt(g, "deepseek2.nope", 9, &u, &e), GSMRT_OK);
    assert_int_equal(u, 9);
    assert_int_equal(gsmrt_gguf_get_u32_opt(g, "deepseek2.block_count", 9, &u, &e), GSMRT_OK);
    assert_int_equal(u, 2);
    assert_int_equal(gsmrt_gguf_get_f32_opt(g, "deepseek2.block_count", 1.0f, &f, &e), GSMRT_E_FORMAT);
    assert_int_equal(gsmrt_gguf_get_bool_opt(g, "x", true, &b, &e), GSMRT_OK);
    assert_true(b);
    assert_int_equal(gsmrt_gguf_get_str_opt(g, "x", "dflt", &s, &e), GSMRT_OK);
    assert_int_equal(s.len, 4);
    assert_int_equal(gsmrt_gguf_get_str_opt(g, "x", NULL, &s, &e), GSMRT_OK);
    assert_null(s.ptr);
    assert_int_equal(gsmrt_gguf_get_str(g, "deepseek2.block_count", &s, &e), GSMRT_E_FORMAT);

    /* arrays */
    uint32_t et;
    uint64_t count;
    assert_int_equal(gsmrt_gguf_get_arr_info(g, "tokenizer.ggml.tokens", &et, &count, &e), GSMRT_OK);
    assert_int_equal(et, GSMRT_GGUF_TYPE_STRING);
    assert_int_equal(count, 48);
    struct gsmrt_gguf_str toks[48];
    assert_int_equal(gsmrt_gguf_get_arr_str(g, "tokenizer.ggml.tokens", toks, 47, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_gguf_get_arr_str(g, "tokenizer.ggml.tokens", toks, 48, &e), GSMRT_OK);
    for (int i = 0; i < 48; i++) {
        char want[8];
        snprintf(want, sizeof want, "t%d", i);
        assert_int_equal(toks[i].len, strlen(want));
        assert_memory_equal(toks[i].ptr, want, toks[i].len);
    }
    const void *data;
    assert_int_equal(gsmrt_gguf_get_arr(g, "tokenizer.ggml.token_type", GSMRT_GGUF_TYPE_I32, &data, &count, &e),
                     GSMRT_OK);
    assert_int_equal(count, 48);
    int32_t tt;
    memcpy(&tt, (const char *)data + 4 * 47, 4);
    assert_int_equal(tt, 1);
    assert_int_equal(gsmrt_gguf_get_arr(g, "tokenizer.ggml.token_type", GSMRT_GGUF_TYPE_F32, &data, &count, &e),
                     GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "expected an array of f32, found an array of i32"));
    assert_int_equal(gsmrt_gguf_get_arr(g, "tokenizer.ggml.tokens", GSMRT_GGUF_TYPE_STRING, &data, &count, &e),
                     GSMRT_E_FORMAT);
    assert_int_equal(gsmrt_gguf_get_arr_str(g, "tokenizer.ggml.token_type", toks, 48, &e), GSMRT_E_FORMAT);
    assert_int_equal(gsmrt_gguf_get_arr_info(g, "deepseek2.block_count", &et, &count, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "'deepseek2.block_count': expected an array, found u32"));
    assert_int_equal(gsmrt_gguf_get_arr_info(g, "missing.arr", &et, &count, &e), GSMRT_E_FORMAT);

    /* per-layer: a scalar fills every block */
    uint32_t per[2] = {0, 0};
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "deepseek2.attention.head_count", 2, true, 0, per, &e), GSMRT_OK);
    assert_true(per[0] == 2 && per[1] == 2);
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "deepseek2.nope", 2, false, 7, per, &e), GSMRT_OK);
    assert_true(per[0] == 7 && per[1] == 7);
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "deepseek2.nope", 2, true, 7, per, &e), GSMRT_E_FORMAT);
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "deepseek2.rope.freq_base", 2, true, 0, per, &e),
                     GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "found f32"));
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "tokenizer.ggml.token_type", 2, true, 0, per, &e),
                     GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "array has 48 entries, expected 2"));

    /* type names */
    assert_string_equal(gsmrt_ggml_type_name(12), "Q4_K");
    assert_string_equal(gsmrt_ggml_type_name(30), "BF16");
    assert_null(gsmrt_ggml_type_name(4));
    assert_null(gsmrt_ggml_type_name(1000));
    assert_string_equal(gsmrt_gguf_type_name(9), "array");
    assert_string_equal(gsmrt_gguf_type_name(13), "unknown");

    gsmrt_gguf_close(g);
    gsmrt_gguf_close(NULL);
    assert_int_equal(cnt.live, 0);
    free(buf);
    gw_free(&w);
}

static void test_per_layer_arrays(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;
    small_begin(&w);
    gw_kv_arr_u32(&w, "k.u32", 3, (const uint32_t[]){1, 2, 3});
    gw_kv_arr_i32(&w, "k.i32", 3, (const int32_t[]){4, 5, 6});
    gw_kv_arr_i32(&w, "k.neg", 3, (const int32_t[]){4, -5, 6});
    gw_kv_arr_f32(&w, "k.f32", 3, (const float[]){4, 5, 6});
    small_end(&w, &buf, &n);
    reset_count();
    struct gsmrt_gguf *g = open_ok(buf, n);
    struct gsmrt_err e;
    uint32_t per[3];
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "k.u32", 3, true, 0, per, &e), GSMRT_OK);
    assert_true(per[0] == 1 && per[1] == 2 && per[2] == 3);
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "k.i32", 3, true, 0, per, &e), GSMRT_OK);
    assert_true(per[0] == 4 && per[1] == 5 && per[2] == 6);
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "k.neg", 3, true, 0, per, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "'k.neg': entry 1 is negative"));
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "k.f32", 3, true, 0, per, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "found an array of f32"));
    assert_int_equal(gsmrt_gguf_get_u32_per_layer(g, "k.u32", 2, true, 0, per, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "'k.u32': array has 3 entries, expected 2"));
    gsmrt_gguf_close(g);
    assert_int_equal(cnt.live, 0);
    free(buf);
    gw_free(&w);
}

static void test_version2_alignment_padding(void **state)
{
    (void)state;
    /* v2, alignment 64, and 100 bytes of trailing padding: all accepted */
    struct gw w;
    uint8_t *buf;
    size_t n;
    small_begin(&w);
    w.version = 2;
    w.alignment = 64;
    gw_kv_u32(&w, "general.alignment", 64);
    small_end(&w, &buf, &n);
    buf = realloc(buf, n + 100);
    assert_non_null(buf);
    memset(buf + n, 0xab, 100);
    reset_count();
    struct gsmrt_gguf *g = open_ok(buf, n + 100);
    assert_int_equal(gsmrt_gguf_version(g), 2);
    assert_int_equal(gsmrt_gguf_alignment(g), 64);
    assert_int_equal(gsmrt_gguf_data_offset(g) % 64, 0);
    assert_int_equal(gsmrt_gguf_trailing_bytes(g), 100);
    check_against_writer(g, &w, buf);
    gsmrt_gguf_close(g);
    assert_int_equal(cnt.live, 0);
    free(buf);
    gw_free(&w);
}

static void test_empty_tables(void **state)
{
    (void)state;
    /* no keys, no tensors: a valid (useless) file */
    struct gw w;
    uint8_t *buf;
    size_t n;
    gw_init(&w);
    gw_finish(&w, &buf, &n);
    reset_count();
    struct gsmrt_gguf *g = open_ok(buf, n);
    assert_int_equal(gsmrt_gguf_n_kv(g), 0);
    assert_int_equal(gsmrt_gguf_n_tensors(g), 0);
    assert_null(gsmrt_gguf_find_kv(g, "general.architecture"));
    gsmrt_gguf_close(g);
    assert_int_equal(cnt.live, 0);
    free(buf);
    gw_free(&w);
}

/* ---- the bad-file matrix ------------------------------------------------------ */

static void patch_u32(uint8_t *buf, size_t at, uint32_t v) { memcpy(buf + at, &v, 4); }
static void patch_u64(uint8_t *buf, size_t at, uint64_t v) { memcpy(buf + at, &v, 8); }

static void test_bad_header(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;
    small_begin(&w);
    small_end(&w, &buf, &n);

    buf[0] = 'X';
    expect_format(buf, n, "not a GGUF file", "expected \"GGUF\"");
    buf[0] = 'G';
    patch_u32(buf, 4, 4);
    expect_format(buf, n, "unknown GGUF version 4", NULL);
    patch_u32(buf, 4, 1);
    expect_format(buf, n, "version 1 is not supported", NULL);
    patch_u32(buf, 4, 0x03000000u);
    expect_format(buf, n, "big-endian", NULL);
    patch_u32(buf, 4, 3);
    patch_u64(buf, 8, UINT64_MAX / 2);   /* n_tensors */
    expect_format(buf, n, "n_tensors 9223372036854775807 cannot fit", NULL);
    patch_u64(buf, 8, 1000);
    expect_format(buf, n, "n_tensors 1000", NULL);
    patch_u64(buf, 8, 2);
    patch_u64(buf, 16, UINT64_MAX);      /* n_kv */
    expect_format(buf, n, "n_kv 18446744073709551615 cannot fit", NULL);
    patch_u64(buf, 16, 3);               /* one more key than written: the tensor infos read as a key */
    expect_format(buf, n, NULL, NULL);
    patch_u64(buf, 16, 2);
    gsmrt_gguf_close(open_ok(buf, n));
    assert_int_equal(cnt.live, 0);
    free(buf);
    gw_free(&w);
}

static void test_bad_keys(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;

    /* duplicate key */
    small_begin(&w);
    gw_kv_u32(&w, "test.count", 8);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.count': duplicate", NULL);
    free(buf), gw_free(&w);

    /* general.alignment: wrong type, not a power of two, zero */
    small_begin(&w);
    gw_kv_i32(&w, "general.alignment", 32);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'general.alignment': expected type u32, found i32", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_kv_u32(&w, "general.alignment", 48);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'general.alignment': 48 is not a power of two", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_kv_u32(&w, "general.alignment", 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "general.alignment", "0 is not a power of two");
    free(buf), gw_free(&w);

    /* a string value longer than the file */
    small_begin(&w);
    uint64_t huge = 1ull << 40;
    gw_kv_raw(&w, "test.long", GSMRT_GGUF_TYPE_STRING, &huge, 8);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.long'", "runs past the end of the file");
    free(buf), gw_free(&w);

    /* a key whose own length runs past the end */
    small_begin(&w);
    small_end(&w, &buf, &n);
    patch_u64(buf, 24, n);   /* the first key's length */
    expect_format(buf, n, "key #0", "runs past the end");
    free(buf), gw_free(&w);

    /* nested array */
    small_begin(&w);
    uint8_t nested[4 + 8 + 4 + 8 + 4];
    uint32_t t_arr = GSMRT_GGUF_TYPE_ARRAY, t_u32 = GSMRT_GGUF_TYPE_U32, one = 1;
    uint64_t c1 = 1;
    memcpy(nested, &t_arr, 4), memcpy(nested + 4, &c1, 8);            /* array of arrays, 1 element */
    memcpy(nested + 12, &t_u32, 4), memcpy(nested + 16, &c1, 8);      /* inner: array of u32, 1 element */
    memcpy(nested + 24, &one, 4);
    gw_kv_raw(&w, "test.nested", GSMRT_GGUF_TYPE_ARRAY, nested, sizeof nested);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.nested': nested arrays are not allowed", NULL);
    free(buf), gw_free(&w);

    /* invalid value type, invalid element type */
    small_begin(&w);
    gw_kv_raw(&w, "test.weird", 13, &one, 4);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.weird': invalid value type 13", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    uint8_t badelem[12];
    uint32_t t_bad = 77;
    memcpy(badelem, &t_bad, 4), memcpy(badelem + 4, &c1, 8);
    gw_kv_raw(&w, "test.badelem", GSMRT_GGUF_TYPE_ARRAY, badelem, sizeof badelem);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.badelem': invalid array element type 77", NULL);
    free(buf), gw_free(&w);

    /* a numeric array whose count runs past the end (and whose bytes overflow) */
    small_begin(&w);
    uint8_t arr[12];
    uint64_t big = UINT64_MAX / 2;
    memcpy(arr, &t_u32, 4), memcpy(arr + 4, &big, 8);
    gw_kv_raw(&w, "test.bigarr", GSMRT_GGUF_TYPE_ARRAY, arr, sizeof arr);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.bigarr': array of 9223372036854775807 x u32 runs past the end", NULL);
    free(buf), gw_free(&w);

    /* a string array with more elements than could fit, and one with a long element */
    small_begin(&w);
    uint32_t t_str = GSMRT_GGUF_TYPE_STRING;
    memcpy(arr, &t_str, 4), memcpy(arr + 4, &big, 8);
    gw_kv_raw(&w, "test.strs", GSMRT_GGUF_TYPE_ARRAY, arr, sizeof arr);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.strs': array of 9223372036854775807 strings cannot fit", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    uint8_t strs[12 + 8 + 1 + 8];
    uint64_t two = 2, l1 = 1, lbig = 1ull << 50;
    memcpy(strs, &t_str, 4), memcpy(strs + 4, &two, 8), memcpy(strs + 12, &l1, 8), strs[20] = 'x';
    memcpy(strs + 21, &lbig, 8);
    gw_kv_raw(&w, "test.strs2", GSMRT_GGUF_TYPE_ARRAY, strs, sizeof strs);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "key 'test.strs2': element 1", "runs past the end");
    free(buf), gw_free(&w);
}

static void test_bad_tensors(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;

    /* duplicate tensor name */
    small_begin(&w);
    gw_tensor(&w, "a.weight", 0, 1, (int64_t[]){8});
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'a.weight': duplicate name", NULL);
    free(buf), gw_free(&w);

    /* known ggml types the runtime does not run are refused by name, as
     * unsupported (never read as another type); an unknown type is malformed */
    small_begin(&w);
    gw_tensor_info(&w, "blk.3.attn_kv_a_mqa.weight", 19, 2, (int64_t[]){256, 4}, 0);
    small_end(&w, &buf, &n);
    expect_unsupported(buf, n, "bad.gguf: tensor 'blk.3.attn_kv_a_mqa.weight': type IQ1_S not supported "
                               "(supported: F32, F16, Q8_0", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "blk.0.ffn_up_exps.weight", 35, 2, (int64_t[]){256, 4}, 0);
    small_end(&w, &buf, &n);
    expect_unsupported(buf, n, "tensor 'blk.0.ffn_up_exps.weight': type TQ2_0 not supported", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 99, 1, (int64_t[]){32}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': unknown type 99", NULL);
    free(buf), gw_free(&w);

    /* n_dims 0 and 5, negative ne */
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 5, (int64_t[]){1, 1, 1, 1, 1}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': n_dims 5 (expected 1..4)", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 0, NULL, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': n_dims 0", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 2, (int64_t[]){4, -1}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': ne[1] = -1 is negative", NULL);
    free(buf), gw_free(&w);

    /* dimension product overflow (elements, then bytes) */
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 3, (int64_t[]){1ll << 32, 1ll << 32, 4}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': element count of [4294967296, 4294967296, 4, 1] overflows", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 2, (int64_t[]){1ll << 31, 1ll << 31}, 0);   /* 2^62 elements x 4 bytes */
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': byte size", "overflows");
    free(buf), gw_free(&w);

    /* 2^63 elements: no u64 overflow, but more than ggml's int64_t element count allows */
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 8, 2, (int64_t[]){1ll << 32, 1ll << 31}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': element count of [4294967296, 2147483648, 1, 1] overflows", NULL);
    free(buf), gw_free(&w);

    /* Q8_0 rows must be whole blocks */
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 8, 2, (int64_t[]){48, 2}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': type Q8_0 needs ne[0] to be a multiple of 32, got 48", NULL);
    free(buf), gw_free(&w);

    /* misaligned offset */
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 1, (int64_t[]){1}, 4);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': offset 4 is not a multiple of the alignment 32", NULL);
    free(buf), gw_free(&w);

    /* overlap: c.weight sits on a.weight's data (offset 0) */
    small_begin(&w);
    small_end(&w, &buf, &n);
    free(buf);
    gw_tensor_info(&w, "c.weight", 0, 1, (int64_t[]){4}, 0);
    gw_finish(&w, &buf, &n);
    expect_format(buf, n, "overlaps tensor", "'c.weight'");
    free(buf), gw_free(&w);

    /* data past the end: offset far out, offset + size overflowing */
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 1, (int64_t[]){8}, 1ull << 20);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight': data at offset 1048576, 32 bytes, runs past the end", NULL);
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "c.weight", 0, 1, (int64_t[]){8}, UINT64_MAX - 31);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "tensor 'c.weight'", "runs past the end");
    free(buf), gw_free(&w);

    /* the last tensor cut short by one byte */
    small_begin(&w);
    small_end(&w, &buf, &n);
    expect_format(buf, n - 1, "tensor 'b.weight'", "runs past the end");
    free(buf), gw_free(&w);

    /* tensor name: longer than ggml allows, longer than the file, with a NUL */
    small_begin(&w);
    gw_tensor_info(&w, "a.very.long.name.that.goes.on.and.on.and.on.past.the.sixty.three.byte.limit", 0, 1,
                   (int64_t[]){1}, 0);
    small_end(&w, &buf, &n);
    expect_format(buf, n, "bytes long (at most 63)", "a.very.long.name");
    free(buf), gw_free(&w);
    small_begin(&w);
    gw_tensor_info(&w, "zz", 0, 1, (int64_t[]){1}, 0);
    small_end(&w, &buf, &n);
    {
        /* the first tensor info follows the keys: find "zz" and give it a length past the end */
        uint8_t *p = memmem(buf, n, "zz", 2);
        assert_non_null(p);
        patch_u64(p - 8, 0, n);
        expect_format(buf, n, "tensor #0", "runs past the end");
        p[0] = '\0';
        patch_u64(p - 8, 0, 2);
        expect_format(buf, n, "tensor #0: name contains a NUL byte", NULL);
    }
    free(buf), gw_free(&w);
}

/* ---- sweeps ----------------------------------------------------------------- */

/* Every prefix of a valid file, each in a fresh allocation of exactly its
 * size so that ASan sees any read past it, must fail with GSMRT_E_FORMAT
 * and leak nothing. `every_data_byte` false: all prefixes inside the header,
 * keys and tensor infos, then inside the data only those ending within 2
 * bytes of a tensor boundary or on a 61-byte stride (keeps ASan runs short). */
static bool near_boundary(const struct gw *w, size_t len)
{
    if (len % 61 == 0) return true;
    for (size_t i = 0; i < w->n_tensor_rec; i++) {
        uint64_t a = w->data_start + w->tensors[i].offset, b = a + w->tensors[i].bytes;
        if ((len + 2 >= a && len <= a + 2) || (len + 2 >= b && len <= b + 2)) return true;
    }
    return false;
}

static void sweep_truncations(int variant, bool every_data_byte)
{
    struct gw w;
    uint8_t *buf;
    size_t n;
    build_ds2(&w, variant, &buf, &n);
    for (size_t len = 0; len < n; len++) {
        if (!every_data_byte && len > w.data_start && !near_boundary(&w, len)) continue;
        uint8_t *copy = len ? malloc(len) : NULL;
        if (len) memcpy(copy, buf, len);
        struct gsmrt_gguf *g = (struct gsmrt_gguf *)1;
        struct gsmrt_err e;
        gsmrt_err_clear(&e);
        reset_count();
        gsmrt_status st = gsmrt_gguf_open_memory(copy, len, "cut.gguf", &counting_allocator, &g, &e);
        if (st != GSMRT_E_FORMAT) print_error("prefix %zu of %zu: %s %s\n", len, n, gsmrt_status_name(st), e.msg);
        assert_int_equal(st, GSMRT_E_FORMAT);
        assert_null(g);
        assert_memory_equal(e.msg, "cut.gguf: ", 10);
        assert_int_equal(cnt.live, 0);
        free(copy);
    }
    free(buf);
    gw_free(&w);
}

static void test_truncation_sweep(void **state)
{
    (void)state;
    sweep_truncations(2, true);    /* the whole 14 KB file: 1 dense + 1 MoE block, every tensor kind */
    sweep_truncations(0, false);   /* the 210 KB file: all metadata prefixes, data prefixes sampled */
}

/* Every byte of the metadata, set to a few values: no crash, no leak; the
 * result may be success (a byte inside a name or value), GSMRT_E_FORMAT, or
 * GSMRT_E_UNSUPPORTED (a type byte turned into a known ggml type we do not run). */
static void test_corruption_sweep(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;
    build_ds2(&w, 2, &buf, &n);
    static const uint8_t vals[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x20};
    uint8_t *copy = malloc(n);
    for (size_t at = 0; at < w.data_start; at++)
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(copy, buf, n);
            copy[at] = vals[v];
            struct gsmrt_gguf *g = NULL;
            struct gsmrt_err e;
            reset_count();
            gsmrt_status st = gsmrt_gguf_open_memory(copy, n, "flip.gguf", &counting_allocator, &g, &e);
            assert_true(st == GSMRT_OK || st == GSMRT_E_FORMAT || st == GSMRT_E_UNSUPPORTED);
            if (st == GSMRT_OK) {
                /* walk what was accepted */
                for (uint64_t i = 0; i < gsmrt_gguf_n_tensors(g); i++) {
                    const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
                    assert_true((const uint8_t *)t->data + t->data_bytes <= copy + n);
                    assert_ptr_equal(gsmrt_gguf_find_tensor(g, t->name), t);
                }
                gsmrt_gguf_close(g);
            } else {
                assert_memory_equal(e.msg, "flip.gguf: ", 11);
            }
            assert_int_equal(cnt.live, 0);
        }
    free(copy);
    free(buf);
    gw_free(&w);
}

/* Fail the i-th host allocation for every i a clean open makes. */
static void test_oom_sweep(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;
    build_ds2(&w, 0, &buf, &n);
    reset_count();
    gsmrt_gguf_close(open_ok(buf, n));
    size_t total = cnt.n_alloc;
    assert_true(total >= 3);
    for (size_t i = 1; i <= total; i++) {
        reset_count();
        cnt.fail_at = i;
        struct gsmrt_gguf *g = (struct gsmrt_gguf *)1;
        struct gsmrt_err e;
        gsmrt_err_clear(&e);
        assert_int_equal(gsmrt_gguf_open_memory(buf, n, "oom.gguf", &counting_allocator, &g, &e),
                         GSMRT_E_OUT_OF_HOST_MEMORY);
        assert_null(g);
        assert_non_null(strstr(e.msg, "oom.gguf"));
        assert_int_equal(cnt.live, 0);
    }
    free(buf);
    gw_free(&w);
}

/* ---- files on disk ------------------------------------------------------------ */

static void test_real_file(void **state)
{
    (void)state;
    struct gw w;
    uint8_t *buf;
    size_t n;
    build_ds2(&w, 0, &buf, &n);
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/gsmrt_test_gguf_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, n), (ssize_t)n);
    close(fd);

    struct gsmrt_gguf *g = NULL;
    struct gsmrt_err e;
    gsmrt_err_clear(&e);
    reset_count();
    assert_int_equal(gsmrt_gguf_open(path, &counting_allocator, &g, &e), GSMRT_OK);
    assert_string_equal(gsmrt_gguf_name(g), path);
    /* same directory as from memory, with pointers into the mapping */
    assert_int_equal(gsmrt_gguf_n_tensors(g), w.n_tensors);
    for (size_t i = 0; i < w.n_tensor_rec; i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_find_tensor(g, w.tensors[i].name);
        assert_non_null(t);
        assert_int_equal(t->data_bytes, w.tensors[i].bytes);
        assert_memory_equal(t->data, w.data.p + w.tensors[i].offset, t->data_bytes);
    }
    gsmrt_gguf_close(g);
    assert_int_equal(cnt.live, 0);
    /* with the libc allocator too */
    assert_int_equal(gsmrt_gguf_open(path, NULL, &g, &e), GSMRT_OK);
    gsmrt_gguf_close(g);

    /* a truncated file on disk: format error naming the path */
    assert_int_equal(truncate(path, (off_t)n - 1), 0);
    g = (struct gsmrt_gguf *)1;
    assert_int_equal(gsmrt_gguf_open(path, &counting_allocator, &g, &e), GSMRT_E_FORMAT);
    assert_null(g);
    assert_memory_equal(e.msg, path, strlen(path));
    assert_int_equal(truncate(path, 0), 0);
    assert_int_equal(gsmrt_gguf_open(path, &counting_allocator, &g, &e), GSMRT_E_FORMAT);
    assert_non_null(strstr(e.msg, "truncated"));
    assert_int_equal(cnt.live, 0);
    unlink(path);

    /* I/O errors */
    assert_int_equal(gsmrt_gguf_open(path, NULL, &g, &e), GSMRT_E_IO);
    assert_null(g);
    assert_memory_equal(e.msg, path, strlen(path));
    assert_non_null(strstr(e.msg, "cannot open"));
    assert_int_equal(gsmrt_gguf_open(tmp && *tmp ? tmp : "/tmp", NULL, &g, &e), GSMRT_E_IO);
    assert_non_null(strstr(e.msg, "not a regular file"));
    assert_int_equal(gsmrt_gguf_open(NULL, NULL, &g, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_gguf_open(path, NULL, NULL, &e), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_gguf_open_memory(NULL, 10, "x", NULL, &g, &e), GSMRT_E_INVALID_ARGUMENT);
    free(buf);
    gw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_deepseek2),
        cmocka_unit_test(test_typed_getters),
        cmocka_unit_test(test_per_layer_arrays),
        cmocka_unit_test(test_version2_alignment_padding),
        cmocka_unit_test(test_empty_tables),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_truncation_sweep),
        cmocka_unit_test(test_corruption_sweep),
        cmocka_unit_test(test_oom_sweep),
        cmocka_unit_test(test_real_file),
    };
    return cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
}
