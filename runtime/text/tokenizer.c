/* tokenizer.c -- byte-level BPE (see tokenizer.h): vocabulary and merge
 * tables, special-token partition, the merge loop, pieces.
 *
 * Owns copies of every text it was given. The merge loop follows llama.cpp's
 * llm_tokenizer_bpe_session: a priority queue of adjacent symbol pairs keyed
 * by (rank, left index); a popped pair whose symbols changed since it was
 * queued is stale and skipped. */
#include "text/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "text/gpt2_bytes.h"
#include "text/pretok.h"
#include "text/utf8.h"

struct tok_entry {
    size_t off, len;           /* stored text: pool[off .. off+len) */
    size_t dec_off, dec_len;   /* decoded bytes (normal tokens): pool[dec_off ..) */
    int32_t type;
    bool eog;
};

struct merge_entry {
    size_t off;                /* mpool[off ..): left, one space, right */
    uint32_t left_len, right_len;
    int32_t rank;
};

struct gsmrt_tokenizer {
    const gsmrt_allocator *alloc;
    uint32_t n_tokens;
    struct tok_entry *tok;         /* [n_tokens] */
    char *pool;                    /* texts and decoded pieces */
    int32_t *tok_hash;             /* [tok_hash_cap] token id or -1 */
    size_t tok_hash_cap;           /* power of two */
    struct merge_entry *merge;     /* [n_merge] */
    size_t n_merge;
    char *mpool;
    int32_t *merge_hash;           /* [merge_hash_cap] index into merge[] or -1 */
    size_t merge_hash_cap;
    int32_t *special;              /* [n_special] control/user-defined/unknown ids, longest text first */
    size_t n_special;
    struct gsmrt_pretok *pretok;
    int32_t bos, eos, eot;
    bool add_bos;
    struct gsmrt_gpt2_bytes bytes; /* the byte-level alphabet */
};

/* ---- hashing ------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

static uint64_t pair_hash(const char *l, size_t ln, const char *r, size_t rn)
{
    uint64_t h = fnv(FNV0, l, ln);
    h = (h ^ 0x1ff) * 0x100000001b3ull;   /* a separator no byte can be */
    return fnv(h, r, rn);
}

static size_t table_cap(size_t n)
{
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    return cap;
}

int32_t gsmrt_tokenizer_find(const struct gsmrt_tokenizer *t, const char *text, size_t len)
{
    if (!t || len == 0) return -1;
    size_t mask = t->tok_hash_cap - 1;
    for (size_t i = fnv(FNV0, text, len) & mask;; i = (i + 1) & mask) {
        int32_t id = t->tok_hash[i];
        if (id < 0) return -1;
        const struct tok_entry *e = &t->tok[id];
        if (e->len == len && memcmp(t->pool + e->off, text, len) == 0) return id;
    }
}

static int32_t merge_rank(const struct gsmrt_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn)
{
    if (t->n_merge == 0) return -1;
    size_t mask = t->merge_hash_cap - 1;
    for (size_t i = pair_hash(l, ln, r, rn) & mask;; i = (i + 1) & mask) {
        int32_t k = t->merge_hash[i];
        if (k < 0) return -1;
        const struct merge_entry *m = &t->merge[k];
        const char *s = t->mpool + m->off;
        if (m->left_len == ln && m->right_len == rn && memcmp(s, l, ln) == 0 &&
            memcmp(s + ln + 1, r, rn) == 0)
            return m->rank;
    }
}

/* ---- create / destroy --------------------------------------------------- */

static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
};

static size_t text_len(const char *const *texts, const uint32_t *lens, size_t i)
{
    return lens ? lens[i] : strlen(texts[i]);
}

/* Longest text first, then lowest id: a deterministic form of llama.cpp's
 * order. Insertion sort (qsort has no user pointer and qsort_r is not C11);
 * vocabularies have at most a few thousand special tokens. */
