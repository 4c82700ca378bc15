/* The monitor's control socket: its clients, their requests, and the
 * table that dispatches each operation (proto-ops.h) to its handler. */
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

/* Sends a frame to a client straight from the agent's buffer when nothing
 * is queued before it (the common case: no copy); queues what the socket
 * does not take. */
void
mon_client_send_frame (struct client *c, uint16_t type, const void *p, size_t n)
{
  if (c->out.len > 0)
    {
      mon_buf_frame (&c->out, type, 0, p, n);
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
      mon_buf_append (&c->out, hdr + done, sizeof hdr - done);
      done = 0;
    }
  else
    done -= sizeof hdr;
  if (done < n)
    mon_buf_append (&c->out, (const unsigned char *) p + done, n - done);
}

void
mon_reply_json (struct client *c, const char *json)
{
  mon_buf_frame (&c->out, SBX_MSG_REPLY, 0, json, strlen (json));
}

/* A reply of one integer field: {KEY: V}. */
void
mon_reply_int (struct client *c, const char *key, long long v)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, key, v);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
}

/* {KEY: V} as text, for a reply of one boolean field. */
static char *
bool_json (const char *key, bool v)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kbool (g, key, v);
  j_endmap (g);
  return j_take (g, NULL);
}

/* A reply of one boolean field: {"ok":true}, {"paused":false}. */
void
mon_reply_bool (struct client *c, const char *key, bool v)
{
  _cleanup_free_ char *s = bool_json (key, v);
  mon_reply_json (c, s);
}

void
mon_reply_error (struct client *c, sbx_code code, const char *msg)
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
  mon_reply_json (c, s);
  c->closing = true;
}

/* --- clients ----------------------------------------------------------- */

struct client *
mon_client_by_chan (struct mon *m, uint32_t chan)
{
  for (size_t i = 0; i < m->nclients; i++)
    if (m->clients[i]->chan == chan && !m->clients[i]->exec_done)
      return m->clients[i];
  return NULL;
}

void
mon_client_free (struct mon *m, size_t i)
{
  struct client *c = m->clients[i];
  if (c->chan && !c->exec_done)
    {
      /* The caller went away: its command must not run on unobserved. */
      uint32_t sig = SIGKILL;
      mon_to_agent (m, SBX_MSG_SIGNAL, c->chan, &sig, sizeof sig);
      if (c->chan == m->end_chan)
        m->end_orphaned = true;
    }
  close (c->fd);
  free (c->out.data);
  free (c);
  m->clients[i] = m->clients[--m->nclients];
}

/* Merges image env, the GPUs' (their CDI spec's), sandbox env, then the
 * exec's own; later keys win. */
