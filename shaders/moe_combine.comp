// moe_combine.comp: the routed experts' weighted sum,
//   y[t][c] = sum_k w[t][k] * z[t][k][c]
//   binding 0  W  readonly   float [n_tok][n_used]   routing weights
//   binding 1  Z  readonly   float [n_tok][n_used][width]   expert outputs
//   binding 2  Y  writeonly  float [n_tok][width]
//   push       n_tok, n_used, width
//   spec       0: WG_SIZE
//   dispatch   (ceil(width / WG_SIZE), n_tok, 1)
//   reference  tests/ref/ref.c ref_moe_combine()
#version 450

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer W { float w[]; };
layout(set = 0, binding = 1, std430) readonly buffer Z { float z[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n_tok; uint n_used; uint width; } pc;

void main()
{
    uint c = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (c >= pc.width || t >= pc.n_tok) return;
    float acc = 0.0;
    for (uint k = 0; k < pc.n_used; k++) acc += w[t * pc.n_used + k] * z[(t * pc.n_used + k) * pc.width + c];
    y[t * pc.width + c] = acc;
}
