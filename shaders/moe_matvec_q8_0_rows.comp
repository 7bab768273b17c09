// moe_matvec_q8_0_rows.comp: routed-expert products, Q8_0 weights, one output per invocation (CPU devices).
// Interface, dispatch and reference: include/moe_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_Q8_0
#define ROW_PER_INVOCATION
#include "moe_matvec_body.glsl"
