// matvec_body.glsl: y[y_offset + r] = sum_c W[r][c] * x[c] for the rows of
// one weight chunk. Included by matvec_<type>[_nosg].comp after the defines
// (see weights.glsl for WEIGHT_*; USE_SUBGROUP picks the reduction).
//   binding 0  W  readonly   weights [n_rows][n_cols] (one chunk)
//   binding 1  X  readonly   float [n_cols]
//   binding 2  Y  writeonly  float [y_offset + n_rows]
//   push       n_cols, n_rows, y_offset
//   spec       0: WG_SIZE, invocations per row (power of two)
//   dispatch   one workgroup per row, split over (x, y): see flat_group();
//              with ROW_PER_INVOCATION, one invocation per row (ceil(n_rows / WG_SIZE) groups)
//   reference  tests/ref/ref.c ref_matvec()
layout(constant_id = 0) const uint WG_SIZE = 32;
layout(local_size_x_id = 0) in;

#include "common.glsl"
#include "weights.glsl"
#include "reduce.glsl"

layout(set = 0, binding = 1, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n_cols; uint n_rows; uint y_offset; } pc;

// Partial dot product of `row` over the columns lid, lid + stride, ...
// (Q8_0: over whole blocks).
float row_dot(uint row, uint lid, uint stride)
{
    float acc = 0.0;
#if defined(WEIGHT_Q8_0)
    uint n_blocks = pc.n_cols / Q8_BLOCK;
    for (uint b = lid; b < n_blocks; b += stride) {
        uint block = row * n_blocks + b;
        uint c0 = b * Q8_BLOCK;
        float s = 0.0;
        for (uint j = 0; j < 16; j++) {
            vec2 q = q8_pair(block, j);
            s += q.x * x[c0 + 2 * j] + q.y * x[c0 + 2 * j + 1];
        }
        acc += q8_scale(block) * s;
    }
#else
    for (uint c = lid; c < pc.n_cols; c += stride) acc += w_at(row, c, pc.n_cols) * x[c];
#endif
    return acc;
}

void main()
{
#ifdef ROW_PER_INVOCATION
    // One row per invocation, no reduction and no barrier: what CPU devices
    // (llvmpipe) run fastest, where a workgroup's barriers are costly.
    uint row = flat_group() * WG_SIZE + gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    y[pc.y_offset + row] = row_dot(row, 0, 1);
#else
    uint row = flat_group();
    if (row >= pc.n_rows) return;   // uniform per workgroup: no barrier is skipped unevenly
    float total = wg_sum(row_dot(row, gl_LocalInvocationID.x, WG_SIZE));
    if (gl_LocalInvocationID.x == 0) y[pc.y_offset + row] = total;
#endif
}
