/* Exposed ports: the port proxy's connections into the sandbox, through
 * its network namespace or, with no interface (runsc --block-network),
 * relayed by the agent. */
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

/* A stream socket made inside the sandbox's network namespace, connecting
 * to its loopback: reaches a server that listens on 127.0.0.1 as well as
 * one on 0.0.0.0. The monitor is single-threaded: it steps into the
 * namespace for the socket() call and straight back. With no namespace of
 * ours: under runc --block-network, the one runc made; under runsc
 * --block-network (gVisor's own loopback) the agent relays. */
static int relay_open (struct mon *m, uint16_t port, sbx_error **err);

static int
proxy_connect (void *data, uint16_t port, sbx_error **err)
{
  struct mon *m = data;
  int nsfd = m->net ? m->net->nsfd : -1;
  if (nsfd < 0 && !mon_runtime_detached (m))
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
  struct sockaddr_in sa = { .sin_family = AF_INET,
                            .sin_port = htons (port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
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
      mon_log (m, "port %lld exposed at %s%s", (long long) port, url, m->sb->opts.public_ports ? " (public)" : "");
    }
  *ret_url = steal_pointer (&url);
  return 0;
}

void
mon_handle_expose (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  int64_t port = 0;
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *url = NULL;
  if (j_get_int (req, "port", true, &port, &err) < 0 || expose_port (m, port, &url, &err) < 0)
    {
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  mon_save_state (m);
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, "port", port);
  j_kstr (g, "url", url);
  j_kbool (g, "public", m->sb->opts.public_ports);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
  c->closing = true;
}

/* Its listener and open connections closed at once (proxy.h), its URL
 * gone from the state that `sbx urls` and `sbx status` read. */
static int
unexpose_port (struct mon *m, int64_t port, sbx_error **err)
{
  if (port < 1 || port > 65535)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "port %lld is not in 1..65535", (long long) port);
  if (m->proxy == NULL)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "port %lld is not exposed", (long long) port);
  if (sbx_proxy_unlisten (m->proxy, (uint16_t) port, err) < 0)
    return -1;
  _cleanup_free_ char *prefix = xasprintf ("%lld ", (long long) port);
  size_t k = 0, n = strv_len (m->sb->urls);
  for (size_t i = 0; i < n; i++)
    if (strncmp (m->sb->urls[i], prefix, strlen (prefix)) == 0)
      free (m->sb->urls[i]);
    else
      m->sb->urls[k++] = m->sb->urls[i];
  if (m->sb->urls)
    m->sb->urls[k] = NULL;
  mon_log (m, "port %lld no longer exposed", (long long) port);
  return 0;
}

void
mon_handle_unexpose (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  int64_t port = 0;
  _cleanup_error_ sbx_error *err = NULL;
  if (j_get_int (req, "port", true, &port, &err) < 0 || unexpose_port (m, port, &err) < 0)
    {
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  mon_save_state (m);
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, "port", port);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
  c->closing = true;
}

/* --- relays --------------------------------------------------------------
 *
 * An exposed port of a sandbox with no interface (runsc --block-network):
 * the proxy gets one end of a socketpair, and the other end is pumped
 * through the agent, which connects to the sandbox's own loopback (a
 * CONNECT channel). Flow control as for an exec: the agent takes at most
 * its window of our bytes, and we credit what we have written on. */

struct relay {
  uint32_t chan;
  int fd;
  struct buf to_fd;    /* from the sandbox, not yet written to FD */
  int64_t window;      /* bytes the agent still takes */
  uint32_t uncredited; /* written to FD since the last CREDIT */
  bool fd_eof, aborted, agent_done;
};

struct relay *
mon_relay_by_chan (struct mon *m, uint32_t chan)
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
  mon_to_agent (m, SBX_MSG_CONNECT, r->chan, &port, sizeof port);
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
      mon_to_agent (m, SBX_MSG_SIGNAL, r->chan, &sig, sizeof sig);
    }
}

/* A frame of the agent on a relay's channel. */
void
mon_relay_frame (struct mon *m, struct relay *r, const struct sbx_frame_hdr *h, const unsigned char *p)
{
  uint32_t n;
  switch (h->type)
    {
    case SBX_MSG_STDOUT:
      if (r->aborted)
        {
          n = h->len;
          mon_to_agent (m, SBX_MSG_CREDIT, r->chan, &n, sizeof n);
        }
      else
        mon_buf_append (&r->to_fd, p, h->len);
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

/* Whether a relay is over but still open (the agent's end came after the
 * relays were dispatched): the loop then does not wait, having no tick to
 * close it later, and the proxy sees its end. */
bool
mon_relays_done (const struct mon *m)
{
  for (size_t i = 0; i < m->nrelays; i++)
    {
      const struct relay *r = m->relays[i];
      if (r->agent_done && (r->to_fd.len == 0 || r->aborted))
        return true;
    }
  return false;
}

size_t
mon_relay_pollfds (struct mon *m, struct pollfd *pf)
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

void
mon_relay_dispatch (struct mon *m, const struct pollfd *pf, size_t n)
{
  for (size_t i = 0; i < n && i < m->nrelays; i++)
    {
      struct relay *r = m->relays[i];
      if (pf[i].revents & POLLOUT && r->to_fd.len)
        {
          size_t before = r->to_fd.len;
          if (mon_buf_flush (&r->to_fd, r->fd) < 0)
            relay_abort (m, r);
          else
            r->uncredited += (uint32_t) (before - r->to_fd.len);
          if (r->uncredited >= RELAY_READ_MAX || (r->to_fd.len == 0 && r->uncredited > 0))
            {
              mon_to_agent (m, SBX_MSG_CREDIT, r->chan, &r->uncredited, sizeof r->uncredited);
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
              mon_to_agent (m, SBX_MSG_STDIN, r->chan, buf, (size_t) k);
              r->window -= k;
            }
          else if (k == 0)
            {
              r->fd_eof = true;
              mon_to_agent (m, SBX_MSG_STDIN_EOF, r->chan, NULL, 0);
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

/* --port N at create: exposed once the sandbox runs. */
int
mon_expose_create_ports (struct mon *m, sbx_error **err)
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
