/* cmd_serve_job.c -- one request in flight, shared by its HTTP thread and
 * the scheduler thread: the text generated so far with stop sequences cut
 * off, and the bytes of its SSE stream.
 *
 * Stop sequences: the scheduler thread appends each token's text; a stop
 * that appears ends the request there (the callback returns false) and the
 * text is cut before it. Bytes at the end that could still turn into a
 * stop (a suffix that is a prefix of one) are held back from the stream
 * until the next token decides. Both cuts fall on character boundaries:
 * they start where a stop's first byte matches, and a stop is whole UTF-8. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem */
#endif
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "cmd_serve.h"

struct job *job_create(struct server *srv, bool chat)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->refs = 2;
    j->srv = srv;
    j->chat = chat;
    j->created = (long long)time(NULL);
    snprintf(j->id, sizeof j->id, "%s-%llu", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)atomic_fetch_add(&srv->next_id, 1));
    return j;
}

void job_release(struct job *j)
{
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last) return;
    for (size_t i = 0; i < j->n_stop; i++) free(j->stop[i]);
    free(j->text);
    free(j->marks);
    free(j->wire);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static bool grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    char *b = realloc(*buf, c);
    if (!b) return false;
    *buf = b;
    *cap = c;
    return true;
}

/* The longest suffix of s[from..n) that is a proper prefix of a stop. */
static size_t held_suffix(const struct job *j, const char *s, size_t from, size_t n)
{
    size_t best = 0;
    for (size_t k = 0; k < j->n_stop; k++) {
        size_t L = strlen(j->stop[k]);
        for (size_t len = L - 1 < n - from ? L - 1 : n - from; len > best; len--)
            if (memcmp(s + n - len, j->stop[k], len) == 0) {
                best = len;
                break;
            }
    }
    return best;
}

/* Records that text up to text_len - hold may go out (one chunk). */
static void mark_released(struct job *j)
{
    size_t ready = j->text_len - j->hold;
    if (ready <= (j->n_marks ? j->marks[j->n_marks - 1] : 0)) return;
    if (j->n_marks == j->marks_cap) {
        size_t cap = j->marks_cap ? 2 * j->marks_cap : 64;
        size_t *m = realloc(j->marks, cap * sizeof *m);
        if (!m) {
            j->oom = true;
            return;
        }
        j->marks = m;
        j->marks_cap = cap;
    }
    j->marks[j->n_marks++] = ready;
}

bool job_on_token(void *user, const gsmrt_token *tok)
{
    struct job *j = user;
    pthread_mutex_lock(&j->mu);
    size_t from = j->text_len - j->hold;   /* a stop can only start in the held bytes or later */
    if (!grow(&j->text, &j->text_cap, j->text_len + tok->text_len + 1)) {
        j->oom = true;
        pthread_mutex_unlock(&j->mu);
        return false;
    }
    memcpy(j->text + j->text_len, tok->text, tok->text_len);
    j->text_len += tok->text_len;
    j->text[j->text_len] = '\0';
    size_t cut = SIZE_MAX;
    for (size_t k = 0; k < j->n_stop; k++) {
        const char *hit = memmem(j->text + from, j->text_len - from, j->stop[k], strlen(j->stop[k]));
        if (hit && (size_t)(hit - j->text) < cut) cut = (size_t)(hit - j->text);
    }
    if (cut != SIZE_MAX) {
        j->text_len = cut;
        j->text[cut] = '\0';
        j->hold = 0;
        j->stop_hit = true;
    } else {
        j->hold = held_suffix(j, j->text, from, j->text_len);
    }
    mark_released(j);
    bool go_on = !j->stop_hit;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return go_on;
}

void job_on_done(void *user, const gsmrt_request_result *r)
{
    struct job *j = user;
    pthread_mutex_lock(&j->mu);
    j->res = *r;
    j->hold = 0;   /* what was held back cannot become a stop any more */
    mark_released(j);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    atomic_fetch_sub(&j->srv->in_flight, 1);
    job_release(j);
}

/* The peer closed its end (or the socket failed): nothing will read the answer. */
static bool hung_up(int fd)
{
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool job_wait(struct job *j, int fd)
{
    bool gone = false;
    pthread_mutex_lock(&j->mu);
    while (!j->done && !gone) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&j->cv, &j->mu, &until);   /* a token, the end, or 200 ms */
        gone = !j->done && hung_up(fd);
    }
    pthread_mutex_unlock(&j->mu);
    return !gone;
}

const char *job_finish_reason(const struct job *j)
{
    switch (j->res.finish) {
    case GSMRT_FINISH_STOP: return "stop";
    case GSMRT_FINISH_LENGTH: return "length";
    default: return NULL;
    }
}

static cJSON *usage_json(const struct job *j)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", j->res.n_prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", j->res.n_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", (double)j->res.n_prompt_tokens + j->res.n_tokens);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", j->res.n_prompt_cached);
    return u;
}

