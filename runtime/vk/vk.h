/* vk.h -- THE device layer: the only header of runtime/vk that other modules
 * include. A small set of nouns: instance, device (with its capability record
 * and quirks), buffer (sub-allocated by role), pipeline (lazy, cached on disk),
 * recording (command buffer with explicit barriers and timestamps).
 *
 * Call order: gsmrt_vk_instance_create -> gsmrt_vk_device_create ->
 * buffers/pipelines/recordings -> their destroy calls -> device -> instance.
 * All device-level Vulkan calls go through dev->vk (a volk device table); no
 * code outside runtime/vk calls a vk* device function directly.
 *
 * Threading: a device and everything made from it is used by one thread at a
 * time; the validation message counter is atomic. */
#ifndef GSMRT_VK_H
#define GSMRT_VK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <volk.h>

#include "base/err.h"
#include "base/log.h"
#include "gsmrt.h"

/* ---- instance ------------------------------------------------------------ */

struct gsmrt_vk_instance {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    bool validation;                     /* Khronos validation layer enabled */
    atomic_uint validation_messages;     /* warnings + errors seen by the messenger */
    const gsmrt_allocator *alloc;
    struct gsmrt_log log;
};

struct gsmrt_vk_instance_params {
    const gsmrt_allocator *alloc;   /* may be NULL (libc); must outlive the instance */
    struct gsmrt_log log;
    int validation;                 /* 1 on, 0 off, -1: GSMRT_VALIDATE decides */
};

/* Loads Vulkan with volk (no loader -> GSMRT_E_NO_DEVICE, never a crash) and
 * creates the instance; with validation, also the layer and a messenger that
 * counts and logs every warning and error. */
gsmrt_status gsmrt_vk_instance_create(const struct gsmrt_vk_instance_params *p,
                                      struct gsmrt_vk_instance **out, struct gsmrt_err *err);
void gsmrt_vk_instance_destroy(struct gsmrt_vk_instance *inst);

/* ---- capabilities and quirks -------------------------------------------- */

struct gsmrt_vk_caps {
    char name[256];
    char driver_name[256];
    char driver_info[256];
    VkPhysicalDeviceType type;
    uint32_t vendor_id, device_id, driver_version, api_version;
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE];

    bool usable;                 /* Vulkan >= 1.2 and a compute queue */
    bool fp16_arithmetic;        /* shaderFloat16 */
    bool storage_8bit, storage_16bit;
    bool subgroup_basic, subgroup_arithmetic, subgroup_shuffle;   /* in compute stage */
    uint32_t subgroup_size;

    uint64_t max_storage_buffer_range;    /* bytes one binding may see */
    uint64_t max_memory_allocation_size;
    uint32_t max_push_constants_size;
    uint32_t max_compute_shared_memory;
    uint32_t max_workgroup_invocations;
    uint32_t max_workgroup_count[3];
    uint64_t min_storage_buffer_offset_alignment;
    uint64_t non_coherent_atom_size;

    VkPhysicalDeviceMemoryProperties memory;
    bool unified_memory;         /* every DEVICE_LOCAL type is also HOST_VISIBLE */

    uint32_t compute_family;     /* queue family used for compute */
    bool has_transfer_queue;     /* a family with TRANSFER and neither COMPUTE nor GRAPHICS */
    uint32_t transfer_family;
    bool timestamps;             /* compute queue writes valid timestamps */
    float timestamp_period_ns;
    uint32_t timestamp_valid_bits;

    bool ext_memory_budget;
    bool ext_push_descriptor;
};

/* Driver quirks, named, each set in quirks.c with its reason. Nothing else in
 * the code base looks at vendor or driver ids. */
struct gsmrt_vk_quirks {
    bool slow_pipeline_compile;   /* JIT-compiles pipelines at creation (llvmpipe) */
    bool subgroup_size_varies;    /* reported subgroup size is not what compute runs */
    bool tiers_share_memory;      /* unified memory: HOT and COLD pools are the same RAM */
    bool cap_allocation_1gib;     /* big single allocations fragment (NVIDIA proprietary) */
};

