// bf16.glsl: ggml BF16, the top 16 bits of an IEEE float per element, two
// per 32-bit word (little end first). See include/weights.glsl.
#define WT_ELEMENTWISE

float wt_value(uint i)
{
    return uintBitsToFloat(w_u16(i) << 16);
}
