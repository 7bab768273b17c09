// weights.glsl: the weight buffer W at binding 0 and element access for the
// three weight formats, chosen by one define before inclusion:
//   WEIGHT_F32   float per element
//   WEIGHT_F16   IEEE half per element, two per 32-bit word (little end first)
//   WEIGHT_Q8_0  ggml Q8_0 blocks of 34 bytes: f16 scale d, then 32 int8 q;
//                value = d * q. Blocks are 2-byte aligned, so they are read
//                as 16-bit halves of 32-bit words (no 8/16-bit storage needed).
// A matrix is [n_rows][n_cols] row-major (GGUF ne[0] = n_cols is contiguous);
// for Q8_0, n_cols is a multiple of 32.
#if defined(WEIGHT_F32)
layout(set = 0, binding = 0, std430) readonly buffer W { float w[]; };
#else
layout(set = 0, binding = 0, std430) readonly buffer W { uint w[]; };
#endif

#if defined(WEIGHT_F16) || defined(WEIGHT_Q8_0)
uint w_u16(uint i)
{
    uint word = w[i >> 1];
    return (i & 1u) != 0u ? (word >> 16) : (word & 0xFFFFu);
}
#endif

#if defined(WEIGHT_Q8_0)
const uint Q8_BLOCK = 32;       // values per block
const uint Q8_HALVES = 17;      // 16-bit halves per block (34 bytes)

float q8_scale(uint block)
{
    return unpackHalf2x16(w_u16(block * Q8_HALVES)).x;
}

// The two int8 values held by half j (0..15) of a block, low byte first.
vec2 q8_pair(uint block, uint j)
{
    uint h = w_u16(block * Q8_HALVES + 1u + j);
    return vec2(float(int(h << 24) >> 24), float(int(h << 16) >> 24));
}
#endif

// Element (row, col) of a [n_rows][n_cols] weight matrix, as float.
float w_at(uint row, uint col, uint n_cols)
{
#if defined(WEIGHT_F32)
    return w[row * n_cols + col];
#elif defined(WEIGHT_F16)
    uint i = row * n_cols + col;
    return unpackHalf2x16(w_u16(i)).x;
#else
    uint block = (row * n_cols + col) / Q8_BLOCK;
    uint k = col % Q8_BLOCK;
    vec2 p = q8_pair(block, k >> 1);
    return q8_scale(block) * ((k & 1u) != 0u ? p.y : p.x);
#endif
}
