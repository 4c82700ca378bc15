/* The per-sandbox monitor: setup, the control loop, lifetimes, teardown.
 *
 * Shape (after conmon): the CLI double-forks; the monitor calls setsid,
 * becomes a child subreaper (so the container's init, once the runtime's
 * `run --detach` returns, is its child), moves into a private mount
 * namespace (so the overlay root vanishes with it, whatever kills it), and
 * reports success or the error that stopped it over a CLOEXEC pipe. Then one
 * poll loop serves the agent socket, the control socket's clients and a
 * signalfd; no client can stall it: every fd is nonblocking and output to a
 * client is bounded by the agent's flow-control window. */
#include "config.h"
#include "monitor.h"
#include "disk.h"
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

#define HELLO_TIMEOUT_MS 60000
#define SHUTDOWN_GRACE_MS 2000
#define MAX_CLIENTS 1024
#define AGENT_OUT_MAX (4u << 20)
#define REQUEST_MAX 65536
/* Background processes: the newest output kept of each, and how many ended
 * processes are remembered (with their output) once they are gone. All of
 * a sandbox's logs share PROC_OUTPUT_BUDGET bytes of buffers (proc_log_push),
 * so that the monitor's memory stays bounded however many processes print. */
#define PROC_LOG_CAP (1u << 20)
#define PROC_OUTPUT_BUDGET (16u << 20)
#define PROCS_ENDED_MAX 64
#define PROC_CMD_MAX 1024
/* A follower is fed from the log while its socket buffer has room. */
#define FOLLOW_QUEUE_MAX (256u * 1024)
/* Poll slots for the resolver's and the port proxy's sockets. */
#define RESOLVER_FDS_MAX SBX_RESOLVER_POLLFDS_MAX
#define PROXY_FDS_MAX SBX_PROXY_POLLFDS_MAX
#define EXPOSED_MAX 64

struct sync_msg {
  int32_t code;
  int32_t errnum;
  char msg[2048];
};

struct buf {
  unsigned char *data;
  size_t len, cap;
};

/* A process started through the exec API: the monitor's process table.
 * Attached ones stream to their caller; detached ones (exec -d) keep their
 * output here, in a bounded log that readers follow by offset. */
struct proc {
  uint32_t chan;
  uint32_t pid; /* inside the sandbox; 0 until it started */
  char *cmd;    /* argv joined, bounded */
  bool detached, tty, ended, timed_out;
  int32_t exit_code, signal;
  int64_t started_at, ended_at;
  uint64_t seq; /* order of creation */
  uint64_t output_bytes; /* all it printed, kept or dropped */
  sbx_ring log;
};

enum watch { WATCH_NONE, WATCH_WAIT, WATCH_FOLLOW, WATCH_LOGS };

struct client {
  int fd;
  struct sbx_frame_reader rd;
  struct buf out;
  uint32_t chan;        /* the agent channel of its exec, 0 if none */
  size_t uncredited;    /* output bytes queued to it, not yet credited */
  int64_t stdin_window; /* stdin bytes the agent will still take */
  bool exec_done;
  bool closing;         /* close once OUT is flushed */
  /* proc wait / proc logs: the process watched, the log offset reached. */
  enum watch watch;
  uint32_t watch_chan;
  uint64_t log_off;
  uint64_t wait_deadline; /* 0: none */
};

struct mon {
  const sbx_store *st;
  sbx_sandbox *sb;
  sbx_disk_att disk_pre; /* the disk's loop device, bound by a thread during setup */
  sbx_runtime *rt;
  char *dir, *run_dir, *cgroup;
  /* The monitor's own cgroup (cgroup.h), while it is in it, and where it
   * came from. */
  char *own_cgroup;
  char **own_cgroup_back;
  int agent_fd, listen_fd, sig_fd;
  sbx_log slog; /* the sandbox's log, bounded (sblog.h) */
  struct sbx_frame_reader ard;
  struct buf aout;
  struct client *clients[MAX_CLIENTS];
  size_t nclients;
  struct proc **procs;
  size_t nprocs;
  uint64_t proc_seq;
  uint32_t next_chan;
  uint32_t end_chan; /* the exec whose end ends the sandbox (sbx run), 0: none */
  bool end_orphaned; /* its caller went away and sbx killed it: the end is `killed` */
  int active_execs;
  uint64_t last_activity, deadline, shutdown_deadline;
  bool agent_gone, shutting_down;
  pid_t runtime_pid;      /* `RUNTIME run`, in the foreground for the sandbox's life */
  bool runtime_exited;
  int runtime_status;
  uint64_t agent_gone_at;
  int lock_fd;
  int root_fd; /* O_PATH of the merged root, handed to `sbx fs` calls */
  int cgroup_hold; /* shared lock on the parent cgroup, until the runtime has made ours */
  int stderr_r, stderr_w; /* the runtime's and the init's stderr: a pipe into the log */
  int agent_end;          /* the init's end of the agent's socketpair, until the runtime has it */
  int go_w, ready_r;      /* the runtime's process before its exec (runtime_fork) */
  uint64_t next_sample;
  int64_t pids_peak, pids_host_limit;
  sbx_state end_state;
  const char *end_reason;
  /* The network (net.h); NULL under runsc --block-network, where gVisor
   * has no interface at all. */
  sbx_conf *conf;
  sbx_net *net;
  int host_netns; /* the monitor's own network namespace, to come back to */
  int block_nsfd; /* runc --block-network: the namespace runc made, once opened */
  sbx_resolver *resolver;
  sbx_proxy *proxy;
  struct relay **relays;
  size_t nrelays;
};

const char *
sbx_init_path (void)
{
  const char *e = getenv ("SBX_INIT");
  return e && *e ? e : SBX_LIBEXECDIR "/sbx-init";
}

static void
mlog (struct mon *m, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
static void
mlog (struct mon *m, const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  va_start (ap, fmt);
  int n = vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  sbx_log_line (&m->slog, SBX_LOG_MONITOR, line, n < 0 ? 0 : (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
}

/* --- buffers and frames ------------------------------------------------ */

static void
buf_append (struct buf *b, const void *p, size_t n)
{
  if (b->len + n > b->cap)
    {
      b->cap = (b->len + n) * 2;
      b->data = xrealloc (b->data, b->cap);
    }
  memcpy (b->data + b->len, p, n);
  b->len += n;
}

static void
buf_frame (struct buf *b, uint16_t type, uint32_t chan, const void *payload, size_t len)
{
  unsigned char hdr[SBX_PROTO_HDR_SIZE];
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = type, .chan = chan };
  sbx_frame_hdr_encode (hdr, &h);
  buf_append (b, hdr, sizeof hdr);
  if (len)
    buf_append (b, payload, len);
}

/* Writes what the socket takes; returns -1 on a dead peer. */
static int
buf_flush (struct buf *b, int fd)
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

/* Sends a frame to a client straight from the agent's buffer when nothing
 * is queued before it (the common case: no copy); queues what the socket
 * does not take. */
static void
client_send_frame (struct client *c, uint16_t type, const void *p, size_t n)
{
  if (c->out.len > 0)
    {
      buf_frame (&c->out, type, 0, p, n);
      return;
    }
  unsigned char hdr[SBX_PROTO_HDR_SIZE];
  struct sbx_frame_hdr h = { .len = (uint32_t) n, .type = type, .chan = 0 };
  sbx_frame_hdr_encode (hdr, &h);
  struct iovec iov[2] = { { hdr, sizeof hdr }, { (void *) p, n } };
  struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n ? 2 : 1 };
  ssize_t w;
  do
    w = sendmsg (c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (w < 0 && errno == EINTR);
  if (w < 0)
    w = 0; /* EAGAIN, or a dead peer that the next flush finds */
  size_t done = (size_t) w;
  if (done < sizeof hdr)
    {
      buf_append (&c->out, hdr + done, sizeof hdr - done);
      done = 0;
    }
  else
    done -= sizeof hdr;
  if (done < n)
    buf_append (&c->out, (const unsigned char *) p + done, n - done);
}

static void
to_agent (struct mon *m, uint16_t type, uint32_t chan, const void *p, size_t n)
{
  if (m->agent_gone)
    return;
  buf_frame (&m->aout, type, chan, p, n);
  if (buf_flush (&m->aout, m->agent_fd) < 0)
    m->agent_gone = true;
}

static void
reply_json (struct client *c, const char *json)
{
  buf_frame (&c->out, SBX_MSG_REPLY, 0, json, strlen (json));
}

/* A reply of one integer field: {KEY: V}. */
static void
reply_int (struct client *c, const char *key, long long v)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, key, v);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  reply_json (c, s);
}

static void
reply_error (struct client *c, sbx_code code, const char *msg)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_str (g, "error");
  j_map (g);
  j_kstr (g, "code", sbx_code_name (code));
  j_kstr (g, "message", msg);
  j_endmap (g);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  reply_json (c, s);
  c->closing = true;
}

/* --- state ------------------------------------------------------------- */

static void sample_limits (struct mon *m);

static void
save_state (struct mon *m)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_sandbox_save (m->st, m->sb, &err) < 0)
    mlog (m, "save state: %s", err->msg);
}

static void
touch (struct mon *m)
{
  m->last_activity = now_ms_monotonic ();
}

/* The runtime's pause or resume of the whole sandbox. */
static int
set_paused (struct mon *m, bool pause, sbx_error **err)
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
  mlog (m, pause ? "paused" : "resumed");
  save_state (m);
  touch (m);
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

static void
begin_shutdown (struct mon *m, sbx_state final, const char *reason)
{
  if (m->shutting_down)
    return;
  /* A frozen sandbox cannot act on its end: thaw it first. */
  if (m->sb->paused && set_paused (m, false, NULL) < 0)
    mlog (m, "could not resume the paused sandbox to end it");
  m->shutting_down = true;
  m->end_state = final;
  m->end_reason = reason;
  m->shutdown_deadline = now_ms_monotonic () + SHUTDOWN_GRACE_MS;
  sample_limits (m);
  m->sb->state = SBX_STATE_TERMINATING;
  save_state (m);
  mlog (m, "terminating: %s", reason);
  to_agent (m, SBX_MSG_SHUTDOWN, 0, NULL, 0);
}

