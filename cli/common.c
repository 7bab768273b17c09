/* common.c -- option parsing, model loading and output shared by the gsm
 * subcommands (see common.h). Uses gsmrt.h only. */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

char *cli_read_file(const char *cmd, const char *path)
{
    char *text = NULL, err[1200];
    size_t len = 0;
    if (gsmrt_file_load_text(path, GSMRT_TEXT_FILE_MAX_BYTES, &text, &len, err, sizeof err) != GSMRT_OK) {
        fprintf(stderr, "gsm %s: %s\n", cmd, err);
        return NULL;
    }
    return text;
}

void opts_init(struct opts *o)
{
    memset(o, 0, sizeof *o);
    gsmrt_generate_params_init(&o->gen, sizeof o->gen);
    o->validation = -1;
}

bool parse_u32(const char *cmd, const char *opt, const char *v, uint32_t min, uint32_t max, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || v[0] == '-' || n < min || n > max) {
        fprintf(stderr, "gsm %s: %s expects an integer in [%u, %u], got '%s'\n", cmd, opt, min, max, v ? v : "");
        return false;
    }
    *out = (uint32_t)n;
    return true;
}

bool parse_float(const char *cmd, const char *opt, const char *v, float min, float max, float *out)
{
    char *end = NULL;
    errno = 0;
    float f = v ? strtof(v, &end) : 0;
    if (!v || !*v || *end || errno || !(f >= min && f <= max)) {
        fprintf(stderr, "gsm %s: %s expects a number in [%g, %g], got '%s'\n", cmd, opt, min, max, v ? v : "");
        return false;
    }
    *out = f;
    return true;
}

const char COMMON_OPTIONS_HELP[] =
    "  -m, --model PATH         GGUF model (default: the bundled gsm-tiny model)\n"
    "  -c, --ctx-size N         context length in tokens (default: min(4096, the model's))\n"
    "  -b, --batch-size N       prompt tokens per step (default 256)\n"
    "      --cache-type T       KV cache type: f16 (default) or f32 (also -ctk, --cache-type-k)\n"
    "  -n, --n-predict N        tokens to generate at most (default 256)\n"
    "      --temp T             temperature, 0 = greedy (default 0.8)\n"
    "      --top-k N            top-k sampling, 0 = off (default 40)\n"
    "      --top-p P            top-p sampling, 1 = off (default 0.95)\n"
    "      --min-p P            min-p sampling, 0 = off (default 0.05)\n"
    "      --repeat-penalty F   repetition penalty, 1 = off (default 1.0)\n"
    "      --repeat-last-n N    tokens the penalty looks back over (default 64)\n"
    "  -s, --seed S             random seed (default 223698669)\n"
    "      --ignore-eos         keep generating past the end-of-turn token\n"
    "      --chat-format NAME   gsm-tiny, chatml, llama3, deepseek2, deepseek3 (default: from the model)\n"
    "      --device NAME        Vulkan device index or name (default: GSMRT_DEVICE or the best one)\n"
    "      --validate           enable the Khronos validation layer\n"
    "      --check-tensors      check every weight for NaN/Inf while loading (names the tensor)\n"
    "      --gsm                GSM: gate the KV cache (grouped, tiered attention), default settings\n"
    "      --gsm-config FILE    GSM configuration (JSON; see README \"GSM configuration\"); implies --gsm\n"
    "      --gate-threshold T   GSM gate threshold in [0, 1) (0 = exact); implies --gsm\n"
    "      --gsm-set KEY=VALUE  any GSM configuration key (repeatable); implies --gsm\n"
    "      --profile [NAME=]FILE  load a GSM calibration (from gsm calibrate) as profile NAME\n"
    "                           (default: the file name up to its first '.'); repeatable, at most 8;\n"
    "                           requests use the first one unless --use-profile names another;\n"
    "                           implies --gsm\n"
    "      --use-profile NAME   the loaded profile requests use\n"
    "  -v, --verbose            load progress, timings and time to first token on stderr\n";

