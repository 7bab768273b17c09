// matmul.comp: Y[t][y_offset + r] = sum_c W[r][c] * X[t][c], the rows
// of one weight chunk against n_tok activation rows (prefill, batches).
// Tiled: a TILE x TILE workgroup computes TILE rows x TILE tokens, staging
// K_TILE columns of W (dequantised) and X in shared memory per pass.
//   binding 0  W  readonly   weights [n_rows][n_cols] (one chunk)
//   binding 1  X  readonly   float [n_tok][x_stride]
//   binding 2  Y  writeonly  float [n_tok][y_stride]
//   push       n_cols, n_rows, n_tok, x_stride, y_stride, y_offset
//   spec       0: TILE_R, 1: TILE_T workgroup size in rows and tokens (16, 16)
//   dispatch   (ceil(n_rows / TILE_R), ceil(n_tok / TILE_T), 1)
// With ROW_PER_INVOCATION (CPU devices, where barriers are costly): no
// shared memory; an invocation computes one row for TILE_T tokens, loading
// each weight once for TILE_T products; workgroups of TILE_R invocations,
// dispatch (ceil(n_rows / TILE_R), ceil(n_tok / TILE_T), 1) as well.
//   reference  tests/ref/ref.c ref_matmul()
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(constant_id = 0) const uint TILE_R = 16;
layout(constant_id = 1) const uint TILE_T = 16;
#ifdef ROW_PER_INVOCATION
layout(local_size_x_id = 0) in;
#else
layout(local_size_x_id = 0, local_size_y_id = 1) in;
#endif

#include "common.glsl"
#include "weights.glsl"

layout(set = 0, binding = 1, std430) readonly buffer X { float x[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
    uint n_cols; uint n_rows; uint n_tok; uint x_stride; uint y_stride; uint y_offset;
} pc;

#ifdef ROW_PER_INVOCATION
void main()
{
    uint r = gl_GlobalInvocationID.x, t0 = gl_WorkGroupID.y * TILE_T;
    if (r >= pc.n_rows) return;
    uint nt = min(TILE_T, pc.n_tok - t0);
    float acc[TILE_T];
    for (uint j = 0; j < TILE_T; j++) acc[j] = 0.0;
#ifdef WT_ELEMENTWISE
    for (uint c = 0; c < pc.n_cols; c++) {
        float wv = wt_value(r * pc.n_cols + c);
        for (uint j = 0; j < nt; j++) acc[j] += wv * x[(t0 + j) * pc.x_stride + c];
    }
#else
    uint n_pieces = pc.n_cols / WT_SUB, first = r * n_pieces;
    for (uint p = 0; p < n_pieces; p++) {
        float q[WT_SUB];
        vec2 so = wt_decode((first + p) / WT_PIECES, (first + p) % WT_PIECES, q);
        for (uint m = 0; m < WT_SUB; m++) {
            float wv = wt_apply(so, q[m]);
            uint c = p * WT_SUB + m;
            for (uint j = 0; j < nt; j++) acc[j] += wv * x[(t0 + j) * pc.x_stride + c];
        }
    }
#endif
    for (uint j = 0; j < nt; j++) y[(t0 + j) * pc.y_stride + pc.y_offset + r] = acc[j];
}
#else
const uint K_TILE = 32;   // columns staged per pass: whole pieces of a block type
shared float sh_w[TILE_R][K_TILE];
shared float sh_x[TILE_T][K_TILE];

void main()
{
    uint lr = gl_LocalInvocationID.x, lt = gl_LocalInvocationID.y;
    uint r0 = gl_WorkGroupID.x * TILE_R, t0 = gl_WorkGroupID.y * TILE_T;
    uint lin = lt * TILE_R + lr, n_threads = TILE_R * TILE_T;
    float acc = 0.0;
    for (uint k0 = 0; k0 < pc.n_cols; k0 += K_TILE) {
#ifdef WT_ELEMENTWISE
        for (uint e = lin; e < TILE_R * K_TILE; e += n_threads) {
            uint i = e / K_TILE, k = e % K_TILE, r = r0 + i, c = k0 + k;
            sh_w[i][k] = (r < pc.n_rows && c < pc.n_cols) ? wt_value(r * pc.n_cols + c) : 0.0;
        }
#else
        // n_cols is whole blocks, so a K_TILE of columns is whole pieces
        const uint K_PIECES = K_TILE / WT_SUB;
        for (uint e = lin; e < TILE_R * K_PIECES; e += n_threads) {
            uint i = e / K_PIECES, k = (e % K_PIECES) * WT_SUB, r = r0 + i;
            if (r < pc.n_rows) {
                uint p = (r * pc.n_cols + k0 + k) / WT_SUB;
                float q[WT_SUB];
                vec2 so = wt_decode(p / WT_PIECES, p % WT_PIECES, q);
                for (uint m = 0; m < WT_SUB; m++) sh_w[i][k + m] = wt_apply(so, q[m]);
            } else {
                for (uint m = 0; m < WT_SUB; m++) sh_w[i][k + m] = 0.0;
            }
        }
#endif
        for (uint e = lin; e < TILE_T * K_TILE; e += n_threads) {
            uint i = e / K_TILE, k = e % K_TILE, t = t0 + i, c = k0 + k;
            sh_x[i][k] = (t < pc.n_tok && c < pc.n_cols) ? x[t * pc.x_stride + c] : 0.0;
        }
        barrier();
        for (uint k = 0; k < K_TILE; k++) acc += sh_w[lr][k] * sh_x[lt][k];
        barrier();
    }
    uint r = r0 + lr, t = t0 + lt;
    if (r < pc.n_rows && t < pc.n_tok) y[t * pc.y_stride + pc.y_offset + r] = acc;
}
#endif
