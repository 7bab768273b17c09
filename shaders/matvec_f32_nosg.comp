// matvec_f32_nosg.comp: matrix-vector product, F32 weights, shared-memory reduction (no subgroup ops).
// Interface, dispatch and reference: include/matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F32
#include "matvec_body.glsl"
