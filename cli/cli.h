/* cli.h -- the subcommands of `gsm` and the helpers they share. The CLI sees
 * include/gsmrt.h only. Exit codes: 0 success, 1 runtime error, 2 usage. */
#ifndef GSM_CLI_H
#define GSM_CLI_H

#include <stdio.h>

#include "gsmrt.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

int cmd_devices(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* The whole text file as a NUL-terminated string (free it with
 * gsmrt_file_free); NULL after printing why. A regular file only (never
 * blocks on a FIFO), at most GSMRT_TEXT_FILE_MAX_BYTES, no NUL byte. */
char *cli_read_file(const char *cmd, const char *path);

/* Writes s as a JSON string literal (quotes and escapes included). */
void json_string(FILE *f, const char *s);

#endif
