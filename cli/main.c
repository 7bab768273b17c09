/* main.c -- `gsm`: parse the subcommand, hand over to it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gsm <command> [options]\n"
            "\n"
            "GSM runtime %s: LLM inference on Vulkan with grouped, tiered KV memory.\n"
            "\n"
            "commands:\n"
            "  chat        an interactive chat (the bundled model by default)\n"
            "  run         continue a prompt\n"
            "  perplexity  perplexity of a text file\n"
            "  calibrate   calibrate GSM's head groups for a model (writes a calibration file)\n"
            "  bench       speed, memory and quality: dense against GSM keep/swap (--matrix: the standard table)\n"
            "  devices     list the Vulkan devices and their capabilities\n"
            "  serve       an OpenAI-compatible HTTP server (continuous batching, prefix reuse)\n"
            "\n"
            "Run `gsm <command> --help` for the options of a command.\n"
            "Environment: GSMRT_DEVICE (index or name), GSMRT_VALIDATE=1 (Khronos validation),\n"
            "GSMRT_DISABLE_SUBGROUP_OPS=1, GSMRT_FORCE_BINDING_RANGE=BYTES, GSMRT_PIPELINE_CACHE=PATH|off.\n",
            gsmrt_version_string());
}

static int command(int argc, char **argv);

/* Output that did not reach stdout is a failure, whatever the command
 * thought: `gsm run > /dev/full` must not exit 0. */
int main(int argc, char **argv)
{
    int rc = command(argc, argv);
    if (!cli_stdout_flush()) {
        fprintf(stderr, "gsm: cannot write the output: %s\n", strerror(cli_stdout_errno));
        if (rc == 0) rc = EXIT_RUNTIME;
    }
    return rc;
}

static int command(int argc, char **argv)
{
    if (gsmrt_version() != GSMRT_VERSION) {
        fprintf(stderr, "gsm: library version %s does not match the header this program was built with\n",
                gsmrt_version_string());
        return EXIT_RUNTIME;
    }
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("gsm %s\n", gsmrt_version_string());
        return 0;
    }
    if (strcmp(cmd, "devices") == 0) return cmd_devices(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0) return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "chat") == 0) return cmd_chat(argc - 1, argv + 1);
    if (strcmp(cmd, "perplexity") == 0) return cmd_perplexity(argc - 1, argv + 1);
    if (strcmp(cmd, "calibrate") == 0) return cmd_calibrate(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0) return cmd_serve(argc - 1, argv + 1);
    fprintf(stderr, "gsm: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