int opts_parse_common(struct opts *o, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
#define IS(s, l) (strcmp(a, s) == 0 || strcmp(a, l) == 0)
#define NEED_VALUE()                                                         \
    do {                                                                     \
        if (!v) {                                                            \
            fprintf(stderr, "gsm %s: %s needs a value\n", cmd, a);           \
            return -1;                                                       \
        }                                                                    \
        (*i)++;                                                              \
    } while (0)
    if (IS("-m", "--model")) {
        NEED_VALUE();
        o->model = v;
    } else if (IS("-c", "--ctx-size")) {
        NEED_VALUE();
        if (!parse_u32(cmd, a, v, 16, 1u << 20, &o->n_ctx)) return -1;
    } else if (IS("-ctk", "--cache-type") || strcmp(a, "--cache-type-k") == 0) {
        NEED_VALUE();
        if (strcmp(v, "f16") == 0) o->cache_type = GSMRT_CACHE_F16;
        else if (strcmp(v, "f32") == 0) o->cache_type = GSMRT_CACHE_F32;
        else {
            fprintf(stderr, "gsm %s: %s expects f16 or f32, got '%s'\n", cmd, a, v);
            return -1;
        }
    } else if (IS("-b", "--batch-size")) {
        NEED_VALUE();
        if (!parse_u32(cmd, a, v, 1, 4096, &o->n_batch)) return -1;
    } else if (IS("-n", "--n-predict")) {
        NEED_VALUE();
        if (!parse_u32(cmd, a, v, 0, 1u << 24, &o->gen.max_tokens)) return -1;
    } else if (strcmp(a, "--temp") == 0) {
        NEED_VALUE();
        if (!parse_float(cmd, a, v, 0.0f, 100.0f, &o->gen.temperature)) return -1;
    } else if (strcmp(a, "--top-k") == 0) {
        uint32_t k;
        NEED_VALUE();
        if (!parse_u32(cmd, a, v, 0, 1u << 24, &k)) return -1;
        o->gen.top_k = (int32_t)k;
    } else if (strcmp(a, "--top-p") == 0) {
        NEED_VALUE();
        if (!parse_float(cmd, a, v, 0.0001f, 1.0f, &o->gen.top_p)) return -1;
    } else if (strcmp(a, "--min-p") == 0) {
        NEED_VALUE();
        if (!parse_float(cmd, a, v, 0.0f, 1.0f, &o->gen.min_p)) return -1;
    } else if (strcmp(a, "--repeat-penalty") == 0) {
        NEED_VALUE();
        if (!parse_float(cmd, a, v, 0.01f, 100.0f, &o->gen.repeat_penalty)) return -1;
    } else if (strcmp(a, "--repeat-last-n") == 0) {
        NEED_VALUE();
        if (!parse_u32(cmd, a, v, 0, 1u << 20, &o->gen.repeat_last_n)) return -1;
    } else if (IS("-s", "--seed")) {
        NEED_VALUE();
        char *end = NULL;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (!*v || *end || errno || v[0] == '-') {
            fprintf(stderr, "gsm %s: %s expects a non-negative integer, got '%s'\n", cmd, a, v);
            return -1;
        }
        o->gen.seed = s;
    } else if (strcmp(a, "--chat-format") == 0) {
        NEED_VALUE();
        o->chat_format = v;
    } else if (strcmp(a, "--device") == 0) {
        NEED_VALUE();
        if (!*v || v[0] == '-') {
            fprintf(stderr, "gsm %s: %s expects a device index (0, 1, ...) or a name, got '%s'\n", cmd, a, v);
            return -1;
        }
        o->device = v;
    } else if (strcmp(a, "--ignore-eos") == 0) {
        o->gen.ignore_eos = true;
    } else if (strcmp(a, "--gsm") == 0) {
        o->gsm = true;
    } else if (strcmp(a, "--gsm-config") == 0) {
        NEED_VALUE();
        o->gsm_config = v;
    } else if (strcmp(a, "--gate-threshold") == 0 || strcmp(a, "--gsm-set") == 0) {
        NEED_VALUE();
        float t = 0.0f;
        if (strcmp(a, "--gate-threshold") == 0 && (!parse_float(cmd, a, v, 0.0f, 1.0f, &t) || t >= 1.0f)) {
            if (t >= 1.0f) fprintf(stderr, "gsm %s: %s expects a number in [0, 1), got '%s'\n", cmd, a, v);
            return -1;
        }
        if (strcmp(a, "--gsm-set") == 0 && (!strchr(v, '=') || v[0] == '=' || strchr(v, ';'))) {
            fprintf(stderr, "gsm %s: %s expects KEY=VALUE (one setting), got '%s'\n", cmd, a, v);
            return -1;
        }
        size_t used = strlen(o->gsm_settings);
        int w = snprintf(o->gsm_settings + used, sizeof o->gsm_settings - used, "%s%s%s", used ? ";" : "",
                         strcmp(a, "--gsm-set") == 0 ? "" : "gate_threshold=", v);
        if (w < 0 || (size_t)w >= sizeof o->gsm_settings - used) {
            fprintf(stderr, "gsm %s: too many GSM settings\n", cmd);
            return -1;
        }
    } else if (strcmp(a, "--profile") == 0) {
        NEED_VALUE();
        if (o->n_profiles == sizeof o->profiles / sizeof o->profiles[0]) {
            fprintf(stderr, "gsm %s: at most %zu --profile options\n", cmd, sizeof o->profiles / sizeof o->profiles[0]);
            return -1;
        }
        /* NAME=FILE, or FILE named by its base name up to the first '.' */
        const char *eq = strchr(v, '='), *base = strrchr(v, '/');
        const char *name = eq ? v : base ? base + 1 : v, *path = eq ? eq + 1 : v;
        size_t n = eq ? (size_t)(eq - v) : strcspn(name, ".");
        if (n == 0 || n >= sizeof o->profiles[0].name || !*path) {
            fprintf(stderr, "gsm %s: %s expects [NAME=]FILE with a name of 1 to 63 characters, got '%s'\n", cmd, a, v);
            return -1;
        }
        memcpy(o->profiles[o->n_profiles].name, name, n);
        o->profiles[o->n_profiles].name[n] = '\0';
        o->profiles[o->n_profiles].path = path;
        o->n_profiles++;
        o->gsm = true;
        o->gen.profile = o->use_profile ? o->use_profile : o->profiles[0].name;
    } else if (strcmp(a, "--use-profile") == 0) {
        NEED_VALUE();
        o->use_profile = v;
        o->gen.profile = v;
    } else if (strcmp(a, "--validate") == 0) {
        o->validation = 1;
    } else if (strcmp(a, "--check-tensors") == 0) {
        o->check_tensors = true;
    } else if (IS("-v", "--verbose")) {
        o->verbose = true;
    } else {
        return 0;
    }
    return 1;
#undef IS
#undef NEED_VALUE
}

