/* make_seeds.c -- writes the fuzzer's seed corpus: the test generator's
 * valid deepseek2 files (tests/data/gguf_writer.c), small enough to mutate.
 *   usage: make_seeds DIR */
#include <stdio.h>
#include <stdlib.h>

#include "data/gguf_writer.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    for (int v = 2; v < 3; v++) {   /* the smallest file: the others are too large to mutate well */
        struct gw w;
        struct gw_ds2 spec;
        gw_init(&w);
        gw_ds2_spec(&spec, v);
        gw_ds2_build(&w, &spec);
        uint8_t *data;
        size_t size;
        gw_finish(&w, &data, &size);
        char path[1024];
        snprintf(path, sizeof path, "%s/seed-deepseek2-%d.gguf", argv[1], v);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
            perror(path);
            return 1;
        }
        printf("%s: %zu bytes\n", path, size);
        free(data);
        gw_free(&w);
    }
    return 0;
}
