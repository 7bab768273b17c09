/* gguf.c -- GGUF v2/v3 parser and tensor directory (see gguf.h for the layout
 * and the list of checks). Owns the mapping, the key and tensor tables and two
 * hash indexes; never copies tensor data and never touches a device. Every
 * read goes through the cursor below, which checks the remaining bytes first;
 * every size that comes from the file is combined with checked arithmetic.
 * The typed getters (exact-type scalars, strings, arrays) are in gguf_kv.c. */
#include "gguf/gguf.h"
#include "gguf/wtype.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads little-endian values with memcpy: port it before using a big-endian host"
#endif

/* Keys and names in messages are cut to this many bytes. */
#define MSG_NAME_MAX 200

struct gsmrt_gguf {
    gsmrt_allocator alloc;   /* copy of the caller's; zeroed = libc */
    char *name;              /* path or memory name, owned */
    const uint8_t *base;     /* the file's bytes */
    size_t size;
    void *map;               /* the mmap, or NULL for open_memory */
    size_t map_bytes;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t data_end;       /* absolute end of the last tensor's data */
    uint64_t n_kv;
    struct gsmrt_gguf_kv *kv;        /* [n_kv] */
    uint64_t n_tensors;
    struct gsmrt_gguf_tensor *tensors;   /* [n_tensors] */
    size_t kv_hash_cap, t_hash_cap;  /* powers of two */
    size_t *kv_hash, *t_hash;        /* index + 1, 0 = empty */
};

/* ---- names --------------------------------------------------------------- */

