// hc_post.comp: the post-mixing of DeepSeek V4's hyper-connections
// (tools/deepseek4_ref.py HyperConnection.post), element-wise:
//   x_new[t][d][e] = post[t][d] * f[t][e] + sum_s comb[t][s][d] * x[t][s][e]
// with post and comb as hc_pre wrote them (MIX). X_NEW must not alias X: every
// output reads all hc streams of its column.
//   binding 0  F      readonly   float [n_tok][n_embd]        the sub-block output
//   binding 1  X      readonly   float [n_tok][hc][n_embd]
//   binding 2  MIX    readonly   float [n_tok][hc + hc*hc]    post, comb [src][dst]
//   binding 3  XN     writeonly  float [n_tok][hc][n_embd]
//   push       n_tok, n_embd, hc
//   spec       0: WG_SIZE
//   dispatch   (ceil(n_embd / WG_SIZE), n_tok * hc, 1)
//   reference  tests/ref/ref_v4.c ref_hc_post()
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer F { float f[]; };
layout(set = 0, binding = 1, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 2, std430) readonly buffer Mix { float mixv[]; };
layout(set = 0, binding = 3, std430) writeonly buffer XN { float xn[]; };
layout(push_constant) uniform Push { uint n_tok; uint n_embd; uint hc; } pc;

void main()
{
    uint e = gl_WorkGroupID.x * WG_SIZE + gl_LocalInvocationID.x;
    uint t = gl_WorkGroupID.y / pc.hc, d = gl_WorkGroupID.y % pc.hc;
    if (e >= pc.n_embd || t >= pc.n_tok) return;
    uint hc = pc.hc, mb = t * (hc + hc * hc), xb = t * hc * pc.n_embd;
    float acc = mixv[mb + d] * f[t * pc.n_embd + e];
    for (uint s = 0; s < hc; s++) acc += mixv[mb + hc + s * hc + d] * x[xb + s * pc.n_embd + e];
    xn[xb + d * pc.n_embd + e] = acc;
}
