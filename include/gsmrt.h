/* gsmrt.h -- the public API of the GSM runtime (library `gsmrt`).
 *
 * The one header a program embedding the runtime includes. It compiles alone as
 * C11 -pedantic and as C++. Everything else under runtime/ is internal.
 *
 * Conventions
 * - Every fallible function returns a gsmrt_status; results come back through
 *   out-parameters, which are set to NULL/0 first and assigned only on success.
 * - Structs that the caller fills or receives start with `uint32_t struct_size`:
 *   set it to sizeof the struct you compiled against (the *_init functions do),
 *   so fields can be appended in later versions without breaking callers.
 * - Thread safety: functions that take no handle (gsmrt_version,
 *   gsmrt_status_name, gsmrt_status_message, gsmrt_device_enumerate) may be
 *   called from any thread.
 *
 * Usage: list the Vulkan devices the runtime can use.
 *
 *     gsmrt_device_info info[8];
 *     uint32_t n = 0;
 *     char err[256];
 *     for (int i = 0; i < 8; i++) gsmrt_device_info_init(&info[i], sizeof info[i]);
 *     if (gsmrt_device_enumerate(info, 8, &n, err, sizeof err) != GSMRT_OK)
 *         fprintf(stderr, "%s\n", err);
 *     for (uint32_t i = 0; i < n && i < 8; i++) printf("%u: %s\n", i, info[i].name);
 */
#ifndef GSMRT_H
#define GSMRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(GSMRT_SHARED)
#  ifdef GSMRT_BUILD
#    define GSMRT_API __declspec(dllexport)
#  else
#    define GSMRT_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define GSMRT_API __attribute__((visibility("default")))
#else
#  define GSMRT_API
#endif

/* ---- version ------------------------------------------------------------
 * Versions with the same major number are ABI compatible; minor versions add
 * functions, enum values and struct fields (at the end) only. */
#define GSMRT_VERSION_MAJOR 0
#define GSMRT_VERSION_MINOR 1
#define GSMRT_VERSION_PATCH 0
#define GSMRT_VERSION \
    ((GSMRT_VERSION_MAJOR << 16) | (GSMRT_VERSION_MINOR << 8) | GSMRT_VERSION_PATCH)

/* The runtime's version as GSMRT_VERSION encodes it; compare with the macro
 * at start-up to detect a header/library mismatch. Any thread. */
GSMRT_API uint32_t gsmrt_version(void);
/* "major.minor.patch"; a static string. Any thread. */
GSMRT_API const char *gsmrt_version_string(void);

/* ---- status -------------------------------------------------------------
 * One table generates the enum, gsmrt_status_name and gsmrt_status_message,
 * so the three cannot drift apart. Values are stable; new ones are appended. */
#define GSMRT_STATUS_MAP(X)                                                   \
    X(OK, 0, "success")                                                       \
    X(E_INVALID_ARGUMENT, 1, "invalid argument")                              \
    X(E_IO, 2, "file cannot be read or written")                              \
    X(E_FORMAT, 3, "malformed or unsupported file")                           \
    X(E_NO_DEVICE, 4, "no usable Vulkan device or loader")                    \
    X(E_OUT_OF_HOST_MEMORY, 5, "out of host memory")                          \
    X(E_OUT_OF_DEVICE_MEMORY, 6, "out of device memory")                      \
    X(E_CONTEXT_FULL, 7, "the context has no room for the request")           \
    X(E_CANCELLED, 8, "cancelled")                                            \
    X(E_DEVICE_LOST, 9, "the Vulkan device was lost")                         \
    X(E_UNSUPPORTED, 10, "not supported by this device, model or build")      \
    X(E_INTERNAL, 11, "internal error (a bug in gsmrt)")

typedef enum gsmrt_status {
#define GSMRT_STATUS_ENUM_(name, value, msg) GSMRT_##name = value,
    GSMRT_STATUS_MAP(GSMRT_STATUS_ENUM_)
#undef GSMRT_STATUS_ENUM_
    GSMRT_STATUS_COUNT_ = 12
} gsmrt_status;

/* "GSMRT_E_FORMAT" for GSMRT_E_FORMAT; "GSMRT_UNKNOWN_STATUS" for a value not
 * in the table. Static strings. Any thread. */
GSMRT_API const char *gsmrt_status_name(gsmrt_status st);
/* A one-line English description ("malformed or unsupported file"). */
GSMRT_API const char *gsmrt_status_message(gsmrt_status st);

/* ---- host allocator and logging ----------------------------------------- */

/* A host allocator: `alloc` returns memory aligned to `align` (a power of two,
 * at most 64) or NULL; `free` receives the pointer and the size it was asked
 * for. NULL functions mean libc. Device memory never goes through it. */
