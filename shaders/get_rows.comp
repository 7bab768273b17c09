// get_rows.comp: embedding gather, y[i][c] = W[ids[i]][c] as float, for
// the ids that fall in this weight chunk [row_begin, row_begin + n_rows);
// the host dispatches once per chunk.
//   binding 0  W    readonly   weights [n_rows][n_cols] (one chunk)
//   binding 1  IDS  readonly   uint [n_ids]
//   binding 2  Y    writeonly  float [n_ids][n_cols]
//   push       n_cols, row_begin, n_rows, n_ids
//   spec       0: WG_SIZE
//   dispatch   (ceil(n_cols / WG_SIZE), n_ids, 1); a block type uses the first
//              n_cols / WT_SUB invocations of a row, each a piece
//   reference  tests/ref/ref.c ref_get_rows()
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"
#include "weights.glsl"

layout(set = 0, binding = 1, std430) readonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n_cols; uint row_begin; uint n_rows; uint n_ids; } pc;

void main()
{
    uint c = gl_GlobalInvocationID.x, i = gl_WorkGroupID.y;
#ifdef WT_ELEMENTWISE
    if (c >= pc.n_cols || i >= pc.n_ids) return;
#else
    // block types: invocation c decodes piece c of the row (the others idle)
    if (c >= pc.n_cols / WT_SUB || i >= pc.n_ids) return;
#endif
    uint id = ids[i];
    if (id < pc.row_begin || id - pc.row_begin >= pc.n_rows) return;
    uint row = id - pc.row_begin;
#ifdef WT_ELEMENTWISE
    y[i * pc.n_cols + c] = wt_value(row * pc.n_cols + c);
#else
    uint p = row * (pc.n_cols / WT_SUB) + c;
    float q[WT_SUB];
    vec2 so = wt_decode(p / WT_PIECES, p % WT_PIECES, q);
    for (uint m = 0; m < WT_SUB; m++) y[i * pc.n_cols + c * WT_SUB + m] = wt_apply(so, q[m]);
#endif
}
