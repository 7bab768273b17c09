// q3_k.glsl: ggml block_q3_K, 110 bytes for 256 values: 32 bytes hmask, 64
// bytes qs (low 2 bits), 12 bytes of 6-bit scales, f16 d. Piece s (16 values,
// half h = s / 8, j = (s % 8) / 2, l from 16 * (s & 1)):
// q = (bits 2j of qs[32h + l]) - (bit 4h + j of hmask[l] ? 0 : 4);
// value = d * (scale_s - 32) * q, scale_s = low 4 bits from scales[s % 8]
// (nibble s / 8) and high 2 from scales[8 + s % 4] (bits 2 (s / 4)), as
// ggml's kmask unpacking gives. Blocks are 2-byte aligned. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 110;
const uint WT_SUB = 16;
const bool WT_OFFSET = false;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    uint h = piece >> 3, j = (piece & 7u) >> 1, l0 = (piece & 1u) * 16u;
    uint qb = b0 + 32u + h * 32u + l0, hb = b0 + l0, hbit = h * 4u + j;
    for (uint c = 0; c < 4u; c++) {
        uint vq = w_u32_at(qb + 4u * c), vh = w_u32_at(hb + 4u * c);
        for (uint i = 0; i < 4u; i++)
            q[4u * c + i] = float(int((vq >> (8u * i + 2u * j)) & 3u) - (((vh >> (8u * i + hbit)) & 1u) != 0u ? 0 : 4));
    }
    uint scb = b0 + 96u;
    uint sc = ((w_u8(scb + (piece & 7u)) >> (4u * (piece >> 3))) & 0xFu) |
              (((w_u8(scb + 8u + (piece & 3u)) >> (2u * (piece >> 2))) & 3u) << 4);
    return vec2(w_f16_at(b0 + 108u) * float(int(sc) - 32), 0.0);
}
