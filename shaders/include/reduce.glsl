// reduce.glsl: workgroup-wide sum and max of one float per invocation.
// Needs WG_SIZE (spec constant 0, a power of two) declared before inclusion.
// With USE_SUBGROUP: subgroup arithmetic, then one value per subgroup in
// shared memory (gl_SubgroupSize and gl_NumSubgroups are read at run time,
// never assumed); the .comp enables GL_KHR_shader_subgroup_arithmetic. Without: a shared-memory tree, for devices lacking subgroup
// arithmetic (and forced by GSMRT_DISABLE_SUBGROUP_OPS=1).
// Every invocation of the workgroup must call these (they contain barriers).
#ifdef USE_SUBGROUP
shared float sh_red[WG_SIZE];

float wg_sum(float v)
{
    v = subgroupAdd(v);
    if (subgroupElect()) sh_red[gl_SubgroupID] = v;
    barrier();
    float r = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; i++) r += sh_red[i];
    barrier();
    return r;
}

float wg_max(float v)
{
    v = subgroupMax(v);
    if (subgroupElect()) sh_red[gl_SubgroupID] = v;
    barrier();
    float r = sh_red[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) r = max(r, sh_red[i]);
    barrier();
    return r;
}
#else
shared float sh_red[WG_SIZE];

float wg_sum(float v)
{
    uint lid = gl_LocalInvocationID.x;
    sh_red[lid] = v;
    barrier();
    for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
        if (lid < s) sh_red[lid] += sh_red[lid + s];
        barrier();
    }
    float r = sh_red[0];
    barrier();
    return r;
}

float wg_max(float v)
{
    uint lid = gl_LocalInvocationID.x;
    sh_red[lid] = v;
    barrier();
    for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
        if (lid < s) sh_red[lid] = max(sh_red[lid], sh_red[lid + s]);
        barrier();
    }
    float r = sh_red[0];
    barrier();
    return r;
}
#endif