const char *gsmrt_gguf_type_name(uint32_t type)
{
    static const char *const names[] = {"u8",  "i8",   "u16",    "i16",   "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

const char *gsmrt_ggml_type_name(uint32_t type)
{
    /* ggml's enum ggml_type; gaps are removed types. */
    static const char *const names[] = {
        "F32",     "F16",    "Q4_0",    "Q4_1",   NULL,     NULL,     "Q5_0",   "Q5_1",
        "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",   "Q4_K",   "Q5_K",   "Q6_K",   "Q8_K",
        "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",  "IQ2_S",  "IQ4_XS",
        "I8",      "I16",    "I32",     "I64",    "F64",    "IQ1_M",  "BF16",   NULL,
        NULL,      NULL,     "TQ1_0",   "TQ2_0",  NULL,     NULL,     NULL,     "MXFP4"};
    return type < sizeof names / sizeof names[0] ? names[type] : NULL;
}

static size_t scalar_bytes(uint32_t type)   /* 0 for STRING, ARRAY and unknown */
{
    switch (type) {
    case GSMRT_GGUF_TYPE_U8: case GSMRT_GGUF_TYPE_I8: case GSMRT_GGUF_TYPE_BOOL: return 1;
    case GSMRT_GGUF_TYPE_U16: case GSMRT_GGUF_TYPE_I16: return 2;
    case GSMRT_GGUF_TYPE_U32: case GSMRT_GGUF_TYPE_I32: case GSMRT_GGUF_TYPE_F32: return 4;
    case GSMRT_GGUF_TYPE_U64: case GSMRT_GGUF_TYPE_I64: case GSMRT_GGUF_TYPE_F64: return 8;
    default: return 0;
    }
}

static int msg_len(uint64_t len) { return len > MSG_NAME_MAX ? MSG_NAME_MAX : (int)len; }

static uint64_t hash_bytes(const void *p, size_t n)   /* FNV-1a */
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ---- the cursor ---------------------------------------------------------- */

struct cur {
    const uint8_t *p;
    size_t size, pos;
};

static size_t left(const struct cur *c) { return c->size - c->pos; }

static bool rd(struct cur *c, void *dst, size_t n)
{
    if (left(c) < n) return false;
    memcpy(dst, c->p + c->pos, n);
    c->pos += n;
    return true;
}

static gsmrt_status truncated(const struct cur *c, struct gsmrt_err *err, const char *what)
{
    return gsmrt_err_set(err, GSMRT_E_FORMAT, "file truncated at byte %zu (of %zu) while reading %s", c->pos,
                         c->size, what);
}

/* A string: u64 length, then that many bytes, which must lie inside the file. */
static gsmrt_status rd_str(struct cur *c, struct gsmrt_gguf_str *s, struct gsmrt_err *err, const char *what)
{
    uint64_t len;
    if (!rd(c, &len, sizeof len)) return truncated(c, err, what);
    if (len > left(c))
        return gsmrt_err_set(err, GSMRT_E_FORMAT,
                             "%s: string length %llu at byte %zu runs past the end of the file (%zu bytes left)",
                             what, (unsigned long long)len, c->pos - 8, left(c));
    s->ptr = (const char *)c->p + c->pos;
    s->len = len;
    c->pos += (size_t)len;
    return GSMRT_OK;
}

/* ---- hash indexes ---------------------------------------------------------- */

static size_t hash_cap_for(uint64_t n)
{
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;   /* n is bounded by the file size / 12 */
    return cap;
}

/* Inserts index i under key (p, n); returns the index already there (+1) on a
 * duplicate, else 0. */
static size_t hash_insert(size_t *tab, size_t cap, const void *p, size_t n, size_t i,
                          const void *(*key_of)(const struct gsmrt_gguf *, size_t, size_t *),
                          const struct gsmrt_gguf *g)
{
    size_t h = (size_t)hash_bytes(p, n) & (cap - 1);
    for (;; h = (h + 1) & (cap - 1)) {
        if (tab[h] == 0) {
            tab[h] = i + 1;
            return 0;
        }
        size_t on;
        const void *op = key_of(g, tab[h] - 1, &on);
        if (on == n && memcmp(op, p, n) == 0) return tab[h];
    }
}

static const void *kv_key_of(const struct gsmrt_gguf *g, size_t i, size_t *n)
{
    *n = (size_t)g->kv[i].key.len;
    return g->kv[i].key.ptr;
}

static const void *tensor_key_of(const struct gsmrt_gguf *g, size_t i, size_t *n)
{
    *n = strlen(g->tensors[i].name);
    return g->tensors[i].name;
}

static size_t hash_find(const size_t *tab, size_t cap, const char *key,
                        const void *(*key_of)(const struct gsmrt_gguf *, size_t, size_t *),
                        const struct gsmrt_gguf *g)
{
    if (!tab) return 0;
    size_t n = strlen(key);
    size_t h = (size_t)hash_bytes(key, n) & (cap - 1);
    for (;; h = (h + 1) & (cap - 1)) {
        if (tab[h] == 0) return 0;
        size_t on;
        const void *op = key_of(g, tab[h] - 1, &on);
        if (on == n && memcmp(op, key, n) == 0) return tab[h];
    }
}

/* ---- parsing ------------------------------------------------------------- */

static gsmrt_status parse_value(struct cur *c, struct gsmrt_gguf_kv *kv, struct gsmrt_err *err)
{
    const char *key = kv->key.ptr;
    int kl = msg_len(kv->key.len);
    if (kv->type == GSMRT_GGUF_TYPE_STRING) {
        struct gsmrt_gguf_str s;
        gsmrt_status st = rd_str(c, &s, err, "string value");
        if (st != GSMRT_OK) {
            gsmrt_err_prefix(err, "key '%.*s': ", kl, key);
            return st;
        }
        kv->value = s.ptr;
        kv->value_bytes = s.len;
        return GSMRT_OK;
    }
    if (kv->type != GSMRT_GGUF_TYPE_ARRAY) {
        size_t n = scalar_bytes(kv->type);
        if (n == 0)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "key '%.*s': invalid value type %u (valid: 0..12)", kl, key,
                                 kv->type);
        if (left(c) < n) {
            truncated(c, err, "a value");
            gsmrt_err_prefix(err, "key '%.*s': ", kl, key);
            return GSMRT_E_FORMAT;
        }
        kv->value = c->p + c->pos;
        kv->value_bytes = n;
        c->pos += n;
        return GSMRT_OK;
    }
    uint64_t count;
    if (!rd(c, &kv->arr_type, sizeof kv->arr_type) || !rd(c, &count, sizeof count)) {
        truncated(c, err, "an array header");
        gsmrt_err_prefix(err, "key '%.*s': ", kl, key);
        return GSMRT_E_FORMAT;
    }
    kv->arr_count = count;
    if (kv->arr_type == GSMRT_GGUF_TYPE_ARRAY)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key '%.*s': nested arrays are not allowed", kl, key);
    size_t start = c->pos;
    if (kv->arr_type == GSMRT_GGUF_TYPE_STRING) {
        /* each element takes at least its 8-byte length: bound the count first */
        if (count > left(c) / 8)
            return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                 "key '%.*s': array of %llu strings cannot fit in the %zu bytes left", kl, key,
                                 (unsigned long long)count, left(c));
        for (uint64_t i = 0; i < count; i++) {
            struct gsmrt_gguf_str s;
            gsmrt_status st = rd_str(c, &s, err, "array element");
            if (st != GSMRT_OK) {
                gsmrt_err_prefix(err, "key '%.*s': element %llu: ", kl, key, (unsigned long long)i);
                return st;
            }
        }
    } else {
        size_t n = scalar_bytes(kv->arr_type), bytes;
        if (n == 0)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "key '%.*s': invalid array element type %u", kl, key,
                                 kv->arr_type);
        if (count > SIZE_MAX || !gsmrt_size_mul((size_t)count, n, &bytes) || bytes > left(c))
            return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                 "key '%.*s': array of %llu x %s runs past the end of the file (%zu bytes left)",
                                 kl, key, (unsigned long long)count, gsmrt_gguf_type_name(kv->arr_type), left(c));
        c->pos += bytes;
    }
    kv->value = c->p + start;
    kv->value_bytes = c->pos - start;
    return GSMRT_OK;
}

