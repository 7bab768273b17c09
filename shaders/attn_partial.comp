// attn_partial.comp: MLA attention over the cached latent, one split of
// the keys, for decode (absorbed form, shared/docs/deepseek2-gguf.md §6):
//   s[p]   = scale * (<qa[t][h], c[p]> + <qr[t][h], k_pe[p]>)   for p in the split, p <= pos[t]
//   m      = max_p s[p],  l = sum_p exp(s[p] - m),  acc[j] = sum_p exp(s[p] - m) * c[p][j]
// written as one partial (m, l, acc) per (t, h, split); attn_merge combines
// the splits by the log-sum-exp rule. A cache row is [c (KV_LORA) | k_pe
// (ROPE_DIM)]; position p lives in row pages[p / PAGE_SIZE] * PAGE_SIZE + p % PAGE_SIZE.
// PAGE_SIZE is a specialization constant (a power of two) so that the row
// arithmetic is shifts: integer division is scalarised on CPU devices.
//   binding 0  QA     readonly   float [n_tok][n_heads][KV_LORA]   absorbed queries
//   binding 1  QR     readonly   float [n_tok][q_stride]   roped q_pe at h*q_head + q_off
//   binding 2  KV     readonly   [n_slots * page_size][KV_LORA + ROPE_DIM]   hot pool, F32 or F16
//                                (include/kv_tier.glsl)
//   binding 3  PAGES  readonly   uint [n_pages]   entry of each logical page (include/kv_tier.glsl)
//   binding 4  POS    readonly   int [n_tok]   query positions (keys 0..pos attend)
//   binding 5  OUT    writeonly  float [n_tok][n_heads][n_splits][2 + KV_LORA]
//   binding 6  KVC    readonly   the cold pool, same layout
//   push       n_heads, q_stride, q_head, q_off, page_size (= PAGE_SIZE, checked by the host), n_splits, scale,
//              q_tok0 (first token of QA/QR), io_tok0 (first token of POS/OUT): one sequence's
//              tokens inside a batch
//   spec       0: WG_SIZE (power of two), 1: SPLIT_LEN keys per split (a multiple of PAGE_SIZE),
//              2: KV_LORA, 3: ROPE_DIM, 4: PAGE_SIZE (power of two), 5: KV_F16 (cache rows in F16)
//   dispatch   (n_splits, n_heads, n_tok)
//   reference  tests/ref/ref.c ref_attn_mla()
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint SPLIT_LEN = 256;
layout(constant_id = 2) const uint KV_LORA = 64;
layout(constant_id = 3) const uint ROPE_DIM = 16;
layout(constant_id = 4) const uint PAGE_SIZE = 32;
layout(local_size_x_id = 0) in;

#include "common.glsl"
#include "reduce.glsl"
#define KV_F16_ID 5
#define KV_BINDING 2
#define KVC_BINDING 6
#include "kv_tier.glsl"

layout(set = 0, binding = 0, std430) readonly buffer QA { float qa[]; };
layout(set = 0, binding = 1, std430) readonly buffer QR { float qr[]; };
layout(set = 0, binding = 3, std430) readonly buffer Pages { uint pages[]; };
layout(set = 0, binding = 4, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 5, std430) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Push {
    uint n_heads; uint q_stride; uint q_head; uint q_off; uint page_size; uint n_splits; float scale;
    uint q_tok0; uint io_tok0;
} pc;

const uint ROW = KV_LORA + ROPE_DIM;
shared float sh_q[KV_LORA + ROPE_DIM];
shared float sh_s[SPLIT_LEN];


void main()
{
    uint s = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    uint t = pc.q_tok0 + gl_WorkGroupID.z, to = pc.io_tok0 + gl_WorkGroupID.z;
    uint n_keys = uint(pos[to]) + 1u;
    uint begin = s * SPLIT_LEN;
    uint len = begin < n_keys ? min(SPLIT_LEN, n_keys - begin) : 0u;

    for (uint j = lid; j < KV_LORA; j += WG_SIZE) sh_q[j] = qa[(t * pc.n_heads + h) * KV_LORA + j];
    for (uint j = lid; j < ROPE_DIM; j += WG_SIZE) sh_q[KV_LORA + j] = qr[t * pc.q_stride + h * pc.q_head + pc.q_off + j];
    barrier();

    float m = -3.0e38;
    for (uint i = lid; i < len; i += WG_SIZE) {
        uint p = begin + i, e = pages[p / PAGE_SIZE];
        uint rb = (entry_slot(e) * PAGE_SIZE + p % PAGE_SIZE) * ROW;
        bool cold = entry_cold(e);
        float d = 0.0;
        for (uint j = 0; j < ROW; j++) d += sh_q[j] * kv_load(cold, rb + j);
        d *= pc.scale;
        sh_s[i] = d;
        m = max(m, d);
    }
    m = wg_max(m);   // its barriers also make every score in sh_s visible
    float l = 0.0;
    for (uint i = lid; i < len; i += WG_SIZE) {
        float e = exp(sh_s[i] - m);
        sh_s[i] = e;
        l += e;
    }
    l = wg_sum(l);   // its barriers also publish sh_s to the whole workgroup

    uint ob = ((to * pc.n_heads + h) * pc.n_splits + s) * (2 + KV_LORA);
    // page by page: one table lookup per page, rows contiguous within it
    for (uint j = lid; j < KV_LORA; j += WG_SIZE) {
        float acc = 0.0;
        for (uint i0 = 0; i0 < len; i0 += PAGE_SIZE) {
            uint e = pages[(begin + i0) / PAGE_SIZE];
            uint rb = entry_slot(e) * PAGE_SIZE * ROW + j;
            uint n = min(PAGE_SIZE, len - i0);
            if (entry_cold(e))
                for (uint r = 0; r < n; r++) acc += sh_s[i0 + r] * kv_load(true, rb + r * ROW);
            else
                for (uint r = 0; r < n; r++) acc += sh_s[i0 + r] * kv_load(false, rb + r * ROW);
        }
        o[ob + 2 + j] = acc;
    }
    if (lid == 0) {
        o[ob] = m;
        o[ob + 1] = l;   // 0 for an empty split: it then weighs nothing in the merge
    }
}
