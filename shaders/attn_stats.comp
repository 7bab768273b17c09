// attn_stats.comp: statistics of the MLA attention rows of one layer, for
// calibration (`gsm calibrate`, DESIGN.md "GSM"). For query token t and head
// h it recomputes exactly what attn_prefill / attn_partial.comp
// attend with:
//   s[p] = scale * (<qa[t][h], c[p]> + <qr[t][h], k_pe[p]>)   for keys p = 0..pos[t]
//   w[p] = exp(s[p] - m) / l,  m = max_p s[p],  l = sum_p exp(s[p] - m)
// and writes one row of statistics (gsm/calib_plan.c gsmrt_gsm_head_acc_add):
//   out[t][h][b]          = sum of w[p] over keys whose distance pos[t] - p lies in
//                           band b: edges[b] <= distance < edges[b + 1] (the last band is open)
//   out[t][h][n_bands]    = sum of w[p] over the sink keys p < sink_tokens
//   out[t][h][n_bands+1]  = entropy -sum_p w[p] ln w[p] = ln l - sum_p w[p] (s[p] - m), in nats
// Scores of the first MAX_KEYS keys are kept in shared memory; keys beyond
// are recomputed in the second pass (any context length works).
//   binding 0  QA     readonly   float [n_tok][n_heads][KV_LORA]   absorbed queries
//   binding 1  QR     readonly   float [n_tok][q_stride]   roped q_pe at h*q_head + q_off
//   binding 2  KV     readonly   [n_slots * PAGE_SIZE][KV_LORA + ROPE_DIM], F32 or F16 (include/kv_tier.glsl)
//   binding 3  PAGES  readonly   uint [n_pages]   slot of each logical page
//   binding 4  POS    readonly   int [n_tok]   query positions (keys 0..pos attend)
//   binding 5  EDGES  readonly   uint [n_bands]   band edges, edges[0] = 0, increasing
//   binding 6  OUT    writeonly  float [n_tok][n_heads][n_bands + 2]
//   push       n_heads, q_stride, q_head, q_off, n_bands (1..16), sink_tokens, scale, tok0 (the first
//              token of the sequence in every token-indexed buffer: one sequence inside a batch)
//   spec       0: WG_SIZE (power of two), 1: KV_LORA, 2: ROPE_DIM, 3: PAGE_SIZE (power of two),
//              4: MAX_KEYS scores kept in shared memory, 5: KV_F16 (cache rows in F16)
//   dispatch   (n_heads, n_tok, 1): one workgroup per (head, token tok0 + y)
//   The page table entries must be hot slots (a dense cache: calibration runs dense).
//   reference  tests/ref/ref.c ref_attn_stats()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint KV_LORA = 64;
layout(constant_id = 2) const uint ROPE_DIM = 16;
layout(constant_id = 3) const uint PAGE_SIZE = 32;
layout(constant_id = 4) const uint MAX_KEYS = 2048;
layout(local_size_x_id = 0) in;

const uint MAX_BANDS = 16;
const uint ROW = KV_LORA + ROPE_DIM;

layout(set = 0, binding = 0, std430) readonly buffer QA { float qa[]; };
layout(set = 0, binding = 1, std430) readonly buffer QR { float qr[]; };
#define KV_F16_ID 5
#define KV_BINDING 2
#include "kv_tier.glsl"
layout(set = 0, binding = 3, std430) readonly buffer Pages { uint pages[]; };
layout(set = 0, binding = 4, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 5, std430) readonly buffer Edges { uint edges[]; };
layout(set = 0, binding = 6, std430) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Push {
    uint n_heads; uint q_stride; uint q_head; uint q_off; uint n_bands; uint sink_tokens; float scale; uint tok0;
} pc;

shared float sh_q[ROW];
shared uint sh_edges[MAX_BANDS];
shared float sh_s[MAX_KEYS];
shared float sh_red[WG_SIZE];
shared float sh_acc[WG_SIZE][MAX_BANDS + 2];

float score(uint p)
{
    uint rb = (pages[p / PAGE_SIZE] * PAGE_SIZE + p % PAGE_SIZE) * ROW;
    float d = 0.0;
    for (uint j = 0; j < ROW; j++) d += sh_q[j] * kv_load(false, rb + j);
    return d * pc.scale;
}

// tree reduction over the workgroup (max when is_max, else sum); every
// invocation gets the result
float reduce(float v, bool is_max)
{
    sh_red[gl_LocalInvocationID.x] = v;
    barrier();
    for (uint w = WG_SIZE / 2; w > 0; w /= 2) {
        if (gl_LocalInvocationID.x < w) {
            float a = sh_red[gl_LocalInvocationID.x], b = sh_red[gl_LocalInvocationID.x + w];
            sh_red[gl_LocalInvocationID.x] = is_max ? max(a, b) : a + b;
        }
        barrier();
    }
    float r = sh_red[0];
    barrier();
    return r;
}

void main()
{
    uint h = gl_WorkGroupID.x, t = pc.tok0 + gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    uint cur = uint(pos[t]), n = cur + 1u;
    for (uint j = lid; j < KV_LORA; j += WG_SIZE) sh_q[j] = qa[(t * pc.n_heads + h) * KV_LORA + j];
    for (uint j = lid; j < ROPE_DIM; j += WG_SIZE) sh_q[KV_LORA + j] = qr[t * pc.q_stride + h * pc.q_head + pc.q_off + j];
    for (uint b = lid; b < pc.n_bands; b += WG_SIZE) sh_edges[b] = edges[b];
    barrier();

    float m = -3.0e38;
    for (uint p = lid; p < n; p += WG_SIZE) {
        float s = score(p);
        if (p < MAX_KEYS) sh_s[p] = s;
        m = max(m, s);
    }
    m = reduce(m, true);   // its barriers also publish sh_s
    float l = 0.0;
    for (uint p = lid; p < n; p += WG_SIZE) l += exp((p < MAX_KEYS ? sh_s[p] : score(p)) - m);
    l = reduce(l, false);

    float acc[MAX_BANDS + 2];
    for (uint b = 0; b < MAX_BANDS + 2; b++) acc[b] = 0.0;
    float inv_l = 1.0 / l, sink = 0.0, ws = 0.0;
    for (uint p = lid; p < n; p += WG_SIZE) {
        float d = (p < MAX_KEYS ? sh_s[p] : score(p)) - m;
        float w = exp(d) * inv_l;
        uint dist = cur - p, b = 0;
        while (b + 1 < pc.n_bands && dist >= sh_edges[b + 1]) b++;
        acc[b] += w;
        if (p < pc.sink_tokens) sink += w;
        ws += w * d;
    }
    for (uint b = 0; b < MAX_BANDS; b++) sh_acc[lid][b] = acc[b];
    sh_acc[lid][MAX_BANDS] = sink;
    sh_acc[lid][MAX_BANDS + 1] = ws;
    barrier();
    // one invocation per statistic sums the workgroup's partial sums
    uint W = pc.n_bands + 2u, ob = (t * pc.n_heads + h) * W;
    if (lid < W) {
        uint k = lid < pc.n_bands ? lid : MAX_BANDS + (lid - pc.n_bands);
        float v = 0.0;
        for (uint i = 0; i < WG_SIZE; i++) v += sh_acc[i][k];
        // entropy: -sum w ln w with ln w = d - ln l
        o[ob + lid] = lid == pc.n_bands + 1u ? max(log(l) - v, 0.0) : v;
    }
}
