/* cmd_serve_req.c -- an OpenAI request body to a scheduler request: the
 * fields gsm serve understands, their types and ranges, the server's
 * defaults for the ones left out. Unknown fields are ignored (clients send
 * many); a known field of the wrong type or out of range is a 400 that
 * names it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd_serve.h"

static bool fail(struct api_error *e, unsigned status, const char *param, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->status = status;
    e->param = param;
    e->type = status >= 500 ? "server_error" : "invalid_request_error";
    e->code = code;
    return false;
}

/* A number field: absent or null leaves *out; otherwise within [min, max],
 * and whole when `integer`. */
static bool number(const cJSON *root, const char *name, double min, double max, bool integer, double *out,
                   struct api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsNumber(v))
        return fail(e, 400, name, "invalid_type", "'%s' must be %s", name, integer ? "an integer" : "a number");
    double d = v->valuedouble;
    if (integer && (d != floor(d) || !isfinite(d)))
        return fail(e, 400, name, "invalid_type", "'%s' must be an integer, not %g", name, d);
    if (!(d >= min && d <= max))
        return fail(e, 400, name, "invalid_value", "'%s' is %g; allowed %g..%g", name, d, min, max);
    *out = d;
    return true;
}

static bool boolean(const cJSON *root, const char *name, bool *out, struct api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsBool(v)) return fail(e, 400, name, "invalid_type", "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return true;
}

static bool role_of(const char *s, gsmrt_role *out)
{
    if (strcmp(s, "system") == 0 || strcmp(s, "developer") == 0) *out = GSMRT_ROLE_SYSTEM;
    else if (strcmp(s, "user") == 0) *out = GSMRT_ROLE_USER;
    else if (strcmp(s, "assistant") == 0) *out = GSMRT_ROLE_ASSISTANT;
    else return false;
    return true;
}

/* content: a string, null (an assistant turn without text), or an array of
 * {"type": "text", "text": ...} parts, joined. */
static bool content_of(const cJSON *m, size_t i, const char **out, char **owned, struct api_error *e)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!c || cJSON_IsNull(c)) {
        *out = "";
        return true;
    }
    if (cJSON_IsString(c)) {
        *out = c->valuestring;
        return true;
    }
    if (!cJSON_IsArray(c))
        return fail(e, 400, "messages", "invalid_type", "messages[%zu].content must be a string or an array of text "
                    "parts", i);
    size_t n = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, c) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
            return fail(e, 400, "messages", "invalid_type",
                        "messages[%zu].content: only parts {\"type\": \"text\", \"text\": string} are supported", i);
        n += strlen(text->valuestring);
    }
    char *s = malloc(n + 1);
    if (!s) return fail(e, 500, NULL, "server_error", "out of memory");
    n = 0;
    cJSON_ArrayForEach(part, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        memcpy(s + n, t, strlen(t));
        n += strlen(t);
    }
    s[n] = '\0';
    *owned = s;
    *out = s;
    return true;
}

static bool parse_messages(const cJSON *root, struct parsed_req *pr, struct api_error *e)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!ms) return fail(e, 400, "messages", "missing_required_parameter", "'messages' is required");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) == 0)
        return fail(e, 400, "messages", "invalid_type", "'messages' must be a non-empty array");
    size_t n = (size_t)cJSON_GetArraySize(ms);
    pr->msgs = calloc(n, sizeof *pr->msgs);
    pr->owned = calloc(n, sizeof *pr->owned);
    if (!pr->msgs || !pr->owned) return fail(e, 500, NULL, "server_error", "out of memory");
    pr->n_msgs = n;
    size_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, ms) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role))
            return fail(e, 400, "messages", "invalid_type", "messages[%zu] must be an object with a string 'role'", i);
        if (!role_of(role->valuestring, &pr->msgs[i].role))
            return fail(e, 400, "messages", "invalid_value",
                        "messages[%zu].role '%.40s' is not supported (system, developer, user, assistant)", i,
                        role->valuestring);
        if (!content_of(m, i, &pr->msgs[i].content, &pr->owned[i], e)) return false;
        i++;
    }
    pr->rp.messages = pr->msgs;
    pr->rp.n_messages = n;
    return true;
}

static bool parse_prompt(const cJSON *root, struct parsed_req *pr, struct api_error *e)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (!p) return fail(e, 400, "prompt", "missing_required_parameter", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (!cJSON_IsString(p))
        return fail(e, 400, "prompt", "invalid_type", "'prompt' must be a string (or an array of one string)");
    pr->rp.prompt = p->valuestring;
    return true;
}

