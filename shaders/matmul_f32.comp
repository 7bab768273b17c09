// matmul_f32.comp: matrix-matrix product, F32 weights, shared-memory tiles.
// Interface, dispatch and reference: include/matmul_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F32
#include "matmul_body.glsl"