static gsmrt_status parse_kvs(struct gsmrt_gguf *g, struct cur *c, struct gsmrt_err *err)
{
    /* smallest kv: 8-byte key length + 4-byte type + a 1-byte value */
    if (g->n_kv > left(c) / 13)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "n_kv %llu cannot fit in the %zu bytes left",
                             (unsigned long long)g->n_kv, left(c));
    g->kv = gsmrt_mem_calloc(&g->alloc, (size_t)g->n_kv, sizeof *g->kv);
    g->kv_hash_cap = hash_cap_for(g->n_kv);
    g->kv_hash = gsmrt_mem_calloc(&g->alloc, g->kv_hash_cap, sizeof *g->kv_hash);
    if ((!g->kv && g->n_kv) || !g->kv_hash)
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "out of host memory for %llu keys",
                             (unsigned long long)g->n_kv);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        struct gsmrt_gguf_kv *kv = &g->kv[i];
        gsmrt_status st = rd_str(c, &kv->key, err, "a key");
        if (st != GSMRT_OK) {
            gsmrt_err_prefix(err, "key #%llu: ", (unsigned long long)i);
            return st;
        }
        if (!rd(c, &kv->type, sizeof kv->type)) {
            truncated(c, err, "a value type");
            gsmrt_err_prefix(err, "key '%.*s': ", msg_len(kv->key.len), kv->key.ptr);
            return GSMRT_E_FORMAT;
        }
        size_t dup = hash_insert(g->kv_hash, g->kv_hash_cap, kv->key.ptr, (size_t)kv->key.len, (size_t)i,
                                 kv_key_of, g);
        if (dup)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "key '%.*s': duplicate (keys #%zu and #%llu)",
                                 msg_len(kv->key.len), kv->key.ptr, dup - 1, (unsigned long long)i);
        st = parse_value(c, kv, err);
        if (st != GSMRT_OK) return st;
    }
    return GSMRT_OK;
}

