/* test_device.c -- the device layer on a real device: choice, memory roles
 * and accounting, sub-allocation, uploads and downloads (direct and through
 * staging), binding-range checks, budgets, recording checks, timestamps and
 * the on-disk pipeline cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "gpu_fixture.h"
#include "ref/ref.h"

static void test_caps_are_consistent(void **state)
{
    struct gpu *g = *state;
    const struct gsmrt_vk_caps *c = &g->dev->caps;
    assert_true(c->usable);
    assert_true(c->max_storage_buffer_range > 0);
    assert_true(g->dev->binding_range <= c->max_storage_buffer_range);
    assert_true(c->max_push_constants_size >= 128);   /* Vulkan's guaranteed minimum */
    assert_true(c->memory.memoryTypeCount > 0);
    assert_true(g->dev->block_bytes <= c->max_memory_allocation_size);
    if (c->subgroup_arithmetic) assert_true(c->subgroup_size >= 1);
    /* unified means every device-local type is host-visible */
    bool unified = true;
    for (uint32_t i = 0; i < c->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = c->memory.memoryTypes[i].propertyFlags;
        if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
            unified = false;
    }
    assert_int_equal(unified, c->unified_memory);
    assert_int_equal(g->dev->quirks.tiers_share_memory, c->unified_memory);
}

static void test_choose_by_name_and_index(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_device *d = NULL;
    char index[16];
    snprintf(index, sizeof index, "%u", g->dev->index);
    struct gsmrt_vk_device_params p = {.want = index, .pipeline_cache_path = ""};
    GPU_OK(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err));
    assert_string_equal(d->caps.name, g->dev->caps.name);
    gsmrt_vk_device_destroy(d);
    p.want = g->dev->caps.name;
    GPU_OK(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err));
    assert_int_equal(d->index, g->dev->index);
    gsmrt_vk_device_destroy(d);
    p.want = "no-such-device-name-xyz";
    assert_int_equal(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err), GSMRT_E_NO_DEVICE);
    assert_null(d);
    assert_non_null(strstr(gpu_err.msg, "no-such-device-name-xyz"));
}

static void test_accounting_by_role(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_usage before, during, after;
    gsmrt_vk_usage(g->dev, &before);
    struct gsmrt_vk_buf w, cold;
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_WEIGHTS, 10u << 20, &w, &gpu_err));
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_KV_COLD, 1000, &cold, &gpu_err));
    gsmrt_vk_usage(g->dev, &during);
    assert_int_equal(during.role_bytes[GSMRT_VK_ROLE_WEIGHTS] - before.role_bytes[GSMRT_VK_ROLE_WEIGHTS],
                     10u << 20);
    assert_int_equal(during.role_bytes[GSMRT_VK_ROLE_KV_COLD] - before.role_bytes[GSMRT_VK_ROLE_KV_COLD],
                     1008);   /* sizes are kept in 16-byte units */
    uint64_t held = 0, handed = 0;
    for (uint32_t h = 0; h < during.n_heaps; h++) held += during.heap_bytes[h];
    for (int r = 0; r < GSMRT_VK_ROLE_COUNT; r++) handed += during.role_bytes[r];
    assert_true(held >= handed);   /* blocks hold at least what was handed out */
    /* The cold pool lands in host-visible memory on every device. */
    assert_non_null(cold.mapped);
    gsmrt_vk_buf_free(g->dev, &w);
    gsmrt_vk_buf_free(g->dev, &cold);
    assert_null(w.block);
    gsmrt_vk_usage(g->dev, &after);
    assert_memory_equal(after.role_bytes, before.role_bytes, sizeof after.role_bytes);
    assert_memory_equal(after.heap_bytes, before.heap_bytes, sizeof after.heap_bytes);
    assert_int_equal(after.n_blocks, before.n_blocks);   /* emptied blocks were released */
}

/* Many sub-allocations freed in a scrambled order: none overlaps another
 * (each keeps its own pattern), and everything returns. */
static void test_suballocation_no_overlap(void **state)
{
    struct gpu *g = *state;
    enum { N = 200 };
    static struct gsmrt_vk_buf bufs[N];
    struct gsmrt_vk_usage before, after;
    gsmrt_vk_usage(g->dev, &before);
    uint8_t pattern[4096], back[4096];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            if (bufs[i].block) continue;
            size_t n = 16 + (size_t)((i * 977) % 4000);
            GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_SCRATCH, n, &bufs[i], &gpu_err));
            assert_int_equal(bufs[i].offset % g->dev->caps.min_storage_buffer_offset_alignment, 0);
            memset(pattern, i, n);
            GPU_OK(gsmrt_vk_upload(g->dev, &bufs[i], 0, pattern, n, &gpu_err));
        }
        for (int i = 0; i < N; i++) {
            size_t n = bufs[i].size;
            memset(pattern, i, n);
            GPU_OK(gsmrt_vk_download(g->dev, &bufs[i], 0, back, n, &gpu_err));
            if (memcmp(back, pattern, n) != 0) fail_msg("allocation %d was overwritten by another", i);
        }
        for (int i = 0; i < N; i += 1 + round) gsmrt_vk_buf_free(g->dev, &bufs[(i * 37) % N]);
    }
    for (int i = 0; i < N; i++) gsmrt_vk_buf_free(g->dev, &bufs[i]);
    gsmrt_vk_usage(g->dev, &after);
    assert_memory_equal(after.role_bytes, before.role_bytes, sizeof after.role_bytes);
    assert_int_equal(after.n_blocks, before.n_blocks);
}

