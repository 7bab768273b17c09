// head_matvec_q8_0_nosg.comp: per-head matrix-vector products, Q8_0 weights, shared-memory reduction.
// Interface, dispatch and reference: include/head_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_Q8_0
#include "head_matvec_body.glsl"