static void sort_specials(struct gsmrt_tokenizer *t)
{
    for (size_t i = 1; i < t->n_special; i++) {
        int32_t v = t->special[i];
        size_t j = i;
        while (j > 0) {
            int32_t u = t->special[j - 1];
            size_t lu = t->tok[u].len, lv = t->tok[v].len;
            if (lu > lv || (lu == lv && u < v)) break;
            t->special[j] = u;
            j--;
        }
        t->special[j] = v;
    }
}

gsmrt_status gsmrt_tokenizer_create(const gsmrt_allocator *a, const struct gsmrt_vocab_desc *d,
                                    struct gsmrt_tokenizer **out, struct gsmrt_err *err)
{
    if (!out) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "tokenizer: NULL out");
    *out = NULL;
    if (!d || !d->tokens || d->n_tokens == 0 || (d->n_merges && !d->merges))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "tokenizer: no tokens or NULL arrays");
    if (d->n_tokens > INT32_MAX || d->n_merges > INT32_MAX)
        return gsmrt_err_set(err, GSMRT_E_FORMAT, "tokenizer: %u tokens, %u merges: too many", d->n_tokens,
                             d->n_merges);
    gsmrt_status st = GSMRT_E_OUT_OF_HOST_MEMORY;
    struct gsmrt_tokenizer *t = gsmrt_mem_calloc(a, 1, sizeof *t);
    if (!t) return gsmrt_err_set(err, st, "tokenizer");
    t->alloc = a;
    t->n_tokens = d->n_tokens;
    gsmrt_gpt2_bytes_init(&t->bytes);

    st = gsmrt_pretok_create(a, d->pre, &t->pretok, err);
    if (st != GSMRT_OK) goto fail;
    st = GSMRT_E_OUT_OF_HOST_MEMORY;

    /* token texts, twice: as stored, and decoded */
    size_t total = 0;
    for (uint32_t i = 0; i < d->n_tokens; i++) {
        if (!d->tokens[i]) {
            st = gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "tokenizer: token %u: NULL text", i);
            goto fail;
        }
        if (!gsmrt_size_add(total, text_len(d->tokens, d->token_lens, i), &total)) goto oom;
    }
    size_t pool_bytes;
    if (!gsmrt_size_mul(total, 2, &pool_bytes) || !gsmrt_size_add(pool_bytes, 1, &pool_bytes)) goto oom;
    t->tok = gsmrt_mem_calloc(a, d->n_tokens, sizeof *t->tok);
    t->pool = gsmrt_mem_alloc(a, pool_bytes);
    t->tok_hash_cap = table_cap(d->n_tokens);
    t->tok_hash = gsmrt_mem_alloc(a, t->tok_hash_cap * sizeof *t->tok_hash);
    t->special = gsmrt_mem_calloc(a, d->n_tokens, sizeof *t->special);
    if (!t->tok || !t->pool || !t->tok_hash || !t->special) goto oom;
    memset(t->tok_hash, 0xff, t->tok_hash_cap * sizeof *t->tok_hash);

    size_t w = 0;
    for (uint32_t i = 0; i < d->n_tokens; i++) {
        struct tok_entry *e = &t->tok[i];
        size_t n = text_len(d->tokens, d->token_lens, i);
        int32_t type = d->token_types ? d->token_types[i] : GSMRT_TOKEN_TYPE_NORMAL;
        if (type < GSMRT_TOKEN_TYPE_NORMAL || type > GSMRT_TOKEN_TYPE_BYTE) {
            st = gsmrt_err_set(err, GSMRT_E_FORMAT, "tokenizer: token %u: type %d (expected 1..6)", i, (int)type);
            goto fail;
        }
        e->type = type;
        e->off = w;
        e->len = n;
        memcpy(t->pool + w, d->tokens[i], n);
        w += n;
        e->dec_off = w;
        if (type == GSMRT_TOKEN_TYPE_NORMAL) {
            e->dec_len = gsmrt_gpt2_bytes_decode(&t->bytes, t->pool + e->off, n, t->pool + w);
        } else {
            memcpy(t->pool + w, d->tokens[i], n);
            e->dec_len = n;
        }
        w += e->dec_len;
        if (n == 0) continue;   /* an empty text is never matched */
        size_t mask = t->tok_hash_cap - 1;
        size_t h = fnv(FNV0, t->pool + e->off, n) & mask;
        for (;; h = (h + 1) & mask) {
            int32_t o = t->tok_hash[h];
            if (o < 0) break;
            if (t->tok[o].len == n && memcmp(t->pool + t->tok[o].off, t->pool + e->off, n) == 0) {
                st = gsmrt_err_set(err, GSMRT_E_FORMAT, "tokenizer: token %u has the same text as token %d "
                                   "(texts must be unique)", i, (int)o);
                goto fail;
            }
        }
        t->tok_hash[h] = (int32_t)i;
        if (type == GSMRT_TOKEN_TYPE_CONTROL || type == GSMRT_TOKEN_TYPE_USER_DEFINED ||
            type == GSMRT_TOKEN_TYPE_UNKNOWN)
            t->special[t->n_special++] = (int32_t)i;
        if (type == GSMRT_TOKEN_TYPE_CONTROL || type == GSMRT_TOKEN_TYPE_USER_DEFINED)
            for (size_t k = 0; k < sizeof eog_texts / sizeof eog_texts[0]; k++)
                if (strlen(eog_texts[k]) == n && memcmp(eog_texts[k], t->pool + e->off, n) == 0) e->eog = true;
    }
    sort_specials(t);

    /* merges: split at the first space after position 0; the first of two
     * equal pairs keeps its rank (llama.cpp's bpe_ranks.emplace) */
    size_t mtotal = 0;
    for (uint32_t i = 0; i < d->n_merges; i++) {
        if (!d->merges[i]) {
            st = gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "tokenizer: merge %u: NULL text", i);
            goto fail;
        }
        if (!gsmrt_size_add(mtotal, text_len(d->merges, d->merge_lens, i), &mtotal)) goto oom;
    }
    if (d->n_merges) {
        t->merge = gsmrt_mem_calloc(a, d->n_merges, sizeof *t->merge);
        t->mpool = gsmrt_mem_alloc(a, mtotal + 1);
        t->merge_hash_cap = table_cap(d->n_merges);
        t->merge_hash = gsmrt_mem_alloc(a, t->merge_hash_cap * sizeof *t->merge_hash);
        if (!t->merge || !t->mpool || !t->merge_hash) goto oom;
        memset(t->merge_hash, 0xff, t->merge_hash_cap * sizeof *t->merge_hash);
    }
    size_t mw = 0;
    for (uint32_t i = 0; i < d->n_merges; i++) {
        size_t n = text_len(d->merges, d->merge_lens, i);
        const char *s = d->merges[i];
        const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
        if (!sp) continue;   /* no pair: llama.cpp ranks empty strings, which never match */
        size_t ln = (size_t)(sp - s), rn = n - ln - 1;
        if (ln > UINT32_MAX || rn > UINT32_MAX) continue;
        if (merge_rank(t, s, ln, sp + 1, rn) >= 0) continue;
        struct merge_entry *m = &t->merge[t->n_merge];
        memcpy(t->mpool + mw, s, n);
        m->off = mw;
        m->left_len = (uint32_t)ln;
        m->right_len = (uint32_t)rn;
        m->rank = (int32_t)i;
        mw += n;
        size_t mask = t->merge_hash_cap - 1;
        size_t h = pair_hash(s, ln, sp + 1, rn) & mask;
        while (t->merge_hash[h] >= 0) h = (h + 1) & mask;
        t->merge_hash[h] = (int32_t)t->n_merge++;
    }

    int32_t n = (int32_t)d->n_tokens;
    t->bos = d->bos_id >= 0 && d->bos_id < n ? d->bos_id : -1;
    t->eos = d->eos_id >= 0 && d->eos_id < n ? d->eos_id : -1;
    t->eot = d->eot_id >= 0 && d->eot_id < n ? d->eot_id : -1;
    t->add_bos = d->add_bos;
    if (t->add_bos && t->bos < 0) {
        st = gsmrt_err_set(err, GSMRT_E_FORMAT, "tokenizer: add_bos is set but bos_id %d is not a token (0..%d)",
                           (int)d->bos_id, (int)n - 1);
        goto fail;
    }
    *out = t;
    return GSMRT_OK;
