/* pipeline_cache.c -- the VkPipelineCache persisted on disk.
 *
 * File = our header + the driver's cache blob. Both headers are checked
 * before the driver sees a byte (a cache from another driver, a truncated or
 * corrupted file is ignored with a log line, never trusted).
 *
 * Saving goes through gsmrt_file_write (base/file.c): a temporary file with an
 * unpredictable name, renamed over the old one, and only over a regular file
 * that starts with our magic. Anything else at the path (a model, a device
 * node, a FIFO, a directory, a link) is left alone. A location that cannot be
 * used costs the persistence with one warning, never the context. The cache
 * is saved once, when the device is destroyed, and only when its bytes differ
 * from what was loaded. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/mem.h"
#include "vk/vk_internal.h"

#define MAGIC "GSMRTPC"   /* 8 bytes with the NUL */
#define FORMAT_VERSION 1u
#define ENDIAN_MARK 0x01020304u
#define CACHE_MAX_BYTES (1u << 30)   /* a larger file at the path is not one of ours */

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

/* "GSMRT_PIPELINE_CACHE" etc.: where a path came from, for messages. */
static gsmrt_status set_path(char *buf, size_t size, const char *from, struct gsmrt_err *err, const char *fmt, ...)
    GSMRT_PRINTF(5, 6);