/* --- clients ----------------------------------------------------------- */

static struct client *
client_by_chan (struct mon *m, uint32_t chan)
{
  for (size_t i = 0; i < m->nclients; i++)
    if (m->clients[i]->chan == chan && !m->clients[i]->exec_done)
      return m->clients[i];
  return NULL;
}

static void
client_free (struct mon *m, size_t i)
{
  struct client *c = m->clients[i];
  if (c->chan && !c->exec_done)
    {
      /* The caller went away: its command must not run on unobserved. */
      uint32_t sig = SIGKILL;
      to_agent (m, SBX_MSG_SIGNAL, c->chan, &sig, sizeof sig);
      if (c->chan == m->end_chan)
        m->end_orphaned = true;
    }
  close (c->fd);
  free (c->out.data);
  free (c);
  m->clients[i] = m->clients[--m->nclients];
}


/* --- the process table ------------------------------------------------- */

static struct proc *
proc_by_chan (struct mon *m, uint32_t chan)
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

static void
proc_new (struct mon *m, uint32_t chan, char *const *argv, bool detached, bool tty)
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
  touch (m);
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
static struct proc *
proc_frame (struct mon *m, struct proc *p, const struct sbx_frame_hdr *h, const unsigned char *data)
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
          to_agent (m, SBX_MSG_CREDIT, h->chan, &n, sizeof n);
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
            touch (m);
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

/* One process as JSON: as `sbx ps` and `sbx proc` show it (PROC_VIEW), or
 * as a snapshot keeps it for a restored monitor (PROC_SAVED, read back by
 * restore_procs). */
enum proc_form { PROC_VIEW, PROC_SAVED };

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
      j_endmap (g);
      return;
    }
  j_kint (g, "pid", p->pid);
  j_kstr (g, "command", p->cmd);
  j_kstr (g, "state", p->pid == 0 ? "starting" : p->ended ? "exited" : "running");
  j_kbool (g, "background", p->detached);
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
static void
procs_json (yajl_gen g, const struct mon *m, enum proc_form form)
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
  reply_json (c, s);
  c->closing = true;
  c->watch = WATCH_NONE;
}

static void
handle_ps (struct mon *m, struct client *c)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_str (g, "processes");
  procs_json (g, m, PROC_VIEW);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  reply_json (c, s);
  c->closing = true;
}

