/* sbx-init: the agent that runs as PID 1 inside every sandbox. It owns the
 * sandbox's side of the agent protocol (proto.h) on the control socket the
 * runtime hands it as stdin/stdout, and with it every process the monitor
 * asks for: it forks and execs them (pipes, or a pty made inside the
 * sandbox), streams their output under per-channel flow control, feeds their
 * stdin, forwards signals and window sizes, enforces per-exec timeouts, and,
 * being PID 1, reaps every zombie in the sandbox. It is one poll loop over
 * nonblocking fds, so neither a slow child nor a slow monitor stalls the
 * others. It links libc and proto.c only, statically, and trusts nothing it
 * reads: a malformed frame from the monitor ends it (exit 1), a malformed
 * EXEC only fails that exec. Its first act is to load the sandbox's seccomp
 * profile (seccomp-bpf.h, made at build time from src/lib/seccomp-profile.c),
 * so every process in the sandbox runs under it; HELLO says it did. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "proto.h"

#include <linux/filter.h>
#include <linux/magic.h>
#include <linux/seccomp.h>

#include "seccomp-bpf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHANS 1024
/* Children's output is read only while the outbound buffer is below
 * OUT_SOFT; the control socket is read only while it is below OUT_HARD (only
 * small replies can push it past OUT_SOFT). */
#define OUT_SOFT (2u << 20)
#define OUT_HARD (8u << 20)
#define OUT_MAX (OUT_HARD + (4u << 20))
/* Stdin queued for one child that is not reading it as fast as it arrives.
 * The monitor keeps within SBX_PROTO_WINDOW thanks to the CREDIT frames this
 * agent returns as the child takes its stdin; a monitor that ignores them
 * past this bound gets the channel's stdin closed (the child sees EOF) and
 * its further STDIN frames dropped. The control socket is never left unread
 * for one channel's sake. */
#define STDIN_MAX (2 * SBX_PROTO_WINDOW)
/* Output pipes are enlarged to one frame's payload where the kernel lets us. */
#define OUT_PIPE_SIZE SBX_PROTO_MAX_PAYLOAD
/* After the child exits, output still arriving (from the pipe, or from a
 * background grandchild holding it) is read until EOF, or until it has been
 * quiet for DRAIN_QUIET_MS, and for DRAIN_MAX_MS at most. Time the monitor
 * holds the channel's output back (no window) does not count, for up to
 * DRAIN_HELD_MAX_MS, so output the child wrote before it exited is not lost
 * to a slow monitor; a monitor that never sends CREDIT gets no EXIT. */
#define DRAIN_QUIET_MS 50
#define DRAIN_MAX_MS 2000
#define DRAIN_HELD_MAX_MS 60000
#define FRAMES_PER_WAKEUP 64
#define CTL_FD_MIN 100
#define WINDOW_MAX ((int64_t) 1 << 40)
#define TIMEOUT_MAX_MS ((uint64_t) 1 << 50)
#define ERROR_MSG_MAX 1024

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum chan_state { CHAN_FREE, CHAN_STARTING, CHAN_RUNNING };

/* A byte queue: data between head and tail, grown up to a caller's bound. */
struct bytes {
  unsigned char *data;
  size_t head, tail, cap;
};

struct chan {
  enum chan_state state;
  uint32_t id;
  pid_t pid; /* also its process group: the child calls setsid() */
  bool tty, reaped, timed_out, stdin_eof, stdin_at_bol;
  bool sock; /* a CONNECT stream: out_fd and in_fd are one TCP socket, no process */
  int wstatus;
  int status_fd; /* the child's CLOEXEC error pipe, until it execs */
  int out_fd, err_fd, in_fd, pty_fd;
  int64_t window;
  uint64_t deadline_ms; /* exec timeout; 0 = none */
  uint64_t exit_ms, drain_ms, drain_cap_ms;
  struct bytes in;    /* stdin not yet written */
  uint32_t in_credit; /* stdin bytes written (or discarded) since the last CREDIT */
};

enum poll_kind { P_SIGNAL, P_CTL, P_CTL_OUT, P_STATUS, P_OUT, P_ERR, P_IN };

struct poll_ref {
  enum poll_kind kind;
  struct chan *c;
};

#define POLL_MAX (3 + 4 * MAX_CHANS)

struct agent {
  int ctl_in, ctl_out; /* fd 0 and fd 1: one socket, or a runtime's two pipes */
  int sfd, log_fd;
  struct rlimit nofile; /* what children get back */
  size_t hi;            /* chans[hi..] are all free */
  struct bytes out;
  struct sbx_frame_reader rd;
  struct chan chans[MAX_CHANS];
  struct pollfd pfd[POLL_MAX];
  struct poll_ref ref[POLL_MAX];
  struct sbx_exec_req req;
  /* SECRET frames: "VAR=value" entries added to every command's
   * environment, over an entry of the same VAR (the secret wins). */
  char *secret_env[SBX_SECRETS_MAX];
  size_t nsecret_env, nsecret_files;
};

/* What a child reports through its error pipe when it cannot exec: which
 * step failed, its errno, and the message for the monitor (the child formats
 * it because only the child still has the request). Smaller than PIPE_BUF,
 * so it arrives whole. */
enum child_step { STEP_SETUP = 1, STEP_USER, STEP_CWD, STEP_EXEC };
struct child_err {
  int32_t step;
  int32_t err;
  char msg[504];
};

struct exec_user {
  bool set;
  uid_t uid;
  gid_t gid;
};

/* The fds a new child is made with; -1 where unused. */
struct spawn_fds {
  int status_r, status_w, out_r, out_w, err_r, err_w, in_r, in_w, master;
  char pts[128];
};

static struct agent agent_storage;

/* Small helpers */

static uint64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

