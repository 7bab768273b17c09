// q5_0.glsl: ggml block_q5_0, 22 bytes: f16 d, u32 qh (the fifth bits), 16
// bytes qs; value j (< 16) is d * (((qs[j] & 15) | bit j of qh << 4) - 16),
// value j + 16 is d * (((qs[j] >> 4) | bit j + 16 of qh << 4) - 16). See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 22;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    uint qh = w_u32_at(b0 + 2u);
    for (uint k = 0; k < 4u; k++) {
        uint v = w_u32_at(b0 + 6u + 4u * k);
        for (uint i = 0; i < 4u; i++) {
            uint j = 4u * k + i, byte = (v >> (8u * i)) & 0xFFu;
            q[j] = float(int((byte & 0xFu) | (((qh >> j) & 1u) << 4)) - 16);
            q[16u + j] = float(int((byte >> 4) | (((qh >> (j + 16u)) & 1u) << 4)) - 16);
        }
    }
    return vec2(w_f16_at(b0), 0.0);
}
