// get_rows_q8_0.comp: embedding row gather from Q8_0 weights to float.
// Interface, dispatch and reference: include/get_rows_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_Q8_0
#include "get_rows_body.glsl"
