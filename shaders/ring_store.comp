// ring_store.comp: rows of n_tok tokens into a ring of n_rows rows, where
// position p lives at row p % n_rows -- the raw window attn_v4 reads and the
// compressor's pending positions compress_pool reads.
//   dst[(pos[t] % n_rows) * dst_stride + i] = src[t * src_stride + i],  i < width
// Two tokens of one call must not map to the same row (the caller keeps
// n_rows >= the positions of a batch).
//   binding 0  SRC  readonly   float [n_tok][src_stride]
//   binding 1  POS  readonly   int [n_tok]
//   binding 2  DST  writeonly  float [n_rows][dst_stride]
//   push       n_tok, width, src_stride, n_rows, dst_stride
//   spec       0: WG_SIZE
//   dispatch   (ceil(width / WG_SIZE), n_tok, 1)
//   reference  a copy (tests/gpu/test_kernels_v4.c)
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint n_tok; uint width; uint src_stride; uint n_rows; uint dst_stride; } pc;

void main()
{
    uint i = gl_WorkGroupID.x * WG_SIZE + gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= pc.width || t >= pc.n_tok || pos[t] < 0) return;
    dst[(uint(pos[t]) % pc.n_rows) * pc.dst_stride + i] = src[t * pc.src_stride + i];
}