static gsmrt_status parse_alignment(struct gsmrt_gguf *g, struct gsmrt_err *err)
{
    g->alignment = GSMRT_GGUF_DEFAULT_ALIGNMENT;
    const struct gsmrt_gguf_kv *kv = gsmrt_gguf_find_kv(g, "general.alignment");
    if (!kv) return GSMRT_OK;
    if (kv->type != GSMRT_GGUF_TYPE_U32)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key 'general.alignment': expected type u32, found %s",
                             gsmrt_gguf_type_name(kv->type));
    uint32_t a;
    memcpy(&a, kv->value, sizeof a);
    if (a == 0 || (a & (a - 1)) != 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "key 'general.alignment': %u is not a power of two", a);
    g->alignment = a;
    return GSMRT_OK;
}

static gsmrt_status parse_tensor(struct gsmrt_gguf *g, struct cur *c, uint64_t i, struct gsmrt_err *err)
{
    struct gsmrt_gguf_tensor *t = &g->tensors[i];
    struct gsmrt_gguf_str name;
    gsmrt_status st = rd_str(c, &name, err, "a tensor name");
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "tensor #%llu: ", (unsigned long long)i);
        return st;
    }
    int nl = msg_len(name.len);
    if (name.len >= GSMRT_GGUF_MAX_NAME)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%.*s': name is %llu bytes long (at most %d)", nl,
                             name.ptr, (unsigned long long)name.len, GSMRT_GGUF_MAX_NAME - 1);
    if (memchr(name.ptr, '\0', (size_t)name.len))
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor #%llu: name contains a NUL byte",
                             (unsigned long long)i);
    memcpy(t->name, name.ptr, (size_t)name.len);
    t->name[name.len] = '\0';
    size_t dup = hash_insert(g->t_hash, g->t_hash_cap, t->name, (size_t)name.len, (size_t)i, tensor_key_of, g);
    if (dup)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%s': duplicate name (tensors #%zu and #%llu)", t->name,
                             dup - 1, (unsigned long long)i);

    if (!rd(c, &t->n_dims, sizeof t->n_dims)) goto trunc;
    if (t->n_dims < 1 || t->n_dims > GSMRT_GGUF_MAX_DIMS)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%s': n_dims %u (expected 1..%d)", t->name, t->n_dims,
                             GSMRT_GGUF_MAX_DIMS);
    for (int d = 0; d < GSMRT_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (!rd(c, &t->ne[d], sizeof t->ne[d])) goto trunc;
        if (t->ne[d] < 0)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%s': ne[%u] = %lld is negative", t->name, d,
                                 (long long)t->ne[d]);
    }
    if (!rd(c, &t->type, sizeof t->type) || !rd(c, &t->offset, sizeof t->offset)) goto trunc;

    const struct gsmrt_wtype_info *wt = gsmrt_wtype_find(t->type);
    if (!wt) {   /* refused by name: never read as another type */
        const char *tn = gsmrt_ggml_type_name(t->type);
        if (tn)
            return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "tensor '%s': type %s not supported (supported: %s)",
                                 t->name, tn, gsmrt_wtype_supported_list());
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%s': unknown type %u (supported: %s)", t->name,
                             t->type, gsmrt_wtype_supported_list());
    }
    uint64_t n_elem = 1;
    for (int d = 0; d < GSMRT_GGUF_MAX_DIMS; d++) {
        if (!gsmrt_u64_mul(n_elem, (uint64_t)t->ne[d], &n_elem) || n_elem > (uint64_t)INT64_MAX)
            return gsmrt_err_set(err, GSMRT_E_FORMAT,
                                 "tensor '%s': element count of [%lld, %lld, %lld, %lld] overflows", t->name,
                                 (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                                 (long long)t->ne[3]);
    }
    uint64_t bytes;
    if (t->ne[0] % wt->block_values != 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT,
                             "tensor '%s': type %s needs ne[0] to be a multiple of %u, got %lld", t->name, wt->name,
                             wt->block_values, (long long)t->ne[0]);
    bool ok = gsmrt_u64_mul(n_elem / wt->block_values, wt->block_bytes, &bytes);
    if (!ok)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%s': byte size of %llu elements overflows", t->name,
                             (unsigned long long)n_elem);
    t->data_bytes = bytes;
    if (t->offset % g->alignment != 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tensor '%s': offset %llu is not a multiple of the alignment %u",
                             t->name, (unsigned long long)t->offset, g->alignment);
    return GSMRT_OK;
