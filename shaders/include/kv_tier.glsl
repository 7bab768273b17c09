// kv_tier.glsl: two-tier page addressing (DESIGN.md "GSM"). A page-table
// entry is a slot in the HOT pool (binding KV), or, with COLD_BIT set, a slot
// in the COLD pool (binding KVC: host-visible memory under "swap"). Kernels
// that read cached rows declare both buffers as `kv` and `kvc` and read
// through KV_AT; the branch is uniform per page. Dense sessions bind the hot
// pool twice and never set the bit.
const uint COLD_BIT = 0x80000000u;

uint entry_slot(uint entry)
{
    return entry & ~COLD_BIT;
}

bool entry_cold(uint entry)
{
    return (entry & COLD_BIT) != 0u;
}

#define KV_AT(cold, index) ((cold) ? kvc[index] : kv[index])
