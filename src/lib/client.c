/* Control-socket client: requests, waits, and exec streaming. */
#include "config.h"
#include "client.h"
#include "json.h"
#include "proto.h"
#include "proto-ops.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>

int
sbx_client_connect (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_run_path (st, "sandboxes/%s/control.sock", id);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "socket path too long: %s", path);
  strcpy (sa.sun_path, path);
  _cleanup_close_ int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return sbx_error_errno (err, errno, "socket");
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    {
      if (errno == ENOENT || errno == ECONNREFUSED)
        return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "sandbox %s is not running", id);
      return sbx_error_errno (err, errno, "connect to the monitor of %s", id);
    }
  sock_buffers (fd);
  *ret_fd = steal_fd (&fd);
  return 0;
}

static int
send_request (int fd, const char *json, sbx_error **err)
{
  int r = sbx_frame_write (fd, SBX_MSG_REQUEST, 0, json, strlen (json));
  if (r < 0)
    return sbx_error_errno (err, -r, "send request to the monitor");
  return 0;
}

/* A request: {"op": OP, ...}; the caller adds its fields, then req_end. */
static yajl_gen
req_begin (sbx_op op)
{
  yajl_gen g = j_new (false);
  j_map (g);
  j_kstr (g, "op", sbx_op_name (op));
  return g;
}

static char *
req_end (yajl_gen g)
{
  j_endmap (g);
  char *s = j_take (g, NULL);
  yajl_gen_free (g);
  return s;
}

/* A request of the op alone. */
static char *
req_simple (sbx_op op)
{
  return req_end (req_begin (op));
}

/* An error reply {"error": {code, message}} becomes *err. */
static int
reply_to_error (yajl_val v, sbx_error **err)
{
  yajl_val e = j_get (v, "error");
  if (e == NULL)
    return 0;
  const char *code = NULL, *msg = NULL;
  j_get_str (e, "code", false, &code, NULL);
  j_get_str (e, "message", false, &msg, NULL);
  sbx_code c = code ? sbx_code_from_name (code) : SBX_E_INTERNAL;
  return sbx_error_set (err, c == SBX_E__MAX ? SBX_E_INTERNAL : c, 0, "%s", msg ? msg : "error");
}

static int
parse_reply (const unsigned char *p, size_t len, yajl_val *ret, sbx_error **err)
{
  yajl_val v = NULL;
  if (j_parse ((const char *) p, len, SBX_PROTO_MAX_PAYLOAD, "monitor reply", &v, err) < 0)
    return -1;
  if (reply_to_error (v, err) < 0)
    {
      yajl_tree_free (v);
      return -1;
    }
  *ret = v;
  return 0;
}

/* Sends JSON and reads its REPLY, writing STDOUT/STDERR frames that come
 * before it to OUT_FD/ERR_FD (-1 drops them). */
static int
client_stream (const sbx_store *st, const char *id, const char *json, int out_fd, int err_fd, yajl_val *ret,
               sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  if (sbx_client_connect (st, id, &fd, err) < 0 || send_request (fd, json, err) < 0)
    return -1;
  struct sbx_frame_reader *rd = xmalloc0 (sizeof *rd);
  for (;;)
    {
      struct sbx_frame_hdr h;
      const unsigned char *p;
      int r = sbx_frame_read (fd, rd, &h, &p);
      if (r < 0)
        {
          free (rd);
          return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "sandbox %s stopped before it answered", id);
        }
      if (r == 1 && (h.type == SBX_MSG_STDOUT || h.type == SBX_MSG_STDERR))
        {
          int ofd = h.type == SBX_MSG_STDOUT ? out_fd : err_fd;
          if (ofd >= 0)
            write_all (ofd, p, h.len);
        }
      if (r == 1 && h.type == SBX_MSG_REPLY)
        {
          r = parse_reply (p, h.len, ret, err);
          free (rd);
          return r;
        }
    }
}

