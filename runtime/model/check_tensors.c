/* check_tensors.c -- NaN/Inf in the weights, found before they are uploaded
 * (see check_tensors.h). A NaN in a norm weight otherwise gives plausible
 * looking text, not an error. */
#include "model/check_tensors.h"

#include <math.h>
#include <string.h>

/* An IEEE half is NaN or infinite when its exponent bits are all ones. */
static bool f16_finite(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7C00u) != 0x7C00u;
}

gsmrt_status gsmrt_check_tensors(const struct gsmrt_gguf *g, struct gsmrt_err *err)
{
    uint64_t n = gsmrt_gguf_n_tensors(g);
    for (uint64_t i = 0; i < n; i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
        const unsigned char *d = t->data;
        const char *what = NULL;
        uint64_t at = 0;
        switch (t->type) {
        case GSMRT_GGML_TYPE_F32:
            for (uint64_t k = 0; k < t->data_bytes / 4 && !what; k++) {
                float v;
                memcpy(&v, d + 4 * k, sizeof v);   /* the mapping need not be aligned for floats */
                if (!isfinite(v)) what = "element", at = k;
            }
            break;
        case GSMRT_GGML_TYPE_F16:
            for (uint64_t k = 0; k < t->data_bytes / 2 && !what; k++)
                if (!f16_finite(d + 2 * k)) what = "element", at = k;
            break;
        case GSMRT_GGML_TYPE_Q8_0:   /* blocks of an f16 scale and 32 int8 */
            for (uint64_t k = 0; k < t->data_bytes / 34 && !what; k++)
                if (!f16_finite(d + 34 * k)) what = "the scale of block", at = k;
            break;
        default:   /* the parser refuses other types */
            break;
        }
        if (what)
            return gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: tensor '%s': %s %llu is not finite (NaN or infinity)",
                                 gsmrt_gguf_name(g), t->name, what, (unsigned long long)at);
    }
    return GSMRT_OK;
}
