// topk_rows.comp: the top-k selection of the lightning indexer, on the
// device, one workgroup per token:
//   ids[t] = the k rows b < n_visible(t) with the largest score[t][b], in
//   ascending row order; ties at the boundary go to the LOWER row index (the
//   earlier position); with n_visible(t) <= k every visible row, and the
//   remaining slots are 0xffffffff. n_visible(t) = (pos[t] + 1) / ratio.
// Method: the scores as order-preserving uint keys; four 8-bit radix passes
// (shared-memory histograms) find the k-th largest key T and how many rows
// equal to T to take; then each invocation writes its contiguous chunk of
// rows at offsets from a prefix sum over the chunks. NaN scores are not
// expected (they would order above +inf).
//   binding 0  S    readonly   float [n_tok][s_stride]
//   binding 1  POS  readonly   int [n_tok]
//   binding 2  IDS  writeonly  uint [n_tok][k]
//   push       n_tok, n_rows, s_stride, k, ratio
//   spec       0: WG_SIZE (at most 1024)
//   dispatch   one workgroup per token, split over (x, y): see flat_group()
//   reference  tests/ref/ref_v4.c ref_topk_rows()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "common.glsl"

layout(set = 0, binding = 0, std430) readonly buffer S { float s[]; };
layout(set = 0, binding = 1, std430) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Ids { uint ids[]; };
layout(push_constant) uniform Push { uint n_tok; uint n_rows; uint s_stride; uint k; uint ratio; } pc;

shared uint sh_hist[256];
shared uint sh_prefix, sh_mask, sh_want;
shared uint sh_gt[WG_SIZE];
shared uint sh_eq[WG_SIZE];

uint key_of(float f)
{
    uint u = floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

void main()
{
    uint t = flat_group();
    if (t >= pc.n_tok) return;
    uint lid = gl_LocalInvocationID.x, sb = t * pc.s_stride, ob = t * pc.k;
    uint n = min(uint(max(pos[t] + 1, 0)) / pc.ratio, pc.n_rows);
    uint take = min(n, pc.k);
    if (lid == 0u) {
        sh_prefix = 0u;
        sh_mask = 0u;
        sh_want = take;
    }
    for (uint i = take + lid; i < pc.k; i += WG_SIZE) ids[ob + i] = 0xffffffffu;
    barrier();
    if (n > pc.k) {   // otherwise every visible row is taken: T stays 0, every key is above it or equal
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (uint i = lid; i < 256u; i += WG_SIZE) sh_hist[i] = 0u;
            barrier();
            uint prefix = sh_prefix, mask = sh_mask;
            for (uint b = lid; b < n; b += WG_SIZE) {
                uint key = key_of(s[sb + b]);
                if ((key & mask) == prefix) atomicAdd(sh_hist[(key >> uint(shift)) & 255u], 1u);
            }
            barrier();
            if (lid == 0u) {
                uint want = sh_want, above = 0u;
                for (int bin = 255; bin >= 0; bin--) {
                    uint c = sh_hist[bin];
                    if (above + c >= want) {
                        sh_want = want - above;   // still needed among keys with this prefix
                        sh_prefix = prefix | (uint(bin) << uint(shift));
                        sh_mask = mask | (255u << uint(shift));
                        break;
                    }
                    above += c;
                }
            }
            barrier();
        }
    }
    // The threshold T and the number of rows equal to it to take (lowest first).
    uint T = sh_prefix, eq_take = sh_want;
    bool all = n <= pc.k;
    uint chunk = (n + WG_SIZE - 1u) / WG_SIZE, lo = min(lid * chunk, n), hi = min(lo + chunk, n);
    uint gt = 0u, eq = 0u;
    if (!all)
        for (uint b = lo; b < hi; b++) {
            uint key = key_of(s[sb + b]);
            gt += key > T ? 1u : 0u;
            eq += key == T ? 1u : 0u;
        }
    sh_gt[lid] = all ? hi - lo : gt;
    sh_eq[lid] = eq;
    barrier();
    if (lid == 0u) {   // exclusive prefix sums: output offset and ties taken before each chunk
        uint out_pos = 0u, eq_before = 0u;
        for (uint c = 0; c < WG_SIZE; c++) {
            uint g = sh_gt[c], e = sh_eq[c];
            uint e_taken = min(e, eq_take - min(eq_take, eq_before));
            sh_gt[c] = out_pos;
            sh_eq[c] = eq_before;
            out_pos += g + e_taken;
            eq_before += e;
        }
    }
    barrier();
    uint o = sh_gt[lid], eq_seen = sh_eq[lid];
    for (uint b = lo; b < hi; b++) {
        if (all) {
            ids[ob + o++] = b;
            continue;
        }
        uint key = key_of(s[sb + b]);
        if (key > T) ids[ob + o++] = b;
        else if (key == T) {
            if (eq_seen < eq_take) ids[ob + o++] = b;
            eq_seen++;
        }
    }
}
