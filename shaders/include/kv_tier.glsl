// kv_tier.glsl: the KV pools and the one function every kernel reads cached
// rows with (DESIGN.md "GSM").
//
// Storage type. A pool is an array of 32-bit words. With the specialization
// constant KV_F16 false a word holds one float (its bits); with KV_F16 true
// it holds two halves, element i in word i / 2 (low half first, as
// packHalf2x16 packs), so an F16 row of `width` values (even) takes width / 2
// words. Element indices are the same in both: row r, channel j is element
// r * width + j. kv_load() hides the difference.
//
// Two-tier page addressing. A page-table entry is a slot in the HOT pool
// (binding KV_BINDING), or, with COLD_BIT set, a slot in the COLD pool
// (binding KVC_BINDING: host-visible memory under "swap"); the branch is
// uniform per page. Dense sessions bind the hot pool twice and never set the
// bit.
//
// Before including, a kernel defines KV_F16_ID (its specialization constant
// id for the type), KV_BINDING, and KVC_BINDING when it reads the cold pool;
// KV_WRITE makes the hot pool writable (kv_store).
#if !defined(KV_F16_ID) || !defined(KV_BINDING)
#error "define KV_F16_ID and KV_BINDING before including kv_tier.glsl"
#endif

const uint COLD_BIT = 0x80000000u;

layout(constant_id = KV_F16_ID) const bool KV_F16 = false;

#ifdef KV_WRITE
layout(set = 0, binding = KV_BINDING, std430) writeonly buffer KV { uint kv[]; };
#else
layout(set = 0, binding = KV_BINDING, std430) readonly buffer KV { uint kv[]; };
#endif
#ifdef KVC_BINDING
layout(set = 0, binding = KVC_BINDING, std430) readonly buffer KVC { uint kvc[]; };
#define KV_WORD(cold, w) ((cold) ? kvc[w] : kv[w])
#else
#define KV_WORD(cold, w) (kv[w])
#endif

uint entry_slot(uint entry)
{
    return entry & ~COLD_BIT;
}

bool entry_cold(uint entry)
{
    return (entry & COLD_BIT) != 0u;
}

// Element `index` of the pool the entry's tier names (cold: the cold pool).
float kv_load(bool cold, uint index)
{
    if (KV_F16) {
        vec2 pair = unpackHalf2x16(KV_WORD(cold, index >> 1));
        return (index & 1u) != 0u ? pair.y : pair.x;
    }
    return uintBitsToFloat(KV_WORD(cold, index));
}
