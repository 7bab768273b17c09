/* cmd_chat.c -- `gsm chat`: an interactive multi-turn chat in the terminal.
 * Answers stream as they are generated; Ctrl-C stops an answer (the chat
 * goes on, however often it is pressed), Ctrl-C at the prompt or Ctrl-D
 * leaves; /reset, /stats, /help. When the context fills up, the oldest
 * exchanges are forgotten (the system message stays); a turn that fails
 * leaves the history as it was. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "gsm_stats.h"

static gsmrt_session *volatile g_session;   /* the session being generated, for the handler */
static volatile sig_atomic_t g_generating, g_quit;
static volatile time_t g_answer_end_ms;       /* when the last answer ended (monotonic ms) */

/* A Ctrl-C this soon after an answer ended was meant for the answer (a
 * second press while it was stopping), not for leaving. */
#define ANSWER_GRACE_MS 700

static time_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);   /* async-signal-safe */
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* During an answer every Ctrl-C only stops it: leaving is for the prompt. */
static void on_sigint(int sig)
{
    (void)sig;
    if (g_generating) gsmrt_session_cancel(g_session);   /* an atomic store: safe in a handler */
    else if (now_ms() - g_answer_end_ms >= ANSWER_GRACE_MS) g_quit = 1;
}

/* Room for the next turn: while the rendered history and room for an
 * answer (n-predict, at most a quarter of the context) exceed the context,
 * forget the oldest exchange after the system message (`first` is 1 with
 * one, else 0). The history is [system] (user assistant)* user, since a
 * failed turn takes its user message back. Says so the first time. */
static void make_room(gsmrt_session *s, uint32_t first, uint32_t max_tokens, bool verbose, bool *told)
{
    uint32_t n_ctx = gsmrt_session_n_ctx(s), room = max_tokens < n_ctx / 4 ? max_tokens : n_ctx / 4;
    uint32_t dropped = 0;
    size_t n;
    while (gsmrt_session_prompt_tokens(s, &n) == GSMRT_OK && n + room > n_ctx) {
        uint32_t n_msgs = gsmrt_session_n_messages(s);
        if (n_msgs < first + 3) break;   /* nothing but the new message is left to forget */
        if (gsmrt_session_remove_messages(s, first, 2) != GSMRT_OK) break;
        dropped += 2;
    }
    if (dropped && (!*told || verbose))
        printf("(the context is full: the oldest exchanges are forgotten to make room%s; %u messages this time)\n",
               first ? ", the system message stays" : "", dropped);
    if (dropped) *told = true;
}

static void help(void)
{
    printf("commands:\n"
           "  /reset   forget the conversation\n"
           "  /stats   timings of the last answer and memory in use\n"
           "  /help    this text\n"
           "Ctrl-C stops an answer; Ctrl-C at the prompt or Ctrl-D leaves.\n");
}

static void stats(gsmrt_context *ctx, gsmrt_session *s, const gsmrt_generate_result *r, bool have)
{
    if (have)
        printf("last answer: %u tokens, %.1f tokens/s; prompt %u tokens in %.1f ms; first token after %.1f ms; "
               "%u positions in the cache\n",
               r->n_tokens, r->generate_ms > 0 && r->n_tokens > 1 ? (r->n_tokens - 1) * 1e3 / r->generate_ms : 0.0,
               r->n_prompt_tokens, r->prompt_ms, r->first_token_ms, r->n_past);
    gsmrt_gsm_stats st = {.struct_size = sizeof st};
    if (gsmrt_session_gsm_stats(s, &st) == GSMRT_OK) gsm_stats_print_totals(stdout, &st);
    gsmrt_memory_usage u;
    u.struct_size = sizeof u;
    if (gsmrt_context_memory(ctx, &u) == GSMRT_OK)
        printf("device memory: weights %.1f MiB, KV %.2f MiB (hot) + %.2f MiB (cold), scratch %.1f MiB\n",
               u.weights_bytes / 1048576.0, u.kv_hot_bytes / 1048576.0, u.kv_cold_bytes / 1048576.0,
               u.scratch_bytes / 1048576.0);
}

/* Reads one line; NULL on end of input or when asked to quit. The buffer
 * grows for long lines. */
static char *read_line(char **buf, size_t *cap)
{
    size_t n = 0;
    for (;;) {
        if (n + 2 > *cap) {
            size_t c = *cap ? 2 * *cap : 1024;
            char *b = realloc(*buf, c);
            if (!b) return NULL;
            *buf = b;
            *cap = c;
        }
        errno = 0;
        int ch = fgetc(stdin);
        if (ch == EOF) {
            if (errno == EINTR && !g_quit) {
                clearerr(stdin);
                continue;
            }
            if (n == 0) return NULL;
            break;
        }
        if (ch == '\n') break;
        (*buf)[n++] = (char)ch;
    }
    (*buf)[n] = '\0';
    return *buf;
}

