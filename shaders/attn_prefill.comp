// attn_prefill.comp: MLA attention for a block of QB consecutive query tokens
// of one head over one split of the paged latent cache (the prefill form of
// attn_partial: each key row is loaded once for QB queries). Same maths and
// the same partial output (m, l, acc) per (token, head, split) as
// attn_partial.comp, so attn_merge combines either.
// No reductions across invocations: invocation q < QB finds its query's max
// and sum serially, which suits CPU devices and is cheap for SPLIT_LEN keys.
//   binding 0  QA     readonly   float [n_tok][n_heads][KV_LORA]
//   binding 1  QR     readonly   float [n_tok][q_stride]   roped q_pe at h*q_head + q_off
//   binding 2  KV     readonly   [n_slots * PAGE_SIZE][KV_LORA + ROPE_DIM], F32 or F16 (include/kv_tier.glsl)
//   binding 3  PAGES  readonly   uint [n_pages]   entries (include/kv_tier.glsl)
//   binding 4  POS    readonly   int [n_tok]   (keys 0..pos[t] attend)
//   binding 5  OUT    writeonly  float [n_tok][n_heads][n_splits][2 + KV_LORA]
//   binding 6  KVC    readonly   the cold pool, same layout as KV
//   push       n_heads, q_stride, q_head, q_off, n_tok, n_splits, scale, tok0 (first token of the
//              sequence in every token-indexed buffer: one sequence inside a batch)
//   spec       0: WG_SIZE, 1: SPLIT_LEN (multiple of PAGE_SIZE), 2: KV_LORA, 3: ROPE_DIM,
//              4: PAGE_SIZE (power of two), 5: QB queries per workgroup (<= WG_SIZE),
//              6: KV_F16 (cache rows in F16)
//   dispatch   (n_splits, n_heads, ceil(n_tok / QB))
//   reference  tests/ref/ref.c ref_attn_mla()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint SPLIT_LEN = 256;
layout(constant_id = 2) const uint KV_LORA = 64;
layout(constant_id = 3) const uint ROPE_DIM = 16;
layout(constant_id = 4) const uint PAGE_SIZE = 32;
layout(constant_id = 5) const uint QB = 8;
layout(local_size_x_id = 0) in;

#define KV_F16_ID 6
#define KV_BINDING 2
#define KVC_BINDING 6
#include "kv_tier.glsl"

layout(set = 0, binding = 0, std430) readonly buffer QA { float qa[]; };
layout(set = 0, binding = 1, std430) readonly buffer QR { float qr[]; };
layout(set = 0, binding = 3, std430) readonly buffer Pages { uint pages[]; };
layout(set = 0, binding = 4, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 5, std430) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Push {
    uint n_heads; uint q_stride; uint q_head; uint q_off; uint n_tok; uint n_splits; float scale; uint tok0;
} pc;

const uint ROW = KV_LORA + ROPE_DIM;
shared float sh_q[QB][KV_LORA + ROPE_DIM];
shared float sh_s[QB][SPLIT_LEN];   // scores, then exp(score - max)
shared uint sh_len[QB];

void main()
{
    uint s = gl_WorkGroupID.x, h = gl_WorkGroupID.y, b0 = gl_WorkGroupID.z * QB, lid = gl_LocalInvocationID.x;
    uint nq = min(QB, pc.n_tok - b0), t0 = pc.tok0 + b0;
    uint begin = s * SPLIT_LEN;
    // rows of absent queries (a short last block) are zero, so the score
    // loop below can run over all QB with constant bounds (kept in registers)
    for (uint e = lid; e < QB * ROW; e += WG_SIZE) {
        uint q = e / ROW, j = e % ROW, t = t0 + q;
        sh_q[q][j] = q >= nq         ? 0.0
                     : j < KV_LORA ? qa[(t * pc.n_heads + h) * KV_LORA + j]
                                   : qr[t * pc.q_stride + h * pc.q_head + pc.q_off + j - KV_LORA];
    }
    if (lid < nq) {
        uint n_keys = uint(pos[t0 + lid]) + 1u;
        sh_len[lid] = begin < n_keys ? min(SPLIT_LEN, n_keys - begin) : 0u;
    }
    barrier();
    // the longest query of the block bounds the keys any of them reads
    uint len = 0;
    for (uint q = 0; q < nq; q++) len = max(len, sh_len[q]);

    // scores: one key per invocation, against every query of the block
    for (uint i = lid; i < len; i += WG_SIZE) {
        uint p = begin + i;
        uint e = pages[p / PAGE_SIZE];
        uint rb = (entry_slot(e) * PAGE_SIZE + p % PAGE_SIZE) * ROW;
        bool cold = entry_cold(e);
        float d[QB];
        for (uint q = 0; q < QB; q++) d[q] = 0.0;
        for (uint j = 0; j < ROW; j++) {
            float k = kv_load(cold, rb + j);
            for (uint q = 0; q < QB; q++) d[q] += sh_q[q][j] * k;
        }
        for (uint q = 0; q < QB; q++) sh_s[q][i] = d[q] * pc.scale;
    }
    barrier();
    // per query, serially: max, exp, sum (keys past its causal limit weigh 0)
    float l = 0.0;
    if (lid < nq) {
        uint n = sh_len[lid];
        float m = -3.0e38;
        for (uint i = 0; i < n; i++) m = max(m, sh_s[lid][i]);
        for (uint i = 0; i < len; i++) {
            float e = i < n ? exp(sh_s[lid][i] - m) : 0.0;
            sh_s[lid][i] = e;
            l += e;
        }
        uint ob = (((t0 + lid) * pc.n_heads + h) * pc.n_splits + s) * (2 + KV_LORA);
        o[ob] = m;
        o[ob + 1] = l;   // 0 for an empty split: it then weighs nothing in the merge
    }
    barrier();
    // outputs: (query, dim) pairs over the invocations; a page's rows are contiguous
    for (uint e = lid; e < nq * KV_LORA; e += WG_SIZE) {
        uint q = e / KV_LORA, j = e % KV_LORA;
        uint n = sh_len[q];
        float acc = 0.0;
        for (uint i0 = 0; i0 < n; i0 += PAGE_SIZE) {
            uint pe = pages[(begin + i0) / PAGE_SIZE];
            uint rb = entry_slot(pe) * PAGE_SIZE * ROW + j;
            uint cnt = min(PAGE_SIZE, n - i0);
            if (entry_cold(pe))
                for (uint r = 0; r < cnt; r++) acc += sh_s[q][i0 + r] * kv_load(true, rb + r * ROW);
            else
                for (uint r = 0; r < cnt; r++) acc += sh_s[q][i0 + r] * kv_load(false, rb + r * ROW);
        }
        o[(((t0 + q) * pc.n_heads + h) * pc.n_splits + s) * (2 + KV_LORA) + 2 + j] = acc;
    }
}
