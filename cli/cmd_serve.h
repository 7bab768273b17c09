/* cmd_serve.h -- `gsm serve`: an OpenAI-compatible HTTP server on the
 * library's scheduler. One scheduler thread steps the model; HTTP threads
 * (libmicrohttpd, a thread per connection) parse, enqueue and stream.
 *
 *   cmd_serve.c       options, the daemon, the scheduler thread
 *   cmd_serve_http.c  routing, authentication, CORS, the endpoints
 *   cmd_serve_req.c   request JSON -> scheduler request (fields, defaults, checks)
 *   cmd_serve_job.c   one request in flight: stop sequences, the text and SSE stream
 */
#ifndef GSM_CLI_CMD_SERVE_H
#define GSM_CLI_CMD_SERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gsmrt.h"

struct serve_opts {
    const char *host;          /* default 127.0.0.1 */
    uint16_t port;             /* default 8080 */
    const char *api_key;       /* NULL: none */
    bool cors;
    uint32_t parallel;         /* sequences generating at once */
    uint32_t queue;            /* requests waiting beyond those; then 503 */
    uint32_t timeout_s;        /* idle connection timeout */
    size_t max_body;           /* bytes */
    char model_id[128];        /* the name clients use for the model */
    gsmrt_generate_params defaults;   /* for fields a request leaves out */
};

struct server {
    struct serve_opts o;
    gsmrt_model *model;
    gsmrt_scheduler *sc;       /* NULL once shut down; read under sc_lock */
    pthread_rwlock_t sc_lock;  /* HTTP threads read-lock it around scheduler calls; shutdown write-locks */
    uint32_t n_ctx;
    pthread_mutex_t mu;        /* guards `wake` */
    pthread_cond_t wake;       /* a request was submitted */
    atomic_bool stop;
    atomic_uint in_flight;     /* admitted and not finished */
    atomic_ullong next_id;
    atomic_ullong rejected_busy, http_errors_4xx, disconnects;
};

/* ---- a request in flight (cmd_serve_job.c) ---- */
#define SERVE_MAX_STOP 4

struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                       /* the HTTP side and the scheduler side */
    struct server *srv;
    uint64_t sched_id;
    char id[40];                    /* "chatcmpl-N" / "cmpl-N" */
    long long created;
    bool chat, stream, include_usage;
    char *stop[SERVE_MAX_STOP];
    size_t n_stop;
    char *text;                     /* released text (stop sequences cut off) */
    size_t text_len, text_cap;
    size_t hold;                    /* bytes at the end of text held back: maybe a stop's start */
    size_t *marks;                  /* released length after each token that released text: */
    size_t n_marks, marks_cap;      /* one SSE chunk per token, however fast the client reads */
    size_t marks_sent;
    size_t streamed;                /* of the released text, put into SSE events */
    char *wire;                     /* SSE bytes not yet given to the connection */
    size_t wire_len, wire_cap, wire_off;
    bool role_sent, tail_sent;
    bool stop_hit, done, oom;
    gsmrt_request_result res;
};

struct job *job_create(struct server *srv, bool chat);
void job_release(struct job *j);      /* drops one reference */
/* Scheduler-thread callbacks (user = the job). */
bool job_on_token(void *user, const gsmrt_token *tok);
void job_on_done(void *user, const gsmrt_request_result *r);
/* Blocks until the job is done (true), or until the client on socket fd
 * (-1: none) hangs up first (false). */
bool job_wait(struct job *j, int fd);
/* MHD content reader for a streaming response. */
ssize_t job_stream_read(void *cls, uint64_t pos, char *buf, size_t max);
/* The finish_reason of a finished job: "stop" or "length" (NULL when it
 * failed or was cancelled). */
const char *job_finish_reason(const struct job *j);
/* The OpenAI response object of a finished non-streaming job (malloc'd). */
char *job_response_json(const struct job *j);

/* ---- request parsing (cmd_serve_req.c) ---- */
struct parsed_req {
    struct cJSON *root;              /* the body; strings below may point into it */
    gsmrt_request_params rp;         /* prompt or messages, sampling, limits */
    gsmrt_message *msgs;             /* [n] owned */
    char **owned;                    /* [n] content joined from parts, or NULL */
    size_t n_msgs;
    bool stream, include_usage;
    const char *stop[SERVE_MAX_STOP];
    size_t n_stop;
};

/* An OpenAI-style error: HTTP status, message, the offending field (may be
 * NULL), type and code. */
struct api_error {
    unsigned status;
    char message[512];
    const char *param;
    const char *type;
    const char *code;
};

/* Parses a /v1/chat/completions (chat) or /v1/completions body. On failure
 * fills e (4xx) and frees what it took. */
bool serve_parse_request(const struct server *srv, const char *body, size_t len, bool chat, struct parsed_req *pr,
                         struct api_error *e);
void serve_parsed_free(struct parsed_req *pr);

/* {"error": {...}} (malloc'd). */
char *serve_error_json(const struct api_error *e);

/* ---- HTTP (cmd_serve_http.c) ---- */
/* Starts the daemon; NULL after printing why. */
struct MHD_Daemon *serve_http_start(struct server *srv);

#endif
