// moe_matvec_q8_0_nosg.comp: routed-expert matrix-vector products, Q8_0 weights, shared-memory reduction.
// Interface, dispatch and reference: include/moe_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_Q8_0
#include "moe_matvec_body.glsl"
