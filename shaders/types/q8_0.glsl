// q8_0.glsl: ggml block_q8_0, 34 bytes: f16 d, then 32 int8 q; value = d * q.
// Blocks are 2-byte aligned: read as 16-bit halves. See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 34;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint h0 = block * 17u;   // halves per block
    for (uint j = 0; j < 16u; j++) {
        uint h = w_u16(h0 + 1u + j);
        q[2u * j] = float(int(h << 24) >> 24);
        q[2u * j + 1u] = float(int(h << 16) >> 24);
    }
    return vec2(unpackHalf2x16(w_u16(h0)).x, 0.0);
}
