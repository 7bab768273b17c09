/* embed.c -- gsmrt in a program: stream an answer with GSM on, cancel a second one from another thread.
 * Build: cc embed.c $(pkg-config --cflags --libs gsmrt) -lpthread -o embed */
#include <gsmrt.h>
#include <pthread.h>
#include <stdio.h>

static pthread_t canceller;   /* started at the 16th token of the answer to cancel */
static void *cancel(void *session)
{
    gsmrt_session_cancel(session);   /* any thread, any time */
    return NULL;
}

static bool print_piece(void *to_cancel, const gsmrt_token *tok)   /* to_cancel: a session or NULL */
{
    fwrite(tok->text, 1, tok->text_len, stdout);   /* whole UTF-8 characters only */
    fflush(stdout);
    if (to_cancel && tok->index == 15) pthread_create(&canceller, NULL, cancel, to_cancel);
    return true;
}

static void answer(gsmrt_session *s, int n, const char *question, bool cancel_it)
{
    static const char *const stop[] = {"eos", "max_tokens", "callback", "cancelled", "context_end"};
    gsmrt_generate_params gp;
    gsmrt_generate_params_init(&gp, sizeof gp);
    gp.ignore_eos = cancel_it;   /* the answer to cancel goes on (up to 256 tokens) until cancelled */
    gsmrt_generate_result r = {.struct_size = sizeof r};
    gsmrt_session_add_message(s, GSMRT_ROLE_USER, question);
    gsmrt_status st = gsmrt_session_generate(s, &gp, print_piece, cancel_it ? s : NULL, &r);
    printf("\n[answer %d: %s, %u tokens, stop %s; GSM: %u gated steps, %.0f of %.0f cold pages computed]\n",
           n, gsmrt_status_name(st), r.n_tokens, stop[r.stop], r.gsm_steps, (double)r.gsm_cold_computed,
           (double)r.gsm_cold_pages);
    if (cancel_it && r.n_tokens > 15) pthread_join(canceller, NULL);
}

int main(int argc, char **argv)
{
    gsmrt_context *ctx;  gsmrt_model *model;  gsmrt_session *s;  char err[512];
    gsmrt_session_params p = {.struct_size = sizeof p,   /* GSM on: every page but the newest goes through the gate */
                              .gsm_settings = "min_context=0;window=0;hot_pages=0;sink_tokens=0"};
    if (gsmrt_context_create(NULL, &ctx, err, sizeof err) != GSMRT_OK) return fprintf(stderr, "%s\n", err), 1;
    if (gsmrt_model_load(ctx, argc > 1 ? argv[1] : "models/gsm-tiny.gguf", NULL, &model) != GSMRT_OK ||
        gsmrt_session_create(model, &p, &s) != GSMRT_OK)
        return fprintf(stderr, "%s\n", gsmrt_context_last_error(ctx)), 1;
    answer(s, 1, "Tell me something wise.", false);
    answer(s, 2, "Now tell me a very long story.", true);
    gsmrt_session_destroy(s);  gsmrt_model_destroy(model);  gsmrt_context_destroy(ctx);
    return 0;
}
