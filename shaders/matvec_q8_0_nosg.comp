// matvec_q8_0_nosg.comp: matrix-vector product, Q8_0 weights, shared-memory reduction (no subgroup ops).
// Interface, dispatch and reference: include/matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_Q8_0
#include "matvec_body.glsl"
