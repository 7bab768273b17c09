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
    X(E_INTERNAL, 11, "internal error (a bug in gsmrt)")                     \
    X(E_BUSY, 12, "busy: every place in the queue is taken; retry later")

typedef enum gsmrt_status {
#define GSMRT_STATUS_ENUM_(name, value, msg) GSMRT_##name = value,
    GSMRT_STATUS_MAP(GSMRT_STATUS_ENUM_)
#undef GSMRT_STATUS_ENUM_
    GSMRT_STATUS_COUNT_ = 13
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

/* ---- files ----------------------------------------------------------------
 * The rules the runtime keeps for files a user names, offered to hosts (the
 * gsm command uses them for every file it reads or writes). Any thread. */

/* The largest text file (prompt, perplexity text, calibration data) the gsm
 * command and gsmrt_model_calibrate read: 64 MiB. */
#define GSMRT_TEXT_FILE_MAX_BYTES ((size_t)64 << 20)

/* Reads the whole regular file at path as text: *text is NUL-terminated
 * (free it with gsmrt_file_free), *len its length. Opening never blocks (a
 * FIFO is refused, not waited on). err/err_size (may be NULL/0) receive the
 * message naming the path. Returns GSMRT_OK; GSMRT_E_IO (cannot open, or a
 * directory, FIFO, device or socket); GSMRT_E_FORMAT (over max_bytes, or a
 * NUL byte inside); GSMRT_E_OUT_OF_HOST_MEMORY; GSMRT_E_INVALID_ARGUMENT
 * (NULL arguments, a path over 1023 bytes). On failure *text is NULL. */
GSMRT_API gsmrt_status gsmrt_file_load_text(const char *path, size_t max_bytes, char **text, size_t *len,
                                            char *err, size_t err_size);
/* Frees what gsmrt_file_load_text returned. NULL is fine. */
GSMRT_API void gsmrt_file_free(char *text);

/* Writes data[0..n) to path atomically: a temporary file with an
 * unpredictable name, created exclusively next to it, fsync'd and renamed
 * over it. Never follows a symbolic link and never replaces anything but a
 * regular file (a link, directory, FIFO, device or socket at path is
 * GSMRT_E_IO, and is left as it was). A failed write leaves the old file.
 * GSMRT_E_INVALID_ARGUMENT for NULL arguments or a path over 1023 bytes. */
GSMRT_API gsmrt_status gsmrt_file_save(const char *path, const void *data, size_t n, char *err,
                                       size_t err_size);

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


/* ---- context ---------------------------------------------------------------
 * A context owns the Vulkan instance and device, the pipelines and the
 * pipeline cache. A context and everything created from it is used by one
 * thread at a time, except gsmrt_session_cancel, which any thread may call. */

typedef struct gsmrt_context gsmrt_context;   /* device, pipelines, caches */
typedef struct gsmrt_model gsmrt_model;       /* weights + vocabulary; immutable after load */
typedef struct gsmrt_session gsmrt_session;   /* KV cache, chat history, sampler state */

typedef struct gsmrt_context_params {
    uint32_t struct_size;
    const char *device;               /* index or name substring; NULL: GSMRT_DEVICE, else the
                                         first discrete > integrated > virtual > CPU device */
    int32_t validation;               /* 1 on, 0 off, -1 (default): GSMRT_VALIDATE decides */
    const char *pipeline_cache_path;  /* NULL (default): $GSMRT_PIPELINE_CACHE, else
                                         $XDG_CACHE_HOME/gsmrt/...; "": none. At most 1023
                                         bytes. A location that cannot be used is a warning,
                                         never a failure; only a gsmrt cache is replaced */
    gsmrt_allocator allocator;        /* copied; NULL functions (default) mean libc */
    gsmrt_log_cb log_cb;              /* NULL (default): warnings and errors to stderr */
    void *log_user;
    gsmrt_log_level log_level;        /* default GSMRT_LOG_WARN */
} gsmrt_context_params;

/* Fills the defaults and sets p->struct_size = size (pass sizeof *p). */
GSMRT_API void gsmrt_context_params_init(gsmrt_context_params *p, size_t size);

/* Creates a context on the chosen Vulkan device. p may be NULL (defaults).
 * err/err_size (may be NULL/0) receive the message when creation fails.
 * Returns GSMRT_OK; GSMRT_E_NO_DEVICE (no loader, no driver, no match for
 * `device`); GSMRT_E_UNSUPPORTED (validation asked for but not installed);
 * GSMRT_E_OUT_OF_HOST_MEMORY / GSMRT_E_OUT_OF_DEVICE_MEMORY;
 * GSMRT_E_INVALID_ARGUMENT (out NULL, bad struct_size). *out is NULL on failure. */
GSMRT_API gsmrt_status gsmrt_context_create(const gsmrt_context_params *p, gsmrt_context **out,
                                            char *err, size_t err_size);

/* Destroys the context. NULL is fine. GSMRT_E_INVALID_ARGUMENT (and nothing
 * is freed) while models created from it are still alive. */
GSMRT_API gsmrt_status gsmrt_context_destroy(gsmrt_context *ctx);

/* The message of the last failure of a call on ctx or on anything created
 * from it ("" if none). Valid until the next call on them. */
GSMRT_API const char *gsmrt_context_last_error(const gsmrt_context *ctx);

/* The device the context runs on. */
GSMRT_API gsmrt_status gsmrt_context_device(const gsmrt_context *ctx, gsmrt_device_info *info);

/* Bytes the context holds on the device, by what they are for. */
typedef struct gsmrt_memory_usage {
    uint32_t struct_size;
    uint64_t weights_bytes;
    uint64_t kv_hot_bytes;       /* device-local KV pages */
    uint64_t kv_cold_bytes;      /* host-visible KV pages (GSM swap) */
    uint64_t scratch_bytes;      /* activations, page tables */
    uint64_t staging_bytes;      /* upload / readback buffers */
    uint64_t device_local_bytes; /* everything held in device-local heaps */
    uint64_t host_visible_bytes; /* everything held in other heaps */
    /* The device-local heaps' budget for this process: VK_EXT_memory_budget's
     * figure when the device reports one (memory_budget_reported), else the
     * heaps' size; lowered by GSMRT_FORCE_DEVICE_BUDGET. */
    uint64_t device_local_budget;
    bool memory_budget_reported;
} gsmrt_memory_usage;
GSMRT_API gsmrt_status gsmrt_context_memory(const gsmrt_context *ctx, gsmrt_memory_usage *usage);

/* ---- model ------------------------------------------------------------------ */

/* Progress of long work: `stage` is a short English phrase, fraction in [0, 1]. */
typedef void (*gsmrt_progress_cb)(void *user, const char *stage, float fraction);

typedef struct gsmrt_model_params {
    uint32_t struct_size;
    gsmrt_progress_cb progress;  /* NULL: none */
    void *progress_user;
    const char *chat_format;     /* NULL (default): recognise the model's template; else one of
                                    "gsm-tiny", "chatml", "llama3", "deepseek2", "deepseek3" */
    bool check_tensors;          /* default false: true reads every weight on the host before the
                                    upload and refuses NaN or infinity (GSMRT_E_FORMAT naming the
                                    tensor; Q8_0: its block scales). Without it only the
                                    hyper-parameters are checked for non-finite values. */
} gsmrt_model_params;
GSMRT_API void gsmrt_model_params_init(gsmrt_model_params *p, size_t size);

/* Loads a GGUF model and uploads its weights to the device. p may be NULL.
 * Returns GSMRT_OK; GSMRT_E_IO (cannot open/map); GSMRT_E_FORMAT (malformed
 * file, missing/mistyped key, tensor shape against the hyper-parameters;
 * the message names the file and the key or tensor; also a vocabulary whose
 * token texts are all empty); GSMRT_E_UNSUPPORTED (architecture, tensor
 * type, a chat_format name not known: the message lists the known ones);
 * GSMRT_E_OUT_OF_*_MEMORY. A chat template that is absent or not recognised
 * is not an error: the model completes raw text, its model_info.chat_format
 * is "", and gsmrt_session_generate is GSMRT_E_UNSUPPORTED until the model is
 * loaded with a chat_format.
 * Nothing is left allocated on failure; *out is NULL. */
GSMRT_API gsmrt_status gsmrt_model_load(gsmrt_context *ctx, const char *path, const gsmrt_model_params *p,
                                        gsmrt_model **out);

/* Frees the model. NULL is fine. GSMRT_E_INVALID_ARGUMENT (nothing freed)
 * while sessions created from it are alive. */
GSMRT_API gsmrt_status gsmrt_model_destroy(gsmrt_model *model);

typedef struct gsmrt_model_info {
    uint32_t struct_size;
    char name[128];          /* general.name */
    char arch[32];           /* "deepseek2" */
    char chat_format[32];    /* the format in use; "": none (template not recognised, no chat) */
    uint32_t n_vocab, n_ctx_train, n_layer, n_embd, n_head;
    uint64_t weight_bytes;   /* on the device */
} gsmrt_model_info;
GSMRT_API gsmrt_status gsmrt_model_describe(const gsmrt_model *model, gsmrt_model_info *info);

/* Tokenizes UTF-8 text. add_special: a BOS in front when the model wants one;
 * parse_special: control-token text becomes control tokens. Writes up to
 * `cap` ids and sets *n_tokens to the full count (call with cap 0 to size).
 * GSMRT_E_INVALID_ARGUMENT for invalid UTF-8 (the message gives the offset). */
GSMRT_API gsmrt_status gsmrt_model_tokenize(const gsmrt_model *model, const char *text, size_t len,
                                            bool add_special, bool parse_special, int32_t *tokens,
                                            size_t cap, size_t *n_tokens);

/* ---- GSM calibration and profiles -------------------------------------------------
 * A calibration (JSON, DESIGN.md "GSM") records, per layer, how the heads are
 * grouped and each group's policy (sink tokens, window, hot-page budget, gate
 * threshold), with the per-head statistics it was made from and the identity
 * of the model it was made for: architecture, general.name, layer and head
 * counts, embedding and vocabulary sizes. Loading it for another model is
 * GSMRT_E_FORMAT. `gsm calibrate` makes one; the session's GSM configuration
 * (calibration_path) or a named profile applies it. */

typedef struct gsmrt_calibrate_params {
    uint32_t struct_size;
    const char *data_path;        /* UTF-8 text to run the model over (required); special-token
                                     text (chat markup) is parsed as special tokens */
    uint32_t n_groups;            /* head groups per layer; 0 (default): min(8, heads); at most heads */
    uint32_t n_ctx;               /* tokens per window, each evaluated from an empty cache;
                                     0 (default): min(1024, the model's training context); 16..that */
    float threshold;              /* gate threshold given to every group, [0, 1); default 0.05 */
    uint32_t max_tokens;          /* use at most this many tokens of the text; 0 (default): all */
    gsmrt_progress_cb progress;   /* once per window, stage "calibration"; NULL (default): none */
    void *progress_user;
} gsmrt_calibrate_params;
GSMRT_API void gsmrt_calibrate_params_init(gsmrt_calibrate_params *p, size_t size);

/* Calibrates GSM for `model` and writes the calibration to out_path (JSON,
 * replaced atomically). The text is tokenized (BOS in front of every window
 * when the model has one) and cut into windows of n_ctx tokens; each window
 * runs through the model with dense attention, and every attention row
 * (every token, layer and head) adds its mass per distance band (0, 8, 16,
 * 32, ... tokens back), its mass on the first 4 (sink) tokens and its entropy
 * to the statistics of its head. Per layer the heads are then clustered by
 * those statistics (k-means++, fixed seed: the same input gives the same
 * file) into n_groups groups, and each group gets the window that covers 90 %
 * of its mass and a hot-page budget for the rest. Runs on the calling thread;
 * the model is only read (sessions may exist, but none may run at the same
 * time: a context is used by one thread at a time).
 * Returns GSMRT_OK; GSMRT_E_INVALID_ARGUMENT (NULL model, out_path or
 * data_path, a value out of range, text with no tokens or invalid UTF-8: the
 * message names the field and its range); GSMRT_E_IO (the text cannot be
 * read, out_path cannot be written: the message names the file);
 * GSMRT_E_OUT_OF_*_MEMORY; device errors. On failure out_path is left as it
 * was and the message is in gsmrt_context_last_error. */
GSMRT_API gsmrt_status gsmrt_model_calibrate(gsmrt_model *model, const gsmrt_calibrate_params *p,
                                             const char *out_path);

/* Loads a calibration file as a profile of the model, under `name` (1 to 63
 * characters of A-Z a-z 0-9 _ . -), for requests to pick with
 * gsmrt_generate_params.profile. The model owns it until it is destroyed.
 * Returns GSMRT_OK; GSMRT_E_INVALID_ARGUMENT (NULL argument, a bad or
 * already loaded name, more than 32 profiles); GSMRT_E_IO (cannot read the
 * file); GSMRT_E_FORMAT (malformed file, or made for another model: the
 * message names the file and the key, and both models). On failure the
 * model's profiles are unchanged. */
GSMRT_API gsmrt_status gsmrt_model_load_profile(gsmrt_model *model, const char *name, const char *calib_path);

/* ---- session ------------------------------------------------------------------ */

/* Storage type of the session's KV cache rows. F16 (the default, as
 * llama.cpp's) halves the cache's bytes and what attention reads per token;
 * each cached value is rounded to the nearest half (relative error at most
 * 2^-11). F32 keeps the values as computed. */
typedef enum gsmrt_cache_type {
    GSMRT_CACHE_DEFAULT = 0,   /* F16 */
    GSMRT_CACHE_F16 = 1,
    GSMRT_CACHE_F32 = 2,
} gsmrt_cache_type;

typedef struct gsmrt_session_params {
    uint32_t struct_size;
    uint32_t n_ctx;     /* positions the session can hold; 0 (default): min(4096, the model's);
                           at most 16777216 (GSMRT_E_INVALID_ARGUMENT above) */
    uint32_t n_batch;   /* prompt tokens per step; 0 (default): 256; 1..16777216. The prompts of
                           generate and complete take at most gsmrt_generate_params.cancel_step
                           (default 64) per step, so that a cancel takes effect quickly */
    /* GSM (grouped, tiered KV): on when `gsm` is true or a config or settings
     * are given (a config may still say "enabled": false). `gsm_config` is a
     * JSON file (keys in README "GSM configuration"); `gsm_settings` holds
     * "key=value" entries separated by ';' applied after it
     * ("gate_threshold=0.1;window=256"). Both may be NULL. */
    bool gsm;
    const char *gsm_config;
    const char *gsm_settings;
    gsmrt_cache_type cache_type;   /* KV cache rows; GSMRT_CACHE_DEFAULT (F16) for callers built before it */
} gsmrt_session_params;
GSMRT_API void gsmrt_session_params_init(gsmrt_session_params *p, size_t size);

/* Creates a session (its KV cache, activations). p may be NULL.
 * GSMRT_E_INVALID_ARGUMENT for a cache_type that is not one of the above;
 * GSMRT_E_CONTEXT_FULL when n_ctx is larger than the device can bind;
 * GSMRT_E_FORMAT for a bad GSM config file, GSMRT_E_INVALID_ARGUMENT for a bad
 * GSM setting (both messages name the key and the allowed range); GSMRT_E_IO /
 * GSMRT_E_FORMAT when the config's calibration_path cannot be read, is malformed
 * or was made for another model (the message names the file and the key);
 * GSMRT_E_INVALID_ARGUMENT for a calibration made with another page_size than
 * the configuration's (its hot-page budgets count its own pages), also when a
 * request picks such a profile;
 * GSMRT_E_UNSUPPORTED for a calibration with more than 32 head groups in a
 * layer or pages larger than 64 positions;
 * GSMRT_E_OUT_OF_*_MEMORY. */
GSMRT_API gsmrt_status gsmrt_session_create(gsmrt_model *model, const gsmrt_session_params *p,
                                            gsmrt_session **out);
GSMRT_API void gsmrt_session_destroy(gsmrt_session *s);   /* NULL is fine */

typedef enum gsmrt_role {
    GSMRT_ROLE_SYSTEM = 0,
    GSMRT_ROLE_USER = 1,
    GSMRT_ROLE_ASSISTANT = 2
} gsmrt_role;

/* Appends a message to the chat history (copied; evaluated at the next
 * generate). GSMRT_E_INVALID_ARGUMENT for invalid UTF-8 or a bad role. */
GSMRT_API gsmrt_status gsmrt_session_add_message(gsmrt_session *s, gsmrt_role role, const char *utf8);

/* Forgets the chat history and the KV cache. */
GSMRT_API void gsmrt_session_reset(gsmrt_session *s);

/* Removes the last n messages of the chat history (a turn the caller takes
 * back, or a user message whose turn failed). The KV cache keeps only the
 * positions that still start the rendered history (gsmrt_session_n_past
 * shows it); the next generate evaluates the rest. GSMRT_E_INVALID_ARGUMENT
 * (nothing removed) when the history holds fewer than n messages. */
GSMRT_API gsmrt_status gsmrt_session_pop_messages(gsmrt_session *s, uint32_t n);

/* Removes messages first..first+n-1 (0 is the oldest), for example the
 * oldest exchanges after a system message when the context is full; the
 * cache follows as for gsmrt_session_pop_messages. GSMRT_E_INVALID_ARGUMENT
 * (nothing removed) when they are not all in the history. */
GSMRT_API gsmrt_status gsmrt_session_remove_messages(gsmrt_session *s, uint32_t first, uint32_t n);

/* Messages in the chat history; positions the KV cache holds (the tokens of
 * the conversation so far that a next turn does not evaluate again). */
GSMRT_API uint32_t gsmrt_session_n_messages(const gsmrt_session *s);
GSMRT_API uint32_t gsmrt_session_n_past(const gsmrt_session *s);
/* Positions the session's context holds (gsmrt_session_params.n_ctx or its default). */
GSMRT_API uint32_t gsmrt_session_n_ctx(const gsmrt_session *s);

/* The tokens the next gsmrt_session_generate would evaluate for its prompt
 * from an empty cache: the history rendered in the chat format with the
 * opening of the assistant's turn. Compare with n_ctx (less room for the
 * answer) to decide whether to remove old messages first. */
GSMRT_API gsmrt_status gsmrt_session_prompt_tokens(const gsmrt_session *s, size_t *n_tokens);

typedef struct gsmrt_generate_params {
    uint32_t struct_size;
    uint32_t max_tokens;     /* default 256 */
    float temperature;       /* default 0.8; 0 = greedy */
    int32_t top_k;           /* default 40; 0 = off */
    float top_p;             /* default 0.95; 1 = off */
    float min_p;             /* default 0.05; 0 = off */
    float repeat_penalty;    /* default 1.0 = off */
    uint32_t repeat_last_n;  /* default 64 */
    uint64_t seed;           /* default 0xD5A5EED */
    bool ignore_eos;         /* default false: keep generating past the end-of-turn token */
    const char *profile;     /* GSM calibration profile for this request, a name given to
                                gsmrt_model_load_profile; NULL (default): the session's own
                                calibration (gsm config calibration_path), or none */
    bool dense;              /* default false: true runs this request with dense attention in a GSM
                                session (same cache; for comparisons against dense) */
    bool parse_special;      /* raw completion only (gsmrt_session_complete, gsmrt_complete_batch):
                                default false, the prompt is plain text; true: control-token text in
                                it ("<|end|>") becomes those control tokens, as llama.cpp's prompts.
                                Chat messages are never parsed: only the format's own markers are
                                control tokens there. */
    uint32_t cancel_step;    /* prompt tokens evaluated per step between checks for
                                gsmrt_session_cancel: 0 (default): 64, so a cancel takes effect
                                within 64 prompt tokens; larger values (up to the session's
                                n_batch) prefill faster (256: about a third less time on
                                lavapipe) for requests nobody cancels. */
} gsmrt_generate_params;
GSMRT_API void gsmrt_generate_params_init(gsmrt_generate_params *p, size_t size);

/* One streamed piece of the answer: `text` holds whole UTF-8 characters only
 * (bytes of a character split across tokens are held back until complete);
 * it may be empty. Not NUL-terminated; valid during the call. */
typedef struct gsmrt_token {
    int32_t id;
    const char *text;
    size_t text_len;
    uint32_t index;   /* 0 for the first generated token */
} gsmrt_token;

/* Called on the generating thread after each token; return false to stop. */
typedef bool (*gsmrt_token_cb)(void *user, const gsmrt_token *tok);

typedef enum gsmrt_stop {
    GSMRT_STOP_EOS = 0,         /* the model ended its turn */
    GSMRT_STOP_MAX_TOKENS = 1,
    GSMRT_STOP_CALLBACK = 2,    /* the callback returned false */
    GSMRT_STOP_CANCELLED = 3,   /* gsmrt_session_cancel during generation */
    GSMRT_STOP_CONTEXT_END = 4  /* the context is full */
} gsmrt_stop;

typedef struct gsmrt_generate_result {
    uint32_t struct_size;
    uint32_t n_prompt_tokens;   /* evaluated for this call (not already in the cache) */
    uint32_t n_tokens;          /* generated */
    gsmrt_stop stop;
    uint32_t n_past;            /* positions in the cache afterwards */
    double prompt_ms;           /* prompt evaluation */
    double first_token_ms;      /* from the call to the first generated token */
    double generate_ms;         /* generation after the first token */
    uint32_t gsm_steps;         /* decode steps that went through the GSM gate */
    uint64_t gsm_cold_pages;    /* cold pages offered to the gate (summed over those steps and heads) */
    uint64_t gsm_cold_computed; /* of those, the ones the gate had computed */
} gsmrt_generate_result;

/* Chat: renders the history in the model's chat format, evaluates what the
 * cache does not hold yet, and generates the assistant's answer, streaming
 * it to on_token (may be NULL). The answer (complete or partial) is appended
 * to the history as an assistant message. params and result may be NULL.
 * Returns GSMRT_OK for every stop reason (see result->stop);
 * GSMRT_E_CONTEXT_FULL when the prompt does not fit (nothing changed);
 * GSMRT_E_CANCELLED when cancelled before the first token (history and
 * cache as before the call); GSMRT_E_UNSUPPORTED when the model has no chat
 * format (its template was not recognised and none was chosen); device
 * errors. Message content is always text: only the format's own markers
 * become control tokens. */
GSMRT_API gsmrt_status gsmrt_session_generate(gsmrt_session *s, const gsmrt_generate_params *params,
                                              gsmrt_token_cb on_token, void *user,
                                              gsmrt_generate_result *result);

/* Raw completion: continues `prompt` (plain text, no chat format; a BOS is
 * added when the model wants one) from an empty cache. Same results as
 * gsmrt_session_generate; the chat history is not touched but the cache is
 * replaced. */
GSMRT_API gsmrt_status gsmrt_session_complete(gsmrt_session *s, const char *prompt,
                                              const gsmrt_generate_params *params, gsmrt_token_cb on_token,
                                              void *user, gsmrt_generate_result *result);

/* Teacher forcing, for measurements: appends tokens[0..n) to the session's
 * cache after what it holds (gsmrt_session_reset first for a fresh start),
 * step_tokens at a time (1: one decode step per token, so GSM's gate takes
 * part, as in generation; 0: n_batch, a prompt's steps). With logits
 * non-NULL, the logits after every token go to logits[n][n_vocab].
 * GSMRT_E_CONTEXT_FULL when the tokens do not fit (nothing changed);
 * GSMRT_E_INVALID_ARGUMENT for a token outside the vocabulary. On a device
 * error the cache keeps the tokens fed before it. */
GSMRT_API gsmrt_status gsmrt_session_feed(gsmrt_session *s, const int32_t *tokens, size_t n, uint32_t step_tokens,
                                          float *logits);

/* Continuous batching: raw completions of n sessions (distinct, of one
 * model) generated together, on the scheduler (gsmrt_scheduler_*) with
 * each session as the slot of its prompt. Each result is that of
 * gsmrt_session_complete from an empty cache, but what the cache already
 * holds of the prompt is reused; the prompts are evaluated in chunks in the
 * same passes as the decodes of the sequences already generating, and every
 * pass runs all of them (weights once for all, attention per sequence over
 * its own cache). Sequences leave as they stop; prompt_ms of each counts
 * from the call. on_token gets the sequence's index; results (may be NULL)
 * has n entries. n is at most the smallest n_batch of the sessions.
 * GSMRT_OK when every sequence ended by a stop reason; otherwise the first
 * failure's status (a failed sequence's cache is rolled back, the others
 * keep their answers). GSMRT_E_INVALID_ARGUMENT for n = 0, a NULL, a session
 * listed twice or of another model. */
typedef bool (*gsmrt_batch_token_cb)(void *user, size_t index, const gsmrt_token *tok);
GSMRT_API gsmrt_status gsmrt_complete_batch(gsmrt_session *const *sessions, const char *const *prompts, size_t n,
                                            const gsmrt_generate_params *params, gsmrt_batch_token_cb on_token,
                                            void *user, gsmrt_generate_result *results);

/* What GSM did in a session, totals since it was created (all zero for a
 * dense session). "Pages" count (page, layer) pairs. Set out->struct_size
 * first; fields past it are not written. GSMRT_E_INVALID_ARGUMENT for NULL
 * arguments or a struct_size below 4. Reads only: any time the session is
 * not generating on another thread (from its token callback is fine). */
typedef struct gsmrt_gsm_stats {
    uint32_t struct_size;
    bool enabled;                  /* the session runs GSM */
    bool swap;                     /* cold pages sit in another memory (low_freq_policy swap) */
    uint64_t steps;                /* decode steps that went through the gate */
    uint64_t pages_active;         /* sink/window pages attended exactly */
    uint64_t pages_gated;          /* other pages offered to the gate (HOT kept + COLD) */
    uint64_t pages_cold;           /* of those, COLD pages */
    uint64_t pages_cold_computed;  /* COLD pages at least one head computed */
    uint64_t head_gates, head_gates_fired;   /* (layer, head) gates; those that computed a gated page */
    uint64_t bytes_read_hot;       /* KV bytes read from the device-local tier */
    uint64_t bytes_read_cold;      /* ... from the cold tier (host-visible under swap) */
    uint64_t bytes_read_dense;     /* what dense attention would have read in those steps */
    uint64_t prefetch_hits;        /* prefetched pages then read from the hot tier */
    uint64_t prefetch_misses;      /* cold pages read across the bus (swap) */
    uint64_t pages_demoted, pages_promoted, pages_prefetched;
    double skipped_bound_max;      /* largest bound on the attention share any head skipped */
    double skipped_bound_mean;     /* mean of that bound over the head gates */
    uint64_t kv_device_bytes;      /* KV pool bytes held in device-local memory */
    uint64_t kv_host_bytes;        /* KV pool bytes held in host-visible memory (swap) */
    uint64_t layer_steps;          /* steps x layers */
    uint64_t layer_steps_dense;    /* of those, layers that ran dense because the gate saved nothing
                                      (dense_fallback) */
} gsmrt_gsm_stats;
GSMRT_API gsmrt_status gsmrt_session_gsm_stats(const gsmrt_session *s, gsmrt_gsm_stats *out);

/* Asks a running generate/complete to stop as soon as possible. Any thread,
 * any time; a no-op when nothing runs (the flag clears at the next call). */
GSMRT_API void gsmrt_session_cancel(gsmrt_session *s);

/* Perplexity of UTF-8 text as llama.cpp's perplexity tool computes it: the
 * tokens (with BOS) are cut into windows of n_ctx; each window is evaluated
 * from an empty cache and only the second half of its positions is scored.
 * GSMRT_E_INVALID_ARGUMENT when the text has fewer than 2 * n_ctx tokens... */
typedef struct gsmrt_perplexity_result {
    uint32_t struct_size;
    double ppl;
    double nll_sum;       /* natural log */
    uint32_t n_scored;    /* tokens scored */
    uint32_t n_windows;
} gsmrt_perplexity_result;
GSMRT_API gsmrt_status gsmrt_session_perplexity(gsmrt_session *s, const char *text, size_t len, uint32_t n_ctx,
                                                gsmrt_progress_cb progress, void *user,
                                                gsmrt_perplexity_result *result);

/* ---- scheduler: continuous batching of independent requests --------------
 * A scheduler owns `n_parallel + n_cached` sequence slots on one model (each
 * a KV cache of n_ctx positions) and one forward pass. Requests are submitted
 * at any time, from any thread; the thread that owns the scheduler calls
 * gsmrt_scheduler_step in a loop. Every step is one batched pass over the
 * model: one decode token of every running request plus a chunk of the
 * prompts of joining requests (weights read once for all of them, attention
 * per sequence over its own cache). A request finishes and leaves while the
 * others go on; its slot then keeps its tokens as a cached sequence, so a
 * later request whose prompt shares a prefix with it (a conversation that
 * goes on, a common system prompt) evaluates only what follows the shared
 * prefix. Idle slots are reused least recently used first.
 *
 *     gsmrt_scheduler *sc;
 *     gsmrt_scheduler_params sp;
 *     gsmrt_scheduler_params_init(&sp, sizeof sp);
 *     sp.n_parallel = 4;
 *     gsmrt_scheduler_create(model, &sp, &sc);
 *     gsmrt_request_params rp;
 *     gsmrt_request_params_init(&rp, sizeof rp);
 *     rp.prompt = "Once upon a time";
 *     rp.on_token = print_piece;          // any gsmrt_token_cb
 *     uint64_t id;
 *     gsmrt_scheduler_submit(sc, &rp, &id);
 *     bool busy = true;
 *     while (busy) gsmrt_scheduler_step(sc, &busy);
 *     gsmrt_scheduler_destroy(sc);
 */
typedef struct gsmrt_scheduler gsmrt_scheduler;

typedef struct gsmrt_scheduler_params {
    uint32_t struct_size;
    uint32_t n_parallel;   /* requests generating at once; default 4, 1..256 */
    uint32_t n_cached;     /* extra slots that only keep finished sequences for prefix reuse,
                              0..256; params_init sets UINT32_MAX, which means n_parallel */
    uint32_t n_ctx;        /* positions per sequence; 0 (default): min(4096, the model's) */
    uint32_t n_batch;      /* tokens per step (decodes + prompt chunks); 0 (default): 256;
                              at least n_parallel + 1 */
    uint32_t max_queued;   /* requests waiting for a slot; default 64 (submit beyond: GSMRT_E_BUSY,
                              the message "queue full ...") */
    bool gsm;              /* GSM for every slot, as gsmrt_session_params */
    const char *gsm_config;
    const char *gsm_settings;
} gsmrt_scheduler_params;
GSMRT_API void gsmrt_scheduler_params_init(gsmrt_scheduler_params *p, size_t size);

/* One message of a chat request. Content is text: it is tokenized with
 * special-token parsing off, so markup written in it never becomes a
 * control token. */
typedef struct gsmrt_message {
    gsmrt_role role;
    const char *content;   /* NUL-terminated UTF-8 */
} gsmrt_message;

typedef enum gsmrt_finish {
    GSMRT_FINISH_STOP = 0,       /* end of turn, or the token callback returned false */
    GSMRT_FINISH_LENGTH = 1,     /* max_tokens, or the sequence's context is full */
    GSMRT_FINISH_CANCELLED = 2,  /* gsmrt_scheduler_cancel */
    GSMRT_FINISH_ERROR = 3       /* see status and error */
} gsmrt_finish;

typedef struct gsmrt_request_result {
    uint32_t struct_size;
    uint64_t id;
    gsmrt_finish finish;
    gsmrt_status status;         /* GSMRT_OK unless finish is ERROR */
    char error[256];             /* the message when finish is ERROR */
    uint32_t n_prompt_tokens;    /* the whole prompt */
    uint32_t n_prompt_cached;    /* of those, served from a cached sequence (not evaluated) */
    uint32_t n_tokens;           /* generated */
    double queue_ms;             /* from submit to a slot */
    double first_token_ms;       /* from submit to the first generated token (0: none) */
    double total_ms;             /* from submit to the end */
} gsmrt_request_result;

/* Called once per request when it leaves, on the stepping thread. */
typedef void (*gsmrt_request_done_cb)(void *user, const gsmrt_request_result *result);

typedef struct gsmrt_request_params {
    uint32_t struct_size;
    const char *prompt;                /* raw completion (a BOS added when the model wants one) ... */
    const gsmrt_message *messages;     /* ... or, with prompt NULL, a chat rendered in the model's format
                                          with the assistant's turn opened */
    size_t n_messages;
    gsmrt_generate_params gen;         /* sampling, max_tokens, ignore_eos, GSM profile, dense */
    gsmrt_token_cb on_token;           /* each token, on the stepping thread; false stops the request */
    gsmrt_request_done_cb on_done;     /* when it leaves (also after a failure) */
    void *user;                        /* given to both */
} gsmrt_request_params;
/* Defaults: no prompt, no messages, gen as gsmrt_generate_params_init. */
GSMRT_API void gsmrt_request_params_init(gsmrt_request_params *p, size_t size);

/* Creates the slots (n_parallel + n_cached KV caches) and the forward pass.
 * Errors as gsmrt_session_create; GSMRT_E_INVALID_ARGUMENT for a value out of
 * range (the message names the field). The scheduler belongs to the model
 * (destroy it first); nothing else may use the model's context while a step
 * runs. */
GSMRT_API gsmrt_status gsmrt_scheduler_create(gsmrt_model *model, const gsmrt_scheduler_params *p,
                                              gsmrt_scheduler **out);
/* Finishes every request still queued or running as cancelled (their
 * on_done is called here), then frees everything. NULL is fine. */
GSMRT_API void gsmrt_scheduler_destroy(gsmrt_scheduler *sc);

/* Queues a request; any thread (a custom allocator in the context params
 * must then be thread-safe). The prompt is tokenized here, so bad input
 * fails now: GSMRT_E_INVALID_ARGUMENT (no prompt or messages, invalid UTF-8,
 * a bad role; message in err), GSMRT_E_CONTEXT_FULL (the prompt leaves no
 * room for an answer in n_ctx, or the queue is full: the message says
 * which). On success *id identifies it (never 0) and on_done will be called
 * exactly once; on failure neither callback is ever called. The strings and
 * messages are copied. err/err_size may be NULL/0. */
GSMRT_API gsmrt_status gsmrt_scheduler_submit(gsmrt_scheduler *sc, const gsmrt_request_params *p, uint64_t *id,
                                              char *err, size_t err_size);

/* Asks request `id` to stop as soon as possible (before its next token, or
 * between its prompt chunks); it then leaves with GSMRT_FINISH_CANCELLED.
 * Any thread; returns false when no such request is queued or running. */
GSMRT_API bool gsmrt_scheduler_cancel(gsmrt_scheduler *sc, uint64_t id);

/* One step: admits queued requests to free slots, evaluates one batched
 * pass, streams the tokens, finishes the requests that stop. On the owning
 * thread only. *busy (may be NULL) is true while requests remain queued or
 * running (false: nothing to do; the call returned at once). A device
 * error fails the requests of that pass (on_done with FINISH_ERROR) and is
 * returned; the scheduler stays usable. */
GSMRT_API gsmrt_status gsmrt_scheduler_step(gsmrt_scheduler *sc, bool *busy);

/* Counters since creation. Any thread. */
typedef struct gsmrt_scheduler_stats {
    uint32_t struct_size;
    uint32_t n_parallel, n_slots, n_ctx;
    uint32_t queued, running;           /* now */
    uint32_t cached_sequences;          /* idle slots holding a sequence now */
    uint64_t requests_submitted, requests_finished, requests_cancelled, requests_failed;
    uint64_t prompt_tokens;             /* asked for (whole prompts) */
    uint64_t prompt_tokens_evaluated;   /* evaluated (the rest came from cached sequences) */
    uint64_t prompt_tokens_cached;      /* served from cached sequences */
    uint64_t prefix_hits;               /* requests that reused a cached prefix */
    uint64_t cache_evictions;           /* cached sequences dropped for another request */
    uint64_t generated_tokens;
    uint64_t steps;                     /* batched passes */
    uint64_t kv_device_bytes;           /* KV bytes of all slots in device-local memory */
    uint64_t kv_host_bytes;             /* ... in host-visible memory (GSM swap) */
    uint64_t gsm_steps;                 /* decode steps that went through the GSM gate, all slots */
    uint64_t gsm_pages_gated, gsm_pages_cold, gsm_pages_cold_computed;
} gsmrt_scheduler_stats;
GSMRT_API gsmrt_status gsmrt_scheduler_get_stats(gsmrt_scheduler *sc, gsmrt_scheduler_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* GSMRT_H */