oom:
    st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "tokenizer: %u tokens, %u merges", d->n_tokens,
                       d->n_merges);
fail:
    gsmrt_tokenizer_destroy(t);
    return st;
}

void gsmrt_tokenizer_destroy(struct gsmrt_tokenizer *t)
{
    if (!t) return;
    const gsmrt_allocator *a = t->alloc;
    gsmrt_pretok_destroy(t->pretok);
    gsmrt_mem_free(a, t->tok);
    gsmrt_mem_free(a, t->pool);
    gsmrt_mem_free(a, t->tok_hash);
    gsmrt_mem_free(a, t->merge);
    gsmrt_mem_free(a, t->mpool);
    gsmrt_mem_free(a, t->merge_hash);
    gsmrt_mem_free(a, t->special);
    gsmrt_mem_free(a, t);
}

/* ---- encoding ----------------------------------------------------------- */

static bool push_id(const gsmrt_allocator *a, struct gsmrt_tokens *v, int32_t id)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64, bytes;
        if (cap < v->cap || !gsmrt_size_mul(cap, sizeof *v->ids, &bytes)) return false;
        int32_t *ni = gsmrt_mem_alloc(a, bytes);
        if (!ni) return false;
        if (v->n) memcpy(ni, v->ids, v->n * sizeof *ni);
        gsmrt_mem_free(a, v->ids);
        v->ids = ni;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return true;
}