/* The frame every response and chunk shares. */
static cJSON *frame(const struct job *j, bool chunk)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", j->id);
    cJSON_AddStringToObject(root, "object", j->chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                    : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)j->created);
    cJSON_AddStringToObject(root, "model", j->srv->o.model_id);
    return root;
}

/* One choice: text (may be NULL: none), finish reason (NULL: null). */
static cJSON *choice(const struct job *j, bool chunk, const char *text, size_t len, bool role, const char *finish)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    char *t = malloc(len + 1);
    if (t) {
        memcpy(t, text ? text : "", text ? len : 0);
        t[text ? len : 0] = '\0';
    }
    if (j->chat) {
        cJSON *m = cJSON_AddObjectToObject(c, chunk ? "delta" : "message");
        if (role || !chunk) cJSON_AddStringToObject(m, "role", "assistant");
        if (text || !chunk) cJSON_AddStringToObject(m, "content", t ? t : "");
    } else {
        cJSON_AddStringToObject(c, "text", t ? t : "");
        cJSON_AddNullToObject(c, "logprobs");
    }
    free(t);
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

char *job_response_json(const struct job *j)
{
    cJSON *root = frame(j, false);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    const char *fr = job_finish_reason(j);
    cJSON_AddItemToArray(choices, choice(j, false, j->text ? j->text : "", j->text_len, true, fr ? fr : "stop"));
    cJSON_AddItemToObject(root, "usage", usage_json(j));
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

/* Appends "data: JSON\n\n" (consumes root). */
static void sse(struct job *j, cJSON *root)
{
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    const char *body = s ? s : "[DONE]";
    size_t n = strlen(body);
    if (grow(&j->wire, &j->wire_cap, j->wire_len + n + 9)) {
        memcpy(j->wire + j->wire_len, "data: ", 6);
        memcpy(j->wire + j->wire_len + 6, body, n);
        memcpy(j->wire + j->wire_len + 6 + n, "\n\n", 2);
        j->wire_len += n + 8;
    } else {
        j->oom = true;
    }
    free(s);
}

static void sse_text(struct job *j, const char *text, size_t len)
{
    cJSON *root = frame(j, true);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON_AddItemToArray(choices, choice(j, true, text, len, j->chat && !j->role_sent, NULL));
    j->role_sent = true;
    sse(j, root);
}

/* The end of the stream: the finish reason (or the error), usage, [DONE]. */
static void sse_tail(struct job *j)
{
    const char *fr = job_finish_reason(j);
    if (!fr && j->res.finish == GSMRT_FINISH_ERROR) {
        struct api_error e = {.status = 500, .type = "server_error", .code = "generation_failed"};
        snprintf(e.message, sizeof e.message, "%s", j->res.error);
        char *s = serve_error_json(&e);
        sse(j, cJSON_Parse(s));
        free(s);
    } else {
        cJSON *root = frame(j, true);
        cJSON *choices = cJSON_AddArrayToObject(root, "choices");
        cJSON_AddItemToArray(choices, choice(j, true, j->chat ? NULL : "", 0, false, fr ? fr : "stop"));
        sse(j, root);
    }
    if (j->include_usage) {
        cJSON *root = frame(j, true);
        cJSON_AddArrayToObject(root, "choices");
        cJSON_AddItemToObject(root, "usage", usage_json(j));
        sse(j, root);
    }
    sse(j, NULL);
    j->tail_sent = true;
}

ssize_t job_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct job *j = cls;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (j->wire_off < j->wire_len) {
            size_t n = j->wire_len - j->wire_off < max ? j->wire_len - j->wire_off : max;
            memcpy(buf, j->wire + j->wire_off, n);
            j->wire_off += n;
            if (j->wire_off == j->wire_len) j->wire_off = j->wire_len = 0;
            pthread_mutex_unlock(&j->mu);
            return (ssize_t)n;
        }
        if (j->oom) break;
        if (!j->role_sent && j->chat) {
            sse_text(j, "", 0);   /* the first chunk opens the assistant's message */
            continue;
        }
        if (j->marks_sent < j->n_marks) {
            size_t upto = j->marks[j->marks_sent++];
            sse_text(j, j->text + j->streamed, upto - j->streamed);
            j->streamed = upto;
            continue;
        }
        if (j->done && !j->tail_sent) {
            sse_tail(j);
            continue;
        }
        if (j->done) break;
        /* nothing yet: wait a while, then a comment line, so that a client
         * that went away is noticed (the write fails) even while the
         * request still waits in the queue */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        if (pthread_cond_timedwait(&j->cv, &j->mu, &until) == ETIMEDOUT && j->wire_len == 0 &&
            grow(&j->wire, &j->wire_cap, 16)) {
            memcpy(j->wire, ": ping\n\n", 8);
            j->wire_len = 8;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return MHD_CONTENT_READER_END_OF_STREAM;
}
