/* The monitor's process table: the processes started through the exec
 * API, their bounded logs, `sbx ps` / `sbx proc`, and the table saved in
 * a snapshot and read back by a restored monitor. */
#include "config.h"
#include "monitor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

/* --- the process table ------------------------------------------------- */

struct proc *
mon_proc_by_chan (struct mon *m, uint32_t chan)
{
  for (size_t i = 0; i < m->nprocs; i++)
    if (m->procs[i]->chan == chan)
      return m->procs[i];
  return NULL;
}

/* The running process with this pid, else the newest ended one (pids are
 * reused inside the sandbox). */
static struct proc *
proc_by_pid (struct mon *m, int64_t pid)
{
  struct proc *best = NULL;
  for (size_t i = 0; i < m->nprocs; i++)
    {
      struct proc *p = m->procs[i];
      if (p->pid == 0 || (int64_t) p->pid != pid)
        continue;
      if (!p->ended)
        return p;
      if (best == NULL || p->seq > best->seq)
        best = p;
    }
  return best;
}

/* Keeps a background process's output within both bounds: its own log's
 * cap, and the sandbox's budget, shared by every kept log (running and
 * ended). A log that would grow past the budget first takes room from the
 * largest other log larger than itself, which drops its oldest half; with
 * none left, it keeps its size and drops its own oldest output. So the
 * share of each comes to about the budget over the number of logs; what
 * is dropped is counted in output_dropped. */
static void
proc_log_push (struct mon *m, struct proc *p, uint8_t type, const void *data, size_t len)
{
  size_t want = sbx_ring_want (&p->log, len);
  p->log.limit = 0;
  if (want > p->log.size)
    {
      size_t used = 0;
      for (size_t i = 0; i < m->nprocs; i++)
        used += m->procs[i]->log.size;
      while (used + (want - p->log.size) > PROC_OUTPUT_BUDGET)
        {
          struct proc *big = NULL;
          for (size_t i = 0; i < m->nprocs; i++)
            if (m->procs[i] != p && (big == NULL || m->procs[i]->log.size > big->log.size))
              big = m->procs[i];
          if (big == NULL || big->log.size <= p->log.size || big->log.size <= 4096)
            break;
          used -= big->log.size / 2;
          sbx_ring_shrink (&big->log, big->log.size / 2);
        }
      if (used + (want - p->log.size) > PROC_OUTPUT_BUDGET)
        p->log.limit = p->log.size;
    }
  sbx_ring_push (&p->log, type, data, len);
}

static void
proc_remove (struct mon *m, struct proc *p)
{
  size_t i = 0;
  while (i < m->nprocs && m->procs[i] != p)
    i++;
  if (i == m->nprocs)
    return;
  memmove (m->procs + i, m->procs + i + 1, (m->nprocs - i - 1) * sizeof *m->procs);
  m->nprocs--;
  sbx_ring_free (&p->log);
  free (p->cmd);
  free (p);
}

void
mon_proc_new (struct mon *m, uint32_t chan, char *const *argv, bool detached, bool tty)
{
  struct proc *p = xmalloc0 (sizeof *p);
  p->chan = chan;
  p->detached = detached;
  p->tty = tty;
  p->started_at = now_unix ();
  p->seq = ++m->proc_seq;
  p->cmd = xmalloc (PROC_CMD_MAX + 4);
  size_t n = 0;
  for (size_t i = 0; argv[i] && n < PROC_CMD_MAX; i++)
    n += (size_t) snprintf (p->cmd + n, PROC_CMD_MAX + 1 - n, "%s%s", i ? " " : "", argv[i]);
  if (n >= PROC_CMD_MAX)
    strcpy (p->cmd + PROC_CMD_MAX - 3, "...");
  sbx_ring_init (&p->log, PROC_LOG_CAP);
  m->procs = xrealloc (m->procs, (m->nprocs + 1) * sizeof *m->procs);
  m->procs[m->nprocs++] = p;
  m->active_execs++;
}

/* The process ended: it no longer keeps the sandbox busy, and the oldest
 * ended entries beyond PROCS_ENDED_MAX are forgotten. */