/* proc_status, proc_wait, proc_kill, proc_logs: {"op", "pid", ...}. */
static void
handle_proc (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  static const char *const keys[] = { "op", "pid", "timeout_ms", "signal", "follow", NULL };
  _cleanup_error_ sbx_error *err = NULL;
  int64_t pid = 0, timeout = 0, sig = SIGKILL;
  bool follow = false;
  if (j_check_keys (req, keys, "process request", &err) < 0 || j_get_int (req, "pid", true, &pid, &err) < 0
      || j_get_int (req, "timeout_ms", false, &timeout, &err) < 0 || j_get_int (req, "signal", false, &sig, &err) < 0
      || j_get_bool (req, "follow", false, &follow, &err) < 0)
    {
      reply_error (c, err->code, err->msg);
      return;
    }
  struct proc *p = proc_by_pid (m, pid);
  if (p == NULL)
    {
      _cleanup_free_ char *msg = xasprintf ("no process %lld was started in this sandbox (see `sbx ps`)", (long long) pid);
      reply_error (c, SBX_E_NOT_FOUND, msg);
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
        reply_error (c, SBX_E_INVALID_ARGUMENT, "signal out of range");
      else if (p->ended)
        {
          _cleanup_free_ char *msg = xasprintf ("process %lld has already exited", (long long) pid);
          reply_error (c, SBX_E_INVALID_ARGUMENT, msg);
        }
      else
        {
          uint32_t s32 = (uint32_t) sig;
          to_agent (m, SBX_MSG_SIGNAL, p->chan, &s32, sizeof s32);
          reply_json (c, "{\"ok\":true}");
          c->closing = true;
        }
    }
  else if (!p->detached)
    {
      _cleanup_free_ char *msg
          = xasprintf ("process %lld runs attached to its caller: its output goes there, not to a log", (long long) pid);
      reply_error (c, SBX_E_INVALID_ARGUMENT, msg);
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
static void
serve_watch (struct mon *m, struct client *c)
{
  static unsigned char rec[SBX_PROTO_MAX_PAYLOAD];
  if (c->watch == WATCH_NONE || c->closing)
    return;
  struct proc *p = proc_by_chan (m, c->watch_chan);
  if (p == NULL)
    {
      reply_error (c, SBX_E_NOT_FOUND, "the process has left the process table");
      return;
    }
  if (c->watch == WATCH_WAIT)
    {
      if (p->ended)
        reply_proc (c, p);
      else if (c->wait_deadline && now_ms_monotonic () >= c->wait_deadline)
        {
          _cleanup_free_ char *msg = xasprintf ("process %u did not exit in time", p->pid);
          reply_error (c, SBX_E_TIMEOUT, msg);
        }
      return;
    }
  uint8_t type;
  ssize_t n;
  while (c->out.len < FOLLOW_QUEUE_MAX && (n = sbx_ring_read (&p->log, &c->log_off, &type, rec, sizeof rec)) >= 0)
    buf_frame (&c->out, type, 0, rec, (size_t) n);
  if (c->log_off >= p->log.end && (c->watch == WATCH_LOGS || p->ended))
    reply_proc (c, p);
}

/* Merges image env, sandbox env, then the exec's own; later keys win. */
static char **
merge_env (const sbx_sandbox *sb, char **extra)
{
  char **layers[] = { sb->image_env, sb->opts.env, extra };
  char **out = xmalloc0 (sizeof (char *));
  for (size_t l = 0; l < ARRAY_SIZE (layers); l++)
    for (size_t i = 0; layers[l] && layers[l][i]; i++)
      {
        const char *e = layers[l][i];
        size_t kl = (size_t) (strchr (e, '=') - e);
        bool replaced = false;
        for (size_t k = 0; out[k] && !replaced; k++)
          if (strncmp (out[k], e, kl + 1) == 0)
            {
              free (out[k]);
              out[k] = xstrdup (e);
              replaced = true;
            }
        if (!replaced)
          strv_push (&out, e);
      }
  return out;
}

static int
handle_exec (struct mon *m, struct client *c, yajl_val req, sbx_error **err)
{
  static const char *const keys[] = { "op", "argv", "env", "cwd", "user", "tty", "stdin", "detach",
                                      "timeout_ms", "rows", "cols", "end", NULL };
  _cleanup_strv_ char **argv = NULL, **env = NULL, **full_env = NULL;
  const char *cwd = NULL, *user = NULL;
  bool tty = false, in = false, detach = false, end = false;
  int64_t timeout = 0, rows = 0, cols = 0;
  if (j_check_keys (req, keys, "exec request", err) < 0 || j_get_strv (req, "argv", true, &argv, err) < 0
      || j_get_strv (req, "env", false, &env, err) < 0 || j_get_str (req, "cwd", false, &cwd, err) < 0
      || j_get_str (req, "user", false, &user, err) < 0 || j_get_bool (req, "tty", false, &tty, err) < 0
      || j_get_bool (req, "stdin", false, &in, err) < 0 || j_get_bool (req, "detach", false, &detach, err) < 0
      || j_get_int (req, "timeout_ms", false, &timeout, err) < 0 || j_get_int (req, "rows", false, &rows, err) < 0
      || j_get_int (req, "cols", false, &cols, err) < 0 || j_get_bool (req, "end", false, &end, err) < 0)
    return -1;
  if (argv[0] == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: empty command");
  for (size_t i = 0; env && env[i]; i++)
    if (!env_entry_is_valid (env[i]))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid environment entry `%s`", env[i]);
  if (cwd == NULL)
    cwd = m->sb->opts.cwd ? m->sb->opts.cwd : m->sb->image_workdir;
  full_env = merge_env (m->sb, env);
  uint32_t flags = (tty ? SBX_EXEC_F_TTY : 0) | (in ? SBX_EXEC_F_STDIN : 0) | (detach ? SBX_EXEC_F_DETACH : 0);
  _cleanup_free_ unsigned char *payload = xmalloc (SBX_PROTO_MAX_PAYLOAD);
  int n = sbx_exec_encode (payload, SBX_PROTO_MAX_PAYLOAD, argv, full_env, cwd, user, flags,
                           timeout > 0 ? (uint64_t) timeout : 0, (uint16_t) rows, (uint16_t) cols);
  if (n < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: command and environment exceed %d bytes",
                          SBX_PROTO_MAX_PAYLOAD);
  if (detach && in)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: a background command (-d) takes no stdin (-i)");
  if (detach && end)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: a background command cannot end the sandbox");
  c->chan = ++m->next_chan;
  if (end)
    m->end_chan = c->chan;
  c->stdin_window = SBX_PROTO_WINDOW;
  proc_new (m, c->chan, argv, detach, tty);
  to_agent (m, SBX_MSG_EXEC, c->chan, payload, (size_t) n);
  return 0;
}

/* `sbx snapshot`: runsc checkpoints the sandbox into PATH and ends it;
 * what it ran and its memory come back with `sbx restore`. The reply
 * carries the next exec channel, so that a restored monitor does not reuse
 * the ids of the processes the restored agent still has. */
static void
handle_snapshot (struct mon *m, struct client *c, yajl_val req)
{
  const char *path = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  if (j_get_str (req, "path", true, &path, &err) < 0 || path[0] != '/')
    {
      reply_error (c, SBX_E_INVALID_ARGUMENT, "snapshot: an absolute path is required");
      return;
    }
  if (strcmp (m->rt->name, "runsc") != 0)
    {
      reply_error (c, SBX_E_RUNTIME_UNAVAILABLE,
                   "snapshots need runsc: runc would need CRIU, which this host's sbx does not use");
      return;
    }
  if (m->net)
    {
      reply_error (c, SBX_E_RUNTIME_UNAVAILABLE,
                   "this runsc cannot checkpoint a sandbox on the host network stack: snapshots need a sandbox "
                   "created with --block-network");
      return;
    }
  if (m->sb->paused && set_paused (m, false, &err) < 0)
    {
      reply_error (c, err->code, err->msg);
      return;
    }
  const char *args[] = { "--image-path", path, m->sb->id, NULL };
  _cleanup_free_ char *errtext = NULL;
  int st = sbx_runtime_call (m->rt, "checkpoint", args, &errtext, &err);
  if (st != 0)
    {
      _cleanup_free_ char *msg = xasprintf ("runsc checkpoint failed: %s", err ? err->msg : errtext ? errtext : "");
      reply_error (c, SBX_E_INTERNAL, msg);
      return;
    }
  mlog (m, "checkpointed into %s", path);
  /* The process table goes into the snapshot: a restored monitor knows
   * what the restored agent runs (sbx ps, proc wait, logs from then on). */
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kbool (g, "ok", true);
  j_kint (g, "next_chan", m->next_chan + 1);
  j_str (g, "procs");
  procs_json (g, m, PROC_SAVED);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  reply_json (c, s);
  c->closing = true;
  begin_shutdown (m, SBX_STATE_TERMINATED, "snapshot");
}

/* `sbx fs`: the merged root as an O_PATH fd (SCM_RIGHTS with the reply);
 * the CLI resolves every path beneath it with openat2(RESOLVE_IN_ROOT). */
static void
handle_rootfd (struct mon *m, struct client *c)
{
  if (m->root_fd < 0 || c->out.len > 0)
    {
      reply_error (c, SBX_E_SANDBOX_NOT_RUNNING, "the sandbox's root is not mounted");
      return;
    }
  static const char reply[] = "{\"ok\":true}";
  unsigned char frame[SBX_PROTO_HDR_SIZE + sizeof reply - 1];
  struct sbx_frame_hdr h = { .len = sizeof reply - 1, .type = SBX_MSG_REPLY };
  sbx_frame_hdr_encode (frame, &h);
  memcpy (frame + SBX_PROTO_HDR_SIZE, reply, sizeof reply - 1);
  union
  {
    struct cmsghdr h;
    char buf[CMSG_SPACE (sizeof (int))];
  } cm = { 0 };
  struct iovec iov = { frame, sizeof frame };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf };
  struct cmsghdr *cmsg = CMSG_FIRSTHDR (&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (cmsg), &m->root_fd, sizeof (int));
  /* A fresh connection's buffer takes a 30-byte frame whole. */
  ssize_t w;
  do
    w = sendmsg (c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (w < 0 && errno == EINTR);
  if (w > 0 && (size_t) w < sizeof frame)
    buf_append (&c->out, frame + w, sizeof frame - (size_t) w);
  c->closing = true;
}

static void
handle_ttl (struct mon *m, struct client *c, yajl_val req)
{
  int64_t secs = -1;
  if (j_get_int (req, "seconds", true, &secs, NULL) < 0 || secs < 1 || secs > SBX_TIMEOUT_MAX)
    {
      reply_error (c, SBX_E_INVALID_ARGUMENT, "ttl: seconds must be between 1 and 86400");
      return;
    }
  m->deadline = now_ms_monotonic () + (uint64_t) secs * 1000;
  m->sb->deadline = now_unix () + secs;
  save_state (m);
  reply_int (c, "deadline", m->sb->deadline);
  c->closing = true;
}

/* --- network ----------------------------------------------------------- */

static void
set_net_mode (struct mon *m, const char *mode, char *const *allow)
{
  free (m->sb->net_mode);
  m->sb->net_mode = xstrdup (mode);
  strv_free (m->sb->net_allow);
  m->sb->net_allow = strv_dup (allow);
}

/* A stream socket made inside the sandbox's network namespace, connecting
 * to its loopback: reaches a server that listens on 127.0.0.1 as well as
 * one on 0.0.0.0. The monitor is single-threaded: it steps into the
 * namespace for the socket() call and straight back. With no namespace of
 * ours: under runc --block-network, the one runc made; under runsc
 * --block-network (gVisor's own loopback) the agent relays. */
static int relay_open (struct mon *m, uint16_t port, sbx_error **err);
static bool runtime_detached (const struct mon *m);

static int
proxy_connect (void *data, uint16_t port, sbx_error **err)
{
  struct mon *m = data;
  int nsfd = m->net ? m->net->nsfd : -1;
  if (nsfd < 0 && !runtime_detached (m))
    return relay_open (m, port, err);
  if (nsfd < 0)
    {
      /* runc --block-network: the namespace runc made (loopback only), by
       * the container's init. */
      if (m->block_nsfd < 0 && m->runtime_pid > 0)
        {
          _cleanup_free_ char *path = xasprintf ("/proc/%d/ns/net", (int) m->runtime_pid);
          m->block_nsfd = open (path, O_RDONLY | O_CLOEXEC);
        }
      if (m->block_nsfd < 0)
        return sbx_error_errno (err, errno, "open the sandbox's network namespace");
      nsfd = m->block_nsfd;
    }
  if (setns (nsfd, CLONE_NEWNET) < 0)
    return sbx_error_errno (err, errno, "enter the sandbox's network namespace");
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int e = errno;
  if (setns (m->host_netns, CLONE_NEWNET) < 0)
    abort (); /* never stay in the sandbox's namespace */
  if (fd < 0)
    return sbx_error_errno (err, e, "socket");
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons (port), .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0 && errno != EINPROGRESS)
    {
      e = errno;
      close (fd);
      return sbx_error_errno (err, e, "connect to port %u", port);
    }
  return fd;
}

static int
expose_port (struct mon *m, int64_t port, char **ret_url, sbx_error **err)
{
  if (port < 1 || port > 65535)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "port %lld is not in 1..65535", (long long) port);
  if (m->proxy == NULL)
    {
      _cleanup_free_ char *token = NULL;
      _cleanup_free_ char *tpath = sbx_store_path (m->st, "token");
      if (!m->sb->opts.public_ports && sbx_token_load (tpath, &token, err) < 0)
        return -1;
      m->proxy = sbx_proxy_new (token, proxy_connect, m);
      sbx_proxy_set_head_timeout (m->proxy, m->conf->expose_head_timeout_ms);
    }
  size_t have = strv_len (m->sb->urls);
  uint16_t hport = 0;
  if (sbx_proxy_listen (m->proxy, m->conf->expose_address, 0, (uint16_t) port, &hport, err) < 0)
    return -1;
  const char *host = m->conf->expose_host ? m->conf->expose_host : m->conf->expose_address;
  bool v6 = strchr (host, ':') != NULL && host[0] != '[';
  _cleanup_free_ char *url = xasprintf ("http://%s%s%s:%u/", v6 ? "[" : "", host, v6 ? "]" : "", hport);
  _cleanup_free_ char *entry = xasprintf ("%lld %s", (long long) port, url);
  bool known = false;
  for (size_t i = 0; i < have && !known; i++)
    known = strcmp (m->sb->urls[i], entry) == 0;
  if (!known)
    {
      if (have >= EXPOSED_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "at most %d ports can be exposed", EXPOSED_MAX);
      strv_push (&m->sb->urls, entry);
      mlog (m, "port %lld exposed at %s%s", (long long) port, url, m->sb->opts.public_ports ? " (public)" : "");
    }
  *ret_url = steal_pointer (&url);
  return 0;
}

static void
handle_expose (struct mon *m, struct client *c, yajl_val req)
{
  int64_t port = 0;
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *url = NULL;
  if (j_get_int (req, "port", true, &port, &err) < 0 || expose_port (m, port, &url, &err) < 0)
    {
      reply_error (c, err->code, err->msg);
      return;
    }
  save_state (m);
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, "port", port);
  j_kstr (g, "url", url);
  j_kbool (g, "public", m->sb->opts.public_ports);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  reply_json (c, s);
  c->closing = true;
}

/* `sbx net`: the sandbox's egress rules replaced in one transaction. */
static void
handle_net (struct mon *m, struct client *c, yajl_val req)
{
  const char *mode = NULL;
  _cleanup_strv_ char **allow = NULL;
  _cleanup_free_ sbx_cidr *cidrs = NULL;
  size_t n = 0;
  _cleanup_error_ sbx_error *err = NULL;
  if (j_get_str (req, "mode", true, &mode, &err) < 0 || j_get_strv (req, "allow", false, &allow, &err) < 0)
    {
      reply_error (c, SBX_E_INVALID_ARGUMENT, err->msg);
      return;
    }
  sbx_egress_mode em;
  if (strcmp (mode, "block") == 0)
    em = SBX_EGRESS_BLOCK;
  else if (strcmp (mode, "open") == 0)
    em = SBX_EGRESS_OPEN;
  else if (strcmp (mode, "allow") == 0 && allow && allow[0])
    em = SBX_EGRESS_ALLOW;
  else
    {
      reply_error (c, SBX_E_INVALID_ARGUMENT, "net: mode must be block, open, or allow with a list");
      return;
    }
  if (em != SBX_EGRESS_ALLOW)
    strv_free (allow), allow = NULL;
  if (m->net == NULL)
    {
      reply_error (c, SBX_E_INVALID_ARGUMENT,
                   "the sandbox was created with --block-network: it has no network interface (create it without "
                   "--block-network and use `sbx net --block` to close it while it runs)");
      return;
    }
  if (sbx_net_parse_allow (allow, &cidrs, &n, &err) < 0 || sbx_net_apply (m->net, em, cidrs, n, &err) < 0)
    {
      reply_error (c, err->code, err->msg);
      return;
    }
  set_net_mode (m, mode, allow);
  save_state (m);
  mlog (m, "network: %s%s", mode, em == SBX_EGRESS_ALLOW ? " (allow-list)" : "");
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kstr (g, "mode", mode);
  j_kstrv (g, "allow", allow);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  reply_json (c, s);
  c->closing = true;
}

