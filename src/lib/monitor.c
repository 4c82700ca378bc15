/* The per-sandbox monitor: setup, the control loop, lifetimes, teardown.
 *
 * Shape (after conmon): the CLI double-forks; the monitor calls setsid,
 * becomes a child subreaper (so the container's init, once the runtime's
 * `run --detach` returns, is its child), moves into a private mount
 * namespace (so the overlay root vanishes with it, whatever kills it), and
 * reports success or the error that stopped it over a CLOEXEC pipe. Then one
 * poll loop serves the agent socket, the control socket's clients and a
 * signalfd; no client can stall it: every fd is nonblocking and output to a
 * client is bounded by the agent's flow-control window.
 *
 * This file holds the spawn, the setup's order, the loop and the agent's
 * frames, and the teardown; the rest is in files of one concern each:
 * monitor-control.c (the control socket and its dispatch table),
 * monitor-proc.c (the process table), monitor-relay.c (exposed ports and
 * relays), monitor-net.c (the network plan), monitor-runtime.c (starting
 * the runtime). What they share is in monitor-internal.h, and what one
 * file calls in another is named mon_*. */
#include "config.h"
#include "monitor-internal.h"
#include "monitor.h"
#include "gpu.h"
#include "caps.h"
#include "copyin.h"
#include "disk.h"
#include "hostmount.h"
#include "fs.h"
#include "net.h"
#include "proxy.h"
#include "resolver.h"
#include "cgroup.h"
#include "conf.h"
#include "image.h"
#include "json.h"
#include "proto.h"
#include "proto-ops.h"
#include "ring.h"
#include "sblog.h"
#include "runtime.h"
#include "spec.h"
#include "util.h"

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

struct sync_msg {
  int32_t code;
  int32_t errnum;
  char msg[2048];
};

const char *
sbx_init_path (void)
{
  const char *e = getenv ("SBX_INIT");
  return e && *e ? e : SBX_LIBEXECDIR "/sbx-init";
}

void
mon_log (struct mon *m, const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  va_start (ap, fmt);
  int n = vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  sbx_log_line (&m->slog, SBX_LOG_MONITOR, line, n < 0 ? 0 : (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
}

/* --- buffers and frames ------------------------------------------------ */

void
mon_buf_append (struct buf *b, const void *p, size_t n)
{
  if (b->len + n > b->cap)
    {
      b->cap = (b->len + n) * 2;
      b->data = xrealloc (b->data, b->cap);
    }
  memcpy (b->data + b->len, p, n);
  b->len += n;
}

void
mon_buf_frame (struct buf *b, uint16_t type, uint32_t chan, const void *payload, size_t len)
{
  unsigned char hdr[SBX_PROTO_HDR_SIZE];
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = type, .chan = chan };
  sbx_frame_hdr_encode (hdr, &h);
  mon_buf_append (b, hdr, sizeof hdr);
  if (len)
    mon_buf_append (b, payload, len);
}

/* Writes what the socket takes; returns -1 on a dead peer. */
int
mon_buf_flush (struct buf *b, int fd)
{
  while (b->len > 0)
    {
      ssize_t w = send (fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0)
        {
          if (errno == EINTR)
            continue;
          if (errno == EAGAIN)
            return 0;
          return -1;
        }
      memmove (b->data, b->data + w, b->len - (size_t) w);
      b->len -= (size_t) w;
    }
  return 0;
}

void
mon_to_agent (struct mon *m, uint16_t type, uint32_t chan, const void *p, size_t n)
{
  if (m->agent_gone)
    return;
  mon_buf_frame (&m->aout, type, chan, p, n);
  if (mon_buf_flush (&m->aout, m->agent_fd) < 0)
    m->agent_gone = true;
}

/* --- state ------------------------------------------------------------- */

static void sample_limits (struct mon *m);

/* Observe mode counts connections to private ranges in nftables, which
 * notifies nobody: that count alone is read each second. */
static bool
observe_sampled (const struct mon *m)
{
  return m->conf && m->conf->observe && m->net;
}

void
mon_save_state (struct mon *m)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_sandbox_save (m->st, m->sb, &err) < 0)
    mon_log (m, "save state: %s", err->msg);
}

void
mon_touch (struct mon *m)
{
  m->last_activity = now_ms_monotonic ();
}

/* The runtime's pause or resume of the whole sandbox. */
int
mon_set_paused (struct mon *m, bool pause, sbx_error **err)
{
  if (m->sb->paused == pause)
    return 0;
  const char *args[] = { m->sb->id, NULL };
  _cleanup_free_ char *errtext = NULL;
  int st = sbx_runtime_call (m->rt, pause ? "pause" : "resume", args, &errtext, err);
  if (st < 0)
    return -1;
  if (st != 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s %s failed: %s", m->rt->name, pause ? "pause" : "resume",
                          errtext ? errtext : "");
  m->sb->paused = pause;
  mon_log (m, pause ? "paused" : "resumed");
  mon_save_state (m);
  mon_touch (m);
  return 0;
}

/* sbx run's command ended (its EXIT or ERROR frame): its status, as its
 * caller gets it, goes into the record with the reason exited. */
static void
record_exit (struct mon *m, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  int32_t status = 125;
  if (h->type == SBX_MSG_EXIT)
    {
      struct sbx_exit_msg em = { .status = 255 };
      sbx_exit_decode (p, h->len, &em);
      status = (em.flags & SBX_EXIT_F_TIMED_OUT) ? 124 : em.status;
    }
  else if (h->len >= sizeof status)
    memcpy (&status, p, sizeof status);
  m->sb->has_exit_code = true;
  m->sb->exit_code = status;
}

