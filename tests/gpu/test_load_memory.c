/* test_load_memory.c -- loading a model does not keep the file resident next
 * to its device copy (on a unified-memory device both are host memory, so a
 * model would need twice its size): once a tensor is on the device, the
 * mapped file's pages of it leave the process's resident set. Measured from
 * the kernel's own count (/proc/self/smaps, the mapping of the model file),
 * not from the code under test. The bytes stay readable, unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_fixture.h"
#include "model/model.h"

#define MODEL GSMRT_SOURCE_DIR "/models/gsm-tiny.gguf"

/* Resident bytes of the mappings of `path` in this process. */
static uint64_t resident_bytes_of(const char *path)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[4096];
    bool in = false;
    uint64_t kb_sum = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' ')) {   /* a mapping's header */
            size_t n = strlen(line), m = strlen(path);
            in = n >= m && strcmp(line + n - m, path) == 0;
        } else if (in && sscanf(line, "Rss: %llu kB", &kb) == 1) {
            kb_sum += kb;
        }
    }
    fclose(f);
    return kb_sum * 1024;
}

/* FNV-1a over every tensor's bytes. */
static uint64_t checksum(const struct gsmrt_gguf *gg)
{
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < gsmrt_gguf_n_tensors(gg); i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(gg, i);
        const uint8_t *p = t->data;
        for (uint64_t k = 0; k < t->data_bytes; k++) h = (h ^ p[k]) * 1099511628211ull;
    }
    return h;
}

static void test_file_pages_released(void **state)
{
    struct gpu *g = *state;
    char *real = realpath(MODEL, NULL);
    assert_non_null(real);
    struct gsmrt_gguf *gg;
    GPU_OK(gsmrt_gguf_open(real, NULL, &gg, &gpu_err));
    struct gsmrt_hparams hp;
    GPU_OK(gsmrt_hparams_load(gg, &hp, &gpu_err));
    /* every tensor's bytes read once through the mapping (so they are resident), summed */
    uint64_t sum = checksum(gg);
    uint64_t file = gsmrt_gguf_file_bytes(gg), before = resident_bytes_of(real);
    assert_true(before > file / 2);   /* the measurement sees the mapping */

    struct gsmrt_dmodel *m;
    GPU_OK(gsmrt_dmodel_load(g->dev, gg, &hp, NULL, NULL, &m, &gpu_err));
    uint64_t after = resident_bytes_of(real);
    /* what may stay: the metadata before the tensor data and the partial
     * pages at the two ends of each tensor */
    uint64_t allowed = gsmrt_gguf_data_offset(gg) + gsmrt_gguf_n_tensors(gg) * 2 * 4096 + 4096;
    printf("model file %.1f MiB: %.1f MiB of it resident after reading, %.1f MiB after loading (allowed %.1f)\n",
           file / 1048576.0, before / 1048576.0, after / 1048576.0, allowed / 1048576.0);
    assert_true(after <= allowed);
    assert_true(checksum(gg) == sum);   /* read back from the file, unchanged */
    gsmrt_dmodel_destroy(m);
    gsmrt_gguf_close(gg);
    free(real);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_file_pages_released)};
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
