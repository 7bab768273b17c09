// attn_v4.comp: DeepSeek V4's attention (llama.cpp deepseek4;
// tools/deepseek4_ref.py Attention.forward from the scores to the weighted
// sum), one workgroup per (token, head). Every key is one shared row (K = V,
// HEAD_DIM floats); per head one sink logit takes probability and gives no value:
//   keys(t)  = the raw rows of positions max(0, pos - n_swa + 1) .. pos
//              + mode 1 (CSA): the compressed rows ids[t][0..top_k) (0xffffffff: none)
//              + mode 2 (HCA): the compressed rows b < (pos + 1) / ratio
//   s_j      = scale * q[t][h] . row_j,   z = sum_j exp(s_j) + exp(sinks[h])
//   out[t][h] = sum_j exp(s_j) / z * row_j        (still RoPE'd: de-RoPE follows)
// Raw rows live in a ring: position p at row p % raw_rows (the caller keeps
// each query's window there: raw_rows >= n_swa + tokens of the batch - 1).
// Compressed row indices >= n_comp are skipped (never read).
// Keys are processed in tiles of WG_SIZE: one score per invocation, an online
// softmax over the tiles, each invocation accumulating HEAD_DIM / WG_SIZE dims.
//   binding 0  Q      readonly   float [n_tok][q_stride]   head h at h * HEAD_DIM
//   binding 1  RAW    readonly   float [raw_rows][raw_stride]
//   binding 2  COMP   readonly   float [n_comp][comp_stride]
//   binding 3  IDS    readonly   uint [n_tok][top_k]   (read in mode 1)
//   binding 4  POS    readonly   int [n_tok]
//   binding 5  SINKS  readonly   float [n_heads]
//   binding 6  OUT    writeonly  float [n_tok][n_heads][HEAD_DIM]
//   push       n_tok, n_heads, q_stride, raw_rows, raw_stride, n_comp, comp_stride,
//              n_swa, mode, top_k, ratio, scale
//   spec       0: WG_SIZE (power of two), 1: HEAD_DIM
//   dispatch   (n_heads, n_tok, 1)
//   reference  tests/ref/ref_v4.c ref_attn_v4()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint HEAD_DIM = 512;
layout(local_size_x_id = 0) in;

#include "reduce.glsl"

const uint ACC = (HEAD_DIM + WG_SIZE - 1u) / WG_SIZE;
const uint NONE = 0xffffffffu;

layout(set = 0, binding = 0, std430) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1, std430) readonly buffer Raw { float raw[]; };
layout(set = 0, binding = 2, std430) readonly buffer Comp { float comp[]; };
layout(set = 0, binding = 3, std430) readonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 4, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 5, std430) readonly buffer Sinks { float sinks[]; };
layout(set = 0, binding = 6, std430) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Push {
    uint n_tok; uint n_heads; uint q_stride; uint raw_rows; uint raw_stride; uint n_comp; uint comp_stride;
    uint n_swa; uint mode; uint top_k; uint ratio; float scale;
} pc;

shared float sh_p[WG_SIZE];
shared uint sh_row[WG_SIZE];   // the key's row: raw, or compressed with the top bit set

// Key j of this token as (is_raw, row); valid false for an empty slot.
bool key_row(uint j, uint p, uint n_raw, out bool is_raw, out uint row)
{
    is_raw = j < n_raw;
    if (is_raw) {
        row = (p - n_raw + 1u + j) % pc.raw_rows;
        return true;
    }
    uint c = j - n_raw;
    row = pc.mode == 1u ? ids[gl_WorkGroupID.y * pc.top_k + c] : c;
    return row != NONE && row < pc.n_comp;
}

void main()
{
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    if (h >= pc.n_heads || t >= pc.n_tok) return;
    uint p = uint(max(pos[t], 0));
    uint n_raw = min(p + 1u, pc.n_swa);
    uint n_cmp = pc.mode == 1u ? pc.top_k : pc.mode == 2u ? (p + 1u) / pc.ratio : 0u;
    uint n_keys = n_raw + n_cmp;
    uint qb = t * pc.q_stride + h * HEAD_DIM;

    float acc[ACC];
    for (uint i = 0; i < ACC; i++) acc[i] = 0.0;
    float m = -3.0e38, l = 0.0;
    for (uint base = 0; base < n_keys; base += WG_SIZE) {
        uint j = base + lid;
        bool is_raw = false;
        uint row = 0u;
        bool valid = j < n_keys && key_row(j, p, n_raw, is_raw, row);
        float s = -3.0e38;
        if (valid) {
            float dot = 0.0;
            uint kb = is_raw ? row * pc.raw_stride : row * pc.comp_stride;
            if (is_raw) for (uint d = 0; d < HEAD_DIM; d++) dot += q[qb + d] * raw[kb + d];
            else for (uint d = 0; d < HEAD_DIM; d++) dot += q[qb + d] * comp[kb + d];
            s = dot * pc.scale;
        }
        float m_new = max(m, wg_max(s));
        float e = valid ? exp(s - m_new) : 0.0;
        float f = exp(m - m_new);
        l = l * f + wg_sum(e);
        m = m_new;
        sh_p[lid] = e;
        // raw rows as themselves, compressed rows with the top bit set (row counts stay below 2^31)
        sh_row[lid] = is_raw ? row : row | 0x80000000u;
        barrier();
        uint n_here = min(WG_SIZE, n_keys - base);
        for (uint i = 0; i < ACC; i++) acc[i] *= f;
        for (uint k = 0; k < n_here; k++) {
            float w = sh_p[k];
            if (w == 0.0) continue;
            uint r = sh_row[k];
            // ACC is a constant: the loops unroll and acc stays in registers
            if ((r & 0x80000000u) != 0u) {
                uint rb = (r & 0x7fffffffu) * pc.comp_stride;
                for (uint i = 0; i < ACC; i++)
                    if (lid + i * WG_SIZE < HEAD_DIM) acc[i] += w * comp[rb + lid + i * WG_SIZE];
            } else {
                uint rb = r * pc.raw_stride;
                for (uint i = 0; i < ACC; i++)
                    if (lid + i * WG_SIZE < HEAD_DIM) acc[i] += w * raw[rb + lid + i * WG_SIZE];
            }
        }
        barrier();
    }
    // The sink: one more logit in the normaliser, no value.
    float sink = sinks[h];
    float m_all = max(m, sink);
    float z = l * exp(m - m_all) + exp(sink - m_all);
    float f = exp(m - m_all) / z;
    uint ob = (t * pc.n_heads + h) * HEAD_DIM;
    for (uint i = 0; i < ACC; i++) {
        uint d = lid + i * WG_SIZE;
        if (d < HEAD_DIM) outv[ob + d] = acc[i] * f;
    }
}
