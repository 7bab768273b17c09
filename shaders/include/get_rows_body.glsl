// get_rows_body.glsl: embedding gather, y[i][c] = W[ids[i]][c] as float, for
// the ids that fall in this weight chunk [row_begin, row_begin + n_rows);
// the host dispatches once per chunk.
//   binding 0  W    readonly   weights [n_rows][n_cols] (one chunk)
//   binding 1  IDS  readonly   uint [n_ids]
//   binding 2  Y    writeonly  float [n_ids][n_cols]
//   push       n_cols, row_begin, n_rows, n_ids
//   spec       0: WG_SIZE
//   dispatch   (ceil(n_cols / WG_SIZE), n_ids, 1)
//   reference  tests/ref/ref.c ref_get_rows()
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
    if (c >= pc.n_cols || i >= pc.n_ids) return;
    uint id = ids[i];
    if (id < pc.row_begin || id - pc.row_begin >= pc.n_rows) return;
    y[i * pc.n_cols + c] = w_at(id - pc.row_begin, c, pc.n_cols);
}
