/* common.h -- what the gsm subcommands share: option parsing with checked
 * ranges, the default model, loading with progress, streaming output. */
#ifndef GSM_CLI_COMMON_H
#define GSM_CLI_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "gsmrt.h"

/* Options common to run, chat and perplexity. */
struct opts {
    const char *model;        /* NULL: the bundled model */
    const char *device;
    const char *chat_format;
    uint32_t n_ctx, n_batch;
    gsmrt_cache_type cache_type;   /* --cache-type (default: the library's, F16) */
    gsmrt_generate_params gen;
    bool verbose;
    bool check_tensors;       /* --check-tensors */
    int validation;           /* -1: environment */
    bool gsm;                 /* --gsm */
    const char *gsm_config;   /* --gsm-config FILE */
    char gsm_settings[1024];  /* --gate-threshold, --gsm-set: "key=value;..." */
    struct {                  /* --profile [NAME=]FILE, loaded after the model */
        char name[64];
        const char *path;
    } profiles[8];
    uint32_t n_profiles;
    const char *use_profile;  /* --use-profile NAME (else the first --profile) */
};

/* Prints why gsmrt_session_create failed; the exit code: 2 for a bad
 * setting (GSMRT_E_INVALID_ARGUMENT: --gsm-set, --gate-threshold), else 1. */
int session_failed(const char *cmd, gsmrt_context *ctx, gsmrt_status st);

/* Session params with the common options (context, batch, cache type, GSM). */
void opts_session_params(const struct opts *o, gsmrt_session_params *sp);

void opts_init(struct opts *o);

/* Parses argv[*i] (and its value) if it is a common option: returns 1 when
 * consumed, 0 when not a common option, -1 after printing a usage error. */
int opts_parse_common(struct opts *o, const char *cmd, int argc, char **argv, int *i);

/* Strict number parsing: the whole string, within [min, max]; prints
 * "gsm CMD: OPTION expects ..." and returns false otherwise. */
bool parse_u32(const char *cmd, const char *opt, const char *v, uint32_t min, uint32_t max, uint32_t *out);
bool parse_float(const char *cmd, const char *opt, const char *v, float min, float max, float *out);

/* The help text of the common options. */
extern const char COMMON_OPTIONS_HELP[];

/* Creates the context and loads the model (progress on stderr). On failure
 * prints the library's message and returns false with nothing left open. */
bool load_model(const struct opts *o, const char *cmd, gsmrt_context **ctx, gsmrt_model **model);
void unload(gsmrt_context *ctx, gsmrt_model *model, gsmrt_session *s);

/* The bundled model: $GSMRT_MODEL, next to the executable
 * (../models/gsm-tiny.gguf, ../share/gsmrt/gsm-tiny.gguf) or the source tree. */
const char *default_model_path(void);

/* A token callback that writes each piece to stdout and flushes. */
bool print_token(void *user, const gsmrt_token *tok);

#endif