void gsmrt_tokens_free(const gsmrt_allocator *a, struct gsmrt_tokens *v)
{
    if (!v) return;
    gsmrt_mem_free(a, v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

struct sym {
    size_t off, n;      /* word[off .. off+n); n == 0: merged away */
    int32_t prev, next;
};

struct bigram {
    int32_t rank, left, right;
    size_t nl, nr;      /* symbol lengths when queued: a change means stale */
};

/* Per-call scratch, sized for the longest piece. */
struct scratch {
    char *word;         /* [2 * max_piece] encoded piece */
    struct sym *sym;    /* [max_piece] */
    struct bigram *heap;/* [3 * max_piece] */
    size_t n_heap;
};

static bool before(const struct bigram *x, const struct bigram *y)
{
    return x->rank < y->rank || (x->rank == y->rank && x->left < y->left);
}

static void heap_push(struct scratch *s, struct bigram b)
{
    size_t i = s->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&b, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = b;
}

static struct bigram heap_pop(struct scratch *s)
{
    struct bigram top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0, n = s->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c])) c++;
        if (!before(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

static void add_bigram(const struct gsmrt_tokenizer *t, struct scratch *s, int32_t l, int32_t r)
{
    if (l < 0 || r < 0) return;
    const struct sym *L = &s->sym[l], *R = &s->sym[r];
    int32_t rank = merge_rank(t, s->word + L->off, L->n, s->word + R->off, R->n);
    if (rank < 0) return;
    heap_push(s, (struct bigram){rank, l, r, L->n, R->n});
}

/* BPE of one pre-tokenized piece of raw bytes. */
static bool bpe_piece(const struct gsmrt_tokenizer *t, struct scratch *s, const char *raw, size_t len,
                      struct gsmrt_tokens *out)
{
    size_t wl = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)raw[i];
        memcpy(s->word + wl, t->bytes.enc[b], t->bytes.enc_len[b]);
        s->sym[i] = (struct sym){wl, t->bytes.enc_len[b], (int32_t)i - 1, i + 1 < len ? (int32_t)i + 1 : -1};
        wl += t->bytes.enc_len[b];
    }
    if (gsmrt_pretok_ignore_merges(t->pretok)) {
        int32_t id = gsmrt_tokenizer_find(t, s->word, wl);
        if (id >= 0) return push_id(t->alloc, out, id);
    }
    s->n_heap = 0;
    for (size_t i = 1; i < len; i++) add_bigram(t, s, (int32_t)i - 1, (int32_t)i);
    while (s->n_heap > 0) {
        struct bigram b = heap_pop(s);
        struct sym *L = &s->sym[b.left], *R = &s->sym[b.right];
        if (L->n == 0 || R->n == 0 || L->n != b.nl || R->n != b.nr) continue;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) s->sym[R->next].prev = b.left;
        add_bigram(t, s, L->prev, b.left);
        add_bigram(t, s, b.left, L->next);
    }
    for (int32_t i = 0; i >= 0; i = s->sym[i].next) {
        const struct sym *y = &s->sym[i];
        int32_t id = gsmrt_tokenizer_find(t, s->word + y->off, y->n);
        if (id >= 0) {
            if (!push_id(t->alloc, out, id)) return false;
            continue;
        }
        /* llama.cpp's fallback: the one-byte tokens of the encoded text */
        for (size_t k = 0; k < y->n; k++) {
            int32_t bid = gsmrt_tokenizer_find(t, s->word + y->off + k, 1);
            if (bid >= 0 && !push_id(t->alloc, out, bid)) return false;
        }
    }
    return true;
}

