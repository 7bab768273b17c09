// moe_route.comp: expert routing for one token per invocation, as llama.cpp's
// deepseek2 graph computes it (shared/docs/deepseek2-gguf.md §7):
//   p   = softmax(logits) (gating 1) or sigmoid(logits) (gating 2)
//   sel = p + bias (bias only affects the choice)
//   if n_groups > 1: keep the n_groups_used groups (contiguous blocks of
//       n_expert / n_groups) with the largest top-2 sum of sel
//   ids = the n_used largest sel (ties: lowest index), w = p[ids]
//   if norm: w /= max(sum w, 6.103515625e-5);  if scale not in {0, 1}: w *= scale
//   binding 0  L    readonly   float [n_tok][n_expert]   router logits
//   binding 1  B    readonly   float [n_expert]   selection bias (ignored unless has_bias)
//   binding 2  IDS  writeonly  uint [n_tok][n_used]
//   binding 3  W    writeonly  float [n_tok][n_used]
//   push       n_tok, n_expert, n_used, gating, has_bias, n_groups, n_groups_used, norm, scale
//   spec       0: MAX_EXPERTS (at least n_expert)
//   dispatch   (n_tok, 1, 1), one invocation each
//   reference  tests/ref/ref.c ref_moe_route()
#version 450

layout(constant_id = 0) const uint MAX_EXPERTS = 256;
layout(local_size_x = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer L { float logits[]; };
layout(set = 0, binding = 1, std430) readonly buffer B { float bias[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 3, std430) writeonly buffer W { float w[]; };
layout(push_constant) uniform Push {
    uint n_tok; uint n_expert; uint n_used; uint gating; uint has_bias;
    uint n_groups; uint n_groups_used; uint norm; float scale;
} pc;

const float NEG = -3.0e38;

void main()
{
    uint t = gl_WorkGroupID.x;
    if (t >= pc.n_tok) return;
    uint lb = t * pc.n_expert;
    float p[MAX_EXPERTS];
    float sel[MAX_EXPERTS];

    if (pc.gating == 2u) {
        for (uint e = 0; e < pc.n_expert; e++) p[e] = 1.0 / (1.0 + exp(-logits[lb + e]));
    } else {
        float m = NEG;
        for (uint e = 0; e < pc.n_expert; e++) m = max(m, logits[lb + e]);
        float s = 0.0;
        for (uint e = 0; e < pc.n_expert; e++) {
            p[e] = exp(logits[lb + e] - m);
            s += p[e];
        }
        for (uint e = 0; e < pc.n_expert; e++) p[e] /= s;
    }
    for (uint e = 0; e < pc.n_expert; e++) sel[e] = p[e] + (pc.has_bias != 0u ? bias[e] : 0.0);

    if (pc.n_groups > 1u) {
        uint per = pc.n_expert / pc.n_groups;
        float score[64];   // group scores; gsmrt refuses models with more than 64 groups
        for (uint g = 0; g < pc.n_groups; g++) {
            float a = NEG, b = NEG;   // the two largest
            for (uint e = g * per; e < (g + 1u) * per; e++) {
                float v = sel[e];
                if (v > a) { b = a; a = v; } else if (v > b) { b = v; }
            }
            score[g] = a + b;
        }
        for (uint dropped = 0; dropped < pc.n_groups - pc.n_groups_used; dropped++) {
            uint worst = 0;   // the lowest score (ties: the highest index is dropped first)
            for (uint g = 1; g < pc.n_groups; g++) if (score[g] <= score[worst]) worst = g;
            score[worst] = 3.0e38;
            for (uint e = worst * per; e < (worst + 1u) * per; e++) sel[e] = NEG;
        }
    }

    float sum = 0.0;
    for (uint k = 0; k < pc.n_used; k++) {
        uint best = 0;
        for (uint e = 1; e < pc.n_expert; e++) if (sel[e] > sel[best]) best = e;
        ids[t * pc.n_used + k] = best;
        w[t * pc.n_used + k] = p[best];
        sum += p[best];
        sel[best] = -3.4e38;   // below NEG: a masked expert still outranks a taken one
    }
    float f = 1.0;
    if (pc.norm != 0u) f = 1.0 / max(sum, 6.103515625e-5);
    if (pc.scale != 0.0 && pc.scale != 1.0) f *= pc.scale;
    for (uint k = 0; k < pc.n_used; k++) w[t * pc.n_used + k] *= f;
}
