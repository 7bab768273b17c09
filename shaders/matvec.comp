// matvec.comp: y[y_offset + r] = sum_c W[r][c] * x[c] for the rows of
// one weight chunk. Compiled per weight type (include/weights.glsl) and per
// variant: USE_SUBGROUP or not picks the reduction; ROW_PER_INVOCATION none.
//   binding 0  W  readonly   weights [n_rows][n_cols] (one chunk)
//   binding 1  X  readonly   float [n_cols]
//   binding 2  Y  writeonly  float [y_offset + n_rows]
//   push       n_cols, n_rows, y_offset
//   spec       0: WG_SIZE, invocations per row (power of two)
//   dispatch   one workgroup per row, split over (x, y): see flat_group();
//              with ROW_PER_INVOCATION, one invocation per row (ceil(n_rows / WG_SIZE) groups)
//   reference  tests/ref/ref.c ref_matvec()
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
layout(push_constant) uniform Push { uint n_cols; uint n_rows; uint y_offset; } pc;

#include "weight_dot.glsl"

void main()
{
#ifdef ROW_PER_INVOCATION
    // One row per invocation, no reduction and no barrier: what CPU devices
    // (llvmpipe) run fastest, where a workgroup's barriers are costly.
    uint row = flat_group() * WG_SIZE + gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    y[pc.y_offset + row] = row_dot(row, 0, pc.n_cols, 0, 1);
#else
    uint row = flat_group();
    if (row >= pc.n_rows) return;   // uniform per workgroup: no barrier is skipped unevenly
    float total = wg_sum(row_dot(row, 0, pc.n_cols, gl_LocalInvocationID.x, WG_SIZE));
    if (gl_LocalInvocationID.x == 0) y[pc.y_offset + row] = total;
#endif
}
