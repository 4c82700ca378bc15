/* Running host programs (spawn.c). */
#ifndef SBX_SPAWN_H
#define SBX_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Where a spawned program's stdin, stdout and stderr come from: an fd of
 * the caller's, or -1 for /dev/null. */
typedef struct sbx_spawn_io {
  int in_fd;
  int out_fd;
  int err_fd;
} sbx_spawn_io;

/* Starts ARGV (IO NULL: all three on /dev/null) with no fd but stdio open
 * and SIGPIPE at its default; ARGV[0] without a '/' is looked up in PATH.
 * The child exits 127 when the exec fails. *ret_pid is the caller's to
 * wait for (sbx_spawn_wait; _cleanup_pid_ kills it on an early return).
 * Nothing is opened in the caller, so a failed fork leaks nothing. */
int sbx_spawn (char *const *argv, const sbx_spawn_io *io, pid_t *ret_pid, sbx_error **err);
/* waitpid (PID) through EINTR: 0 and the raw status, or -errno. */
int sbx_spawn_wait (pid_t pid, int *ret_status);
/* An exit status as a shell shows it: the code, or 128 + the signal. */
int sbx_exit_code (int wstatus);
/* sbx_spawn, then waits: *ret_status as sbx_exit_code gives it. */
int sbx_spawn_run (char *const *argv, const sbx_spawn_io *io, int *ret_status, sbx_error **err);

/* Runs ARGV with stdin from /dev/null, collecting stdout and stderr (up to
 * MAX bytes each; either may be NULL) and its exit status as sbx_exit_code
 * gives it. Used for runtimes and host tools; never anything from a
 * sandbox. */
int sbx_spawn_capture (char *const *argv, size_t max, char **ret_out, char **ret_err, int *ret_status, sbx_error **err);

/* In a child subreaper (the monitor): reap every child while waiting. */
void sbx_spawn_reap_all (bool on);

#endif
