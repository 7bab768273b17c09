// matvec_f16_nosg.comp: matrix-vector product, F16 weights, shared-memory reduction (no subgroup ops).
// Interface, dispatch and reference: include/matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F16
#include "matvec_body.glsl"
