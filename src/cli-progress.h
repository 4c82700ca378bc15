/* The progress of a transfer with a registry (pull.h's sbx_pull_event), as
 * `sbx pull` draws it on a terminal: one line per layer (short digest, bytes
 * done/total, rate, a bar), redrawn in place. Shared by pull, push, and the
 * pulls of create, run and build; the renderer is in cmd-registry.c. */
#ifndef SBX_CLI_PROGRESS_H
#define SBX_CLI_PROGRESS_H

#include <stdbool.h>

#include "pull.h"

/* Sets O's progress callback and its data when stderr is a terminal and
 * not QUIET; returns that data, to free() after the transfer (NULL: nothing
 * is drawn). */
void *cli_progress_attach (sbx_pull_opts *o, bool quiet);

#endif
