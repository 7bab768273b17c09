// matmul_q8_0.comp: matrix-matrix product, Q8_0 weights, shared-memory tiles.
// Interface, dispatch and reference: include/matmul_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_Q8_0
#include "matmul_body.glsl"
