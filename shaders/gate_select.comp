// gate_select.comp: GSM's gate for one query token, per head (DESIGN.md step
// 3): from the exact part's partials (m, l per split) and the cold pages'
// score bounds ub, the bound on each cold page's unnormalised mass is
// n_p * exp(ub_p - M) (M, L: the exact part merged by log-sum-exp). Pages
// that the head's group keeps HOT (bit `group` of the page's force mask) are
// taken first, whatever their bound; the others in order of their bound,
// largest first (lower index on ties), until what is left, R, satisfies
// R / (L + R) <= the head's threshold (threshold 0: all). Outputs per head:
// the selected pages (indices into COLD) in order (the rest of the row keeps
// junk), how many, the gate value U / (L + U) over the gated pages, and the
// bound R / (L + R) on the mass actually skipped. UB is overwritten with each
// page's bound on its share, exp(lb) / (L + U) (forced pages: 0), which the
// prefetch policy reads. Everything stays on the device: the cold attention
// kernel reads the selection directly.
//   binding 0  P      readonly   float [n_heads][n_splits][2 + width]   exact partials
//   binding 1  UB     read/write float [n_heads][n_cold]   score bounds in, share bounds out
//   binding 2  COLD   readonly   uint [n_cold][4]   (entry, rows, logical page, force mask)
//   binding 3  SEL    writeonly  uint [n_heads][n_cold]   selected pages, in order
//   binding 4  INFO   writeonly  float [n_heads][4]   (count as float, gate, skipped bound, M)
//   binding 5  HEADS  readonly   uint [n_heads][2]   (group, threshold as float bits)
//   push       n_heads, n_splits, width, n_cold
//   spec       0: MAX_COLD (at least n_cold)
//   dispatch   (n_heads, 1, 1), one invocation each
//   reference  gsm/gate.c gsmrt_gsm_gate_value(), gsmrt_gsm_gate_select()
#version 450

layout(constant_id = 0) const uint MAX_COLD = 256;
layout(local_size_x = 1) in;

layout(set = 0, binding = 0, std430) readonly buffer P { float part[]; };
layout(set = 0, binding = 1, std430) buffer UB { float ub[]; };
layout(set = 0, binding = 2, std430) readonly buffer Cold { uint cold_list[]; };
layout(set = 0, binding = 3, std430) writeonly buffer Sel { uint sel[]; };
layout(set = 0, binding = 4, std430) writeonly buffer Info { float info[]; };
layout(set = 0, binding = 5, std430) readonly buffer Heads { uint heads[]; };
layout(push_constant) uniform Push { uint n_heads; uint n_splits; uint width; uint n_cold; } pc;

void main()
{
    uint h = gl_WorkGroupID.x;
    if (h >= pc.n_heads) return;
    uint group = heads[2 * h];
    float threshold = uintBitsToFloat(heads[2 * h + 1]);
    uint stride = 2 + pc.width, base = h * pc.n_splits * stride;
    float big_m = -3.0e38;
    for (uint s = 0; s < pc.n_splits; s++)
        if (part[base + s * stride + 1] > 0.0) big_m = max(big_m, part[base + s * stride]);
    float big_l = 0.0;
    for (uint s = 0; s < pc.n_splits; s++) {
        float l = part[base + s * stride + 1];
        if (l > 0.0) big_l += l * exp(part[base + s * stride] - big_m);
    }
    // forced pages first; then the log of each gated page's mass bound
    // relative to exp(M); empty pages weigh nothing
    float lb[MAX_COLD];
    bool taken[MAX_COLD];
    float total = 0.0;   // U, relative to exp(M)
    uint count = 0;
    for (uint p = 0; p < pc.n_cold; p++) {
        bool forced = ((cold_list[4 * p + 3] >> group) & 1u) != 0u;
        float u = ub[h * pc.n_cold + p];
        uint rows = cold_list[4 * p + 1];
        lb[p] = (forced || rows == 0u || isinf(u) && u < 0.0) ? -3.0e38 : log(float(rows)) + u - big_m;
        taken[p] = forced;
        if (forced) sel[h * pc.n_cold + count++] = p;
        total += exp(lb[p]);
    }
    float gate = big_l > 0.0 ? total / (big_l + total) : (total > 0.0 ? 1.0 : 0.0);
    for (uint p = 0; p < pc.n_cold; p++)
        ub[h * pc.n_cold + p] = taken[p] ? 0.0 : exp(lb[p]) / max(big_l + total, 1.0e-30);
    // take the largest bounds until the rest is within the threshold
    float rest = total;
    while (count < pc.n_cold) {
        bool done = threshold > 0.0 && (big_l > 0.0 ? rest / (big_l + rest) <= threshold : rest <= 0.0);
        if (done) break;
        uint best = pc.n_cold;
        for (uint p = 0; p < pc.n_cold; p++)
            if (!taken[p] && (best == pc.n_cold || lb[p] > lb[best])) best = p;
        taken[best] = true;
        rest = max(rest - exp(lb[best]), 0.0);
        sel[h * pc.n_cold + count] = best;
        count++;
    }
    if (count == pc.n_cold) rest = 0.0;
    info[4 * h] = float(count);
    info[4 * h + 1] = gate;
    info[4 * h + 2] = big_l > 0.0 ? rest / (big_l + rest) : (rest > 0.0 ? 1.0 : 0.0);
    info[4 * h + 3] = big_m;
}
