// moe_matvec_f32_nosg.comp: routed-expert matrix-vector products, F32 weights, shared-memory reduction.
// Interface, dispatch and reference: include/moe_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F32
#include "moe_matvec_body.glsl"
