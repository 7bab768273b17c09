// kv_store.comp: writes new cache rows into their pages:
//   KV[slot(pages[pos[t] / page_size]) * page_size + pos[t] % page_size][j] = SRC[t * src_stride + j]
// for t = tok0 .. tok0 + n_tok - 1 (one sequence inside a batch), in the
// pool's storage type (include/kv_tier.glsl): F32 copies the float, F16
// rounds it to the nearest half (ties to even) and packs two per word, so an
// invocation writes one word (two channels; F16 widths are even). New rows
// always go to a HOT page (the newest page is pinned), so only the hot pool
// is bound; the entry's tier bit is masked off.
//   binding 0  SRC    readonly   float [n_tok][src_stride]   (row = first `width` values)
//   binding 1  PAGES  readonly   uint [n_pages]
//   binding 2  POS    readonly   int [n_tok]
//   binding 3  KV     writeonly  uint [n_slots * page_size * width / (KV_F16 ? 2 : 1)]
//   push       n_tok, width, src_stride, page_size, tok0
//   spec       0: WG_SIZE, 1: KV_F16
//   dispatch   (ceil(width / (KV_F16 ? 2 : 1) / WG_SIZE), n_tok, 1)
//   reference  tests/gpu/test_kernels_model.c checks it bit-exactly (F16: against
//              tests/ref's own half rounding)
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#define KV_F16_ID 1
#define KV_BINDING 3
#define KV_WRITE
#include "kv_tier.glsl"

layout(set = 0, binding = 0, std430) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1, std430) readonly buffer Pages { uint pages[]; };
layout(set = 0, binding = 2, std430) readonly buffer Pos { int pos[]; };
layout(push_constant) uniform Push { uint n_tok; uint width; uint src_stride; uint page_size; uint tok0; } pc;

void main()
{
    uint w = gl_GlobalInvocationID.x, t = pc.tok0 + gl_WorkGroupID.y;
    uint per_word = KV_F16 ? 2u : 1u, j = w * per_word;
    if (j >= pc.width || gl_WorkGroupID.y >= pc.n_tok) return;
    uint p = uint(pos[t]);
    uint row = entry_slot(pages[p / pc.page_size]) * pc.page_size + p % pc.page_size;
    uint s = t * pc.src_stride + j, e = row * pc.width + j;
    if (KV_F16)
        kv[e >> 1] = packHalf2x16(vec2(src[s], src[s + 1]));
    else
        kv[e] = floatBitsToUint(src[s]);
}
