// q4_k.glsl: ggml block_q4_K, 144 bytes for 256 values: f16 d, f16 dmin,
// 12 bytes of 6-bit scales and mins (get_scale_min_k4), 128 bytes qs. Piece j
// (32 values) is nibble (j & 1) of qs[32 * (j / 2) ..]; value = d * sc_j * q -
// dmin * m_j. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 144;
const uint WT_SUB = 32;
const bool WT_OFFSET = true;

vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES, wd = b0 >> 2;   // 4-aligned
    vec2 dm = unpackHalf2x16(w[wd]);
    uint j = piece, sc, m;
    w_scale_min_k4(b0 + 4u, j, sc, m);
    uint qw = wd + 4u + (j >> 1) * 8u, sh = (j & 1u) * 4u;
    for (uint k = 0; k < 8u; k++) {
        uint v = w[qw + k];
        for (uint i = 0; i < 4u; i++) q[4u * k + i] = float((v >> (8u * i + sh)) & 0xFu);
    }
    return vec2(dm.x * float(sc), -(dm.y * float(m)));
}
