/* A sandbox's log (ROOT/sandboxes/ID/log), as its monitor writes it: one
 * line per event, each with a timestamp and the side it comes from, in a
 * file that never grows past SBX_LOG_MAX bytes.
 *
 *   2026-12-01T23:17:23.482Z sbx: running          the monitor itself
 *   2026-12-01T23:17:23.482Z runtime: ...          the runtime's stderr
 *   2026-12-01T23:17:23.482Z sandbox: ...          sbx-init (LOG frames)
 *
 * Text is written with its control bytes (newlines too), bytes above 0x7e
 * and backslashes as \xNN: what the runtime or the sandbox says, or what a
 * monitor's message quotes of it, cannot forge a line or a side. Lines of the runtime and the sandbox stop at
 * SBX_LOG_MAX - SBX_LOG_RESERVE bytes of file; the rest is counted and
 * noted ("[sbx: log truncated, N bytes dropped]"), and the monitor's own
 * lines keep the reserve. */
#ifndef SBX_SBLOG_H
#define SBX_SBLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_LOG_MAX (1024u * 1024)
#define SBX_LOG_RESERVE (64u * 1024)
/* Longest line kept of the runtime's stderr; the rest of it starts a new one. */
#define SBX_LOG_LINE_MAX 4096

typedef enum sbx_log_side {
  SBX_LOG_MONITOR, /* "sbx" */
  SBX_LOG_RUNTIME, /* "runtime" */
  SBX_LOG_SANDBOX, /* "sandbox" */
} sbx_log_side;

typedef struct sbx_log {
  int fd;                         /* O_APPEND, or -1: nothing is written */
  uint64_t size;                  /* of the file */
  uint64_t dropped;               /* bytes of lines not written */
  bool noted;                     /* the truncation has been noted once */
  char partial[SBX_LOG_LINE_MAX]; /* the runtime's unfinished line */
  size_t plen;
} sbx_log;

/* Takes FD (the log file, opened O_APPEND) and its current size. */
void sbx_log_init (sbx_log *l, int fd);
/* One line of SIDE: LEN bytes of text, escaped. */
void sbx_log_line (sbx_log *l, sbx_log_side side, const char *text, size_t len);
/* Bytes of the runtime's stderr: whole lines are logged, the rest waits. */
void sbx_log_feed (sbx_log *l, const char *data, size_t len);
/* Logs what is left of the runtime's line, and the final truncation note. */
void sbx_log_finish (sbx_log *l);

#endif
