// gate_bound.comp: GSM's per-page upper bound on the best attention score of
// a head over a cold page, from the page's summary (DESIGN.md step 2):
//   ub = scale * sum_c max(q_c * min_c, q_c * max_c)
// with q = [q_abs (KV_LORA) | q_pe (ROPE_DIM)] for MLA. fp32 sums round, so
// the bound is raised by the worst-case rounding of products and sum,
// n * 2^-24 * sum |terms|, and by one more rounding for the scale: never
// below the exact bound.
//   binding 0  QA     readonly   float [n_tok][n_heads][KV_LORA]   (token q_tok0 is the query)
//   binding 1  QR     readonly   float [n_tok][q_stride]   q_pe of head h at h*q_head + q_off
//   binding 2  SUM    readonly   float [n_pages_max][2][KV_LORA + ROPE_DIM]   by logical page
//   binding 3  COLD   readonly   uint [n_pages][4]   (entry, rows, logical page, force mask)
//   binding 4  UB     writeonly  float [n_heads][n_pages]
//   push       n_heads, n_pages, q_head, q_off, scale, q_stride, q_tok0
//   spec       0: WG_SIZE, 1: KV_LORA, 2: ROPE_DIM
//   dispatch   (ceil(n_pages / WG_SIZE), n_heads, 1)
//   reference  gsm/gate.c gsmrt_gsm_page_bound() (in double)
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint KV_LORA = 64;
layout(constant_id = 2) const uint ROPE_DIM = 16;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer QA { float qa[]; };
layout(set = 0, binding = 1, std430) readonly buffer QR { float qr[]; };
layout(set = 0, binding = 2, std430) readonly buffer Sum { float sum[]; };
layout(set = 0, binding = 3, std430) readonly buffer Pages { uint pages[]; };
layout(set = 0, binding = 4, std430) writeonly buffer UB { float ub[]; };
layout(push_constant) uniform Push {
    uint n_heads; uint n_pages; uint q_head; uint q_off; float scale; uint q_stride; uint q_tok0;
} pc;

const uint ROW = KV_LORA + ROPE_DIM;

void main()
{
    uint p = gl_GlobalInvocationID.x, h = gl_WorkGroupID.y;
    if (p >= pc.n_pages || h >= pc.n_heads) return;
    uint lo = 2 * pages[4 * p + 2] * ROW, hi = lo + ROW;
    uint qa0 = (pc.q_tok0 * pc.n_heads + h) * KV_LORA, qr0 = pc.q_tok0 * pc.q_stride + h * pc.q_head + pc.q_off;
    float s = 0.0, mag = 0.0;
    for (uint c = 0; c < ROW; c++) {
        float q = c < KV_LORA ? qa[qa0 + c] : qr[qr0 + c - KV_LORA];
        float t = max(q * sum[lo + c], q * sum[hi + c]);
        s += t;
        mag += abs(t);
    }
    // an empty page (min +inf, max -inf) gives -inf or NaN terms: it holds no mass
    if (isinf(sum[lo]) && sum[lo] > 0.0) {
        ub[h * pc.n_pages + p] = -1.0 / 0.0;
        return;
    }
    float err = float(ROW) * mag * 5.9604645e-8;   // 2^-24 per addition, bounded by n * sum|t|
    float v = (s + err) * pc.scale;
    ub[h * pc.n_pages + p] = v + abs(v) * 2.384e-7;
}
