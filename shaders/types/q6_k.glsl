// q6_k.glsl: ggml block_q6_K, 210 bytes for 256 values: 128 bytes ql (low
// 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, f16 d. Piece s (16
// values, half h = s / 8, quarter k = (s % 8) / 2, l from 16 * (s & 1)):
// q = (nibble k / 2 of ql[64h + 32(k & 1) + l] | bits 2k of qh[32h + l] << 4) - 32;
// value = d * scales[s] * q. Blocks are 2-byte aligned. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 210;
const uint WT_SUB = 16;
const bool WT_OFFSET = false;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    uint h = piece >> 3, k = (piece & 7u) >> 1, l0 = (piece & 1u) * 16u;
    uint qlb = b0 + h * 64u + (k & 1u) * 32u + l0, qhb = b0 + 128u + h * 32u + l0;
    uint nsh = (k >> 1) * 4u, hsh = 2u * k;
    for (uint c = 0; c < 4u; c++) {
        uint vl = w_u32_at(qlb + 4u * c), vh = w_u32_at(qhb + 4u * c);
        for (uint i = 0; i < 4u; i++)
            q[4u * c + i] = float(int(((vl >> (8u * i + nsh)) & 0xFu) | (((vh >> (8u * i + hsh)) & 3u) << 4)) - 32);
    }
    int sc = int(w_u8(b0 + 192u + piece) << 24) >> 24;
    return vec2(w_f16_at(b0 + 208u) * float(sc), 0.0);
}
