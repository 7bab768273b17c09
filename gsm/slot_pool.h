/* slot_pool.h -- the free list of one page pool (one tier of one layer): which
 * slots of the pool's buffer hold a page. Shared by every sequence that
 * draws pages from that pool. Slots come out lowest first from a fresh pool. */
#ifndef GSMRT_GSM_SLOT_POOL_H
#define GSMRT_GSM_SLOT_POOL_H

#include <stdint.h>

#include "base/err.h"

struct gsmrt_gsm_slot_pool {
    const gsmrt_allocator *alloc;
    uint32_t n_slots;
    uint32_t n_free;
    uint32_t *free_list;   /* [n_slots] a stack: free_list[n_free - 1] is handed out next */
    uint8_t *used;         /* [n_slots] 1 while a page holds the slot */
};

/* Caller-provided storage; n_slots may be 0 (a tier with no memory). */
gsmrt_status gsmrt_gsm_slot_pool_init(struct gsmrt_gsm_slot_pool *pool, const gsmrt_allocator *alloc,
                                      uint32_t n_slots, struct gsmrt_err *err);
void gsmrt_gsm_slot_pool_deinit(struct gsmrt_gsm_slot_pool *pool);   /* zeroed pools are fine */

/* A free slot, or GSMRT_E_CONTEXT_FULL. */
gsmrt_status gsmrt_gsm_slot_pool_take(struct gsmrt_gsm_slot_pool *pool, uint32_t *slot, struct gsmrt_err *err);
/* Returns a slot; GSMRT_E_INTERNAL for a slot out of range or not taken. */
gsmrt_status gsmrt_gsm_slot_pool_give(struct gsmrt_gsm_slot_pool *pool, uint32_t slot, struct gsmrt_err *err);

#endif
