// iq2_xxs.glsl: ggml block_iq2_xxs, 66 bytes for 256 values: f16 d, then per
// 32 values two u32: aux0 holds four 8-bit indices into iq2xxs_grid (8 values
// of magnitude 8, 25 or 43 each), aux1 four 7-bit sign groups (ksigns_iq2xs)
// and a 4-bit scale ls in bits 28..31; value = d * (0.5 + ls) / 4 * grid byte
// * sign. Piece = 32 values. Blocks are 2-byte aligned. See include/weights.glsl.
const uint WT_BLOCK = 256;
const uint WT_BLOCK_BYTES = 66;
const uint WT_SUB = 32;
const bool WT_OFFSET = false;

// iq2xxs_grid: 256 entries of 8 magnitudes (8, 25, 43), packed as 2-bit codes (0, 1, 2), 16 bits an entry, two a word, transcribed from ggml-common.h
const uint IQ2XXS_GRID[128] = uint[128](
    0x00020000u, 0x00080005u, 0x0011000au, 0x00200014u, 0x00280022u, 0x0041002au, 0x00500044u, 0x00610058u,
    0x00800064u, 0x008a0082u, 0x010100a2u, 0x01100104u, 0x01400115u, 0x01980184u, 0x02020200u, 0x02820222u,
    0x04040401u, 0x04210410u, 0x04400424u, 0x04480442u, 0x04810460u, 0x04900484u, 0x050004a4u, 0x05080502u,
    0x05460520u, 0x05800569u, 0x06090591u, 0x06400610u, 0x06a40684u, 0x08050800u, 0x08140808u, 0x08410828u,
    0x08500844u, 0x08880852u, 0x09400904u, 0x0a140a02u, 0x10041001u, 0x10211010u, 0x10601040u, 0x10901084u,
    0x11001095u, 0x11201108u, 0x115a1150u, 0x12241180u, 0x14001245u, 0x14201408u, 0x14491425u, 0x15181480u,
    0x16001562u, 0x18011616u, 0x18101804u, 0x18811840u, 0x19051900u, 0x1a5119a0u, 0x20022000u, 0x2044200au,
    0x20802061u, 0x21292082u, 0x22002148u, 0x24012202u, 0x24102404u, 0x24562440u, 0x25412500u, 0x26902564u,
    0x28202808u, 0x2a442894u, 0x40044001u, 0x40184010u, 0x40244021u, 0x40484040u, 0x40604056u, 0x40844081u,
    0x41004090u, 0x41614120u, 0x41854180u, 0x42104201u, 0x42564248u, 0x44004268u, 0x44204408u, 0x44994480u,
    0x45244512u, 0x48014600u, 0x48104804u, 0x48454840u, 0x49584900u, 0x49824961u, 0x4a904a45u, 0x50085000u,
    0x50195011u, 0x50805020u, 0x51045088u, 0x51a45142u, 0x54905291u, 0x550a5492u, 0x56545601u, 0x58115800u,
    0x58645819u, 0x5a085940u, 0x60106004u, 0x60686040u, 0x61556100u, 0x62606218u, 0x64056400u, 0x65126510u,
    0x68426584u, 0x80028000u, 0x8041800au, 0x81048082u, 0x81408118u, 0x84018211u, 0x84108404u, 0x84408415u,
    0x85008460u, 0x85948546u, 0x86408609u, 0x88028660u, 0x8a118904u, 0x90109004u, 0x90409024u, 0x911690a1u,
    0x92459180u, 0x94229400u, 0x95519444u, 0x99209881u, 0xa050a002u, 0xa109a085u, 0xa418a200u, 0xa904a850u);

// ksigns_iq2xs[i]: the 7 sign bits i and their parity as bit 7 (ggml's table
// is exactly that; the eighth sign makes the count of minus signs even).
vec2 wt_decode(uint block, uint piece, out float q[WT_SUB])
{
    uint b0 = block * WT_BLOCK_BYTES;
    uint aux0 = w_u32_at(b0 + 2u + 8u * piece), aux1 = w_u32_at(b0 + 6u + 8u * piece);
    for (uint l = 0; l < 4u; l++) {
        uint g = (aux0 >> (8u * l)) & 0xFFu;
        uint s7 = (aux1 >> (7u * l)) & 127u, signs = s7 | ((uint(bitCount(s7)) & 1u) << 7);
        uint e = (IQ2XXS_GRID[g >> 1] >> (16u * (g & 1u))) & 0xFFFFu;
        for (uint j = 0; j < 8u; j++) {
            uint c = (e >> (2u * j)) & 3u;
            float mag = float(8u + 17u * c + (c >> 1));   // 8, 25, 43
            q[8u * l + j] = ((signs >> j) & 1u) != 0u ? -mag : mag;
        }
    }
    return vec2(w_f16_at(b0) * (0.5 + float(aux1 >> 28)) * 0.25, 0.0);
}