trunc:
    truncated(c, err, "the tensor info");
    gsmrt_err_prefix(err, "tensor '%s': ", t->name);
    return GSMRT_E_FORMAT;
}

static int cmp_by_offset(const void *a, const void *b)
{
    const struct gsmrt_gguf_tensor *x = *(const struct gsmrt_gguf_tensor *const *)a;
    const struct gsmrt_gguf_tensor *y = *(const struct gsmrt_gguf_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->data_bytes != y->data_bytes) return x->data_bytes < y->data_bytes ? -1 : 1;
    return 0;
}

/* Places every tensor's data inside the file and checks that no two overlap. */
static gsmrt_status place_data(struct gsmrt_gguf *g, struct gsmrt_err *err)
{
    g->data_end = g->data_offset;
    if (g->n_tensors == 0) return GSMRT_OK;
    const struct gsmrt_gguf_tensor **order = gsmrt_mem_calloc(&g->alloc, (size_t)g->n_tensors, sizeof *order);
    if (!order) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "out of host memory sorting tensors");
    gsmrt_status st = GSMRT_OK;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct gsmrt_gguf_tensor *t = &g->tensors[i];
        uint64_t start, end;
        if (!gsmrt_u64_add(g->data_offset, t->offset, &start) || !gsmrt_u64_add(start, t->data_bytes, &end) ||
            end > g->size) {
            st = gsmrt_err_set(err, GSMRT_E_FORMAT,
                               "tensor '%s': data at offset %llu, %llu bytes, runs past the end of the file "
                               "(%llu bytes of data after the header)",
                               t->name, (unsigned long long)t->offset, (unsigned long long)t->data_bytes,
                               (unsigned long long)(g->size > g->data_offset ? g->size - g->data_offset : 0));
            goto done;
        }
        t->data = g->base + start;
        if (end > g->data_end) g->data_end = end;
        order[i] = t;
    }
    qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_by_offset);
    for (uint64_t i = 1; i < g->n_tensors; i++) {
        const struct gsmrt_gguf_tensor *p = order[i - 1], *t = order[i];
        if (p->offset + p->data_bytes > t->offset) {   /* both sums were checked above */
            st = gsmrt_err_set(err, GSMRT_E_FORMAT,
                               "tensor '%s': data [%llu, %llu) overlaps tensor '%s' [%llu, %llu)", t->name,
                               (unsigned long long)t->offset, (unsigned long long)(t->offset + t->data_bytes),
                               p->name, (unsigned long long)p->offset,
                               (unsigned long long)(p->offset + p->data_bytes));
            goto done;
        }
    }
done:
    gsmrt_mem_free(&g->alloc, order);
    return st;
}