int
sbx_client_rootfd (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err)
{
  _cleanup_close_ int fd = -1, got = -1;
  _cleanup_free_ char *rootfd_req = req_simple (SBX_OP_ROOTFD);
  if (sbx_client_connect (st, id, &fd, err) < 0 || send_request (fd, rootfd_req, err) < 0)
    return -1;
  unsigned char buf[SBX_PROTO_HDR_SIZE + 4096];
  size_t have = 0;
  struct sbx_frame_hdr h = { 0 };
  for (;;)
    {
      union {
        struct cmsghdr h;
        char buf[CMSG_SPACE (sizeof (int))];
      } cm;
      struct iovec iov = { buf + have, sizeof buf - have };
      struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf };
      ssize_t n = recvmsg (fd, &msg, MSG_CMSG_CLOEXEC);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "sandbox %s stopped before it answered", id);
      for (struct cmsghdr *c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN (sizeof (int))
            && got < 0)
          memcpy (&got, CMSG_DATA (c), sizeof got);
      have += (size_t) n;
      if (have >= SBX_PROTO_HDR_SIZE)
        {
          if (sbx_frame_hdr_decode (buf, &h) < 0 || h.type != SBX_MSG_REPLY || h.len > sizeof buf - SBX_PROTO_HDR_SIZE)
            return sbx_error_set (err, SBX_E_INTERNAL, 0, "malformed answer from the monitor");
          if (have >= SBX_PROTO_HDR_SIZE + h.len)
            break;
        }
    }
  yajl_val v = NULL;
  if (parse_reply (buf + SBX_PROTO_HDR_SIZE, h.len, &v, err) < 0)
    return -1;
  yajl_tree_free (v);
  if (got < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the monitor sent no root");
  *ret_fd = steal_fd (&got);
  return 0;
}

static int
client_call (const sbx_store *st, const char *id, const char *json, yajl_val *ret, sbx_error **err)
{
  return client_stream (st, id, json, -1, -1, ret, err);
}

/* Sends JSON and waits until the monitor closes the connection (it
 * exits), or TIMEOUT_MS passes (-1: forever): TIMEOUT. */
static int
wait_close (const sbx_store *st, const char *id, const char *json, int64_t timeout_ms, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  if (sbx_client_connect (st, id, &fd, err) < 0)
    return -1;
  if (send_request (fd, json, err) < 0)
    return 0; /* it closed already: that is what we wait for */
  uint64_t until = timeout_ms >= 0 ? now_ms_monotonic () + (uint64_t) timeout_ms : UINT64_MAX;
  char buf[4096];
  for (;;)
    {
      uint64_t now = now_ms_monotonic ();
      if (now >= until)
        return sbx_error_set (err, SBX_E_TIMEOUT, 0, "sandbox %s did not end in time", id);
      struct pollfd pf = { fd, POLLIN, 0 };
      int t = until == UINT64_MAX ? -1 : (int) (until - now);
      if (poll (&pf, 1, t) < 0 && errno != EINTR)
        return sbx_error_errno (err, errno, "poll");
      if (pf.revents)
        {
          ssize_t r = read (fd, buf, sizeof buf);
          if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
            return 0;
        }
    }
}

/* --- one function per operation ----------------------------------------- */

int
sbx_client_ping (const sbx_store *st, const char *id, sbx_error **err)
{
  _cleanup_free_ char *req = req_simple (SBX_OP_PING);
  _cleanup_yajl_val_ yajl_val v = NULL;
  return client_call (st, id, req, &v, err);
}

int
sbx_client_terminate (const sbx_store *st, const char *id, int64_t timeout_ms, sbx_error **err)
{
  _cleanup_free_ char *req = req_simple (SBX_OP_TERMINATE);
  return wait_close (st, id, req, timeout_ms, err);
}

int
sbx_client_wait (const sbx_store *st, const char *id, int64_t timeout_ms, sbx_error **err)
{
  _cleanup_free_ char *req = req_simple (SBX_OP_WAIT);
  return wait_close (st, id, req, timeout_ms, err);
}

int
sbx_client_wait_fd (const sbx_store *st, const char *id, int *ret_fd, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  _cleanup_free_ char *req = req_simple (SBX_OP_WAIT);
  if (sbx_client_connect (st, id, &fd, err) < 0 || send_request (fd, req, err) < 0)
    return -1;
  *ret_fd = steal_fd (&fd);
  return 0;
}

int
sbx_client_ttl (const sbx_store *st, const char *id, int64_t seconds, int64_t *ret_deadline, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_TTL);
  j_kint (g, "seconds", seconds);
  _cleanup_free_ char *req = req_end (g);
  _cleanup_yajl_val_ yajl_val v = NULL;
  int64_t deadline = 0;
  if (client_call (st, id, req, &v, err) < 0)
    return -1;
  j_get_int (v, "deadline", false, &deadline, NULL);
  *ret_deadline = deadline;
  return 0;
}

