// matvec_f32.comp: matrix-vector product, F32 weights, subgroup reduction.
// Interface, dispatch and reference: include/matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#define WEIGHT_F32
#include "matvec_body.glsl"