/* Fills caps for a physical device (instance-level queries only). */
void gsmrt_vk_caps_query(VkPhysicalDevice phys, struct gsmrt_vk_caps *caps);
void gsmrt_vk_quirks_detect(const struct gsmrt_vk_caps *caps, struct gsmrt_vk_quirks *q);
/* Writes the names of the quirks that are set, comma-separated. */
void gsmrt_vk_quirks_names(const struct gsmrt_vk_quirks *q, char *buf, size_t size);

/* Device choice, as a pure function over the caps of every device (testable
 * without Vulkan): `want` is an index ("1"), a case-insensitive substring of
 * the name ("llvmpipe"), or NULL/"" for the default order discrete >
 * integrated > virtual > CPU > other (first in enumeration order on ties).
 * Unusable devices are never chosen by default. Returns GSMRT_E_NO_DEVICE
 * with a message when nothing matches. */
gsmrt_status gsmrt_vk_choose_device(const struct gsmrt_vk_caps *caps, uint32_t n,
                                    const char *want, uint32_t *chosen, struct gsmrt_err *err);

/* ---- memory roles and accounting ---------------------------------------- */

/* What a buffer is for; decides the memory it lands in and where its bytes are
 * counted. Values index arrays. */
enum gsmrt_vk_role {
    GSMRT_VK_ROLE_WEIGHTS = 0,   /* device-local, uploaded once */
    GSMRT_VK_ROLE_KV_HOT,        /* device-local KV pages */
    GSMRT_VK_ROLE_KV_COLD,       /* host-visible KV pages (GSM swap) */
    GSMRT_VK_ROLE_SCRATCH,       /* device-local activations */
    GSMRT_VK_ROLE_STAGING,       /* host-visible, coherent: upload/download */
    GSMRT_VK_ROLE_READBACK,      /* host-visible, cached when possible: results the CPU reads */
    GSMRT_VK_ROLE_COUNT
};
const char *gsmrt_vk_role_name(enum gsmrt_vk_role role);

/* Memory-type choice by required / preferred / avoided property flags, as a
 * pure function (unit-tested): the first type allowed by `type_bits` with all
 * `required` flags, scoring +1 per preferred flag present and -1 per avoided
 * flag present; -1 when none qualifies. */
int gsmrt_vk_pick_memory_type(const VkPhysicalDeviceMemoryProperties *mem, uint32_t type_bits,
                              VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                              VkMemoryPropertyFlags avoid);
void gsmrt_vk_role_memory_flags(enum gsmrt_vk_role role, VkMemoryPropertyFlags *required,
                                VkMemoryPropertyFlags *preferred, VkMemoryPropertyFlags *avoid);

struct gsmrt_vk_usage {
    uint64_t role_bytes[GSMRT_VK_ROLE_COUNT];          /* bytes handed out per role */
    uint64_t heap_bytes[VK_MAX_MEMORY_HEAPS];          /* device memory held per heap */
    uint64_t heap_budget[VK_MAX_MEMORY_HEAPS];         /* VK_EXT_memory_budget, or heap size */
    uint64_t heap_size[VK_MAX_MEMORY_HEAPS];
    uint32_t n_heaps;
    uint32_t n_blocks;
};

/* ---- device --------------------------------------------------------------- */

struct gsmrt_vk_block;
struct gsmrt_vk_pipeline;

struct gsmrt_vk_device {
    struct gsmrt_vk_instance *inst;      /* not owned */
    VkPhysicalDevice phys;
    VkDevice device;
    struct VolkDeviceTable vk;
    VkQueue queue;                       /* compute queue */
    VkQueue transfer_queue;              /* = queue when the device has no transfer queue */
    VkCommandPool cmd_pool;
    uint32_t index;                      /* enumeration index */
    struct gsmrt_vk_caps caps;
    struct gsmrt_vk_quirks quirks;

