/* cmd_serve_http.c -- the HTTP side of gsm serve (libmicrohttpd, a thread
 * per connection): bodies up to a limit, the API key, CORS, the routes.
 * A completion request is parsed here, submitted to the scheduler, then
 * either waited for (one JSON answer) or streamed (SSE, cmd_serve_job.c).
 * A connection that ends before its request is done cancels it. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "cmd_serve.h"

struct conn {
    struct server *srv;
    char *body;
    size_t len, cap;
    bool too_big;
    struct job *job;   /* the request this connection submitted, one reference */
};

static void add_common_headers(const struct server *srv, struct MHD_Response *r)
{
    if (srv->o.cors) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    }
}

/* Queues `body` (taken; malloc'd) with its type; extra header may be NULL. */
static enum MHD_Result respond(struct MHD_Connection *c, const struct server *srv, unsigned status, char *body,
                               const char *type, const char *hname, const char *hvalue)
{
    const char *b = body ? body : "";
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
    free(body);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (hname) MHD_add_response_header(r, hname, hvalue);
    add_common_headers(srv, r);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_json(struct MHD_Connection *c, const struct server *srv, unsigned status, char *json)
{
    return respond(c, srv, status, json, "application/json", NULL, NULL);
}

static enum MHD_Result respond_error(struct MHD_Connection *c, struct server *srv, unsigned status,
                                     const char *type, const char *code, const char *param, const char *msg)
{
    struct api_error e = {.status = status, .type = type, .code = code, .param = param};
    snprintf(e.message, sizeof e.message, "%s", msg);
    if (status >= 400 && status < 500) atomic_fetch_add(&srv->http_errors_4xx, 1);
    if (status == 503)
        return respond(c, srv, status, serve_error_json(&e), "application/json", "Retry-After", "1");
    return respond_json(c, srv, status, serve_error_json(&e));
}

static bool authorized(struct MHD_Connection *c, const struct server *srv)
{
    if (!srv->o.api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && strcmp(h + 7, srv->o.api_key) == 0;
}

static enum MHD_Result models(struct MHD_Connection *c, struct server *srv)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->o.model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "gsmrt");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "data"), m);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return respond_json(c, srv, 200, s);
}

static void metric(char **p, size_t *left, const char *name, const char *type, const char *help, const char *labels,
                   double v)
{
    int n = snprintf(*p, *left, "# HELP %s %s\n# TYPE %s %s\n%s%s %.0f\n", name, help, name, type, name,
                     labels ? labels : "", v);
    if (n > 0 && (size_t)n < *left) *p += n, *left -= (size_t)n;
}

