// iq4_xs.glsl: ggml block_iq4_xs, 136 bytes for 256 values: f16 d, u16
// scales_h, 4 bytes scales_l, 128 bytes qs of 4-bit indices into
// kvalues_iq4nl. Piece ib (32 values): ls = nibble ib % 2 of scales_l[ib / 2]
// | bits 2 ib of scales_h << 4; value m (< 16) = d * (ls - 32) * kvalues[qs[16 ib + m] & 15],
// value m + 16 the same of the high nibble. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 136;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

const float IQ4XS_VALUES[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                         1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES, wd = b0 >> 2;   // 4-aligned
    uint head = w[wd];
    uint ls = ((w_u8(b0 + 4u + (piece >> 1)) >> (4u * (piece & 1u))) & 0xFu) | (((head >> (16u + 2u * piece)) & 3u) << 4);
    uint qw = wd + 2u + piece * 4u;
    for (uint k = 0; k < 4u; k++) {
        uint v = w[qw + k];
        for (uint i = 0; i < 4u; i++) {
            uint byte = (v >> (8u * i)) & 0xFFu;
            q[4u * k + i] = IQ4XS_VALUES[byte & 0xFu];
            q[16u + 4u * k + i] = IQ4XS_VALUES[byte >> 4];
        }
    }
    return vec2(unpackHalf2x16(head).x * float(int(ls) - 32), 0.0);
}
