// compress_pool.comp: the gated pooling of DeepSeek V4's compressor
// (llama.cpp deepseek4; tools/deepseek4_ref.py Compressor.rows before its norm
// and RoPE), one invocation per (compressed row, feature):
//   row b of `ratio` positions, per feature d < dim, entries j over the block:
//     score_j = sc[pos_j][c_j] + ape[pos_j % ratio][c_j],  val_j = kv[pos_j][c_j]
//     out[b][d] = sum_j softmax_j(score_j) * val_j
//   without overlap: pos_j = b*ratio + j, c_j = d (j < ratio; width = dim);
//   with overlap (ratio 4): the first half-features of block b-1, c_j = d, and
//   the second half-features of block b, c_j = dim + d (2 ratio entries;
//   width = 2 dim); block 0 has nothing before it (those entries take no weight).
// Per-position rows are found at index (pos - row_pos0) % n_rows of KV and SC:
// a plain buffer of positions row_pos0 .. row_pos0 + n_rows - 1, or a ring
// (row_pos0 0, position p at p % n_rows). The caller keeps the positions a row
// needs there; the norm and RoPE follow with rms_norm and rope.
//   binding 0  KV   readonly   float [n_rows][width]
//   binding 1  SC   readonly   float [n_rows][width]   gate scores without the positional term
//   binding 2  APE  readonly   float [ratio][width]
//   binding 3  OUT  writeonly  float [n_blocks][out_stride]   row b - block0
//   push       n_blocks, block0, dim, ratio, overlap, row_pos0, n_rows, out_stride
//   spec       0: WG_SIZE
//   dispatch   (ceil(dim / WG_SIZE), n_blocks, 1)
//   reference  tests/ref/ref_v4.c ref_compress_pool()
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer KV { float kv[]; };
layout(set = 0, binding = 1, std430) readonly buffer SC { float sc[]; };
layout(set = 0, binding = 2, std430) readonly buffer APE { float ape[]; };
layout(set = 0, binding = 3, std430) writeonly buffer OUT { float outv[]; };
layout(push_constant) uniform Push {
    uint n_blocks; uint block0; uint dim; uint ratio; uint overlap; uint row_pos0; uint n_rows; uint out_stride;
} pc;

uint row_of(uint pos) { return ((pos - pc.row_pos0) % pc.n_rows); }

void main()
{
    uint d = gl_WorkGroupID.x * WG_SIZE + gl_LocalInvocationID.x;
    uint jb = gl_WorkGroupID.y;
    if (d >= pc.dim || jb >= pc.n_blocks) return;
    uint b = pc.block0 + jb, r = pc.ratio;
    uint width = pc.overlap != 0u ? 2u * pc.dim : pc.dim;
    uint cur_c = pc.overlap != 0u ? pc.dim + d : d;
    // Two passes (max, then the weighted sums): the entries are re-read, not kept.
    float m = -3.0e38;
    if (pc.overlap != 0u && b > 0u)
        for (uint j = 0; j < r; j++) m = max(m, sc[row_of((b - 1u) * r + j) * width + d] + ape[j * width + d]);
    for (uint j = 0; j < r; j++) m = max(m, sc[row_of(b * r + j) * width + cur_c] + ape[j * width + cur_c]);
    float z = 0.0, acc = 0.0;
    if (pc.overlap != 0u && b > 0u)
        for (uint j = 0; j < r; j++) {
            uint row = row_of((b - 1u) * r + j) * width;
            float e = exp(sc[row + d] + ape[j * width + d] - m);
            z += e;
            acc += e * kv[row + d];
        }
    for (uint j = 0; j < r; j++) {
        uint row = row_of(b * r + j) * width;
        float e = exp(sc[row + cur_c] + ape[j * width + cur_c] - m);
        z += e;
        acc += e * kv[row + cur_c];
    }
    outv[jb * pc.out_stride + d] = acc / z;
}
