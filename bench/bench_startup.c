/* bench_startup.c -- what the on-disk pipeline cache buys: creates the
 * device and every pipeline the kernels use, first with no cache file, then
 * again reading the file the first run saved, and prints both times.
 *
 *   usage: bench_startup [--cache PATH] [--runs N]
 * Times are wall-clock (the machine may be shared): compare the ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "vk/vk.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int start(struct gsmrt_vk_instance *inst, const char *path, double *ms, double *compile_ms,
                 bool *loaded)
{
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct gsmrt_vk_device_params p = {.want = NULL, .pipeline_cache_path = path};
    struct gsmrt_vk_device *dev = NULL;
    double t0 = now_ms();
    gsmrt_status st = gsmrt_vk_device_create(inst, &p, &dev, &err);
    if (st == GSMRT_OK) st = gsmrt_kernels_warm_up(dev, &err);
    *ms = now_ms() - t0;
    if (st != GSMRT_OK) {
        fprintf(stderr, "bench_startup: %s\n", err.msg);
        gsmrt_vk_device_destroy(dev);
        return 1;
    }
    *compile_ms = dev->pipeline_create_ms;
    *loaded = dev->pipeline_cache_loaded;
    gsmrt_vk_device_destroy(dev);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = "/tmp/gsmrt-bench-startup-cache.bin";
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cache") == 0 && i + 1 < argc) path = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_startup [--cache PATH] [--runs N]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    struct gsmrt_err err = {GSMRT_OK, ""};
    struct gsmrt_vk_instance *inst = NULL;
    struct gsmrt_vk_instance_params ip = {.alloc = NULL, .log = {NULL, NULL, GSMRT_LOG_WARN}, .validation = 0};
    if (gsmrt_vk_instance_create(&ip, &inst, &err) != GSMRT_OK) {
        fprintf(stderr, "bench_startup: %s\n", err.msg);
        return 1;
    }
    /* One untimed start first: the driver's own one-time set-up (LLVM on
     * lavapipe) would otherwise land in the first "none" row. */
    {
        double ms, compile_ms;
        bool loaded;
        if (start(inst, "", &ms, &compile_ms, &loaded)) return 1;
    }
    printf("%-6s %-12s %14s %18s %12s\n", "run", "cache", "start (ms)", "pipelines (ms)", "cache used");
    double cold_sum = 0, warm_sum = 0;
    for (int r = 0; r < runs; r++) {
        double ms, compile_ms;
        bool loaded;
        remove(path);
        if (start(inst, path, &ms, &compile_ms, &loaded)) return 1;
        printf("%-6d %-12s %14.1f %18.1f %12s\n", r, "none", ms, compile_ms, loaded ? "yes" : "no");
        struct stat sb;
        if (r == 0 && stat(path, &sb) == 0)
            printf("       saved cache file: %lld bytes (our header + the driver's blob)\n", (long long)sb.st_size);
        cold_sum += compile_ms;
        if (start(inst, path, &ms, &compile_ms, &loaded)) return 1;
        printf("%-6d %-12s %14.1f %18.1f %12s\n", r, "from disk", ms, compile_ms, loaded ? "yes" : "no");
        warm_sum += compile_ms;
    }
    printf("pipeline creation with the saved cache takes %.2fx the time without it (mean of %d runs)\n",
           warm_sum / cold_sum, runs);
    remove(path);
    gsmrt_vk_instance_destroy(inst);
    return 0;
}
