/* gguf.h -- a defensive GGUF v2/v3 reader over a read-only mapping.
 *
 * File layout (little-endian; the full key and tensor tables for deepseek2
 * are in shared/docs/deepseek2-gguf.md §1-4):
 *
 *   magic "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
 *   n_kv x      { string key | u32 value type | value }
 *   n_tensors x { string name | u32 n_dims | n_dims x i64 ne | u32 ggml type | u64 offset }
 *   padding to general.alignment (u32, power of two, default 32), counted from byte 0
 *   tensor data: each tensor at data_start + offset (offset a multiple of the alignment)
 *
 *   string = u64 byte length + bytes (no NUL); array = u32 element type + u64 count +
 *   elements (arrays of arrays are rejected, as ggml does).
 *
 * What open checks, so that users of the accessors need not: every count,
 * length and offset against the end of the file with overflow-safe
 * arithmetic; value and element types; unique keys and tensor names;
 * general.alignment; n_dims 1..4; ne >= 0 and the element count and byte
 * size without overflow; tensor type one of gguf/wtype_table.def's (any
 * other is refused as GSMRT_E_UNSUPPORTED, naming the tensor and the type);
 * whole blocks per row for block types;
 * offsets aligned; data inside the file; no two tensors overlapping. Bytes
 * after the last tensor's data are allowed (padding).
 *
 * Errors: GSMRT_E_FORMAT for a malformed file, GSMRT_E_UNSUPPORTED for a
 * tensor of a known ggml type this runtime does not run, GSMRT_E_IO when
 * the file cannot be opened or mapped, GSMRT_E_OUT_OF_HOST_MEMORY when an
 * allocation fails, GSMRT_E_INVALID_ARGUMENT for NULL arguments. Every
 * message starts with the file's path (or the name given to open_memory).
 * On failure *out is NULL and nothing is leaked.
 *
 * Ownership: every pointer an accessor returns (keys, strings, tensor data,
 * array data) points into the mapping and lives until gsmrt_gguf_close. Data
 * pointers are NOT aligned beyond the file's alignment and values inside
 * metadata are unaligned little-endian: read them with memcpy or use the
 * typed getters. A gsmrt_gguf is immutable after open: the accessors may be
 * called from several threads at once. */
#ifndef GSMRT_GGUF_GGUF_H
#define GSMRT_GGUF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Metadata value types, as stored in the file. */
enum gsmrt_gguf_type {
    GSMRT_GGUF_TYPE_U8 = 0,
    GSMRT_GGUF_TYPE_I8 = 1,
    GSMRT_GGUF_TYPE_U16 = 2,
    GSMRT_GGUF_TYPE_I16 = 3,
    GSMRT_GGUF_TYPE_U32 = 4,
    GSMRT_GGUF_TYPE_I32 = 5,
    GSMRT_GGUF_TYPE_F32 = 6,
    GSMRT_GGUF_TYPE_BOOL = 7,
    GSMRT_GGUF_TYPE_STRING = 8,
    GSMRT_GGUF_TYPE_ARRAY = 9,
    GSMRT_GGUF_TYPE_U64 = 10,
    GSMRT_GGUF_TYPE_I64 = 11,
    GSMRT_GGUF_TYPE_F64 = 12
};

/* Tensor types this reader accepts (ggml's numbering). */
enum gsmrt_ggml_type {
    GSMRT_GGML_TYPE_F32 = 0,
    GSMRT_GGML_TYPE_F16 = 1,
    GSMRT_GGML_TYPE_Q8_0 = 8   /* blocks of 32: f16 scale + 32 x i8 = 34 bytes */
};

#define GSMRT_GGUF_DEFAULT_ALIGNMENT 32u
#define GSMRT_GGUF_MAX_DIMS 4
#define GSMRT_GGUF_MAX_NAME 64   /* tensor name bytes incl. NUL, as ggml's GGML_MAX_NAME */