int cmd_chat(int argc, char **argv)
{
    struct opts o;
    opts_init(&o);
    const char *system_prompt = NULL;
    for (int i = 1; i < argc; i++) {
        int r = opts_parse_common(&o, "chat", argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if ((strcmp(argv[i], "-sys") == 0 || strcmp(argv[i], "--system") == 0) && i + 1 < argc)
            system_prompt = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: gsm chat [-m MODEL] [--system TEXT] [options]\n\n"
                   "An interactive chat in the terminal (the bundled model by default). Type a message\n"
                   "and press Enter; the answer streams as it is generated. Ctrl-C stops an answer,\n"
                   "Ctrl-C at the prompt or Ctrl-D leaves. Commands: /reset, /stats, /help. When the\n"
                   "context (-c) is full, the oldest exchanges are forgotten (the system message stays).\n\n"
                   "      --system TEXT        a system message at the start of the chat\n%s",
                   COMMON_OPTIONS_HELP);
            return 0;
        } else {
            fprintf(stderr, "gsm chat: unknown option or missing value '%s' (see gsm chat --help)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    gsmrt_context *ctx;
    gsmrt_model *model;
    gsmrt_session *s = NULL;
    if (!load_model(&o, "chat", &ctx, &model)) return EXIT_RUNTIME;
    gsmrt_session_params sp;
    opts_session_params(&o, &sp);
    gsmrt_status st = gsmrt_session_create(model, &sp, &s);
    if (st != GSMRT_OK) {
        int code = session_failed("chat", ctx, st);
        unload(ctx, model, NULL);
        return code;
    }
    if (system_prompt && gsmrt_session_add_message(s, GSMRT_ROLE_SYSTEM, system_prompt) != GSMRT_OK) {
        fprintf(stderr, "gsm chat: %s\n", gsmrt_context_last_error(ctx));
        unload(ctx, model, s);
        return EXIT_USAGE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;   /* no SA_RESTART: a read at the prompt returns on Ctrl-C */
    sigaction(SIGINT, &sa, NULL);
    g_session = s;
    bool tty = isatty(STDIN_FILENO);
    gsmrt_model_info mi;
    mi.struct_size = sizeof mi;
    gsmrt_model_describe(model, &mi);
    if (!mi.chat_format[0]) {
        fprintf(stderr, "gsm chat: the model's chat template is not recognised; choose a format with "
                        "--chat-format NAME (gsm-tiny, chatml, llama3, deepseek2, deepseek3)\n");
        unload(ctx, model, s);
        return EXIT_RUNTIME;
    }
    if (tty) printf("gsm chat with %s. /help for commands, Ctrl-D to leave.\n", mi.name[0] ? mi.name : "the model");

    char *line = NULL;
    size_t cap = 0;
    gsmrt_generate_result r;
    bool have_result = false, told_full = false;
    int rc = 0;
    while (!g_quit) {
        if (tty) {
            printf("> ");
            fflush(stdout);
        }
        if (!read_line(&line, &cap) || g_quit) break;
        if (line[0] == '\0') continue;
        if (strcmp(line, "/help") == 0) {
            help();
            continue;
        }
        if (strcmp(line, "/reset") == 0) {
            gsmrt_session_reset(s);
            if (system_prompt) gsmrt_session_add_message(s, GSMRT_ROLE_SYSTEM, system_prompt);
            have_result = false;
            printf("(conversation forgotten)\n");
            continue;
        }
        if (strcmp(line, "/stats") == 0) {
            stats(ctx, s, &r, have_result);
            continue;
        }
        if (line[0] == '/' && strchr(line, ' ') == NULL) {
            printf("unknown command %s (/help lists them)\n", line);
            continue;
        }
        st = gsmrt_session_add_message(s, GSMRT_ROLE_USER, line);
        if (st != GSMRT_OK) {
            printf("(%s)\n", gsmrt_context_last_error(ctx));
            continue;
        }
        make_room(s, system_prompt ? 1 : 0, o.gen.max_tokens, o.verbose, &told_full);
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        g_generating = 1;
        st = gsmrt_session_generate(s, &o.gen, print_token, NULL, &r);
        g_answer_end_ms = now_ms();
        g_generating = 0;
        printf("\n");
        if (cli_stdout_errno) {   /* nobody reads the answers any more (main says why) */
            rc = EXIT_RUNTIME;
            break;
        }
        /* a failed turn takes its message back: the history is as before it */
        if (st != GSMRT_OK) gsmrt_session_pop_messages(s, 1);
        if (st == GSMRT_OK) {
            have_result = true;
            if (r.stop == GSMRT_STOP_CANCELLED) printf("(stopped)\n");
            else if (r.stop == GSMRT_STOP_CONTEXT_END)
                printf("(the answer reached the end of the context; the next turn forgets the oldest exchanges)\n");
            if (o.verbose) stats(ctx, s, &r, true);
        } else if (st == GSMRT_E_CANCELLED) {
            printf("(stopped)\n");
        } else {
            printf("(error: %s)\n", gsmrt_context_last_error(ctx));
            if (st == GSMRT_E_DEVICE_LOST) {
                rc = EXIT_RUNTIME;
                break;
            }
        }
    }
    if (tty) printf("\n");
    free(line);
    g_session = NULL;
    unload(ctx, model, s);
    return rc;
}