static char **
merge_env (const sbx_sandbox *sb, char **extra)
{
  char **layers[] = { sb->image_env, sb->gpu_env, sb->opts.env, extra };
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

/* Sends an EXEC on a new channel, with the sandbox's environment under
 * ENV and its working directory unless CWD, and enters the process in the
 * table: for an exec request and for the initial command. */
int
mon_exec_start (struct mon *m, const struct mon_exec *x, uint32_t *ret_chan, sbx_error **err)
{
  _cleanup_strv_ char **full_env = merge_env (m->sb, x->env);
  const char *cwd = x->cwd ? x->cwd : m->workdir;
  _cleanup_free_ unsigned char *payload = xmalloc (SBX_PROTO_MAX_PAYLOAD);
  int n = sbx_exec_encode (payload, SBX_PROTO_MAX_PAYLOAD, x->argv, full_env, cwd, x->user, x->flags,
                           x->timeout_ms > 0 ? (uint64_t) x->timeout_ms : 0, x->rows, x->cols);
  if (n < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: command and environment exceed %d bytes",
                          SBX_PROTO_MAX_PAYLOAD);
  uint32_t chan = ++m->next_chan;
  mon_proc_new (m, chan, x->argv, (x->flags & SBX_EXEC_F_DETACH) != 0, (x->flags & SBX_EXEC_F_TTY) != 0);
  mon_to_agent (m, SBX_MSG_EXEC, chan, payload, (size_t) n);
  *ret_chan = chan;
  return 0;
}

static int
handle_exec (struct mon *m, struct client *c, yajl_val req, sbx_error **err)
{
  static const char *const keys[] = { "op",     "argv",       "env",  "cwd",  "user", "tty",    "stdin",
                                      "detach", "timeout_ms", "rows", "cols", "end",  "remove", NULL };
  _cleanup_strv_ char **argv = NULL, **env = NULL;
  const char *cwd = NULL, *user = NULL;
  bool tty = false, in = false, detach = false, end = false, remove = false;
  int64_t timeout = 0, rows = 0, cols = 0;
  if (j_check_keys (req, keys, "exec request", err) < 0 || j_get_strv (req, "argv", true, &argv, err) < 0
      || j_get_strv (req, "env", false, &env, err) < 0 || j_get_str (req, "cwd", false, &cwd, err) < 0
      || j_get_str (req, "user", false, &user, err) < 0 || j_get_bool (req, "tty", false, &tty, err) < 0
      || j_get_bool (req, "stdin", false, &in, err) < 0 || j_get_bool (req, "detach", false, &detach, err) < 0
      || j_get_int (req, "timeout_ms", false, &timeout, err) < 0 || j_get_int (req, "rows", false, &rows, err) < 0
      || j_get_int (req, "cols", false, &cols, err) < 0 || j_get_bool (req, "end", false, &end, err) < 0
      || j_get_bool (req, "remove", false, &remove, err) < 0)
    return -1;
  if (argv[0] == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: empty command");
  for (size_t i = 0; env && env[i]; i++)
    if (!env_entry_is_valid (env[i]))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid environment entry `%s`", env[i]);
  if (detach && in)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: a background command (-d) takes no stdin (-i)");
  if (detach && end)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: a background command cannot end the sandbox");
  if (remove && !end)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: only the command that ends the sandbox removes it");
  struct mon_exec x = { .argv = argv,
                        .env = env,
                        .cwd = cwd,
                        .user = user,
                        .flags = (tty ? SBX_EXEC_F_TTY : 0) | (in ? SBX_EXEC_F_STDIN : 0)
                                 | (detach ? SBX_EXEC_F_DETACH : 0),
                        .timeout_ms = timeout,
                        .rows = (uint16_t) rows,
                        .cols = (uint16_t) cols };
  uint32_t chan;
  if (mon_exec_start (m, &x, &chan, err) < 0)
    return -1;
  c->chan = chan;
  if (end)
    m->end_chan = c->chan;
  m->remove_at_end = m->remove_at_end || remove;
  c->stdin_window = SBX_PROTO_WINDOW;
  return 0;
}

/* `sbx snapshot`: runsc checkpoints the sandbox into PATH and ends it;
 * what it ran and its memory come back with `sbx restore`. The reply
 * carries the next exec channel, so that a restored monitor does not reuse
 * the ids of the processes the restored agent still has. */
static void
handle_snapshot (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  const char *path = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  if (j_get_str (req, "path", true, &path, &err) < 0 || path[0] != '/')
    {
      mon_reply_error (c, SBX_E_INVALID_ARGUMENT, "snapshot: an absolute path is required");
      return;
    }
  if (strcmp (m->rt->name, "runsc") != 0)
    {
      mon_reply_error (c, SBX_E_RUNTIME_UNAVAILABLE,
                       "snapshots need runsc: runc would need CRIU, which this host's sbx does not use");
      return;
    }
  if (m->net)
    {
      mon_reply_error (c, SBX_E_RUNTIME_UNAVAILABLE,
                       "this runsc cannot checkpoint a sandbox on the host network stack: snapshots need a sandbox "
                       "created with --block-network");
      return;
    }
  if (m->sb->paused && mon_set_paused (m, false, &err) < 0)
    {
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  const char *args[] = { "--image-path", path, m->sb->id, NULL };
  _cleanup_free_ char *errtext = NULL;
  int st = sbx_runtime_call (m->rt, "checkpoint", args, &errtext, &err);
  if (st != 0)
    {
      _cleanup_free_ char *msg = xasprintf ("runsc checkpoint failed: %s", err ? err->msg : errtext ? errtext : "");
      mon_reply_error (c, SBX_E_INTERNAL, msg);
      return;
    }
  mon_log (m, "checkpointed into %s", path);
  /* The process table goes into the snapshot: a restored monitor knows
   * what the restored agent runs (sbx ps, proc wait, logs from then on). */
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kbool (g, "ok", true);
  j_kint (g, "next_chan", m->next_chan + 1);
  j_str (g, "procs");
  mon_procs_json (g, m, PROC_SAVED);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
  c->closing = true;
  mon_begin_shutdown (m, SBX_STATE_TERMINATED, "snapshot");
}

/* `sbx fs`: the merged root as an O_PATH fd (SCM_RIGHTS with the reply);
 * the CLI resolves every path beneath it with openat2(RESOLVE_IN_ROOT). */
static void
handle_rootfd (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  if (m->root_fd < 0 || c->out.len > 0)
    {
      mon_reply_error (c, SBX_E_SANDBOX_NOT_RUNNING, "the sandbox's root is not mounted");
      return;
    }
  _cleanup_free_ char *reply = bool_json ("ok", true);
  size_t len = strlen (reply);
  unsigned char frame[SBX_PROTO_HDR_SIZE + 16];
  if (len > sizeof frame - SBX_PROTO_HDR_SIZE)
    abort ();
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = SBX_MSG_REPLY };
  sbx_frame_hdr_encode (frame, &h);
  memcpy (frame + SBX_PROTO_HDR_SIZE, reply, len);
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE (sizeof (int))];
  } cm = { 0 };
  struct iovec iov = { frame, SBX_PROTO_HDR_SIZE + len };
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
  if (w > 0 && (size_t) w < SBX_PROTO_HDR_SIZE + len)
    mon_buf_append (&c->out, frame + w, SBX_PROTO_HDR_SIZE + len - (size_t) w);
  c->closing = true;
}

