/* Unit tests of the control-socket client (src/lib/client.c): for each
 * operation of proto-ops.h, the exact request its client function sends
 * and how it reads the answer, an error answer, a malformed one, and a
 * monitor that goes away. The peer is a thread serving a real unix socket
 * where the client looks for a sandbox's monitor (RUN/sandboxes/ID/
 * control.sock, in a temporary store): it records the request frame and
 * answers with the frames the test scripted. No root needed. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "client.h"
#include "json.h"
#include "proto-ops.h"
#include "proto.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define ID "sb-000000000001"

struct frame {
  uint16_t type;
  const char *data;
};

/* What the peer does with its next connection. */
static struct peer {
  struct frame frames[4]; /* sent after the request, in order */
  int pass_fd;            /* sent with the first frame (SCM_RIGHTS), -1: none */
  int hold_ms;            /* then it keeps the connection open this long */
  char got[SBX_PROTO_MAX_PAYLOAD + 1];
  uint16_t got_type;
  bool got_request;
} peer;

static int listen_fd = -1;
static sbx_store store;

static int
read_full (int fd, void *p, size_t n)
{
  size_t have = 0;
  while (have < n)
    {
      ssize_t r = read (fd, (char *) p + have, n - have);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return -1;
      have += (size_t) r;
    }
  return 0;
}

static void
send_with_fd (int fd, uint16_t type, const char *data, int pass)
{
  size_t len = strlen (data);
  unsigned char buf[SBX_PROTO_HDR_SIZE + 4096];
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = type };
  sbx_frame_hdr_encode (buf, &h);
  memcpy (buf + SBX_PROTO_HDR_SIZE, data, len);
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE (sizeof (int))];
  } cm = { 0 };
  struct iovec iov = { buf, SBX_PROTO_HDR_SIZE + len };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf };
  struct cmsghdr *c = CMSG_FIRSTHDR (&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (c), &pass, sizeof pass);
  if (sendmsg (fd, &msg, MSG_NOSIGNAL) < 0)
    abort ();
}

static void *
peer_main (void *arg)
{
  int fd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return NULL;
  unsigned char hdr[SBX_PROTO_HDR_SIZE];
  struct sbx_frame_hdr h;
  if (read_full (fd, hdr, sizeof hdr) == 0 && sbx_frame_hdr_decode (hdr, &h) == 0 && h.len <= SBX_PROTO_MAX_PAYLOAD
      && read_full (fd, peer.got, h.len) == 0)
    {
      peer.got[h.len] = '\0';
      peer.got_type = h.type;
      peer.got_request = true;
    }
  for (size_t i = 0; i < ARRAY_SIZE (peer.frames) && peer.frames[i].data; i++)
    {
      if (i == 0 && peer.pass_fd >= 0)
        send_with_fd (fd, peer.frames[i].type, peer.frames[i].data, peer.pass_fd);
      else
        sbx_frame_write (fd, peer.frames[i].type, 0, peer.frames[i].data, strlen (peer.frames[i].data));
    }
  if (peer.hold_ms)
    usleep ((useconds_t) peer.hold_ms * 1000);
  close (fd);
  return NULL;
}

/* The next connection gets REPLY (NULL: none, the peer just closes). */
static pthread_t
serve (const char *reply)
{
  memset (&peer, 0, sizeof peer);
  peer.pass_fd = -1;
  if (reply)
    peer.frames[0] = (struct frame){ SBX_MSG_REPLY, reply };
  pthread_t t;
  pthread_create (&t, NULL, peer_main, NULL);
  return t;
}

static void
serve_start (pthread_t *t)
{
  pthread_create (t, NULL, peer_main, NULL);
}

/* The request the peer got is exactly WANT, in a REQUEST frame. */
static void
check_request (pthread_t t, const char *what, const char *want)
{
  pthread_join (t, NULL);
  tap_ok (peer.got_request && peer.got_type == SBX_MSG_REQUEST && strcmp (peer.got, want) == 0, "%s sends %s (got %s)",
          what, want, peer.got);
}

static void
test_op_names (void)
{
  bool round = true;
  for (int i = 0; i < SBX_OP__MAX; i++)
    round = round && sbx_op_from_name (sbx_op_name ((sbx_op) i)) == (sbx_op) i;
  tap_ok (round, "every operation's name reads back as the operation");
  tap_ok (sbx_op_from_name ("proc_") == SBX_OP__MAX && sbx_op_from_name ("") == SBX_OP__MAX,
          "a name that is no operation is SBX_OP__MAX");
  tap_ok (strcmp (sbx_op_name (SBX_OP_PROC_LOGS), "proc_logs") == 0
              && strcmp (sbx_op_name (SBX_OP__MAX), "unknown") == 0,
          "operation names are the wire names");
}

