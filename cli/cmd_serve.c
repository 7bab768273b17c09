/* cmd_serve.c -- `gsm serve`: options, the scheduler thread, start and
 * orderly shutdown (SIGINT/SIGTERM). See cmd_serve.h for the parts.
 *
 * HTTP comes from libmicrohttpd: a small, long-maintained C library in
 * Debian (libmicrohttpd12) built for embedding a server in a program, with
 * chunked streaming from a callback (SSE), per-connection timeouts and
 * connection limits, so no HTTP is parsed by hand here. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "cli.h"
#include "cmd_serve.h"
#include "common.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gsm serve [-m MODEL] [options]\n\n"
            "An OpenAI-compatible HTTP server: POST /v1/chat/completions, POST /v1/completions (both with\n"
            "\"stream\": true for server-sent events), GET /v1/models, GET /health, GET /metrics.\n"
            "Requests are batched together on the device (continuous batching); a request that continues a\n"
            "conversation reuses the cached prefix.\n\n"
            "      --host ADDR          address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)\n"
            "      --port N             port (default 8080; 0: any free port, printed at start)\n"
            "      --api-key KEY        require \"Authorization: Bearer KEY\" (else 401); /health stays open\n"
            "      --cors               allow browsers from any origin (Access-Control-Allow-Origin: *)\n"
            "      --parallel N         requests generating at once (default 4)\n"
            "      --cached N           finished sequences kept for prefix reuse (default: --parallel)\n"
            "      --queue N            requests that may wait beyond those; more get 503 (default 64)\n"
            "      --timeout S          close a connection idle for S seconds (default 30)\n"
            "      --max-body BYTES     largest request body (default 1048576); larger is 413\n"
            "      --alias NAME         the model's name in the API (default: the file name without .gguf)\n"
            "  -c, --ctx-size N         positions per sequence (default: min(4096, the model's))\n"
            "  -b, --batch-size N       tokens per batched step (default 256)\n"
            "  -n, --n-predict N        default max_tokens of a request (default 256)\n"
            "  (the sampling options below set the defaults of fields a request leaves out; without them a\n"
            "  request samples as with OpenAI's API: temperature 1, top_p 1, no top-k, no min-p)\n"
            "%s",
            COMMON_OPTIONS_HELP);
}

/* "path/to/gsm-tiny.gguf" -> "gsm-tiny" */
static void model_id_from_path(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".gguf") == 0) n -= 5;
    snprintf(out, cap, "%.*s", (int)n, base);
}

static int parse(int argc, char **argv, struct opts *o, struct serve_opts *so, uint32_t *n_cached)
{
    *so = (struct serve_opts){.host = "127.0.0.1", .port = 8080, .parallel = 4, .queue = 64, .timeout_s = 30,
                              .max_body = 1u << 20};
    *n_cached = UINT32_MAX;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = opts_parse_common(o, "serve", argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        uint32_t u;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(a, "--cors") == 0) {
            so->cors = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "gsm serve: %s: unknown option, or it needs a value (see gsm serve --help)\n", a);
            return EXIT_USAGE;
        }
        i++;
        if (strcmp(a, "--host") == 0) so->host = v;
        else if (strcmp(a, "--api-key") == 0 && *v) so->api_key = v;
        else if (strcmp(a, "--alias") == 0 && *v) snprintf(so->model_id, sizeof so->model_id, "%s", v);
        else if (strcmp(a, "--port") == 0 && parse_u32("serve", a, v, 0, 65535, &u)) so->port = (uint16_t)u;
        else if (strcmp(a, "--parallel") == 0 && parse_u32("serve", a, v, 1, 256, &u)) so->parallel = u;
        else if (strcmp(a, "--cached") == 0 && parse_u32("serve", a, v, 0, 256, &u)) *n_cached = u;
        else if (strcmp(a, "--queue") == 0 && parse_u32("serve", a, v, 0, 100000, &u)) so->queue = u;
        else if (strcmp(a, "--timeout") == 0 && parse_u32("serve", a, v, 1, 86400, &u)) so->timeout_s = u;
        else if (strcmp(a, "--max-body") == 0 && parse_u32("serve", a, v, 1024, 1u << 30, &u)) so->max_body = u;
        else {
            if (strcmp(a, "--host") && strcmp(a, "--port") && strcmp(a, "--parallel") && strcmp(a, "--cached") &&
                strcmp(a, "--queue") && strcmp(a, "--timeout") && strcmp(a, "--max-body"))
                fprintf(stderr, "gsm serve: unknown option %s (see gsm serve --help)\n", a);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The scheduler thread: steps while there is work, sleeps until a submit
 * wakes it otherwise. */
static void *scheduler_main(void *arg)
{
    struct server *srv = arg;
    while (!atomic_load(&srv->stop)) {
        bool busy = false;
        gsmrt_status st = gsmrt_scheduler_step(srv->sc, &busy);
        if (st != GSMRT_OK)
            fprintf(stderr, "gsm serve: a step failed (%s); its requests got an error\n", gsmrt_status_name(st));
        if (busy) continue;
        pthread_mutex_lock(&srv->mu);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 20 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&srv->wake, &srv->mu, &until);
        pthread_mutex_unlock(&srv->mu);
    }
    return NULL;
}