void
mon_set_deadline (struct mon *m, int64_t secs)
{
  m->deadline = now_ms_monotonic () + (uint64_t) secs * 1000;
  m->sb->deadline = now_unix () + secs;
}

static void
handle_ttl (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  int64_t secs = -1;
  if (j_get_int (req, "seconds", true, &secs, NULL) < 0 || secs < 1 || secs > SBX_TIMEOUT_MAX)
    {
      mon_reply_error (c, SBX_E_INVALID_ARGUMENT, "ttl: seconds must be between 1 and 86400");
      return;
    }
  mon_set_deadline (m, secs);
  mon_save_state (m);
  mon_reply_int (c, "deadline", m->sb->deadline);
  c->closing = true;
}

/* The handlers of this file's operations; the others are in the file of
 * their concern (monitor-proc.c, monitor-net.c, monitor-relay.c). */
static void
op_exec (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (handle_exec (m, c, req, &err) < 0)
    mon_reply_error (c, err->code, err->msg);
}

static void
op_terminate (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  mon_reply_bool (c, "ok", true);
  mon_begin_shutdown (m, SBX_STATE_TERMINATED, SBX_REASON_KILLED);
}

static void
op_wait (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  /* answered by EOF when the monitor exits */
}

/* pause, resume */
static void
op_pause (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  _cleanup_error_ sbx_error *err = NULL;
  if (mon_set_paused (m, op == SBX_OP_PAUSE, &err) < 0)
    mon_reply_error (c, err->code, err->msg);
  else
    {
      mon_reply_bool (c, "paused", m->sb->paused);
      c->closing = true;
    }
}

static void
op_ping (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  mon_reply_bool (c, "ok", true);
  c->closing = true;
}

/* OP_ENDING: served while the sandbox is terminating, by the EOF when the
 * monitor exits (a terminate for a sandbox already ending waits for the
 * end, as wait does: its caller wants it over, and the EOF says when).
 * OP_RUNNING: refused while the sandbox is paused.
 * OP_PARKED: served while the sandbox is a warm pool's parked member
 * (pool.h); anything else would leave a trace in it or start its clock. */
