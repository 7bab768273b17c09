/* pipeline_cache.c -- the VkPipelineCache persisted on disk.
 *
 * File = our header + the driver's cache blob. Both headers are checked
 * before the driver sees a byte (a cache from another driver, a truncated or
 * corrupted file is ignored with a log line, never trusted). Saves write a
 * temporary file and rename it over the old one, so a crash mid-save leaves
 * the previous cache intact. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "vk/vk_internal.h"

#define MAGIC "GSMRTPC"   /* 8 bytes with the NUL */
#define FORMAT_VERSION 1u
#define ENDIAN_MARK 0x01020304u

struct file_header {
    char magic[8];
    uint32_t format_version;
    uint32_t gsmrt_version;
    uint32_t endian_mark;
    uint32_t pointer_bytes;
    uint32_t vendor_id, device_id, driver_version, reserved;
    uint8_t uuid[VK_UUID_SIZE];
    uint64_t payload_bytes;
    uint64_t payload_hash;   /* FNV-1a 64 of the payload */
};

static uint64_t fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

const void *gsmrt_vk_pipeline_cache_check(const void *file, size_t file_bytes,
                                          const struct gsmrt_vk_caps *caps, size_t *payload_bytes,
                                          const char **why)
{
    struct file_header h;
    *payload_bytes = 0;
    if (file_bytes < sizeof h) return *why = "shorter than its header", NULL;
    memcpy(&h, file, sizeof h);
    if (memcmp(h.magic, MAGIC, sizeof h.magic) != 0) return *why = "not a gsmrt pipeline cache", NULL;
    if (h.format_version != FORMAT_VERSION || h.reserved != 0) return *why = "unknown format version", NULL;
    if (h.endian_mark != ENDIAN_MARK || h.pointer_bytes != sizeof(void *))
        return *why = "written on another platform", NULL;
    if (h.gsmrt_version != GSMRT_VERSION) return *why = "written by another gsmrt version", NULL;
    if (h.vendor_id != caps->vendor_id || h.device_id != caps->device_id ||
        h.driver_version != caps->driver_version ||
        memcmp(h.uuid, caps->pipeline_cache_uuid, VK_UUID_SIZE) != 0)
        return *why = "written for another device or driver", NULL;
    if (h.payload_bytes != file_bytes - sizeof h) return *why = "truncated or padded", NULL;
    const unsigned char *payload = (const unsigned char *)file + sizeof h;
    if (fnv1a(payload, (size_t)h.payload_bytes) != h.payload_hash)
        return *why = "checksum mismatch (corrupted)", NULL;

    /* Vulkan's own header: length, version ONE, vendor, device, UUID. */
    uint32_t vk[4];
    if (h.payload_bytes < 16 + VK_UUID_SIZE) return *why = "driver blob shorter than its header", NULL;
    memcpy(vk, payload, sizeof vk);
    if (vk[0] < 16 + VK_UUID_SIZE || vk[0] > h.payload_bytes || vk[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
        vk[2] != caps->vendor_id || vk[3] != caps->device_id ||
        memcmp(payload + 16, caps->pipeline_cache_uuid, VK_UUID_SIZE) != 0)
        return *why = "driver blob header does not match this device", NULL;
    *payload_bytes = (size_t)h.payload_bytes;
    return payload;
}

size_t gsmrt_vk_pipeline_cache_wrap(const void *payload, size_t payload_bytes,
                                    const struct gsmrt_vk_caps *caps, void *out, size_t cap)
{
    struct file_header h;
    if (cap < sizeof h || payload_bytes > cap - sizeof h) return 0;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, sizeof h.magic);
    h.format_version = FORMAT_VERSION;
    h.gsmrt_version = GSMRT_VERSION;
    h.endian_mark = ENDIAN_MARK;
    h.pointer_bytes = sizeof(void *);
    h.vendor_id = caps->vendor_id;
    h.device_id = caps->device_id;
    h.driver_version = caps->driver_version;
    memcpy(h.uuid, caps->pipeline_cache_uuid, VK_UUID_SIZE);
    h.payload_bytes = payload_bytes;
    h.payload_hash = fnv1a(payload, payload_bytes);
    memcpy(out, &h, sizeof h);
    memcpy((unsigned char *)out + sizeof h, payload, payload_bytes);
    return sizeof h + payload_bytes;
}

