// f16.glsl: ggml F16, one IEEE half per element, two per 32-bit word
// (little end first). See include/weights.glsl.
#define WT_ELEMENTWISE

float wt_value(uint i)
{
    return unpackHalf2x16(w_u16(i)).x;
}
