/* gpu_fixture.c -- see gpu_fixture.h. */
#include "gpu_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

struct gsmrt_err gpu_err;

static gsmrt_status check(gsmrt_status st, const char *what)
{
    if (st != GSMRT_OK) print_error("%s: %s: %s\n", what, gsmrt_status_name(st), gpu_err.msg);
    return st;
}

int gpu_setup(void **state)
{
    struct gpu *g = calloc(1, sizeof *g);
    if (!g) return -1;
    struct gsmrt_vk_instance_params ip = {.alloc = NULL, .log = {NULL, NULL, GSMRT_LOG_WARN}, .validation = 1};
    gsmrt_status st = gsmrt_vk_instance_create(&ip, &g->inst, &gpu_err);
    if (st == GSMRT_OK) {
        /* Tests never touch the user's pipeline cache. */
        struct gsmrt_vk_device_params dp = {.want = NULL, .pipeline_cache_path = ""};
        st = gsmrt_vk_device_create(g->inst, &dp, &g->dev, &gpu_err);
    }
    if (st == GSMRT_E_NO_DEVICE || st == GSMRT_E_UNSUPPORTED) {
        const char *allow = getenv("GSMRT_TEST_ALLOW_NO_VULKAN");
        gsmrt_vk_instance_destroy(g->inst);
        free(g);
        if (allow && strcmp(allow, "1") == 0) {
            fprintf(stderr, "SKIPPED: no Vulkan device (%s) and GSMRT_TEST_ALLOW_NO_VULKAN=1\n",
                    gpu_err.msg);
            skip();
        }
        print_error("no Vulkan device: %s (set GSMRT_TEST_ALLOW_NO_VULKAN=1 to skip)\n", gpu_err.msg);
        return -1;
    }
    if (check(st, "device") != GSMRT_OK ||
        check(gsmrt_vk_rec_create(g->dev, 4096, true, &g->rec, &gpu_err), "recording") != GSMRT_OK) {
        gpu_teardown((void **)&g);
        return -1;
    }
    *state = g;
    return 0;
}

int gpu_teardown(void **state)
{
    struct gpu *g = *state;
    if (!g) return 0;
    gsmrt_vk_rec_destroy(g->rec);
    gsmrt_vk_device_destroy(g->dev);
    unsigned messages = g->inst ? atomic_load(&g->inst->validation_messages) : 0;
    gsmrt_vk_instance_destroy(g->inst);
    free(g);
    *state = NULL;
    if (messages) {
        print_error("%u Vulkan validation message(s), see above\n", messages);
        return -1;
    }
    return 0;
}

void guarded_alloc(struct gpu *g, struct guarded *b, size_t n)
{
    size_t total = n + 2 * GUARD_FLOATS;
    float *init = malloc(total * 4);
    assert_non_null(init);
    for (size_t i = 0; i < total; i++) init[i] = GUARD_VALUE;
    assert_int_equal(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_SCRATCH, total * 4, &b->buf, &gpu_err),
                     GSMRT_OK);
    assert_int_equal(gsmrt_vk_upload(g->dev, &b->buf, 0, init, total * 4, &gpu_err), GSMRT_OK);
    assert_int_equal(gsmrt_vk_buf_range(g->dev, &b->buf, GUARD_FLOATS * 4, ((n * 4 + 15) & ~(size_t)15),
                                        &b->range, &gpu_err),
                     GSMRT_OK);
    b->n = n;
    free(init);
}

void guarded_read(struct gpu *g, struct guarded *b, float *out)
{
    size_t total = b->n + 2 * GUARD_FLOATS;
    float *all = malloc(total * 4);
    assert_non_null(all);
    assert_int_equal(gsmrt_vk_download(g->dev, &b->buf, 0, all, total * 4, &gpu_err), GSMRT_OK);
    for (size_t i = 0; i < GUARD_FLOATS; i++) {
        if (all[i] != GUARD_VALUE) fail_msg("guard before the output overwritten at %zu", i);
        if (all[GUARD_FLOATS + b->n + i] != GUARD_VALUE) fail_msg("guard after the output overwritten at +%zu", i);
    }
    memcpy(out, all + GUARD_FLOATS, b->n * 4);
    free(all);
}

void guarded_free(struct gpu *g, struct guarded *b)
{
    gsmrt_vk_buf_free(g->dev, &b->buf);
}

void upload_buf(struct gpu *g, enum gsmrt_vk_role role, const void *data, size_t bytes,
                struct gsmrt_vk_buf *buf, struct gsmrt_vk_range *range)
{
    if (check(gsmrt_vk_buf_alloc(g->dev, role, bytes, buf, &gpu_err), "alloc") != GSMRT_OK) fail();
    if (check(gsmrt_vk_upload(g->dev, buf, 0, data, bytes, &gpu_err), "upload") != GSMRT_OK) fail();
    if (range && check(gsmrt_vk_buf_range(g->dev, buf, 0, (bytes + 3) & ~(size_t)3, range, &gpu_err),
                       "range") != GSMRT_OK)
        fail();
}

void submit(struct gpu *g)
{
    if (check(gsmrt_vk_rec_submit_wait(g->rec, &gpu_err), "submit") != GSMRT_OK) fail();
}


void for_each_variant(struct gpu *g, void (*body)(struct gpu *))
{
    bool rows = g->dev->row_per_invocation, nosg = g->dev->disable_subgroup_ops;
    bool sg_ok = g->dev->caps.subgroup_arithmetic && g->dev->caps.subgroup_basic;
    g->dev->row_per_invocation = true;
    body(g);
    g->dev->row_per_invocation = false;
    if (sg_ok && !nosg) {
        g->dev->disable_subgroup_ops = false;
        body(g);
    }
    g->dev->disable_subgroup_ops = true;
    body(g);
    g->dev->row_per_invocation = rows;
    g->dev->disable_subgroup_ops = nosg;
}

char *gpu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *d = malloc((size_t)len + 1);
    if (!d || fread(d, 1, (size_t)len, f) != (size_t)len) fail_msg("cannot read %s", path);
    fclose(f);
    d[len] = '\0';
    if (n) *n = (size_t)len;
    return d;
}

struct cJSON *gpu_load_json(const char *path)
{
    char *text = gpu_read_file(path, NULL);
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) fail_msg("%s is not valid JSON", path);
    return j;
}
