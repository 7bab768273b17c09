// swiglu.comp: y[i] = silu(g[i]) * u[i], silu(z) = z / (1 + exp(-z)).
//   binding 0  G  readonly   float [n]
//   binding 1  U  readonly   float [n]
//   binding 2  Y  writeonly  float [n]
//   push       n
//   spec       0: WG_SIZE
//   dispatch   ceil(n / WG_SIZE) workgroups, split over (x, y): see flat_group()
//   reference  tests/ref/ref.c ref_swiglu()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"

layout(set = 0, binding = 0, std430) readonly buffer G { float g[]; };
layout(set = 0, binding = 1, std430) readonly buffer U { float u[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main()
{
    uint i = flat_group() * WG_SIZE + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    y[i] = silu(g[i]) * u[i];
}
