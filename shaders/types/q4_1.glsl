// q4_1.glsl: ggml block_q4_1, 20 bytes: f16 d, f16 m, 16 bytes qs; value j
// (< 16) is d * (qs[j] & 15) + m, value j + 16 is d * (qs[j] >> 4) + m. See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 20;
const uint WT_SUB = 32;
const bool WT_OFFSET = true;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;   // 4-aligned: whole words
    for (uint k = 0; k < 4u; k++) {
        uint v = w[(b0 >> 2) + 1u + k];
        for (uint i = 0; i < 4u; i++) {
            uint byte = (v >> (8u * i)) & 0xFFu;
            q[4u * k + i] = float(byte & 0xFu);
            q[16u + 4u * k + i] = float(byte >> 4);
        }
    }
    return unpackHalf2x16(w[b0 >> 2]);
}
