/* wtype.c -- lookups over the weight-type table (wtype_table.def). */
#include "gguf/wtype.h"

#include "gguf/gguf.h"

static const struct gsmrt_wtype_info TABLE[GSMRT_WTYPE_INDEX_COUNT] = {
#define GSMRT_WTYPE_ROW(name_, id, block, bytes, glsl_)                                                        \
    [GSMRT_WTYPE_INDEX_##name_] = {.ggml_type = id,                                                          \
                                   .name = #name_,                                                           \
                                   .block_values = block,                                                    \
                                   .block_bytes = bytes,                                                     \
                                   .glsl = #glsl_,                                                           \
                                   .index = GSMRT_WTYPE_INDEX_##name_},
#include "gguf/wtype_table.def"
#undef GSMRT_WTYPE_ROW
};

const struct gsmrt_wtype_info *gsmrt_wtype_find(uint32_t ggml_type)
{
    for (size_t i = 0; i < GSMRT_WTYPE_INDEX_COUNT; i++)
        if (TABLE[i].ggml_type == ggml_type) return &TABLE[i];
    return NULL;
}

uint64_t gsmrt_wtype_row_bytes(enum gsmrt_wtype type, uint64_t n_cols)
{
    const struct gsmrt_wtype_info *t = gsmrt_wtype_find((uint32_t)type);
    if (!t || n_cols % t->block_values) return 0;
    return n_cols / t->block_values * t->block_bytes;
}

const char *gsmrt_wtype_name(enum gsmrt_wtype type)
{
    const struct gsmrt_wtype_info *t = gsmrt_wtype_find((uint32_t)type);
    if (t) return t->name;
    const char *ggml = gsmrt_ggml_type_name((uint32_t)type);
    return ggml ? ggml : "unknown";
}

const char *gsmrt_wtype_supported_list(void)
{
    /* ", F32, F16, ..." joined at compile time; the leading ", " skipped. */
    static const char list[] =
#define GSMRT_WTYPE_ROW(name_, id, block, bytes, glsl_) ", " #name_
#include "gguf/wtype_table.def"
#undef GSMRT_WTYPE_ROW
        ;
    return list + 2;
}
