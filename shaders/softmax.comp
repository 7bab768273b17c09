// softmax.comp: row softmax with scale, subgroup reductions.
// Interface, dispatch and reference: include/softmax_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#include "softmax_body.glsl"
