// iq4_nl.glsl: ggml block_iq4_nl, 18 bytes: f16 d, 16 bytes qs of 4-bit
// indices into the non-linear codebook kvalues_iq4nl; value j (< 16) is
// d * kvalues[qs[j] & 15], value j + 16 is d * kvalues[qs[j] >> 4]. See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 18;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

const float IQ4NL_VALUES[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                         1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    for (uint k = 0; k < 4u; k++) {
        uint v = w_u32_at(b0 + 2u + 4u * k);
        for (uint i = 0; i < 4u; i++) {
            uint byte = (v >> (8u * i)) & 0xFFu;
            q[4u * k + i] = IQ4NL_VALUES[byte & 0xFu];
            q[16u + 4u * k + i] = IQ4NL_VALUES[byte >> 4];
        }
    }
    return vec2(w_f16_at(b0), 0.0);
}