static enum MHD_Result metrics(struct MHD_Connection *c, struct server *srv)
{
    gsmrt_scheduler_stats st = {.struct_size = sizeof st};
    pthread_rwlock_rdlock(&srv->sc_lock);
    if (srv->sc) gsmrt_scheduler_get_stats(srv->sc, &st);
    pthread_rwlock_unlock(&srv->sc_lock);
    size_t cap = 8192, left = cap;
    char *s = malloc(cap), *p = s;
    if (!s) return MHD_NO;
    *p = '\0';
    metric(&p, &left, "gsm_requests_submitted_total", "counter", "requests accepted", NULL, (double)st.requests_submitted);
    metric(&p, &left, "gsm_requests_finished_total", "counter", "requests that left", NULL, (double)st.requests_finished);
    metric(&p, &left, "gsm_requests_cancelled_total", "counter", "requests cancelled (disconnects)", NULL,
           (double)st.requests_cancelled);
    metric(&p, &left, "gsm_requests_failed_total", "counter", "requests that failed", NULL, (double)st.requests_failed);
    metric(&p, &left, "gsm_requests_rejected_total", "counter", "requests refused with 503 (queue full)", NULL,
           (double)atomic_load(&srv->rejected_busy));
    metric(&p, &left, "gsm_http_client_errors_total", "counter", "requests answered with a 4xx", NULL,
           (double)atomic_load(&srv->http_errors_4xx));
    metric(&p, &left, "gsm_requests_queued", "gauge", "requests waiting for a sequence slot", NULL, st.queued);
    metric(&p, &left, "gsm_requests_running", "gauge", "requests generating", NULL, st.running);
    metric(&p, &left, "gsm_prompt_tokens_total", "counter", "prompt tokens of all requests", NULL,
           (double)st.prompt_tokens);
    metric(&p, &left, "gsm_prompt_tokens_evaluated_total", "counter", "prompt tokens evaluated", NULL,
           (double)st.prompt_tokens_evaluated);
    metric(&p, &left, "gsm_prompt_tokens_cached_total", "counter", "prompt tokens served from cached sequences", NULL,
           (double)st.prompt_tokens_cached);
    metric(&p, &left, "gsm_prefix_hits_total", "counter", "requests that reused a cached prefix", NULL,
           (double)st.prefix_hits);
    metric(&p, &left, "gsm_cache_evictions_total", "counter", "cached sequences evicted", NULL,
           (double)st.cache_evictions);
    metric(&p, &left, "gsm_cached_sequences", "gauge", "idle slots holding a sequence", NULL, st.cached_sequences);
    metric(&p, &left, "gsm_generated_tokens_total", "counter", "tokens generated", NULL, (double)st.generated_tokens);
    metric(&p, &left, "gsm_steps_total", "counter", "batched forward passes", NULL, (double)st.steps);
    metric(&p, &left, "gsm_kv_bytes", "gauge", "KV cache bytes by memory tier", "{tier=\"device\"}",
           (double)st.kv_device_bytes);
    int n = snprintf(p, left, "gsm_kv_bytes{tier=\"host\"} %.0f\n", (double)st.kv_host_bytes);
    if (n > 0 && (size_t)n < left) p += n, left -= (size_t)n;
    metric(&p, &left, "gsm_gate_steps_total", "counter", "decode steps through the GSM gate", NULL,
           (double)st.gsm_steps);
    metric(&p, &left, "gsm_gate_pages_total", "counter", "(page, layer) pairs offered to the GSM gate", NULL,
           (double)st.gsm_pages_gated);
    metric(&p, &left, "gsm_gate_pages_cold_total", "counter", "of those, cold pages", NULL,
           (double)st.gsm_pages_cold);
    metric(&p, &left, "gsm_gate_pages_cold_computed_total", "counter", "cold pages the gate computed", NULL,
           (double)st.gsm_pages_cold_computed);
    return respond(c, srv, 200, s, "text/plain; version=0.0.4", NULL, NULL);
}

static void free_stream(void *cls)
{
    job_release(cls);
}

/* The status of a refused submit: a full queue is 503, the rest 400. */
static enum MHD_Result refused(struct MHD_Connection *c, struct server *srv, gsmrt_status st, const char *msg)
{
    if (st == GSMRT_E_BUSY) {
        atomic_fetch_add(&srv->rejected_busy, 1);
        return respond_error(c, srv, 503, "server_error", "server_busy", NULL, msg);
    }
    if (st == GSMRT_E_CONTEXT_FULL)
        return respond_error(c, srv, 400, "invalid_request_error", "context_length_exceeded", "messages", msg);
    if (st == GSMRT_E_INVALID_ARGUMENT)
        return respond_error(c, srv, 400, "invalid_request_error", "invalid_value", NULL, msg);
    if (st == GSMRT_E_CANCELLED) return respond_error(c, srv, 503, "server_error", "shutting_down", NULL, msg);
    return respond_error(c, srv, 500, "server_error", gsmrt_status_name(st), NULL, msg);
}