static void
gen_update (yajl_gen g, const sbx_update *u)
{
  if (u->has_cpu)
    {
      j_str (g, "cpu");
      j_double (g, u->cpu);
    }
  if (u->has_memory)
    j_kint (g, "memory", (long long) u->memory);
  if (u->has_pids)
    j_kint (g, "pids", u->pids);
  if (u->has_keep_warm)
    j_kint (g, "keep_warm", u->keep_warm);
  if (u->has_timeout)
    j_kint (g, "timeout", u->timeout);
  if (u->has_priority)
    j_kint (g, "priority", u->priority);
}

int
sbx_client_update (const sbx_store *st, const char *id, const sbx_update *u, yajl_val *ret, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_UPDATE);
  gen_update (g, u);
  _cleanup_free_ char *req = req_end (g);
  return client_call (st, id, req, ret, err);
}

int
sbx_client_claim (const sbx_store *st, const char *id, const sbx_sandbox_opts *o, const sbx_update *u, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_CLAIM);
  j_kstr (g, "pool", o->pool);
  if (o->name)
    j_kstr (g, "name", o->name);
  j_kstrv (g, "env", o->env);
  if (o->cwd)
    j_kstr (g, "cwd", o->cwd);
  j_kbool (g, "on_idle_pause", o->on_idle_pause);
  j_str (g, "update");
  j_map (g);
  gen_update (g, u);
  j_endmap (g);
  if (!o->block_network)
    {
      bool allow = (o->allow && o->allow[0]) || (o->allow_domains && o->allow_domains[0]);
      j_str (g, "net");
      j_map (g);
      j_kstr (g, "mode", allow ? "allow" : "open");
      j_kstrv (g, "allow", o->allow);
      j_kstrv (g, "domains", o->allow_domains);
      j_endmap (g);
    }
  j_kstrv (g, "ports", o->ports);
  j_kbool (g, "public", o->public_ports);
  _cleanup_free_ char *req = req_end (g);
  _cleanup_yajl_val_ yajl_val v = NULL;
  return client_call (st, id, req, &v, err);
}

int
sbx_client_pause (const sbx_store *st, const char *id, bool pause, sbx_error **err)
{
  _cleanup_free_ char *req = req_simple (pause ? SBX_OP_PAUSE : SBX_OP_RESUME);
  _cleanup_yajl_val_ yajl_val v = NULL;
  return client_call (st, id, req, &v, err);
}

int
sbx_client_snapshot (const sbx_store *st, const char *id, const char *path, yajl_val *ret, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_SNAPSHOT);
  j_kstr (g, "path", path);
  _cleanup_free_ char *req = req_end (g);
  return client_call (st, id, req, ret, err);
}

int
sbx_client_net (const sbx_store *st, const char *id, const char *mode, char *const *allow, char *const *domains,
                sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_NET);
  j_kstr (g, "mode", mode);
  j_kstrv (g, "allow", allow);
  j_kstrv (g, "domains", domains);
  _cleanup_free_ char *req = req_end (g);
  _cleanup_yajl_val_ yajl_val v = NULL;
  return client_call (st, id, req, &v, err);
}

int
sbx_client_expose (const sbx_store *st, const char *id, int64_t port, char **ret_url, bool *ret_public, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_EXPOSE);
  j_kint (g, "port", port);
  _cleanup_free_ char *req = req_end (g);
  _cleanup_yajl_val_ yajl_val v = NULL;
  const char *url = NULL;
  bool pub = false;
  if (client_call (st, id, req, &v, err) < 0 || j_get_str (v, "url", true, &url, err) < 0
      || j_get_bool (v, "public", false, &pub, err) < 0)
    return -1;
  *ret_url = xstrdup (url);
  *ret_public = pub;
  return 0;
}

int
sbx_client_unexpose (const sbx_store *st, const char *id, int64_t port, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_UNEXPOSE);
  j_kint (g, "port", port);
  _cleanup_free_ char *req = req_end (g);
  _cleanup_yajl_val_ yajl_val v = NULL;
  return client_call (st, id, req, &v, err);
}

int
sbx_client_ps (const sbx_store *st, const char *id, yajl_val *ret, sbx_error **err)
{
  _cleanup_free_ char *req = req_simple (SBX_OP_PS);
  return client_call (st, id, req, ret, err);
}

