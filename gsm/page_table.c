/* page_table.c -- per-sequence page tables over shared slot pools: growth,
 * rollback, chat turns, packing for the device. Which tier a page should be
 * in is tiers.c's business. */
#include "page_table.h"

#include <string.h>

#include "base/mem.h"

void gsmrt_gsm_page_table_destroy(struct gsmrt_gsm_page_table *pt)
{
    if (!pt) return;
    gsmrt_mem_free(pt->alloc, pt->tier);
    gsmrt_mem_free(pt->alloc, pt->slot);
    gsmrt_mem_free(pt->alloc, pt->ema);
    gsmrt_mem_free(pt->alloc, pt->page_turn);
    gsmrt_mem_free(pt->alloc, pt->candidate);
    gsmrt_mem_free(pt->alloc, pt->scratch);
    gsmrt_mem_free(pt->alloc, pt);
}

gsmrt_status gsmrt_gsm_page_table_create(const gsmrt_allocator *alloc, uint32_t n_layer, uint32_t n_pages_max,
                                         uint32_t page_size, struct gsmrt_gsm_page_table **out,
                                         struct gsmrt_err *err)
{
    *out = NULL;
    size_t n;
    if (n_layer == 0 || n_pages_max == 0 || page_size == 0 || n_pages_max > GSMRT_GSM_PACKED_COLD ||
        !gsmrt_size_mul(n_layer, n_pages_max, &n) || n > UINT32_MAX ||
        (uint64_t)n_pages_max * page_size > UINT32_MAX)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "page table of %u layers x %u pages of %u", n_layer,
                             n_pages_max, page_size);
    struct gsmrt_gsm_page_table *pt = gsmrt_mem_calloc(alloc, 1, sizeof *pt);
    if (!pt) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "page table");
    pt->alloc = alloc;
    pt->n_layer = n_layer;
    pt->n_pages_max = n_pages_max;
    pt->page_size = page_size;
    pt->tier = gsmrt_mem_calloc(alloc, n, sizeof *pt->tier);
    pt->slot = gsmrt_mem_calloc(alloc, n, sizeof *pt->slot);
    pt->ema = gsmrt_mem_calloc(alloc, n, sizeof *pt->ema);
    pt->page_turn = gsmrt_mem_calloc(alloc, n_pages_max, sizeof *pt->page_turn);
    pt->candidate = gsmrt_mem_calloc(alloc, n_pages_max, sizeof *pt->candidate);
    pt->scratch = gsmrt_mem_calloc(alloc, (size_t)n_pages_max * 2, sizeof *pt->scratch);
    if (!pt->tier || !pt->slot || !pt->ema || !pt->page_turn || !pt->candidate || !pt->scratch) {
        gsmrt_gsm_page_table_destroy(pt);
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "page table of %u layers x %u pages", n_layer,
                             n_pages_max);
    }
    *out = pt;
    return GSMRT_OK;
}

static uint32_t pages_for(const struct gsmrt_gsm_page_table *pt, uint32_t n_pos)
{
    return n_pos / pt->page_size + (n_pos % pt->page_size != 0);
}

/* Frees pages [from, n_pages) of every layer. Returns the first error (a slot
 * that is not in use means the pools and the table disagree: a bug). */
static gsmrt_status drop_pages(struct gsmrt_gsm_page_table *pt, uint32_t from, struct gsmrt_gsm_slot_pool *hot,
                               struct gsmrt_gsm_slot_pool *cold, struct gsmrt_err *err)
{
    gsmrt_status st = GSMRT_OK;
    for (uint32_t l = 0; l < pt->n_layer; l++) {
        for (uint32_t p = from; p < pt->n_pages; p++) {
            uint32_t i = gsmrt_gsm_page_table_at(pt, l, p);
            gsmrt_status s = GSMRT_OK;
            if (pt->tier[i] == GSMRT_GSM_TIER_HOT) s = gsmrt_gsm_slot_pool_give(&hot[l], pt->slot[i], err);
            else if (pt->tier[i] == GSMRT_GSM_TIER_COLD) s = gsmrt_gsm_slot_pool_give(&cold[l], pt->slot[i], err);
            if (st == GSMRT_OK) st = s;
            pt->tier[i] = GSMRT_GSM_TIER_NONE;
            pt->slot[i] = 0;
            pt->ema[i] = 0;
        }
    }
    for (uint32_t p = from; p < pt->n_pages; p++) {
        pt->page_turn[p] = 0;
        pt->candidate[p] = 0;
    }
    return st;
}

gsmrt_status gsmrt_gsm_page_table_grow(struct gsmrt_gsm_page_table *pt, uint32_t n_pos,
                                       struct gsmrt_gsm_slot_pool *hot, struct gsmrt_err *err)
{
    if (n_pos <= pt->n_pos) return GSMRT_OK;
    uint32_t want = pages_for(pt, n_pos);
    if (want > pt->n_pages_max)
        return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "%u positions need %u pages, the table holds %u", n_pos,
                             want, pt->n_pages_max);
    for (uint32_t l = 0; l < pt->n_layer; l++)
        if (hot[l].n_free < want - pt->n_pages)
            return gsmrt_err_set(err, GSMRT_E_CONTEXT_FULL, "layer %u: %u new pages, %u free hot slots", l,
                                 want - pt->n_pages, hot[l].n_free);
    for (uint32_t l = 0; l < pt->n_layer; l++) {
        for (uint32_t p = pt->n_pages; p < want; p++) {
            uint32_t i = gsmrt_gsm_page_table_at(pt, l, p);
            gsmrt_status st = gsmrt_gsm_slot_pool_take(&hot[l], &pt->slot[i], err);
            if (st != GSMRT_OK) return st;   /* cannot happen: counted above */
            pt->tier[i] = GSMRT_GSM_TIER_HOT;
            pt->ema[i] = 0;
        }
    }
    for (uint32_t p = pt->n_pages; p < want; p++) {
        pt->page_turn[p] = pt->turn;
        pt->candidate[p] = 0;
    }
    pt->n_pages = want;
    pt->n_pos = n_pos;
    return GSMRT_OK;
}

gsmrt_status gsmrt_gsm_page_table_truncate(struct gsmrt_gsm_page_table *pt, uint32_t n_pos,
                                           struct gsmrt_gsm_slot_pool *hot, struct gsmrt_gsm_slot_pool *cold,
                                           struct gsmrt_err *err)
{
    if (n_pos >= pt->n_pos) return GSMRT_OK;
    uint32_t keep = pages_for(pt, n_pos);
    gsmrt_status st = drop_pages(pt, keep, hot, cold, err);
    pt->n_pages = keep;
    pt->n_pos = n_pos;
    return st;
}

void gsmrt_gsm_page_table_new_turn(struct gsmrt_gsm_page_table *pt)
{
    pt->turn++;
    for (uint32_t p = 0; p < pt->n_pages; p++)
        if (pt->page_turn[p] < pt->turn) pt->candidate[p] = 1;
}

void gsmrt_gsm_page_table_pack(const struct gsmrt_gsm_page_table *pt, uint32_t layer, uint32_t *out)
{
    for (uint32_t p = 0; p < pt->n_pages; p++) {
        uint32_t i = gsmrt_gsm_page_table_at(pt, layer, p);
        out[p] = pt->slot[i] | (pt->tier[i] == GSMRT_GSM_TIER_COLD ? GSMRT_GSM_PACKED_COLD : 0u);
    }
}