static enum MHD_Result completion(struct MHD_Connection *c, struct conn *cn, bool chat)
{
    struct server *srv = cn->srv;
    struct parsed_req pr;
    struct api_error e = {0};
    if (!serve_parse_request(srv, cn->body ? cn->body : "", cn->len, chat, &pr, &e)) {
        atomic_fetch_add(&srv->http_errors_4xx, 1);
        return respond_json(c, srv, e.status, serve_error_json(&e));
    }
    /* room: the running sequences plus the queue */
    if (atomic_fetch_add(&srv->in_flight, 1) >= srv->o.parallel + srv->o.queue) {
        atomic_fetch_sub(&srv->in_flight, 1);
        serve_parsed_free(&pr);
        atomic_fetch_add(&srv->rejected_busy, 1);
        return respond_error(c, srv, 503, "server_error", "server_busy", NULL,
                             "the server is busy (every slot and the queue are taken); retry later");
    }
    struct job *j = job_create(srv, chat);
    bool ok = j != NULL;
    for (size_t i = 0; ok && i < pr.n_stop; i++) ok = (j->stop[j->n_stop++] = strdup(pr.stop[i])) != NULL;
    if (!ok) {
        atomic_fetch_sub(&srv->in_flight, 1);
        if (j) j->refs = 1, job_release(j);
        serve_parsed_free(&pr);
        return respond_error(c, srv, 500, "server_error", "out_of_memory", NULL, "out of memory");
    }
    j->stream = pr.stream;
    j->include_usage = pr.include_usage;
    pr.rp.on_token = job_on_token;
    pr.rp.on_done = job_on_done;
    pr.rp.user = j;
    char msg[256];
    uint64_t id = 0;
    gsmrt_status st = GSMRT_E_CANCELLED;
    snprintf(msg, sizeof msg, "the server is shutting down");
    pthread_mutex_lock(&j->mu);   /* on_done may run before sched_id is stored otherwise */
    pthread_rwlock_rdlock(&srv->sc_lock);
    if (srv->sc) st = gsmrt_scheduler_submit(srv->sc, &pr.rp, &id, msg, sizeof msg);
    pthread_rwlock_unlock(&srv->sc_lock);
    j->sched_id = id;
    pthread_mutex_unlock(&j->mu);
    serve_parsed_free(&pr);
    if (st != GSMRT_OK) {
        atomic_fetch_sub(&srv->in_flight, 1);
        j->refs = 1;   /* the scheduler never got it */
        job_release(j);
        return refused(c, srv, st, msg);
    }
    cn->job = j;
    pthread_mutex_lock(&srv->mu);
    pthread_cond_signal(&srv->wake);
    pthread_mutex_unlock(&srv->mu);
    if (j->stream) {
        pthread_mutex_lock(&j->mu);
        j->refs++;   /* the response's, dropped by free_stream */
        pthread_mutex_unlock(&j->mu);
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, job_stream_read, j,
                                              free_stream);
        if (!r) {
            job_release(j);   /* the response's reference: there is no response */
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        add_common_headers(srv, r);
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!job_wait(j, ci ? ci->connect_fd : -1)) return MHD_NO;   /* gone: on_completed cancels the request */
    if (j->res.finish == GSMRT_FINISH_ERROR)
        return respond_error(c, srv, 500, "server_error", "generation_failed", NULL, j->res.error);
    if (j->res.finish == GSMRT_FINISH_CANCELLED)
        return respond_error(c, srv, 503, "server_error", "cancelled", NULL, "the request was cancelled");
    return respond_json(c, srv, 200, job_response_json(j));
}

