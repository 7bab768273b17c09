// head_matvec_f16_nosg.comp: per-head matrix-vector products, F16 weights, shared-memory reduction.
// Interface, dispatch and reference: include/head_matvec_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F16
#include "head_matvec_body.glsl"
