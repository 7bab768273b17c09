// attn_partial.comp: MLA attention over one split of the cached latent, subgroup reductions.
// Interface, dispatch and reference: include/attn_partial_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define USE_SUBGROUP
#include "attn_partial_body.glsl"