static gsmrt_status encode_text(const struct gsmrt_tokenizer *t, const char *text, size_t len,
                                struct gsmrt_tokens *out, struct gsmrt_err *err)
{
    struct gsmrt_span *sp = NULL;
    size_t n_sp = 0;
    gsmrt_status st = gsmrt_pretok_split(t->pretok, text, len, &sp, &n_sp, err);
    if (st != GSMRT_OK) return st;
    size_t maxp = 1;
    for (size_t i = 0; i < n_sp; i++)
        if (sp[i].len > maxp) maxp = sp[i].len;
    struct scratch s = {0};
    size_t b1, b2, b3;
    if (maxp > INT32_MAX / 3 || !gsmrt_size_mul(maxp, 2, &b1) || !gsmrt_size_mul(maxp, sizeof *s.sym, &b2) ||
        !gsmrt_size_mul(maxp, 3 * sizeof *s.heap, &b3)) {
        st = gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "tokenizer: piece of %zu bytes is too long", maxp);
        goto done;
    }
    s.word = gsmrt_mem_alloc(t->alloc, b1);
    s.sym = gsmrt_mem_alloc(t->alloc, b2);
    s.heap = gsmrt_mem_alloc(t->alloc, b3);
    if (!s.word || !s.sym || !s.heap) goto oom;
    for (size_t i = 0; i < n_sp; i++)
        if (!bpe_piece(t, &s, text + sp[i].off, sp[i].len, out)) goto oom;
    goto done;
oom:
    st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "tokenizer: encoding %zu bytes", len);
done:
    gsmrt_mem_free(t->alloc, s.word);
    gsmrt_mem_free(t->alloc, s.sym);
    gsmrt_mem_free(t->alloc, s.heap);
    gsmrt_mem_free(t->alloc, sp);
    return st;
}

struct frag {
    size_t off, len;   /* raw text, when id < 0 */
    int32_t id;        /* a special token, or -1 */
};

struct frag_vec {
    struct frag *v;
    size_t n, cap;
};

static bool push_frag(const gsmrt_allocator *a, struct frag_vec *fv, struct frag f)
{
    if (fv->n == fv->cap) {
        size_t cap = fv->cap ? fv->cap * 2 : 16, bytes;
        if (!gsmrt_size_mul(cap, sizeof *fv->v, &bytes)) return false;
        struct frag *nv = gsmrt_mem_alloc(a, bytes);
        if (!nv) return false;
        if (fv->n) memcpy(nv, fv->v, fv->n * sizeof *nv);
        gsmrt_mem_free(a, fv->v);
        fv->v = nv;
        fv->cap = cap;
    }
    fv->v[fv->n++] = f;
    return true;
}