static gsmrt_status set_path(char *buf, size_t size, const char *from, struct gsmrt_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= size || (size_t)w > GSMRT_FILE_PATH_MAX) {
        buf[0] = '\0';
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                             "pipeline cache path (from %s) of %d bytes is longer than the limit of %d", from, w,
                             GSMRT_FILE_PATH_MAX);
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_vk_pipeline_cache_default_path(const struct gsmrt_vk_caps *caps, char *buf, size_t size,
                                                  struct gsmrt_err *err)
{
    buf[0] = '\0';
    const char *env = getenv("GSMRT_PIPELINE_CACHE");
    if (env) {
        /* "off" or "" disables persistence; anything else is the file. */
        if (strcmp(env, "off") == 0) return GSMRT_OK;
        return set_path(buf, size, "GSMRT_PIPELINE_CACHE", err, "%s", env);
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        return set_path(buf, size, "XDG_CACHE_HOME", err, "%s/gsmrt/pipelines-%04x-%04x.bin", xdg, caps->vendor_id,
                        caps->device_id);
    if (home && *home)
        return set_path(buf, size, "HOME", err, "%s/.cache/gsmrt/pipelines-%04x-%04x.bin", home, caps->vendor_id,
                        caps->device_id);
    return GSMRT_OK;
}

/* A file is ours to replace when it starts with our magic; a cache of ours
 * from another version, driver or a corrupted one is still replaced. */
static bool is_our_cache(const void *head, size_t n)
{
    return n >= sizeof MAGIC && memcmp(head, MAGIC, sizeof MAGIC) == 0;
}

/* An unusable location costs the persistent cache, never the context: one
 * warning, then no more reads or writes of it in this run. */
static void give_up_persistence(struct gsmrt_vk_device *dev, const char *why)
{
    gsmrt_log(&dev->log, GSMRT_LOG_WARN, "pipeline cache: %s; running without a persistent pipeline cache", why);
    dev->pipeline_cache_path[0] = '\0';
}

/* The cache file's bytes, or NULL: no file yet (persistence stays on), or
 * one we must not use or replace (persistence is given up, with a warning). */
static void *load_file(struct gsmrt_vk_device *dev, size_t *n)
{
    *n = 0;
    const char *path = dev->pipeline_cache_path;
    struct stat sb;
    struct gsmrt_err e = {GSMRT_OK, ""};
    if (lstat(path, &sb) != 0) {
        if (errno != ENOENT) {
            gsmrt_err_set(&e, GSMRT_E_IO, "%s: %s", path, strerror(errno));
            give_up_persistence(dev, e.msg);
        }
        return NULL;
    }
    if (S_ISLNK(sb.st_mode)) {
        gsmrt_err_set(&e, GSMRT_E_IO, "%s: is a symbolic link; neither read nor replaced", path);
        give_up_persistence(dev, e.msg);
        return NULL;
    }
    char *data = NULL;
    if (gsmrt_file_read_all(dev->alloc, path, CACHE_MAX_BYTES, false, &data, n, &e) != GSMRT_OK) {
        give_up_persistence(dev, e.msg);
        return NULL;
    }
    if (!is_our_cache(data, *n)) {
        gsmrt_err_set(&e, GSMRT_E_IO, "%s: an existing file that is not a gsmrt pipeline cache; not replaced",
                      path);
        give_up_persistence(dev, e.msg);
        gsmrt_mem_free(dev->alloc, data);
        *n = 0;
        return NULL;
    }
    return data;
}

gsmrt_status gsmrt_vk_pipeline_cache_open(struct gsmrt_vk_device *dev, const char *path,
                                          struct gsmrt_err *err)
{
    gsmrt_status st = path ? set_path(dev->pipeline_cache_path, sizeof dev->pipeline_cache_path,
                                      "pipeline_cache_path", err, "%s", path)
                           : gsmrt_vk_pipeline_cache_default_path(&dev->caps, dev->pipeline_cache_path,
                                                                  sizeof dev->pipeline_cache_path, err);
    if (st != GSMRT_OK) return st;
    size_t file_bytes = 0, payload_bytes = 0;
    void *file = dev->pipeline_cache_path[0] ? load_file(dev, &file_bytes) : NULL;
    const void *payload = NULL;
    if (file) {
        const char *why = "";
        payload = gsmrt_vk_pipeline_cache_check(file, file_bytes, &dev->caps, &payload_bytes, &why);
        if (!payload)
            gsmrt_log(&dev->log, GSMRT_LOG_INFO, "pipeline cache %s ignored: %s", dev->pipeline_cache_path, why);
    }
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = payload ? payload_bytes : 0,
        .pInitialData = payload,
    };
    VkResult r = dev->vk.vkCreatePipelineCache(dev->device, &ci, NULL, &dev->pipeline_cache);
    if (r != VK_SUCCESS && payload) {
        gsmrt_log(&dev->log, GSMRT_LOG_INFO, "pipeline cache %s rejected by the driver", dev->pipeline_cache_path);
        /* A blob the driver rejects is treated as no cache at all. */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = dev->vk.vkCreatePipelineCache(dev->device, &ci, NULL, &dev->pipeline_cache);
    } else if (r == VK_SUCCESS && payload) {
        dev->pipeline_cache_loaded = true;
        /* What is on disk: a save of the same bytes would only rewrite it. */
        dev->pipeline_cache_saved_hash = fnv1a(payload, payload_bytes);
        dev->pipeline_cache_saved_bytes = payload_bytes;
    }
    gsmrt_mem_free(dev->alloc, file);
    return r == VK_SUCCESS ? GSMRT_OK : gsmrt_vk_result(err, r, "vkCreatePipelineCache");
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
    uint64_t hash = fnv1a(payload, n);
    bool unchanged = n == dev->pipeline_cache_saved_bytes && hash == dev->pipeline_cache_saved_hash;
    total = unchanged ? 0 : gsmrt_vk_pipeline_cache_wrap(payload, n, &dev->caps, buf, total);
    gsmrt_mem_free(dev->alloc, payload);

    const char *path = dev->pipeline_cache_path;
    struct gsmrt_err e = {GSMRT_OK, ""};
    if (!unchanged) {
        if (gsmrt_file_make_parent_dirs(path, &e) != GSMRT_OK ||
            gsmrt_file_write(path, buf, total, is_our_cache, &e) != GSMRT_OK) {
            give_up_persistence(dev, e.msg);
        } else {
            dev->pipeline_cache_saved_hash = hash;
            dev->pipeline_cache_saved_bytes = n;
            dev->pipeline_cache_saves++;
            gsmrt_log(&dev->log, GSMRT_LOG_INFO, "pipeline cache saved to %s (%zu bytes)", path, total);
        }
    }
    gsmrt_mem_free(dev->alloc, buf);
    dev->pipeline_cache_dirty = false;
    return GSMRT_OK;
}