static char path_buf[PATH_MAX + 64];

static bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

const char *default_model_path(void)
{
    const char *env = getenv("GSMRT_MODEL");
    if (env && *env) return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"/../models/gsm-tiny.gguf", "/../share/gsmrt/gsm-tiny.gguf"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(path_buf, sizeof path_buf, "%s%s", exe, rel[i]);
            if (readable(path_buf)) return path_buf;
        }
    }
#ifdef GSM_SOURCE_MODEL
    if (readable(GSM_SOURCE_MODEL)) return GSM_SOURCE_MODEL;
#endif
    return "models/gsm-tiny.gguf";
}

struct progress_state {
    bool shown;
    int last;
};

static void on_progress(void *user, const char *stage, float fraction)
{
    struct progress_state *p = user;
    int pct = (int)(fraction * 100.0f + 0.5f);
    if (pct == p->last) return;
    p->last = pct;
    p->shown = true;
    fprintf(stderr, "\rloading model: %-20s %3d%%", stage, pct);
    fflush(stderr);
}

bool load_model(const struct opts *o, const char *cmd, gsmrt_context **ctx, gsmrt_model **model)
{
    *ctx = NULL;
    *model = NULL;
    gsmrt_context_params cp;
    gsmrt_context_params_init(&cp, sizeof cp);
    cp.device = o->device;
    cp.validation = o->validation;
    cp.log_level = o->verbose ? GSMRT_LOG_INFO : GSMRT_LOG_WARN;
    char err[1024];
    gsmrt_status st = gsmrt_context_create(&cp, ctx, err, sizeof err);
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm %s: %s (%s)\n", cmd, err, gsmrt_status_name(st));
        return false;
    }
    const char *path = o->model ? o->model : default_model_path();
    gsmrt_model_params mp;
    gsmrt_model_params_init(&mp, sizeof mp);
    struct progress_state ps = {false, -1};
    if (o->verbose || isatty(STDERR_FILENO)) {
        mp.progress = on_progress;
        mp.progress_user = &ps;
    }
    mp.chat_format = o->chat_format;
    mp.check_tensors = o->check_tensors;
    st = gsmrt_model_load(*ctx, path, &mp, model);
    if (ps.shown) fprintf(stderr, "\r%60s\r", "");
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm %s: %s (%s)\n", cmd, gsmrt_context_last_error(*ctx), gsmrt_status_name(st));
        if (!o->model && st == GSMRT_E_IO)
            fprintf(stderr, "gsm %s: the bundled model was not found; pass -m MODEL.gguf\n", cmd);
        gsmrt_context_destroy(*ctx);
        *ctx = NULL;
        return false;
    }
    for (uint32_t i = 0; i < o->n_profiles; i++) {
        st = gsmrt_model_load_profile(*model, o->profiles[i].name, o->profiles[i].path);
        if (st != GSMRT_OK) {
            fprintf(stderr, "gsm %s: --profile %s: %s (%s)\n", cmd, o->profiles[i].name, gsmrt_context_last_error(*ctx),
                    gsmrt_status_name(st));
            unload(*ctx, *model, NULL);
            *ctx = NULL;
            *model = NULL;
            return false;
        }
    }
    if (o->use_profile) {
        bool found = false;
        char names[600] = "";
        for (uint32_t i = 0; i < o->n_profiles; i++) {
            found = found || strcmp(o->profiles[i].name, o->use_profile) == 0;
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", o->profiles[i].name);
        }
        if (!found) {
            fprintf(stderr, "gsm %s: --use-profile %s: no such profile (loaded: %s)\n", cmd, o->use_profile,
                    o->n_profiles ? names : "none; load one with --profile NAME=FILE");
            unload(*ctx, *model, NULL);
            *ctx = NULL;
            *model = NULL;
            return false;
        }
    }
    if (o->verbose) {
        gsmrt_model_info mi;
        mi.struct_size = sizeof mi;
        gsmrt_model_describe(*model, &mi);
        gsmrt_device_info di;
        gsmrt_device_info_init(&di, sizeof di);
        gsmrt_context_device(*ctx, &di);
        fprintf(stderr, "model %s (%s): %u layers, %u vocab, %.1f MiB of weights, chat format %s, device %s\n",
                mi.name, path, mi.n_layer, mi.n_vocab, mi.weight_bytes / 1048576.0, mi.chat_format, di.name);
    }
    return true;
}

