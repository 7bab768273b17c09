// scale.comp: y[i] = s * a[i].
//   binding 0  A  readonly   float [n]
//   binding 1  Y  writeonly  float [n]
//   push       n, s
//   spec       0: WG_SIZE
//   dispatch   ceil(n / WG_SIZE) workgroups, split over (x, y): see flat_group()
//   reference  tests/ref/ref.c ref_scale()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"

layout(set = 0, binding = 0, std430) readonly buffer A { float a[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; float s; } pc;

void main()
{
    uint i = flat_group() * WG_SIZE + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    y[i] = pc.s * a[i];
}
