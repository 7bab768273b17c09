// matvec_f16_rows.comp: matrix-vector product, F16 weights, one row per invocation (CPU devices).
// Interface, dispatch and reference: include/matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F16
#define ROW_PER_INVOCATION
#include "matvec_body.glsl"
