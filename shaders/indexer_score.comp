// indexer_score.comp: the lightning indexer's scores of DeepSeek V4's CSA
// layers (llama.cpp deepseek4; tools/deepseek4_ref.py Indexer.select), one
// invocation per (token, compressed row):
//   score[t][b] = sum_h relu(q[t][h] . k[b]) * w[t][h]       for b < n_visible(t)
//   score[t][b] = -inf                                       otherwise
//   n_visible(t) = (pos[t] + 1) / ratio (rows whose block is complete)
// q is the indexer query after its RoPE; w = proj_I h already scaled by
// 1 / sqrt(dI * nI) (a matvec and scale before).
//   binding 0  Q    readonly   float [n_tok][q_stride] (head h at h * head_dim)
//   binding 1  W    readonly   float [n_tok][n_heads]
//   binding 2  K    readonly   float [n_rows][k_stride]  compressed indexer rows
//   binding 3  POS  readonly   int [n_tok]
//   binding 4  S    writeonly  float [n_tok][s_stride]   first n_rows of each row
//   push       n_tok, n_heads, head_dim, q_stride, n_rows, k_stride, s_stride, ratio
//   spec       0: WG_SIZE
//   dispatch   (ceil(n_rows / WG_SIZE), n_tok, 1)
//   reference  tests/ref/ref_v4.c ref_indexer_scores()
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1, std430) readonly buffer W { float w[]; };
layout(set = 0, binding = 2, std430) readonly buffer K { float k[]; };
layout(set = 0, binding = 3, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 4, std430) writeonly buffer S { float s[]; };
layout(push_constant) uniform Push {
    uint n_tok; uint n_heads; uint head_dim; uint q_stride; uint n_rows; uint k_stride; uint s_stride; uint ratio;
} pc;

void main()
{
    uint b = gl_WorkGroupID.x * WG_SIZE + gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
    if (b >= pc.n_rows || t >= pc.n_tok) return;
    uint n_visible = uint(max(pos[t] + 1, 0)) / pc.ratio;
    if (b >= n_visible) {
        s[t * pc.s_stride + b] = uintBitsToFloat(0xff800000u);   // -inf
        return;
    }
    float acc = 0.0;
    for (uint h = 0; h < pc.n_heads; h++) {
        uint qb = t * pc.q_stride + h * pc.head_dim, kb = b * pc.k_stride;
        float dot = 0.0;
        for (uint d = 0; d < pc.head_dim; d++) dot += q[qb + d] * k[kb + d];
        acc += max(dot, 0.0) * w[t * pc.n_heads + h];
    }
    s[t * pc.s_stride + b] = acc;
}
