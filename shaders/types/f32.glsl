// f32.glsl: ggml F32, one IEEE float per element. See include/weights.glsl.
#define WT_ELEMENTWISE

float wt_value(uint i)
{
    return uintBitsToFloat(w[i]);
}