    /* Environment switches that force fallback paths on capable devices. */
    bool disable_subgroup_ops;           /* GSMRT_DISABLE_SUBGROUP_OPS=1 */
    bool row_per_invocation;             /* matvec without reductions: CPU devices by default;
                                            GSMRT_MATVEC=rows|reduce overrides */
    bool force_staging;                  /* GSMRT_FORCE_STAGING=1: copy through staging even
                                            when memory is mapped (a discrete GPU's path) */
    uint64_t binding_range;              /* min(maxStorageBufferRange, GSMRT_FORCE_BINDING_RANGE) */
    uint64_t block_bytes;                /* sub-allocation block size */
    uint64_t forced_budget;              /* GSMRT_FORCE_DEVICE_BUDGET bytes, 0 = none */

    struct gsmrt_vk_block *blocks;       /* list of memory blocks */
    uint64_t role_bytes[GSMRT_VK_ROLE_COUNT];
    uint64_t heap_bytes[VK_MAX_MEMORY_HEAPS];

    VkPipelineCache pipeline_cache;
    char pipeline_cache_path[1024];      /* "" = not persisted */
    bool pipeline_cache_dirty;
    bool pipeline_cache_loaded;          /* a valid cache file was handed to the driver */
    uint64_t pipeline_cache_saved_hash;  /* FNV-1a of the payload on disk (loaded or saved) */
    size_t pipeline_cache_saved_bytes;
    uint32_t pipeline_cache_saves;       /* files written in this device's life (tests count them) */
    struct gsmrt_vk_pipeline **pipelines;   /* created so far, by (kernel, spec) */
    uint32_t n_pipelines, cap_pipelines;
    double pipeline_create_ms;           /* total time spent creating pipelines */
    uint64_t n_submits;                  /* queue submissions so far (benchmarks count them) */

    const gsmrt_allocator *alloc;
    struct gsmrt_log log;
};

struct gsmrt_vk_device_params {
    const char *want;                 /* index or name; NULL: GSMRT_DEVICE or the default order */
    const char *pipeline_cache_path;  /* NULL: default location; "" : no persistence */
};

/* Creates the logical device on the chosen physical device. Returns
 * GSMRT_E_NO_DEVICE (nothing usable / nothing matches `want`), or a Vulkan
 * failure translated (GSMRT_E_OUT_OF_*_MEMORY, GSMRT_E_DEVICE_LOST,
 * GSMRT_E_UNSUPPORTED). */
gsmrt_status gsmrt_vk_device_create(struct gsmrt_vk_instance *inst,
                                    const struct gsmrt_vk_device_params *p,
                                    struct gsmrt_vk_device **out, struct gsmrt_err *err);
/* Saves the pipeline cache if it changed, frees every block and pipeline.
 * Accepts NULL and half-built devices. */
void gsmrt_vk_device_destroy(struct gsmrt_vk_device *dev);

/* Lists every physical device's caps. *caps_out is allocated with inst->alloc
 * (free with gsmrt_mem_free). */
gsmrt_status gsmrt_vk_enumerate(struct gsmrt_vk_instance *inst, struct gsmrt_vk_caps **caps_out,
                                uint32_t *n_out, VkPhysicalDevice **phys_out,
                                struct gsmrt_err *err);

/* Maps a VkResult to a status and records "what: VK_ERROR_...". */
gsmrt_status gsmrt_vk_result(struct gsmrt_err *err, VkResult r, const char *what);
const char *gsmrt_vk_result_name(VkResult r);

/* ---- buffers -------------------------------------------------------------- */

/* A sub-allocation: [offset, offset+size) of a block-wide VkBuffer. */
struct gsmrt_vk_buf {
    VkBuffer buffer;
    VkDeviceSize offset;       /* within `buffer`, aligned to minStorageBufferOffsetAlignment */
    VkDeviceSize size;         /* bytes requested */
    void *mapped;              /* host pointer to byte `offset`, or NULL if not host-visible */
    enum gsmrt_vk_role role;
    struct gsmrt_vk_block *block;
};