static gsmrt_status parse(struct gsmrt_gguf *g, struct gsmrt_err *err)
{
    struct cur c = {g->base, g->size, 0};
    char magic[4];
    if (!rd(&c, magic, 4)) return truncated(&c, err, "the magic");
    if (memcmp(magic, "GGUF", 4) != 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")",
                             (unsigned char)magic[0], (unsigned char)magic[1], (unsigned char)magic[2],
                             (unsigned char)magic[3]);
    if (!rd(&c, &g->version, sizeof g->version)) return truncated(&c, err, "the version");
    if (g->version == 1)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "GGUF version 1 is not supported (expected 2 or 3)");
    if ((g->version & 0xffffu) == 0 && g->version != 0)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "GGUF version %u: a big-endian file (expected little-endian 2 or 3)",
                             g->version);
    if (g->version != 2 && g->version != 3)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "unknown GGUF version %u (expected 2 or 3)", g->version);
    if (!rd(&c, &g->n_tensors, sizeof g->n_tensors)) return truncated(&c, err, "n_tensors");
    if (!rd(&c, &g->n_kv, sizeof g->n_kv)) return truncated(&c, err, "n_kv");
    /* smallest tensor info: 8 (name length) + 4 (n_dims) + 8 (one ne) + 4 (type) + 8 (offset) */
    if (g->n_tensors > left(&c) / 32)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "n_tensors %llu cannot fit in the %zu bytes left",
                             (unsigned long long)g->n_tensors, left(&c));

    gsmrt_status st = parse_kvs(g, &c, err);
    if (st != GSMRT_OK) return st;
    st = parse_alignment(g, err);
    if (st != GSMRT_OK) return st;

    if (g->n_tensors > left(&c) / 32)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "n_tensors %llu cannot fit in the %zu bytes left",
                             (unsigned long long)g->n_tensors, left(&c));
    g->tensors = gsmrt_mem_calloc(&g->alloc, (size_t)g->n_tensors, sizeof *g->tensors);
    g->t_hash_cap = hash_cap_for(g->n_tensors);
    g->t_hash = gsmrt_mem_calloc(&g->alloc, g->t_hash_cap, sizeof *g->t_hash);
    if ((!g->tensors && g->n_tensors) || !g->t_hash)
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "out of host memory for %llu tensors",
                             (unsigned long long)g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        st = parse_tensor(g, &c, i, err);
        if (st != GSMRT_OK) return st;
    }
    /* c.pos <= size and alignment <= 2^31: no overflow in 64 bits */
    g->data_offset = gsmrt_align_up((uint64_t)c.pos, g->alignment);
    return place_data(g, err);
}

/* ---- open / close -------------------------------------------------------- */

static gsmrt_status create(const char *name, const gsmrt_allocator *a, struct gsmrt_gguf **out,
                           struct gsmrt_err *err)
{
    gsmrt_allocator al = {0};
    if (a) al = *a;
    struct gsmrt_gguf *g = gsmrt_mem_calloc(&al, 1, sizeof *g);
    if (!g) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
    g->alloc = al;
    g->name = gsmrt_mem_strdup(&al, name);
    if (!g->name) {
        gsmrt_mem_free(&al, g);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
    }
    *out = g;
    return GSMRT_OK;
}

void gsmrt_gguf_close(struct gsmrt_gguf *g)
{
    if (!g) return;
    gsmrt_allocator al = g->alloc;
    if (g->map) munmap(g->map, g->map_bytes);
    gsmrt_mem_free(&al, g->kv);
    gsmrt_mem_free(&al, g->kv_hash);
    gsmrt_mem_free(&al, g->tensors);
    gsmrt_mem_free(&al, g->t_hash);
    gsmrt_mem_free(&al, g->name);
    gsmrt_mem_free(&al, g);
}