int
sbx_client_proc_status (const sbx_store *st, const char *id, int64_t pid, yajl_val *ret, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_PROC_STATUS);
  j_kint (g, "pid", pid);
  _cleanup_free_ char *req = req_end (g);
  return client_call (st, id, req, ret, err);
}

int
sbx_client_proc_wait (const sbx_store *st, const char *id, int64_t pid, int64_t timeout_ms, yajl_val *ret,
                      sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_PROC_WAIT);
  j_kint (g, "pid", pid);
  j_kint (g, "timeout_ms", timeout_ms);
  _cleanup_free_ char *req = req_end (g);
  return client_call (st, id, req, ret, err);
}

int
sbx_client_proc_kill (const sbx_store *st, const char *id, int64_t pid, int sig, yajl_val *ret, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_PROC_KILL);
  j_kint (g, "pid", pid);
  j_kint (g, "signal", sig);
  _cleanup_free_ char *req = req_end (g);
  return client_call (st, id, req, ret, err);
}

int
sbx_client_proc_logs (const sbx_store *st, const char *id, int64_t pid, bool follow, int out_fd, int err_fd,
                      yajl_val *ret, sbx_error **err)
{
  yajl_gen g = req_begin (SBX_OP_PROC_LOGS);
  j_kint (g, "pid", pid);
  j_kbool (g, "follow", follow);
  _cleanup_free_ char *req = req_end (g);
  return client_stream (st, id, req, out_fd, err_fd, ret, err);
}

/* --- exec ---------------------------------------------------------------- */

static char *
exec_request (const sbx_exec_opts *o)
{
  yajl_gen g = req_begin (SBX_OP_EXEC);
  j_kstrv (g, "argv", o->argv);
  j_kstrv (g, "env", o->env);
  if (o->cwd)
    j_kstr (g, "cwd", o->cwd);
  if (o->user)
    j_kstr (g, "user", o->user);
  j_kbool (g, "tty", o->tty);
  j_kbool (g, "stdin", o->stdin_open);
  j_kbool (g, "detach", o->detach);
  j_kint (g, "timeout_ms", o->timeout_ms);
  if (o->end_sandbox)
    j_kbool (g, "end", true);
  if (o->remove_sandbox)
    j_kbool (g, "remove", true);
  if (o->tty)
    {
      j_kint (g, "rows", o->rows);
      j_kint (g, "cols", o->cols);
    }
  return req_end (g);
}

struct exec_state {
  const sbx_exec_opts *o;
  int fd, in_fd, out_fd, err_fd;
  bool done, in_open;
  int status;
  sbx_error **err;
};

static int
exec_frame (struct exec_state *s, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  switch (h->type)
    {
    case SBX_MSG_STDOUT:
    case SBX_MSG_STDERR:
      write_all (h->type == SBX_MSG_STDOUT ? s->out_fd : s->err_fd, p, h->len);
      return 0;
    case SBX_MSG_EXIT:
      {
        struct sbx_exit_msg em;
        if (sbx_exit_decode (p, h->len, &em) < 0)
          return sbx_error_set (s->err, SBX_E_INTERNAL, 0, "malformed exit frame");
        s->status = (em.flags & SBX_EXIT_F_TIMED_OUT) ? 124 : em.status;
        s->done = true;
        return 0;
      }
    case SBX_MSG_ERROR:
      {
        int32_t st = 125, en = 0;
        if (h->len >= 8)
          {
            memcpy (&st, p, 4);
            memcpy (&en, p + 4, 4);
          }
        int ml = h->len > 8 ? (int) (h->len - 8) : 0;
        s->done = true;
        /* 126/127 are the command's own statuses (cannot run, not found);
         * anything else is a request the agent refused (bad cwd or user). */
        if (st != 126 && st != 127)
          return sbx_error_set (s->err, SBX_E_INVALID_ARGUMENT, 0, "%.*s", ml, (const char *) p + 8);
        if (st == 127 && s->o->not_found_msg)
          return sbx_error_set (s->err, SBX_E_NOT_FOUND, 0, "%s", s->o->not_found_msg);
        dprintf (s->err_fd, "sbx: %.*s\n", ml, (const char *) p + 8);
        s->status = st;
        return 0;
      }
    case SBX_MSG_REPLY:
      {
        yajl_val v = NULL;
        if (parse_reply (p, h->len, &v, s->err) < 0)
          return -1;
        int64_t pid = 0;
        if (s->o->detach && j_get_int (v, "pid", false, &pid, NULL) == 0 && pid > 0)
          {
            if (s->o->ret_pid)
              *s->o->ret_pid = (uint32_t) pid;
            s->status = 0;
            s->done = true;
          }
        yajl_tree_free (v);
        return 0;
      }
    default:
      return 0;
    }
}

