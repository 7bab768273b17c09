// common.glsl: helpers every kernel may use. No main().

// Workgroup index for dispatches split over x and y because one dimension
// is limited to maxComputeWorkGroupCount[0] (65535 on many devices): the host
// dispatches (min(n, 65535), ceil(n / 65535)) and extra groups return early.
uint flat_group()
{
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

float silu(float x)
{
    return x / (1.0 + exp(-x));
}
