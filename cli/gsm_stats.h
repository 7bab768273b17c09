/* gsm_stats.h -- GSM statistics as the CLI prints them: per step (gsm run
 * --stats) and totals (--stats, chat /stats). */
#ifndef GSM_CLI_GSM_STATS_H
#define GSM_CLI_GSM_STATS_H

#include <stdio.h>

#include "gsmrt.h"

/* Totals since the session started, with what they mean. */
void gsm_stats_print_totals(FILE *f, const gsmrt_gsm_stats *st);
/* One line: what changed between two snapshots (one decode step). */
void gsm_stats_print_step(FILE *f, uint32_t step, const gsmrt_gsm_stats *before, const gsmrt_gsm_stats *after);

#endif
