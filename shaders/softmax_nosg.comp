// softmax_nosg.comp: row softmax with scale, shared-memory reductions.
// Interface, dispatch and reference: include/softmax_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "softmax_body.glsl"