static gsmrt_status finish(struct gsmrt_gguf *g, struct gsmrt_gguf **out, struct gsmrt_err *err)
{
    gsmrt_status st = parse(g, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "%s: ", g->name);
        gsmrt_gguf_close(g);
        return st;
    }
    *out = g;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gguf_open_memory(const void *data, size_t size, const char *name, const gsmrt_allocator *a,
                                    struct gsmrt_gguf **out, struct gsmrt_err *err)
{
    if (!out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gsmrt_gguf_open_memory: out is NULL");
    *out = NULL;
    if (!name) name = "<memory>";
    if (!data && size)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s: data is NULL with size %zu", name, size);
    struct gsmrt_gguf *g = NULL;   /* set by create(); NULL silences GCC 12's false maybe-uninitialized */
    gsmrt_status st = create(name, a, &g, err);
    if (st != GSMRT_OK) return st;
    g->base = data;
    g->size = size;
    return finish(g, out, err);
}

gsmrt_status gsmrt_gguf_open(const char *path, const gsmrt_allocator *a, struct gsmrt_gguf **out,
                             struct gsmrt_err *err)
{
    if (!out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gsmrt_gguf_open: out is NULL");
    *out = NULL;
    if (!path) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "gsmrt_gguf_open: path is NULL");
    /* O_NONBLOCK: a FIFO named as the model must not hang open(); fstat refuses it below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: file too large to map", path);
    }
    size_t size = (size_t)sb.st_size;
    void *map = NULL;
    if (size > 0) {   /* mmap of 0 bytes fails; an empty file is reported as truncated */
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
        }
    }
    close(fd);   /* the mapping stays valid */
    struct gsmrt_gguf *g = NULL;   /* set by create(); NULL silences GCC 12's false maybe-uninitialized */
    gsmrt_status st = create(path, a, &g, err);
    if (st != GSMRT_OK) {
        if (map) munmap(map, size);
        return st;
    }
    g->map = map;
    g->map_bytes = size;
    g->base = map;
    g->size = size;
    return finish(g, out, err);
}

void gsmrt_gguf_release_tensor(const struct gsmrt_gguf *g, const struct gsmrt_gguf_tensor *t)
{
    if (!g->map || !t || t->data_bytes == 0) return;
    /* the whole pages inside the tensor: a private read-only mapping loses
     * nothing (a later read maps the page again from the file) */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)t->data + page - 1) / page * page;
    uintptr_t hi = ((uintptr_t)t->data + t->data_bytes) / page * page;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* ---- accessors ----------------------------------------------------------- */

const char *gsmrt_gguf_name(const struct gsmrt_gguf *g) { return g->name; }
uint32_t gsmrt_gguf_version(const struct gsmrt_gguf *g) { return g->version; }
uint32_t gsmrt_gguf_alignment(const struct gsmrt_gguf *g) { return g->alignment; }
uint64_t gsmrt_gguf_file_bytes(const struct gsmrt_gguf *g) { return g->size; }
uint64_t gsmrt_gguf_data_offset(const struct gsmrt_gguf *g) { return g->data_offset; }
uint64_t gsmrt_gguf_trailing_bytes(const struct gsmrt_gguf *g)
{
    return g->size > g->data_end ? g->size - g->data_end : 0;
}
uint64_t gsmrt_gguf_n_kv(const struct gsmrt_gguf *g) { return g->n_kv; }
uint64_t gsmrt_gguf_n_tensors(const struct gsmrt_gguf *g) { return g->n_tensors; }

const struct gsmrt_gguf_kv *gsmrt_gguf_kv_at(const struct gsmrt_gguf *g, uint64_t i)
{
    return i < g->n_kv ? &g->kv[i] : NULL;
}

const struct gsmrt_gguf_kv *gsmrt_gguf_find_kv(const struct gsmrt_gguf *g, const char *key)
{
    size_t i = hash_find(g->kv_hash, g->kv_hash_cap, key, kv_key_of, g);
    return i ? &g->kv[i - 1] : NULL;
}

const struct gsmrt_gguf_tensor *gsmrt_gguf_tensor_at(const struct gsmrt_gguf *g, uint64_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const struct gsmrt_gguf_tensor *gsmrt_gguf_find_tensor(const struct gsmrt_gguf *g, const char *name)
{
    size_t i = hash_find(g->t_hash, g->t_hash_cap, name, tensor_key_of, g);
    return i ? &g->tensors[i - 1] : NULL;
}
