// get_rows_f16.comp: embedding row gather from F16 weights to float.
// Interface, dispatch and reference: include/get_rows_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F16
#include "get_rows_body.glsl"
