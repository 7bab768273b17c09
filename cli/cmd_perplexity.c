/* cmd_perplexity.c -- `gsm perplexity -f FILE`: perplexity of a text file,
 * as llama.cpp's perplexity tool computes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"

static void on_progress(void *user, const char *stage, float fraction)
{
    (void)user;
    fprintf(stderr, "\r%s: %3.0f%%", stage, fraction * 100.0f);
    fflush(stderr);
}

int cmd_perplexity(int argc, char **argv)
{
    struct opts o;
    opts_init(&o);
    const char *file = NULL;
    uint32_t window = 0;
    for (int i = 1; i < argc; i++) {
        int r = opts_parse_common(&o, "perplexity", argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--file") == 0) && i + 1 < argc) file = argv[++i];
        else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
            if (!parse_u32("perplexity", "--window", argv[++i], 4, 1u << 20, &window)) return EXIT_USAGE;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: gsm perplexity [-m MODEL] -f FILE [--window N] [options]\n\n"
                   "Perplexity of a text file as llama.cpp's perplexity tool computes it: the tokens\n"
                   "(with BOS) are cut into windows of N tokens (default: the context size, -c);\n"
                   "each window starts from an empty cache and its second half is scored.\n\n"
                   "  -f, --file PATH          the text (required)\n"
                   "      --window N           tokens per window\n%s",
                   COMMON_OPTIONS_HELP);
            return 0;
        } else {
            fprintf(stderr, "gsm perplexity: unknown option or missing value '%s'\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (!file) {
        fprintf(stderr, "gsm perplexity: -f FILE is required\n");
        return EXIT_USAGE;
    }
    char *text = cli_read_file("perplexity", file);
    if (!text) return EXIT_RUNTIME;
    gsmrt_context *ctx;
    gsmrt_model *model;
    gsmrt_session *s = NULL;
    if (!load_model(&o, "perplexity", &ctx, &model)) {
        gsmrt_file_free(text);
        return EXIT_RUNTIME;
    }
    if (!window) window = o.n_ctx ? o.n_ctx : 512;
    gsmrt_session_params sp;
    gsmrt_session_params_init(&sp, sizeof sp);
    sp.n_ctx = window;
    sp.n_batch = o.n_batch;
    sp.cache_type = o.cache_type;
    gsmrt_status st = gsmrt_session_create(model, &sp, &s);
    if (st != GSMRT_OK) {
        int code = session_failed("perplexity", ctx, st);
        unload(ctx, model, NULL);
        free(text);
        return code;
    }
    gsmrt_perplexity_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (st == GSMRT_OK) st = gsmrt_session_perplexity(s, text, strlen(text), window, on_progress, NULL, &r);
    fprintf(stderr, "\n");
    int rc = 0;
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm perplexity: %s (%s)\n", gsmrt_context_last_error(ctx), gsmrt_status_name(st));
        rc = EXIT_RUNTIME;
    } else {
        printf("perplexity %.4f over %u tokens (%u windows of %u, %s KV cache)\n", r.ppl, r.n_scored, r.n_windows,
               window, o.cache_type == GSMRT_CACHE_F32 ? "f32" : "f16");
    }
    unload(ctx, model, s);
    gsmrt_file_free(text);
    return rc;
}