/* Whether text[off, off + len) overlaps one of the sorted plain ranges. */
static bool overlaps_plain(const struct gsmrt_text_range *plain, size_t n_plain, size_t off, size_t len)
{
    for (size_t i = 0; i < n_plain && plain[i].off < off + len; i++)
        if (plain[i].off + plain[i].len > off && plain[i].len > 0) return true;
    return false;
}

/* llama.cpp's tokenizer_st_partition: each special token in turn (longest
 * first) cuts every raw fragment at each of its occurrences, left to right.
 * A control token's text that overlaps a plain range (message content) is
 * not cut out: it stays text. */
static bool partition(const struct gsmrt_tokenizer *t, const char *text, size_t len, bool parse_special,
                      const struct gsmrt_text_range *plain, size_t n_plain, struct frag_vec *cur)
{
    const gsmrt_allocator *a = t->alloc;
    struct frag_vec next = {0};
    if (!push_frag(a, cur, (struct frag){0, len, -1})) return false;
    for (size_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        const struct tok_entry *e = &t->tok[id];
        if (!parse_special && e->type != GSMRT_TOKEN_TYPE_USER_DEFINED) continue;
        const char *stext = t->pool + e->off;
        next.n = 0;
        bool hit = false;
        for (size_t i = 0; i < cur->n; i++) {
            struct frag f = cur->v[i];
            if (f.id >= 0) {
                if (!push_frag(a, &next, f)) goto oom;
                continue;
            }
            size_t pos = f.off, end = f.off + f.len, from = pos;
            const bool control = e->type != GSMRT_TOKEN_TYPE_USER_DEFINED;
            for (;;) {
                const char *m = end - from >= e->len ? memmem(text + from, end - from, stext, e->len) : NULL;
                if (!m) break;
                size_t mo = (size_t)(m - text);
                if (control && overlaps_plain(plain, n_plain, mo, e->len)) {
                    from = mo + 1;   /* content: the text stays text */
                    continue;
                }
                hit = true;
                if (mo > pos && !push_frag(a, &next, (struct frag){pos, mo - pos, -1})) goto oom;
                if (!push_frag(a, &next, (struct frag){mo, e->len, id})) goto oom;
                pos = from = mo + e->len;
            }
            if (pos < end && !push_frag(a, &next, (struct frag){pos, end - pos, -1})) goto oom;
        }
        if (hit) {
            struct frag_vec tmp = *cur;
            *cur = next;
            next = tmp;
        }
    }
    gsmrt_mem_free(a, next.v);
    return true;
oom:
    gsmrt_mem_free(a, next.v);
    return false;
}

static gsmrt_status encode(const struct gsmrt_tokenizer *t, const char *text, size_t len, bool add_special,
                           bool parse_special, const struct gsmrt_text_range *plain, size_t n_plain,
                           struct gsmrt_tokens *out, struct gsmrt_err *err);

gsmrt_status gsmrt_tokenizer_encode(const struct gsmrt_tokenizer *t, const char *text, size_t len,
                                    bool add_special, bool parse_special, struct gsmrt_tokens *out,
                                    struct gsmrt_err *err)
{
    return encode(t, text, len, add_special, parse_special, NULL, 0, out, err);
}

gsmrt_status gsmrt_tokenizer_encode_markup(const struct gsmrt_tokenizer *t, const char *text, size_t len,
                                           bool add_special, const struct gsmrt_text_range *plain, size_t n_plain,
                                           struct gsmrt_tokens *out, struct gsmrt_err *err)
{
    if (n_plain && !plain) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "encode: NULL plain ranges");
    for (size_t i = 0; i < n_plain; i++) {
        size_t end;
        if (!gsmrt_size_add(plain[i].off, plain[i].len, &end) || end > len ||
            (i > 0 && plain[i].off < plain[i - 1].off + plain[i - 1].len))
            return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT,
                                 "encode: plain range %zu is out of the text or out of order", i);
    }
    return encode(t, text, len, add_special, true, plain, n_plain, out, err);
}