static void
test_simple_ops (void)
{
  sbx_error *err = NULL;
  pthread_t t = serve ("{\"ok\":true}");
  int r = sbx_client_ping (&store, ID, &err);
  check_request (t, "ping", "{\"op\":\"ping\"}");
  tap_ok (r == 0 && err == NULL, "ping reads {\"ok\":true}");

  t = serve ("{\"paused\":true}");
  r = sbx_client_pause (&store, ID, true, &err);
  check_request (t, "pause", "{\"op\":\"pause\"}");
  tap_ok (r == 0, "pause succeeds");

  t = serve ("{\"paused\":false}");
  r = sbx_client_pause (&store, ID, false, &err);
  check_request (t, "resume", "{\"op\":\"resume\"}");
  tap_ok (r == 0, "resume succeeds");

  int64_t deadline = 0;
  t = serve ("{\"deadline\":1900000000}");
  r = sbx_client_ttl (&store, ID, 60, &deadline, &err);
  check_request (t, "ttl", "{\"op\":\"ttl\",\"seconds\":60}");
  tap_ok (r == 0 && deadline == 1900000000, "ttl reads the deadline (%lld)", (long long) deadline);

  /* update sends only what it changes; the reply is the caller's. */
  sbx_update up = { .has_cpu = true,
                    .cpu = 1.5,
                    .has_memory = true,
                    .memory = 536870912,
                    .has_timeout = true,
                    .timeout = 30 };
  yajl_val uv = NULL;
  t = serve ("{\"cpu\":1.5,\"memory\":536870912,\"pids\":1024,\"keep_warm\":600,\"timeout\":30,"
             "\"deadline\":1900000000}");
  r = sbx_client_update (&store, ID, &up, &uv, &err);
  check_request (t, "update", "{\"op\":\"update\",\"cpu\":1.5,\"memory\":536870912,\"timeout\":30}");
  int64_t kw = 0;
  tap_ok (r == 0 && uv && j_get_int (uv, "keep_warm", true, &kw, NULL) == 0 && kw == 600,
          "update returns the monitor's reply");
  yajl_tree_free (uv);

  char *allow[] = { (char *) "10.0.0.0/8", (char *) "2001:db8::/32", NULL };
  t = serve ("{\"mode\":\"allow\",\"allow\":[\"10.0.0.0/8\",\"2001:db8::/32\"]}");
  r = sbx_client_net (&store, ID, "allow", allow, NULL, &err);
  check_request (t, "net",
                 "{\"op\":\"net\",\"mode\":\"allow\",\"allow\":[\"10.0.0.0/8\",\"2001:db8::/32\"],\"domains\":[]}");
  tap_ok (r == 0, "net succeeds");
  char *domains[] = { (char *) "*.pypi.org", NULL };
  t = serve ("{\"mode\":\"allow\",\"allow\":[],\"domains\":[\"*.pypi.org\"]}");
  r = sbx_client_net (&store, ID, "allow", NULL, domains, &err);
  check_request (t, "net --allow-domain",
                 "{\"op\":\"net\",\"mode\":\"allow\",\"allow\":[],\"domains\":[\"*.pypi.org\"]}");
  tap_ok (r == 0, "net with domain rules succeeds");
  t = serve ("{\"mode\":\"block\",\"allow\":[]}");
  r = sbx_client_net (&store, ID, "block", NULL, NULL, &err);
  check_request (t, "net --block", "{\"op\":\"net\",\"mode\":\"block\",\"allow\":[],\"domains\":[]}");

  char *url = NULL;
  bool pub = true;
  t = serve ("{\"port\":8080,\"url\":\"http://127.0.0.1:40000/\",\"public\":false}");
  r = sbx_client_expose (&store, ID, 8080, &url, &pub, &err);
  check_request (t, "expose", "{\"op\":\"expose\",\"port\":8080}");
  tap_ok (r == 0 && url && strcmp (url, "http://127.0.0.1:40000/") == 0 && !pub, "expose reads url and public");
  free (url);
  url = NULL;
  t = serve ("{\"port\":8080}");
  r = sbx_client_expose (&store, ID, 8080, &url, &pub, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && url == NULL,
          "an expose answer without url is an error (%s)", err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;

  t = serve ("{\"port\":8080}");
  r = sbx_client_unexpose (&store, ID, 8080, &err);
  check_request (t, "unexpose", "{\"op\":\"unexpose\",\"port\":8080}");
  tap_ok (r == 0 && err == NULL, "unexpose succeeds");
  t = serve ("{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"port 8080 is not exposed\"}}");
  r = sbx_client_unexpose (&store, ID, 8080, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && err && err->code == SBX_E_NOT_FOUND, "unexpose of a port not exposed: NOT_FOUND (%s)",
          err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;
}

static void
test_table_ops (void)
{
  sbx_error *err = NULL;
  yajl_val v = NULL;
  pthread_t t = serve ("{\"processes\":[{\"pid\":3,\"command\":\"sleep 9\"}]}");
  int r = sbx_client_ps (&store, ID, &v, &err);
  check_request (t, "ps", "{\"op\":\"ps\"}");
  yajl_val procs = r == 0 ? j_get (v, "processes") : NULL;
  tap_ok (procs && YAJL_IS_ARRAY (procs) && procs->u.array.len == 1, "ps returns the table");
  yajl_tree_free (v);
  v = NULL;

  t = serve ("{\"pid\":42,\"state\":\"running\"}");
  r = sbx_client_proc_status (&store, ID, 42, &v, &err);
  check_request (t, "proc_status", "{\"op\":\"proc_status\",\"pid\":42}");
  const char *state = NULL;
  tap_ok (r == 0 && j_get_str (v, "state", true, &state, NULL) == 0 && strcmp (state, "running") == 0,
          "proc_status returns the process");
  yajl_tree_free (v);
  v = NULL;

  t = serve ("{\"pid\":42,\"exit_code\":3}");
  r = sbx_client_proc_wait (&store, ID, 42, 5000, &v, &err);
  check_request (t, "proc_wait", "{\"op\":\"proc_wait\",\"pid\":42,\"timeout_ms\":5000}");
  int64_t code = -1;
  tap_ok (r == 0 && j_get_int (v, "exit_code", true, &code, NULL) == 0 && code == 3, "proc_wait returns the status");
  yajl_tree_free (v);
  v = NULL;

  t = serve ("{\"ok\":true}");
  r = sbx_client_proc_kill (&store, ID, 42, 15, &v, &err);
  check_request (t, "proc_kill", "{\"op\":\"proc_kill\",\"pid\":42,\"signal\":15}");
  tap_ok (r == 0, "proc_kill succeeds");
  yajl_tree_free (v);
  v = NULL;

  /* proc_logs: the output frames, then the process. */
  int out[2], errp[2];
  if (pipe2 (out, O_CLOEXEC) < 0 || pipe2 (errp, O_CLOEXEC) < 0)
    abort ();
  memset (&peer, 0, sizeof peer);
  peer.pass_fd = -1;
  peer.frames[0] = (struct frame){ SBX_MSG_STDOUT, "hello\n" };
  peer.frames[1] = (struct frame){ SBX_MSG_STDERR, "oops\n" };
  peer.frames[2] = (struct frame){ SBX_MSG_REPLY, "{\"pid\":42,\"output_dropped\":0}" };
  serve_start (&t);
  r = sbx_client_proc_logs (&store, ID, 42, true, out[1], errp[1], &v, &err);
  check_request (t, "proc_logs", "{\"op\":\"proc_logs\",\"pid\":42,\"follow\":true}");
  close (out[1]);
  close (errp[1]);
  char ob[64] = "", eb[64] = "";
  ssize_t on = read (out[0], ob, sizeof ob - 1), en = read (errp[0], eb, sizeof eb - 1);
  tap_ok (r == 0 && on == 6 && strcmp (ob, "hello\n") == 0 && en == 5 && strcmp (eb, "oops\n") == 0,
          "proc_logs writes stdout and stderr frames to their fds");
  close (out[0]);
  close (errp[0]);
  yajl_tree_free (v);
  v = NULL;

  t = serve ("{\"ok\":true,\"next_chan\":7,\"procs\":[]}");
  r = sbx_client_snapshot (&store, ID, "/var/lib/sbx/snapshots/.tmp-x/checkpoint", &v, &err);
  check_request (t, "snapshot", "{\"op\":\"snapshot\",\"path\":\"/var/lib/sbx/snapshots/.tmp-x/checkpoint\"}");
  int64_t chan = 0;
  tap_ok (r == 0 && j_get_int (v, "next_chan", true, &chan, NULL) == 0 && chan == 7, "snapshot returns next_chan");
  yajl_tree_free (v);
}

static void
test_errors (void)
{
  sbx_error *err = NULL;
  yajl_val v = NULL;
  pthread_t t = serve ("{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no process 42 was started\"}}");
  int r = sbx_client_proc_status (&store, ID, 42, &v, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && v == NULL && err && err->code == SBX_E_NOT_FOUND
              && strcmp (err->msg, "no process 42 was started") == 0,
          "an error answer becomes its code and message");
  sbx_error_free (err);
  err = NULL;

  t = serve ("{\"error\":{\"code\":\"NO_SUCH_CODE\",\"message\":\"m\"}}");
  r = sbx_client_ping (&store, ID, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && err && err->code == SBX_E_INTERNAL, "an unknown error code is INTERNAL");
  sbx_error_free (err);
  err = NULL;

  t = serve ("{\"ok\":tru");
  r = sbx_client_ping (&store, ID, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT, "a malformed answer is an error (%s)",
          err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;

  t = serve (NULL);
  r = sbx_client_ps (&store, ID, &v, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && err && err->code == SBX_E_SANDBOX_NOT_RUNNING, "a monitor that closes unanswered: NOT_RUNNING");
  sbx_error_free (err);
  err = NULL;

  r = sbx_client_ping (&store, "sb-00000000000f", &err);
  tap_ok (r < 0 && err && err->code == SBX_E_SANDBOX_NOT_RUNNING, "no monitor: SANDBOX_NOT_RUNNING (%s)",
          err ? err->msg : "none");
  sbx_error_free (err);
}

static void
test_wait_ops (void)
{
  sbx_error *err = NULL;
  pthread_t t = serve ("{\"ok\":true}");
  int r = sbx_client_terminate (&store, ID, 5000, &err);
  check_request (t, "terminate", "{\"op\":\"terminate\"}");
  tap_ok (r == 0, "terminate returns once the monitor closed");

  t = serve (NULL);
  peer.hold_ms = 400;
  r = sbx_client_wait (&store, ID, 50, &err);
  check_request (t, "wait", "{\"op\":\"wait\"}");
  tap_ok (r < 0 && err && err->code == SBX_E_TIMEOUT, "wait past its timeout is TIMEOUT");
  sbx_error_free (err);
  err = NULL;

  t = serve (NULL);
  peer.hold_ms = 50;
  int fd = -1;
  r = sbx_client_wait_fd (&store, ID, &fd, &err);
  check_request (t, "wait_fd", "{\"op\":\"wait\"}");
  char c;
  tap_ok (r == 0 && fd >= 0 && read (fd, &c, 1) == 0, "wait_fd's fd reads EOF when the monitor closes");
  if (fd >= 0)
    close (fd);
}

static void
test_rootfd (void)
{
  sbx_error *err = NULL;
  int dir = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  pthread_t t = serve ("{\"ok\":true}");
  peer.pass_fd = dir;
  int fd = -1;
  int r = sbx_client_rootfd (&store, ID, &fd, &err);
  check_request (t, "rootfd", "{\"op\":\"rootfd\"}");
  struct stat a, b;
  tap_ok (r == 0 && fd >= 0 && fstat (fd, &a) == 0 && stat ("/", &b) == 0 && a.st_ino == b.st_ino
              && a.st_dev == b.st_dev,
          "rootfd returns the fd passed with the answer");
  if (fd >= 0)
    close (fd);

  t = serve ("{\"ok\":true}");
  r = sbx_client_rootfd (&store, ID, &fd, &err);
  pthread_join (t, NULL);
  tap_ok (r < 0 && err && err->code == SBX_E_INTERNAL, "a rootfd answer without an fd is an error");
  sbx_error_free (err);
  close (dir);
}

static void
test_exec (void)
{
  sbx_error *err = NULL;
  char *argv[] = { (char *) "sh", (char *) "-c", (char *) "sleep 9", NULL };
  char *env[] = { (char *) "A=1", NULL };
  uint32_t pid = 0;
  sbx_exec_opts o = { .argv = argv, .env = env, .cwd = "/tmp", .detach = true, .timeout_ms = 0, .ret_pid = &pid };
  int status = -1;
  pthread_t t = serve ("{\"pid\":77}");
  int r = sbx_client_exec (&store, ID, &o, -1, 1, 2, &status, &err);
  check_request (
      t, "exec -d",
      "{\"op\":\"exec\",\"argv\":[\"sh\",\"-c\",\"sleep 9\"],\"env\":[\"A=1\"],\"cwd\":\"/tmp\",\"tty\":false,"
      "\"stdin\":false,\"detach\":true,\"timeout_ms\":0}");
  tap_ok (r == 0 && status == 0 && pid == 77, "a detached exec reads the pid (%u)", pid);
}

int
main (void)
{
  char tmpl[] = "/tmp/sbx-test-client-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    abort ();
  store.root = tmpl;
  store.run_root = tmpl;
  _cleanup_free_ char *dir = xasprintf ("%s/sandboxes/%s", tmpl, ID);
  _cleanup_free_ char *path = xasprintf ("%s/control.sock", dir);
  if (mkdir_p (dir, 0700, NULL) < 0)
    abort ();
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  strcpy (sa.sun_path, path);
  listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd < 0 || bind (listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (listen_fd, 4) < 0)
    abort ();
  tap_plan (52);
  test_op_names ();
  test_simple_ops ();
  test_table_ops ();
  test_errors ();
  test_wait_ops ();
  test_rootfd ();
  test_exec ();
  close (listen_fd);
  rm_rf (tmpl, NULL);
  return tap_done ();
}