enum { OP_ENDING = 1 << 0, OP_RUNNING = 1 << 1, OP_PARKED = 1 << 2 };

static const struct op {
  void (*handler) (struct mon *m, struct client *c, sbx_op op, yajl_val req);
  unsigned flags;
} ops[SBX_OP__MAX] = {
  [SBX_OP_EXEC] = { op_exec, OP_RUNNING },
  [SBX_OP_TERMINATE] = { op_terminate, OP_ENDING | OP_PARKED },
  [SBX_OP_WAIT] = { op_wait, OP_ENDING | OP_PARKED },
  [SBX_OP_TTL] = { handle_ttl, 0 },
  [SBX_OP_PAUSE] = { op_pause, 0 },
  [SBX_OP_RESUME] = { op_pause, 0 },
  [SBX_OP_SNAPSHOT] = { handle_snapshot, 0 },
  [SBX_OP_NET] = { mon_handle_net, 0 },
  [SBX_OP_EXPOSE] = { mon_handle_expose, 0 },
  [SBX_OP_ROOTFD] = { handle_rootfd, 0 },
  [SBX_OP_PS] = { mon_handle_ps, OP_PARKED },
  [SBX_OP_PROC_STATUS] = { mon_handle_proc, OP_PARKED },
  [SBX_OP_PROC_WAIT] = { mon_handle_proc, OP_PARKED },
  [SBX_OP_PROC_KILL] = { mon_handle_proc, OP_RUNNING },
  [SBX_OP_PROC_LOGS] = { mon_handle_proc, OP_PARKED },
  [SBX_OP_PING] = { op_ping, OP_PARKED },
  [SBX_OP_UNEXPOSE] = { mon_handle_unexpose, 0 },
  [SBX_OP_UPDATE] = { mon_handle_update, 0 },
  [SBX_OP_CLAIM] = { mon_handle_claim, OP_PARKED },
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
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  mon_touch (m);
  sbx_op op = sbx_op_from_name (name);
  const struct op *o = op < SBX_OP__MAX ? &ops[op] : NULL;
  if (m->shutting_down && o && (o->flags & OP_ENDING))
    ; /* answered by EOF when the monitor exits */
  else if (m->shutting_down)
    mon_reply_error (c, SBX_E_SANDBOX_NOT_RUNNING, "the sandbox is terminating");
  else if (m->sb->paused && o && (o->flags & OP_RUNNING))
    mon_reply_error (c, SBX_E_SANDBOX_NOT_RUNNING, "the sandbox is paused (sbx resume)");
  else if (o == NULL)
    mon_reply_error (c, SBX_E_INVALID_ARGUMENT, "unknown request");
  else if (m->sb->parked && !(o->flags & OP_PARKED))
    mon_reply_error (c, SBX_E_BUSY, "the sandbox is parked in a warm pool: claim one with sbx create --pool");
  else
    o->handler (m, c, op, req);
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
      mon_touch (m);
      mon_to_agent (m, h->type, c->chan, p, h->len);
      break;
    case SBX_MSG_STDIN_EOF:
    case SBX_MSG_SIGNAL:
    case SBX_MSG_RESIZE:
      mon_touch (m);
      mon_to_agent (m, h->type, c->chan, p, h->len);
      break;
    default:
      c->closing = true;
    }
}

/* Backpressure on stdin: a client is read only while the agent has room
 * for more of its stdin. */
bool
mon_client_may_send (const struct client *c)
{
  return c->chan == 0 || c->exec_done || c->stdin_window > 0;
}

/* Returns -1 when the client is gone. */
int
mon_client_read (struct mon *m, struct client *c)
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
      if (m->aout.len > AGENT_OUT_MAX || !mon_client_may_send (c))
        return 0;
    }
}

void
mon_accept_client (struct mon *m)
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

int
mon_listen_control (struct mon *m, sbx_error **err)
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
