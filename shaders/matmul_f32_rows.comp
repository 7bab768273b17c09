// matmul_f32_rows.comp: matrix-matrix product, F32 weights, one row x TILE_T tokens per invocation (CPU devices).
// Interface, dispatch and reference: include/matmul_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F32
#define ROW_PER_INVOCATION
#include "matmul_body.glsl"