static void
op_exec (struct mon *m, struct client *c, yajl_val req)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (handle_exec (m, c, req, &err) < 0)
    reply_error (c, err->code, err->msg);
}

static void
op_terminate (struct mon *m, struct client *c, yajl_val req)
{
  reply_json (c, "{\"ok\":true}");
  begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KILLED);
}

static void
op_wait (struct mon *m, struct client *c, yajl_val req)
{
  /* answered by EOF when the monitor exits */
}

static void
op_pause_resume (struct mon *m, struct client *c, bool pause)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (set_paused (m, pause, &err) < 0)
    reply_error (c, err->code, err->msg);
  else
    {
      reply_json (c, m->sb->paused ? "{\"paused\":true}" : "{\"paused\":false}");
      c->closing = true;
    }
}

static void
op_pause (struct mon *m, struct client *c, yajl_val req)
{
  op_pause_resume (m, c, true);
}

static void
op_resume (struct mon *m, struct client *c, yajl_val req)
{
  op_pause_resume (m, c, false);
}

static void
op_rootfd (struct mon *m, struct client *c, yajl_val req)
{
  handle_rootfd (m, c);
}

static void
op_ps (struct mon *m, struct client *c, yajl_val req)
{
  handle_ps (m, c);
}

static void
op_proc_status (struct mon *m, struct client *c, yajl_val req)
{
  handle_proc (m, c, SBX_OP_PROC_STATUS, req);
}

static void
op_proc_wait (struct mon *m, struct client *c, yajl_val req)
{
  handle_proc (m, c, SBX_OP_PROC_WAIT, req);
}

static void
op_proc_kill (struct mon *m, struct client *c, yajl_val req)
{
  handle_proc (m, c, SBX_OP_PROC_KILL, req);
}

static void
op_proc_logs (struct mon *m, struct client *c, yajl_val req)
{
  handle_proc (m, c, SBX_OP_PROC_LOGS, req);
}

static void
op_ping (struct mon *m, struct client *c, yajl_val req)
{
  reply_json (c, "{\"ok\":true}");
  c->closing = true;
}

/* OP_ENDING: served while the sandbox is terminating, by the EOF when the
 * monitor exits (a terminate for a sandbox already ending waits for the
 * end, as wait does: its caller wants it over, and the EOF says when).
 * OP_RUNNING: refused while the sandbox is paused. */
enum { OP_ENDING = 1 << 0, OP_RUNNING = 1 << 1 };

static const struct op {
  void (*handler) (struct mon *m, struct client *c, yajl_val req);
  unsigned flags;
} ops[SBX_OP__MAX] = {
  [SBX_OP_EXEC] = { op_exec, OP_RUNNING },
  [SBX_OP_TERMINATE] = { op_terminate, OP_ENDING },
  [SBX_OP_WAIT] = { op_wait, OP_ENDING },
  [SBX_OP_TTL] = { handle_ttl, 0 },
  [SBX_OP_PAUSE] = { op_pause, 0 },
  [SBX_OP_RESUME] = { op_resume, 0 },
  [SBX_OP_SNAPSHOT] = { handle_snapshot, 0 },
  [SBX_OP_NET] = { handle_net, 0 },
  [SBX_OP_EXPOSE] = { handle_expose, 0 },
  [SBX_OP_ROOTFD] = { op_rootfd, 0 },
  [SBX_OP_PS] = { op_ps, 0 },
  [SBX_OP_PROC_STATUS] = { op_proc_status, 0 },
  [SBX_OP_PROC_WAIT] = { op_proc_wait, 0 },
  [SBX_OP_PROC_KILL] = { op_proc_kill, OP_RUNNING },
  [SBX_OP_PROC_LOGS] = { op_proc_logs, 0 },
  [SBX_OP_PING] = { op_ping, 0 },
};

static void
handle_request (struct mon *m, struct client *c, const unsigned char *p, size_t len)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_yajl_val_ yajl_val req = NULL;
  const char *name = NULL;
  if (j_parse ((const char *) p, len, REQUEST_MAX, "request", &req, &err) < 0
      || j_get_str (req, "op", true, &name, &err) < 0)
    {
      reply_error (c, err->code, err->msg);
      return;
    }
  touch (m);
  sbx_op op = sbx_op_from_name (name);
  const struct op *o = op < SBX_OP__MAX ? &ops[op] : NULL;
  if (m->shutting_down && o && (o->flags & OP_ENDING))
    ; /* answered by EOF when the monitor exits */
  else if (m->shutting_down)
    reply_error (c, SBX_E_SANDBOX_NOT_RUNNING, "the sandbox is terminating");
  else if (m->sb->paused && o && (o->flags & OP_RUNNING))
    reply_error (c, SBX_E_SANDBOX_NOT_RUNNING, "the sandbox is paused (sbx resume)");
  else if (o == NULL)
    reply_error (c, SBX_E_INVALID_ARGUMENT, "unknown request");
  else
    o->handler (m, c, req);
}

/* Frames a client sends once its exec runs: stdin, signals, resizes. */
static void
client_frame (struct mon *m, struct client *c, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  if (h->type == SBX_MSG_REQUEST && c->chan == 0)
    {
      handle_request (m, c, p, h->len);
      return;
    }
  if (c->chan == 0 || c->exec_done)
    return;
  switch (h->type)
    {
    case SBX_MSG_STDIN:
      c->stdin_window -= h->len;
      touch (m);
      to_agent (m, h->type, c->chan, p, h->len);
      break;
    case SBX_MSG_STDIN_EOF:
    case SBX_MSG_SIGNAL:
    case SBX_MSG_RESIZE:
      touch (m);
      to_agent (m, h->type, c->chan, p, h->len);
      break;
    default:
      c->closing = true;
    }
}

/* Backpressure on stdin: a client is read only while the agent has room
 * for more of its stdin. */
static bool
client_may_send (const struct client *c)
{
  return c->chan == 0 || c->exec_done || c->stdin_window > 0;
}

/* Returns -1 when the client is gone. */
static int
client_read (struct mon *m, struct client *c)
{
  for (;;)
    {
      struct sbx_frame_hdr h;
      const unsigned char *p;
      int r = sbx_frame_read (c->fd, &c->rd, &h, &p);
      if (r == 0)
        return 0;
      if (r < 0)
        return -1;
      client_frame (m, c, &h, p);
      if (m->aout.len > AGENT_OUT_MAX || !client_may_send (c))
        return 0;
    }
}

static void
accept_client (struct mon *m)
{
  int fd = accept4 (m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0)
    return;
  sock_buffers (fd);
  if (m->nclients >= MAX_CLIENTS)
    {
      close (fd);
      return;
    }
  struct client *c = xmalloc0 (sizeof *c);
  c->fd = fd;
  m->clients[m->nclients++] = c;
}

/* --- the agent ------------------------------------------------------- */

/* --- relays --------------------------------------------------------------
 *
 * An exposed port of a sandbox with no interface (runsc --block-network):
 * the proxy gets one end of a socketpair, and the other end is pumped
 * through the agent, which connects to the sandbox's own loopback (a
 * CONNECT channel). Flow control as for an exec: the agent takes at most
 * its window of our bytes, and we credit what we have written on. */

#define RELAYS_MAX 256
#define RELAY_READ_MAX (64u * 1024)

struct relay {
  uint32_t chan;
  int fd;
  struct buf to_fd;    /* from the sandbox, not yet written to FD */
  int64_t window;      /* bytes the agent still takes */
  uint32_t uncredited; /* written to FD since the last CREDIT */
  bool fd_eof, aborted, agent_done;
};

static struct relay *
relay_by_chan (struct mon *m, uint32_t chan)
{
  for (size_t i = 0; i < m->nrelays; i++)
    if (m->relays[i]->chan == chan)
      return m->relays[i];
  return NULL;
}

static int
relay_open (struct mon *m, uint16_t port, sbx_error **err)
{
  if (m->nrelays >= RELAYS_MAX)
    return sbx_error_set (err, SBX_E_BUSY, 0, "too many relayed connections (at most %d)", RELAYS_MAX);
  if (m->agent_gone || m->shutting_down)
    return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "the sandbox is ending");
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
    return sbx_error_errno (err, errno, "socketpair");
  struct relay *r = xmalloc0 (sizeof *r);
  r->chan = ++m->next_chan;
  r->fd = sv[0];
  r->window = SBX_PROTO_WINDOW;
  m->relays = xrealloc (m->relays, (m->nrelays + 1) * sizeof *m->relays);
  m->relays[m->nrelays++] = r;
  to_agent (m, SBX_MSG_CONNECT, r->chan, &port, sizeof port);
  return sv[1];
}

static void
relay_abort (struct mon *m, struct relay *r)
{
  if (r->aborted)
    return;
  r->aborted = true;
  r->to_fd.len = 0;
  if (!r->agent_done)
    {
      uint32_t sig = SIGKILL;
      to_agent (m, SBX_MSG_SIGNAL, r->chan, &sig, sizeof sig);
    }
}

/* A frame of the agent on a relay's channel. */
static void
relay_frame (struct mon *m, struct relay *r, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  uint32_t n;
  switch (h->type)
    {
    case SBX_MSG_STDOUT:
      if (r->aborted)
        {
          n = h->len;
          to_agent (m, SBX_MSG_CREDIT, r->chan, &n, sizeof n);
        }
      else
        buf_append (&r->to_fd, p, h->len);
      return;
    case SBX_MSG_CREDIT:
      if (h->len == sizeof n)
        {
          memcpy (&n, p, sizeof n);
          r->window += n;
        }
      return;
    case SBX_MSG_EXIT:
    case SBX_MSG_ERROR:
      r->agent_done = true;
      return;
    default:
      return;
    }
}

static size_t
relay_pollfds (struct mon *m, struct pollfd *pf)
{
  size_t n = 0;
  for (size_t i = 0; i < m->nrelays; i++)
    {
      struct relay *r = m->relays[i];
      bool in = !r->fd_eof && !r->aborted && !r->agent_done && r->window > 0 && m->aout.len <= AGENT_OUT_MAX;
      pf[n++] = (struct pollfd){ r->fd, (short) ((in ? POLLIN : 0) | (r->to_fd.len ? POLLOUT : 0)), 0 };
    }
  return n;
}

