// attn_cold.comp: exact attention of one query token over the cold pages the
// gate selected (gate_select), one page per workgroup, read straight from the
// pool they sit in (host-visible memory under "swap"). Writes one partial
// (m, l, acc) per selected page into the slots after the exact part's splits,
// so attn_merge combines everything by the log-sum-exp rule; slots of pages
// not selected keep l = 0 (written by the exact part's empty splits).
//   binding 0  QA    readonly   float [n_tok][n_heads][KV_LORA]   (token q_tok0 is the query)
//   binding 1  QR    readonly   float [n_tok][q_stride]   q_pe of head h at h*q_head + q_off
//   binding 2  KV    readonly   [n_slots * PAGE_SIZE][KV_LORA + ROPE_DIM]   the hot pool, F32 or F16
//   binding 3  SEL   readonly   uint [n_heads][n_cold]   selected pages (indices into COLD), in order
//   binding 4  INFO  readonly   float [n_heads][4]   count of selected pages at [4h]
//   binding 5  OUT   writeonly  float [n_heads][n_splits_total][2 + KV_LORA]
//   binding 6  KVC   readonly   the cold pool, same layout (include/kv_tier.glsl)
//   binding 7  COLD  readonly   uint [n_cold][4]   (entry, rows, logical page, force mask)
//   push       n_heads, n_cold, split_base (first cold slot), n_splits_total, q_head, q_off, scale,
//              q_stride, q_tok0
//   spec       0: WG_SIZE (>= PAGE_SIZE, power of two), 1: KV_LORA, 2: ROPE_DIM, 3: PAGE_SIZE,
//              4: KV_F16 (cache rows in F16)
//   dispatch   (n_cold, n_heads, 1)
//   reference  tests/ref/ref.c ref_attn_mla() over the selected pages
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint KV_LORA = 64;
layout(constant_id = 2) const uint ROPE_DIM = 16;
layout(constant_id = 3) const uint PAGE_SIZE = 32;
layout(local_size_x_id = 0) in;

#include "reduce.glsl"
#define KV_F16_ID 4
#define KV_BINDING 2
#define KVC_BINDING 6
#include "kv_tier.glsl"

layout(set = 0, binding = 0, std430) readonly buffer QA { float qa[]; };
layout(set = 0, binding = 1, std430) readonly buffer QR { float qr[]; };
layout(set = 0, binding = 3, std430) readonly buffer Sel { uint sel[]; };
layout(set = 0, binding = 4, std430) readonly buffer Info { float info[]; };
layout(set = 0, binding = 5, std430) writeonly buffer Out { float o[]; };
layout(set = 0, binding = 7, std430) readonly buffer Cold { uint cold_list[]; };
layout(push_constant) uniform Push {
    uint n_heads; uint n_cold; uint split_base; uint n_splits_total; uint q_head; uint q_off; float scale;
    uint q_stride; uint q_tok0;
} pc;

const uint ROW = KV_LORA + ROPE_DIM;
shared float sh_q[ROW];
shared float sh_e[PAGE_SIZE];

void main()
{
    uint i = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    if (i >= uint(info[4 * h])) return;   // not selected: uniform per workgroup
    uint entry = cold_list[4 * sel[h * pc.n_cold + i]];
    uint rb = entry_slot(entry) * PAGE_SIZE * ROW;
    bool cold = entry_cold(entry);
    uint qa0 = (pc.q_tok0 * pc.n_heads + h) * KV_LORA, qr0 = pc.q_tok0 * pc.q_stride + h * pc.q_head + pc.q_off;
    for (uint j = lid; j < ROW; j += WG_SIZE)
        sh_q[j] = j < KV_LORA ? qa[qa0 + j] : qr[qr0 + j - KV_LORA];
    barrier();
    float s = -3.0e38;
    if (lid < PAGE_SIZE) {
        float d = 0.0;
        for (uint j = 0; j < ROW; j++) d += sh_q[j] * kv_load(cold, rb + lid * ROW + j);
        s = d * pc.scale;
    }
    float m = wg_max(s);
    float e = lid < PAGE_SIZE ? exp(s - m) : 0.0;
    if (lid < PAGE_SIZE) sh_e[lid] = e;
    float l = wg_sum(e);   // its barriers publish sh_e
    uint ob = (h * pc.n_splits_total + pc.split_base + i) * (2 + KV_LORA);
    for (uint j = lid; j < KV_LORA; j += WG_SIZE) {
        float acc = 0.0;
        if (cold)
            for (uint r = 0; r < PAGE_SIZE; r++) acc += sh_e[r] * kv_load(true, rb + r * ROW + j);
        else
            for (uint r = 0; r < PAGE_SIZE; r++) acc += sh_e[r] * kv_load(false, rb + r * ROW + j);
        o[ob + 2 + j] = acc;
    }
    if (lid == 0) {
        o[ob] = m;
        o[ob + 1] = l;
    }
}
