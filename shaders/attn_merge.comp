// attn_merge.comp: combines the per-split partials of attn_partial by the
// log-sum-exp rule into the normalised attention output:
//   M = max_s m_s,  L = sum_s l_s exp(m_s - M),  y[j] = sum_s acc_s[j] exp(m_s - M) / L
// Splits with l_s = 0 (no keys) contribute nothing.
//   binding 0  P  readonly   float [n_rows][n_splits][2 + width]   (m, l, acc) per split
//   binding 1  Y  writeonly  float [n_rows][y_stride]   (width values at row * y_stride)
//   push       n_rows, n_splits, width, y_stride, p_row0, y_row0 (rows of P and Y start there:
//              one sequence inside a batch)
//   spec       0: WG_SIZE
//   dispatch   one workgroup per row (a (token, head) pair), split over (x, y)
//   reference  tests/ref/ref.c ref_attn_mla() (merged result)
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"

layout(set = 0, binding = 0, std430) readonly buffer P { float p[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n_rows; uint n_splits; uint width; uint y_stride; uint p_row0; uint y_row0; } pc;

void main()
{
    uint row = flat_group();
    if (row >= pc.n_rows) return;
    uint stride = 2 + pc.width, base = (pc.p_row0 + row) * pc.n_splits * stride;
    float big_m = -3.0e38;
    for (uint s = 0; s < pc.n_splits; s++)
        if (p[base + s * stride + 1] > 0.0) big_m = max(big_m, p[base + s * stride]);
    float big_l = 0.0;
    for (uint s = 0; s < pc.n_splits; s++) {
        float l = p[base + s * stride + 1];
        if (l > 0.0) big_l += l * exp(p[base + s * stride] - big_m);
    }
    float inv = big_l > 0.0 ? 1.0 / big_l : 0.0;
    for (uint j = gl_LocalInvocationID.x; j < pc.width; j += WG_SIZE) {
        float acc = 0.0;
        for (uint s = 0; s < pc.n_splits; s++) {
            float l = p[base + s * stride + 1];
            if (l > 0.0) acc += p[base + s * stride + 2 + j] * exp(p[base + s * stride] - big_m);
        }
        y[(pc.y_row0 + row) * pc.y_stride + j] = acc * inv;
    }
}