/* A storage-buffer binding: never VK_WHOLE_SIZE, never above dev->binding_range. */
struct gsmrt_vk_range {
    VkBuffer buffer;
    VkDeviceSize offset, size;
};

gsmrt_status gsmrt_vk_buf_alloc(struct gsmrt_vk_device *dev, enum gsmrt_vk_role role,
                                VkDeviceSize size, struct gsmrt_vk_buf *out,
                                struct gsmrt_err *err);
void gsmrt_vk_buf_free(struct gsmrt_vk_device *dev, struct gsmrt_vk_buf *buf);   /* zeroes *buf */

/* The binding for bytes [offset, offset+size) of buf; GSMRT_E_INVALID_ARGUMENT
 * if it leaves the buffer, exceeds the binding range or breaks the offset
 * alignment. */
gsmrt_status gsmrt_vk_buf_range(const struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *buf,
                                VkDeviceSize offset, VkDeviceSize size,
                                struct gsmrt_vk_range *out, struct gsmrt_err *err);
/* The whole buffer as one binding (must fit in the binding range). */
gsmrt_status gsmrt_vk_buf_whole(const struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *buf,
                                struct gsmrt_vk_range *out, struct gsmrt_err *err);

/* How many rows of `row_bytes` one binding may hold so that every chunk start
 * (a multiple of the result times row_bytes) keeps the offset alignment.
 * Returns 0 when not even one aligned group of rows fits. */
uint64_t gsmrt_vk_rows_per_chunk(uint64_t row_bytes, uint64_t binding_range, uint64_t align);

/* Copies between host memory and a buffer: a memcpy when the buffer is mapped,
 * else through a staging buffer and a transfer on the queue (waits). */
gsmrt_status gsmrt_vk_upload(struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *dst,
                             VkDeviceSize offset, const void *src, VkDeviceSize size,
                             struct gsmrt_err *err);
gsmrt_status gsmrt_vk_download(struct gsmrt_vk_device *dev, const struct gsmrt_vk_buf *src,
                               VkDeviceSize offset, void *dst, VkDeviceSize size,
                               struct gsmrt_err *err);

/* Bytes held per role and per heap, readable at any time. */
void gsmrt_vk_usage(const struct gsmrt_vk_device *dev, struct gsmrt_vk_usage *u);

/* ---- pipelines ------------------------------------------------------------ */

/* One embedded SPIR-V kernel and its interface, from the kernel table. */
struct gsmrt_vk_kernel_desc {
    const char *name;
    const uint32_t *code;
    size_t code_bytes;
    uint32_t n_bindings;       /* storage buffers at set 0, bindings 0..n-1 */
    uint32_t push_bytes;       /* size of the push-constant block */
};

#define GSMRT_VK_MAX_SPEC 8
#define GSMRT_VK_MAX_BINDINGS 8

struct gsmrt_vk_pipeline {
    const struct gsmrt_vk_kernel_desc *kernel;
    uint32_t spec[GSMRT_VK_MAX_SPEC];   /* spec constants 0..n_spec-1 (floats by their bits) */
    uint32_t n_spec;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
};

/* Returns the pipeline for (kernel, spec), creating it on first use through
 * the device's pipeline cache. The device owns it. */
gsmrt_status gsmrt_vk_pipeline_get(struct gsmrt_vk_device *dev,
                                   const struct gsmrt_vk_kernel_desc *kernel,
                                   const uint32_t *spec, uint32_t n_spec,
                                   struct gsmrt_vk_pipeline **out, struct gsmrt_err *err);

/* Pipeline cache persistence (pipeline_cache.c). Load happens at device
 * creation, save at device destruction, and only when the bytes changed;
 * it never replaces a file that is not a cache of ours. An unusable
 * location is a warning (GSMRT_OK), not an error. */
