/* Running host programs (spawn.c). */
#ifndef SBX_SPAWN_H
#define SBX_SPAWN_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Runs ARGV with stdin from /dev/null, collecting stdout (up to MAX bytes).
 * Used for runtimes and host tools; never anything from a sandbox. */
int sbx_spawn_capture (char *const *argv, size_t max, char **ret_out, char **ret_err, int *ret_status,
                       sbx_error **err);

/* In a child subreaper (the monitor): reap every child while waiting. */
void sbx_spawn_reap_all (bool on);

#endif