typedef struct gsmrt_allocator {
    void *user;
    void *(*alloc)(void *user, size_t size, size_t align);
    void (*free)(void *user, void *ptr, size_t size);
} gsmrt_allocator;

typedef enum gsmrt_log_level {
    GSMRT_LOG_ERROR = 0,
    GSMRT_LOG_WARN = 1,
    GSMRT_LOG_INFO = 2,
    GSMRT_LOG_DEBUG = 3
} gsmrt_log_level;

/* Receives one message (no trailing newline). Called on the thread that made
 * the call that logs. */
typedef void (*gsmrt_log_cb)(void *user, gsmrt_log_level level, const char *msg);

/* ---- devices --------------------------------------------------------------
 * Device discovery without creating a context (for `gsm devices` and a host
 * application's settings screen). */

typedef enum gsmrt_device_type {
    GSMRT_DEVICE_OTHER = 0,
    GSMRT_DEVICE_INTEGRATED_GPU = 1,
    GSMRT_DEVICE_DISCRETE_GPU = 2,
    GSMRT_DEVICE_VIRTUAL_GPU = 3,
    GSMRT_DEVICE_CPU = 4
} gsmrt_device_type;

#define GSMRT_MAX_MEMORY_HEAPS 16
#define GSMRT_MAX_MEMORY_TYPES 32

/* Memory property bits, the same values as VkMemoryPropertyFlagBits. */
#define GSMRT_MEMORY_DEVICE_LOCAL 0x1u
#define GSMRT_MEMORY_HOST_VISIBLE 0x2u
#define GSMRT_MEMORY_HOST_COHERENT 0x4u
#define GSMRT_MEMORY_HOST_CACHED 0x8u

typedef struct gsmrt_device_info {
    uint32_t struct_size;
    uint32_t index;            /* position in Vulkan's enumeration order */
    char name[256];
    gsmrt_device_type type;
    uint32_t vendor_id, device_id;
    uint32_t api_version;      /* VK_MAKE_API_VERSION encoding */
    char driver_name[256];
    char driver_info[256];
    bool usable;               /* meets the runtime's minimum (Vulkan 1.2, compute queue) */
    bool fp16_arithmetic;
    bool storage_8bit;
    bool storage_16bit;
    bool subgroup_arithmetic;  /* subgroup add/max in compute shaders */
    bool subgroup_shuffle;
    bool unified_memory;       /* every device-local type is also host-visible */
    bool transfer_queue;       /* a queue family with transfer but no compute/graphics */
    bool timestamps;
    bool memory_budget;        /* VK_EXT_memory_budget */
    bool push_descriptor;      /* VK_KHR_push_descriptor */
    uint32_t subgroup_size;
    uint64_t max_storage_buffer_range;   /* bytes one storage binding can see */
    uint64_t max_memory_allocation_size; /* bytes */
    uint32_t max_push_constants_size;    /* bytes */
    uint32_t max_compute_shared_memory;  /* bytes */
    uint32_t max_workgroup_invocations;
    uint64_t min_storage_buffer_offset_alignment;
    float timestamp_period_ns;
    uint32_t n_memory_heaps;
    uint64_t memory_heap_size[GSMRT_MAX_MEMORY_HEAPS];    /* bytes */
    uint32_t memory_heap_flags[GSMRT_MAX_MEMORY_HEAPS];   /* bit 0: device local */
    uint32_t n_memory_types;
    uint32_t memory_type_flags[GSMRT_MAX_MEMORY_TYPES];   /* GSMRT_MEMORY_* bits */
    uint32_t memory_type_heap[GSMRT_MAX_MEMORY_TYPES];
    char quirks[256];          /* comma-separated names of the driver quirks that apply */
} gsmrt_device_info;

/* Sets info->struct_size = size and clears the rest. */
GSMRT_API void gsmrt_device_info_init(gsmrt_device_info *info, size_t size);

/* Fills up to `capacity` entries of `infos` (each initialised with
 * gsmrt_device_info_init) and sets *count to the number of devices present,
 * which may exceed capacity. `infos` may be NULL when capacity is 0.
 * `err`/`err_size` (may be NULL/0) receive a message on failure.
 * Returns GSMRT_OK (also when *count is 0), GSMRT_E_NO_DEVICE when no Vulkan
 * loader or instance is available, GSMRT_E_INVALID_ARGUMENT for NULL count or
 * an info whose struct_size is too small. On failure *count is 0. Any thread. */
GSMRT_API gsmrt_status gsmrt_device_enumerate(gsmrt_device_info *infos, uint32_t capacity,
                                              uint32_t *count, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif /* GSMRT_H */