/* A string inside the mapping: not NUL-terminated. */
struct gsmrt_gguf_str {
    const char *ptr;
    uint64_t len;
};

struct gsmrt_gguf_kv {
    struct gsmrt_gguf_str key;
    uint32_t type;          /* enum gsmrt_gguf_type */
    uint32_t arr_type;      /* element type when type is ARRAY, else 0 */
    uint64_t arr_count;     /* elements when type is ARRAY, else 0 */
    const void *value;      /* scalar: its bytes; STRING: the characters; ARRAY: the first element */
    uint64_t value_bytes;   /* scalar: its size; STRING: its length; ARRAY: all elements' bytes
                             * (for a string array: the lengths and characters together) */
};

struct gsmrt_gguf_tensor {
    char name[GSMRT_GGUF_MAX_NAME];   /* NUL-terminated copy of the file's name */
    uint32_t n_dims;                  /* 1..4 */
    int64_t ne[GSMRT_GGUF_MAX_DIMS];  /* ggml order: ne[0] contiguous; dims past n_dims are 1 */
    uint32_t type;                    /* enum gsmrt_ggml_type */
    uint64_t offset;                  /* from the data start, a multiple of the alignment */
    uint64_t data_bytes;
    const void *data;                 /* into the mapping, data_bytes long */
};

struct gsmrt_gguf;

/* Maps `path` read-only and parses it. `a` may be NULL (libc); it is copied. */
gsmrt_status gsmrt_gguf_open(const char *path, const gsmrt_allocator *a, struct gsmrt_gguf **out,
                             struct gsmrt_err *err);
/* Parses `size` bytes at `data` without copying them: the caller keeps them
 * alive and unchanged until close. `name` (copied) starts every message. */
gsmrt_status gsmrt_gguf_open_memory(const void *data, size_t size, const char *name,
                                    const gsmrt_allocator *a, struct gsmrt_gguf **out,
                                    struct gsmrt_err *err);
void gsmrt_gguf_close(struct gsmrt_gguf *g);   /* NULL is fine */

const char *gsmrt_gguf_name(const struct gsmrt_gguf *g);   /* the path or memory name */
uint32_t gsmrt_gguf_version(const struct gsmrt_gguf *g);
uint32_t gsmrt_gguf_alignment(const struct gsmrt_gguf *g);
uint64_t gsmrt_gguf_file_bytes(const struct gsmrt_gguf *g);
uint64_t gsmrt_gguf_data_offset(const struct gsmrt_gguf *g);   /* absolute start of tensor data */
uint64_t gsmrt_gguf_trailing_bytes(const struct gsmrt_gguf *g);   /* after the last tensor's data */

/* ---- metadata ---------------------------------------------------------- */

uint64_t gsmrt_gguf_n_kv(const struct gsmrt_gguf *g);
const struct gsmrt_gguf_kv *gsmrt_gguf_kv_at(const struct gsmrt_gguf *g, uint64_t i);   /* NULL if out of range */
const struct gsmrt_gguf_kv *gsmrt_gguf_find_kv(const struct gsmrt_gguf *g, const char *key);   /* NULL if absent */

/* "u32", "string", "array" ...; "unknown" for a value out of range. */
const char *gsmrt_gguf_type_name(uint32_t type);
/* ggml names: "F32", "Q4_K", "BF16" ...; NULL for a number ggml does not define. */
const char *gsmrt_ggml_type_name(uint32_t type);

/* Typed getters. The stored type must match exactly (as llama.cpp requires:
 * a u32 key stored as i32 or u64 is an error naming the key and both types).
 * Plain getters fail with GSMRT_E_FORMAT when the key is absent; the _opt
 * ones store `def` then. *out is written only on success. */
