// iq3_xxs.glsl: ggml block_iq3_xxs, 98 bytes for 256 values: f16 d, 64
// bytes qs (8-bit indices into iq3xxs_grid, 4 values each), then per 32 values
// a u32 of four 7-bit sign groups (ksigns_iq2xs) and a 4-bit scale ls in bits
// 28..31; value = d * (0.5 + ls) / 2 * grid byte * sign. Piece = 32 values.
// Blocks are 2-byte aligned. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 98;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

// iq3xxs_grid: 256 entries of 4 magnitudes (4, 12, ..., 52, 62), packed as 3-bit codes (0..7), 16 bits an entry, two a word, transcribed from ggml-common.h
const uint IQ3XXS_GRID[128] = uint[128](
    0x00020000u, 0x00090004u, 0x000f000bu, 0x00120010u, 0x00220019u, 0x003d003bu, 0x00430041u, 0x004a0048u,
    0x00550051u, 0x005a0058u, 0x006c0061u, 0x00800078u, 0x00840082u, 0x00900089u, 0x00990092u, 0x009f009bu,
    0x00af00a9u, 0x00c100bdu, 0x00c800c7u, 0x00d500cau, 0x010b00f8u, 0x0124011fu, 0x013b012fu, 0x0141013du,
    0x015a0147u, 0x019d016au, 0x01c801b4u, 0x01ce01ccu, 0x01f101e3u, 0x02030201u, 0x020a0208u, 0x02130211u,
    0x021a0218u, 0x0227021cu, 0x02400228u, 0x02490242u, 0x02520250u, 0x02830281u, 0x028a0288u, 0x02980291u,
    0x02c002bau, 0x02d002c2u, 0x02e602d9u, 0x030102f6u, 0x03280305u, 0x03540350u, 0x03790366u, 0x03d20385u,
    0x040003e0u, 0x04090402u, 0x0410040bu, 0x04160412u, 0x04220419u, 0x04430441u, 0x04480445u, 0x0451044au,
    0x04730458u, 0x04780477u, 0x04820480u, 0x048f0489u, 0x04920490u, 0x04a0049fu, 0x04c104adu, 0x04cc04c8u,
    0x04fc04f8u, 0x052b051du, 0x05570543u, 0x057c0561u, 0x05c305c1u, 0x05e505ceu, 0x06080601u, 0x0611060au,
    0x06280613u, 0x063a0635u, 0x06420640u, 0x06590650u, 0x06660664u, 0x06830681u, 0x06950688u, 0x06ba06aau,
    0x06db06c9u, 0x07270718u, 0x0740073au, 0x07520746u, 0x078c076du, 0x07b3079eu, 0x07f007dbu, 0x080f0804u,
    0x081f081du, 0x082f082bu, 0x0890087cu, 0x08a0089fu, 0x08b608b0u, 0x08e508c7u, 0x09290904u, 0x09550934u,
    0x09780963u, 0x09c809c5u, 0x09d809cau, 0x0a210a0au, 0x0a400a38u, 0x0a560a46u, 0x0a8c0a6du, 0x0aba0a9au,
    0x0aeb0ac2u, 0x0b130b08u, 0x0b3a0b17u, 0x0b590b42u, 0x0bd40ba8u, 0x0c140be2u, 0x0c260c24u, 0x0c510c34u,
    0x0c8f0c71u, 0x0cd80cb4u, 0x0d240cdeu, 0x0d6a0d45u, 0x0dc30d9bu, 0x0e030dd1u, 0x0e070e05u, 0x0e1a0e08u,
    0x0e560e2au, 0x0e8a0e60u, 0x0eaa0ea5u, 0x0ecd0ec0u, 0x0ef00edbu, 0x0f210f11u, 0x0f420f40u, 0x0f980f54u);

// ksigns_iq2xs[i]: the 7 sign bits i and their parity as bit 7 (ggml's table
// is exactly that; the eighth sign makes the count of minus signs even).
vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    uint aux = w_u32_at(b0 + 66u + 4u * piece);
    uint i0 = w_u32_at(b0 + 2u + 8u * piece), i1 = w_u32_at(b0 + 6u + 8u * piece);   // 8 grid indices
    for (uint l = 0; l < 4u; l++) {
        uint s7 = (aux >> (7u * l)) & 127u, signs = s7 | ((uint(bitCount(s7)) & 1u) << 7);
        uint idx = l < 2u ? i0 : i1, sh = 16u * (l & 1u);
        uint k1 = (idx >> sh) & 0xFFu, k2 = (idx >> (sh + 8u)) & 0xFFu;
        uint e = ((IQ3XXS_GRID[k1 >> 1] >> (16u * (k1 & 1u))) & 0xFFFu) |
                 (((IQ3XXS_GRID[k2 >> 1] >> (16u * (k2 & 1u))) & 0xFFFu) << 12);
        for (uint j = 0; j < 8u; j++) {
            uint c = (e >> (3u * j)) & 7u;
            float mag = float(8u * c + 4u + ((c + 1u) >> 3) * 2u);   // 4, 12, ..., 52, 62
            q[8u * l + j] = ((signs >> j) & 1u) != 0u ? -mag : mag;
        }
    }
    return vec2(w_f16_at(b0) * (0.5 + float(aux >> 28)) * 0.5, 0.0);
}