int session_failed(const char *cmd, gsmrt_context *ctx, gsmrt_status st)
{
    fprintf(stderr, "gsm %s: %s (%s)\n", cmd, gsmrt_context_last_error(ctx), gsmrt_status_name(st));
    /* a bad --gsm-set key or value, a context out of range: the command line is wrong */
    return st == GSMRT_E_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
}

void opts_session_params(const struct opts *o, gsmrt_session_params *sp)
{
    gsmrt_session_params_init(sp, sizeof *sp);
    sp->n_ctx = o->n_ctx;
    sp->n_batch = o->n_batch;
    sp->cache_type = o->cache_type;
    sp->gsm = o->gsm;
    sp->gsm_config = o->gsm_config;
    sp->gsm_settings = o->gsm_settings[0] ? o->gsm_settings : NULL;
}

void unload(gsmrt_context *ctx, gsmrt_model *model, gsmrt_session *s)
{
    gsmrt_session_destroy(s);
    gsmrt_model_destroy(model);
    gsmrt_context_destroy(ctx);
}

int cli_stdout_errno;

bool cli_stdout_flush(void)
{
    errno = 0;
    bool ok = fflush(stdout) == 0 && !ferror(stdout);
    if (!ok && !cli_stdout_errno) cli_stdout_errno = errno ? errno : EIO;
    return ok;
}

/* Stops the generation at the first failed write. */
bool print_token(void *user, const gsmrt_token *tok)
{
    (void)user;
    errno = 0;
    if (tok->text_len && fwrite(tok->text, 1, tok->text_len, stdout) != tok->text_len) {
        if (!cli_stdout_errno) cli_stdout_errno = errno ? errno : EIO;
        return false;
    }
    return cli_stdout_flush();
}
