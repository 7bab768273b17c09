// rms_norm_nosg.comp: RMS normalisation times a weight, shared-memory reduction.
// Interface, dispatch and reference: include/rms_norm_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rms_norm_body.glsl"
