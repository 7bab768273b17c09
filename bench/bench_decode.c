/* bench_decode.c -- prefill and decode speed of the decoder at several
 * context depths, batch 1, and the dispatches and submissions per decoded
 * token (like llama-bench's pp/tg). Wall-clock on a possibly shared machine:
 * compare ratios within one run.
 *
 *   usage: bench_decode [-m MODEL] [--depths 128,1024,4096] [--gen N]
 *                       [--batch N] [--reps N] [--json] [--profile]
 *                       [--logits N PATH]
 *
 * --logits N PATH: instead, the logits (float32 [n_vocab]) after a prefill
 * of the bench's first N tokens go to PATH (a new file), for comparing with
 * another runtime (tools/wide_check.mjs); with --greedy G, the G tokens of
 * a greedy continuation are printed ("greedy: id id ..."). Load progress
 * goes to stderr. */
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GPU time per kernel label in the last decode step. */
static void print_profile(struct gsmrt_vk_rec *rec, const char *what, uint32_t depth)
{
    struct gsmrt_vk_timing t[512];
    uint32_t n = gsmrt_vk_rec_timings(rec, t, 512);
    const char *labels[32];
    double ms[32];
    uint32_t count[32], nl = 0;
    double total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = 0;
        while (k < nl && strcmp(labels[k], t[i].label) != 0) k++;
        if (k == nl && nl < 32) labels[nl] = t[i].label, ms[nl] = 0, count[nl] = 0, nl++;
        if (k < 32) ms[k] += t[i].ms, count[k]++;
        total += t[i].ms;
    }
    fprintf(stderr, "%s ending at depth %u: %u dispatches, %.2f ms of GPU time\n", what, depth, n, total);
    for (uint32_t k = 0; k < nl; k++)
        fprintf(stderr, "  %-14s %4u x  %8.3f ms  %5.1f%%\n", labels[k], count[k], ms[k], 100 * ms[k] / total);
}

/* One progress line on stderr, rewritten in place. */
static void progress(void *user, const char *stage, float fraction)
{
    int *last = user, pct = (int)(100.0f * fraction);
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rloading: %s %3d%%%s", stage, pct, pct >= 100 ? "\n" : "");
}

/* Writes n floats to a new file at path (never over an existing one). */
static int write_new(const char *path, const float *v, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    ssize_t w = write(fd, v, n * sizeof *v);
    int bad = w != (ssize_t)(n * sizeof *v);
    if (close(fd) != 0 || bad) {
        fprintf(stderr, "%s: short write\n", path);
        return 1;
    }
    return 0;
}

#define CHECK(expr)                                             \
    do {                                                        \
        if ((expr) != GSMRT_OK) {                               \
            fprintf(stderr, "bench_decode: %s\n", err.msg);     \
            return 1;                                           \
        }                                                       \
    } while (0)

