// moe_route_v4.comp: DeepSeek V4's expert routing for one token per
// invocation (llama.cpp deepseek4; tools/deepseek4_ref.py MoE.forward):
//   p   = sqrt(softplus(logits)), softplus(z) = log(1 + exp(z)) (z > 20: z, as ggml)
//   ids = hashed: tid2eid[token] (the file's token -> expert table)
//         else: the n_used largest p + bias (bias only affects the choice;
//         ties: lowest index)
//   w   = p[ids];  if norm: w /= max(sum w, 6.103515625e-5);  w *= scale
// A token >= n_vocab or a table entry >= n_expert (both refused by the loader)
// gives expert 0 with weight 0 rather than an out-of-range read.
//   binding 0  L    readonly   float [n_tok][n_expert]   router logits
//   binding 1  B    readonly   float [n_expert]   selection bias (unread when hashed)
//   binding 2  TOK  readonly   uint [n_tok]       token ids (read when hashed)
//   binding 3  TAB  readonly   int [n_vocab][n_used]   tid2eid (read when hashed)
//   binding 4  IDS  writeonly  uint [n_tok][n_used]
//   binding 5  W    writeonly  float [n_tok][n_used]
//   push       n_tok, n_expert, n_used, hashed, norm, scale, n_vocab
//   spec       0: MAX_EXPERTS (at least n_expert)
//   dispatch   (n_tok, 1, 1), one invocation each
//   reference  tests/ref/ref_v4.c ref_moe_route_v4()
#version 450

layout(constant_id = 0) const uint MAX_EXPERTS = 256;
layout(local_size_x = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer L { float logits[]; };
layout(set = 0, binding = 1, std430) readonly buffer B { float bias[]; };
layout(set = 0, binding = 2, std430) readonly buffer Tok { uint tokens[]; };
layout(set = 0, binding = 3, std430) readonly buffer Tab { int tid2eid[]; };
layout(set = 0, binding = 4, std430) writeonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 5, std430) writeonly buffer W { float w[]; };
layout(push_constant) uniform Push {
    uint n_tok; uint n_expert; uint n_used; uint hashed; uint norm; float scale; uint n_vocab;
} pc;

float sqrt_softplus(float z)
{
    return sqrt(z > 20.0 ? z : log(1.0 + exp(z)));
}

void main()
{
    uint t = gl_WorkGroupID.x;
    if (t >= pc.n_tok) return;
    uint lb = t * pc.n_expert, ob = t * pc.n_used;
    float sum = 0.0;
    if (pc.hashed != 0u) {
        uint tok = tokens[t];
        for (uint k = 0; k < pc.n_used; k++) {
            int e = tok < pc.n_vocab ? tid2eid[tok * pc.n_used + k] : -1;
            bool ok = e >= 0 && uint(e) < pc.n_expert;
            float p = ok ? sqrt_softplus(logits[lb + uint(e)]) : 0.0;
            ids[ob + k] = ok ? uint(e) : 0u;
            w[ob + k] = p;
            sum += p;
        }
    } else {
        float p[MAX_EXPERTS];
        float sel[MAX_EXPERTS];
        for (uint e = 0; e < pc.n_expert; e++) {
            p[e] = sqrt_softplus(logits[lb + e]);
            sel[e] = p[e] + bias[e];
        }
        for (uint k = 0; k < pc.n_used; k++) {
            uint best = 0;
            for (uint e = 1; e < pc.n_expert; e++) if (sel[e] > sel[best]) best = e;
            ids[ob + k] = best;
            w[ob + k] = p[best];
            sum += p[best];
            sel[best] = -3.4e38;
        }
    }
    float f = pc.scale;
    if (pc.norm != 0u) f /= max(sum, 6.103515625e-5);
    for (uint k = 0; k < pc.n_used; k++) w[ob + k] *= f;
}