static void
proc_end (struct mon *m, struct proc *p, int32_t code, int32_t sig, bool timed_out)
{
  p->ended = true;
  p->exit_code = code;
  p->signal = sig;
  p->timed_out = timed_out;
  p->ended_at = now_unix ();
  p->seq = ++m->proc_seq; /* from now on, its order among the ended */
  m->active_execs--;
  mon_touch (m);
  for (;;)
    {
      struct proc *oldest = NULL;
      size_t ended = 0;
      for (size_t i = 0; i < m->nprocs; i++)
        if (m->procs[i]->ended)
          {
            ended++;
            if (oldest == NULL || m->procs[i]->seq < oldest->seq)
              oldest = m->procs[i];
          }
      if (ended <= PROCS_ENDED_MAX)
        break;
      proc_remove (m, oldest);
    }
}

/* What the agent said of a process: its pid, its background output, its
 * end. Returns P, or NULL when the process never started and is dropped. */
struct proc *
mon_proc_frame (struct mon *m, struct proc *p, const struct sbx_frame_hdr *h, const unsigned char *data)
{
  switch (h->type)
    {
    case SBX_MSG_STARTED:
      if (h->len == sizeof (uint32_t) && p->pid == 0)
        memcpy (&p->pid, data, sizeof p->pid);
      break;
    case SBX_MSG_STDOUT:
    case SBX_MSG_STDERR:
      if (p->detached)
        {
          /* Kept, newest first: a background process never waits on a reader. */
          uint32_t n = h->len;
          proc_log_push (m, p, (uint8_t) h->type, data, h->len);
          p->output_bytes += h->len;
          mon_to_agent (m, SBX_MSG_CREDIT, h->chan, &n, sizeof n);
        }
      break;
    case SBX_MSG_EXIT:
      {
        struct sbx_exit_msg em = { .status = 255 };
        sbx_exit_decode (data, h->len, &em);
        bool to = em.flags & SBX_EXIT_F_TIMED_OUT;
        proc_end (m, p, to ? 124 : em.status, em.signal, to);
        break;
      }
    case SBX_MSG_ERROR:
      {
        int32_t st = 125;
        if (h->len >= sizeof st)
          memcpy (&st, data, sizeof st);
        if (p->pid == 0)
          {
            m->active_execs--;
            mon_touch (m);
            proc_remove (m, p);
            return NULL;
          }
        proc_end (m, p, st, 0, false);
        break;
      }
    default:
      break;
    }
  return p;
}

static void
proc_json (yajl_gen g, const struct proc *p, enum proc_form form)
{
  j_map (g);
  if (form == PROC_SAVED)
    {
      j_kint (g, "chan", p->chan);
      j_kint (g, "pid", p->pid);
      j_kstr (g, "command", p->cmd);
      j_kbool (g, "tty", p->tty);
      j_kint (g, "started_at", p->started_at);
      j_kbool (g, "ended", p->ended);
      j_kint (g, "ended_at", p->ended_at);
      j_kint (g, "exit_code", p->exit_code);
      j_kint (g, "signal", p->signal);
      j_kbool (g, "timed_out", p->timed_out);
      j_kbool (g, "initial", p->initial);
      j_endmap (g);
      return;
    }
  j_kint (g, "pid", p->pid);
  j_kstr (g, "command", p->cmd);
  j_kstr (g, "state", p->pid == 0 ? "starting" : p->ended ? "exited" : "running");
  j_kbool (g, "background", p->detached);
  j_kbool (g, "initial", p->initial);
  j_kbool (g, "tty", p->tty);
  j_kint (g, "started_at", p->started_at);
  if (p->ended)
    {
      j_kint (g, "ended_at", p->ended_at);
      j_kint (g, "exit_code", p->exit_code);
      j_kint (g, "signal", p->signal);
      j_kbool (g, "timed_out", p->timed_out);
    }
  else
    {
      j_str (g, "exit_code");
      j_null (g);
    }
  if (p->detached)
    {
      j_kint (g, "output_bytes", (long long) p->output_bytes);
      j_kint (g, "output_dropped", (long long) p->log.dropped);
    }
  j_endmap (g);
}

