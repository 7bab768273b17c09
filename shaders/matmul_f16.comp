// matmul_f16.comp: matrix-matrix product, F16 weights, shared-memory tiles.
// Interface, dispatch and reference: include/matmul_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F16
#include "matmul_body.glsl"