gsmrt_status gsmrt_gguf_get_u8(const struct gsmrt_gguf *g, const char *key, uint8_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_i8(const struct gsmrt_gguf *g, const char *key, int8_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_u16(const struct gsmrt_gguf *g, const char *key, uint16_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_i16(const struct gsmrt_gguf *g, const char *key, int16_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_u32(const struct gsmrt_gguf *g, const char *key, uint32_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_i32(const struct gsmrt_gguf *g, const char *key, int32_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_u64(const struct gsmrt_gguf *g, const char *key, uint64_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_i64(const struct gsmrt_gguf *g, const char *key, int64_t *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_f32(const struct gsmrt_gguf *g, const char *key, float *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_f64(const struct gsmrt_gguf *g, const char *key, double *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_bool(const struct gsmrt_gguf *g, const char *key, bool *out, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_str(const struct gsmrt_gguf *g, const char *key, struct gsmrt_gguf_str *out,
                                struct gsmrt_err *err);

gsmrt_status gsmrt_gguf_get_u32_opt(const struct gsmrt_gguf *g, const char *key, uint32_t def, uint32_t *out,
                                    struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_i32_opt(const struct gsmrt_gguf *g, const char *key, int32_t def, int32_t *out,
                                    struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_u64_opt(const struct gsmrt_gguf *g, const char *key, uint64_t def, uint64_t *out,
                                    struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_f32_opt(const struct gsmrt_gguf *g, const char *key, float def, float *out,
                                    struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_bool_opt(const struct gsmrt_gguf *g, const char *key, bool def, bool *out,
                                     struct gsmrt_err *err);
/* def may be NULL ({NULL, 0} is stored then). */
gsmrt_status gsmrt_gguf_get_str_opt(const struct gsmrt_gguf *g, const char *key, const char *def,
                                    struct gsmrt_gguf_str *out, struct gsmrt_err *err);

/* Arrays. get_arr_info: the key must be an array; gives its element type and
 * count. get_arr: the elements must be of the numeric type `elem_type`;
 * *data points at `count` packed little-endian elements (unaligned).
 * get_arr_str: the elements must be strings; fills out[0..count-1], and
 * fails if n_out < count. */
gsmrt_status gsmrt_gguf_get_arr_info(const struct gsmrt_gguf *g, const char *key, uint32_t *elem_type,
                                     uint64_t *count, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_arr(const struct gsmrt_gguf *g, const char *key, uint32_t elem_type,
                                const void **data, uint64_t *count, struct gsmrt_err *err);
gsmrt_status gsmrt_gguf_get_arr_str(const struct gsmrt_gguf *g, const char *key, struct gsmrt_gguf_str *out,
                                    uint64_t n_out, struct gsmrt_err *err);

/* A "key or array" u32 (fact sheet §1, k/arr): either one u32 applied to all
 * `n_layer` blocks, or an array of u32 (or non-negative i32) with exactly
 * n_layer entries. Fills out[0..n_layer-1]. Absent: fails if `required`,
 * else fills `def`. */
gsmrt_status gsmrt_gguf_get_u32_per_layer(const struct gsmrt_gguf *g, const char *key, uint32_t n_layer,
                                          bool required, uint32_t def, uint32_t *out, struct gsmrt_err *err);

/* ---- tensors ----------------------------------------------------------- */

uint64_t gsmrt_gguf_n_tensors(const struct gsmrt_gguf *g);
/* NULL if out of range / absent */
const struct gsmrt_gguf_tensor *gsmrt_gguf_tensor_at(const struct gsmrt_gguf *g, uint64_t i);
const struct gsmrt_gguf_tensor *gsmrt_gguf_find_tensor(const struct gsmrt_gguf *g, const char *name);
/* The tensor's bytes were copied out (to the device) and will not be read
 * again soon: a mapped file's pages of it leave the process's resident set,
 * so loading does not hold the file twice (a later read maps them back from
 * the file). Nothing for a file opened from memory. */
void gsmrt_gguf_release_tensor(const struct gsmrt_gguf *g, const struct gsmrt_gguf_tensor *t);

#endif
