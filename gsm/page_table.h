/* page_table.h -- the page table of one sequence: per layer, logical page ->
 * tier (HOT/COLD) and slot in that tier's pool, plus what the tier policy
 * keeps per page (moving average of received attention mass, chat turn).
 *
 * A page is page_size consecutive positions; page p covers positions
 * [p * page_size, (p + 1) * page_size). New pages start HOT (they are in the
 * recent window). The slot pools are shared between sequences and passed in,
 * one per layer and tier. Growth and truncation are transactional. */
#ifndef GSMRT_GSM_PAGE_TABLE_H
#define GSMRT_GSM_PAGE_TABLE_H

#include <stdint.h>

#include "base/err.h"
#include "slot_pool.h"

enum gsmrt_gsm_tier {
    GSMRT_GSM_TIER_NONE = 0,   /* page not allocated */
    GSMRT_GSM_TIER_HOT = 1,    /* device-local pool, in the active set */
    GSMRT_GSM_TIER_COLD = 2,   /* host-visible pool (swap) or outside the active set (keep) */
};

/* Bit set in a packed table entry for a COLD page; the low bits are the slot. */
#define GSMRT_GSM_PACKED_COLD 0x80000000u

struct gsmrt_gsm_page_table {
    const gsmrt_allocator *alloc;
    uint32_t n_layer, n_pages_max, page_size;
    uint32_t n_pos;        /* positions written: pages [0, n_pages) exist */
    uint32_t n_pages;      /* ceil(n_pos / page_size) */
    uint32_t turn;         /* current chat turn (0 first) */
    uint8_t *tier;         /* [n_layer][n_pages_max] enum gsmrt_gsm_tier */
    uint32_t *slot;        /* [n_layer][n_pages_max] slot in the tier's pool */
    float *ema;            /* [n_layer][n_pages_max] moving average of the page's attention share */
    uint32_t *page_turn;   /* [n_pages_max] turn in which the page was started */
    uint8_t *candidate;    /* [n_pages_max] 1: an earlier turn's page, candidate for demotion */
    uint32_t *scratch;     /* [2][n_pages_max] working space of the tier policy */
};

gsmrt_status gsmrt_gsm_page_table_create(const gsmrt_allocator *alloc, uint32_t n_layer, uint32_t n_pages_max,
                                         uint32_t page_size, struct gsmrt_gsm_page_table **out,
                                         struct gsmrt_err *err);
void gsmrt_gsm_page_table_destroy(struct gsmrt_gsm_page_table *pt);   /* NULL is fine */

/* Makes room for positions [0, n_pos): new pages go HOT in every layer, with
 * slots from hot[layer]. On failure (GSMRT_E_CONTEXT_FULL) nothing changed. */
gsmrt_status gsmrt_gsm_page_table_grow(struct gsmrt_gsm_page_table *pt, uint32_t n_pos,
                                       struct gsmrt_gsm_slot_pool *hot /*[n_layer]*/, struct gsmrt_err *err);

/* Back to n_pos positions (a failed turn's rollback): pages past the end
 * return their slots to hot[layer] / cold[layer]. */
gsmrt_status gsmrt_gsm_page_table_truncate(struct gsmrt_gsm_page_table *pt, uint32_t n_pos,
                                           struct gsmrt_gsm_slot_pool *hot, struct gsmrt_gsm_slot_pool *cold,
                                           struct gsmrt_err *err);

/* A new chat turn starts: every page started in an earlier turn becomes a
 * demotion candidate (the tier policy then keeps it hot only while its
 * average share stays at promotion level). */
void gsmrt_gsm_page_table_new_turn(struct gsmrt_gsm_page_table *pt);

/* Entry (layer, page) index into the per-layer arrays. */
static inline uint32_t gsmrt_gsm_page_table_at(const struct gsmrt_gsm_page_table *pt, uint32_t layer,
                                               uint32_t page)
{
    return layer * pt->n_pages_max + page;
}

/* out[n_pages]: slot | GSMRT_GSM_PACKED_COLD for cold pages (what the kernels read). */
void gsmrt_gsm_page_table_pack(const struct gsmrt_gsm_page_table *pt, uint32_t layer, uint32_t *out);

#endif
