// rms_norm.comp: RMS normalisation times a weight, subgroup reduction.
// Interface, dispatch and reference: include/rms_norm_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#include "rms_norm_body.glsl"
