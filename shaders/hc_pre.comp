// hc_pre.comp: the pre-mixing of DeepSeek V4's hyper-connections (llama.cpp
// deepseek4; tools/deepseek4_ref.py HyperConnection.pre and the head's hc),
// one workgroup per token. The mixes product fn @ rmsnorm(concat_s x[s]) is
// computed before as fn @ concat_s x[s] (the existing matvec / matmul): the
// norm is one factor per token, r = 1 / sqrt(mean(x^2) + eps_rms), applied here.
//   m    = r * raw[t]
//   pre  = sigmoid(m[0..hc) * scale[0] + base[0..hc)) + eps_hc
//   (block mode only, head == 0)
//   post = 2 * sigmoid(m[hc..2hc) * scale[1] + base[hc..2hc))
//   comb = Sinkhorn(m[2hc..) * scale[2] + base[2hc..)) as [src][dst]: softmax
//          over dst + eps_hc, divide every column (dst) by its sum over src
//          (+ eps_hc), then iters - 1 times rows (over dst) and columns again
//          (iters 0 acts as 1, as the reference does)
//   y[t][e] = sum_s pre[s] * x[t][s][e]
//   binding 0  X     readonly   float [n_tok][hc][n_embd]   the residual streams
//   binding 1  RAW   readonly   float [n_tok][n_mix]        fn @ concat x (n_mix = hc or (2 + hc) hc)
//   binding 2  BASE  readonly   float [n_mix]
//   binding 3  SCL   readonly   float [3] (head: [1])
//   binding 4  Y     writeonly  float [n_tok][n_embd]       the sub-block input
//   binding 5  MIX   writeonly  float [n_tok][hc + hc*hc]   post, then comb [src][dst] (not written for the head)
//   push       n_tok, n_embd, hc, iters, eps_rms, eps_hc, head
//   spec       0: WG_SIZE (power of two), 1: MAX_HC (at least hc)
//   dispatch   one workgroup per token, split over (x, y): see flat_group()
//   reference  tests/ref/ref_v4.c ref_hc_pre()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint MAX_HC = 8;
layout(local_size_x_id = 0) in;

#include "common.glsl"
#include "reduce.glsl"

layout(set = 0, binding = 0, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 1, std430) readonly buffer Raw { float raw[]; };
layout(set = 0, binding = 2, std430) readonly buffer Base { float base[]; };
layout(set = 0, binding = 3, std430) readonly buffer Scl { float scl[]; };
layout(set = 0, binding = 4, std430) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 5, std430) writeonly buffer Mix { float mix_out[]; };
layout(push_constant) uniform Push {
    uint n_tok; uint n_embd; uint hc; uint iters; float eps_rms; float eps_hc; uint head;
} pc;

shared float sh_pre[MAX_HC];

float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }

void main()
{
    uint t = flat_group();
    if (t >= pc.n_tok) return;
    uint lid = gl_LocalInvocationID.x, hc = pc.hc, width = hc * pc.n_embd;
    uint xb = t * width;
    float ss = 0.0;
    for (uint i = lid; i < width; i += WG_SIZE) ss += x[xb + i] * x[xb + i];
    float r = inversesqrt(wg_sum(ss) / float(width) + pc.eps_rms);
    uint n_mix = pc.head != 0u ? hc : (2u + hc) * hc;
    uint mb = t * n_mix;

    // The small per-token maths (at most MAX_HC^2 values) by one invocation.
    if (lid == 0u) {
        for (uint s = 0; s < hc; s++) sh_pre[s] = sigmoid(raw[mb + s] * r * scl[0] + base[s]) + pc.eps_hc;
        if (pc.head == 0u) {
            uint ob = t * (hc + hc * hc);
            for (uint s = 0; s < hc; s++)
                mix_out[ob + s] = 2.0 * sigmoid(raw[mb + hc + s] * r * scl[1] + base[hc + s]);
            float c[MAX_HC * MAX_HC];
            for (uint s = 0; s < hc; s++) {
                float m = -3.0e38;
                for (uint d = 0; d < hc; d++) {
                    uint k = 2u * hc + s * hc + d;
                    c[s * hc + d] = raw[mb + k] * r * scl[2] + base[k];
                    m = max(m, c[s * hc + d]);
                }
                float z = 0.0;
                for (uint d = 0; d < hc; d++) {
                    c[s * hc + d] = exp(c[s * hc + d] - m);
                    z += c[s * hc + d];
                }
                for (uint d = 0; d < hc; d++) c[s * hc + d] = c[s * hc + d] / z + pc.eps_hc;
            }
            for (uint it = 0; it < max(pc.iters, 1u); it++) {   // the first column pass always runs
                if (it > 0u) {   // rows: over dst for every src
                    for (uint s = 0; s < hc; s++) {
                        float z = 0.0;
                        for (uint d = 0; d < hc; d++) z += c[s * hc + d];
                        for (uint d = 0; d < hc; d++) c[s * hc + d] /= z + pc.eps_hc;
                    }
                }
                for (uint d = 0; d < hc; d++) {   // columns: over src for every dst
                    float z = 0.0;
                    for (uint s = 0; s < hc; s++) z += c[s * hc + d];
                    for (uint s = 0; s < hc; s++) c[s * hc + d] /= z + pc.eps_hc;
                }
            }
            for (uint k = 0; k < hc * hc; k++) mix_out[ob + hc + k] = c[k];
        }
    }
    barrier();
    for (uint e = lid; e < pc.n_embd; e += WG_SIZE) {
        float acc = 0.0;
        for (uint s = 0; s < hc; s++) acc += sh_pre[s] * x[xb + s * pc.n_embd + e];
        y[t * pc.n_embd + e] = acc;
    }
}