void
mon_begin_shutdown (struct mon *m, sbx_state final, const char *reason)
{
  if (m->shutting_down)
    return;
  /* A frozen sandbox cannot act on its end: thaw it first. */
  if (m->sb->paused && mon_set_paused (m, false, NULL) < 0)
    mon_log (m, "could not resume the paused sandbox to end it");
  m->shutting_down = true;
  /* Registered before sbx run's caller can learn the exit status: the
   * next run counts this teardown. */
  if (m->ending_fd < 0)
    m->ending_fd = sbx_teardown_begin (m->st, m->sb->id);
  m->end_state = final;
  m->end_reason = reason;
  m->shutdown_deadline = now_ms_monotonic () + SHUTDOWN_GRACE_MS;
  /* The counters while everything still runs; then the agent is told at
   * once, and the record and the log are written while gVisor or runc
   * stops the sandbox, off its critical path (~0.3-2 ms). */
  sample_limits (m);
  mon_to_agent (m, SBX_MSG_SHUTDOWN, 0, NULL, 0);
  /* The reason is known now: a caller that reads the record while the
   * teardown runs (sbx run has returned) sees why it ends. */
  m->sb->state = SBX_STATE_TERMINATING;
  free (m->sb->reason);
  m->sb->reason = xstrdup (reason);
  mon_save_state (m);
  mon_log (m, "terminating: %s", reason);
}

/* --- the agent ------------------------------------------------------- */

static void
agent_frame (struct mon *m, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  if (h->type == SBX_MSG_PING)
    {
      mon_to_agent (m, SBX_MSG_PONG, 0, p, h->len);
      return;
    }
  if (h->type == SBX_MSG_LOG)
    {
      sbx_log_line (&m->slog, SBX_LOG_SANDBOX, (const char *) p, h->len);
      return;
    }
  if (h->chan == 0)
    return;
  struct relay *rl = mon_relay_by_chan (m, h->chan);
  if (rl)
    {
      mon_relay_frame (m, rl, h, p);
      return;
    }
  struct client *c = mon_client_by_chan (m, h->chan);
  if (h->type == SBX_MSG_CREDIT)
    {
      uint32_t n;
      if (c && h->len == sizeof n)
        {
          memcpy (&n, p, sizeof n);
          c->stdin_window += n;
        }
      return;
    }
  bool output = h->type == SBX_MSG_STDOUT || h->type == SBX_MSG_STDERR;
  bool last = h->type == SBX_MSG_EXIT || h->type == SBX_MSG_ERROR;
  /* sbx run's command is over: the sandbox ends now, while its caller
   * reads the exit status (or after it went away). */
  if (last && m->end_chan != 0 && h->chan == m->end_chan && !m->shutting_down)
    {
      /* Killed because sbx run went away: not the command's own end. */
      if (m->end_orphaned)
        mon_begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KILLED);
      else
        {
          record_exit (m, h, p);
          mon_begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_EXITED);
        }
    }
  struct proc *pr = mon_proc_by_chan (m, h->chan);
  if (pr && !pr->ended)
    pr = mon_proc_frame (m, pr, h, p);
  if (pr && pr->detached)
    {
      /* Its output went to the log (and was credited there); its caller
       * waited only for the pid. */
      if (c && h->type == SBX_MSG_STARTED)
        {
          mon_reply_int (c, "pid", pr->pid);
          c->exec_done = true;
          c->closing = true;
        }
      if (output || c == NULL || h->type == SBX_MSG_STARTED)
        return;
    }
  if (c == NULL)
    {
      if (output)
        {
          uint32_t n = h->len;
          mon_to_agent (m, SBX_MSG_CREDIT, h->chan, &n, sizeof n);
        }
      return;
    }
  if (h->type != SBX_MSG_STARTED && !output && !last)
    return;
  mon_client_send_frame (c, h->type, p, h->len);
  if (output)
    c->uncredited += h->len;
  if (last)
    {
      c->exec_done = true;
      c->closing = true;
    }
}

static void
agent_read (struct mon *m)
{
  m->agent_more = false;
  for (int budget = 64; budget > 0; budget--)
    {
      struct sbx_frame_hdr h;
      const unsigned char *p;
      int r = sbx_frame_read (m->agent_fd, &m->ard, &h, &p);
      if (r == 0)
        return;
      if (r < 0)
        {
          sample_limits (m);
          if (r == -EPROTO)
            mon_log (m, "the agent sent a malformed frame: closing it");
          m->agent_gone = true;
          return;
        }
      agent_frame (m, &h, p);
    }
  m->agent_more = !m->agent_gone;
}

/* Copies what the runtime (and sbx-init before its HELLO) wrote on stderr
 * into the log, as the runtime's lines. A pipe, not the log file itself: no
 * fd of a host file reaches the sandbox, and sbx-init closes its end before
 * any process of the sandbox starts. */
void
mon_drain_stderr (struct mon *m)
{
  char buf[8192];
  ssize_t n;
  while (m->stderr_r >= 0 && (n = read (m->stderr_r, buf, sizeof buf)) > 0)
    sbx_log_feed (&m->slog, buf, (size_t) n);
  if (m->stderr_r >= 0 && n == 0)
    {
      close (m->stderr_r); /* every writer is gone */
      m->stderr_r = -1;
    }
}

/* --- the initial command ---------------------------------------------- */

/* Why the initial command did not start: the agent's ERROR (126: cannot
 * run, 127: not found, as for any exec). */
