// q5_k.glsl: ggml block_q5_K, 176 bytes for 256 values: f16 d, f16 dmin,
// 12 bytes of 6-bit scales and mins (get_scale_min_k4), 32 bytes qh, 128 bytes
// qs. Piece j (32 values): low 4 bits from nibble (j & 1) of qs[32 * (j / 2) ..],
// fifth bit j of qh[l]; value = d * sc_j * q - dmin * m_j. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 176;
const uint WT_SUB = 32;
const bool WT_OFFSET = true;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES, wd = b0 >> 2;   // 4-aligned
    vec2 dm = unpackHalf2x16(w[wd]);
    uint j = piece, sc, m;
    w_scale_min_k4(b0 + 4u, j, sc, m);
    uint hw = wd + 4u, qw = wd + 12u + (j >> 1) * 8u, sh = (j & 1u) * 4u;
    for (uint k = 0; k < 8u; k++) {
        uint v = w[qw + k], h = w[hw + k];
        for (uint i = 0; i < 4u; i++)
            q[4u * k + i] = float(((v >> (8u * i + sh)) & 0xFu) | (((h >> (8u * i + j)) & 1u) << 4));
    }
    return vec2(dm.x * float(sc), -(dm.y * float(m)));
}
