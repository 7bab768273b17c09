/* cmd_calibrate.c -- `gsm calibrate -o FILE`: runs the model over
 * calibration text and writes the GSM calibration (head groups and their
 * policies per layer) for the model; see gsmrt_model_calibrate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct progress {
    double t0;
};

static void on_progress(void *user, const char *stage, float fraction)
{
    const struct progress *p = user;
    fprintf(stderr, "\r%s: %3.0f%% (%.0f s)", stage, fraction * 100.0f, now_s() - p->t0);
    fflush(stderr);
}

static const char HELP[] =
    "usage: gsm calibrate [-m MODEL] [--data FILE] [--groups N] [--ctx N] [--threshold T] -o FILE\n"
    "\n"
    "Runs the model over calibration text with full attention, measures for every\n"
    "layer and head where its attention mass goes (by distance band, on the first\n"
    "tokens, and how spread out it is), groups each layer's heads by that with\n"
    "k-means, and writes each group's window, hot-page budget and gate threshold\n"
    "as a GSM calibration file (JSON) made for this model. Use the file with the\n"
    "GSM configuration key calibration_path, or as a profile (--profile NAME=FILE).\n"
    "\n"
    "  -o, --output FILE        the calibration file to write (required)\n"
    "  -m, --model PATH         GGUF model (default: the bundled gsm-tiny model)\n"
    "      --data FILE          UTF-8 text, chat markup allowed (default: calib-dialogues.txt\n"
    "                           in the model file's directory)\n"
    "      --groups N           head groups per layer, 1 to the head count (default min(8, heads))\n"
    "      --ctx N              tokens per window, each from an empty cache (default\n"
    "                           min(1024, the model's context))\n"
    "      --threshold T        gate threshold of every group, in [0, 1) (default 0.05)\n"
    "      --max-tokens N       use at most the first N tokens of the text, 0 = all (default 16384:\n"
    "                           about a minute for the bundled model on a 2-core CPU)\n"
    "      --device NAME        Vulkan device index or name\n"
    "      --validate           enable the Khronos validation layer\n"
    "  -v, --verbose            load progress and the model's description on stderr\n";

/* DIR/calib-dialogues.txt for DIR the directory of model_path. */
static void default_data(const char *model_path, char *out, size_t size)
{
    const char *slash = strrchr(model_path, '/');
    if (slash) snprintf(out, size, "%.*s/calib-dialogues.txt", (int)(slash - model_path), model_path);
    else snprintf(out, size, "calib-dialogues.txt");
}

int cmd_calibrate(int argc, char **argv)
{
    struct opts o;
    opts_init(&o);
    gsmrt_calibrate_params cp;
    gsmrt_calibrate_params_init(&cp, sizeof cp);
    cp.max_tokens = 16384;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strcmp(a, "-m") == 0 ||
                     strcmp(a, "--model") == 0 || strcmp(a, "--data") == 0 || strcmp(a, "--groups") == 0 ||
                     strcmp(a, "--ctx") == 0 || strcmp(a, "--threshold") == 0 || strcmp(a, "--max-tokens") == 0 ||
                     strcmp(a, "--device") == 0;
        if (takes && !v) {
            fprintf(stderr, "gsm calibrate: %s needs a value\n", a);
            return EXIT_USAGE;
        }
        if (takes) i++;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(HELP, stdout);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            out = v;
        } else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            o.model = v;
        } else if (strcmp(a, "--data") == 0) {
            cp.data_path = v;
        } else if (strcmp(a, "--groups") == 0) {
            if (!parse_u32("calibrate", a, v, 1, 1024, &cp.n_groups)) return EXIT_USAGE;
        } else if (strcmp(a, "--ctx") == 0) {
            if (!parse_u32("calibrate", a, v, 16, 1u << 20, &cp.n_ctx)) return EXIT_USAGE;
        } else if (strcmp(a, "--threshold") == 0) {
            if (!parse_float("calibrate", a, v, 0.0f, 0.999999f, &cp.threshold)) return EXIT_USAGE;
        } else if (strcmp(a, "--max-tokens") == 0) {
            if (!parse_u32("calibrate", a, v, 0, UINT32_MAX, &cp.max_tokens)) return EXIT_USAGE;
        } else if (strcmp(a, "--device") == 0) {
            o.device = v;
        } else if (strcmp(a, "--validate") == 0) {
            o.validation = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o.verbose = true;
        } else {
            fprintf(stderr, "gsm calibrate: unknown option '%s' (see gsm calibrate --help)\n", a);
            return EXIT_USAGE;
        }
    }
    if (!out) {
        fprintf(stderr, "gsm calibrate: -o FILE (the calibration to write) is required\n");
        return EXIT_USAGE;
    }
    char data[4096];
    if (!cp.data_path) {
        default_data(o.model ? o.model : default_model_path(), data, sizeof data);
        if (access(data, R_OK) != 0) {
            fprintf(stderr, "gsm calibrate: no calibration text: %s not found; pass --data FILE\n", data);
            return EXIT_USAGE;
        }
        cp.data_path = data;
    }
    gsmrt_context *ctx;
    gsmrt_model *model;
    if (!load_model(&o, "calibrate", &ctx, &model)) return EXIT_RUNTIME;
    struct progress pr = {now_s()};
    cp.progress = on_progress;
    cp.progress_user = &pr;
    gsmrt_status st = gsmrt_model_calibrate(model, &cp, out);
    fprintf(stderr, "\n");
    int rc = 0;
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm calibrate: %s (%s)\n", gsmrt_context_last_error(ctx), gsmrt_status_name(st));
        rc = EXIT_RUNTIME;
    } else {
        gsmrt_model_info mi;
        memset(&mi, 0, sizeof mi);
        mi.struct_size = sizeof mi;
        gsmrt_model_describe(model, &mi);
        printf("wrote %s: %u layers x %u heads, calibrated on %s in %.1f s\n", out, mi.n_layer, mi.n_head,
               cp.data_path, now_s() - pr.t0);
    }
    unload(ctx, model, NULL);
    return rc;
}