static int
cmd_start_error (const struct sbx_frame_hdr *h, const unsigned char *p, const char *what, sbx_error **err)
{
  int32_t st = 125;
  if (h->len >= sizeof st)
    memcpy (&st, p, sizeof st);
  int ml = h->len > 8 ? (int) (h->len - 8) : 0;
  if (ml == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s could not start", what);
  return sbx_error_set (err, st == 127 ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, 0, "%.*s", ml, (const char *) p + 8);
}

/* Reads the agent until CHAN's STARTED (its pid) or ERROR, or with ENDED
 * until its end, within TIMEOUT_MS. The agent sends STARTED before any
 * output or EXIT of a channel, and frames are read one at a time, so nothing
 * after it is consumed here: the loop sees the rest. WHAT names the command
 * in errors. */
int
mon_wait_chan (struct mon *m, uint32_t chan, bool ended, const char *what, int timeout_ms, sbx_error **err)
{
  uint64_t until = now_ms_monotonic () + (uint64_t) timeout_ms;
  for (;;)
    {
      struct proc *pr = mon_proc_by_chan (m, chan);
      if (pr && (ended ? pr->ended : pr->pid != 0))
        return 0;
      if (m->agent_gone || pr == NULL)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "the sandbox's init went away before %s %s", what,
                              ended ? "ended" : "started");
      struct sbx_frame_hdr h;
      const unsigned char *p;
      int r = sbx_frame_read (m->agent_fd, &m->ard, &h, &p);
      if (r < 0)
        m->agent_gone = true;
      else if (r == 1 && h.chan == chan && h.type == SBX_MSG_ERROR && pr->pid == 0)
        {
          int ret = cmd_start_error (&h, p, what, err);
          agent_frame (m, &h, p);
          return ret;
        }
      else if (r == 1)
        agent_frame (m, &h, p);
      if (r != 0)
        continue;
      uint64_t now = now_ms_monotonic ();
      if (now >= until)
        return sbx_error_set (err, SBX_E_TIMEOUT, 0, "%s did not %s within %d s", what, ended ? "end" : "start",
                              timeout_ms / 1000);
      struct pollfd pf = { m->agent_fd, POLLIN | (m->aout.len ? POLLOUT : 0), 0 };
      poll (&pf, 1, 50);
      if (pf.revents & POLLOUT && mon_buf_flush (&m->aout, m->agent_fd) < 0)
        m->agent_gone = true;
      mon_drain_stderr (m);
      mon_reap_children (m);
    }
}

/* create's initial command (sbx create -- CMD, --run-cmd): a background
 * process as `exec -d` starts one, with the sandbox's env and cwd, started
 * last in the setup, so that it sees all any command sees, and before
 * create reports: a create that returns has it running, one whose command
 * cannot start fails with its error. With --exit-with-cmd its end is the
 * sandbox's (reason exited, its status). A restored sandbox's runs on in
 * the restored table (mon_restore_procs). */
static int
start_cmd (struct mon *m, sbx_error **err)
{
  if (m->sb->opts.cmd == NULL || m->sb->opts.cmd[0] == NULL || m->sb->restore_from)
    return 0;
  struct mon_exec x = { .argv = m->sb->opts.cmd, .flags = SBX_EXEC_F_DETACH };
  uint32_t chan;
  if (mon_exec_start (m, &x, &chan, err) < 0
      || mon_wait_chan (m, chan, false, "the initial command", HELLO_TIMEOUT_MS, err) < 0)
    return sbx_error_wrap (err, "initial command");
  struct proc *pr = mon_proc_by_chan (m, chan);
  pr->initial = true;
  m->sb->cmd_pid = pr->pid;
  if (m->sb->opts.exit_with_cmd)
    m->end_chan = chan;
  mon_log (m, "initial command started: pid %u%s", pr->pid, m->end_chan ? " (the sandbox ends with it)" : "");
  return 0;
}

/* --- limits ------------------------------------------------------------ */

/* The cgroup's counters, kept at their highest: a runtime that ends the
 * container deletes its cgroup, so they are sampled while it lives (when
 * the kernel reports an OOM kill or a refused fork, at the init's exit,
 * at shutdown) rather than at teardown alone. No tick: an idle monitor
 * sleeps. `status` reads them live. */
static void
sample_limits (struct mon *m)
{
  sbx_cgroup_stats cs;
  sbx_cgroup_stats_read (m->cgroup, &cs);
  bool changed = sbx_sandbox_merge_stats (m->sb, &cs);
  if (cs.pids_peak > m->pids_peak)
    m->pids_peak = cs.pids_peak;
  uint64_t seen = 0;
  if (m->conf && m->conf->observe && m->net && sbx_egress_private_count (SBX_EGRESS_TABLE, m->sb->id, &seen, NULL) == 0
      && (int64_t) seen != m->sb->net_private_seen)
    {
      m->sb->net_private_seen = (int64_t) seen;
      changed = true;
    }
  if (changed && !m->shutting_down)
    mon_save_state (m);
}

/* When the loop reads the counters next with no event: each second in
 * observe mode, 100 ms and 1 s after an event (v1 signals an OOM before
 * its kill is counted), else never (UINT64_MAX). */
static void
schedule_sample (struct mon *m, bool event)
{
  uint64_t now = now_ms_monotonic ();
  if (event)
    m->resamples = 2;
  else if (m->resamples > 0)
    m->resamples--;
  if (event)
    m->next_sample = now + 100;
  else if (m->resamples > 0 || observe_sampled (m))
    m->next_sample = now + 1000;
  else
    m->next_sample = UINT64_MAX;
}

/* The kernel's word on the cgroup's limits (cgroup-watch.h): with none
 * (an old kernel, a controller missing), OOM kills and refused forks are
 * still counted at the init's exit and at teardown, and `status` reads
 * them live. */
static void
watch_limits (struct mon *m)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_cgroup_watch_open (m->cgroup, &m->cg_watch, &err) < 0)
    mon_log (m, "limit events not watched: %s", err->msg);
  schedule_sample (m, false);
}

static size_t
watch_pollfds (struct mon *m, struct pollfd *pf)
{
  for (size_t i = 0; i < m->cg_watch.n; i++)
    pf[i] = (struct pollfd){ m->agent_gone ? -1 : m->cg_watch.fd[i], m->cg_watch.events[i], 0 };
  return m->cg_watch.n;
}

static void
watch_dispatch (struct mon *m, const struct pollfd *pf, size_t n)
{
  bool hit = false;
  for (size_t i = 0; i < n; i++)
    if (pf[i].revents)
      {
        sbx_cgroup_watch_ack (&m->cg_watch, i);
        hit = true;
      }
  if (hit)
    {
      sample_limits (m);
      schedule_sample (m, true);
    }
}

/* --- the loop ---------------------------------------------------------- */