static int
set_nonblock (int fd)
{
  int fl = fcntl (fd, F_GETFL);
  if (fl < 0 || fcntl (fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return -errno;
  return 0;
}

static int bytes_reserve (struct bytes *b, size_t n, size_t max);

/* A diagnostic for the sandbox's log. Until HELLO it goes to the stderr the
 * runtime gave (nothing else runs in the sandbox yet); from then on only as
 * a LOG frame on the control socket: a host fd kept here could be reopened
 * by the sandbox's processes through /proc/1/fd (gVisor lets them, as root,
 * whatever PR_SET_DUMPABLE says), and written to without bound. A frame
 * that does not fit is dropped: diagnostics never end the agent. */
static void __attribute__ ((format (printf, 2, 3))) log_msg (struct agent *a, const char *fmt, ...)
{
  char buf[SBX_PROTO_LOG_MAX];
  struct sbx_frame_hdr h = { .type = SBX_MSG_LOG };
  va_list ap;
  int n;

  n = snprintf (buf, sizeof buf, "sbx-init: ");
  va_start (ap, fmt);
  n += vsnprintf (buf + n, sizeof buf - (size_t) n - 1, fmt, ap);
  va_end (ap);
  if (n > (int) sizeof buf - 2)
    n = (int) sizeof buf - 2;
  if (a->log_fd >= 0)
    {
      buf[n++] = '\n';
      if (write (a->log_fd, buf, (size_t) n) < 0)
        return; /* nowhere left to say it */
      return;
    }
  if (a->ctl_out < 0 || bytes_reserve (&a->out, SBX_PROTO_HDR_SIZE + (size_t) n, OUT_MAX) < 0)
    return;
  h.len = (uint32_t) n;
  sbx_frame_hdr_encode (a->out.data + a->out.tail, &h);
  memcpy (a->out.data + a->out.tail + SBX_PROTO_HDR_SIZE, buf, (size_t) n);
  a->out.tail += SBX_PROTO_HDR_SIZE + (size_t) n;
}

/* Byte queues */

static size_t
bytes_len (const struct bytes *b)
{
  return b->tail - b->head;
}

/* Makes room for N more bytes at the tail; -ENOBUFS past MAX queued. */
static int
bytes_reserve (struct bytes *b, size_t n, size_t max)
{
  size_t len = bytes_len (b), cap;
  unsigned char *p;

  if (n > max || len > max - n)
    return -ENOBUFS;
  if (b->cap - b->tail >= n)
    return 0;
  if (b->head > 0)
    {
      memmove (b->data, b->data + b->head, len);
      b->head = 0;
      b->tail = len;
      if (b->cap - b->tail >= n)
        return 0;
    }
  for (cap = b->cap ? b->cap : 4096; cap - len < n; cap *= 2)
    ;
  p = realloc (b->data, cap);
  if (p == NULL)
    return -ENOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

static void
bytes_consume (struct bytes *b, size_t n)
{
  b->head += n;
  if (b->head == b->tail)
    b->head = b->tail = 0;
}

static void
bytes_free (struct bytes *b)
{
  free (b->data);
  *b = (struct bytes){ 0 };
}

/* Leaving: kill everything we started, and as PID 1 everything else. */

static void __attribute__ ((noreturn)) agent_exit (struct agent *a, int code)
{
  /* What is queued (a last LOG frame, say) goes if the socket takes it. */
  while (a->ctl_out >= 0 && bytes_len (&a->out) > 0)
    {
      ssize_t n = write (a->ctl_out, a->out.data + a->out.head, bytes_len (&a->out));
      if (n <= 0)
        break;
      bytes_consume (&a->out, (size_t) n);
    }
  for (size_t i = 0; i < a->hi; i++)
    if (a->chans[i].state != CHAN_FREE && !a->chans[i].reaped && a->chans[i].pid > 0)
      {
        kill (-a->chans[i].pid, SIGKILL);
        kill (a->chans[i].pid, SIGKILL);
      }
  if (getpid () == 1)
    kill (-1, SIGKILL);
  _exit (code);
}

/* Outbound frames */

static void
out_frame (struct agent *a, uint16_t type, uint32_t chan, const void *payload, size_t len)
{
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = type, .chan = chan };
  unsigned char *p;

  if (bytes_reserve (&a->out, SBX_PROTO_HDR_SIZE + len, OUT_MAX) < 0)
    {
      log_msg (a, "outbound buffer overflow: the monitor is not reading");
      agent_exit (a, 1);
    }
  p = a->out.data + a->out.tail;
  sbx_frame_hdr_encode (p, &h);
  if (len > 0)
    memcpy (p + SBX_PROTO_HDR_SIZE, payload, len);
  a->out.tail += SBX_PROTO_HDR_SIZE + len;
}

static void
out_u32 (struct agent *a, uint16_t type, uint32_t chan, uint32_t v)
{
  out_frame (a, type, chan, &v, sizeof v);
}

static void __attribute__ ((format (printf, 5, 6)))
out_error (struct agent *a, uint32_t chan, int32_t status, int32_t err, const char *fmt, ...)
{
  unsigned char buf[8 + ERROR_MSG_MAX];
  va_list ap;
  int n;

  memcpy (buf, &status, 4);
  memcpy (buf + 4, &err, 4);
  va_start (ap, fmt);
  n = vsnprintf ((char *) buf + 8, ERROR_MSG_MAX, fmt, ap);
  va_end (ap);
  if (n < 0)
    n = 0;
  if (n >= ERROR_MSG_MAX)
    n = ERROR_MSG_MAX - 1;
  out_frame (a, SBX_MSG_ERROR, chan, buf, 8 + (size_t) n);
}

static void
out_flush (struct agent *a)
{
  ssize_t n;

  while (bytes_len (&a->out) > 0)
    {
      n = write (a->ctl_out, a->out.data + a->out.head, bytes_len (&a->out));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
      if (n <= 0)
        {
          log_msg (a, "control socket write: %s", n < 0 ? strerror (errno) : "short write");
          agent_exit (a, 1);
        }
      bytes_consume (&a->out, (size_t) n);
    }
}

/* Channels */

static struct chan *
chan_find (struct agent *a, uint32_t id)
{
  for (size_t i = 0; i < a->hi; i++)
    if (a->chans[i].state != CHAN_FREE && a->chans[i].id == id)
      return &a->chans[i];
  return NULL;
}

static struct chan *
chan_by_pid (struct agent *a, pid_t pid)
{
  for (size_t i = 0; i < a->hi; i++)
    if (a->chans[i].state != CHAN_FREE && a->chans[i].pid == pid)
      return &a->chans[i];
  return NULL;
}

static struct chan *
chan_alloc (struct agent *a, uint32_t id)
{
  for (size_t i = 0; i < MAX_CHANS; i++)
    {
      struct chan *c = &a->chans[i];
      if (c->state != CHAN_FREE)
        continue;
      *c = (struct chan){ .state = CHAN_STARTING,
                          .id = id,
                          .status_fd = -1,
                          .out_fd = -1,
                          .err_fd = -1,
                          .in_fd = -1,
                          .pty_fd = -1,
                          .window = SBX_PROTO_WINDOW,
                          .stdin_at_bol = true };
      if (i + 1 > a->hi)
        a->hi = i + 1;
      return c;
    }
  return NULL;
}

static void
chan_free (struct agent *a, struct chan *c)
{
  close_fd (&c->status_fd);
  close_fd (&c->out_fd);
  close_fd (&c->err_fd);
  close_fd (&c->in_fd);
  close_fd (&c->pty_fd);
  bytes_free (&c->in);
  c->state = CHAN_FREE;
  while (a->hi > 0 && a->chans[a->hi - 1].state == CHAN_FREE)
    a->hi--;
}

/* Once the child is reaped its pid can be reused, and so its group id, by
 * another exec's child (each one leads its own group). */
static bool
chan_pid_reused (struct agent *a, const struct chan *c)
{
  for (size_t i = 0; i < a->hi; i++)
    if (&a->chans[i] != c && a->chans[i].state != CHAN_FREE && a->chans[i].pid == c->pid)
      return true;
  return false;
}

static void
chan_kill (struct agent *a, struct chan *c, int sig)
{
  if (c->sock)
    {
      /* A stream has no process: any signal aborts it. */
      if (c->out_fd >= 0)
        shutdown (c->out_fd, SHUT_RDWR);
      return;
    }
  if (c->pid <= 0)
    return;
  if (c->reaped)
    {
      if (!chan_pid_reused (a, c))
        kill (-c->pid, sig); /* what is left of its group */
      return;
    }
  /* Before its setsid() the group does not exist yet. */
  if (kill (-c->pid, sig) < 0)
    kill (c->pid, sig);
}

static bool
chan_output_open (const struct chan *c)
{
  return c->out_fd >= 0 || c->err_fd >= 0;
}

/* Whether the chan's output is held back by the monitor (no window, or our
 * outbound buffer full): no draining deadline runs out while it is. */
static bool
chan_flow_blocked (const struct agent *a, const struct chan *c)
{
  return c->window <= 0 || bytes_len (&a->out) >= OUT_SOFT;
}

static bool
chan_can_read (const struct agent *a, const struct chan *c)
{
  return c->state == CHAN_RUNNING && !chan_flow_blocked (a, c);
}

static void
chan_send_exit (struct agent *a, struct chan *c)
{
  struct sbx_exit_msg m = { 0 };
  unsigned char buf[12];

  if (WIFSIGNALED (c->wstatus))
    {
      m.signal = WTERMSIG (c->wstatus);
      m.status = 128 + m.signal;
    }
  else
    m.status = WEXITSTATUS (c->wstatus);
  if (c->timed_out)
    m.flags |= SBX_EXIT_F_TIMED_OUT;
  sbx_exit_encode (buf, &m);
  out_frame (a, SBX_MSG_EXIT, c->id, buf, sizeof buf);
}

/* While the monitor holds the output back, the drain deadlines wait. */
static void
chan_hold_drain (const struct agent *a, struct chan *c, uint64_t now)
{
  uint64_t t = now + DRAIN_QUIET_MS;

  if (c->state != CHAN_RUNNING || !c->reaped || !chan_output_open (c) || !chan_flow_blocked (a, c))
    return;
  if (now >= c->exit_ms + DRAIN_HELD_MAX_MS)
    return;
  if (c->drain_ms < t)
    c->drain_ms = t;
  if (c->drain_cap_ms < t)
    c->drain_cap_ms = t;
}

/* Ends a chan whose child exited once its output is drained (or given up on):
 * EXIT is its last frame. */
static void
chan_maybe_finish (struct agent *a, struct chan *c, uint64_t now)
{
  if (c->state != CHAN_RUNNING || !c->reaped)
    return;
  if (chan_output_open (c))
    {
      if (chan_flow_blocked (a, c) || now < c->drain_ms)
        return;
      close_fd (&c->out_fd);
      close_fd (&c->err_fd);
    }
  chan_send_exit (a, c);
  chan_free (a, c);
}

/* Child output */

static void
chan_read_output (struct agent *a, struct chan *c, int *fdp, uint16_t type, uint64_t now)
{
  size_t max = SBX_PROTO_MAX_PAYLOAD;
  struct sbx_frame_hdr h = { .type = type, .chan = c->id };
  unsigned char *p;
  ssize_t n;

  if ((int64_t) max > c->window)
    max = (size_t) c->window;
  if (bytes_reserve (&a->out, SBX_PROTO_HDR_SIZE + max, OUT_MAX) < 0)
    return;
  p = a->out.data + a->out.tail;
  do
    n = read (*fdp, p + SBX_PROTO_HDR_SIZE, max);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return;
  if (n <= 0)
    {
      /* EOF, or EIO from a pty master whose slave is gone. A stream ends
       * with its peer's end (or an error: refused, reset). */
      close_fd (fdp);
      if (c->sock)
        {
          c->reaped = true;
          c->exit_ms = now;
        }
      return;
    }
  h.len = (uint32_t) n;
  sbx_frame_hdr_encode (p, &h);
  a->out.tail += SBX_PROTO_HDR_SIZE + (size_t) n;
  c->window -= n;
  if (c->reaped)
    c->drain_ms = now + DRAIN_QUIET_MS < c->drain_cap_ms ? now + DRAIN_QUIET_MS : c->drain_cap_ms;
}

/* Child stdin */

/* Stdin the child will never read still counts as consumed, so that the
 * monitor's stdin window for this channel never stalls. */
static void
chan_drop_stdin (struct chan *c)
{
  if (c->sock && c->in_fd >= 0)
    shutdown (c->in_fd, SHUT_WR);
  c->in_credit += (uint32_t) bytes_len (&c->in);
  close_fd (&c->in_fd);
  bytes_free (&c->in);
}

static void
chan_flush_stdin (struct chan *c)
{
  ssize_t n;

  while (c->in_fd >= 0 && bytes_len (&c->in) > 0)
    {
      n = write (c->in_fd, c->in.data + c->in.head, bytes_len (&c->in));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
      if (n <= 0)
        {
          chan_drop_stdin (c); /* EPIPE: the child closed its stdin */
          return;
        }
      bytes_consume (&c->in, (size_t) n);
      c->in_credit += (uint32_t) n;
    }
  if (c->stdin_eof && bytes_len (&c->in) == 0)
    chan_drop_stdin (c);
}

static void
chan_queue_stdin (struct chan *c, const void *p, size_t len)
{
  if (c->in_fd < 0 || c->stdin_eof || len == 0)
    {
      c->in_credit += (uint32_t) len;
      return;
    }
  if (bytes_reserve (&c->in, len, STDIN_MAX) < 0)
    {
      chan_drop_stdin (c);
      return;
    }
  memcpy (c->in.data + c->in.tail, p, len);
  c->in.tail += len;
  c->stdin_at_bol = ((const unsigned char *) p)[len - 1] == '\n';
  chan_flush_stdin (c);
}

/* A pty has no half-close: EOF is the terminal's EOF character at the start
 * of a line (one ^D ends a partial line, a second one reads as EOF). */
static void
chan_stdin_eof (struct chan *c)
{
  static const unsigned char eof2[2] = { 4, 4 };

  if (c->tty && c->in_fd >= 0 && !c->stdin_eof)
    chan_queue_stdin (c, eof2, c->stdin_at_bol ? 1 : 2);
  c->stdin_eof = true;
  chan_flush_stdin (c);
}

/* The child: from fork to exec */

static void __attribute__ ((noreturn, format (printf, 4, 5)))
child_fail (int fd, enum child_step step, int err, const char *fmt, ...)
{
  struct child_err ce = { .step = step, .err = err };
  va_list ap;
  ssize_t n;

  va_start (ap, fmt);
  vsnprintf (ce.msg, sizeof ce.msg, fmt, ap);
  va_end (ap);
  do
    n = write (fd, &ce, sizeof ce);
  while (n < 0 && errno == EINTR);
  _exit (127);
}

static void __attribute__ ((noreturn)) child_fail_exec (int fd, const char *cmd, int err)
{
  if (err == ENOENT && strchr (cmd, '/') == NULL)
    child_fail (fd, STEP_EXEC, err, "`%.200s`: command not found", cmd);
  if (err == EACCES || err == ENOEXEC)
    child_fail (fd, STEP_EXEC, err, "`%.200s`: not executable: %s", cmd, strerror (err));
  child_fail (fd, STEP_EXEC, err, "`%.200s`: %s", cmd, strerror (err));
}

static int
child_tty (const struct sbx_exec_req *req, const struct spawn_fds *f)
{
  struct winsize ws = { .ws_row = req->rows ? req->rows : 24, .ws_col = req->cols ? req->cols : 80 };
  int fd = open (f->pts, O_RDWR | O_NOCTTY);

  if (fd < 0 || ioctl (fd, TIOCSCTTY, 0) < 0 || ioctl (fd, TIOCSWINSZ, &ws) < 0)
    return -1;
  if (dup2 (fd, 0) < 0 || dup2 (fd, 1) < 0 || dup2 (fd, 2) < 0)
    return -1;
  if (fd > 2)
    close (fd);
  return 0;
}

static int
child_stdio (const struct sbx_exec_req *req, const struct spawn_fds *f)
{
  if (req->flags & SBX_EXEC_F_TTY)
    return child_tty (req, f);
  /* Without a stdin pipe fd 0 stays the agent's /dev/null. */
  if (f->in_r >= 0 && dup2 (f->in_r, 0) < 0)
    return -1;
  if (dup2 (f->out_w, 1) < 0 || dup2 (f->err_w, 2) < 0)
    return -1;
  return 0;
}

static int
child_user (const struct exec_user *u)
{
  if (!u->set)
    return 0;
  if (setgroups (0, NULL) < 0 || setgid (u->gid) < 0 || setuid (u->uid) < 0)
    return -1;
  return 0;
}

static const char *
env_get (char *const *envp, const char *name)
{
  size_t n = strlen (name);

  for (size_t i = 0; envp[i] != NULL; i++)
    if (strncmp (envp[i], name, n) == 0 && envp[i][n] == '=')
      return envp[i] + n + 1;
  return NULL;
}

/* execvpe, but searching the PATH of the environment the command gets
 * (glibc's searches the caller's). Returns the errno to report: EACCES if
 * some candidate was found but could not run, else ENOENT. No /bin/sh
 * fallback for scripts without #!: that is ENOEXEC. */
static int
exec_search (char *const *argv, char *const *envp)
{
  const char *file = argv[0], *path, *p, *end;
  size_t flen = strlen (file), dlen;
  char buf[PATH_MAX];
  bool eacces = false;

  if (flen == 0)
    return ENOENT;
  if (strchr (file, '/') != NULL)
    {
      execve (file, argv, envp);
      return errno;
    }
  path = env_get (envp, "PATH");
  if (path == NULL)
    path = DEFAULT_PATH;
  for (p = path;; p = end + 1)
    {
      end = strchrnul (p, ':');
      dlen = (size_t) (end - p);
      if (dlen + 2 + flen + 1 <= sizeof buf)
        {
          memcpy (buf, p, dlen);
          if (dlen == 0)
            buf[dlen++] = '.';
          buf[dlen] = '/';
          memcpy (buf + dlen + 1, file, flen + 1);
          execve (buf, argv, envp);
          if (errno == EACCES)
            eacces = true;
          else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP && errno != ENAMETOOLONG)
            return errno;
        }
      if (*end == '\0')
        break;
    }
  return eacces ? EACCES : ENOENT;
}

/* ENVP with the secrets' entries: those of ENVP whose key a secret has
 * are left out, the secrets appended. In the child, before its exec. */
static char **
env_with_secrets (const struct agent *a, char *const *envp)
{
  size_t n = 0, k = 0;
  char **out;

  while (envp[n] != NULL)
    n++;
  out = malloc ((n + a->nsecret_env + 1) * sizeof *out);
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    {
      bool shadowed = false;
      for (size_t j = 0; j < a->nsecret_env && !shadowed; j++)
        {
          size_t kl = (size_t) (strchr (a->secret_env[j], '=') - a->secret_env[j]);
          shadowed = strncmp (envp[i], a->secret_env[j], kl + 1) == 0;
        }
      if (!shadowed)
        out[k++] = envp[i];
    }
  for (size_t j = 0; j < a->nsecret_env; j++)
    out[k++] = a->secret_env[j];
  out[k] = NULL;
  return out;
}

static char env_path[] = "PATH=" DEFAULT_PATH;
static char env_home[] = "HOME=/root";
static char env_term[] = "TERM=xterm";

static void __attribute__ ((noreturn))
child_exec (struct agent *a, const struct sbx_exec_req *req, const struct exec_user *u, const struct spawn_fds *f)
{
  char *default_env[] = { env_path, env_home, NULL, NULL };
  char *const *envp = req->envp;
  const char *cwd = req->cwd ? req->cwd : "/";
  sigset_t none;

  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  signal (SIGPIPE, SIG_DFL);
  setrlimit (RLIMIT_NOFILE, &a->nofile);
  if (setsid () < 0 || child_stdio (req, f) < 0)
    child_fail (f->status_w, STEP_SETUP, errno, "set up the process: %s", strerror (errno));
  if (child_user (u) < 0)
    child_fail (f->status_w, STEP_USER, errno, "user `%.200s`: %s", req->user, strerror (errno));
  if (chdir (cwd) < 0)
    child_fail (f->status_w, STEP_CWD, errno, "cwd `%.200s`: %s", cwd, strerror (errno));
  if (req->envc == 0)
    {
      if (req->flags & SBX_EXEC_F_TTY)
        default_env[2] = env_term;
      envp = default_env;
    }
  if (a->nsecret_env > 0 && (envp = env_with_secrets (a, envp)) == NULL)
    child_fail (f->status_w, STEP_SETUP, ENOMEM, "set up the environment: %s", strerror (ENOMEM));
  child_fail_exec (f->status_w, req->argv[0], exec_search (req->argv, envp));
}

/* Starting an exec */

static void
spawn_fds_close (struct spawn_fds *f)
{
  close_fd (&f->status_r);
  close_fd (&f->status_w);
  close_fd (&f->out_r);
  close_fd (&f->out_w);
  close_fd (&f->err_r);
  close_fd (&f->err_w);
  close_fd (&f->in_r);
  close_fd (&f->in_w);
  close_fd (&f->master);
}

static int
open_pty (struct spawn_fds *f)
{
  f->master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (f->master < 0)
    return -errno;
  if (grantpt (f->master) < 0 || unlockpt (f->master) < 0)
    return -errno;
  if (ptsname_r (f->master, f->pts, sizeof f->pts) != 0)
    return -errno;
  return set_nonblock (f->master);
}

static int
open_pipe (int *r, int *w)
{
  int p[2];

  if (pipe2 (p, O_CLOEXEC) < 0)
    return -errno;
  *r = p[0];
  *w = p[1];
  return 0;
}

/* The agent's ends are nonblocking; the child's ends stay blocking. */
static int
spawn_fds_open (struct spawn_fds *f, uint32_t flags)
{
  int ret = open_pipe (&f->status_r, &f->status_w);

  if (ret == 0)
    ret = set_nonblock (f->status_r);
  if (ret == 0 && (flags & SBX_EXEC_F_TTY))
    return open_pty (f);
  if (ret == 0)
    ret = open_pipe (&f->out_r, &f->out_w);
  if (ret == 0)
    fcntl (f->out_r, F_SETPIPE_SZ, OUT_PIPE_SIZE); /* fewer, fuller frames; best effort */
  if (ret == 0)
    ret = open_pipe (&f->err_r, &f->err_w);
  if (ret == 0 && (flags & SBX_EXEC_F_STDIN))
    ret = open_pipe (&f->in_r, &f->in_w);
  if (ret == 0)
    ret = set_nonblock (f->out_r);
  if (ret == 0)
    ret = set_nonblock (f->err_r);
  if (ret == 0 && f->in_w >= 0)
    ret = set_nonblock (f->in_w);
  return ret;
}

/* For a pty: the master for output, a dup of it for resizing, and another
 * for stdin, so that each can be closed on its own. Made before the fork so
 * nothing can fail after it. */
static int
spawn_pty_dups (struct spawn_fds *f, uint32_t flags, int *ret_pty, int *ret_in)
{
  int pty, in = -1;

  pty = fcntl (f->master, F_DUPFD_CLOEXEC, 3);
  if (pty < 0)
    return -errno;
  if (flags & SBX_EXEC_F_STDIN)
    {
      in = fcntl (f->master, F_DUPFD_CLOEXEC, 3);
      if (in < 0)
        {
          close (pty);
          return -errno;
        }
    }
  *ret_pty = pty;
  *ret_in = in;
  return 0;
}

/* Moves the agent's ends into C. */
static void
chan_take_fds (struct chan *c, struct spawn_fds *f)
{
  c->status_fd = f->status_r;
  f->status_r = -1;
  if (f->master >= 0)
    {
      c->tty = true;
      c->out_fd = f->master;
      f->master = -1;
      return;
    }
  c->out_fd = f->out_r;
  c->err_fd = f->err_r;
  c->in_fd = f->in_w;
  f->out_r = f->err_r = f->in_w = -1;
}

static int
chan_spawn (struct agent *a, struct chan *c, const struct sbx_exec_req *req, const struct exec_user *u)
{
  struct spawn_fds f = { -1, -1, -1, -1, -1, -1, -1, -1, -1, "" };
  int ret = spawn_fds_open (&f, req->flags), pty = -1, in = -1;
  pid_t pid = -1;

  if (ret == 0 && f.master >= 0)
    ret = spawn_pty_dups (&f, req->flags, &pty, &in);
  /* vfork: the child borrows our memory until it execs, where copying the
   * page tables costs milliseconds under gVisor's ptrace platform. The
   * child only makes syscalls, formats into its own stack, and ends in
   * execve or _exit; signal dispositions and the signal mask it changes are
   * its own (no CLONE_SIGHAND, per-task mask). The cost: the agent waits
   * while the child sets up and execs, a few syscalls long. */
  if (ret == 0)
    {
      pid = vfork ();
      if (pid < 0)
        ret = -errno;
    }
  if (pid == 0)
    child_exec (a, req, u, &f);
  if (ret == 0)
    {
      c->pid = pid;
      chan_take_fds (c, &f);
      c->pty_fd = pty;
      c->in_fd = c->tty ? in : c->in_fd;
      pty = in = -1;
    }
  close_fd (&pty);
  close_fd (&in);
  spawn_fds_close (&f);
  return ret;
}

/* "UID" or "UID:GID", decimal; UID alone also sets GID = UID. */
static bool
parse_id (const char *s, size_t len, uint32_t *ret)
{
  uint64_t v = 0;

  if (len == 0 || len > 10)
    return false;
  for (size_t i = 0; i < len; i++)
    {
      if (s[i] < '0' || s[i] > '9')
        return false;
      v = v * 10 + (uint64_t) (s[i] - '0');
    }
  if (v >= UINT32_MAX) /* (uid_t) -1 means "unchanged" */
    return false;
  *ret = (uint32_t) v;
  return true;
}

static bool
parse_user (const char *s, struct exec_user *u)
{
  const char *colon;
  uint32_t uid, gid;

  *u = (struct exec_user){ 0 };
  if (s == NULL)
    return true;
  colon = strchr (s, ':');
  if (!parse_id (s, colon ? (size_t) (colon - s) : strlen (s), &uid))
    return false;
  gid = uid;
  if (colon != NULL && !parse_id (colon + 1, strlen (colon + 1), &gid))
    return false;
  *u = (struct exec_user){ .set = true, .uid = uid, .gid = gid };
  return true;
}

/* Checks an EXEC before anything is made for it. Returns 0, or -1 with an
 * ERROR frame (status 125) queued. */
static int
exec_check (struct agent *a, uint32_t id, const unsigned char *p, size_t len, struct exec_user *u)
{
  struct sbx_exec_req *req = &a->req;

  if (id == 0)
    out_error (a, id, 125, EINVAL, "channel 0 cannot run a command");
  else if (chan_find (a, id) != NULL)
    out_error (a, id, 125, EEXIST, "channel %u is already in use", id);
  else if (sbx_exec_decode (p, len, req) < 0)
    out_error (a, id, 125, EPROTO, "malformed EXEC request");
  else if (!parse_user (req->user, u))
    out_error (a, id, 125, EINVAL, "user `%.200s`: expected a numeric UID or UID:GID", req->user);
  else
    return 0;
  return -1;
}

static void
handle_exec (struct agent *a, uint32_t id, const unsigned char *p, size_t len)
{
  struct sbx_exec_req *req = &a->req;
  struct exec_user u;
  struct chan *c;
  int ret;

  if (exec_check (a, id, p, len, &u) < 0)
    return;
  c = chan_alloc (a, id);
  if (c == NULL)
    {
      out_error (a, id, 125, EAGAIN, "too many processes (at most %d)", MAX_CHANS);
      return;
    }
  ret = chan_spawn (a, c, req, &u);
  if (ret < 0)
    {
      chan_free (a, c);
      out_error (a, id, 125, -ret, "start `%.200s`: %s", req->argv[0], strerror (-ret));
      return;
    }
  if (req->timeout_ms > 0)
    c->deadline_ms = now_ms () + (req->timeout_ms < TIMEOUT_MAX_MS ? req->timeout_ms : TIMEOUT_MAX_MS);
}

/* CONNECT: a stream to the sandbox's own loopback. A refused connection
 * shows as an immediate end (EXIT with nothing read). */
static void
handle_connect (struct agent *a, uint32_t id, const unsigned char *p, size_t len)
{
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  uint16_t port;
  struct chan *c;
  int fd;

  if (len != sizeof port || chan_find (a, id) != NULL || id == 0)
    {
      out_error (a, id, 125, EINVAL, "bad CONNECT request");
      return;
    }
  memcpy (&port, p, sizeof port);
  sa.sin_port = htons (port);
  c = chan_alloc (a, id);
  if (c == NULL)
    {
      out_error (a, id, 125, EAGAIN, "too many channels (at most %d)", MAX_CHANS);
      return;
    }
  fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0 && errno != EINPROGRESS))
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      chan_free (a, c);
      out_error (a, id, 125, e, "connect to port %u: %s", port, strerror (e));
      return;
    }
  c->sock = true;
  c->out_fd = fd;
  c->in_fd = dup (fd);
  if (c->in_fd >= 0)
    set_nonblock (c->in_fd);
  c->state = CHAN_RUNNING;
}

