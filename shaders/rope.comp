// rope.comp: rotary position embedding, in place, with YaRN scaling, as
// ggml's rope_yarn computes it (shared/docs/deepseek2-gguf.md section 5).
// For token t, head h, pair i < n_dims/2, angle theta_i(pos[t]):
//   NORM (mode 0): rotates (v[2i], v[2i+1])            -- llama.cpp deepseek2
//   NEOX (mode 2): rotates (v[i],  v[i + n_dims/2])     -- ggml's NEOX value
// where v = x[t*row_stride + h*head_stride + rot_offset ...]. Elements
// outside [rot_offset, rot_offset + n_dims) of a head are untouched.
//   theta_extrap = pos * freq_base^(-2i/n_dims), theta_interp = freq_scale * theta_extrap
//   ramp = ext_factor * (1 - clamp((i - corr_low) / max(0.001, corr_high - corr_low), 0, 1))
//   theta = theta_interp * (1 - ramp) + theta_extrap * ramp
//   mscale = attn_factor * (ext_factor != 0 ? 1 + 0.1 ln(1/freq_scale) : 1)
//   (cos, sin) = mscale * (cos theta, sin theta)
//   binding 0  X    read/write  float [n_tok][row_stride]
//   binding 1  POS  readonly    int [n_tok]
//   push       n_tok, n_heads, head_stride, row_stride, rot_offset, n_dims, mode,
//              freq_base, freq_scale, ext_factor, attn_factor, corr_low, corr_high
//   spec       0: WG_SIZE
//   dispatch   (ceil(n_heads * n_dims / 2 / WG_SIZE), n_tok, 1)
//   reference  tests/ref/ref.c ref_rope()
#version 450
#extension GL_GOOGLE_include_directive : require

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) buffer X { float x[]; };
layout(set = 0, binding = 1, std430) readonly buffer Pos { int pos[]; };
layout(push_constant) uniform Push {
    uint n_tok; uint n_heads; uint head_stride; uint row_stride; uint rot_offset; uint n_dims;
    uint mode; float freq_base; float freq_scale; float ext_factor; float attn_factor;
    float corr_low; float corr_high;
} pc;

void main()
{
    uint half_dims = pc.n_dims / 2;
    uint p = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (p >= pc.n_heads * half_dims || t >= pc.n_tok) return;
    uint h = p / half_dims, i = p % half_dims;

    float theta_extrap = float(pos[t]) * pow(pc.freq_base, -2.0 * float(i) / float(pc.n_dims));
    float theta_interp = pc.freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = pc.attn_factor;
    if (pc.ext_factor != 0.0) {
        float y = (float(i) - pc.corr_low) / max(0.001, pc.corr_high - pc.corr_low);
        float ramp = (1.0 - clamp(y, 0.0, 1.0)) * pc.ext_factor;
        theta = theta_interp * (1.0 - ramp) + theta_extrap * ramp;
        mscale *= 1.0 + 0.1 * log(1.0 / pc.freq_scale);
    }
    float c = cos(theta) * mscale, s = sin(theta) * mscale;

    uint base = t * pc.row_stride + h * pc.head_stride + pc.rot_offset;
    uint a = pc.mode == 0u ? base + 2 * i : base + i;
    uint b = pc.mode == 0u ? a + 1 : a + half_dims;
    float x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
}