static int
poll_timeout (struct mon *m)
{
  uint64_t now = now_ms_monotonic ();
  uint64_t next = m->deadline;
  if (m->shutting_down)
    next = m->shutdown_deadline;
  else if (m->sb->opts.keep_warm >= 0 && m->active_execs == 0 && !m->sb->paused && !m->sb->parked)
    {
      uint64_t idle = m->last_activity + (uint64_t) m->sb->opts.keep_warm * 1000;
      if (idle < next)
        next = idle;
    }
  if (!m->agent_gone && m->next_sample < next)
    next = m->next_sample;
  int t = m->resolver ? sbx_resolver_timeout_ms (m->resolver) : -1;
  if (t >= 0 && now + (uint64_t) t < next)
    next = now + (uint64_t) t;
  t = m->proxy ? sbx_proxy_timeout_ms (m->proxy) : -1;
  if (t >= 0 && now + (uint64_t) t < next)
    next = now + (uint64_t) t;
  for (size_t i = 0; i < m->nclients; i++)
    if (m->clients[i]->watch == WATCH_WAIT && m->clients[i]->wait_deadline && m->clients[i]->wait_deadline < next)
      next = m->clients[i]->wait_deadline;
  if (next <= now)
    return 0;
  return next - now > 60000 ? 60000 : (int) (next - now);
}

static void
check_timers (struct mon *m)
{
  uint64_t now = now_ms_monotonic ();
  if (m->shutting_down)
    return;
  if (now >= m->deadline)
    mon_begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_TIMEOUT);
  else if (m->sb->opts.keep_warm >= 0 && m->active_execs == 0 && !m->sb->paused && !m->sb->parked
           && now >= m->last_activity + (uint64_t) m->sb->opts.keep_warm * 1000)
    {
      /* --on-idle pause: frozen until resumed (its idle clock stops); the
       * hard timeout still ends it. */
      if (m->sb->opts.on_idle_pause && mon_set_paused (m, true, NULL) == 0)
        return;
      mon_begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KEEP_WARM);
    }
}

/* Drains every exited child (we are a subreaper: orphans of the runtime land
 * here too) and notes when the runtime itself has exited. */
void
mon_reap_children (struct mon *m)
{
  pid_t pid;
  int status;
  while ((pid = waitpid (-1, &status, WNOHANG)) > 0)
    if (pid == m->runtime_pid)
      {
        m->runtime_exited = true;
        m->runtime_status = status;
      }
}

static void
handle_signals (struct mon *m)
{
  struct signalfd_siginfo si;
  while (read (m->sig_fd, &si, sizeof si) == sizeof si)
    {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
        mon_begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KILLED);
    }
  mon_reap_children (m);
}

static void
flush_clients (struct mon *m)
{
  for (size_t i = 0; i < m->nclients;)
    {
      struct client *c = m->clients[i];
      mon_serve_watch (m, c);
      bool dead = mon_buf_flush (&c->out, c->fd) < 0;
      /* Credit in quarters of the window: one small frame per megabyte
       * rather than one per frame, and never a stall (the agent still has
       * three quarters to send on). */
      if (!dead && c->out.len == 0 && c->uncredited >= SBX_PROTO_WINDOW / 4 && c->chan && !c->exec_done)
        {
          uint32_t n = (uint32_t) c->uncredited;
          mon_to_agent (m, SBX_MSG_CREDIT, c->chan, &n, sizeof n);
          c->uncredited = 0;
        }
      if (dead || (c->closing && c->out.len == 0))
        mon_client_free (m, i);
      else
        i++;
    }
}

