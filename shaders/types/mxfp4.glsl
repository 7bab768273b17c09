// mxfp4.glsl: ggml block_mxfp4, 17 bytes: e8m0 exponent e, 16 bytes qs of
// FP4 (E2M1) codes; value j (< 16) is kvalues[qs[j] & 15] * 2^(e - 128), value
// j + 16 the same of qs[j] >> 4 (ggml's kvalues_mxfp4 are twice E2M1, so the
// scale is GGML_E8M0_TO_FP32_HALF). Blocks are byte-aligned. See include/weights.glsl.
const uint WT_BLOCK = 32;
const uint WT_BLOCK_BYTES = 17;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

const float MXFP4_VALUES[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0,
                                         0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    uint e = w_u8(b0);
    for (uint k = 0; k < 4u; k++) {
        uint v = w_u32_at(b0 + 1u + 4u * k);
        for (uint i = 0; i < 4u; i++) {
            uint byte = (v >> (8u * i)) & 0xFFu;
            q[4u * k + i] = MXFP4_VALUES[byte & 0xFu];
            q[16u + 4u * k + i] = MXFP4_VALUES[byte >> 4];
        }
    }
    uint bits = e < 2u ? (0x00200000u << e) : ((e - 1u) << 23);
    return vec2(uintBitsToFloat(bits), 0.0);
}