static enum MHD_Result route(struct MHD_Connection *c, struct conn *cn, const char *url, const char *method)
{
    struct server *srv = cn->srv;
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (strcmp(method, "OPTIONS") == 0 && srv->o.cors) return respond(c, srv, 204, NULL, "text/plain", NULL, NULL);
    if (strcmp(url, "/health") == 0 && get) return respond_json(c, srv, 200, strdup("{\"status\":\"ok\"}"));
    if (!authorized(c, srv))
        return respond_error(c, srv, 401, "invalid_request_error", "invalid_api_key", NULL,
                             "missing or wrong API key (send Authorization: Bearer KEY)");
    if (cn->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than %zu bytes", srv->o.max_body);
        return respond_error(c, srv, 413, "invalid_request_error", "body_too_large", NULL, msg);
    }
    bool chat = strcmp(url, "/v1/chat/completions") == 0, compl = strcmp(url, "/v1/completions") == 0;
    if ((chat || compl) && post) return completion(c, cn, chat);
    if (strcmp(url, "/v1/models") == 0 && get) return models(c, srv);
    if (strcmp(url, "/metrics") == 0 && get) return metrics(c, srv);
    bool known = chat || compl || strcmp(url, "/v1/models") == 0 || strcmp(url, "/metrics") == 0 ||
                 strcmp(url, "/health") == 0;
    char msg[160];
    snprintf(msg, sizeof msg, "%s %.100s is not an endpoint of this server", method, url);
    return respond_error(c, srv, known ? 405 : 404, "invalid_request_error", known ? "method_not_allowed" : "not_found",
                         NULL, msg);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **state)
{
    (void)version;
    struct server *srv = cls;
    struct conn *cn = *state;
    if (!cn) {   /* the headers: make the connection's state, come back for the body */
        cn = calloc(1, sizeof *cn);
        if (!cn) return MHD_NO;
        cn->srv = srv;
        *state = cn;
        return MHD_YES;
    }
    if (*data_size) {
        if (!cn->too_big && cn->len + *data_size > srv->o.max_body) {
            cn->too_big = true;
            free(cn->body);
            cn->body = NULL;
            cn->len = cn->cap = 0;
        }
        if (!cn->too_big) {
            if (cn->len + *data_size + 1 > cn->cap) {
                size_t cap = cn->cap ? cn->cap : 4096;
                while (cap < cn->len + *data_size + 1) cap *= 2;
                char *b = realloc(cn->body, cap);
                if (!b) return MHD_NO;
                cn->body = b;
                cn->cap = cap;
            }
            memcpy(cn->body + cn->len, data, *data_size);
            cn->len += *data_size;
            cn->body[cn->len] = '\0';
        }
        *data_size = 0;
        return MHD_YES;
    }
    return route(c, cn, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode toe)
{
    (void)c;
    struct server *srv = cls;
    struct conn *cn = *state;
    if (!cn) return;
    if (cn->job) {
        pthread_mutex_lock(&cn->job->mu);
        bool done = cn->job->done;
        uint64_t id = cn->job->sched_id;
        pthread_mutex_unlock(&cn->job->mu);
        if (!done) {   /* the client went away (or timed out): stop generating for it */
            pthread_rwlock_rdlock(&srv->sc_lock);
            if (srv->sc) gsmrt_scheduler_cancel(srv->sc, id);
            pthread_rwlock_unlock(&srv->sc_lock);
            if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) atomic_fetch_add(&srv->disconnects, 1);
        }
        job_release(cn->job);
    }
    free(cn->body);
    free(cn);
    *state = NULL;
}

/* libmicrohttpd's connection limit. At the limit it stops accepting: a new
 * client waits in the listen backlog, unanswered, until an open connection
 * ends (an idle one only after --timeout). Requests beyond the slots and the
 * queue must get a 503 with Retry-After instead, which only the request
 * handler gives, so the limit leaves room for many idle or keep-alive
 * connections beyond the requests admitted: every open connection costs a
 * thread (mostly unused stack) and a descriptor, so it stays within the
 * descriptor limit, leaving some for the model, the driver and the log. */
static unsigned connection_limit(const struct server *srv)
{
    const rlim_t reserve = 128, spare_connections = 512;
    rlim_t want = (rlim_t)srv->o.parallel + srv->o.queue + spare_connections;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        rlim_t room = rl.rlim_cur > 2 * reserve ? rl.rlim_cur - reserve : rl.rlim_cur / 2;
        if (want > room) want = room;
    }
    return want > 64000 ? 64000u : (unsigned)want;
}

struct MHD_Daemon *serve_http_start(struct server *srv)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
    char port[8];
    snprintf(port, sizeof port, "%u", srv->o.port);
    int rc = getaddrinfo(srv->o.host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "gsm serve: --host %s: %s\n", srv->o.host, gai_strerror(rc));
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, srv->o.port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->o.timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit(srv),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) fprintf(stderr, "gsm serve: cannot listen on %s:%u (in use, or not an address of this machine)\n",
                    srv->o.host, srv->o.port);
    return d;
}
