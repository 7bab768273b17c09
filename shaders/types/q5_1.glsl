// q5_1.glsl: ggml block_q5_1, 24 bytes: f16 d, f16 m, u32 qh (the fifth
// bits), 16 bytes qs; value j (< 16) is d * ((qs[j] & 15) | bit j of qh << 4) + m,
// value j + 16 is d * ((qs[j] >> 4) | bit j + 16 of qh << 4) + m. See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 24;
const uint WT_SUB = 32;
const bool WT_OFFSET = true;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint w0 = block * (WT_BLOCK_BYTES / 4u);   // 4-aligned: whole words
    uint qh = w[w0 + 1u];
    for (uint k = 0; k < 4u; k++) {
        uint v = w[w0 + 2u + k];
        for (uint i = 0; i < 4u; i++) {
            uint j = 4u * k + i, byte = (v >> (8u * i)) & 0xFFu;
            q[j] = float((byte & 0xFu) | (((qh >> j) & 1u) << 4));
            q[16u + j] = float((byte >> 4) | (((qh >> (j + 16u)) & 1u) << 4));
        }
    }
    return unpackHalf2x16(w[w0]);
}