int cmd_serve(int argc, char **argv)
{
    struct opts o;
    opts_init(&o);
    /* A request that leaves sampling out samples as OpenAI's API does (the
     * clients are written for it), not as gsm run does; the command line's
     * sampling options, when given, override these. */
    o.gen.temperature = 1.0f;
    o.gen.top_p = 1.0f;
    o.gen.top_k = 0;
    o.gen.min_p = 0.0f;
    static struct server srv;
    uint32_t n_cached;
    int rc = parse(argc, argv, &o, &srv.o, &n_cached);
    if (rc != 0) return rc < 0 ? 0 : rc;
    if (!srv.o.model_id[0]) model_id_from_path(o.model ? o.model : default_model_path(), srv.o.model_id,
                                               sizeof srv.o.model_id);
    srv.o.defaults = o.gen;
    /* the signals go to the main thread's sigwait: blocked before any thread
     * starts (the Vulkan driver starts its own while the model loads) */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    gsmrt_context *ctx;
    if (!load_model(&o, "serve", &ctx, &srv.model)) return EXIT_RUNTIME;
    gsmrt_scheduler_params sp;
    gsmrt_scheduler_params_init(&sp, sizeof sp);
    sp.n_parallel = srv.o.parallel;
    if (n_cached != UINT32_MAX) sp.n_cached = n_cached;
    sp.n_ctx = o.n_ctx;
    sp.n_batch = o.n_batch ? o.n_batch : 256;
    if (sp.n_batch < srv.o.parallel + 1) sp.n_batch = srv.o.parallel + 1;
    sp.max_queued = srv.o.queue + srv.o.parallel;   /* the HTTP side refuses first (503) */
    gsmrt_session_params gp;
    opts_session_params(&o, &gp);
    sp.gsm = gp.gsm;
    sp.gsm_config = gp.gsm_config;
    sp.gsm_settings = gp.gsm_settings;
    gsmrt_status st = gsmrt_scheduler_create(srv.model, &sp, &srv.sc);
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm serve: %s (%s)\n", gsmrt_context_last_error(ctx), gsmrt_status_name(st));
        unload(ctx, srv.model, NULL);
        return EXIT_RUNTIME;
    }
    gsmrt_scheduler_stats stats = {.struct_size = sizeof stats};
    gsmrt_scheduler_get_stats(srv.sc, &stats);
    srv.n_ctx = stats.n_ctx;
    pthread_mutex_init(&srv.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv.wake, &ca);
    pthread_rwlock_init(&srv.sc_lock, NULL);
    atomic_store(&srv.next_id, 1);

    pthread_t sched;
    pthread_create(&sched, NULL, scheduler_main, &srv);
    struct MHD_Daemon *d = serve_http_start(&srv);
    rc = 0;
    if (d) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        printf("gsm serve: listening on http://%s:%u (model \"%s\", %u parallel, %u cached, context %u per "
               "sequence)\n",
               srv.o.host, info ? info->port : srv.o.port, srv.o.model_id, srv.o.parallel,
               stats.n_slots - stats.n_parallel, srv.n_ctx);
        fflush(stdout);
        int sig;
        sigwait(&sigs, &sig);
        fprintf(stderr, "gsm serve: %s, shutting down\n", sig == SIGINT ? "interrupted" : "terminated");
        MHD_quiesce_daemon(d);   /* no new connections */
    } else {
        rc = EXIT_RUNTIME;
    }
    atomic_store(&srv.stop, true);
    pthread_join(sched, NULL);
    /* the requests still queued or running end as cancelled: their waiting connections finish */
    pthread_rwlock_wrlock(&srv.sc_lock);
    gsmrt_scheduler_destroy(srv.sc);
    srv.sc = NULL;
    pthread_rwlock_unlock(&srv.sc_lock);
    if (d) MHD_stop_daemon(d);
    pthread_rwlock_destroy(&srv.sc_lock);
    pthread_cond_destroy(&srv.wake);
    pthread_mutex_destroy(&srv.mu);
    unload(ctx, srv.model, NULL);
    return rc;
}
