/* The exposed-port proxy: listeners, per-connection state machines driven
 * by the monitor's poll loop, and the relay; the heads and bodies it frames
 * are parsed, checked and rewritten by http.c.
 *
 * A connection goes HEAD (reading the request head) -> RELAY (to and from
 * the sandbox) or REPLY (an error answer of our own) -> LINGER (draining
 * what the client still sends, so that closing does not reset the answer
 * away) -> closed. Nothing reaches the sandbox, not even a connection, before
 * the head has parsed and authorized. In RELAY the client's bytes still go
 * through the head buffer and are framed request by request (up_process):
 * each later head is checked and rewritten like the first, each body passed
 * on as its framing says. Memory per connection is bounded: the head
 * buffer, then two relay buffers whose fullness stops reading the side that
 * fills them.
 *
 * Why one file of about 1,100 lines: the connection states, the relay and
 * the slot accounting (pending caps per address, eviction) all change the
 * same struct conn and struct sbx_proxy and are only correct together;
 * split, each half would need the other's invariants in a header. */
#include "config.h"
#include "proxy.h"
#include "http.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define CONNECT_MS 10000       /* first head read to sandbox connected */
#define IDLE_MS 300000         /* relaying, without a byte either way */
#define LINGER_MS 2000         /* an answer of ours written and drained */
#define RELAY_BUF (128 * 1024) /* each direction */
#define PUMP_ROUNDS 16
#define SPLICE_PIPE_SIZE (1024 * 1024)
#define ACCEPT_BURST 32     /* per listener per dispatch */
#define ACCEPT_PAUSE_MS 100 /* out of fds: stop accepting for a while */
#define LISTEN_BACKLOG 128

/* --- connections ------------------------------------------------------- */

enum conn_state { ST_HEAD, ST_RELAY, ST_REPLY, ST_LINGER };

/* One direction of a relay: bytes read from its source, not yet written to
 * its sink. */
struct pipe {
  char *data; /* RELAY_BUF */
  int sp[2];  /* a kernel pipe, when the bytes go by splice(2) instead of DATA */
  size_t cap; /* what may wait in it (DATA's size or the pipe's) */
  size_t off, len;
  uint64_t total;
  bool eof;    /* the source ended */
  bool shut;   /* the sink was told (shutdown SHUT_WR) */
  bool broken; /* the sink is gone: nothing more goes this way */
};

struct conn {
  enum conn_state state;
  bool dead; /* closed; freed at the end of dispatch */
  bool connected;
  int cfd, bfd;
  uint16_t sandbox_port;
  char addr[INET6_ADDRSTRLEN];
  char key[INET6_ADDRSTRLEN]; /* ADDR, or its /64 for IPv6: what the slot caps count by */
  uint64_t seq;               /* the order of accepting */
  uint64_t deadline;
  /* SBX_HTTP_HEAD_MAX: the client's bytes not yet passed on; in ST_HEAD
   * the first head, in ST_RELAY those that FR frames next. */
  char *head;
  size_t head_len;
  sbx_http_framing fr;
  bool client_eof; /* the client sent its end; HEAD may still hold bytes */
  int fail_status; /* a later request failed: answered once the sandbox is through */
  char *out;       /* ST_REPLY */
  size_t out_off, out_len;
  struct pipe up;   /* client to sandbox */
  struct pipe down; /* sandbox to client */
};

struct listener {
  int fd;
  uint16_t sandbox_port, host_port;
  uint64_t paused_until;
};

/* What each pollfd entry of the last sbx_proxy_pollfds refers to. */
struct slot {
  int fd;
  struct conn *c; /* NULL: listener */
  size_t listener;
  bool backend;
};

struct sbx_proxy {
  char *token;
  sbx_proxy_connect_fn connect_fn;
  void *data;
  struct listener listeners[SBX_PROXY_MAX_LISTENERS];
  size_t nlisteners;
  struct conn **conns; /* live ones and, during dispatch, dead ones */
  size_t nconns, aconns, nlive;
  struct slot slots[SBX_PROXY_POLLFDS_MAX];
  size_t nslots;
  uint64_t last_activity;
  uint64_t next_seq;
  unsigned head_timeout_ms;
};

static void
pipe_splice_close (struct pipe *pp)
{
  closep (&pp->sp[0]);
  closep (&pp->sp[1]);
}

static void
conn_close (sbx_proxy *p, struct conn *c)
{
  if (c->dead)
    return;
  closep (&c->cfd);
  closep (&c->bfd);
  pipe_splice_close (&c->down);
  c->dead = true;
  p->nlive--;
}