static void
relay_dispatch (struct mon *m, const struct pollfd *pf, size_t n)
{
  for (size_t i = 0; i < n && i < m->nrelays; i++)
    {
      struct relay *r = m->relays[i];
      if (pf[i].revents & POLLOUT && r->to_fd.len)
        {
          size_t before = r->to_fd.len;
          if (buf_flush (&r->to_fd, r->fd) < 0)
            relay_abort (m, r);
          else
            r->uncredited += (uint32_t) (before - r->to_fd.len);
          if (r->uncredited >= RELAY_READ_MAX || (r->to_fd.len == 0 && r->uncredited > 0))
            {
              to_agent (m, SBX_MSG_CREDIT, r->chan, &r->uncredited, sizeof r->uncredited);
              r->uncredited = 0;
            }
        }
      if (pf[i].revents & (POLLIN | POLLHUP | POLLERR) && !r->fd_eof && !r->aborted && !r->agent_done)
        {
          unsigned char buf[RELAY_READ_MAX];
          size_t max = r->window < (int64_t) sizeof buf ? (size_t) r->window : sizeof buf;
          ssize_t k = max ? read (r->fd, buf, max) : -1;
          if (k > 0)
            {
              to_agent (m, SBX_MSG_STDIN, r->chan, buf, (size_t) k);
              r->window -= k;
            }
          else if (k == 0)
            {
              r->fd_eof = true;
              to_agent (m, SBX_MSG_STDIN_EOF, r->chan, NULL, 0);
            }
          else if (max && errno != EAGAIN && errno != EINTR)
            relay_abort (m, r);
        }
    }
  /* Over once the agent is done with it and everything it sent is out. */
  for (size_t i = 0; i < m->nrelays;)
    {
      struct relay *r = m->relays[i];
      if (m->agent_gone || (r->agent_done && (r->to_fd.len == 0 || r->aborted)))
        {
          close (r->fd);
          free (r->to_fd.data);
          free (r);
          m->relays[i] = m->relays[--m->nrelays];
        }
      else
        i++;
    }
}

static void
agent_frame (struct mon *m, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  if (h->type == SBX_MSG_PING)
    {
      to_agent (m, SBX_MSG_PONG, 0, p, h->len);
      return;
    }
  if (h->type == SBX_MSG_LOG)
    {
      sbx_log_line (&m->slog, SBX_LOG_SANDBOX, (const char *) p, h->len);
      return;
    }
  if (h->chan == 0)
    return;
  struct relay *rl = relay_by_chan (m, h->chan);
  if (rl)
    {
      relay_frame (m, rl, h, p);
      return;
    }
  struct client *c = client_by_chan (m, h->chan);
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
        begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KILLED);
      else
        {
          record_exit (m, h, p);
          begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_EXITED);
        }
    }
  struct proc *pr = proc_by_chan (m, h->chan);
  if (pr && !pr->ended)
    pr = proc_frame (m, pr, h, p);
  if (pr && pr->detached)
    {
      /* Its output went to the log (and was credited there); its caller
       * waited only for the pid. */
      if (c && h->type == SBX_MSG_STARTED)
        {
          reply_int (c, "pid", pr->pid);
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
          to_agent (m, SBX_MSG_CREDIT, h->chan, &n, sizeof n);
        }
      return;
    }
  if (h->type != SBX_MSG_STARTED && !output && !last)
    return;
  client_send_frame (c, h->type, p, h->len);
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
            mlog (m, "the agent sent a malformed frame: closing it");
          m->agent_gone = true;
          return;
        }
      agent_frame (m, &h, p);
    }
}

/* Copies what the runtime (and sbx-init before its HELLO) wrote on stderr
 * into the log, as the runtime's lines. A pipe, not the log file itself: no
 * fd of a host file reaches the sandbox, and sbx-init closes its end before
 * any process of the sandbox starts. */
static void
drain_stderr (struct mon *m)
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

/* --- limits ------------------------------------------------------------ */

/* The cgroup's counters, kept at their highest: a runtime that ends the
 * container deletes its cgroup, so they are sampled while it lives (each
 * exec's end, every second, the init's exit) rather than at teardown. */
static void
sample_limits (struct mon *m)
{
  sbx_cgroup_stats cs;
  sbx_cgroup_stats_read (m->cgroup, &cs);
  bool changed = sbx_sandbox_merge_stats (m->sb, &cs);
  if (cs.pids_peak > m->pids_peak)
    m->pids_peak = cs.pids_peak;
  uint64_t seen = 0;
  if (m->conf && m->conf->observe && m->net
      && sbx_egress_private_count (SBX_EGRESS_TABLE, m->sb->id, &seen, NULL) == 0
      && (int64_t) seen != m->sb->net_private_seen)
    {
      m->sb->net_private_seen = (int64_t) seen;
      changed = true;
    }
  if (changed && !m->shutting_down)
    save_state (m);
  m->next_sample = now_ms_monotonic () + 1000;
}

/* --- the loop ---------------------------------------------------------- */

static int
poll_timeout (struct mon *m)
{
  uint64_t now = now_ms_monotonic ();
  uint64_t next = m->deadline;
  if (m->shutting_down)
    next = m->shutdown_deadline;
  else if (m->sb->opts.keep_warm >= 0 && m->active_execs == 0 && !m->sb->paused)
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
    begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_TIMEOUT);
  else if (m->sb->opts.keep_warm >= 0 && m->active_execs == 0 && !m->sb->paused
           && now >= m->last_activity + (uint64_t) m->sb->opts.keep_warm * 1000)
    {
      /* --on-idle pause: frozen until resumed (its idle clock stops); the
       * hard timeout still ends it. */
      if (m->sb->opts.on_idle_pause && set_paused (m, true, NULL) == 0)
        return;
      begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KEEP_WARM);
    }
}

/* Drains every exited child (we are a subreaper: orphans of the runtime land
 * here too) and notes when the runtime itself has exited. */
static void
reap_children (struct mon *m)
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
        begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KILLED);
    }
  reap_children (m);
}

static void
flush_clients (struct mon *m)
{
  for (size_t i = 0; i < m->nclients;)
    {
      struct client *c = m->clients[i];
      serve_watch (m, c);
      bool dead = buf_flush (&c->out, c->fd) < 0;
      /* Credit in quarters of the window: one small frame per megabyte
       * rather than one per frame, and never a stall (the agent still has
       * three quarters to send on). */
      if (!dead && c->out.len == 0 && c->uncredited >= SBX_PROTO_WINDOW / 4 && c->chan && !c->exec_done)
        {
          uint32_t n = (uint32_t) c->uncredited;
          to_agent (m, SBX_MSG_CREDIT, c->chan, &n, sizeof n);
          c->uncredited = 0;
        }
      if (dead || (c->closing && c->out.len == 0))
        client_free (m, i);
      else
        i++;
    }
}

static void
run_loop (struct mon *m)
{
  struct pollfd *pf = xmalloc ((MAX_CLIENTS + 4 + RESOLVER_FDS_MAX + PROXY_FDS_MAX + RELAYS_MAX) * sizeof *pf);
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
          short ev = (m->aout.len > AGENT_OUT_MAX || !client_may_send (c) ? 0 : POLLIN) | (c->out.len ? POLLOUT : 0);
          pf[n++] = (struct pollfd){ c->fd, ev, 0 };
        }
      size_t rbase = n, rn = m->resolver ? sbx_resolver_pollfds (m->resolver, pf + n, RESOLVER_FDS_MAX) : 0;
      n += rn;
      size_t pbase = n, pn = m->proxy ? sbx_proxy_pollfds (m->proxy, pf + n, PROXY_FDS_MAX) : 0;
      n += pn;
      size_t lbase = n, ln = relay_pollfds (m, pf + n);
      n += ln;
      int r = poll (pf, n, m->agent_gone ? 10 : poll_timeout (m));
      if (r < 0 && errno != EINTR)
        break;
      /* First, while their sockets are as they filled them in (a client's
       * request may add a listener); with no revents too: their deadlines. */
      if (r >= 0 && rn)
        sbx_resolver_dispatch (m->resolver, pf + rbase, rn);
      /* Relays before the proxy, which may open new ones. */
      if (r >= 0)
        relay_dispatch (m, pf + lbase, ln);
      if (r >= 0 && pn)
        sbx_proxy_dispatch (m->proxy, pf + pbase, pn);
      size_t nc = m->nclients;
      if (r > 0)
        {
          if (pf[0].revents)
            handle_signals (m);
          if (pf[1].revents & POLLOUT && buf_flush (&m->aout, m->agent_fd) < 0)
            m->agent_gone = true;
          if (pf[1].revents & (POLLIN | POLLHUP | POLLERR) && !m->agent_gone)
            agent_read (m);
          for (size_t i = 0; i < nc && i < m->nclients; i++)
            if (pf[4 + i].revents & (POLLIN | POLLHUP | POLLERR) && client_read (m, m->clients[i]) < 0)
              m->clients[i]->closing = true, m->clients[i]->out.len = 0;
          if (pf[2].revents & POLLIN)
            accept_client (m);
          if (pf[3].revents)
            drain_stderr (m);
        }
      /* A proxied connection is activity (keep-warm). */
      if (m->proxy && sbx_proxy_last_activity_ms (m->proxy) > m->last_activity)
        m->last_activity = sbx_proxy_last_activity_ms (m->proxy);
      flush_clients (m);
      /* Sampled when the loop is idle, or when a busy loop is overdue: never
       * on the path of an exec's reply. */
      uint64_t now = now_ms_monotonic ();
      if (!m->agent_gone && ((r == 0 && now >= m->next_sample) || now >= m->next_sample + 1000))
        sample_limits (m);
      check_timers (m);
      if (m->shutting_down && now_ms_monotonic () >= m->shutdown_deadline)
        break;
    }
  free (pf);
}

/* --- setup ------------------------------------------------------------- */

