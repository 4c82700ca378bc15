/* The progress of a transfer with a registry (pull.h's sbx_pull_event), as
 * `sbx pull` draws it on a terminal: one line per layer (short digest, bytes
 * done/total, rate, a bar), redrawn in place. Shared by pull, push, and the
 * pulls of create, run and build; the renderer is in cmd-registry.c. */
#ifndef SBX_CLI_PROGRESS_H
#define SBX_CLI_PROGRESS_H

#include <stdbool.h>

#include "pull.h"

/* Sets O's progress callback and its data when stderr is a terminal and
 * not QUIET (otherwise leaves O as it is: nothing is drawn). */
void cli_progress_attach (sbx_pull_opts *o, bool quiet);

/* Frees what cli_progress_attach gave O, after the transfer; for
 * _cleanup_progress_ on the sbx_pull_opts itself. */
void cli_progress_detach (sbx_pull_opts *o);
#define _cleanup_progress_ __attribute__ ((cleanup (cli_progress_detach)))

#endif
