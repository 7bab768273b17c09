// weights.glsl: the weight buffer W at binding 0 (32-bit words, so no 8/16-bit
// storage feature is needed), byte-level readers, and the weight type of the
// variant: weight_type.glsl, which the build resolves to shaders/types/<type>.glsl
// (cmake/GsmrtShaders.cmake; the types are the rows of runtime/gguf/wtype_table.def).
//
// A type file defines ONE decode function and its constants, in one of two forms:
//   element types (F32, F16, BF16):
//     #define WT_ELEMENTWISE
//     float wt_value(uint i)                       element i of the buffer
//   block types (ggml blocks of WT_BLOCK values, WT_BLOCK_BYTES bytes):
//     const uint WT_BLOCK, WT_BLOCK_BYTES;
//     const uint WT_SUB;                           values per decoded piece: 16 or 32, divides WT_BLOCK
//     const bool WT_OFFSET;                        false: the offset is always 0
//     vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
//         piece `piece` of block `block`: value m is scale * q[m] + offset,
//         with (scale, offset) returned. Kernels factor the scale out of
//         their sums, so q holds the integers (or codebook values) of the format.
// A matrix is [n_rows][n_cols] row-major (GGUF ne[0] = n_cols is contiguous);
// for block types n_cols is a whole number of blocks.
layout(set = 0, binding = 0, std430) readonly buffer W { uint w[]; };

// 16-bit half i of the buffer (little end first).
uint w_u16(uint i)
{
    uint word = w[i >> 1];
    return (i & 1u) != 0u ? (word >> 16) : (word & 0xFFFFu);
}

// Byte at byte offset b.
uint w_u8(uint b)
{
    return (w[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu;
}

// The 4 bytes at byte offset b (any alignment), little endian.
uint w_u32_at(uint b)
{
    uint s = (b & 3u) * 8u, lo = w[b >> 2];
    return s == 0u ? lo : (lo >> s) | (w[(b >> 2) + 1u] << (32u - s));
}

// The 2 bytes at byte offset b (any alignment), little endian.
uint w_u16_at(uint b)
{
    return (b & 1u) == 0u ? w_u16(b >> 1) : (w_u8(b) | (w_u8(b + 1u) << 8));
}

float w_f16_at(uint b)
{
    return unpackHalf2x16(w_u16_at(b)).x;
}

// ggml's get_scale_min_k4: the 6-bit scale and min of piece j (0..7) of a
// Q4_K or Q5_K block whose 12 bytes of packed scales and mins start at byte s.
void w_scale_min_k4(uint s, uint j, out uint sc, out uint m)
{
    if (j < 4u) {
        sc = w_u8(s + j) & 63u;
        m = w_u8(s + j + 4u) & 63u;
    } else {
        sc = (w_u8(s + j + 4u) & 0xFu) | ((w_u8(s + j - 4u) >> 6) << 4);
        m = (w_u8(s + j + 4u) >> 4) | ((w_u8(s + j) >> 6) << 4);
    }
}

#include "weight_type.glsl"

#ifndef WT_ELEMENTWISE
const uint WT_PIECES = WT_BLOCK / WT_SUB;   // pieces per block

// A decoded value from wt_decode's (scale, offset) and q.
float wt_apply(vec2 so, float q)
{
    return WT_OFFSET ? so.x * q + so.y : so.x * q;
}
#endif
