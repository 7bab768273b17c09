// kv_store.comp: writes new cache rows into their pages:
//   KV[slot(pages[pos[t] / page_size]) * page_size + pos[t] % page_size][j] = SRC[t * src_stride + j]
// for t = tok0 .. tok0 + n_tok - 1 (one sequence inside a batch). New rows
// always go to a HOT page (the newest page is pinned), so only the hot pool
// is bound; the entry's tier bit is masked off (include/kv_tier.glsl).
//   binding 0  SRC    readonly   float [n_tok][src_stride]   (row = first `width` values)
//   binding 1  PAGES  readonly   uint [n_pages]
//   binding 2  POS    readonly   int [n_tok]
//   binding 3  KV     writeonly  float [n_slots * page_size][width]
//   push       n_tok, width, src_stride, page_size, tok0
//   spec       0: WG_SIZE
//   dispatch   (ceil(width / WG_SIZE), n_tok, 1)
//   reference  a copy: tests/gpu/test_kernels_model.c checks it bit-exactly
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "kv_tier.glsl"

layout(set = 0, binding = 0, std430) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1, std430) readonly buffer Pages { uint pages[]; };
layout(set = 0, binding = 2, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 3, std430) writeonly buffer KV { float kv[]; };
layout(push_constant) uniform Push { uint n_tok; uint width; uint src_stride; uint page_size; uint tok0; } pc;

void main()
{
    uint j = gl_GlobalInvocationID.x, t = pc.tok0 + gl_WorkGroupID.y;
    if (j >= pc.width || gl_WorkGroupID.y >= pc.n_tok) return;
    uint p = uint(pos[t]);
    uint row = entry_slot(pages[p / pc.page_size]) * pc.page_size + p % pc.page_size;
    kv[row * pc.width + j] = src[t * pc.src_stride + j];
}
