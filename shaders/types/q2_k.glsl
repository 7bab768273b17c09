// q2_k.glsl: ggml block_q2_K, 84 bytes for 256 values: 16 bytes scales (low
// nibble scale, high nibble min), 64 bytes qs (2 bits each), f16 d, f16 dmin.
// Piece s (16 values, half h = s / 8, j = (s % 8) / 2, l from 16 * (s & 1)):
// q = bits 2j of qs[32h + l]; value = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4).
// See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 84;
const uint WT_SUB = 16;
const bool WT_OFFSET = true;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES, wd = b0 >> 2;   // 4-aligned
    uint h = piece >> 3, j = (piece & 7u) >> 1, l0 = (piece & 1u) * 16u;
    uint qw = wd + 4u + (h * 32u + l0) / 4u;
    for (uint c = 0; c < 4u; c++) {
        uint v = w[qw + c];
        for (uint i = 0; i < 4u; i++) q[4u * c + i] = float((v >> (8u * i + 2u * j)) & 3u);
    }
    uint sc = w_u8(b0 + piece);
    vec2 dm = unpackHalf2x16(w[wd + 20u]);
    return vec2(dm.x * float(sc & 0xFu), -(dm.y * float(sc >> 4)));
}
