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
  /* With end_sandbox (sbx run --rm): the monitor also removes the sandbox
   * once its teardown is over, after this caller has its status. */
  bool remove_sandbox;
} sbx_exec_opts;

/* One function per operation of the control socket (proto-ops.h). Each
 * connects to ID's monitor (SANDBOX_NOT_RUNNING when nothing listens),
 * sends one REQUEST built with the j_* helpers and reads its REPLY; an
 * error reply {"error": {code, message}} becomes *err. A yajl_val *ret is
 * the whole reply, for the caller to free. */

/* SANDBOX_NOT_RUNNING when nothing listens for ID. */
int sbx_client_connect (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err);
/* The SIGINT, SIGTERM or SIGHUP an attached exec of this process passed on
 * to its command (the user's Ctrl-C), 0 if none. */
int sbx_client_interrupted (void);

int sbx_client_ping (const sbx_store *st, const char *id, sbx_error **err);
/* terminate / wait: send the request, then wait until the monitor closes
 * the connection (it exits), or TIMEOUT_MS passes (-1: forever): TIMEOUT. */
int sbx_client_terminate (const sbx_store *st, const char *id, int64_t timeout_ms, sbx_error **err);
int sbx_client_wait (const sbx_store *st, const char *id, int64_t timeout_ms, sbx_error **err);
/* A "wait" sent and left open: the fd reads EOF when the sandbox ends. */
int sbx_client_wait_fd (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err);
/* The sandbox ends SECONDS from now; *ret_deadline: then, in unix time. */
int sbx_client_ttl (const sbx_store *st, const char *id, int64_t seconds, int64_t *ret_deadline, sbx_error **err);
/* sbx update: what a running sandbox's limits and lifetimes become; a
 * field whose has_* is false is left as it is. */
typedef struct sbx_update {
  bool has_cpu, has_memory, has_pids, has_keep_warm, has_timeout;
  double cpu;      /* cores, 0: none */
  uint64_t memory; /* bytes, 0: none */
  int64_t pids;
  int64_t keep_warm; /* seconds, -1: none */
  int64_t timeout;   /* seconds from now */
  bool has_priority;
  int64_t priority; /* 0-9 */
} sbx_update;
/* The reply: the values now in force and "deadline" (unix time). */
int sbx_client_update (const sbx_store *st, const char *id, const sbx_update *u, yajl_val *ret, sbx_error **err);
/* A warm pool's claim (monitor-pool.c): the parked member ID takes O's
 * name, env, cwd, on-idle, network rules and ports, U's limits and
 * lifetimes (counted from now), and O->pool must be its pool. */
struct sbx_sandbox_opts;
int sbx_client_claim (const sbx_store *st, const char *id, const struct sbx_sandbox_opts *o, const sbx_update *u,
                      sbx_error **err);
/* pause (PAUSE true) or resume. */
int sbx_client_pause (const sbx_store *st, const char *id, bool pause, sbx_error **err);
/* runsc checkpoints the sandbox into PATH and ends it; the reply carries
 * "next_chan" and the process table ("procs"). */
int sbx_client_snapshot (const sbx_store *st, const char *id, const char *path, yajl_val *ret, sbx_error **err);
/* Egress rules replaced: MODE block, open or allow (with ALLOW CIDRs,
 * DOMAINS rules, or both). */
int sbx_client_net (const sbx_store *st, const char *id, const char *mode, char *const *allow, char *const *domains,
                    sbx_error **err);
/* PORT exposed: *ret_url (to free) and whether it is public. */
int sbx_client_expose (const sbx_store *st, const char *id, int64_t port, char **ret_url, bool *ret_public,
                       sbx_error **err);
/* PORT no longer exposed: its URL refuses connections and its open ones
 * are closed. NOT_FOUND when it was not exposed. */
int sbx_client_unexpose (const sbx_store *st, const char *id, int64_t port, sbx_error **err);
/* The process table: {"processes": [...]}. */
int sbx_client_ps (const sbx_store *st, const char *id, yajl_val *ret, sbx_error **err);
/* One process (its record in the reply). proc_wait: TIMEOUT_MS 0 waits
 * forever. proc_logs writes its output to OUT_FD/ERR_FD (-1 drops it). */
int sbx_client_proc_status (const sbx_store *st, const char *id, int64_t pid, yajl_val *ret, sbx_error **err);
int sbx_client_proc_wait (const sbx_store *st, const char *id, int64_t pid, int64_t timeout_ms, yajl_val *ret,
                          sbx_error **err);
int sbx_client_proc_kill (const sbx_store *st, const char *id, int64_t pid, int sig, yajl_val *ret, sbx_error **err);
int sbx_client_proc_logs (const sbx_store *st, const char *id, int64_t pid, bool follow, int out_fd, int err_fd,
                          yajl_val *ret, sbx_error **err);
/* The sandbox's merged root, an O_PATH fd passed by its monitor. */
int sbx_client_rootfd (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err);
/* Runs a command, streaming its stdout/stderr to OUT_FD/ERR_FD and (with
 * stdin_open) IN_FD to it. *ret_status: its exit status (124 when its
 * timeout killed it; 126/127 when it could not be run). */
int sbx_client_exec (const sbx_store *st, const char *id, const sbx_exec_opts *o, int in_fd, int out_fd, int err_fd,
                     int *ret_status, sbx_error **err);

#endif
