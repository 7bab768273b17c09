/* arch.h -- the seam between the generic runtime and one model architecture.
 *
 * An architecture is one module under runtime/model/ that fills a struct
 * gsmrt_arch: how to read its hyper-parameters, which tensors a file of it
 * holds (names, shapes, when each is present), what its KV cache holds per
 * layer, and how a step's forward pass is recorded. It is registered by one
 * line in arch.c. The loader (hparams.c, weights.c), the KV cache
 * (kv_cache.c) and the step driver (forward.c) know nothing else about it.
 *
 * No Vulkan here: the hyper-parameter and tensor checks run without a device. */
#ifndef GSMRT_MODEL_ARCH_H
#define GSMRT_MODEL_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "gguf/gguf.h"

struct gsmrt_hparams;
struct gsmrt_forward;
struct gsmrt_seq_step;

/* ---- KV layout --------------------------------------------------------------
 * Per layer, the cache holds one or more streams of rows. A stream is one
 * role of rows (what the attention of that layer reads), each row a fixed
 * number of floats, written once per `ratio` positions, and kept either for
 * the whole context or in a ring of the last `ring_rows` rows. Layers may
 * differ in which streams they have. Examples:
 *   deepseek2 (MLA): one LATENT stream [c_kv | k_pe], ratio 1, whole context,
 *     tiered by GSM.
 *   deepseek4: a WINDOW stream (ring of the sliding window, ratio 1); in a
 *     ratio-4 layer also COMPRESSED (ratio 4) and INDEXER (ratio 4, the
 *     indexer's head width) rows plus the compressor's STATE (rings of 2x4
 *     rows of partial sums and scores); in a ratio-128 layer COMPRESSED
 *     (ratio 128) and its STATE. */
enum gsmrt_kv_role {
    GSMRT_KV_ROLE_LATENT = 0,   /* MLA latent + rope key, one row per position */
    GSMRT_KV_ROLE_WINDOW,       /* raw rows of a sliding window */
    GSMRT_KV_ROLE_COMPRESSED,   /* one row per `ratio` positions, compressed */
    GSMRT_KV_ROLE_INDEXER,      /* keys of a sparse-attention indexer */
    GSMRT_KV_ROLE_STATE         /* running state (e.g. a compressor's partial blocks) */
};

#define GSMRT_KV_MAX_STREAMS 8   /* streams in one layer */

struct gsmrt_kv_stream {
    enum gsmrt_kv_role role;
    uint32_t row_floats;   /* values per row (stored as the cache's type, F16 or F32) */
    uint32_t ratio;        /* positions per row (1: a row per position; r: a row per r positions) */
    uint32_t ring_rows;    /* 0: rows for the whole context; n: a ring of the last n rows */
    bool tiered;           /* GSM may keep its pages in the cold tier */
};

struct gsmrt_kv_layer_layout {
    uint32_t n_streams;
    struct gsmrt_kv_stream stream[GSMRT_KV_MAX_STREAMS];
};

/* ---- tensor table -------------------------------------------------------------
 * One row per tensor kind. Dimensions and conditions are the architecture's
 * own ids, valued by its dim() and applies() callbacks. A tensor whose
 * condition does not hold in a block must be absent from it; one whose
 * condition holds must be present (optional tensors are conditions on flags
 * that probe_tensors() sets from the file). The row's index is the slot the
 * loaded tensor lands in (gsmrt_dmodel_tensor). */
struct gsmrt_tensor_spec {
    const char *name;   /* global name, or (per_layer) the suffix after "blk.N." */
    bool per_layer;
    uint8_t when;       /* condition id for applies() */
    uint8_t n_dims;     /* 1-D tensors must be F32 */
    uint8_t dims[3];    /* dimension ids, ggml order: dims[0] is ne[0], the contiguous one */
    bool i32;           /* an integer table (I32), not weights; only such rows may be I32 */
};

/* ---- the architecture --------------------------------------------------------- */

struct gsmrt_arch {
    const char *name;   /* general.architecture */

    /* Reads the "<name>." keys into hp (n_vocab is already set; hp->arch
     * too) and derives what the decoder needs. Messages name the key. */
    gsmrt_status (*read_hparams)(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp, struct gsmrt_err *err);
    /* Sets hp's flags for optional tensors from what the file holds (may be NULL). */
    void (*probe_tensors)(const struct gsmrt_gguf *g, struct gsmrt_hparams *hp);
    const struct gsmrt_tensor_spec *tensors;
    uint32_t n_tensors;
    bool (*applies)(const struct gsmrt_hparams *hp, uint8_t when, int64_t il);   /* il < 0: global */
    uint64_t (*dim)(const struct gsmrt_hparams *hp, uint8_t dim);
    /* A better message for a tensor the table does not know (e.g. a legacy
     * form); GSMRT_OK to fall back to "unexpected". May be NULL. */
    gsmrt_status (*unknown_tensor)(const struct gsmrt_gguf *g, const char *name, struct gsmrt_err *err);
    /* Refuses a file the forward recorder does not run although its shapes
     * are valid (GSMRT_E_UNSUPPORTED). May be NULL. */
    gsmrt_status (*check_runnable)(const struct gsmrt_gguf *g, const struct gsmrt_hparams *hp,
                                   struct gsmrt_err *err);

    /* The cache streams of layer il. */
    void (*kv_layout)(const struct gsmrt_hparams *hp, uint32_t il, struct gsmrt_kv_layer_layout *out);

    /* Forward recorder: the architecture's scratch for steps of up to
     * f->max_tok tokens (f->arch_state), its release, and the recording of
     * one step into f->rec: the tokens' embeddings from f->tokens, every
     * layer over the sequences' caches, and (n_rows > 0) the logits of rows
     * [first, first + n_rows) into f->logits. */
    gsmrt_status (*forward_init)(struct gsmrt_forward *f, struct gsmrt_err *err);
    void (*forward_fini)(struct gsmrt_forward *f);
    gsmrt_status (*record_step)(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                uint32_t n_tok, uint32_t first, uint32_t n_rows, struct gsmrt_err *err);
};

/* The registered architecture called `name` (len bytes, not terminated), or NULL. */
const struct gsmrt_arch *gsmrt_arch_find(const char *name, size_t len);
/* The registered names, "a, b", into buf (for messages); returns buf. */
const char *gsmrt_arch_supported(char *buf, size_t cap);

#endif
