// q4_0.glsl: ggml block_q4_0, 18 bytes: f16 d, 16 bytes qs; value j (< 16) is
// d * ((qs[j] & 15) - 8), value j + 16 is d * ((qs[j] >> 4) - 8). See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 18;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    for (uint k = 0; k < 4u; k++) {
        uint v = w_u32_at(b0 + 2u + 4u * k);
        for (uint i = 0; i < 4u; i++) {
            uint byte = (v >> (8u * i)) & 0xFFu;
            q[4u * k + i] = float(int(byte & 0xFu) - 8);
            q[16u + 4u * k + i] = float(int(byte >> 4) - 8);
        }
    }
    return vec2(w_f16_at(b0), 0.0);
}
