// rms_norm.comp: y[r][i] = x[r][i] * w[i] / sqrt(mean_i(x[r][i]^2) + eps)
//   binding 0  X  readonly   float [n_rows][x_stride] (first n_cols of each row)
//   binding 1  W  readonly   float [n_cols]
//   binding 2  Y  writeonly  float [n_rows][y_stride]
//   push       n_cols, n_rows, eps, x_stride, y_stride
//   (X and Y may be the same range: each element is read before it is written,
//   by the same invocation)
//   spec       0: WG_SIZE, invocations per row (power of two)
//   dispatch   one workgroup per row, split over (x, y): see flat_group()
//   reference  tests/ref/ref.c ref_rms_norm()
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
layout(set = 0, binding = 1, std430) readonly buffer W { float w[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n_cols; uint n_rows; float eps; uint x_stride; uint y_stride; } pc;

void main()
{
    uint row = flat_group();
    if (row >= pc.n_rows) return;
    uint lid = gl_LocalInvocationID.x, xb = row * pc.x_stride, yb = row * pc.y_stride;
    float ss = 0.0;
    for (uint i = lid; i < pc.n_cols; i += WG_SIZE) ss += x[xb + i] * x[xb + i];
    float inv = inversesqrt(wg_sum(ss) / float(pc.n_cols) + pc.eps);
    for (uint i = lid; i < pc.n_cols; i += WG_SIZE) y[yb + i] = x[xb + i] * inv * w[i];
}
