// page_summary.comp: GSM page summaries, per channel min and max of the
// cached rows of a page (for MLA: over the latent and the rope key), written
// as pages fill. DESIGN.md "page summary"; the gate bounds scores with them.
//   binding 0  KV    readonly   [n_slots * PAGE_SIZE][row]   the hot pool (pages fill while HOT), F32 or F16
//   binding 1  LIST  readonly   uint [n_list][3]   (entry, rows filled so far, summary index)
//   binding 2  SUM   writeonly  float [n_summaries][2][row]   (min, then max), by logical page
//   push       n_list, row, page_size
//   spec       0: WG_SIZE, 1: KV_F16 (cache rows in F16; the summary is of the stored values)
//   dispatch   (ceil(row / WG_SIZE), n_list, 1)
//   reference  gsm/gate.c gsmrt_gsm_summary_build()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#define KV_F16_ID 1
#define KV_BINDING 0
#include "kv_tier.glsl"
layout(set = 0, binding = 1, std430) readonly buffer List { uint list[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Sum { float sum[]; };
layout(push_constant) uniform Push { uint n_list; uint row; uint page_size; } pc;

void main()
{
    uint j = gl_GlobalInvocationID.x, i = gl_WorkGroupID.y;
    if (j >= pc.row || i >= pc.n_list) return;
    uint slot = entry_slot(list[3 * i]), n = min(list[3 * i + 1], pc.page_size), dst = list[3 * i + 2];
    float lo = 1.0 / 0.0, hi = -1.0 / 0.0;   // an empty page bounds nothing
    uint base = slot * pc.page_size * pc.row + j;
    for (uint r = 0; r < n; r++) {
        float v = kv_load(false, base + r * pc.row);
        lo = min(lo, v);
        hi = max(hi, v);
    }
    sum[(2 * dst) * pc.row + j] = lo;
    sum[(2 * dst + 1) * pc.row + j] = hi;
}
