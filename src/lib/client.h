/* The CLI's side of the control socket: one connection per request, framed
 * like the agent protocol (REQUEST/REPLY, then exec streams). */
#ifndef SBX_CLIENT_H
#define SBX_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "error.h"
#include "store.h"

typedef struct sbx_exec_opts {
  char **argv;
  char **env;
  const char *cwd;
  const char *user;
  bool tty;
  bool stdin_open;
  bool detach;
  int64_t timeout_ms;
  /* With tty: the terminal size, and IN_FD's terminal (if it is one) to
   * follow: its size changes (SIGWINCH) are sent on. */
  uint16_t rows, cols;
  /* A command that is not found is an error (NOT_FOUND, this message)
   * rather than exit status 127: run-code's missing interpreter. */
  const char *not_found_msg;
  /* With detach: where the started command's pid goes. */
  uint32_t *ret_pid;
  /* `sbx run`: the monitor ends the sandbox (reason killed) as soon as the
   * command has ended, however it ends, without waiting for another request
   * (and also when this caller dies first). Not with detach. */
  bool end_sandbox;
} sbx_exec_opts;

/* SANDBOX_NOT_RUNNING when nothing listens for ID. */
int sbx_client_connect (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err);
/* Sends one REQUEST and reads its REPLY; an error reply becomes *err. */
/* The SIGINT, SIGTERM or SIGHUP an attached exec of this process passed on
 * to its command (the user's Ctrl-C), 0 if none. */
int sbx_client_interrupted (void);
int sbx_client_call (const sbx_store *st, const char *id, const char *json, yajl_val *ret, sbx_error **err);
/* The same for a request answered by STDOUT/STDERR frames (written to
 * OUT_FD/ERR_FD; -1 drops them) and then the REPLY: `proc logs`. */
int sbx_client_stream (const sbx_store *st, const char *id, const char *json, int out_fd, int err_fd, yajl_val *ret,
                       sbx_error **err);
/* The sandbox's merged root, an O_PATH fd passed by its monitor. */
int sbx_client_rootfd (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err);
/* Sends the request and waits until the monitor closes the connection
 * (it exits), or TIMEOUT_MS passes (-1: forever): TIMEOUT. */
int sbx_client_wait_close (const sbx_store *st, const char *id, const char *json, int64_t timeout_ms,
                           sbx_error **err);
/* Runs a command, streaming its stdout/stderr to OUT_FD/ERR_FD and (with
 * stdin_open) IN_FD to it. *ret_status: its exit status (124 when its
 * timeout killed it; 126/127 when it could not be run). */
int sbx_client_exec (const sbx_store *st, const char *id, const sbx_exec_opts *o, int in_fd, int out_fd,
                     int err_fd, int *ret_status, sbx_error **err);

#endif
