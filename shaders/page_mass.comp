// page_mass.comp: after a GSM step, what each page of the gated list got
// (DESIGN.md step 4-5), for the tier policy on the host:
//   mass[p]   = mean over heads of the page's share of the head's softmax mass
//               (0 where the head skipped it), from the partials by the
//               log-sum-exp rule: l_i exp(m_i - M) / L with M, L over every slot;
//   bound[p]  = max over heads of the share bound gate_select left in UB
//               (prefetch candidates);
//   heads[p]  = how many heads computed the page (bytes read).
// The per-head shares are kept in rows 3.. of OUT (scratch, also readable).
//   binding 0  P     readonly   float [n_heads][n_total][2 + width]   all partials of the step
//   binding 1  SEL   readonly   uint [n_heads][n_cold]   selected pages in order (gate_select)
//   binding 2  INFO  readonly   float [n_heads][4]   selected count at [4h]
//   binding 3  UB    readonly   float [n_heads][n_cold]   share bounds (gate_select)
//   binding 4  OUT   writeonly  float [3 + n_heads][n_cold]   (mass, bound, heads, per-head shares)
//   push       n_heads, n_total, width, n_cold, split_base (partial slot of the first selected page)
//   spec       0: WG_SIZE, 1: MAX_HEADS (at least n_heads), 2: MAX_COLD (at least n_cold)
//   dispatch   (1, 1, 1)
//   reference  tests/gpu/test_gsm_attention.c (from the dense softmax)
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint MAX_HEADS = 256;
layout(constant_id = 2) const uint MAX_COLD = 256;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer P { float part[]; };
layout(set = 0, binding = 1, std430) readonly buffer Sel { uint sel[]; };
layout(set = 0, binding = 2, std430) readonly buffer Info { float info[]; };
layout(set = 0, binding = 3, std430) readonly buffer UB { float ub[]; };
layout(set = 0, binding = 4, std430) coherent buffer Out { float o[]; };
layout(push_constant) uniform Push { uint n_heads; uint n_total; uint width; uint n_cold; uint split_base; } pc;

shared float sh_m[MAX_HEADS], sh_l[MAX_HEADS];
shared uint sh_heads[MAX_COLD];

void main()
{
    uint lid = gl_LocalInvocationID.x, stride = 2 + pc.width, nc = pc.n_cold;
    // per head: M and L over every slot (empty slots have l = 0)
    for (uint h = lid; h < pc.n_heads; h += WG_SIZE) {
        uint base = h * pc.n_total * stride;
        float big_m = -3.0e38;
        for (uint s = 0; s < pc.n_total; s++)
            if (part[base + s * stride + 1] > 0.0) big_m = max(big_m, part[base + s * stride]);
        float big_l = 0.0;
        for (uint s = 0; s < pc.n_total; s++) {
            float l = part[base + s * stride + 1];
            if (l > 0.0) big_l += l * exp(part[base + s * stride] - big_m);
        }
        sh_m[h] = big_m;
        sh_l[h] = big_l;
    }
    // per-head shares: zero, then the selected pages' from their partials
    for (uint e = lid; e < pc.n_heads * nc; e += WG_SIZE) o[3 * nc + e] = 0.0;
    for (uint p = lid; p < nc; p += WG_SIZE) sh_heads[p] = 0u;
    memoryBarrierBuffer();
    barrier();
    for (uint e = lid; e < pc.n_heads * nc; e += WG_SIZE) {
        uint h = e / nc, i = e % nc;
        if (i >= uint(info[4 * h]) || sh_l[h] <= 0.0) continue;
        uint ob = (h * pc.n_total + pc.split_base + i) * stride, p = sel[h * nc + i];
        float l = part[ob + 1];
        o[(3 + h) * nc + p] = l > 0.0 ? l * exp(part[ob] - sh_m[h]) / sh_l[h] : 0.0;
        atomicAdd(sh_heads[p], 1u);
    }
    memoryBarrierBuffer();
    barrier();
    for (uint p = lid; p < nc; p += WG_SIZE) {
        float mass = 0.0, bound = 0.0;
        for (uint h = 0; h < pc.n_heads; h++) {
            float share = o[(3 + h) * nc + p];
            mass += share;
            bound = max(bound, ub[h * nc + p]);
        }
        o[p] = mass / float(pc.n_heads);
        o[nc + p] = bound;
        o[2 * nc + p] = float(sh_heads[p]);
    }
}
