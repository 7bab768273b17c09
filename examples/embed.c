/* embed.c -- embedding gsmrt: load the bundled model, stream an answer,
 * cancel a second one from another thread, print what the session holds.
 * Build against the installed library:
 *   cc embed.c $(pkg-config --cflags --libs gsmrt) -lpthread -o embed */
#include <gsmrt.h>
#include <pthread.h>
#include <stdio.h>

static bool print_piece(void *user, const gsmrt_token *tok)
{
    (void)user;
    fwrite(tok->text, 1, tok->text_len, stdout);   /* whole UTF-8 characters only */
    fflush(stdout);
    return true;
}

/* The second answer is cancelled by another thread once it has begun. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int state;   /* 0 waiting, 1 answer started, 2 cancel sent */

static bool print_and_signal(void *user, const gsmrt_token *tok)
{
    print_piece(user, tok);
    pthread_mutex_lock(&lock);
    if (state == 0) state = 1, pthread_cond_broadcast(&cond);
    while (state != 2) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return true;
}

static void *cancel_when_started(void *session)
{
    pthread_mutex_lock(&lock);
    while (state != 1) pthread_cond_wait(&cond, &lock);
    gsmrt_session_cancel(session);   /* any thread, any time */
    state = 2;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "models/gsm-tiny.gguf";
    char err[512];
    gsmrt_context *ctx;
    gsmrt_model *model;
    gsmrt_session *s;
    if (gsmrt_context_create(NULL, &ctx, err, sizeof err) != GSMRT_OK) return fprintf(stderr, "%s\n", err), 1;
    if (gsmrt_model_load(ctx, path, NULL, &model) != GSMRT_OK || gsmrt_session_create(model, NULL, &s) != GSMRT_OK)
        return fprintf(stderr, "%s\n", gsmrt_context_last_error(ctx)), 1;
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.temperature = 0;
    gp.max_tokens = 48;
    gsmrt_generate_result r = {.struct_size = sizeof r};
    gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Tell me something wise.");
    gsmrt_session_generate(s, &gp, print_piece, NULL, &r);
    printf("\n[answer 1: %u tokens, stop %d]\n", r.n_tokens, (int)r.stop);
    pthread_t th;
    gp.max_tokens = 100000;   /* long enough to be cancelled */
    gsmrt_session_add_message(s, GSMRT_ROLE_USER, "Now tell me a very long story.");
    gp.ignore_eos = true;
    pthread_create(&th, NULL, cancel_when_started, s);
    gsmrt_status st = gsmrt_session_generate(s, &gp, print_and_signal, NULL, &r);
    pthread_join(th, NULL);
    printf("\n[answer 2: %s, %u tokens kept, stop %s]\n", gsmrt_status_name(st), r.n_tokens,
           r.stop == GSMRT_STOP_CANCELLED ? "cancelled" : "other");
    gsmrt_memory_usage u = {.struct_size = sizeof u};
    gsmrt_context_memory(ctx, &u);
    printf("[%u positions cached; device memory: weights %llu, KV %llu, scratch %llu bytes]\n", r.n_past,
           (unsigned long long)u.weights_bytes, (unsigned long long)u.kv_hot_bytes,
           (unsigned long long)u.scratch_bytes);
    gsmrt_session_destroy(s);
    gsmrt_model_destroy(model);
    gsmrt_context_destroy(ctx);
    return 0;
}