/* The process table: every process (PROC_VIEW) or those that started
 * (PROC_SAVED: one not yet started is nothing a restore could follow). */
void
mon_procs_json (yajl_gen g, const struct mon *m, enum proc_form form)
{
  j_arr (g);
  for (size_t i = 0; i < m->nprocs; i++)
    if (form == PROC_VIEW || m->procs[i]->pid != 0)
      proc_json (g, m->procs[i], form);
  j_endarr (g);
}

static void
reply_proc (struct client *c, const struct proc *p)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  proc_json (g, p, PROC_VIEW);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
  c->closing = true;
  c->watch = WATCH_NONE;
}

void
mon_handle_ps (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_str (g, "processes");
  mon_procs_json (g, m, PROC_VIEW);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
  c->closing = true;
}

/* proc_status, proc_wait, proc_kill, proc_logs: {"op", "pid", ...}. */
void
mon_handle_proc (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  static const char *const keys[] = { "op", "pid", "timeout_ms", "signal", "follow", NULL };
  _cleanup_error_ sbx_error *err = NULL;
  int64_t pid = 0, timeout = 0, sig = SIGKILL;
  bool follow = false;
  if (j_check_keys (req, keys, "process request", &err) < 0 || j_get_int (req, "pid", true, &pid, &err) < 0
      || j_get_int (req, "timeout_ms", false, &timeout, &err) < 0 || j_get_int (req, "signal", false, &sig, &err) < 0
      || j_get_bool (req, "follow", false, &follow, &err) < 0)
    {
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  struct proc *p = proc_by_pid (m, pid);
  if (p == NULL)
    {
      _cleanup_free_ char *msg = xasprintf ("no process %lld was started in this sandbox (see `sbx ps`)",
                                            (long long) pid);
      mon_reply_error (c, SBX_E_NOT_FOUND, msg);
      return;
    }
  c->watch_chan = p->chan;
  if (op == SBX_OP_PROC_STATUS)
    reply_proc (c, p);
  else if (op == SBX_OP_PROC_WAIT)
    {
      c->watch = WATCH_WAIT;
      c->wait_deadline = timeout > 0 ? now_ms_monotonic () + (uint64_t) timeout : 0;
    }
  else if (op == SBX_OP_PROC_KILL)
    {
      if (sig < 1 || sig > 64)
        mon_reply_error (c, SBX_E_INVALID_ARGUMENT, "signal out of range");
      else if (p->ended)
        {
          _cleanup_free_ char *msg = xasprintf ("process %lld has already exited", (long long) pid);
          mon_reply_error (c, SBX_E_INVALID_ARGUMENT, msg);
        }
      else
        {
          uint32_t s32 = (uint32_t) sig;
          mon_to_agent (m, SBX_MSG_SIGNAL, p->chan, &s32, sizeof s32);
          mon_reply_bool (c, "ok", true);
          c->closing = true;
        }
    }
  else if (!p->detached)
    {
      _cleanup_free_ char *msg =
          xasprintf ("process %lld runs attached to its caller: its output goes there, not to a log", (long long) pid);
      mon_reply_error (c, SBX_E_INVALID_ARGUMENT, msg);
    }
  else
    {
      c->watch = follow ? WATCH_FOLLOW : WATCH_LOGS;
      c->log_off = 0;
    }
}

/* Feeds a `proc logs` reader from the log while its queue has room, and
 * answers a `proc wait` once the process has ended or its time is up. The
 * final REPLY, after the output, carries the process's status. */
void
mon_serve_watch (struct mon *m, struct client *c)
{
  static unsigned char rec[SBX_PROTO_MAX_PAYLOAD];
  if (c->watch == WATCH_NONE || c->closing)
    return;
  struct proc *p = mon_proc_by_chan (m, c->watch_chan);
  if (p == NULL)
    {
      mon_reply_error (c, SBX_E_NOT_FOUND, "the process has left the process table");
      return;
    }
  if (c->watch == WATCH_WAIT)
    {
      if (p->ended)
        reply_proc (c, p);
      else if (c->wait_deadline && now_ms_monotonic () >= c->wait_deadline)
        {
          _cleanup_free_ char *msg = xasprintf ("process %u did not exit in time", p->pid);
          mon_reply_error (c, SBX_E_TIMEOUT, msg);
        }
      return;
    }
  uint8_t type;
  ssize_t n;
  while (c->out.len < FOLLOW_QUEUE_MAX && (n = sbx_ring_read (&p->log, &c->log_off, &type, rec, sizeof rec)) >= 0)
    mon_buf_frame (&c->out, type, 0, rec, (size_t) n);
  if (c->log_off >= p->log.end && (c->watch == WATCH_LOGS || p->ended))
    reply_proc (c, p);
}

bool
mon_watch_ready (struct mon *m, const struct client *c)
{
  if ((c->watch != WATCH_LOGS && c->watch != WATCH_FOLLOW) || c->closing)
    return false;
  struct proc *p = mon_proc_by_chan (m, c->watch_chan);
  return p == NULL || c->log_off < p->log.end || p->ended || c->watch == WATCH_LOGS;
}

/* A restored sandbox's process table, from its snapshot.json (written by
 * sbx snapshot): every process is in the background now (whoever waited on
 * it is gone); output from the restore on goes to its log. */
void
mon_restore_procs (struct mon *m)
{
  _cleanup_free_ char *dir = xstrdup (m->sb->restore_from);
  char *slash = strrchr (dir, '/');
  if (slash == NULL)
    return;
  *slash = '\0';
  _cleanup_free_ char *path = xasprintf ("%s/snapshot.json", dir);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_read_file (path, 4 << 20, "snapshot", NULL, &v, NULL) < 0)
    return;
  yajl_val procs = j_get (v, "procs");
  if (procs == NULL || !YAJL_IS_ARRAY (procs))
    return;
  for (size_t i = 0; i < procs->u.array.len && i < MAX_CLIENTS; i++)
    {
      yajl_val x = procs->u.array.values[i];
      int64_t chan = 0, pid = 0, started = 0, ended_at = 0, code = 0, sig = 0;
      const char *cmd = NULL;
      bool tty = false, ended = false, timed_out = false, initial = false;
      if (j_get_int (x, "chan", true, &chan, NULL) < 0 || j_get_int (x, "pid", true, &pid, NULL) < 0
          || j_get_str (x, "command", false, &cmd, NULL) < 0 || j_get_bool (x, "tty", false, &tty, NULL) < 0
          || j_get_int (x, "started_at", false, &started, NULL) < 0 || j_get_bool (x, "ended", false, &ended, NULL) < 0
          || j_get_int (x, "ended_at", false, &ended_at, NULL) < 0 || j_get_int (x, "exit_code", false, &code, NULL) < 0
          || j_get_int (x, "signal", false, &sig, NULL) < 0 || j_get_bool (x, "timed_out", false, &timed_out, NULL) < 0
          || j_get_bool (x, "initial", false, &initial, NULL) < 0 || chan < 1 || chan >= m->next_chan || pid < 1
          || pid > INT32_MAX || mon_proc_by_chan (m, (uint32_t) chan))
        continue;
      char *const argv[] = { (char *) (cmd ? cmd : "?"), NULL };
      mon_proc_new (m, (uint32_t) chan, argv, true, tty);
      struct proc *p = m->procs[m->nprocs - 1];
      p->pid = (uint32_t) pid;
      p->started_at = started;
      p->initial = initial;
      if (ended)
        {
          proc_end (m, p, (int32_t) code, (int32_t) sig, timed_out);
          p->ended_at = ended_at;
        }
      else if (initial)
        {
          /* The initial command runs on, and with --exit-with-cmd still
           * ends the sandbox. */
          m->sb->cmd_pid = p->pid;
          if (m->sb->opts.exit_with_cmd)
            m->end_chan = p->chan;
        }
    }
  mon_log (m, "restored a table of %zu processes", m->nprocs);
}