static bool parse_stop(const cJSON *root, struct parsed_req *pr, struct api_error *e)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (!s || cJSON_IsNull(s)) return true;
    if (cJSON_IsString(s)) {
        if (*s->valuestring) pr->stop[pr->n_stop++] = s->valuestring;
        return true;
    }
    if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) > SERVE_MAX_STOP)
        return fail(e, 400, "stop", "invalid_type", "'stop' must be a string or an array of at most %d strings",
                    SERVE_MAX_STOP);
    const cJSON *x;
    cJSON_ArrayForEach(x, s) {
        if (!cJSON_IsString(x)) return fail(e, 400, "stop", "invalid_type", "'stop' entries must be strings");
        if (*x->valuestring) pr->stop[pr->n_stop++] = x->valuestring;
    }
    return true;
}

static bool parse_fields(const struct server *srv, const cJSON *root, bool chat, struct parsed_req *pr,
                         struct api_error *e)
{
    if (!cJSON_IsObject(root)) return fail(e, 400, NULL, "invalid_json", "the body must be a JSON object");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model)) {
        if (!cJSON_IsString(model)) return fail(e, 400, "model", "invalid_type", "'model' must be a string");
        if (strcmp(model->valuestring, srv->o.model_id) != 0)
            return fail(e, 404, "model", "model_not_found", "The model '%.100s' does not exist; this server has '%s'",
                        model->valuestring, srv->o.model_id);
    }
    if (!(chat ? parse_messages(root, pr, e) : parse_prompt(root, pr, e))) return false;
    gsmrt_generate_params *g = &pr->rp.gen;
    *g = srv->o.defaults;
    double v, n = 1;
    if (!number(root, "n", 1, 1e9, true, &n, e)) return false;
    if (n != 1) return fail(e, 400, "n", "invalid_value", "'n' must be 1 (one choice per request)");
    double max_tokens = -1;
    if (!number(root, "max_tokens", 1, 1e9, true, &max_tokens, e)) return false;
    if (chat && !number(root, "max_completion_tokens", 1, 1e9, true, &max_tokens, e)) return false;
    if (max_tokens > 0) g->max_tokens = max_tokens > srv->n_ctx ? srv->n_ctx : (uint32_t)max_tokens;
    v = g->temperature;
    if (!number(root, "temperature", 0, 2, false, &v, e)) return false;
    g->temperature = (float)v;
    v = g->top_p;
    if (!number(root, "top_p", 0, 1, false, &v, e)) return false;
    g->top_p = (float)v;
    v = g->min_p;
    if (!number(root, "min_p", 0, 1, false, &v, e)) return false;
    g->min_p = (float)v;
    v = g->top_k;
    if (!number(root, "top_k", 0, 1e6, true, &v, e)) return false;
    g->top_k = (int32_t)v;
    v = (double)g->seed;
    if (!number(root, "seed", -9007199254740992.0, 9007199254740992.0, true, &v, e)) return false;
    g->seed = (uint64_t)(int64_t)v;
    if (!boolean(root, "stream", &pr->stream, e)) return false;
    if (!boolean(root, "ignore_eos", &g->ignore_eos, e)) return false;   /* llama.cpp's server has it too */
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so))
            return fail(e, 400, "stream_options", "invalid_type", "'stream_options' must be an object");
        if (!boolean(so, "include_usage", &pr->include_usage, e)) return false;
    }
    return parse_stop(root, pr, e);
}

bool serve_parse_request(const struct server *srv, const char *body, size_t len, bool chat, struct parsed_req *pr,
                         struct api_error *e)
{
    memset(pr, 0, sizeof *pr);
    gsmrt_request_params_init(&pr->rp, sizeof pr->rp);
    pr->root = cJSON_ParseWithLength(body, len);
    if (!pr->root) {
        const char *where = cJSON_GetErrorPtr();
        size_t off = where && where >= body && where <= body + len ? (size_t)(where - body) : 0;
        return fail(e, 400, NULL, "invalid_json", "the body is not valid JSON (near byte %zu)", off);
    }
    if (!parse_fields(srv, pr->root, chat, pr, e)) {
        serve_parsed_free(pr);
        return false;
    }
    return true;
}

void serve_parsed_free(struct parsed_req *pr)
{
    for (size_t i = 0; pr->owned && i < pr->n_msgs; i++) free(pr->owned[i]);
    free(pr->owned);
    free(pr->msgs);
    cJSON_Delete(pr->root);
    memset(pr, 0, sizeof *pr);
}

char *serve_error_json(const struct api_error *e)
{
    cJSON *root = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(err, "message", e->message);
    cJSON_AddStringToObject(err, "type", e->type ? e->type : "invalid_request_error");
    if (e->param) cJSON_AddStringToObject(err, "param", e->param);
    else cJSON_AddNullToObject(err, "param");
    if (e->code) cJSON_AddStringToObject(err, "code", e->code);
    else cJSON_AddNullToObject(err, "code");
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}