int main(int argc, char **argv)
{
    const char *model = "models/gsm-tiny.gguf";
    char depths_arg[256] = "128,1024,4096";
    uint32_t gen = 32, batch = 256, reps = 3;
    bool json = false, profile = false;
    uint32_t logits_n = 0, greedy = 0;
    const char *logits_path = NULL;
    enum gsmrt_kv_type kv_type = GSMRT_KV_F16;   /* the sessions' default */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--depths") && i + 1 < argc) snprintf(depths_arg, sizeof depths_arg, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--gen") && i + 1 < argc) gen = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--profile")) profile = true;
        else if (!strcmp(argv[i], "--logits") && i + 2 < argc) {
            logits_n = (uint32_t)atoi(argv[++i]);
            logits_path = argv[++i];
            if (logits_n < 1) return 2;
        } else if (!strcmp(argv[i], "--greedy") && i + 1 < argc) {
            greedy = (uint32_t)atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cache-type") && i + 1 < argc) {
            const char *t = argv[++i];
            if (strcmp(t, "f16") && strcmp(t, "f32")) {
                fprintf(stderr, "bench_decode: --cache-type %s: f16 or f32\n", t);
                return 2;
            }
            kv_type = strcmp(t, "f16") ? GSMRT_KV_F32 : GSMRT_KV_F16;
        } else {
            fprintf(stderr, "usage: bench_decode [-m MODEL] [--depths 128,1024,4096] [--gen N] [--batch N] "
                            "[--reps N] [--json] [--profile] [--logits N PATH [--greedy G]] "
                            "[--cache-type f16|f32]\n");
            return 2;
        }
    }
    if (gen < 1 || batch < 1 || reps < 1) return 2;
    uint32_t depths[16], n_depths = 0, max_depth = 0;
    for (char *tok = strtok(depths_arg, ","); tok && n_depths < 16; tok = strtok(NULL, ",")) {
        depths[n_depths] = (uint32_t)atoi(tok);
        if (depths[n_depths] > max_depth) max_depth = depths[n_depths];
        n_depths++;
    }
    if (profile) setenv("GSMRT_PROFILE", "1", 1);
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct gsmrt_vk_instance *inst;
    struct gsmrt_vk_instance_params ip = {.alloc = NULL, .log = {.cb = NULL, .user = NULL, .level = GSMRT_LOG_WARN}, .validation = 0};
    CHECK(gsmrt_vk_instance_create(&ip, &inst, &err));
    struct gsmrt_vk_device *dev;
    struct gsmrt_vk_device_params dp = {.want = NULL, .pipeline_cache_path = NULL};
    CHECK(gsmrt_vk_device_create(inst, &dp, &dev, &err));
    CHECK(gsmrt_kernels_warm_up(dev, &err));
    struct gsmrt_gguf *g;
    CHECK(gsmrt_gguf_open(model, NULL, &g, &err));
    struct gsmrt_hparams hp;
    CHECK(gsmrt_hparams_load(g, &hp, &err));
    struct gsmrt_dmodel *m;
    int last_pct = -1;
    CHECK(gsmrt_dmodel_load(dev, g, &hp, progress, &last_pct, &m, &err));
    uint32_t n_ctx = logits_path ? logits_n + greedy + 1 : max_depth + gen + 1;
    struct gsmrt_kv_cache *kv;
    CHECK(gsmrt_kv_cache_create(dev, &hp, n_ctx, 32, 0, 0, kv_type, &kv, &err));
    struct gsmrt_forward *f;
    CHECK(gsmrt_forward_create(m, batch, n_ctx, &f, &err));
    int32_t *toks = malloc((size_t)n_ctx * sizeof *toks);
    float *logits = malloc((size_t)hp.n_vocab * sizeof *logits);
    for (uint32_t i = 0; i < n_ctx; i++) toks[i] = (int32_t)((i * 7919u + 13u) % hp.n_vocab);
    if (logits_path) {
        for (uint32_t p = 0; p < logits_n; p += batch) {
            uint32_t k = logits_n - p < batch ? logits_n - p : batch;
            CHECK(gsmrt_forward_run(f, kv, toks + p, k, p, p + k == logits_n ? 1 : 0, logits, &err));
        }
        if (write_new(logits_path, logits, hp.n_vocab)) return 1;
        if (greedy) printf("greedy:");
        for (uint32_t i = 0; i < greedy; i++) {
            int32_t best = 0;
            for (uint32_t v = 1; v < hp.n_vocab; v++)
                if (logits[v] > logits[best]) best = (int32_t)v;
            printf(" %d", best);
            fflush(stdout);
            CHECK(gsmrt_forward_run(f, kv, &best, 1, logits_n + i, 1, logits, &err));
        }
        if (greedy) printf("\n");
        return 0;
    }

    if (!json) printf("KV cache %s\n", gsmrt_kv_type_name(kv_type));
    if (!json)
        printf("%-8s %14s %14s %12s %12s %12s\n", "depth", "prefill tok/s", "decode tok/s", "spread", "dispatch/tok",
               "submit/tok");
    else
        printf("{\"model\": \"%s\", \"device\": \"%s\", \"cache_type\": \"%s\", \"batch\": %u, \"gen\": %u, "
               "\"rows\": [",
               model, dev->caps.name, gsmrt_kv_type_name(kv_type), batch, gen);
    for (uint32_t d = 0; d < n_depths; d++) {
        double pp[16], tg[16];
        uint64_t submits = 0;
        uint32_t dispatches = 0;
        uint32_t nr = reps < 16 ? reps : 16;
        for (uint32_t r = 0; r < nr; r++) {
            double t0 = now_ms();
            for (uint32_t p = 0; p < depths[d]; p += batch) {
                uint32_t k = depths[d] - p < batch ? depths[d] - p : batch;
                CHECK(gsmrt_forward_run(f, kv, toks + p, k, p, p + k == depths[d] ? 1 : 0, logits, &err));
            }
            double t1 = now_ms();
            if (profile && r == 0) print_profile(f->rec, "prefill step", depths[d]);
            uint64_t s0 = dev->n_submits;
            for (uint32_t i = 0; i < gen; i++)
                CHECK(gsmrt_forward_run(f, kv, toks + depths[d] + i, 1, depths[d] + i, 1, logits, &err));
            double t2 = now_ms();
            submits = dev->n_submits - s0;
            if (profile && r == 0) print_profile(f->rec, "decode step", depths[d]);
            dispatches = f->n_dispatches;
            pp[r] = depths[d] * 1e3 / (t1 - t0);
            tg[r] = gen * 1e3 / (t2 - t1);
        }
        qsort(pp, nr, sizeof *pp, cmp_double);
        qsort(tg, nr, sizeof *tg, cmp_double);
        double pp_med = pp[nr / 2], tg_med = tg[nr / 2], spread = tg_med > 0 ? (tg[nr - 1] - tg[0]) / tg_med : 0;
        if (!json)
            printf("%-8u %14.1f %14.1f %11.0f%% %12u %12.2f\n", depths[d], pp_med, tg_med, 100 * spread, dispatches,
                   (double)submits / gen);
        else
            printf("%s{\"depth\": %u, \"prefill_tok_s\": %.2f, \"decode_tok_s\": %.2f, \"decode_spread\": %.3f, "
                   "\"dispatches_per_token\": %u, \"submits_per_token\": %.2f}",
                   d ? ", " : "", depths[d], pp_med, tg_med, spread, dispatches, (double)submits / gen);
    }
    if (json) printf("]}\n");
    free(toks);
    free(logits);
    gsmrt_forward_destroy(f);
    gsmrt_kv_cache_destroy(dev, kv);
    gsmrt_dmodel_destroy(m);
    gsmrt_gguf_close(g);
    gsmrt_vk_device_destroy(dev);
    gsmrt_vk_instance_destroy(inst);
    return 0;
}
