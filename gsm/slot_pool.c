/* slot_pool.c -- free lists of page slots (see slot_pool.h). */
#include "slot_pool.h"

#include <string.h>

#include "base/mem.h"

gsmrt_status gsmrt_gsm_slot_pool_init(struct gsmrt_gsm_slot_pool *pool, const gsmrt_allocator *alloc,
                                      uint32_t n_slots, struct gsmrt_err *err)
{
    memset(pool, 0, sizeof *pool);
    pool->alloc = alloc;
    if (n_slots == 0) return GSMRT_OK;
    pool->free_list = gsmrt_mem_calloc(alloc, n_slots, sizeof *pool->free_list);
    pool->used = gsmrt_mem_calloc(alloc, n_slots, 1);
    if (!pool->free_list || !pool->used) {
        gsmrt_gsm_slot_pool_deinit(pool);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "page pool of %u slots", n_slots);
    }
    pool->n_slots = pool->n_free = n_slots;
    for (uint32_t i = 0; i < n_slots; i++) pool->free_list[i] = n_slots - 1 - i;
    return GSMRT_OK;
}

void gsmrt_gsm_slot_pool_deinit(struct gsmrt_gsm_slot_pool *pool)
{
    if (!pool) return;
    gsmrt_mem_free(pool->alloc, pool->free_list);
    gsmrt_mem_free(pool->alloc, pool->used);
    memset(pool, 0, sizeof *pool);
}

gsmrt_status gsmrt_gsm_slot_pool_take(struct gsmrt_gsm_slot_pool *pool, uint32_t *slot, struct gsmrt_err *err)
{
    if (pool->n_free == 0)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "page pool full (%u slots)", pool->n_slots);
    uint32_t s = pool->free_list[--pool->n_free];
    pool->used[s] = 1;
    *slot = s;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_slot_pool_give(struct gsmrt_gsm_slot_pool *pool, uint32_t slot, struct gsmrt_err *err)
{
    if (slot >= pool->n_slots || !pool->used[slot])
        return gsmrt_err_set(err, GSMRT_E_INTERNAL, "page slot %u returned but not in use (pool of %u)", slot,
                             pool->n_slots);
    pool->used[slot] = 0;
    pool->free_list[pool->n_free++] = slot;
    return GSMRT_OK;
}
