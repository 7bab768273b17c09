// head_matvec_f32_rows.comp: per-head matrix-vector products, F32 weights, one output per invocation (CPU devices).
// Interface, dispatch and reference: include/head_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F32
#define ROW_PER_INVOCATION
#include "head_matvec_body.glsl"
