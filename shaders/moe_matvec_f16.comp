// moe_matvec_f16.comp: routed-expert matrix-vector products, F16 weights.
// Interface, dispatch and reference: include/moe_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#define WEIGHT_F16
#include "moe_matvec_body.glsl"
