/* test_vk_policy.c -- the device layer's pure decisions, without a device:
 * memory-type choice per role on a discrete and a unified layout, device
 * choice, row chunking and the pipeline-cache file checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vk/vk.h"

static const VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                   HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                   HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

static int pick(const VkPhysicalDeviceMemoryProperties *m, enum gsmrt_vk_role role)
{
    VkMemoryPropertyFlags req, pref, avoid;
    gsmrt_vk_role_memory_flags(role, &req, &pref, &avoid);
    return gsmrt_vk_pick_memory_type(m, 0xffffffffu, req, pref, avoid);
}

/* A discrete GPU as most report it: VRAM, a 256 MiB BAR window, system RAM
 * uncached and cached. */
static void test_memory_types_discrete(void **state)
{
    (void)state;
    VkPhysicalDeviceMemoryProperties m;
    memset(&m, 0, sizeof m);
    m.memoryHeapCount = 3;
    m.memoryHeaps[0] = (VkMemoryHeap){8ull << 30, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    m.memoryHeaps[1] = (VkMemoryHeap){16ull << 30, 0};
    m.memoryHeaps[2] = (VkMemoryHeap){256ull << 20, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    m.memoryTypeCount = 4;
    m.memoryTypes[0] = (VkMemoryType){DL, 0};
    m.memoryTypes[1] = (VkMemoryType){HV | HC, 1};
    m.memoryTypes[2] = (VkMemoryType){HV | HC | CA, 1};
    m.memoryTypes[3] = (VkMemoryType){DL | HV | HC, 2};
    assert_int_equal(pick(&m, GSMRT_VK_ROLE_WEIGHTS), 0);    /* VRAM, not the BAR */
    assert_int_equal(pick(&m, GSMRT_VK_ROLE_KV_HOT), 0);
    assert_int_equal(pick(&m, GSMRT_VK_ROLE_SCRATCH), 0);
    assert_int_equal(pick(&m, GSMRT_VK_ROLE_KV_COLD), 1);    /* system RAM: the swap tier */
    assert_int_equal(pick(&m, GSMRT_VK_ROLE_STAGING), 1);    /* write-combined */
    assert_int_equal(pick(&m, GSMRT_VK_ROLE_READBACK), 2);   /* cached for CPU reads */
    /* a type mask that excludes VRAM leaves nothing with DEVICE_LOCAL only */
    assert_int_equal(gsmrt_vk_pick_memory_type(&m, 0x2, DL, 0, 0), -1);
}

/* Unified memory (lavapipe, integrated GPUs): one type serves every role. */
static void test_memory_types_unified(void **state)
{
    (void)state;
    VkPhysicalDeviceMemoryProperties m;
    memset(&m, 0, sizeof m);
    m.memoryHeapCount = 1;
    m.memoryHeaps[0] = (VkMemoryHeap){2ull << 30, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    m.memoryTypeCount = 1;
    m.memoryTypes[0] = (VkMemoryType){DL | HV | HC | CA, 0};
    for (unsigned r = 0; r < GSMRT_VK_ROLE_COUNT; r++) assert_int_equal(pick(&m, (enum gsmrt_vk_role)r), 0);
}

static struct gsmrt_vk_caps caps_of(const char *name, VkPhysicalDeviceType type, bool usable)
{
    struct gsmrt_vk_caps c;
    memset(&c, 0, sizeof c);
    strcpy(c.name, name);
    c.type = type;
    c.usable = usable;
    return c;
}

static void test_choose_device(void **state)
{
    (void)state;
    struct gsmrt_vk_caps c[4] = {
        caps_of("llvmpipe (LLVM 15)", VK_PHYSICAL_DEVICE_TYPE_CPU, true),
        caps_of("Intel(R) UHD 770", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, true),
        caps_of("Old Discrete", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, false),
        caps_of("NVIDIA GeForce RTX 4090", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, true),
    };
    struct gsmrt_err e;
    uint32_t idx = 99;
    assert_int_equal(gsmrt_vk_choose_device(c, 4, NULL, &idx, &e), GSMRT_OK);
    assert_int_equal(idx, 3);   /* usable discrete first */
    assert_int_equal(gsmrt_vk_choose_device(c, 3, "", &idx, &e), GSMRT_OK);
    assert_int_equal(idx, 1);   /* then integrated; unusable discrete skipped */
    assert_int_equal(gsmrt_vk_choose_device(c, 1, NULL, &idx, &e), GSMRT_OK);
    assert_int_equal(idx, 0);   /* a CPU device when it is the only one */
    assert_int_equal(gsmrt_vk_choose_device(c, 4, "LLVMPIPE", &idx, &e), GSMRT_OK);
    assert_int_equal(idx, 0);   /* by name, case-insensitive */
    assert_int_equal(gsmrt_vk_choose_device(c, 4, "1", &idx, &e), GSMRT_OK);
    assert_int_equal(idx, 1);   /* by index */
    assert_int_equal(gsmrt_vk_choose_device(c, 4, "7", &idx, &e), GSMRT_E_NO_DEVICE);
    assert_non_null(strstr(e.msg, "only 4 device(s)"));
    assert_int_equal(gsmrt_vk_choose_device(c, 4, "2", &idx, &e), GSMRT_E_NO_DEVICE);
    assert_int_equal(gsmrt_vk_choose_device(c, 4, "radeon", &idx, &e), GSMRT_E_NO_DEVICE);
    assert_non_null(strstr(e.msg, "radeon"));
    assert_int_equal(gsmrt_vk_choose_device(c, 0, NULL, &idx, &e), GSMRT_E_NO_DEVICE);
    assert_int_equal(gsmrt_vk_choose_device(&c[2], 1, NULL, &idx, &e), GSMRT_E_NO_DEVICE);
}

static void test_rows_per_chunk(void **state)
{
    (void)state;
    /* 516-byte rows (129 floats), 16-byte alignment: starts must be multiples
     * of 4 rows (2064 bytes = 129 * 16). */
    assert_int_equal(gsmrt_vk_rows_per_chunk(516, 65532, 16), 124);
    /* Q8_0 rows of one block (34 bytes) need multiples of 8 rows. */
    uint64_t r = gsmrt_vk_rows_per_chunk(34, 128u << 20, 16);
    assert_int_equal(r % 8, 0);
    assert_true(r * 34 <= (128u << 20));
    assert_true((r + 8) * 34 > (128u << 20));
    /* a row wider than the binding, or too few rows for alignment */
    assert_int_equal(gsmrt_vk_rows_per_chunk(100000, 65536, 16), 0);
    assert_int_equal(gsmrt_vk_rows_per_chunk(4386, 16384, 16), 0);
    assert_int_equal(gsmrt_vk_rows_per_chunk(0, 65536, 16), 0);
}

static struct gsmrt_vk_caps cache_caps(void)
{
    struct gsmrt_vk_caps c;
    memset(&c, 0, sizeof c);
    c.vendor_id = 0x10005;
    c.device_id = 7;
    c.driver_version = 42;
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) c.pipeline_cache_uuid[i] = (uint8_t)(i * 3);
    return c;
}

/* A driver blob with Vulkan's header (length 32, version ONE, ids, UUID). */
static size_t vk_blob(const struct gsmrt_vk_caps *c, uint8_t *out, size_t extra)
{
    uint32_t h[4] = {32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, c->vendor_id, c->device_id};
    memcpy(out, h, 16);
    memcpy(out + 16, c->pipeline_cache_uuid, VK_UUID_SIZE);
    for (size_t i = 0; i < extra; i++) out[32 + i] = (uint8_t)(i * 7 + 1);
    return 32 + extra;
}

static void test_pipeline_cache_checks(void **state)
{
    (void)state;
    struct gsmrt_vk_caps c = cache_caps();
    uint8_t blob[256], file[512], bad[512];
    size_t nb = vk_blob(&c, blob, 100);
    size_t nf = gsmrt_vk_pipeline_cache_wrap(blob, nb, &c, file, sizeof file);
    assert_true(nf > nb);
    assert_int_equal(gsmrt_vk_pipeline_cache_wrap(blob, nb, &c, file, 10), 0);
    size_t np = 0;
    const char *why = NULL;
    const uint8_t *p = gsmrt_vk_pipeline_cache_check(file, nf, &c, &np, &why);
    assert_non_null(p);
    assert_int_equal(np, nb);
    assert_memory_equal(p, blob, nb);

    /* every truncation is refused */
    for (size_t n = 0; n < nf; n++) assert_null(gsmrt_vk_pipeline_cache_check(file, n, &c, &np, &why));
    /* any flipped byte is refused (header fields or checksum) */
    for (size_t i = 0; i < nf; i++) {
        memcpy(bad, file, nf);
        bad[i] ^= 0x40;
        if (gsmrt_vk_pipeline_cache_check(bad, nf, &c, &np, &why))
            fail_msg("a cache with byte %zu flipped was accepted", i);
    }
    /* another device or driver */
    struct gsmrt_vk_caps other = c;
    other.driver_version = 43;
    assert_null(gsmrt_vk_pipeline_cache_check(file, nf, &other, &np, &why));
    assert_string_equal(why, "written for another device or driver");
    /* a well-wrapped blob whose own Vulkan header is wrong */
    blob[8] ^= 1;
    nf = gsmrt_vk_pipeline_cache_wrap(blob, nb, &c, file, sizeof file);
    assert_null(gsmrt_vk_pipeline_cache_check(file, nf, &c, &np, &why));
    assert_string_equal(why, "driver blob header does not match this device");
}

static void test_quirk_names(void **state)
{
    (void)state;
    struct gsmrt_vk_caps c;
    memset(&c, 0, sizeof c);
    strcpy(c.name, "llvmpipe (LLVM 15.0.6, 256 bits)");
    c.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    c.unified_memory = true;
    struct gsmrt_vk_quirks q;
    gsmrt_vk_quirks_detect(&c, &q);
    char names[128];
    gsmrt_vk_quirks_names(&q, names, sizeof names);
    assert_string_equal(names, "slow_pipeline_compile,tiers_share_memory");
    c.vendor_id = 0x8086;
    c.type = VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    strcpy(c.name, "Intel(R) Arc");
    gsmrt_vk_quirks_detect(&c, &q);
    assert_true(q.subgroup_size_varies);
    assert_false(q.slow_pipeline_compile);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_types_discrete), cmocka_unit_test(test_memory_types_unified),
        cmocka_unit_test(test_choose_device),         cmocka_unit_test(test_rows_per_chunk),
        cmocka_unit_test(test_pipeline_cache_checks), cmocka_unit_test(test_quirk_names),
    };
    return cmocka_run_group_tests_name("vk_policy", tests, NULL, NULL);
}
