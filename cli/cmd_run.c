/* cmd_run.c -- `gsm run -p PROMPT`: continues a prompt, streaming. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "gsm_stats.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gsm run [-m MODEL] -p PROMPT [options]\n\n"
               "Continues PROMPT (plain text, no chat format) and prints the continuation as it is\n"
               "generated.\n\n"
               "  -p, --prompt TEXT        the text to continue (required)\n"
               "  -f, --file PATH          read the prompt from a file instead\n"
               "      --stats              GSM statistics on stderr: a line per decode step, then the totals\n"
               "%s",
            COMMON_OPTIONS_HELP);
}

/* --stats: the token callback prints what the step before it did. */
struct step_stats {
    gsmrt_session *s;
    gsmrt_gsm_stats last;
};

static bool print_token_and_step(void *user, const gsmrt_token *tok)
{
    struct step_stats *ss = user;
    gsmrt_gsm_stats now = {.struct_size = sizeof now};
    if (gsmrt_session_gsm_stats(ss->s, &now) == GSMRT_OK && now.enabled && tok->index > 0) {
        fflush(stdout);
        gsm_stats_print_step(stderr, tok->index, &ss->last, &now);
    }
    ss->last = now;
    return print_token(NULL, tok);
}

int cmd_run(int argc, char **argv)
{
    struct opts o;
    opts_init(&o);
    const char *prompt = NULL, *file = NULL;
    bool stats = false;
    for (int i = 1; i < argc; i++) {
        int r = opts_parse_common(&o, "run", argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if ((strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--prompt") == 0) && i + 1 < argc) prompt = argv[++i];
        else if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--file") == 0) && i + 1 < argc) file = argv[++i];
        else if (strcmp(argv[i], "--stats") == 0) stats = true;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "gsm run: unknown option or missing value '%s' (see gsm run --help)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (!prompt && !file) {
        fprintf(stderr, "gsm run: a prompt is required (-p TEXT or -f FILE)\n");
        return EXIT_USAGE;
    }
    char *owned = file ? cli_read_file("run", file) : NULL;
    if (file && !owned) return EXIT_RUNTIME;
    if (owned) prompt = owned;

    gsmrt_context *ctx;
    gsmrt_model *model;
    gsmrt_session *s = NULL;
    if (!load_model(&o, "run", &ctx, &model)) {
        gsmrt_file_free(owned);
        return EXIT_RUNTIME;
    }
    gsmrt_session_params sp;
    opts_session_params(&o, &sp);
    gsmrt_status st = gsmrt_session_create(model, &sp, &s);
    gsmrt_generate_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    struct step_stats ss = {s, {.struct_size = sizeof(gsmrt_gsm_stats)}};
    if (st == GSMRT_OK)
        st = gsmrt_session_complete(s, prompt, &o.gen, stats ? print_token_and_step : print_token, &ss, &r);
    int rc = 0;
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm run: %s (%s)\n", gsmrt_context_last_error(ctx), gsmrt_status_name(st));
        rc = EXIT_RUNTIME;
    } else {
        printf("\n");
        if (o.verbose)
            fprintf(stderr,
                    "prompt: %u tokens in %.1f ms (%.1f tokens/s); time to first token %.1f ms; "
                    "generated %u tokens in %.1f ms (%.1f tokens/s)\n",
                    r.n_prompt_tokens, r.prompt_ms, r.prompt_ms > 0 ? r.n_prompt_tokens * 1e3 / r.prompt_ms : 0,
                    r.first_token_ms, r.n_tokens, r.generate_ms,
                    r.generate_ms > 0 && r.n_tokens > 1 ? (r.n_tokens - 1) * 1e3 / r.generate_ms : 0);
        if (stats) {
            gsmrt_gsm_stats total = {.struct_size = sizeof total};
            if (gsmrt_session_gsm_stats(s, &total) == GSMRT_OK) gsm_stats_print_totals(stderr, &total);
        }
    }
    unload(ctx, model, s);
    gsmrt_file_free(owned);
    return rc;
}
