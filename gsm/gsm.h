/* gsm.h -- GSM (grouped, tiered KV management): the one header the runtime's
 * model code includes. Everything here is policy in plain C over host arrays;
 * the device side (page pools in memory, copies, the bound and merge kernels)
 * builds on it and is checked against gate.h.
 *
 * What the decoder does with it, per sequence:
 *   setup:     gsmrt_gsm_config_defaults / _load / _set; calibration through
 *              gsmrt_gsm_profiles_load (model identity checked) and _pick;
 *              slot pools per layer and tier (gsmrt_gsm_slot_pool_init, hot
 *              pool sized with gsmrt_gsm_hot_pages_needed per sequence);
 *              gsmrt_gsm_page_table_create.
 *   calibrate: gsmrt_gsm_head_acc_add over attention rows, _finish into a
 *              gsmrt_gsm_calib, gsmrt_gsm_calib_plan_layer per layer, _save.
 *   each turn: gsmrt_gsm_page_table_new_turn; on failure
 *              gsmrt_gsm_page_table_truncate back to the turn's start.
 *   each step: gsmrt_gsm_page_table_grow for the new positions;
 *              gsmrt_gsm_should_use (warm-up, min_context) -- dense if not;
 *              per layer and head group: gsmrt_gsm_group_pages (active/cold),
 *              exact part over the active pages, gsmrt_gsm_page_bound per cold
 *              page, gsmrt_gsm_gate_select, the selected cold pages computed
 *              and merged (gsmrt_gsm_partial_merge);
 *              then gsmrt_gsm_tiers_observe with the pages' mass shares,
 *              gsmrt_gsm_prefetch_select from the pages' share bounds and
 *              gsmrt_gsm_tiers_plan, whose moves the device layer copies.
 * Names are gsmrt_gsm_*: libgsm (GSM 06.10) owns the gsm_ prefix. */
#ifndef GSMRT_GSM_GSM_H
#define GSMRT_GSM_GSM_H

#include "calib_file.h"
#include "calib_plan.h"
#include "config.h"
#include "gate.h"
#include "page_table.h"
#include "profiles.h"
#include "slot_pool.h"
#include "tiers.h"

#endif