static gsmrt_status encode(const struct gsmrt_tokenizer *t, const char *text, size_t len, bool add_special,
                           bool parse_special, const struct gsmrt_text_range *plain, size_t n_plain,
                           struct gsmrt_tokens *out, struct gsmrt_err *err)
{
    if (!t || !out || (!text && len)) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "encode: NULL argument");
    size_t bad;
    if (!gsmrt_utf8_valid(text, len, &bad))
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "encode: text is not valid UTF-8 (byte %zu)", bad);
    const size_t n0 = out->n;
    gsmrt_status st = GSMRT_OK;
    struct frag_vec fv = {0};
    if (add_special && t->add_bos && !push_id(t->alloc, out, t->bos)) goto oom;
    if (len > 0 && !partition(t, text, len, parse_special, plain, n_plain, &fv)) goto oom;
    for (size_t i = 0; i < fv.n; i++) {
        if (fv.v[i].id >= 0) {
            if (!push_id(t->alloc, out, fv.v[i].id)) goto oom;
            continue;
        }
        st = encode_text(t, text + fv.v[i].off, fv.v[i].len, out, err);
        if (st != GSMRT_OK) goto fail;
    }
    gsmrt_mem_free(t->alloc, fv.v);
    return GSMRT_OK;
oom:
    st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "encode: %zu bytes", len);
fail:
    out->n = n0;   /* the caller's list is as it was */
    gsmrt_mem_free(t->alloc, fv.v);
    return st;
}

/* ---- lookups ------------------------------------------------------------ */

gsmrt_status gsmrt_tokenizer_piece(const struct gsmrt_tokenizer *t, int32_t id, bool special, const char **bytes,
                                   size_t *len, struct gsmrt_err *err)
{
    if (!t || !bytes || !len) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "piece: NULL argument");
    *bytes = "";
    *len = 0;
    if (id < 0 || (uint32_t)id >= t->n_tokens)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "piece: token id %d out of range (0..%u)", (int)id,
                             t->n_tokens - 1);
    const struct tok_entry *e = &t->tok[id];
    switch (e->type) {
    case GSMRT_TOKEN_TYPE_CONTROL:
    case GSMRT_TOKEN_TYPE_UNKNOWN:
        if (!special) return GSMRT_OK;
        break;
    case GSMRT_TOKEN_TYPE_NORMAL:
    case GSMRT_TOKEN_TYPE_USER_DEFINED:
        break;
    default:
        return GSMRT_OK;   /* unused and byte tokens: nothing, as llama.cpp's BPE */
    }
    *bytes = t->pool + e->dec_off;
    *len = e->dec_len;
    return GSMRT_OK;
}

uint32_t gsmrt_tokenizer_n_tokens(const struct gsmrt_tokenizer *t) { return t->n_tokens; }
int32_t gsmrt_tokenizer_bos(const struct gsmrt_tokenizer *t) { return t->bos; }
int32_t gsmrt_tokenizer_eos(const struct gsmrt_tokenizer *t) { return t->eos; }
int32_t gsmrt_tokenizer_eot(const struct gsmrt_tokenizer *t) { return t->eot; }
bool gsmrt_tokenizer_add_bos(const struct gsmrt_tokenizer *t) { return t->add_bos; }
const char *gsmrt_tokenizer_pre(const struct gsmrt_tokenizer *t) { return gsmrt_pretok_name(t->pretok); }

int32_t gsmrt_tokenizer_token_type(const struct gsmrt_tokenizer *t, int32_t id)
{
    if (id < 0 || (uint32_t)id >= t->n_tokens) return 0;
    return t->tok[id].type;
}

bool gsmrt_tokenizer_is_eog(const struct gsmrt_tokenizer *t, int32_t id)
{
    if (id < 0 || (uint32_t)id >= t->n_tokens) return false;
    return id == t->eos || id == t->eot || t->tok[id].eog;
}