/* The monitor's own mount namespace, where the sandbox's root is mounted
 * and the runtime runs: nothing of it shows on the host. */
static int
private_mount_ns (sbx_error **err)
{
  if (unshare (CLONE_NEWNS) < 0)
    return sbx_error_errno (err, errno, "unshare mount namespace");
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return sbx_error_errno (err, errno, "make / private");
  return 0;
}

static int
mount_root (struct mon *m, sbx_error **err)
{
  _cleanup_free_ char *top = NULL;
  if (sbx_store_top_layer (m->st, sbx_init_path (), &top, err) < 0)
    return -1;
  return sbx_sandbox_mount_root_att (m->st, m->sb, false, &m->disk_pre, err);
}

/* Binding the disk's loop device waits for an RCU grace period of the
 * block layer (4-30 ms here): a thread does it while setup goes on. */
static void *
disk_attach (void *arg)
{
  struct mon *m = arg;
  sbx_disk_attach (m->st, m->sb->id, false, &m->disk_pre);
  return NULL;
}

static int
listen_control (struct mon *m, sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf ("%s/control.sock", m->run_dir);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "run root path too long for a socket: %s", path);
  strcpy (sa.sun_path, path);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return sbx_error_errno (err, errno, "socket");
  unlink (path);
  mode_t old = umask (0177);
  int r = bind (fd, (struct sockaddr *) &sa, sizeof sa);
  umask (old);
  if (r < 0 || listen (fd, 128) < 0)
    {
      close (fd);
      return sbx_error_errno (err, errno, "listen on `%s`", path);
    }
  m->listen_fd = fd;
  return 0;
}

/* runc runs detached: its stdio (the agent's socket) passes straight to the
 * container's init, which then becomes our child (we are a subreaper), and
 * no runc process stays around. In the foreground runc would copy every
 * byte of the agent's traffic through pipes of its own. */
static bool
runtime_detached (const struct mon *m)
{
  return strcmp (m->rt->name, "runc") == 0;
}

static int runtime_failed (struct mon *m, sbx_error **err);

/* The runtime's process is forked early, before the root is mounted and
 * the bundle written, and waits for runtime_go to exec the runtime. Where
 * sbx places the runtime in the sandbox's cgroup itself (own_cgroups) it
 * joins it meanwhile, as a single thread (sbx_cgroup_join_files): runsc's
 * own cgroup handling moves the many threads of `runsc run` in and out
 * again, each time waiting for an RCU grace period of the kernel's (7-30
 * ms here) on the way to the sandbox's start.
 *
 * The network thread (setup) may be running at the fork, holding a lock of
 * libc's: the child makes only async-signal-safe calls until its exec. */
