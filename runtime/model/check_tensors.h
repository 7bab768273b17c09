/* check_tensors.h -- every weight of a GGUF file checked for NaN and
 * infinity on the host, from the mapped data (gsmrt_model_params
 * .check_tensors; llama.cpp's --check-tensors). */
#ifndef GSMRT_MODEL_CHECK_TENSORS_H
#define GSMRT_MODEL_CHECK_TENSORS_H

#include "base/err.h"
#include "gguf/gguf.h"

/* F32 and F16 tensors element by element; Q8_0 by its block scales (the
 * int8 quants are always finite). GSMRT_E_FORMAT at the first non-finite
 * value, naming the file, the tensor and the element or block. */
gsmrt_status gsmrt_check_tensors(const struct gsmrt_gguf *g, struct gsmrt_err *err);

#endif
