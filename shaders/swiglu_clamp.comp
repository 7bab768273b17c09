// swiglu_clamp.comp: DeepSeek V4's clamped SwiGLU (llama.cpp swiglu_clamp):
//   y[i] = silu(min(g[i], L)) * clamp(u[i], -L, L);  L <= 1e-6: no clamp (plain SwiGLU)
//   binding 0  G  readonly   float [n]
//   binding 1  U  readonly   float [n]
//   binding 2  Y  writeonly  float [n]
//   push       n, limit
//   spec       0: WG_SIZE
//   dispatch   ceil(n / WG_SIZE) workgroups, split over (x, y): see flat_group()
//   reference  tests/ref/ref_v4.c ref_swiglu_clamp()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"

layout(set = 0, binding = 0, std430) readonly buffer G { float g[]; };
layout(set = 0, binding = 1, std430) readonly buffer U { float u[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; float limit; } pc;

void main()
{
    uint i = flat_group() * WG_SIZE + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    float a = g[i], b = u[i];
    if (pc.limit > 1e-6) {
        a = min(a, pc.limit);
        b = clamp(b, -pc.limit, pc.limit);
    }
    y[i] = silu(a) * b;
}
