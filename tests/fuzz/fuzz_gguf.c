/* fuzz_gguf.c -- libFuzzer target: any bytes through the GGUF parser and the
 * deepseek2 hyper-parameter and tensor-shape checks. A crash, an ASan/UBSan
 * report or a leak is a finding; a clean error status is the expected
 * outcome for almost every input. Built by scripts/run-fuzz.sh. */
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "model/hparams.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gsmrt_err err;
    struct gsmrt_gguf *g = NULL;
    if (gsmrt_gguf_open_memory(data, size, "fuzz.gguf", NULL, &g, &err) != GSMRT_OK) return 0;
    struct gsmrt_hparams hp;
    gsmrt_hparams_load(g, &hp, &err);
    /* walk what a loader reads */
    for (uint64_t i = 0; i < gsmrt_gguf_n_tensors(g); i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
        if (t->data_bytes) {
            volatile uint8_t last = ((const uint8_t *)t->data)[t->data_bytes - 1];
            (void)last;
        }
    }
    struct gsmrt_gguf_str s;
    gsmrt_gguf_get_str_opt(g, "tokenizer.chat_template", "", &s, &err);
    gsmrt_gguf_close(g);
    return 0;
}