static void roundtrip(struct gpu *g, bool staging)
{
    bool saved = g->dev->force_staging;
    g->dev->force_staging = staging;
    size_t n = (40u << 20) + 13;   /* more than one staging piece (32 MiB) */
    uint8_t *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 131 + (i >> 13));
    struct gsmrt_vk_buf b;
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_KV_HOT, n, &b, &gpu_err));
    GPU_OK(gsmrt_vk_upload(g->dev, &b, 0, src, n, &gpu_err));
    memset(dst, 0, n);
    GPU_OK(gsmrt_vk_download(g->dev, &b, 0, dst, n, &gpu_err));
    assert_memory_equal(src, dst, n);
    /* partial copies at odd offsets */
    GPU_OK(gsmrt_vk_download(g->dev, &b, 12345, dst, 1001, &gpu_err));
    assert_memory_equal(src + 12345, dst, 1001);
    /* out of bounds is refused */
    assert_int_equal(gsmrt_vk_upload(g->dev, &b, n - 10, src, 11, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_vk_download(g->dev, &b, n + 1, dst, 0, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    gsmrt_vk_buf_free(g->dev, &b);
    free(src), free(dst);
    g->dev->force_staging = saved;
}

static void test_upload_download_direct(void **state) { roundtrip(*state, false); }
static void test_upload_download_staging(void **state) { roundtrip(*state, true); }

static void test_binding_ranges(void **state)
{
    struct gpu *g = *state;
    struct gsmrt_vk_buf b;
    struct gsmrt_vk_range r;
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_SCRATCH, 4096, &b, &gpu_err));
    GPU_OK(gsmrt_vk_buf_range(g->dev, &b, 256, 1024, &r, &gpu_err));
    assert_int_equal(r.offset, b.offset + 256);
    assert_int_equal(r.size, 1024);
    assert_int_equal(gsmrt_vk_buf_range(g->dev, &b, 4000, 200, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_vk_buf_range(g->dev, &b, 0, 0, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    if (g->dev->caps.min_storage_buffer_offset_alignment > 1)
        assert_int_equal(gsmrt_vk_buf_range(g->dev, &b, 1, 16, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    gsmrt_vk_buf_free(g->dev, &b);
    /* a buffer larger than the binding range can only be bound in parts */
    uint64_t saved = g->dev->binding_range;
    g->dev->binding_range = 1024;
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_SCRATCH, 4096, &b, &gpu_err));
    assert_int_equal(gsmrt_vk_buf_whole(g->dev, &b, &r, &gpu_err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(gpu_err.msg, "bind it in chunks"));
    GPU_OK(gsmrt_vk_buf_range(g->dev, &b, 1024, 1024, &r, &gpu_err));
    gsmrt_vk_buf_free(g->dev, &b);
    g->dev->binding_range = saved;
}

static void test_forced_budget(void **state)
{
    struct gpu *g = *state;
    uint64_t saved = g->dev->forced_budget;
    struct gsmrt_vk_usage u;
    gsmrt_vk_usage(g->dev, &u);
    uint64_t held = 0;
    for (uint32_t h = 0; h < u.n_heaps; h++) held += u.heap_bytes[h];
    g->dev->forced_budget = held + (8u << 20);
    struct gsmrt_vk_buf b;
    assert_int_equal(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_WEIGHTS, 64u << 20, &b, &gpu_err),
                     GSMRT_E_OUT_OF_DEVICE_MEMORY);
    assert_null(b.block);
    assert_non_null(strstr(gpu_err.msg, "needed 64.0 MiB"));
    /* a request that fits still succeeds */
    GPU_OK(gsmrt_vk_buf_alloc(g->dev, GSMRT_VK_ROLE_WEIGHTS, 1u << 20, &b, &gpu_err));
    gsmrt_vk_buf_free(g->dev, &b);
    g->dev->forced_budget = saved;
}

static void test_recording_checks_and_timestamps(void **state)
{
    struct gpu *g = *state;
    const struct gsmrt_vk_kernel_desc *k = gsmrt_kernel_desc(GSMRT_KERNEL_SCALE);
    uint32_t wg = 64;
    struct gsmrt_vk_pipeline *p;
    GPU_OK(gsmrt_vk_pipeline_get(g->dev, k, &wg, 1, &p, &gpu_err));
    struct gsmrt_vk_pipeline *again;
    GPU_OK(gsmrt_vk_pipeline_get(g->dev, k, &wg, 1, &again, &gpu_err));
    assert_ptr_equal(p, again);   /* de-duplicated by (kernel, spec) */
    float x[256];
    ref_fill_uniform(x, 256, 3, -1, 1);
    struct gsmrt_vk_buf xb;
    struct gsmrt_vk_range xr;
    upload_buf(g, GSMRT_VK_ROLE_SCRATCH, x, sizeof x, &xb, &xr);
    struct { uint32_t n; float s; } pc = {256, 2.0f};
    struct gsmrt_vk_range b[2] = {xr, xr};
    GPU_OK(gsmrt_vk_rec_begin(g->rec, &gpu_err));
    assert_int_equal(gsmrt_vk_rec_dispatch(g->rec, p, b, 1, &pc, sizeof pc, 4, 1, 1, "x", &gpu_err),
                     GSMRT_E_INVALID_ARGUMENT);   /* binding count */
    assert_int_equal(gsmrt_vk_rec_dispatch(g->rec, p, b, 2, &pc, 4, 4, 1, 1, "x", &gpu_err),
                     GSMRT_E_INVALID_ARGUMENT);   /* push size */
    assert_int_equal(gsmrt_vk_rec_dispatch(g->rec, p, b, 2, &pc, sizeof pc, 0, 1, 1, "x", &gpu_err),
                     GSMRT_E_INVALID_ARGUMENT);   /* empty dispatch */
    GPU_OK(gsmrt_vk_rec_dispatch(g->rec, p, b, 2, &pc, sizeof pc, 4, 1, 1, "first", &gpu_err));
    gsmrt_vk_rec_barrier(g->rec);
    GPU_OK(gsmrt_vk_rec_dispatch(g->rec, p, b, 2, &pc, sizeof pc, 4, 1, 1, "second", &gpu_err));
    submit(g);
    float back[256];
    GPU_OK(gsmrt_vk_download(g->dev, &xb, 0, back, sizeof back, &gpu_err));
    for (int i = 0; i < 256; i++) assert_float_equal(back[i], 4.0f * x[i], 0.0f);
    if (g->dev->caps.timestamps) {
        struct gsmrt_vk_timing t[4];
        assert_int_equal(gsmrt_vk_rec_timings(g->rec, t, 4), 2);
        assert_string_equal(t[0].label, "first");
        assert_string_equal(t[1].label, "second");
        assert_true(t[0].ms >= 0.0 && t[0].ms < 1000.0);
    }
    gsmrt_vk_buf_free(g->dev, &xb);
}

static void test_pipeline_cache_on_disk(void **state)
{
    struct gpu *g = *state;
    char dir[] = "/tmp/gsmrt-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/sub/pipelines.bin", dir);
    struct gsmrt_vk_device_params p = {.want = NULL, .pipeline_cache_path = path};
    struct gsmrt_vk_device *d = NULL;

    GPU_OK(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err));
    assert_false(d->pipeline_cache_loaded);   /* no file yet */
    GPU_OK(gsmrt_kernels_warm_up(d, &gpu_err));   /* compiles everything */
    gsmrt_vk_device_destroy(d);                   /* saves */
    assert_int_equal(access(path, R_OK), 0);

    GPU_OK(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err));
    assert_true(d->pipeline_cache_loaded);
    GPU_OK(gsmrt_kernels_warm_up(d, &gpu_err));
    gsmrt_vk_device_destroy(d);

    /* A corrupted file is ignored, never trusted, and replaced. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 100, SEEK_SET);
    fputc('X', f);
    fclose(f);
    GPU_OK(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err));
    assert_false(d->pipeline_cache_loaded);
    GPU_OK(gsmrt_kernels_warm_up(d, &gpu_err));
    gsmrt_vk_device_destroy(d);
    GPU_OK(gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err));
    assert_true(d->pipeline_cache_loaded);
    gsmrt_vk_device_destroy(d);

    remove(path);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps_are_consistent),
        cmocka_unit_test(test_choose_by_name_and_index),
        cmocka_unit_test(test_accounting_by_role),
        cmocka_unit_test(test_suballocation_no_overlap),
        cmocka_unit_test(test_upload_download_direct),
        cmocka_unit_test(test_upload_download_staging),
        cmocka_unit_test(test_binding_ranges),
        cmocka_unit_test(test_forced_budget),
        cmocka_unit_test(test_recording_checks_and_timestamps),
        cmocka_unit_test(test_pipeline_cache_on_disk),
    };
    return cmocka_run_group_tests_name("device", tests, gpu_setup, gpu_teardown);
}