static int
runtime_fork (struct mon *m, sbx_error **err)
{
  _cleanup_free_ char *bundle = xasprintf ("%s/bundle", m->dir);
  _cleanup_free_ char *pidfile = xasprintf ("%s/container.pid", m->run_dir);
  const char *fg[] = { "--bundle", bundle, m->sb->id, NULL };
  const char *bg[] = { "--detach", "--pid-file", pidfile, "--bundle", bundle, m->sb->id, NULL };
  /* From a snapshot: runsc restores its checkpoint in the foreground as it
   * would run it; the agent's stdio becomes our socket again. */
  const char *rs[] = { "--image-path", m->sb->restore_from, "--bundle", bundle, m->sb->id, NULL };
  _cleanup_strv_ char **argv = m->sb->restore_from ? sbx_runtime_argv (m->rt, "restore", rs)
                                                     : sbx_runtime_argv (m->rt, "run", runtime_detached (m) ? bg : fg);
  _cleanup_strv_ char **join = m->rt->own_cgroups ? sbx_cgroup_join_files (m->cgroup) : NULL;
  int go[2], ready[2];
  if (pipe2 (go, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  if (pipe2 (ready, O_CLOEXEC) < 0)
    {
      int e = errno;
      close (go[0]);
      close (go[1]);
      return sbx_error_errno (err, e, "pipe");
    }
  pid_t parent = getpid ();
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (go[1]);
      close (ready[0]);
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      if (getppid () != parent)
        _exit (127);
      sigset_t none;
      sigemptyset (&none);
      sigprocmask (SIG_SETMASK, &none, NULL);
      int32_t e = join ? -sbx_cgroup_join (join) : 0;
      char c;
      if (write (ready[1], &e, sizeof e) != (ssize_t) sizeof e || e != 0 || read (go[0], &c, 1) != 1)
        _exit (127);
      if (dup2 (m->agent_end, 0) < 0 || dup2 (m->agent_end, 1) < 0 || dup2 (m->stderr_w, 2) < 0)
        _exit (127);
      close_fds_except (NULL, 0);
      execv (argv[0], argv);
      _exit (127);
    }
  int e = errno;
  close (go[0]);
  close (ready[1]);
  if (pid < 0)
    {
      close (go[1]);
      close (ready[0]);
      return sbx_error_errno (err, e, "fork");
    }
  m->go_w = go[1];
  m->ready_r = ready[0];
  m->runtime_pid = pid;
  return 0;
}

/* Starts the container with sbx-init as its init, stdin and stdout the
 * agent's socket, stderr the sandbox log: the process runtime_fork made
 * execs the runtime. runsc runs in the foreground for the sandbox's life:
 * it waits for the container and deletes it when its init exits, all in
 * one process, where a separate `delete` would cost a second start of the
 * runtime. Either way m->runtime_pid is the process whose exit means the
 * container is over. */
static int
runtime_go (struct mon *m, sbx_error **err)
{
  int32_t e = 0;
  ssize_t n = read_all (m->ready_r, &e, sizeof e);
  close (m->ready_r);
  m->ready_r = -1;
  if (n != (ssize_t) sizeof e)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the runtime's process exited before its start");
  if (e != 0)
    return sbx_error_errno (err, e, "move the runtime into the sandbox's cgroup %s", m->cgroup);
  if (write (m->go_w, "g", 1) != 1)
    return sbx_error_errno (err, errno, "start %s", m->rt->name);
  close (m->go_w);
  m->go_w = -1;
  if (!runtime_detached (m))
    return 0;
  int status;
  while (waitpid (m->runtime_pid, &status, 0) < 0)
    if (errno != EINTR)
      return sbx_error_errno (err, errno, "wait for %s", m->rt->name);
  m->runtime_pid = 0;
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    {
      m->runtime_status = status;
      m->runtime_exited = true;
      return runtime_failed (m, err);
    }
  _cleanup_free_ char *pidfile = xasprintf ("%s/container.pid", m->run_dir);
  _cleanup_free_ char *text = NULL;
  int64_t cpid = 0;
  if (read_file (pidfile, 64, &text, NULL, err) < 0)
    return -1;
  text[strcspn (text, "\n")] = '\0';
  if (parse_int64 (text, 2, INT32_MAX, &cpid) < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s wrote a bad pid file", m->rt->name);
  m->runtime_pid = (pid_t) cpid;
  reap_children (m); /* it may have exited already */
  return 0;
}

/* The runtime exited before the sandbox's init said hello. */
static int
runtime_failed (struct mon *m, sbx_error **err)
{
  int st = m->runtime_status;
  int code = WIFEXITED (st) ? WEXITSTATUS (st) : 128 + WTERMSIG (st);
  if (sbx_runtime_probe (m->rt, err) < 0)
    return -1;
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s run failed (status %d)", m->rt->name, code);
}

static int
wait_hello (struct mon *m, sbx_error **err)
{
  uint64_t until = now_ms_monotonic () + HELLO_TIMEOUT_MS;
  /* A restored agent said hello long ago: it answers a PING instead. */
  static const char probe[] = "sbx-restore";
  if (m->sb->restore_from && sbx_frame_write (m->agent_fd, SBX_MSG_PING, 0, probe, sizeof probe - 1) < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the restored sandbox's init is not there");
  for (;;)
    {
      struct sbx_frame_hdr h;
      const unsigned char *p;
      int r = sbx_frame_read (m->agent_fd, &m->ard, &h, &p);
      if (r == -EPROTO)
        return sbx_error_set (err, SBX_E_INTERNAL, 0,
                              "the sandbox's init sent a frame sbx cannot read: an sbx-init of another version? "
                              "(install sbx and sbx-init together)");
      if (r < 0)
        {
          /* Let the runtime finish so that its status tells what failed. */
          for (int i = 0; i < 500 && !m->runtime_exited; i++)
            {
              usleep (10000);
              reap_children (m);
            }
          if (m->runtime_exited)
            return runtime_failed (m, err);
          return sbx_error_set (err, SBX_E_INTERNAL, r == -EPIPE ? 0 : -r, "the sandbox's init exited during start");
        }
      if (r == 1 && h.type == SBX_MSG_HELLO && !m->sb->restore_from)
        {
          uint32_t hello[3];
          memcpy (hello, p, sizeof hello);
          if (hello[0] != SBX_PROTO_VERSION)
            return sbx_error_set (err, SBX_E_INTERNAL, 0, "the sandbox's init speaks protocol %u, sbx %u: install them together",
                                  hello[0], SBX_PROTO_VERSION);
          if (!(hello[2] & SBX_HELLO_SECCOMP))
            return sbx_error_set (err, SBX_E_INTERNAL, 0, "the sandbox's init did not load the seccomp profile");
          return 0;
        }
      if (r == 1 && h.type == SBX_MSG_LOG)
        {
          sbx_log_line (&m->slog, SBX_LOG_SANDBOX, (const char *) p, h.len);
          continue;
        }
      if (r == 1 && m->sb->restore_from)
        {
          if (h.type == SBX_MSG_PONG)
            return 0;
          /* Output of the processes it restored: nobody reads it here. */
          if ((h.type == SBX_MSG_STDOUT || h.type == SBX_MSG_STDERR) && h.chan != 0)
            {
              uint32_t n = h.len;
              sbx_frame_write (m->agent_fd, SBX_MSG_CREDIT, h.chan, &n, sizeof n);
            }
          continue;
        }
      if (r == 1)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "the sandbox's init sent frame %u before HELLO", h.type);
      uint64_t now = now_ms_monotonic ();
      if (now >= until)
        return sbx_error_set (err, SBX_E_TIMEOUT, 0, "the sandbox's init did not answer within %d s",
                              HELLO_TIMEOUT_MS / 1000);
      struct pollfd pf = { m->agent_fd, POLLIN, 0 };
      poll (&pf, 1, (int) (until - now) > 50 ? 50 : (int) (until - now));
      drain_stderr (m);
      reap_children (m);
      if (m->runtime_exited && !(pf.revents & POLLIN))
        return runtime_failed (m, err);
    }
}

/* The sandbox's network, made in three steps so that the slow middle one
 * (namespace, veth, addresses, rules: a few milliseconds of netlink) runs
 * in a thread while the monitor mounts the root and writes the bundle:
 *
 *   net_plan    what it gets (sbx.conf, the mode, the allow-list) and the
 *               shared egress rules; refusals happen here
 *   net_make    sbx_net_setup, in the thread (it touches nothing else)
 *   net_finish  the record, the resolver on the gateway, resolv.conf
 *
 * Under runsc --block-network there is none: gVisor runs with no
 * interface at all. */
struct net_plan {
  bool make;
  int hold; /* sbx_net_hold's */
  sbx_egress_mode mode;
  sbx_cidr *allow;
  size_t nallow;
  /* net_make's result */
  sbx_net *net;
  sbx_error *err;
};

static int
net_plan (struct mon *m, struct net_plan *plan, sbx_error **err)
{
  sbx_sandbox *sb = m->sb;
  bool runsc = strcmp (m->rt->name, "runsc") == 0;
  if (sbx_conf_load (NULL, &m->conf, err) < 0)
    return -1;
  m->host_netns = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (m->host_netns < 0)
    return sbx_error_errno (err, errno, "open /proc/self/ns/net");
  free (sb->net_stack);
  if (sb->opts.block_network)
    {
      set_net_mode (m, "none", NULL);
      /* gVisor has its own loopback; runc makes a namespace with only its
       * loopback up. Nothing of sbx's to make, or to leave behind. */
      sb->net_stack = xstrdup (runsc ? "none (gVisor, loopback only)" : "none (its own namespace, loopback only)");
      return 0;
    }
  if (sbx_net_parse_allow (sb->opts.allow, &plan->allow, &plan->nallow, err) < 0)
    return -1;
  for (size_t i = 0; i < plan->nallow; i++)
    if (plan->allow[i].family == AF_INET6 && m->conf->pool6.family != AF_INET6)
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "--allow %s: IPv6 is off for sandboxes on this host (pool6 in sbx.conf)", sb->opts.allow[i]);
  plan->mode = plan->nallow > 0 ? SBX_EGRESS_ALLOW : SBX_EGRESS_OPEN;
  plan->make = true;
  /* Held until the lease exists, so that no gc drops the shared rules
   * between their init and this sandbox's chain (released in setup). */
  plan->hold = sbx_net_hold (err);
  if (plan->hold < 0)
    return -1;
  /* Egress that cannot be enforced is refused, never run open. */
  sbx_egress_pool pool;
  _cleanup_free_ sbx_cidr *open = NULL;
  sbx_net_pool (m->conf, &pool, &open);
  if (sbx_egress_init (SBX_EGRESS_TABLE, &pool, err) < 0)
    {
      (*err)->code = SBX_E_NETWORK_BLOCK_UNAVAILABLE;
      return sbx_error_wrap (err, "egress rules cannot be enforced on this host");
    }
  set_net_mode (m, plan->nallow > 0 ? "allow" : "open", plan->nallow > 0 ? sb->opts.allow : NULL);
  sb->net_stack = xstrdup (runsc ? "host (runsc --network=host inside the sandbox's namespace)"
                                 : "kernel (runc in the sandbox's namespace)");
  m->rt->host_network = runsc;
  return 0;
}

struct net_make_job {
  const struct mon *m;
  struct net_plan *plan;
};

static void *
net_make (void *arg)
{
  struct net_make_job *job = arg;
  struct net_plan *plan = job->plan;
  /* What was asked for cannot be made: never a sandbox with less. */
  if (sbx_net_setup (job->m->conf, job->m->sb->id, plan->mode, plan->allow, plan->nallow, &plan->net, &plan->err) < 0
      && plan->err->code == SBX_E_INTERNAL)
    plan->err->code = SBX_E_NETWORK_BLOCK_UNAVAILABLE;
  return NULL;
}

static int
net_finish (struct mon *m, sbx_error **err)
{
  sbx_sandbox *sb = m->sb;
  if (m->net == NULL)
    return 0;
  sb->net_addr4 = sbx_net_addr_str (&m->net->addr4);
  sb->net_gateway4 = sbx_net_addr_str (&m->net->gw4);
  if (m->net->addr6.family == AF_INET6)
    {
      sb->net_addr6 = sbx_net_addr_str (&m->net->addr6);
      sb->net_gateway6 = sbx_net_addr_str (&m->net->gw6);
    }
  /* The resolver on the gateway, forwarding to the host's (which may be
   * on the host's loopback, out of the sandbox's reach). */
  _cleanup_free_ sbx_cidr *ups = NULL;
  size_t nups = 0;
  const sbx_cidr *up = m->conf->dns;
  if (m->conf->ndns == 0)
    {
      if (sbx_resolv_conf_nameservers (NULL, &ups, &nups, err) < 0)
        return -1;
      up = ups;
    }
  else
    nups = m->conf->ndns;
  m->resolver = sbx_resolver_new (up, nups, 53);
  if (sbx_resolver_listen (m->resolver, AF_INET, m->net->gw4.addr, 53, err) < 0
      || (m->net->gw6.family == AF_INET6 && sbx_resolver_listen (m->resolver, AF_INET6, m->net->gw6.addr, 53, err) < 0))
    return sbx_error_wrap (err, "resolver");
  _cleanup_free_ char *resolv = xasprintf ("nameserver %s\n%s%s%s", sb->net_gateway4, sb->net_gateway6 ? "nameserver " : "",
                                           sb->net_gateway6 ? sb->net_gateway6 : "", sb->net_gateway6 ? "\n" : "");
  _cleanup_free_ char *rpath = xasprintf ("%s/resolv.conf", m->dir);
  return write_file_atomic (rpath, resolv, strlen (resolv), 0644, err);
}

/* --port N at create: exposed once the sandbox runs. */
static int
expose_create_ports (struct mon *m, sbx_error **err)
{
  for (size_t i = 0; m->sb->opts.ports && m->sb->opts.ports[i]; i++)
    {
      int64_t port;
      _cleanup_free_ char *url = NULL;
      if (parse_int64 (m->sb->opts.ports[i], 1, 65535, &port) < 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--port `%s` is not in 1..65535", m->sb->opts.ports[i]);
      if (expose_port (m, port, &url, err) < 0)
        return -1;
    }
  return 0;
}

/* A restored sandbox's process table, from its snapshot.json (written by
 * sbx snapshot): every process is in the background now (whoever waited on
 * it is gone); output from the restore on goes to its log. */
static void
restore_procs (struct mon *m)
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
      bool tty = false, ended = false, timed_out = false;
      if (j_get_int (x, "chan", true, &chan, NULL) < 0 || j_get_int (x, "pid", true, &pid, NULL) < 0
          || j_get_str (x, "command", false, &cmd, NULL) < 0 || j_get_bool (x, "tty", false, &tty, NULL) < 0
          || j_get_int (x, "started_at", false, &started, NULL) < 0 || j_get_bool (x, "ended", false, &ended, NULL) < 0
          || j_get_int (x, "ended_at", false, &ended_at, NULL) < 0 || j_get_int (x, "exit_code", false, &code, NULL) < 0
          || j_get_int (x, "signal", false, &sig, NULL) < 0 || j_get_bool (x, "timed_out", false, &timed_out, NULL) < 0
          || chan < 1 || chan >= m->next_chan || pid < 1 || pid > INT32_MAX || proc_by_chan (m, (uint32_t) chan))
        continue;
      char *const argv[] = { (char *) (cmd ? cmd : "?"), NULL };
      proc_new (m, (uint32_t) chan, argv, true, tty);
      struct proc *p = m->procs[m->nprocs - 1];
      p->pid = (uint32_t) pid;
      p->started_at = started;
      if (ended)
        {
          proc_end (m, p, (int32_t) code, (int32_t) sig, timed_out);
          p->ended_at = ended_at;
        }
    }
  mlog (m, "restored a table of %zu processes", m->nprocs);
}

/* gVisor's memory (its MemTotal, what its kernel sizes itself by) is what
 * `runsc run` passes `runsc boot` as --total-memory: the host's MemTotal,
 * read from /proc/meminfo, or the limit of a cgroup runsc made itself,
 * which costs a cold start ~40 ms (runtime_fork). sbx places runsc in
 * its cgroup itself, so it shows runsc, in the monitor's private mount
 * namespace alone, a /proc/meminfo whose MemTotal is the sandbox's limit
 * (where that is below the host's). Nothing else in that namespace reads
 * it; it goes with the namespace. */
static int
show_runsc_memory (struct mon *m, uint64_t limit, sbx_error **err)
{
  _cleanup_free_ char *host = NULL;
  size_t len;
  if (read_file ("/proc/meminfo", 1 << 20, &host, &len, err) < 0)
    return -1;
  char *line = strncmp (host, "MemTotal:", 9) == 0 ? host : strstr (host, "\nMemTotal:");
  if (line == NULL)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "/proc/meminfo: no MemTotal");
  line += *line == '\n';
  unsigned long long kb = strtoull (line + 9, NULL, 10);
  if (limit >> 10 >= kb)
    return 0;
  char *end = strchr (line, '\n');
  _cleanup_free_ char *text = xasprintf ("%.*sMemTotal:       %llu kB%s", (int) (line - host), host,
                                         (unsigned long long) (limit >> 10), end ? end : "\n");
  _cleanup_free_ char *path = xasprintf ("%s/meminfo", m->run_dir);
  if (write_file_atomic (path, text, strlen (text), 0444, err) < 0)
    return -1;
  if (mount (path, "/proc/meminfo", NULL, MS_BIND, NULL) < 0)
    return sbx_error_errno (err, errno, "bind mount over /proc/meminfo");
  return 0;
}