gsmrt_status gsmrt_vk_pipeline_cache_save(struct gsmrt_vk_device *dev, struct gsmrt_err *err);
/* Checks a cache file's bytes (our header, then Vulkan's) before the driver
 * sees them; returns the payload for vkCreatePipelineCache, or NULL with a
 * reason. Pure function, unit-tested. */
const void *gsmrt_vk_pipeline_cache_check(const void *file, size_t file_bytes,
                                          const struct gsmrt_vk_caps *caps, size_t *payload_bytes,
                                          const char **why);
/* Wraps a payload in our header; returns bytes written, 0 if `cap` is too small. */
size_t gsmrt_vk_pipeline_cache_wrap(const void *payload, size_t payload_bytes,
                                    const struct gsmrt_vk_caps *caps, void *out, size_t cap);
/* The default cache file path for the device ($GSMRT_PIPELINE_CACHE, else
 * $XDG_CACHE_HOME/gsmrt or ~/.cache/gsmrt); "" when no location is known.
 * GSMRT_E_INVALID_ARGUMENT (and "") for a path over GSMRT_FILE_PATH_MAX. */
gsmrt_status gsmrt_vk_pipeline_cache_default_path(const struct gsmrt_vk_caps *caps, char *buf, size_t size,
                                                  struct gsmrt_err *err);

/* ---- recording ------------------------------------------------------------ */

struct gsmrt_vk_timing {
    const char *label;    /* static string given to gsmrt_vk_rec_dispatch */
    double ms;
};

struct gsmrt_vk_rec {
    struct gsmrt_vk_device *dev;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool pool;
    uint32_t max_dispatches, n_dispatches;
    VkQueryPool queries;            /* 2 timestamps per dispatch, or VK_NULL_HANDLE */
    const char **labels;            /* [max_dispatches] */
    bool recording, submitted;
};

/* A command buffer for up to `max_dispatches` dispatches, with a descriptor
 * pool sized for them; `timestamps` adds a query pool (if the device has
 * timestamps). */
gsmrt_status gsmrt_vk_rec_create(struct gsmrt_vk_device *dev, uint32_t max_dispatches,
                                 bool timestamps, struct gsmrt_vk_rec **out,
                                 struct gsmrt_err *err);
void gsmrt_vk_rec_destroy(struct gsmrt_vk_rec *rec);
/* Resets the command buffer, descriptors and queries and starts recording. */
gsmrt_status gsmrt_vk_rec_begin(struct gsmrt_vk_rec *rec, struct gsmrt_err *err);
/* Records one dispatch: bindings 0..n-1, push constants, workgroup counts.
 * Checks the binding count and push size against the kernel table. */
gsmrt_status gsmrt_vk_rec_dispatch(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_pipeline *pipe,
                                   const struct gsmrt_vk_range *bindings, uint32_t n_bindings,
                                   const void *push, uint32_t push_bytes, uint32_t groups_x,
                                   uint32_t groups_y, uint32_t groups_z, const char *label,
                                   struct gsmrt_err *err);
/* A full compute->compute (and transfer) memory barrier: everything written
 * before is visible to everything after. */
void gsmrt_vk_rec_barrier(struct gsmrt_vk_rec *rec);
void gsmrt_vk_rec_copy(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *src,
                       const struct gsmrt_vk_range *dst);
void gsmrt_vk_rec_fill(struct gsmrt_vk_rec *rec, const struct gsmrt_vk_range *dst, uint32_t word);
/* Ends recording, submits, and waits for completion. A final barrier makes
 * device writes visible to host reads of mapped memory. */
gsmrt_status gsmrt_vk_rec_submit_wait(struct gsmrt_vk_rec *rec, struct gsmrt_err *err);
/* Per-dispatch GPU times of the last submission; returns how many were written. */
uint32_t gsmrt_vk_rec_timings(struct gsmrt_vk_rec *rec, struct gsmrt_vk_timing *out,
                              uint32_t cap);

#endif