static void
conn_free (struct conn *c)
{
  pipe_splice_close (&c->down);
  free (c->head);
  free (c->out);
  free (c->up.data);
  free (c->down.data);
  free (c);
}

static void
conn_drop_buffers (struct conn *c)
{
  free (c->head);
  free (c->up.data);
  free (c->down.data);
  c->head = c->up.data = c->down.data = NULL;
  c->head_len = c->up.len = c->down.len = 0;
  pipe_splice_close (&c->down);
}

/* Stops writing to the client and drains what it still sends, so that the
 * close does not answer unread bytes with a reset that could destroy what
 * we wrote before the client reads it. */
static void
conn_linger (struct conn *c)
{
  closep (&c->bfd);
  conn_drop_buffers (c);
  shutdown (c->cfd, SHUT_WR);
  c->state = ST_LINGER;
  c->deadline = now_ms_monotonic () + LINGER_MS;
}

static const char *
status_reason (int status)
{
  switch (status)
    {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
    }
}

static char *
status_response (int status)
{
  const char *reason = status_reason (status);
  return xasprintf ("HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                    "Cache-Control: no-store\r\nConnection: close\r\n\r\n%s\n",
                    status, reason, status == 401 ? "WWW-Authenticate: Bearer\r\n" : "", strlen (reason) + 1, reason);
}

static void conn_write_reply (sbx_proxy *p, struct conn *c);

/* Answers the client ourselves; the sandbox, if connected, is let go. */
static void
conn_reply (sbx_proxy *p, struct conn *c, int status)
{
  closep (&c->bfd);
  conn_drop_buffers (c);
  free (c->out);
  c->out = status_response (status);
  c->out_off = 0;
  c->out_len = strlen (c->out);
  c->state = ST_REPLY;
  c->deadline = now_ms_monotonic () + LINGER_MS;
  conn_write_reply (p, c);
}