static void
run_loop (struct mon *m)
{
  struct pollfd *pf = xmalloc ((MAX_CLIENTS + 4 + RESOLVER_FDS_MAX + PROXY_FDS_MAX + RELAYS_MAX + SBX_CGROUP_WATCH_MAX)
                               * sizeof *pf);
  watch_limits (m);
  for (;;)
    {
      if (m->agent_gone && m->agent_gone_at == 0)
        m->agent_gone_at = now_ms_monotonic ();
      /* Done once the init is gone and the runtime has cleaned up after it
       * and exited (or has had its grace period). */
      if (m->agent_gone && (m->runtime_exited || now_ms_monotonic () >= m->agent_gone_at + SHUTDOWN_GRACE_MS))
        break;
      size_t n = 0;
      pf[n++] = (struct pollfd){ m->sig_fd, POLLIN, 0 };
      /* Once the init is gone its socket stays readable (EOF): polling it
       * would spin this loop on a CPU that the runtime's own teardown needs. */
      pf[n++] = (struct pollfd){ m->agent_gone ? -1 : m->agent_fd, POLLIN | (m->aout.len ? POLLOUT : 0), 0 };
      pf[n++] = (struct pollfd){ m->listen_fd, POLLIN, 0 };
      pf[n++] = (struct pollfd){ m->stderr_r, POLLIN, 0 };
      for (size_t i = 0; i < m->nclients; i++)
        {
          struct client *c = m->clients[i];
          short ev = (m->aout.len > AGENT_OUT_MAX || !mon_client_may_send (c) ? 0 : POLLIN)
                     | (c->out.len || mon_watch_ready (m, c) ? POLLOUT : 0);
          pf[n++] = (struct pollfd){ c->fd, ev, 0 };
        }
      size_t rbase = n, rn = m->resolver ? sbx_resolver_pollfds (m->resolver, pf + n, RESOLVER_FDS_MAX) : 0;
      n += rn;
      size_t pbase = n, pn = m->proxy ? sbx_proxy_pollfds (m->proxy, pf + n, PROXY_FDS_MAX) : 0;
      n += pn;
      size_t lbase = n, ln = mon_relay_pollfds (m, pf + n);
      n += ln;
      size_t wbase = n, wn = watch_pollfds (m, pf + n);
      n += wn;
      int r = poll (pf, n, m->agent_gone ? 10 : m->agent_more || mon_relays_done (m) ? 0 : poll_timeout (m));
      if (r < 0 && errno != EINTR)
        break;
      /* First, while their sockets are as they filled them in (a client's
       * request may add a listener); with no revents too: their deadlines. */
      if (r >= 0 && rn)
        sbx_resolver_dispatch (m->resolver, pf + rbase, rn);
      /* Relays before the proxy, which may open new ones. */
      if (r >= 0)
        mon_relay_dispatch (m, pf + lbase, ln);
      if (r >= 0 && pn)
        sbx_proxy_dispatch (m->proxy, pf + pbase, pn);
      size_t nc = m->nclients;
      if (r > 0)
        {
          if (pf[0].revents)
            handle_signals (m);
          if (pf[1].revents & POLLOUT && mon_buf_flush (&m->aout, m->agent_fd) < 0)
            m->agent_gone = true;
          if (pf[1].revents & (POLLIN | POLLHUP | POLLERR) && !m->agent_gone)
            agent_read (m);
          for (size_t i = 0; i < nc && i < m->nclients; i++)
            if (pf[4 + i].revents & (POLLIN | POLLHUP | POLLERR) && mon_client_read (m, m->clients[i]) < 0)
              m->clients[i]->closing = true, m->clients[i]->out.len = 0;
          if (pf[2].revents & POLLIN)
            mon_accept_client (m);
          if (pf[3].revents)
            mon_drain_stderr (m);
          watch_dispatch (m, pf + wbase, wn);
        }
      /* What agent_read left in its buffer, whatever poll said. */
      if (r >= 0 && m->agent_more && !m->agent_gone && !(r > 0 && pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
        agent_read (m);
      /* A proxied connection is activity (keep-warm). */
      if (m->proxy && sbx_proxy_last_activity_ms (m->proxy) > m->last_activity)
        m->last_activity = sbx_proxy_last_activity_ms (m->proxy);
      flush_clients (m);
      /* Sampled when the loop is idle, or when a busy loop is overdue: never
       * on the path of an exec's reply. */
      uint64_t now = now_ms_monotonic ();
      if (!m->agent_gone && m->next_sample != UINT64_MAX
          && ((r == 0 && now >= m->next_sample) || now >= m->next_sample + 1000))
        {
          sample_limits (m);
          schedule_sample (m, false);
        }
      check_timers (m);
      if (m->shutting_down && now_ms_monotonic () >= m->shutdown_deadline)
        break;
    }
  sbx_cgroup_watch_close (&m->cg_watch);
  free (pf);
}

/* --copy-in: each tree into the mounted root before the runtime starts,
 * so that the first command (the initial one included) finds it whole. Not
 * on a restore: the snapshot's files hold it already. */
static int
copy_in (struct mon *m, sbx_error **err)
{
  char **specs = m->sb->restore_from ? NULL : m->sb->opts.copy_in;
  for (size_t i = 0; specs && specs[i]; i++)
    {
      sbx_copyin_stats cs = { 0 };
      uint64_t t0 = now_ms_monotonic ();
      if (sbx_copyin (m->root_fd, specs[i], &cs, err) < 0)
        return sbx_error_wrap (err, "copy-in `%s`", specs[i]);
      mon_log (m,
               "copy-in %s: %llu files, %llu directories, %llu symlinks, %llu bytes in %llu ms; %llu left out by "
               ".sbxignore, %llu skipped (device nodes, fifos, sockets)",
               specs[i], (unsigned long long) cs.files, (unsigned long long) cs.dirs, (unsigned long long) cs.links,
               (unsigned long long) cs.bytes, (unsigned long long) (now_ms_monotonic () - t0),
               (unsigned long long) cs.ignored, (unsigned long long) cs.skipped);
    }
  return 0;
}

/* A command's cwd when it names none: --cwd, else the image's WORKDIR (as
 * podman; an image's / is no WORKDIR), else /workspace where it is a
 * directory (sbx's bottom layer's, or the image's own; a file or symlink
 * the image put there is not used), else /. */
void
mon_choose_workdir (struct mon *m)
{
  const char *img = m->sb->image_workdir;
  struct stat st;
  if (m->sb->opts.cwd)
    m->workdir = m->sb->opts.cwd;
  else if (img && img[0] && strcmp (img, "/") != 0)
    m->workdir = img;
  else if (fstatat (m->root_fd, SBX_STORE_WORKSPACE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR (st.st_mode))
    m->workdir = "/" SBX_STORE_WORKSPACE;
  else
    m->workdir = "/";
}

static int
setup (struct mon *m, sbx_error **err)
{
  if (mkdir (m->run_dir, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", m->run_dir);
  if (mon_secrets_load (m, err) < 0)
    return -1;
  pthread_t disk_thread;
  bool disk_threaded = m->sb->opts.disk > 0 && thread_start_quiet (&disk_thread, mon_disk_attach, m) == 0;
  struct net_plan plan = { .hold = -1 };
  if (mon_net_plan (m, &plan, err) < 0)
    {
      if (disk_threaded)
        pthread_join (disk_thread, NULL);
      if (plan.hold >= 0)
        close (plan.hold);
      free (plan.allow);
      return -1;
    }
  /* The network is made meanwhile, by a thread that stays in the host's
   * mount namespace (its bind mount of the namespace lands there). */
  struct net_make_job job = { m, &plan };
  pthread_t net_thread;
  bool threaded = false;
  if (plan.make)
    {
      threaded = thread_start_quiet (&net_thread, mon_net_make, &job) == 0;
      if (!threaded)
        mon_net_make (&job);
    }
  /* The runtime's process is forked into the monitor's mount namespace,
   * which shows it the root mounted afterwards. */
  const char *step = "mount root";
  int r = mon_private_mount_ns (err);
  if (r == 0 && (r = mon_prepare_runtime (m, err)) < 0)
    step = "prepare the runtime";
  if (r == 0 && (r = mon_userns_begin (m, err)) < 0)
    step = "user namespace";
  if (disk_threaded)
    pthread_join (disk_thread, NULL);
  if (r == 0)
    r = mon_mount_root (m, err);
  /* From fds opened and checked here, in this namespace: what the user
   * named is bound, whatever a path became since create checked it. Then
   * the volumes, after them in the same list. */
  if (r == 0
      && (r = sbx_hostmounts_bind (m->sb->opts.mounts, m->conf, m->st, m->run_dir, &m->binds, &m->nbinds, err)) < 0)
    step = "host directories";
  if (r == 0 && (r = mon_mount_volumes (m, err)) < 0)
    step = "mount volumes";
  if (r == 0 && (r = mon_userns_binds (m, err)) < 0)
    step = "idmapped mounts";
  sbx_disk_att_clear (&m->disk_pre);
  if (threaded)
    pthread_join (net_thread, NULL);
  if (plan.hold >= 0)
    close (plan.hold);
  free (plan.allow);
  m->net = plan.net;
  if (r < 0)
    {
      sbx_error_free (plan.err);
      return sbx_error_wrap (err, "%s", step);
    }
  if (plan.err)
    {
      *err = plan.err;
      return sbx_error_wrap (err, "network");
    }
  if (mon_net_finish (m, err) < 0)
    return -1;
  _cleanup_free_ char *merged = xasprintf ("%s/rootfs", m->dir);
  m->root_fd = open (merged, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (m->root_fd < 0)
    return sbx_error_errno (err, errno, "open the merged root");
  if (copy_in (m, err) < 0)
    return -1;
  mon_choose_workdir (m);
  /* The mount point of --secret-file's tmpfs, made here (0755, resolved
   * inside the root) rather than by the runtime: runsc makes a missing
   * /run with mode 0777. */
  if (m->sb->opts.secret_files && m->sb->opts.secret_files[0]
      && sbx_fs_mkdir (m->root_fd, "/run/secrets", true, err) < 0)
    return sbx_error_wrap (err, "the mount point of the secret files");
  _cleanup_free_ char *bundle = xasprintf ("%s/bundle", m->dir);
  _cleanup_free_ char *ctr_cgroup = xasprintf ("%s/ctr", m->cgroup);
  /* The namespace by the monitor's own fd of it: its bind mount was made
   * in the host's mount namespace, which this one may not show. */
  _cleanup_free_ char *netns = m->net ? xasprintf ("/proc/%d/fd/%d", (int) getpid (), m->net->nsfd) : NULL;
  _cleanup_free_ char *resolv = m->resolver ? xasprintf ("%s/resolv.conf", m->dir) : NULL;
  _cleanup_free_ char *spec_root = xstrdup (merged), *sysfs = NULL;
  if (mon_userns_paths (m, &spec_root, &resolv, &sysfs, err) < 0)
    return sbx_error_wrap (err, "user namespace");
  sbx_spec_params sp = { .sb = m->sb,
                         .rootfs = spec_root,
                         .cgroup_path = ctr_cgroup,
                         .runtime = m->rt->name,
                         .netns_path = netns,
                         .resolv_conf = resolv,
                         .sysfs = sysfs,
                         .binds = m->binds,
                         .nbinds = m->nbinds,
                         .gpu = m->gpu };
  if (sbx_spec_write (&sp, bundle, err) < 0)
    return sbx_error_wrap (err, "write bundle");
  mon_log (m, "root mounted, bundle written: starting %s", m->rt->name);
  r = mon_runtime_go (m, err);
  if (r == 0)
    mon_secrets_ahead (m);
  close (m->agent_end);
  m->agent_end = -1;
  close (m->stderr_w);
  m->stderr_w = -1;
  mon_drain_stderr (m);
  if (r < 0)
    return -1;
  set_nonblock (m->agent_fd, true);
  if (mon_wait_hello (m, err) < 0 || mon_secrets_send (m, err) < 0)
    return -1;
  if (m->rt->own_cgroups && m->sb->opts.cpu > 0 && sbx_cgroup_set_cpu (m->cgroup, m->sb->opts.cpu, err) < 0)
    return sbx_error_wrap (err, "cpu limit");
  close (m->cgroup_hold);
  m->cgroup_hold = -1;
  mon_log (m, "%s started the container", m->rt->name);
  if (m->sb->restore_from)
    mon_restore_procs (m);
  if (mon_expose_create_ports (m, err) < 0 || mon_listen_control (m, err) < 0)
    return -1;
  if (mon_docker_start (m, err) < 0)
    return sbx_error_wrap (err, "docker");
  return start_cmd (m, err);
}

/* --- teardown ---------------------------------------------------------- */

/* The monitor goes into a cgroup of its own once the sandbox runs (and it
 * is single-threaded again): what it keeps of the sandbox's output counts
 * under sbx's cgroup, not against the sandbox's limits. It leaves it first
 * thing on the way out, so that whoever removes it never finds it there. */
static int
own_cgroup_enter (struct mon *m, sbx_error **err)
{
  m->own_cgroup = xasprintf ("%s" SBX_CGROUP_MONITOR_SUFFIX, m->cgroup);
  if (sbx_cgroup_enter (m->own_cgroup, &m->own_cgroup_back, err) < 0)
    return sbx_error_wrap (err, "the monitor's own cgroup");
  return 0;
}

static void
own_cgroup_leave (struct mon *m)
{
  if (m->own_cgroup_back)
    sbx_cgroup_leave (m->own_cgroup, m->own_cgroup_back);
  strv_free (m->own_cgroup_back);
  m->own_cgroup_back = NULL;
}

static void
teardown (struct mon *m)
{
  if (m->ending_fd < 0)
    m->ending_fd = sbx_teardown_begin (m->st, m->sb->id);
  mon_secrets_forget (m); /* a setup that failed before the agent had them */
  own_cgroup_leave (m);
  mon_drain_stderr (m);
  if (m->cgroup_hold >= 0)
    close (m->cgroup_hold); /* setup failed half-way */
  m->cgroup_hold = -1;
  mon_log (m, "tearing down%s", m->agent_gone ? " (init exited)" : "");
  sample_limits (m);
  _cleanup_error_ sbx_error *err = NULL;
  bool clean_exit = m->runtime_exited && WIFEXITED (m->runtime_status);
  if (m->runtime_pid > 0 && !m->runtime_exited)
    {
      kill (m->runtime_pid, SIGKILL);
      while (waitpid (m->runtime_pid, NULL, 0) < 0 && errno == EINTR)
        ;
      m->runtime_exited = true;
    }
  /* A foreground runtime that ran to its end deleted the container itself.
   * Of a detached runc whose init exited, what is left is its state
   * directory (the cgroups are ours and go below): `runc delete` would only
   * remove that, at the cost of starting runc again. */
  if (m->rt && clean_exit && mon_runtime_detached (m))
    {
      _cleanup_free_ char *state = xasprintf ("%s/%s", m->rt->state_root, m->sb->id);
      rm_rf (state, NULL);
    }
  else if (m->rt && !clean_exit && sbx_runtime_destroy (m->rt, m->sb->id, true, &err) < 0)
    mon_log (m, "delete container: %s", err->msg);
  sbx_error_free (err);
  err = NULL;
  mon_log (m, "container deleted");
  if (sbx_cgroup_remove (m->cgroup, &err) < 0)
    mon_log (m, "%s", err->msg);
  sbx_store_cgroup_release_parent (m->st);
  sbx_error_free (err);
  err = NULL;
  sbx_proxy_free (m->proxy);
  m->proxy = NULL;
  sbx_resolver_free (m->resolver);
  m->resolver = NULL;
  free (m->dom_seen);
  m->dom_seen = NULL;
  m->ndom_seen = 0;
  if (m->net)
    {
      sbx_net_teardown (m->net);
      m->net = NULL;
      mon_log (m, "network removed");
    }
  strv_free (m->sb->urls);
  m->sb->urls = NULL;
  /* The host directories and volumes first: removing the run directory
   * must never reach into one (a bind on the same filesystem looks like a
   * directory). */
  size_t nmounts = m->sb->opts.mounts ? strv_len (m->sb->opts.mounts) : 0;
  bool unbound = sbx_hostmounts_unbind (m->run_dir, nmounts) == 0;
  if (mon_umount_volumes (m) < 0)
    unbound = false;
  sbx_spec_binds_free (m->binds, m->nbinds);
  m->binds = NULL;
  m->nbinds = 0;
  if (m->gpu)
    sbx_cdi_edits_clear (m->gpu);
  free (m->gpu);
  m->gpu = NULL;
  if (unbound)
    rm_rf (m->run_dir, NULL);
  else
    mon_log (m, "a host directory or volume could not be unmounted: %s is left for its namespace to take", m->run_dir);
  /* The overlay lives in our private mount namespace and would go with us;
   * unmounting it now lets the final state mean "nothing is left". */
  _cleanup_free_ char *rootfs = xasprintf ("%s/rootfs", m->dir);
  if (m->root_fd >= 0)
    close (m->root_fd);
  m->root_fd = -1;
  umount2 (rootfs, MNT_DETACH);
  mon_userns_end (m);
}

/* sbx run --rm: the sandbox's files go once its final state is written
 * (its lock is ours, held until the end). The disk's mount goes first: it
 * is in this namespace alone. */
static void
remove_sandbox (struct mon *m)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (m->sb->opts.disk > 0)
    {
      _cleanup_free_ char *disk = xasprintf ("%s/disk", m->dir);
      umount2 (disk, MNT_DETACH);
    }
  /* A file call (sbx fs) may hold the files a moment: wait for it (10 s at
   * most), then leave them to sbx rm or gc. */
  for (int tries = 0; tries < 100; tries++)
    {
      sbx_error_free (err);
      err = NULL;
      if (sbx_sandbox_remove_files (m->st, m->sb, &err) == 0 || err->code != SBX_E_BUSY)
        break;
      usleep (100000);
    }
  if (err)
    mon_log (m, "--rm: %s", err->msg);
}

static void
finish (struct mon *m, sbx_state state, const char *reason, const char *error)
{
  teardown (m);
  /* A sandbox that ended by itself after hitting a limit failed by it. The
   * event counters live in the runtime's cgroup and can vanish with it when
   * the limit kills the whole sandbox (gVisor); the peaks of sbx's own
   * cgroup, which outlives it, still show the limit was reached. */
  if (state == SBX_STATE_TERMINATED && strcmp (reason, SBX_REASON_EXIT) == 0)
    {
      uint64_t mem = m->sb->opts.memory;
      if (m->sb->oom_kills == 0 && mem > 0 && (uint64_t) m->sb->memory_peak + (2u << 20) >= mem)
        m->sb->oom_kills = 1;
      if (m->sb->pids_limit_hits == 0 && m->pids_host_limit > 0 && m->pids_peak >= m->pids_host_limit)
        m->sb->pids_limit_hits = 1;
      if (m->sb->oom_kills > 0)
        state = SBX_STATE_FAILED, error = "out of memory: the sandbox's memory limit was hit";
      else if (m->sb->pids_limit_hits > 0)
        state = SBX_STATE_FAILED, error = "the sandbox's process limit was hit";
    }
  m->sb->state = state;
  free (m->sb->reason);
  m->sb->reason = xstrdup (reason);
  free (m->sb->error);
  m->sb->error = error ? xstrdup (error) : NULL;
  m->sb->ended_at = now_unix ();
  mon_save_state (m);
  mon_log (m, "%s (%s)%s%s", sbx_state_name (state), reason, error ? ": " : "", error ? error : "");
  sbx_log_finish (&m->slog);
  if (m->remove_at_end)
    remove_sandbox (m);
  sbx_teardown_end (m->st, m->sb->id, m->ending_fd);
  m->ending_fd = -1;
  /* Everything is gone and recorded: whoever waits on the lock may go on
   * before this process has finished exiting. The lock goes first, so that
   * a client woken by its connection closing finds it free at once. */
  close (m->lock_fd);
  for (size_t i = 0; i < m->nclients; i++)
    close (m->clients[i]->fd);
}

static void
report (int sync_fd, int code, int errnum, const char *msg)
{
  struct sync_msg s = { .code = code, .errnum = errnum };
  snprintf (s.msg, sizeof s.msg, "%s", msg ? msg : "");
  write_all (sync_fd, &s, sizeof s);
  close (sync_fd);
}

static int
block_signals (struct mon *m)
{
  sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, SIGCHLD);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  sigprocmask (SIG_BLOCK, &set, NULL);
  signal (SIGPIPE, SIG_IGN);
  signal (SIGHUP, SIG_IGN);
  m->sig_fd = signalfd (-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  return m->sig_fd < 0 ? -1 : 0;
}

static void __attribute__ ((noreturn)) monitor_main (const sbx_store *st, sbx_sandbox *sb, int lock_fd, int sync_fd)
{
  struct mon mm = { .st = st,
                    .sb = sb,
                    .disk_pre = SBX_DISK_ATT_INIT,
                    .agent_fd = -1,
                    .listen_fd = -1,
                    .lock_fd = lock_fd,
                    .root_fd = -1,
                    .cgroup_hold = -1,
                    .stderr_r = -1,
                    .stderr_w = -1,
                    .agent_end = -1,
                    .go_w = -1,
                    .ready_r = -1,
                    .host_netns = -1,
                    .block_nsfd = -1,
                    .ending_fd = -1,
                    .userns_lease = -1,
                    .userns_fd = -1 };
  struct mon *m = &mm;
  m->next_chan = sb->chan_base > 0 && sb->chan_base < (1LL << 31) ? (uint32_t) sb->chan_base : 0;
  m->dir = sbx_sandbox_dir (st, sb->id);
  m->run_dir = sbx_sandbox_run_dir (st, sb->id);
  m->cgroup = sbx_store_cgroup_path (st, sb->id);
  _cleanup_free_ char *logp = xasprintf ("%s/log", m->dir);
  sbx_log_init (&m->slog, open (logp, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  int keep[] = { lock_fd, sync_fd, m->slog.fd };
  close_fds_except (keep, ARRAY_SIZE (keep));
  int null = open ("/dev/null", O_RDWR);
  dup2 (null, 0);
  dup2 (null, 1);
  dup2 (null, 2);
  if (null > 2)
    close (null);
  prctl (PR_SET_NAME, "sbx-monitor");
  /* Buffers from 16 KiB up (the larger output logs) are mapped on their
   * own, so that a log that shrinks or goes gives its memory back: glibc's
   * sliding threshold would move them into the heap, where freed memory
   * stays. */
  mallopt (M_MMAP_THRESHOLD, 16 * 1024);
  /* Its clients, the resolver's and the proxy's sockets and pipes (four fds
   * per proxied connection) need more than the usual soft limit. */
  struct rlimit nofile;
  if (getrlimit (RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max)
    {
      nofile.rlim_cur = nofile.rlim_max < 16384 ? nofile.rlim_max : 16384;
      setrlimit (RLIMIT_NOFILE, &nofile);
    }
  prctl (PR_SET_CHILD_SUBREAPER, 1);
  sbx_spawn_reap_all (true);
  block_signals (m);
  /* Recorded with the running state (or the failed one): while it is
   * creating, the lock, not the pid, says whether this monitor lives. */
  sb->monitor_pid = getpid ();
  mon_log (m, "monitor %d: starting %s on %s", getpid (), sb->id, sb->opts.runtime);

  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_runtime_find (st, sb->opts.runtime, &m->rt, &err) < 0 || setup (m, &err) < 0 || own_cgroup_enter (m, &err) < 0
      || sbx_caps_drop_monitor (&err) < 0)
    {
      _cleanup_free_ char *text = sbx_error_text (err);
      finish (m, SBX_STATE_FAILED, SBX_REASON_ERROR, text);
      report (sync_fd, err->code, err->errnum, err->msg);
      _exit (1);
    }
  sb->state = SBX_STATE_RUNNING;
  sb->started_at = now_unix ();
  /* A pool's parked member has no lifetime until it is claimed
   * (monitor-pool.c starts them). */
  sb->deadline = sb->parked ? 0 : sb->started_at + sb->opts.timeout;
  mon_save_state (m);
  mon_log (m, sb->parked ? "running, parked in pool %s" : "running", sb->opts.pool);
  mon_touch (m);
  m->deadline = sb->parked ? UINT64_MAX : now_ms_monotonic () + (uint64_t) sb->opts.timeout * 1000;
  report (sync_fd, 0, 0, NULL);

  run_loop (m);
  if (m->shutting_down)
    finish (m, m->end_state, m->end_reason, NULL);
  else
    finish (m, SBX_STATE_TERMINATED, SBX_REASON_EXIT, NULL);
  _exit (0);
}

int
sbx_monitor_spawn (const sbx_store *st, sbx_sandbox *sb, int lock_fd, sbx_error **err)
{
  /* Both ends close on every way out, a failed fork's included. */
  _cleanup_pipe_ int p[2] = SBX_PIPE_INIT;
  if (pipe2 (p, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    return sbx_error_errno (err, errno, "fork");
  if (pid == 0)
    {
      close (steal_fd (&p[0]));
      setsid ();
      pid_t mp = fork ();
      if (mp != 0)
        _exit (mp < 0 ? 1 : 0);
      monitor_main (st, sb, lock_fd, steal_fd (&p[1]));
    }
  close (steal_fd (&p[1]));
  int status;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  struct sync_msg s;
  ssize_t n = read_all (p[0], &s, sizeof s);
  if (n != (ssize_t) sizeof s)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the monitor of %s exited during start", sb->id);
  if (s.code != 0)
    {
      s.msg[sizeof s.msg - 1] = '\0';
      return sbx_error_set (err, (sbx_code) s.code, s.errnum, "%s", s.msg);
    }
  return 0;
}