static void
forward_stdin (struct exec_state *s)
{
  char buf[SBX_PROTO_MAX_PAYLOAD];
  ssize_t r = read (s->in_fd, buf, sizeof buf);
  if (r < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (r <= 0)
    {
      sbx_frame_write (s->fd, SBX_MSG_STDIN_EOF, 0, NULL, 0);
      s->in_open = false;
      return;
    }
  sbx_frame_write (s->fd, SBX_MSG_STDIN, 0, buf, (size_t) r);
}

/* The caller's terminal changed size: tell the command's pty. */
static void
forward_resize (struct exec_state *s)
{
  struct winsize ws;
  if (ioctl (s->in_fd, TIOCGWINSZ, &ws) < 0 && ioctl (s->out_fd, TIOCGWINSZ, &ws) < 0)
    return;
  uint16_t rc[2] = { ws.ws_row, ws.ws_col };
  sbx_frame_write (s->fd, SBX_MSG_RESIZE, 0, rc, sizeof rc);
}

/* The last SIGINT, SIGTERM or SIGHUP this process passed on to a command. */
static volatile int interrupted_by;

int
sbx_client_interrupted (void)
{
  return interrupted_by;
}

static void
forward_signal (struct exec_state *s, int sfd)
{
  struct signalfd_siginfo si;
  while (read (sfd, &si, sizeof si) == sizeof si)
    {
      if (si.ssi_signo == SIGWINCH)
        {
          forward_resize (s);
          continue;
        }
      uint32_t sig = si.ssi_signo;
      interrupted_by = (int) sig;
      sbx_frame_write (s->fd, SBX_MSG_SIGNAL, 0, &sig, sizeof sig);
    }
}

static int
exec_loop (struct exec_state *s, int sfd)
{
  struct sbx_frame_reader *rd = xmalloc0 (sizeof *rd);
  int ret = 0;
  while (!s->done && ret == 0)
    {
      struct pollfd pf[3] = { { s->fd, POLLIN, 0 }, { sfd, POLLIN, 0 }, { s->in_open ? s->in_fd : -1, POLLIN, 0 } };
      if (poll (pf, 3, -1) < 0 && errno != EINTR)
        ret = sbx_error_errno (s->err, errno, "poll");
      if (pf[1].revents)
        forward_signal (s, sfd);
      if (pf[2].revents)
        forward_stdin (s);
      while (pf[0].revents && !s->done && ret == 0)
        {
          struct sbx_frame_hdr h;
          const unsigned char *p;
          int r = sbx_frame_read (s->fd, rd, &h, &p);
          if (r == 0)
            break;
          if (r < 0)
            ret = sbx_error_set (s->err, SBX_E_SANDBOX_NOT_RUNNING, 0, "the sandbox ended while the command ran");
          else
            ret = exec_frame (s, &h, p);
        }
    }
  free (rd);
  return ret;
}

int
sbx_client_exec (const sbx_store *st, const char *id, const sbx_exec_opts *o, int in_fd, int out_fd, int err_fd,
                 int *ret_status, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  if (sbx_client_connect (st, id, &fd, err) < 0)
    return -1;
  _cleanup_free_ char *req = exec_request (o);
  if (send_request (fd, req, err) < 0)
    return -1;
  set_nonblock (fd, true);
  sigset_t set, old;
  sigemptyset (&set);
  sigaddset (&set, SIGINT);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGHUP);
  if (o->tty)
    sigaddset (&set, SIGWINCH);
  sigprocmask (SIG_BLOCK, &set, &old);
  _cleanup_close_ int sfd = signalfd (-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  struct exec_state s = { .o = o,
                          .fd = fd,
                          .in_fd = in_fd,
                          .out_fd = out_fd,
                          .err_fd = err_fd,
                          .in_open = o->stdin_open,
                          .status = 125,
                          .err = err };
  int r = exec_loop (&s, sfd);
  sigprocmask (SIG_SETMASK, &old, NULL);
  if (r < 0)
    return -1;
  *ret_status = s.status;
  return 0;
}