static void
conn_write_reply (sbx_proxy *p, struct conn *c)
{
  ssize_t w = send (c->cfd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (w < 0)
    {
      conn_close (p, c);
      return;
    }
  c->out_off += (size_t) w;
  if (c->out_off == c->out_len)
    conn_linger (c);
}

static void
conn_drain (sbx_proxy *p, struct conn *c)
{
  char buf[4096];
  ssize_t r = read (c->cfd, buf, sizeof buf);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
    conn_close (p, c);
}

/* The client's address, and the key its connections are counted by: the
 * address itself, or for IPv6 its /64, which one host usually has whole. */
static void
client_address (int fd, char addr[INET6_ADDRSTRLEN], char key[INET6_ADDRSTRLEN])
{
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  strcpy (addr, "unknown");
  strcpy (key, "unknown");
  if (getpeername (fd, (struct sockaddr *) &ss, &sl) < 0)
    return;
  if (ss.ss_family == AF_INET)
    inet_ntop (AF_INET, &((struct sockaddr_in *) &ss)->sin_addr, addr, INET6_ADDRSTRLEN);
  else if (ss.ss_family == AF_INET6)
    {
      struct in6_addr a = ((struct sockaddr_in6 *) &ss)->sin6_addr;
      if (IN6_IS_ADDR_V4MAPPED (&a))
        inet_ntop (AF_INET, &a.s6_addr[12], addr, INET6_ADDRSTRLEN);
      else
        {
          inet_ntop (AF_INET6, &a, addr, INET6_ADDRSTRLEN);
          memset (&a.s6_addr[8], 0, 8);
          inet_ntop (AF_INET6, &a, key, INET6_ADDRSTRLEN);
          return;
        }
    }
  strcpy (key, addr);
}

/* Checks the head at the start of C->head (HLEN bytes) and rewrites it:
 * *RET the head for the sandbox and *RET_FR the framing of its body; else
 * the status to answer. */
static int
request_check (sbx_proxy *p, struct conn *c, size_t hlen, char **ret, size_t *ret_len, sbx_http_framing *ret_fr)
{
  if (!sbx_http_authorized (c->head, hlen, p->token))
    return 401;
  if (sbx_http_request_framing (c->head, hlen, ret_fr) < 0)
    return 400;
  *ret = sbx_http_rewrite_head (c->head, hlen, c->addr, ret_len);
  return *ret == NULL ? 431 : 0;
}

/* Drops the first N bytes of C->head. */
static void
head_consume (struct conn *c, size_t n)
{
  memmove (c->head, c->head + n, c->head_len - n);
  c->head_len -= n;
}

/* Room at the end of the buffer toward the sandbox, made by moving what
 * waits in it to the front when that gives NEED bytes. */
static size_t
up_room (struct conn *c, size_t need)
{
  struct pipe *pp = &c->up;
  if (pp->off > 0 && RELAY_BUF - pp->off - pp->len < need)
    {
      memmove (pp->data, pp->data + pp->off, pp->len);
      pp->off = 0;
    }
  return RELAY_BUF - pp->off - pp->len;
}

static void
up_append (struct conn *c, const char *s, size_t n)
{
  memcpy (c->up.data + c->up.off + c->up.len, s, n);
  c->up.len += n;
  c->up.total += n;
}

/* A later request failed: nothing more of the client's goes through; the
 * sandbox is told the end and answers what it got, then the client gets
 * STATUS (relay_settle). */
static void
conn_fail_later (struct conn *c, int status)
{
  c->fail_status = status;
  c->head_len = 0;
  c->up.eof = true;
}

/* One step of moving the client's bytes toward the sandbox: a whole head,
 * checked and rewritten, or body bytes as the framing allows. False when
 * nothing more can move now. */
static bool
up_step (sbx_proxy *p, struct conn *c)
{
  if (c->fr.next != SBX_HTTP_NEXT_HEAD)
    {
      size_t n = up_room (c, c->head_len);
      n = n < c->head_len ? n : c->head_len;
      ssize_t k = n > 0 ? sbx_http_body (&c->fr, c->head, n) : 0;
      if (k < 0)
        conn_fail_later (c, 400);
      if (k <= 0)
        return false;
      up_append (c, c->head, (size_t) k);
      head_consume (c, (size_t) k);
      return true;
    }
  ssize_t hl = sbx_http_head_len (c->head, c->head_len);
  if (hl <= 0)
    {
      if (hl < 0)
        conn_fail_later (c, 400);
      return false;
    }
  _cleanup_free_ char *rw = NULL;
  size_t rlen = 0;
  sbx_http_framing fr;
  int status = request_check (p, c, (size_t) hl, &rw, &rlen, &fr);
  if (status != 0)
    {
      conn_fail_later (c, status);
      return false;
    }
  if (up_room (c, rlen) < rlen)
    return false; /* again once the sandbox has read */
  up_append (c, rw, rlen);
  head_consume (c, (size_t) hl);
  c->fr = fr;
  return true;
}

static void
up_process (sbx_proxy *p, struct conn *c)
{
  if (c->fail_status != 0 || c->up.broken)
    return;
  while (c->head_len > 0 && up_step (p, c))
    ;
  /* The client's end goes on once what it sent before has; an unfinished
   * head is dropped, never passed on. */
  if (c->client_eof && !c->up.eof
      && (c->head_len == 0 || (c->fr.next == SBX_HTTP_NEXT_HEAD && sbx_http_head_len (c->head, c->head_len) == 0)))
    {
      c->head_len = 0;
      c->up.eof = true;
    }
}

static size_t
count_relaying (const sbx_proxy *p)
{
  size_t n = 0;
  for (size_t i = 0; i < p->nconns; i++)
    n += !p->conns[i]->dead && p->conns[i]->state == ST_RELAY;
  return n;
}

/* The first head parsed: checked, and only then is the sandbox connected
 * to. Returns the status to answer instead, or 0. */
static int
conn_start_relay (sbx_proxy *p, struct conn *c, size_t hlen)
{
  _cleanup_free_ char *rw = NULL;
  size_t rlen = 0;
  sbx_http_framing fr;
  int status = request_check (p, c, hlen, &rw, &rlen, &fr);
  if (status != 0)
    return status;
  if (count_relaying (p) >= SBX_PROXY_MAX_CONNS)
    return 503;
  _cleanup_error_ sbx_error *err = NULL;
  c->bfd = p->connect_fn (p->data, c->sandbox_port, &err);
  if (c->bfd < 0 || set_nonblock (c->bfd, true) < 0)
    return 502;
  c->up.data = xmalloc (RELAY_BUF);
  c->up.cap = RELAY_BUF;
  /* The answer, the bulk of the bytes, goes from socket to socket through
   * a kernel pipe (splice: no copy through this process); without a pipe
   * (out of fds) through a buffer. */
  if (pipe2 (c->down.sp, O_NONBLOCK | O_CLOEXEC) == 0)
    {
      int sz = fcntl (c->down.sp[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE);
      c->down.cap = sz > 0 ? (size_t) sz : 65536;
    }
  else
    {
      c->down.sp[0] = c->down.sp[1] = -1;
      c->down.data = xmalloc (RELAY_BUF);
      c->down.cap = RELAY_BUF;
    }
  up_append (c, rw, rlen);
  head_consume (c, hlen);
  c->fr = fr;
  c->state = ST_RELAY;
  c->deadline = now_ms_monotonic () + CONNECT_MS;
  /* What the client sent along (a body, pipelined requests) goes the
   * same way as what it sends later. */
  up_process (p, c);
  return 0;
}

static void
conn_read_head (sbx_proxy *p, struct conn *c)
{
  ssize_t r = read (c->cfd, c->head + c->head_len, SBX_HTTP_HEAD_MAX - c->head_len);
  if (r < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (r < 0 || (r == 0 && c->head_len == 0))
    {
      conn_close (p, c);
      return;
    }
  int status = 400; /* ended inside the head */
  if (r > 0)
    {
      c->head_len += (size_t) r;
      ssize_t hl = sbx_http_head_len (c->head, c->head_len);
      if (hl == 0)
        return;
      if (hl > 0)
        status = conn_start_relay (p, c, (size_t) hl);
    }
  if (status != 0)
    conn_reply (p, c, status);
}

static void
note_activity (sbx_proxy *p, struct conn *c)
{
  uint64_t now = now_ms_monotonic ();
  p->last_activity = now;
  if (c->connected)
    c->deadline = now + IDLE_MS;
}

/* 1: bytes, 0: end of stream, -1: nothing now, -2: error. Spliced into the
 * pipe pair when the connection has one, else read into the buffer. */
static int
pipe_fill (sbx_proxy *p, struct conn *c, struct pipe *pp, int fd)
{
  ssize_t r;
  if (pp->sp[1] >= 0)
    {
      if (pp->len >= pp->cap || pp->eof || pp->broken)
        return -1;
      r = splice (fd, NULL, pp->sp[1], NULL, pp->cap - pp->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    }
  else
    {
      if (pp->off > 0 && pp->off + pp->len == RELAY_BUF)
        {
          memmove (pp->data, pp->data + pp->off, pp->len);
          pp->off = 0;
        }
      size_t space = RELAY_BUF - pp->off - pp->len;
      if (space == 0 || pp->eof || pp->broken)
        return -1;
      r = read (fd, pp->data + pp->off + pp->len, space);
    }
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? -1 : -2;
  if (r == 0)
    {
      pp->eof = true;
      return 0;
    }
  pp->len += (size_t) r;
  pp->total += (uint64_t) r;
  note_activity (p, c);
  return 1;
}

/* Like pipe_fill, for the client's side: into HEAD, framed from there by
 * up_process. */
static int
client_fill (sbx_proxy *p, struct conn *c)
{
  if (c->client_eof || c->head_len >= SBX_HTTP_HEAD_MAX)
    return -1;
  ssize_t r = read (c->cfd, c->head + c->head_len, SBX_HTTP_HEAD_MAX - c->head_len);
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? -1 : -2;
  if (r == 0)
    {
      c->client_eof = true;
      return 0;
    }
  c->head_len += (size_t) r;
  note_activity (p, c);
  return 1;
}

/* 0: written what could be, -2: the sink is gone. */
static int
pipe_flush (sbx_proxy *p, struct conn *c, struct pipe *pp, int fd)
{
  if (pp->len == 0 || pp->broken)
    return 0;
  if (pp->sp[0] >= 0)
    {
      ssize_t w = splice (pp->sp[0], NULL, fd, NULL, pp->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (w < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -2;
      pp->len -= (size_t) w;
      note_activity (p, c);
      return 0;
    }
  ssize_t w = send (fd, pp->data + pp->off, pp->len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -2;
  pp->off += (size_t) w;
  pp->len -= (size_t) w;
  if (pp->len == 0)
    pp->off = 0;
  note_activity (p, c);
  return 0;
}

static bool
pipe_done (const struct pipe *pp)
{
  return pp->broken || (pp->eof && pp->len == 0 && pp->shut);
}

/* Passes the source's end on to the sink once its bytes are through. */
static void
pipe_end (struct pipe *pp, int sink)
{
  if (pp->eof && pp->len == 0 && !pp->shut && !pp->broken)
    {
      shutdown (sink, SHUT_WR);
      pp->shut = true;
    }
}

static bool
relaying (const struct conn *c)
{
  return !c->dead && c->state == ST_RELAY;
}

/* The sandbox failed: before it sent anything the client gets 502, after,
 * what it did send, then the end. */
static void
backend_failed (sbx_proxy *p, struct conn *c)
{
  if (c->down.total == 0)
    {
      conn_reply (p, c, 502);
      return;
    }
  c->down.eof = true;
  c->up.broken = true;
  c->up.len = 0;
}

static void
backend_check_connect (sbx_proxy *p, struct conn *c, short br)
{
  int e = 0;
  socklen_t el = sizeof e;
  if (getsockopt (c->bfd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
    e = errno;
  if (e != 0 || !(br & POLLOUT))
    {
      backend_failed (p, c);
      return;
    }
  c->connected = true;
  c->deadline = now_ms_monotonic () + IDLE_MS;
}

/* After any event: move what can move, pass ends on, close when both
 * directions are through. */
static void
relay_settle (sbx_proxy *p, struct conn *c)
{
  for (int i = 0; i < 2 && c->connected; i++)
    {
      if (pipe_flush (p, c, &c->up, c->bfd) < 0)
        {
          c->up.broken = true; /* the sandbox stopped reading; its answer may still come */
          c->up.len = 0;
        }
      up_process (p, c); /* into the room the flush made */
    }
  if (pipe_flush (p, c, &c->down, c->cfd) < 0)
    {
      conn_close (p, c); /* the client is gone: nobody to answer */
      return;
    }
  if (c->connected)
    pipe_end (&c->up, c->bfd);
  if (c->fail_status != 0 && c->down.eof && c->down.len == 0)
    {
      /* The sandbox answered what came before the failed request. */
      conn_reply (p, c, c->fail_status);
      return;
    }
  pipe_end (&c->down, c->cfd);
  if (!pipe_done (&c->up) || !pipe_done (&c->down))
    return;
  if (c->up.eof)
    conn_close (p, c);
  else
    conn_linger (c);
}

static void
conn_relay (sbx_proxy *p, struct conn *c, short cr, short br)
{
  const short in = POLLIN | POLLHUP | POLLERR;
  if (br && !c->connected)
    backend_check_connect (p, c, br);
  if (relaying (c) && (cr & in))
    {
      if (client_fill (p, c) == -2)
        conn_close (p, c); /* the client reset */
      else
        up_process (p, c);
    }
  /* The answer (the bulk of the bytes): read and pass on in a loop while
   * the sandbox has more and the client takes it all, not one buffer per
   * round of the owner's poll. */
  for (int i = 0; i < PUMP_ROUNDS && relaying (c) && c->connected && (br & in); i++)
    {
      int r = pipe_fill (p, c, &c->down, c->bfd);
      if (r == -2 || (r == 0 && c->down.total == 0))
        {
          backend_failed (p, c);
          break;
        }
      if (r != 1)
        break;
      if (pipe_flush (p, c, &c->down, c->cfd) < 0)
        break; /* relay_settle sees it again and closes */
      if (c->down.len > 0)
        break; /* the client's socket is full: wait for POLLOUT */
    }
  if (relaying (c))
    relay_settle (p, c);
}

static void
conn_event (sbx_proxy *p, struct conn *c, bool backend, short revents)
{
  switch (c->state)
    {
    case ST_HEAD:
      conn_read_head (p, c);
      break;
    case ST_RELAY:
      conn_relay (p, c, backend ? 0 : revents, backend ? revents : 0);
      break;
    case ST_REPLY:
      conn_write_reply (p, c);
      break;
    case ST_LINGER:
      conn_drain (p, c);
      break;
    }
}

static void
conn_expire (sbx_proxy *p, struct conn *c)
{
  if (c->state == ST_HEAD && c->head_len > 0)
    conn_reply (p, c, 408);
  else if (c->state == ST_RELAY && !c->connected)
    conn_reply (p, c, 502);
  else if (c->state == ST_RELAY && c->fail_status != 0)
    conn_reply (p, c, c->fail_status);
  else
    conn_close (p, c);
}

/* Over the cap: 503 at once, best effort, and closed. */
static void
refuse_busy (int fd)
{
  _cleanup_close_ int cfd = fd;
  _cleanup_free_ char *resp = status_response (503);
  char buf[4096];
  (void) !send (cfd, resp, strlen (resp), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown (cfd, SHUT_WR);
  (void) !read (cfd, buf, sizeof buf);
}

/* Not (yet) authorized: holds a slot of the pending pool. */
static bool
pending (const struct conn *c)
{
  return !c->dead && c->state != ST_RELAY;
}

static size_t
count_pending (const sbx_proxy *p, const char *key)
{
  size_t n = 0;
  for (size_t i = 0; i < p->nconns; i++)
    n += pending (p->conns[i]) && (key == NULL || strcmp (p->conns[i]->key, key) == 0);
  return n;
}

/* The oldest pending connection of KEY. */
static struct conn *
oldest_pending (const sbx_proxy *p, const char *key)
{
  struct conn *o = NULL;
  for (size_t i = 0; i < p->nconns; i++)
    {
      struct conn *c = p->conns[i];
      if (pending (c) && strcmp (c->key, key) == 0 && (o == NULL || c->seq < o->seq))
        o = c;
    }
  return o;
}

/* The key with the most pending connections (the pool is full: rare). */
static const char *
busiest_key (const sbx_proxy *p)
{
  const char *best = NULL;
  size_t most = 0;
  for (size_t i = 0; i < p->nconns; i++)
    if (pending (p->conns[i]))
      {
        size_t n = count_pending (p, p->conns[i]->key);
        if (n > most)
          most = n, best = p->conns[i]->key;
      }
  return best;
}

/* Room for one more pending connection from KEY: over the cap of its
 * address, that address's oldest goes; over the cap of the pool, the
 * oldest of the address that holds the most. A client that holds slots
 * idle thus pushes out its own, not the others'. One whose head is waiting
 * unread (a burst of connections accepted before their heads were read) is
 * read first, and goes on if it passes. */
static void
make_pending_room (sbx_proxy *p, const char *key)
{
  for (int tries = 0; tries < 8; tries++)
    {
      struct conn *victim = NULL;
      if (count_pending (p, key) >= SBX_PROXY_MAX_PENDING_ADDR)
        victim = oldest_pending (p, key);
      else if (count_pending (p, NULL) >= SBX_PROXY_MAX_PENDING)
        victim = oldest_pending (p, busiest_key (p));
      if (victim == NULL)
        return;
      if (victim->state == ST_HEAD && tries < 7)
        {
          conn_read_head (p, victim);
          if (!pending (victim))
            continue; /* authorized (or gone) */
        }
      if (victim->state == ST_HEAD)
        {
          refuse_busy (victim->cfd);
          victim->cfd = -1;
        }
      conn_close (p, victim);
      return;
    }
}

/* 0 accepted, else -errno. */
static int
accept_one (sbx_proxy *p, struct listener *l)
{
  int fd = accept4 (l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0)
    return -errno;
  struct conn *c = xmalloc0 (sizeof *c);
  c->state = ST_HEAD;
  c->cfd = fd;
  c->bfd = -1;
  c->up.sp[0] = c->up.sp[1] = c->down.sp[0] = c->down.sp[1] = -1;
  c->sandbox_port = l->sandbox_port;
  client_address (fd, c->addr, c->key);
  make_pending_room (p, c->key);
  c->seq = p->next_seq++;
  c->deadline = now_ms_monotonic () + p->head_timeout_ms;
  c->head = xmalloc (SBX_HTTP_HEAD_MAX);
  if (p->nconns == p->aconns)
    {
      p->aconns = p->aconns ? p->aconns * 2 : 16;
      p->conns = xrealloc (p->conns, p->aconns * sizeof *p->conns);
    }
  p->conns[p->nconns++] = c;
  p->nlive++;
  return 0;
}

static void
listener_accept (sbx_proxy *p, struct listener *l)
{
  for (int i = 0; i < ACCEPT_BURST; i++)
    {
      int r = accept_one (p, l);
      if (r == -EAGAIN || r == -EWOULDBLOCK)
        return;
      if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM)
        {
          /* The pending connection stays queued and the listener readable:
           * without a pause the loop would spin. */
          l->paused_until = now_ms_monotonic () + ACCEPT_PAUSE_MS;
          return;
        }
    }
}

/* --- the proxy --------------------------------------------------------- */

sbx_proxy *
sbx_proxy_new (const char *token, sbx_proxy_connect_fn connect_fn, void *data)
{
  sbx_proxy *p = xmalloc0 (sizeof *p);
  p->token = token ? xstrdup (token) : NULL;
  p->connect_fn = connect_fn;
  p->data = data;
  p->head_timeout_ms = SBX_PROXY_HEAD_TIMEOUT_MS;
  return p;
}

void
sbx_proxy_set_head_timeout (sbx_proxy *p, unsigned ms)
{
  p->head_timeout_ms = ms > 0 ? ms : SBX_PROXY_HEAD_TIMEOUT_MS;
}

static int
parse_addr (const char *addr, uint16_t port, struct sockaddr_storage *ss, socklen_t *sl)
{
  struct sockaddr_in *in4 = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;
  memset (ss, 0, sizeof *ss);
  if (inet_pton (AF_INET, addr, &in4->sin_addr) == 1)
    {
      in4->sin_family = AF_INET;
      in4->sin_port = htons (port);
      *sl = sizeof *in4;
      return 0;
    }
  if (inet_pton (AF_INET6, addr, &in6->sin6_addr) == 1)
    {
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons (port);
      *sl = sizeof *in6;
      return 0;
    }
  return -1;
}

static int
listen_socket (const char *addr, uint16_t host_port, uint16_t *ret_port, sbx_error **err)
{
  struct sockaddr_storage ss;
  socklen_t sl;
  if (addr == NULL || parse_addr (addr, host_port, &ss, &sl) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not an IPv4 or IPv6 address",
                          addr ? addr : "(null)");
  _cleanup_close_ int fd = socket (ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return sbx_error_errno (err, errno, "socket");
  int one = 1;
  if (setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
    return sbx_error_errno (err, errno, "SO_REUSEADDR");
  if (bind (fd, (struct sockaddr *) &ss, sl) < 0)
    return sbx_error_set (err,
                          errno == EADDRINUSE      ? SBX_E_BUSY
                          : errno == EADDRNOTAVAIL ? SBX_E_INVALID_ARGUMENT
                                                   : SBX_E_INTERNAL,
                          errno, "bind %s port %u", addr, (unsigned) host_port);
  if (listen (fd, LISTEN_BACKLOG) < 0)
    return sbx_error_errno (err, errno, "listen on %s port %u", addr, (unsigned) host_port);
  sl = sizeof ss;
  if (getsockname (fd, (struct sockaddr *) &ss, &sl) < 0)
    return sbx_error_errno (err, errno, "getsockname");
  *ret_port = ntohs (ss.ss_family == AF_INET ? ((struct sockaddr_in *) &ss)->sin_port
                                             : ((struct sockaddr_in6 *) &ss)->sin6_port);
  return steal_fd (&fd);
}

int
sbx_proxy_listen (sbx_proxy *p, const char *addr, uint16_t host_port, uint16_t sandbox_port, uint16_t *ret_port,
                  sbx_error **err)
{
  if (sandbox_port == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "sandbox port 0");
  for (size_t i = 0; i < p->nlisteners; i++)
    if (p->listeners[i].sandbox_port == sandbox_port)
      {
        *ret_port = p->listeners[i].host_port;
        return 0;
      }
  if (p->nlisteners == SBX_PROXY_MAX_LISTENERS)
    return sbx_error_set (err, SBX_E_BUSY, 0, "at most %d exposed ports", SBX_PROXY_MAX_LISTENERS);
  uint16_t port = 0;
  int fd = listen_socket (addr, host_port, &port, err);
  if (fd < 0)
    return sbx_error_wrap (err, "expose port %u", (unsigned) sandbox_port);
  p->listeners[p->nlisteners++] = (struct listener){ fd, sandbox_port, port, 0 };
  *ret_port = port;
  return 0;
}

int
sbx_proxy_unlisten (sbx_proxy *p, uint16_t sandbox_port, sbx_error **err)
{
  size_t i = 0;
  while (i < p->nlisteners && p->listeners[i].sandbox_port != sandbox_port)
    i++;
  if (i == p->nlisteners)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "port %u is not exposed", (unsigned) sandbox_port);
  close (p->listeners[i].fd);
  memmove (&p->listeners[i], &p->listeners[i + 1], (p->nlisteners - i - 1) * sizeof p->listeners[0]);
  p->nlisteners--;
  /* Its connections end with it, as podman's do when a port mapping goes:
   * closed here, freed at the end of the next dispatch (the slots of the
   * last sbx_proxy_pollfds may still point at them). */
  for (size_t k = 0; k < p->nconns; k++)
    if (!p->conns[k]->dead && p->conns[k]->sandbox_port == sandbox_port)
      conn_close (p, p->conns[k]);
  return 0;
}

size_t
sbx_proxy_ports (const sbx_proxy *p, uint16_t (*ret)[2], size_t max)
{
  size_t n = 0;
  for (; n < p->nlisteners && n < max; n++)
    {
      ret[n][0] = p->listeners[n].sandbox_port;
      ret[n][1] = p->listeners[n].host_port;
    }
  return n;
}

/* What the relay waits for on each side: reading a side only while its
 * buffer toward the other has room is the backpressure. */
static void
relay_events (const struct conn *c, short *ce, short *be)
{
  *ce = *be = 0;
  if (!c->client_eof && c->fail_status == 0 && !c->up.broken && c->head_len < SBX_HTTP_HEAD_MAX)
    *ce |= POLLIN;
  if (c->down.len > 0)
    *ce |= POLLOUT;
  if (!c->connected)
    {
      *be = POLLOUT;
      return;
    }
  if (!c->down.eof && c->down.len < c->down.cap)
    *be |= POLLIN;
  if (c->up.len > 0 && !c->up.broken)
    *be |= POLLOUT;
}

static size_t
add_slot (sbx_proxy *p, struct pollfd *pf, size_t k, size_t max, int fd, short events, struct slot s)
{
  /* An fd with nothing to wait for is left out: poll would still report
   * its hangup, again and again. */
  if (events == 0 || k >= max || k >= SBX_PROXY_POLLFDS_MAX)
    return k;
  pf[k] = (struct pollfd){ fd, events, 0 };
  s.fd = fd;
  p->slots[k] = s;
  return k + 1;
}

size_t
sbx_proxy_pollfds (sbx_proxy *p, struct pollfd *pf, size_t max)
{
  uint64_t now = now_ms_monotonic ();
  size_t k = 0;
  for (size_t i = 0; i < p->nlisteners; i++)
    if (p->listeners[i].paused_until <= now)
      k = add_slot (p, pf, k, max, p->listeners[i].fd, POLLIN, (struct slot){ .listener = i });
  for (size_t i = 0; i < p->nconns; i++)
    {
      struct conn *c = p->conns[i];
      short ce = 0, be = 0;
      if (c->dead)
        continue;
      if (c->state == ST_RELAY)
        relay_events (c, &ce, &be);
      else
        ce = c->state == ST_REPLY ? POLLOUT : POLLIN;
      k = add_slot (p, pf, k, max, c->cfd, ce, (struct slot){ .c = c });
      k = add_slot (p, pf, k, max, c->bfd, be, (struct slot){ .c = c, .backend = true });
    }
  p->nslots = k;
  return k;
}

static void
dispatch_one (sbx_proxy *p, const struct slot *s, const struct pollfd *e)
{
  if (s->c == NULL)
    {
      if (s->listener < p->nlisteners && p->listeners[s->listener].fd == e->fd)
        listener_accept (p, &p->listeners[s->listener]);
      return;
    }
  /* Closed earlier in this dispatch, its fd number perhaps reused since. */
  if (s->c->dead || (s->backend ? s->c->bfd : s->c->cfd) != e->fd)
    return;
  conn_event (p, s->c, s->backend, e->revents);
}

void
sbx_proxy_dispatch (sbx_proxy *p, const struct pollfd *pf, size_t n)
{
  size_t nslots = p->nslots;
  p->nslots = 0; /* the slots hold conn pointers: good for one dispatch */
  for (size_t i = 0; i < n && i < nslots; i++)
    if (pf[i].revents != 0 && pf[i].fd == p->slots[i].fd)
      dispatch_one (p, &p->slots[i], &pf[i]);
  uint64_t now = now_ms_monotonic ();
  for (size_t i = 0; i < p->nconns; i++)
    if (!p->conns[i]->dead && now >= p->conns[i]->deadline)
      conn_expire (p, p->conns[i]);
  size_t k = 0;
  for (size_t i = 0; i < p->nconns; i++)
    if (p->conns[i]->dead)
      conn_free (p->conns[i]);
    else
      p->conns[k++] = p->conns[i];
  p->nconns = k;
}

int
sbx_proxy_timeout_ms (const sbx_proxy *p)
{
  uint64_t now = now_ms_monotonic (), next = UINT64_MAX;
  for (size_t i = 0; i < p->nconns; i++)
    if (!p->conns[i]->dead && p->conns[i]->deadline < next)
      next = p->conns[i]->deadline;
  for (size_t i = 0; i < p->nlisteners; i++)
    if (p->listeners[i].paused_until > now && p->listeners[i].paused_until < next)
      next = p->listeners[i].paused_until;
  if (next == UINT64_MAX)
    return -1;
  return next <= now ? 0 : (int) (next - now);
}

uint64_t
sbx_proxy_last_activity_ms (const sbx_proxy *p)
{
  return p->last_activity;
}

size_t
sbx_proxy_connections (const sbx_proxy *p)
{
  return p->nlive;
}

void
sbx_proxy_free (sbx_proxy *p)
{
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->nconns; i++)
    {
      conn_close (p, p->conns[i]);
      conn_free (p->conns[i]);
    }
  for (size_t i = 0; i < p->nlisteners; i++)
    close (p->listeners[i].fd);
  free (p->conns);
  if (p->token)
    explicit_bzero (p->token, strlen (p->token));
  free (p->token);
  free (p);
}