/* The sandbox's cgroup, the agent's socket, the runtime's stderr pipe, and
 * the runtime's process (runtime_fork): what the runtime's start needs
 * besides the root and the bundle. */
static int
prepare_runtime (struct mon *m, sbx_error **err)
{
  bool runsc = strcmp (m->rt->name, "runsc") == 0;
  /* Under gVisor each sandbox process costs several host tasks (the ptrace
   * platform's stubs): the process limit proper is gVisor's RLIMIT_NPROC
   * (spec.c) and the host's pids limit a backstop. */
  int64_t pids = m->sb->opts.pids > 0 ? m->sb->opts.pids : SBX_PIDS_DEFAULT;
  /* sbx places runsc's processes in REL/ctr itself and runsc leaves
   * cgroups alone (--ignore-cgroups): the limits and the device list are
   * REL's, gVisor's memory is shown to runsc (show_runsc_memory), and sbx
   * skips runsc's two slow moves of itself (runtime_fork) and its removal
   * of a cgroup its exiting processes may still hold (retried every 100
   * ms): a memory limit, the default one included, costs a cold start
   * nothing. */
  m->rt->own_cgroups = runsc;
  if (runsc && m->sb->opts.memory > 0 && show_runsc_memory (m, m->sb->opts.memory, err) < 0)
    return sbx_error_wrap (err, "gVisor's memory");
  /* runsc's CPU limit waits for the sandbox's init (wait_hello): gVisor's
   * boot, a burst of several threads, throttled to one core took ~200 ms
   * longer; nothing of the sandbox's runs before the init says hello. */
  sbx_cgroup_limits lim = { .memory = m->sb->opts.memory, .cpu = runsc ? 0 : m->sb->opts.cpu,
                            .pids = runsc ? pids * 8 + 1024 : pids, .devices = runsc, .leaf = m->rt->own_cgroups };
  m->pids_host_limit = lim.pids;
  m->cgroup_hold = sbx_store_cgroup_hold (m->st, err);
  if (m->cgroup_hold < 0 || sbx_cgroup_create (m->cgroup, &lim, err) < 0)
    return -1;
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return sbx_error_errno (err, errno, "socketpair");
  m->agent_fd = sv[0];
  m->agent_end = sv[1];
  sock_buffers (sv[0]);
  sock_buffers (sv[1]);
  int ep[2];
  if (pipe2 (ep, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  m->stderr_r = ep[0];
  m->stderr_w = ep[1];
  fcntl (m->stderr_r, F_SETPIPE_SZ, 1 << 20);
  set_nonblock (m->stderr_r, true);
  return runtime_fork (m, err);
}

static int
setup (struct mon *m, sbx_error **err)
{
  if (mkdir (m->run_dir, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", m->run_dir);
  pthread_t disk_thread;
  bool disk_threaded = m->sb->opts.disk > 0 && thread_start_quiet (&disk_thread, disk_attach, m) == 0;
  struct net_plan plan = { .hold = -1 };
  if (net_plan (m, &plan, err) < 0)
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
      threaded = thread_start_quiet (&net_thread, net_make, &job) == 0;
      if (!threaded)
        net_make (&job);
    }
  /* The runtime's process is forked into the monitor's mount namespace,
   * which shows it the root mounted afterwards. */
  const char *step = "mount root";
  int r = private_mount_ns (err);
  if (r == 0 && (r = prepare_runtime (m, err)) < 0)
    step = "prepare the runtime";
  if (disk_threaded)
    pthread_join (disk_thread, NULL);
  if (r == 0)
    r = mount_root (m, err);
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
  if (net_finish (m, err) < 0)
    return -1;
  _cleanup_free_ char *merged = xasprintf ("%s/rootfs", m->dir);
  m->root_fd = open (merged, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (m->root_fd < 0)
    return sbx_error_errno (err, errno, "open the merged root");
  _cleanup_free_ char *bundle = xasprintf ("%s/bundle", m->dir);
  _cleanup_free_ char *ctr_cgroup = xasprintf ("%s/ctr", m->cgroup);
  /* The namespace by the monitor's own fd of it: its bind mount was made
   * in the host's mount namespace, which this one may not show. */
  _cleanup_free_ char *netns = m->net ? xasprintf ("/proc/%d/fd/%d", (int) getpid (), m->net->nsfd) : NULL;
  _cleanup_free_ char *resolv = m->resolver ? xasprintf ("%s/resolv.conf", m->dir) : NULL;
  sbx_spec_params sp = { .sb = m->sb, .rootfs = merged, .cgroup_path = ctr_cgroup, .runtime = m->rt->name,
                         .netns_path = netns, .resolv_conf = resolv };
  if (sbx_spec_write (&sp, bundle, err) < 0)
    return sbx_error_wrap (err, "write bundle");
  mlog (m, "root mounted, bundle written: starting %s", m->rt->name);
  r = runtime_go (m, err);
  close (m->agent_end);
  m->agent_end = -1;
  close (m->stderr_w);
  m->stderr_w = -1;
  drain_stderr (m);
  if (r < 0)
    return -1;
  set_nonblock (m->agent_fd, true);
  if (wait_hello (m, err) < 0)
    return -1;
  if (m->rt->own_cgroups && m->sb->opts.cpu > 0 && sbx_cgroup_set_cpu (m->cgroup, m->sb->opts.cpu, err) < 0)
    return sbx_error_wrap (err, "cpu limit");
  close (m->cgroup_hold);
  m->cgroup_hold = -1;
  mlog (m, "%s started the container", m->rt->name);
  if (m->sb->restore_from)
    restore_procs (m);
  if (expose_create_ports (m, err) < 0)
    return -1;
  return listen_control (m, err);
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
  own_cgroup_leave (m);
  drain_stderr (m);
  if (m->cgroup_hold >= 0)
    close (m->cgroup_hold); /* setup failed half-way */
  m->cgroup_hold = -1;
  mlog (m, "tearing down%s", m->agent_gone ? " (init exited)" : "");
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
  if (m->rt && clean_exit && runtime_detached (m))
    {
      _cleanup_free_ char *state = xasprintf ("%s/%s", m->rt->state_root, m->sb->id);
      rm_rf (state, NULL);
    }
  else if (m->rt && !clean_exit && sbx_runtime_destroy (m->rt, m->sb->id, true, &err) < 0)
    mlog (m, "delete container: %s", err->msg);
  sbx_error_free (err);
  err = NULL;
  mlog (m, "container deleted");
  if (sbx_cgroup_remove (m->cgroup, &err) < 0)
    mlog (m, "%s", err->msg);
  sbx_store_cgroup_release_parent (m->st);
  sbx_error_free (err);
  err = NULL;
  sbx_proxy_free (m->proxy);
  m->proxy = NULL;
  sbx_resolver_free (m->resolver);
  m->resolver = NULL;
  if (m->net)
    {
      sbx_net_teardown (m->net);
      m->net = NULL;
      mlog (m, "network removed");
    }
  strv_free (m->sb->urls);
  m->sb->urls = NULL;
  rm_rf (m->run_dir, NULL);
  /* The overlay lives in our private mount namespace and would go with us;
   * unmounting it now lets the final state mean "nothing is left". */
  _cleanup_free_ char *rootfs = xasprintf ("%s/rootfs", m->dir);
  if (m->root_fd >= 0)
    close (m->root_fd);
  m->root_fd = -1;
  umount2 (rootfs, MNT_DETACH);
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
  save_state (m);
  mlog (m, "%s (%s)%s%s", sbx_state_name (state), reason, error ? ": " : "", error ? error : "");
  sbx_log_finish (&m->slog);
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

static void __attribute__ ((noreturn))
monitor_main (const sbx_store *st, sbx_sandbox *sb, int lock_fd, int sync_fd)
{
  struct mon mm = { .st = st, .sb = sb, .disk_pre = SBX_DISK_ATT_INIT, .agent_fd = -1, .listen_fd = -1, .lock_fd = lock_fd, .root_fd = -1, .cgroup_hold = -1, .stderr_r = -1,
                    .stderr_w = -1, .agent_end = -1, .go_w = -1, .ready_r = -1, .host_netns = -1, .block_nsfd = -1 };
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
  mlog (m, "monitor %d: starting %s on %s", getpid (), sb->id, sb->opts.runtime);

  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_runtime_find (st, sb->opts.runtime, &m->rt, &err) < 0 || setup (m, &err) < 0
      || own_cgroup_enter (m, &err) < 0)
    {
      _cleanup_free_ char *text = sbx_error_text (err);
      finish (m, SBX_STATE_FAILED, SBX_REASON_ERROR, text);
      report (sync_fd, err->code, err->errnum, err->msg);
      _exit (1);
    }
  sb->state = SBX_STATE_RUNNING;
  sb->started_at = now_unix ();
  sb->deadline = sb->started_at + sb->opts.timeout;
  save_state (m);
  mlog (m, "running");
  touch (m);
  m->deadline = now_ms_monotonic () + (uint64_t) sb->opts.timeout * 1000;
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
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    return sbx_error_errno (err, errno, "fork");
  if (pid == 0)
    {
      close (p[0]);
      setsid ();
      pid_t mp = fork ();
      if (mp != 0)
        _exit (mp < 0 ? 1 : 0);
      monitor_main (st, sb, lock_fd, p[1]);
    }
  close (p[1]);
  int status;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  struct sync_msg s;
  ssize_t n = read_all (p[0], &s, sizeof s);
  close (p[0]);
  if (n != (ssize_t) sizeof s)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the monitor of %s exited during start", sb->id);
  if (s.code != 0)
    {
      s.msg[sizeof s.msg - 1] = '\0';
      return sbx_error_set (err, (sbx_code) s.code, s.errnum, "%s", s.msg);
    }
  return 0;
}
