/* wtype.h -- the weight-type table (wtype_table.def), for the parser, the
 * loader and the kernels alike. CPU-only. */
#ifndef GSMRT_WTYPE_H
#define GSMRT_WTYPE_H

#include <stddef.h>
#include <stdint.h>

/* Weight formats, numbered as ggml types: one enumerator per table row. */
enum gsmrt_wtype {
#define GSMRT_WTYPE_ROW(name, id, block, bytes, glsl) GSMRT_WTYPE_##name = id,
#include "gguf/wtype_table.def"
#undef GSMRT_WTYPE_ROW
};

/* Dense positions of the rows (0, 1, ...), for tables indexed by type. */
enum gsmrt_wtype_index {
#define GSMRT_WTYPE_ROW(name, id, block, bytes, glsl) GSMRT_WTYPE_INDEX_##name,
#include "gguf/wtype_table.def"
#undef GSMRT_WTYPE_ROW
    GSMRT_WTYPE_INDEX_COUNT
};

struct gsmrt_wtype_info {
    uint32_t ggml_type;      /* ggml's type id */
    const char *name;        /* ggml's name: "Q8_0" */
    uint32_t block_values;   /* values per block (1: a plain element type) */
    uint32_t block_bytes;    /* bytes per block */
    const char *glsl;        /* shaders/types/<glsl>.glsl holds its decode function */
    uint32_t index;          /* position in the table */
};

/* The row of a ggml type id; NULL if the runtime does not run that type. */
const struct gsmrt_wtype_info *gsmrt_wtype_find(uint32_t ggml_type);

/* Bytes of one row of n_cols values; 0 if the type is not in the table or
 * n_cols is not a whole number of blocks. */
uint64_t gsmrt_wtype_row_bytes(enum gsmrt_wtype type, uint64_t n_cols);

/* The table's name of a type, else ggml's name of it, else "unknown". */
const char *gsmrt_wtype_name(enum gsmrt_wtype type);

/* "F32, F16, Q8_0": the supported names, for error messages. */
const char *gsmrt_wtype_supported_list(void);

#endif
