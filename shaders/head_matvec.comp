// head_matvec.comp: one small matrix per head, applied per token:
//   Y[t][h*y_head + y_off + r] = sum_c W[h][r][c] * X[t][h*x_head + x_off + c]
// MLA uses it to absorb attn_k_b into the query (R = kv_lora, C = nope) and
// to apply attn_v_b to the attention output (R = v_dim, C = kv_lora).
//   binding 0  W  readonly   weights [n_heads][n_rows][n_cols]
//   binding 1  X  readonly   float [n_tok][x_stride]
//   binding 2  Y  writeonly  float [n_tok][y_stride]
//   push       n_cols, n_rows, n_heads, n_tok, x_stride, x_head, x_off, y_stride, y_head, y_off
//   spec       0: WG_SIZE (power of two)
//   dispatch   one workgroup per (r, h, t), flattened r fastest, split over (x, y);
//              with ROW_PER_INVOCATION one invocation per (r, h, t)
//   reference  tests/ref/ref.c ref_head_matvec()
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
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
#include "weight_dot.glsl"
layout(push_constant) uniform Push {
    uint n_cols; uint n_rows; uint n_heads; uint n_tok;
    uint x_stride; uint x_head; uint x_off; uint y_stride; uint y_head; uint y_off;
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
    if (g >= pc.n_rows * pc.n_heads * pc.n_tok) return;   // uniform per workgroup when reducing
    uint r = g % pc.n_rows, h = (g / pc.n_rows) % pc.n_heads, t = g / (pc.n_rows * pc.n_heads);
    uint xb = t * pc.x_stride + h * pc.x_head + pc.x_off;
    uint row = h * pc.n_rows + r;   // row of the [n_heads * n_rows][n_cols] matrix
    float acc = row_dot(row, xb, pc.n_cols, lid, stride);
#ifndef ROW_PER_INVOCATION
    acc = wg_sum(acc);
    if (lid == 0)
#endif
        y[t * pc.y_stride + h * pc.y_head + pc.y_off + r] = acc;
}
