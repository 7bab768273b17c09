// softmax.comp: y[r][i] = exp(s*x[r][i] - m) / sum_j exp(s*x[r][j] - m),
// m = max_j s*x[r][j] (the max keeps exp from overflowing).
//   binding 0  X  readonly   float [n_rows][n_cols]
//   binding 1  Y  writeonly  float [n_rows][n_cols]
//   push       n_cols, n_rows, scale (s)
//   spec       0: WG_SIZE, invocations per row (power of two)
//   dispatch   one workgroup per row, split over (x, y): see flat_group()
//   reference  tests/ref/ref.c ref_softmax()
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"
#include "reduce.glsl"

layout(set = 0, binding = 0, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n_cols; uint n_rows; float scale; } pc;

void main()
{
    uint row = flat_group();
    if (row >= pc.n_rows) return;
    uint lid = gl_LocalInvocationID.x, base = row * pc.n_cols;
    float m = -3.0e38;
    for (uint i = lid; i < pc.n_cols; i += WG_SIZE) m = max(m, pc.scale * x[base + i]);
    m = wg_max(m);
    float s = 0.0;
    for (uint i = lid; i < pc.n_cols; i += WG_SIZE) s += exp(pc.scale * x[base + i] - m);
    float inv = 1.0 / wg_sum(s);
    for (uint i = lid; i < pc.n_cols; i += WG_SIZE) y[base + i] = exp(pc.scale * x[base + i] - m) * inv;
}
