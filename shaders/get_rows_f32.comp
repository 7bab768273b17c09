// get_rows_f32.comp: embedding row gather from F32 weights to float.
// Interface, dispatch and reference: include/get_rows_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define WEIGHT_F32
#include "get_rows_body.glsl"
