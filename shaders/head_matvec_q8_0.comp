// head_matvec_q8_0.comp: per-head matrix-vector products, Q8_0 weights.
// Interface, dispatch and reference: include/head_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#define WEIGHT_Q8_0
#include "head_matvec_body.glsl"
