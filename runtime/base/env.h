/* env.h -- the GSMRT_* environment switches, parsed in one place. A value
 * that is not one of the accepted forms is never silently ignored: it is
 * logged as a warning naming the variable and the accepted forms, and then
 * counts as unset. */
#ifndef GSMRT_BASE_ENV_H
#define GSMRT_BASE_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"

/* 1/0 (also on/off, yes/no, true/false, any case); unset or "" is false. */
bool gsmrt_env_flag(const struct gsmrt_log *log, const char *name);

/* A byte count: digits with an optional K, M or G (powers of 1024); 0 when
 * unset, "", malformed, or too large for 64 bits. */
uint64_t gsmrt_env_bytes(const struct gsmrt_log *log, const char *name);

/* The index of the value among the n words of `choices` (exact match), -1
 * when unset, "" or not one of them. */
int gsmrt_env_choice(const struct gsmrt_log *log, const char *name, const char *const *choices, int n);

#endif
