// moe_matvec.comp: the routed experts' products, for the experts of one
// weight chunk [expert_begin, expert_begin + n_experts):
//   Y[t][k][r] = sum_c W[e][r][c] * X[t][k * x_per_slot][c],  e = ids[t][k]
// x_per_slot = 0: every slot reads the token's row (gate and up projections);
// x_per_slot = 1: slot k reads its own row (down projection).
//   binding 0  W    readonly   weights [n_experts][n_rows][n_cols] (one chunk of experts)
//   binding 1  X    readonly   float [n_tok][x_slots][n_cols]
//   binding 2  IDS  readonly   uint [n_tok][n_used]
//   binding 3  Y    writeonly  float [n_tok][n_used][n_rows]
//   push       n_cols, n_rows, n_tok, n_used, x_per_slot, expert_begin, n_experts
//   spec       0: WG_SIZE (power of two)
//   dispatch   one workgroup per (r, k, t), flattened r fastest, split over (x, y);
//              with ROW_PER_INVOCATION one invocation per (r, k, t)
//   reference  tests/ref/ref.c ref_moe_matvec()
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(constant_id = 0) const uint WG_SIZE = 32;
layout(local_size_x_id = 0) in;

#include "common.glsl"
#include "weights.glsl"
#include "reduce.glsl"

layout(set = 0, binding = 1, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 2, std430) readonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 3, std430) writeonly buffer Y { float y[]; };
#include "weight_dot.glsl"
layout(push_constant) uniform Push {
    uint n_cols; uint n_rows; uint n_tok; uint n_used; uint x_per_slot; uint expert_begin; uint n_experts;
} pc;

void main()
{
#ifdef ROW_PER_INVOCATION
    // one output per invocation, no reduction (CPU devices)
    uint g = flat_group() * WG_SIZE + gl_LocalInvocationID.x;
    uint lid = 0, stride = 1;
#else
    uint g = flat_group();
    uint lid = gl_LocalInvocationID.x, stride = WG_SIZE;
#endif
    if (g >= pc.n_rows * pc.n_used * pc.n_tok) return;
    uint r = g % pc.n_rows, k = (g / pc.n_rows) % pc.n_used, t = g / (pc.n_rows * pc.n_used);
    uint e = ids[t * pc.n_used + k];
    if (e < pc.expert_begin || e - pc.expert_begin >= pc.n_experts) return;   // another chunk's expert
    uint row = (e - pc.expert_begin) * pc.n_rows + r;
    uint xb = (t * (pc.x_per_slot != 0u ? pc.n_used : 1u) + k * pc.x_per_slot) * pc.n_cols;
    float acc = row_dot(row, xb, pc.n_cols, lid, stride);
#ifndef ROW_PER_INVOCATION
    acc = wg_sum(acc);
    if (lid == 0)
#endif
        y[(t * pc.n_used + k) * pc.n_rows + r] = acc;
}