/* The child's error pipe: EOF means it exec'ed (or died trying, killed);
 * a record means it could not. */

static int32_t
child_err_status (const struct child_err *ce)
{
  if (ce->step != STEP_EXEC)
    return 125;
  return ce->err == ENOENT || ce->err == ENOTDIR ? 127 : 126;
}

static void
chan_read_status (struct agent *a, struct chan *c)
{
  struct child_err ce;
  ssize_t n;

  do
    n = read (c->status_fd, &ce, sizeof ce);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return;
  if (n == 0)
    {
      close_fd (&c->status_fd);
      c->state = CHAN_RUNNING;
      out_u32 (a, SBX_MSG_STARTED, c->id, (uint32_t) c->pid);
      return;
    }
  if (n != (ssize_t) sizeof ce)
    ce = (struct child_err){ .step = STEP_SETUP, .err = EPROTO, .msg = "start: lost the child's status" };
  ce.msg[sizeof ce.msg - 1] = '\0';
  out_error (a, c->id, child_err_status (&ce), ce.err, "%s", ce.msg);
  chan_free (a, c); /* the child is exiting; it is reaped as an unknown pid */
}

/* Frames from the monitor */

static uint32_t
payload_u32 (const unsigned char *p)
{
  uint32_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

/* A signal number out of range is ignored rather than fatal: the monitor
 * relays the number a client asked for. */
static void
handle_signal_frame (struct agent *a, struct chan *c, const unsigned char *p)
{
  uint32_t sig = payload_u32 (p);

  if (sig == 0 || sig >= _NSIG)
    {
      log_msg (a, "ignoring SIGNAL %u on channel %u", sig, c->id);
      return;
    }
  chan_kill (a, c, (int) sig);
}

static void
handle_resize (struct chan *c, const unsigned char *p)
{
  struct winsize ws = { 0 };
  uint16_t v[2];

  memcpy (v, p, sizeof v);
  ws.ws_row = v[0];
  ws.ws_col = v[1];
  if (c->pty_fd >= 0)
    ioctl (c->pty_fd, TIOCSWINSZ, &ws);
}

static void
handle_credit (struct chan *c, const unsigned char *p)
{
  c->window += payload_u32 (p);
  if (c->window > WINDOW_MAX)
    c->window = WINDOW_MAX;
}

/* Frames for a chan that has already ended are dropped: they crossed its
 * EXIT or ERROR on the wire. */
static void
handle_chan_frame (struct agent *a, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  struct chan *c = chan_find (a, h->chan);

  if (c == NULL)
    return;
  switch (h->type)
    {
    case SBX_MSG_STDIN:
      chan_queue_stdin (c, p, h->len);
      return;
    case SBX_MSG_STDIN_EOF:
      chan_stdin_eof (c);
      return;
    case SBX_MSG_SIGNAL:
      handle_signal_frame (a, c, p);
      return;
    case SBX_MSG_RESIZE:
      handle_resize (c, p);
      return;
    case SBX_MSG_CREDIT:
      handle_credit (c, p);
      return;
    default:
      return;
    }
}

/* Secrets */

static void
secret_env_set (struct agent *a, const struct sbx_secret_msg *m)
{
  size_t kl = strlen (m->name);
  char *e = malloc (kl + 1 + m->value_len + 1);

  if (e == NULL)
    {
      log_msg (a, "secret for %s: out of memory", m->name);
      agent_exit (a, 1);
    }
  memcpy (e, m->name, kl);
  e[kl] = '=';
  memcpy (e + kl + 1, m->value, m->value_len);
  e[kl + 1 + m->value_len] = '\0';
  for (size_t j = 0; j < a->nsecret_env; j++)
    if (strncmp (a->secret_env[j], e, kl + 1) == 0)
      {
        explicit_bzero (a->secret_env[j], strlen (a->secret_env[j]));
        free (a->secret_env[j]);
        a->secret_env[j] = e;
        return;
      }
  if (a->nsecret_env + a->nsecret_files >= SBX_SECRETS_MAX)
    {
      free (e);
      log_msg (a, "more than %d secrets", SBX_SECRETS_MAX);
      agent_exit (a, 1);
    }
  a->secret_env[a->nsecret_env++] = e;
}

/* /run/secrets/NAME, mode 0400, replaced whole (a temp file renamed over
 * it), on the tmpfs the spec mounts there and nowhere else: a directory
 * that is not a tmpfs would put the value into the writable layer. */
static int
secret_file_write (const struct sbx_secret_msg *m)
{
  char tmp[SBX_SECRET_NAME_MAX + 8];
  struct statfs sfs;
  size_t off = 0;
  int dfd, fd, ret = 0;

  dfd = open ("/run/secrets", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return -errno;
  if (fstatfs (dfd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC)
    {
      close (dfd);
      return -EXDEV;
    }
  snprintf (tmp, sizeof tmp, ".%s.tmp", m->name);
  unlinkat (dfd, tmp, 0);
  fd = openat (dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
  if (fd < 0 || fchmod (fd, 0400) < 0)
    ret = -errno;
  while (ret == 0 && off < m->value_len)
    {
      ssize_t n = write (fd, m->value + off, m->value_len - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        ret = n < 0 ? -errno : -EIO;
      else
        off += (size_t) n;
    }
  if (fd >= 0)
    close (fd);
  if (ret == 0 && renameat (dfd, tmp, dfd, m->name) < 0)
    ret = -errno;
  if (ret < 0)
    unlinkat (dfd, tmp, 0);
  close (dfd);
  return ret;
}

/* A SECRET: strictly decoded; one the agent cannot install ends it, and
 * with it the sandbox's start (the monitor waits for the PONG after them). */
static void
handle_secret (struct agent *a, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  struct sbx_secret_msg m;
  int ret;

  if (sbx_secret_decode (p, h->len, &m) < 0)
    {
      log_msg (a, "malformed SECRET frame from the monitor");
      agent_exit (a, 1);
    }
  if (m.kind == SBX_SECRET_ENV)
    {
      secret_env_set (a, &m);
      return;
    }
  ret = secret_file_write (&m);
  if (ret < 0)
    {
      log_msg (a, "secret file /run/secrets/%s: %s", m.name,
               ret == -EXDEV ? "/run/secrets is not the tmpfs sbx mounts there" : strerror (-ret));
      agent_exit (a, 1);
    }
  a->nsecret_files++;
}

static void
handle_frame (struct agent *a, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  switch (h->type)
    {
    case SBX_MSG_EXEC:
      handle_exec (a, h->chan, p, h->len);
      return;
    case SBX_MSG_CONNECT:
      handle_connect (a, h->chan, p, h->len);
      return;
    case SBX_MSG_SECRET:
      handle_secret (a, h, p);
      return;
    case SBX_MSG_STDIN:
    case SBX_MSG_STDIN_EOF:
    case SBX_MSG_SIGNAL:
    case SBX_MSG_RESIZE:
    case SBX_MSG_CREDIT:
      handle_chan_frame (a, h, p);
      return;
    case SBX_MSG_PING:
      out_frame (a, SBX_MSG_PONG, h->chan, p, h->len);
      return;
    case SBX_MSG_PONG:
      return;
    case SBX_MSG_SHUTDOWN:
      out_flush (a);
      agent_exit (a, 0);
    default:
      log_msg (a, "unexpected frame type %u from the monitor", h->type);
      agent_exit (a, 1);
    }
}

static void
handle_ctl (struct agent *a)
{
  struct sbx_frame_hdr h;
  const unsigned char *p;
  int ret;

  for (int i = 0; i < FRAMES_PER_WAKEUP && bytes_len (&a->out) < OUT_HARD; i++)
    {
      ret = sbx_frame_read (a->ctl_in, &a->rd, &h, &p);
      if (ret == 0)
        return;
      if (ret < 0)
        {
          log_msg (a, "control socket: %s", ret == -EPIPE ? "closed" : strerror (-ret));
          agent_exit (a, 1);
        }
      handle_frame (a, &h, p);
    }
}

/* Signals and zombies */

static void
reap_children (struct agent *a, uint64_t now)
{
  struct chan *c;
  int st;
  pid_t pid;

  while ((pid = waitpid (-1, &st, WNOHANG)) > 0)
    {
      c = chan_by_pid (a, pid);
      if (c == NULL || c->reaped)
        continue; /* an orphan reparented to PID 1 */
      c->reaped = true;
      c->wstatus = st;
      c->exit_ms = now;
      c->drain_ms = now + DRAIN_QUIET_MS;
      c->drain_cap_ms = now + DRAIN_MAX_MS;
    }
}

static void
handle_signals (struct agent *a)
{
  struct signalfd_siginfo si;

  while (read (a->sfd, &si, sizeof si) == (ssize_t) sizeof si)
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
      agent_exit (a, 0);
  reap_children (a, now_ms ());
}

/* Deadlines: exec timeouts and output draining after exit */

static void
check_timers (struct agent *a, uint64_t now)
{
  for (size_t i = 0; i < a->hi; i++)
    {
      struct chan *c = &a->chans[i];
      if (c->state == CHAN_FREE)
        continue;
      if (!c->reaped && c->deadline_ms != 0 && !c->timed_out && now >= c->deadline_ms)
        {
          c->timed_out = true;
          chan_kill (a, c, SIGKILL);
        }
      chan_hold_drain (a, c, now);
      chan_maybe_finish (a, c, now);
    }
}

static int
poll_timeout (const struct agent *a, uint64_t now)
{
  uint64_t next = UINT64_MAX;

  for (size_t i = 0; i < a->hi; i++)
    {
      const struct chan *c = &a->chans[i];
      if (c->state == CHAN_FREE)
        continue;
      if (!c->reaped && c->deadline_ms != 0 && !c->timed_out && c->deadline_ms < next)
        next = c->deadline_ms;
      if (c->state == CHAN_RUNNING && c->reaped && !chan_flow_blocked (a, c) && c->drain_ms < next)
        next = c->drain_ms;
    }
  if (next == UINT64_MAX)
    return -1;
  if (next <= now)
    return 0;
  return next - now > INT_MAX ? INT_MAX : (int) (next - now);
}

/* The poll loop */

static size_t
poll_add (struct agent *a, size_t n, int fd, short events, enum poll_kind kind, struct chan *c)
{
  a->pfd[n] = (struct pollfd){ .fd = fd, .events = events };
  a->ref[n] = (struct poll_ref){ .kind = kind, .c = c };
  return n + 1;
}

static size_t
poll_build (struct agent *a)
{
  size_t n = 0;

  n = poll_add (a, n, a->sfd, POLLIN, P_SIGNAL, NULL);
  if (bytes_len (&a->out) < OUT_HARD)
    n = poll_add (a, n, a->ctl_in, POLLIN, P_CTL, NULL);
  if (bytes_len (&a->out) > 0)
    n = poll_add (a, n, a->ctl_out, POLLOUT, P_CTL_OUT, NULL);
  for (size_t i = 0; i < a->hi; i++)
    {
      struct chan *c = &a->chans[i];
      if (c->state == CHAN_FREE)
        continue;
      if (c->status_fd >= 0)
        n = poll_add (a, n, c->status_fd, POLLIN, P_STATUS, c);
      if (c->out_fd >= 0 && chan_can_read (a, c))
        n = poll_add (a, n, c->out_fd, POLLIN, P_OUT, c);
      if (c->err_fd >= 0 && chan_can_read (a, c))
        n = poll_add (a, n, c->err_fd, POLLIN, P_ERR, c);
      if (c->in_fd >= 0 && bytes_len (&c->in) > 0)
        n = poll_add (a, n, c->in_fd, POLLOUT, P_IN, c);
    }
  return n;
}

/* One ready fd of a chan. Entries made stale by an earlier one in the same
 * round (the chan freed, the fd closed) are skipped. */
static void
dispatch_chan (struct agent *a, const struct pollfd *pfd, const struct poll_ref *ref, uint64_t now)
{
  struct chan *c = ref->c;

  if (c->state == CHAN_FREE)
    return;
  switch (ref->kind)
    {
    case P_STATUS:
      if (c->status_fd == pfd->fd)
        chan_read_status (a, c);
      return;
    case P_OUT:
      if (c->out_fd == pfd->fd && chan_can_read (a, c))
        chan_read_output (a, c, &c->out_fd, SBX_MSG_STDOUT, now);
      return;
    case P_ERR:
      if (c->err_fd == pfd->fd && chan_can_read (a, c))
        chan_read_output (a, c, &c->err_fd, SBX_MSG_STDERR, now);
      return;
    case P_IN:
      if (c->in_fd == pfd->fd)
        chan_flush_stdin (c);
      return;
    default:
      return;
    }
}

/* The stdin window: the monitor sends at most SBX_PROTO_WINDOW bytes of a
 * channel's stdin ahead of what the child has taken; this returns what it
 * took. */
static void
send_stdin_credit (struct agent *a)
{
  for (size_t i = 0; i < a->hi; i++)
    {
      struct chan *c = &a->chans[i];
      if (c->in_credit == 0)
        continue;
      if (c->state != CHAN_FREE)
        out_frame (a, SBX_MSG_CREDIT, c->id, &c->in_credit, sizeof c->in_credit);
      c->in_credit = 0;
    }
}

static void
loop_once (struct agent *a)
{
  size_t n = poll_build (a);
  bool ctl_ready = false;
  uint64_t now;

  if (poll (a->pfd, n, poll_timeout (a, now_ms ())) < 0 && errno != EINTR)
    {
      log_msg (a, "poll: %s", strerror (errno));
      agent_exit (a, 1);
    }
  now = now_ms ();
  for (size_t i = 0; i < n; i++)
    {
      if (a->pfd[i].revents == 0)
        continue;
      if (a->ref[i].kind == P_SIGNAL)
        handle_signals (a);
      else if (a->ref[i].kind == P_CTL)
        ctl_ready = true;
      else if (a->ref[i].kind == P_CTL_OUT)
        continue; /* out_flush below, every round */
      else
        dispatch_chan (a, &a->pfd[i], &a->ref[i], now);
    }
  check_timers (a, now);
  /* Last, so that an EXEC cannot reuse a slot or an fd still in this round. */
  if (ctl_ready)
    handle_ctl (a);
  send_stdin_credit (a);
  out_flush (a);
}

/* Start-up */

/* Closes the fds listed in /proc/self/fd: one syscall each, where a loop
 * to the limit costs 65536 under gVisor's ptrace platform (no close_range
 * there). */
static bool
close_listed_fds (int from)
{
  int dfd = open ("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return false;
  int fds[1024];
  size_t n = 0;
  char buf[4096];
  long got;
  while ((got = syscall (SYS_getdents64, dfd, buf, sizeof buf)) > 0)
    for (long off = 0; off < got;)
      {
        struct linux_dirent64_min {
          uint64_t ino;
          int64_t off;
          unsigned short reclen;
          unsigned char type;
          char name[];
        } *d = (void *) (buf + off);
        int fd = atoi (d->name);
        if (d->name[0] >= '0' && d->name[0] <= '9' && fd >= from && fd != dfd && n < 1024)
          fds[n++] = fd;
        off += d->reclen;
      }
  close (dfd);
  if (got < 0 || n == 1024)
    return false;
  for (size_t i = 0; i < n; i++)
    close (fds[i]);
  return true;
}

static void
close_fds_from (int from, rlim_t limit)
{
#ifdef SYS_close_range
  if (syscall (SYS_close_range, (unsigned) from, ~0U, 0) == 0)
    return;
#endif
  if (close_listed_fds (from))
    return;
  if (limit > (1u << 20))
    limit = 1u << 20;
  for (int fd = from; (rlim_t) fd < limit; fd++)
    close (fd);
}

static void
setup_limits (struct agent *a)
{
  struct rlimit r;

  if (getrlimit (RLIMIT_NOFILE, &a->nofile) < 0)
    a->nofile = (struct rlimit){ 1024, 1024 };
  r = a->nofile;
  if (r.rlim_cur < 8 * MAX_CHANS)
    {
      r.rlim_cur = r.rlim_max < 8 * MAX_CHANS ? r.rlim_max : 8 * MAX_CHANS;
      setrlimit (RLIMIT_NOFILE, &r);
    }
}

static bool
same_file (int fd1, int fd2)
{
  struct stat s1, s2;

  return fstat (fd1, &s1) == 0 && fstat (fd2, &s2) == 0 && s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino;
}

static int
dup_high (int fd)
{
  int r = fcntl (fd, F_DUPFD_CLOEXEC, CTL_FD_MIN);

  if (r < 0)
    r = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (r < 0)
    _exit (1);
  return r;
}

/* The control channel moves to high CLOEXEC fds, stderr (if it is something
 * else) becomes the log until HELLO (log_msg), and 0-2 become /dev/null:
 * what children inherit when they are given nothing else. Everything else
 * is closed. */
static void
setup_fds (struct agent *a)
{
  int null;

  close_fds_from (3, a->nofile.rlim_cur);
  a->ctl_in = dup_high (0);
  a->ctl_out = dup_high (1);
  a->log_fd = -1;
  if (fcntl (2, F_GETFD) >= 0 && !same_file (0, 2) && !same_file (1, 2))
    a->log_fd = fcntl (2, F_DUPFD_CLOEXEC, 3);
  if (a->log_fd >= 0)
    set_nonblock (a->log_fd);
  null = open ("/dev/null", O_RDWR);
  if (null < 0)
    {
      log_msg (a, "open /dev/null: %s", strerror (errno));
      _exit (1);
    }
  for (int fd = 0; fd <= 2; fd++)
    if (null != fd)
      dup2 (null, fd);
  if (null > 2)
    close (null);
  if (set_nonblock (a->ctl_in) < 0 || set_nonblock (a->ctl_out) < 0)
    _exit (1);
}

static void
setup_signals (struct agent *a)
{
  sigset_t set;

  sigemptyset (&set);
  sigaddset (&set, SIGCHLD);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  sigprocmask (SIG_BLOCK, &set, NULL);
  a->sfd = signalfd (-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (a->sfd < 0)
    {
      log_msg (a, "signalfd: %s", strerror (errno));
      _exit (1);
    }
}

/* Under the runtime's no_new_privileges (set here too, for sure), without
 * TSYNC: nothing else runs in this process yet. A sandbox never runs without
 * its filter: failing, init exits before HELLO and the start fails. */
static void
load_seccomp (bool docker)
{
  struct sock_fprog prog = { .len = (unsigned short) (sizeof sbx_seccomp_filter / sizeof sbx_seccomp_filter[0]),
                             .filter = (struct sock_filter *) sbx_seccomp_filter };
  /* `--docker`, which only the spec of a runc sandbox made with --docker
   * passes (spec.c): the profile that lets dockerd make containers. */
  if (docker)
    prog = (struct sock_fprog){ .len = (unsigned short) (sizeof sbx_seccomp_filter_docker
                                                         / sizeof sbx_seccomp_filter_docker[0]),
                                .filter = (struct sock_filter *) sbx_seccomp_filter_docker };
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
    {
      char msg[160];
      int n = snprintf (msg, sizeof msg, "sbx-init: load the seccomp profile: %s\n", strerror (errno));
      if (n > 0 && write (2, msg, (size_t) n) < 0)
        _exit (125);
      _exit (125);
    }
}

int
main (int argc, char **argv)
{
  struct agent *a = &agent_storage;
  uint32_t hello[3] = { SBX_PROTO_VERSION, (uint32_t) getpid (), SBX_HELLO_SECCOMP };

  a->ctl_in = a->ctl_out = a->log_fd = -1;

  /* `/.sbx/init --sync`: flushes the sandbox's writes to its files (sbx
   * commit runs it; under gVisor written data may sit in the sandbox's own
   * page cache until then). Any other use is the agent, PID 1. */
  if (argc == 2 && strcmp (argv[1], "--sync") == 0)
    {
      sync ();
      return 0;
    }
  if (getpid () != 1)
    {
      static const char msg[] = "sbx-init: the sandbox's PID 1 (only --sync may be run by hand)\n";
      if (write (2, msg, sizeof msg - 1) < 0)
        return 2;
      return 2;
    }

  load_seccomp (argc == 2 && strcmp (argv[1], "--docker") == 0);
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
  signal (SIGPIPE, SIG_IGN);
  setup_limits (a);
  setup_fds (a);
  setup_signals (a);
  out_frame (a, SBX_MSG_HELLO, 0, hello, sizeof hello);
  out_flush (a);
  /* The runtime's stderr reaches the host's log: no process of the
   * sandbox, the first of which starts after HELLO, may find it here. */
  close_fd (&a->log_fd);
  for (;;)
    loop_once (a);
}
