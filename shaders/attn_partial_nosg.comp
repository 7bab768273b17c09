// attn_partial_nosg.comp: MLA attention over one split of the cached latent, shared-memory reductions.
// Interface, dispatch and reference: include/attn_partial_body.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "attn_partial_body.glsl"
