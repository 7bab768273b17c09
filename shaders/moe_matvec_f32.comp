// moe_matvec_f32.comp: routed-expert matrix-vector products, F32 weights.
// Interface, dispatch and reference: include/moe_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#define WEIGHT_F32
#include "moe_matvec_body.glsl"
