/* The per-sandbox monitor (DESIGN.md section 2): forked and detached by
 * `create`, it mounts the root, writes the bundle, starts the runtime with
 * sbx-init as PID 1, serves the control socket, enforces the lifetimes,
 * and on the way out removes every host resource and records the final
 * state. Modelled on conmon. */
#ifndef SBX_MONITOR_H
#define SBX_MONITOR_H

#include "error.h"
#include "sandbox.h"
#include "store.h"

/* Path of the sbx-init binary on the host: $SBX_INIT or the installed one. */
const char *sbx_init_path (void);

/* Starts the monitor for SB, whose directory exists with state `creating`
 * and whose lock is held through LOCK_FD (the monitor inherits it). Returns
 * once the sandbox runs, or with the error that stopped it (the monitor has
 * then recorded `failed` and cleaned up). */
int sbx_monitor_spawn (const sbx_store *st, sbx_sandbox *sb, int lock_fd, sbx_error **err);

#endif