void gsmrt_vk_pipeline_cache_default_path(const struct gsmrt_vk_caps *caps, char *buf, size_t size)
{
    const char *env = getenv("GSMRT_PIPELINE_CACHE");
    if (env) {
        /* "off" or "" disables persistence; anything else is the file. */
        snprintf(buf, size, "%s", strcmp(env, "off") == 0 ? "" : env);
        return;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[768];
    if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/gsmrt", xdg);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/gsmrt", home);
    else {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, size, "%s/pipelines-%04x-%04x.bin", dir, caps->vendor_id, caps->device_id);
}

static void *read_file(const gsmrt_allocator *a, const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        if (len > 0 && len < (1l << 30) && fseek(f, 0, SEEK_SET) == 0) {
            data = gsmrt_mem_alloc(a, (size_t)len);
            if (data && fread(data, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len;
            else {
                gsmrt_mem_free(a, data);
                data = NULL;
            }
        }
    }
    fclose(f);
    return data;
}

gsmrt_status gsmrt_vk_pipeline_cache_open(struct gsmrt_vk_device *dev, const char *path,
                                          struct gsmrt_err *err)
{
    snprintf(dev->pipeline_cache_path, sizeof dev->pipeline_cache_path, "%s", path);
    size_t file_bytes = 0, payload_bytes = 0;
    void *file = path[0] ? read_file(dev->alloc, path, &file_bytes) : NULL;
    const void *payload = NULL;
    if (file) {
        const char *why = "";
        payload = gsmrt_vk_pipeline_cache_check(file, file_bytes, &dev->caps, &payload_bytes, &why);
        if (!payload)
            gsmrt_log(&dev->log, GSMRT_LOG_INFO, "pipeline cache %s ignored: %s", path, why);
    }
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = payload ? payload_bytes : 0,
        .pInitialData = payload,
    };
    VkResult r = dev->vk.vkCreatePipelineCache(dev->device, &ci, NULL, &dev->pipeline_cache);
    if (r != VK_SUCCESS && payload) {
        gsmrt_log(&dev->log, GSMRT_LOG_INFO, "pipeline cache %s rejected by the driver", path);
        /* A blob the driver rejects is treated as no cache at all. */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = dev->vk.vkCreatePipelineCache(dev->device, &ci, NULL, &dev->pipeline_cache);
    } else if (r == VK_SUCCESS && payload) {
        dev->pipeline_cache_loaded = true;
    }
    gsmrt_mem_free(dev->alloc, file);
    return r == VK_SUCCESS ? GSMRT_OK : gsmrt_vk_result(err, r, "vkCreatePipelineCache");
}

/* mkdir -p for the directory part of `path`. */
static void make_parent_dirs(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
}

gsmrt_status gsmrt_vk_pipeline_cache_save(struct gsmrt_vk_device *dev, struct gsmrt_err *err)
{
    if (!dev->pipeline_cache || !dev->pipeline_cache_path[0]) return GSMRT_OK;
    size_t n = 0;
    VkResult r = dev->vk.vkGetPipelineCacheData(dev->device, dev->pipeline_cache, &n, NULL);
    if (r != VK_SUCCESS) return gsmrt_vk_result(err, r, "vkGetPipelineCacheData");
    size_t total = n + sizeof(struct file_header);
    unsigned char *payload = gsmrt_mem_alloc(dev->alloc, n ? n : 1);
    unsigned char *buf = gsmrt_mem_alloc(dev->alloc, total);
    if (payload && buf) r = dev->vk.vkGetPipelineCacheData(dev->device, dev->pipeline_cache, &n, payload);
    if (!payload || !buf || r != VK_SUCCESS) {
        gsmrt_mem_free(dev->alloc, payload);
        gsmrt_mem_free(dev->alloc, buf);
        return !payload || !buf ? gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "pipeline cache data")
                                : gsmrt_vk_result(err, r, "vkGetPipelineCacheData");
    }
    total = gsmrt_vk_pipeline_cache_wrap(payload, n, &dev->caps, buf, total);
    gsmrt_mem_free(dev->alloc, payload);

    const char *path = dev->pipeline_cache_path;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    make_parent_dirs(path);
    gsmrt_status st = GSMRT_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        st = gsmrt_err_set(err, GSMRT_E_IO, "pipeline cache %s: %s", tmp, strerror(errno));
    } else {
        bool ok = fwrite(buf, 1, total, f) == total;
        ok = fflush(f) == 0 && ok;
        ok = fsync(fileno(f)) == 0 && ok;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) {
            st = gsmrt_err_set(err, GSMRT_E_IO, "pipeline cache %s: %s", path, strerror(errno));
            remove(tmp);
        }
    }
    gsmrt_mem_free(dev->alloc, buf);
    if (st == GSMRT_OK) dev->pipeline_cache_dirty = false;
    return st;
}
