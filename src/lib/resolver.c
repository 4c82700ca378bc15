/* The DNS forwarder a sandbox's monitor runs (see resolver.h): listening
 * sockets, one connected UDP socket per upstream, a fixed table of the
 * queries outstanding, and the TCP clients with their buffers. The DNS
 * messages themselves are read and made by dns.c.
 *
 * Nothing here is freed while the pollfds filled for it may still name it,
 * except a query answered while the loop walks them; each pollfd remembers
 * the serial of the object it was filled for, so a slot reused meanwhile is
 * never mistaken for the old one. Connections are only closed by the sweep
 * at the end of a dispatch. */
#include "config.h"
#include "resolver.h"
#include "dns.h"
#include "domain.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#define FRAME_MAX (2 + 65535)
#define CONN_RBUF_MIN 512
/* Datagrams or connections taken per readiness, so one busy socket never
 * starves the rest of the loop. */
#define BATCH 64

enum ref_kind { REF_LISTENER, REF_UPSTREAM, REF_QUERY, REF_CONN };

/* What one filled pollfd stands for. */
typedef struct ref {
  uint8_t kind;
  uint32_t idx;
  uint64_t serial;
} ref;

typedef struct listener {
  int fd;
  bool tcp;
} listener;

typedef struct upstream {
  struct sockaddr_storage sa;
  socklen_t salen;
  int udp;   /* connected; made on first use, -1 until then */
  bool self; /* one of our own listening sockets: forwarding would loop */
} upstream;

typedef struct conn {
  uint64_t serial;
  int fd;
  unsigned char *rbuf; /* length-prefixed queries as read */
  size_t rlen, rcap;
  unsigned char *wbuf; /* length-prefixed answers not yet written */
  size_t wlen;
  unsigned nout; /* its queries in flight */
  bool eof, broken;
  uint64_t idle_at;
} conn;

enum tcp_state { TCP_CONNECTING, TCP_SENDING, TCP_RECEIVING };

typedef struct query {
  uint64_t serial;
  size_t slot;
  conn *conn;      /* the TCP client; NULL for a UDP one */
  size_t listener; /* UDP: the socket it came by, which the answer leaves by */
  struct sockaddr_storage client;
  socklen_t clientlen;
  uint16_t client_id, id;
  size_t upstream; /* the try in progress */
  uint64_t deadline;
  unsigned char *msg; /* 2-byte length, then the query (with our id) */
  size_t len;         /* of the query, without the length */
  size_t qend;        /* where its question ends */
  /* TCP to the upstream */
  int fd;
  enum tcp_state state;
  size_t done; /* bytes sent, or received (length included) */
  unsigned char alen[2];
  unsigned char *ans;
} query;

struct sbx_resolver {
  upstream up[SBX_RESOLVER_UPSTREAM_MAX];
  size_t nup;
  uint16_t port;
  listener ls[2 * SBX_RESOLVER_LISTEN_MAX];
  size_t nls;
  query *qs[SBX_RESOLVER_PENDING_MAX];
  size_t nqs, ntcp;
  conn *conns[SBX_RESOLVER_CONN_MAX];
  size_t nconns;
  ref map[SBX_RESOLVER_POLLFDS_MAX];
  size_t nmap;
  uint64_t serial;
  int timeout_ms, idle_ms;
  uint16_t rnd[32];
  size_t nrnd;
  uint64_t answered, failed, malformed, refused;
  char **rules; /* domain rules; NULL: none */
  uint32_t ttl_max;
  sbx_resolver_allow_fn allow;
  void *allow_data;
  unsigned char buf[FRAME_MAX]; /* the datagram at hand */
};

/* Whether P is an answer to Q as sent. */
static bool
answer_matches (const query *q, const unsigned char *p, size_t n)
{
  return sbx_dns_answer_matches (q->msg + 2, q->qend, q->id, p, n);
}

/* ---- sockets ---- */

static socklen_t
make_sockaddr (int family, const void *addr, uint16_t port, struct sockaddr_storage *ss)
{
  memset (ss, 0, sizeof *ss);
  if (family == AF_INET)
    {
      struct sockaddr_in *sin = (struct sockaddr_in *) ss;
      sin->sin_family = AF_INET;
      sin->sin_port = htons (port);
      memcpy (&sin->sin_addr, addr, 4);
      return sizeof *sin;
    }
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) ss;
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons (port);
  memcpy (&sin6->sin6_addr, addr, 16);
  return sizeof *sin6;
}

static bool
same_sockaddr (const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
  if (a->ss_family != b->ss_family)
    return false;
  if (a->ss_family == AF_INET)
    {
      const struct sockaddr_in *x = (const struct sockaddr_in *) a, *y = (const struct sockaddr_in *) b;
      return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
  const struct sockaddr_in6 *x = (const struct sockaddr_in6 *) a, *y = (const struct sockaddr_in6 *) b;
  return x->sin6_port == y->sin6_port && memcmp (&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

/* A bound (and for TCP listening) socket, or -errno. */
static int
listen_socket (const struct sockaddr_storage *sa, socklen_t salen, int type)
{
  _cleanup_close_ int fd = socket (sa->ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0)
    return -errno;
  if (sa->ss_family == AF_INET6)
    {
      if (setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0
          || setsockopt (fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one) < 0)
        return -errno;
    }
  else if (setsockopt (fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one) < 0)
    return -errno;
  if (type == SOCK_STREAM && setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
    return -errno;
  if (bind (fd, (const struct sockaddr *) sa, salen) < 0)
    return -errno;
  if (type == SOCK_STREAM && listen (fd, SBX_RESOLVER_CONN_MAX) < 0)
    return -errno;
  return steal_fd (&fd);
}

/* The upstream's connected UDP socket, made on first use; -1 if it cannot
 * be (its family unreachable, say). */
static int
upstream_udp (upstream *up)
{
  if (up->udp >= 0)
    return up->udp;
  _cleanup_close_ int fd = socket (up->sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect (fd, (const struct sockaddr *) &up->sa, up->salen) < 0)
    return -1;
  up->udp = steal_fd (&fd);
  return up->udp;
}

/* ---- the query table ---- */

/* GRND_NONBLOCK: before the kernel's pool is ready (early boot) queries
 * fail rather than the loop block. */
static int
rand16 (sbx_resolver *r, uint16_t *ret)
{
  if (r->nrnd == 0)
    {
      if (getrandom (r->rnd, sizeof r->rnd, GRND_NONBLOCK) != (ssize_t) sizeof r->rnd)
        return -1;
      r->nrnd = ARRAY_SIZE (r->rnd);
    }
  *ret = r->rnd[--r->nrnd];
  return 0;
}

/* A random id no other query has outstanding at upstream U. */
static int
fresh_id (sbx_resolver *r, const query *self, size_t u, uint16_t *ret)
{
  for (int tries = 0; tries < 16; tries++)
    {
      uint16_t id;
      bool taken = false;
      if (rand16 (r, &id) < 0)
        return -1;
      for (size_t i = 0; i < ARRAY_SIZE (r->qs) && !taken; i++)
        taken = r->qs[i] && r->qs[i] != self && r->qs[i]->upstream == u && r->qs[i]->id == id;
      if (!taken)
        {
          *ret = id;
          return 0;
        }
    }
  return -1;
}

/* A query for the checked message P, or NULL when the table is full. */
static query *
query_new (sbx_resolver *r, const unsigned char *p, size_t n)
{
  if (r->nqs == ARRAY_SIZE (r->qs))
    return NULL;
  size_t slot = 0;
  while (r->qs[slot])
    slot++;
  query *q = xmalloc0 (sizeof *q);
  q->serial = ++r->serial;
  q->slot = slot;
  q->fd = -1;
  q->client_id = sbx_dns_get16 (p);
  q->msg = xmalloc (n + 2);
  sbx_dns_put16 (q->msg, (uint16_t) n);
  memcpy (q->msg + 2, p, n);
  q->len = n;
  q->qend = SBX_DNS_HDR + (size_t) sbx_dns_question_len (p, n);
  r->qs[slot] = q;
  r->nqs++;
  return q;
}

static void
query_free (sbx_resolver *r, query *q)
{
  r->qs[q->slot] = NULL;
  r->nqs--;
  if (q->conn)
    {
      q->conn->nout--;
      r->ntcp--;
    }
  if (q->fd >= 0)
    close (q->fd);
  free (q->msg);
  free (q->ans);
  free (q);
}

static void conn_queue (sbx_resolver *r, conn *c, const unsigned char *p, size_t n);

/* Sends the message P (an answer to Q) to Q's client, with its id. */
static void
deliver (sbx_resolver *r, const query *q, unsigned char *p, size_t n)
{
  sbx_dns_put16 (p, q->client_id);
  if (q->conn)
    conn_queue (r, q->conn, p, n);
  else
    (void) sendto (r->ls[q->listener].fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *) &q->client,
                   q->clientlen);
}

/* Whether the rules let the question of the checked message P (ending at
 * QEND) through. */
static bool
name_listed (const sbx_resolver *r, const unsigned char *p, size_t qend)
{
  char name[SBX_DNS_NAME_MAX + 1];
  bool odd;
  if (r->rules == NULL)
    return true;
  return sbx_dns_name_read (p, qend, SBX_DNS_HDR, name, &odd) >= 0 && !odd && sbx_domain_match (r->rules, name);
}

static void query_fail (sbx_resolver *r, query *q);

static void
query_refuse (sbx_resolver *r, query *q)
{
  unsigned char out[SBX_DNS_HDR + SBX_DNS_QUESTION_MAX];
  size_t n = sbx_dns_refused (q->msg + 2, q->qend, out);
  deliver (r, q, out, n);
  r->refused++;
  query_free (r, q);
}

static void
query_answer (sbx_resolver *r, query *q, unsigned char *p, size_t n)
{
  if (r->rules)
    {
      /* The rules may have changed while the query was out. */
      if (!name_listed (r, q->msg + 2, q->qend))
        {
          query_refuse (r, q);
          return;
        }
      sbx_dns_addr addrs[SBX_RESOLVER_ANSWER_ADDRS_MAX];
      char qname[SBX_DNS_NAME_MAX + 1];
      bool odd;
      ssize_t na = sbx_dns_answer_addrs (p, n, r->ttl_max, addrs, ARRAY_SIZE (addrs));
      if (na > 0 && r->allow && sbx_dns_name_read (q->msg + 2, q->qend, SBX_DNS_HDR, qname, &odd) >= 0
          && r->allow (r->allow_data, qname, addrs, (size_t) na) < 0)
        {
          query_fail (r, q);
          return;
        }
    }
  deliver (r, q, p, n);
  r->answered++;
  query_free (r, q);
}

static void
query_fail (sbx_resolver *r, query *q)
{
  unsigned char out[SBX_DNS_HDR + SBX_DNS_QUESTION_MAX];
  size_t n = sbx_dns_servfail (q->msg + 2, q->qend, out);
  deliver (r, q, out, n);
  r->failed++;
  query_free (r, q);
}

/* ---- tries ---- */

static int
udp_send (sbx_resolver *r, query *q)
{
  int fd = upstream_udp (&r->up[q->upstream]);
  if (fd < 0)
    return -1;
  for (int again = 0; again < 2; again++)
    {
      if (send (fd, q->msg + 2, q->len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t) q->len)
        return 0;
      /* An ICMP error left over from an earlier query fails one send. */
      if (errno != ECONNREFUSED)
        break;
    }
  return -1;
}

static int
tcp_open (sbx_resolver *r, query *q)
{
  const upstream *up = &r->up[q->upstream];
  _cleanup_close_ int fd = socket (up->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect (fd, (const struct sockaddr *) &up->sa, up->salen) == 0)
    q->state = TCP_SENDING;
  else if (errno == EINPROGRESS)
    q->state = TCP_CONNECTING;
  else
    return -1;
  q->fd = steal_fd (&fd);
  return 0;
}

/* Sends Q to the first upstream from FROM on that takes it, under a fresh
 * id; after the last, answers SERVFAIL (and Q is gone). */
static void
query_try (sbx_resolver *r, query *q, size_t from)
{
  if (q->fd >= 0)
    close (q->fd);
  q->fd = -1;
  free (q->ans);
  q->ans = NULL;
  q->done = 0;
  for (size_t u = from; u < r->nup; u++)
    {
      if (r->up[u].self || fresh_id (r, q, u, &q->id) < 0)
        continue;
      sbx_dns_put16 (q->msg + 2, q->id);
      q->upstream = u;
      if ((q->conn ? tcp_open (r, q) : udp_send (r, q)) < 0)
        continue;
      q->deadline = now_ms_monotonic () + (uint64_t) r->timeout_ms;
      return;
    }
  query_fail (r, q);
}

static void
tcp_next (sbx_resolver *r, query *q)
{
  query_try (r, q, q->upstream + 1);
}

/* Reads the length-prefixed answer; 1 when it is whole, 0 for more
 * later, -1 when this try failed. */
static int
tcp_receive (query *q)
{
  for (;;)
    {
      unsigned char *dst;
      size_t want;
      if (q->done < 2)
        {
          dst = q->alen + q->done;
          want = 2 - q->done;
        }
      else
        {
          size_t n = sbx_dns_get16 (q->alen);
          if (n < SBX_DNS_HDR)
            return -1;
          if (!q->ans)
            q->ans = xmalloc (n);
          if (q->done - 2 == n)
            return 1;
          dst = q->ans + (q->done - 2);
          want = n - (q->done - 2);
        }
      ssize_t got = recv (q->fd, dst, want, MSG_DONTWAIT);
      if (got == 0)
        return -1;
      if (got < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
      q->done += (size_t) got;
    }
}

/* One step of a TCP try, on any readiness of its socket. */
static void
tcp_step (sbx_resolver *r, query *q)
{
  if (q->state == TCP_CONNECTING)
    {
      int e = 0;
      socklen_t l = sizeof e;
      if (getsockopt (q->fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0 || e != 0)
        {
          tcp_next (r, q);
          return;
        }
      q->state = TCP_SENDING;
    }
  if (q->state == TCP_SENDING)
    {
      ssize_t w = send (q->fd, q->msg + q->done, q->len + 2 - q->done, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w < 0)
        {
          if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            tcp_next (r, q);
          return;
        }
      q->done += (size_t) w;
      if (q->done == q->len + 2)
        {
          q->state = TCP_RECEIVING;
          q->done = 0;
        }
      return;
    }
  int whole = tcp_receive (q);
  if (whole < 0 || (whole > 0 && !answer_matches (q, q->ans, sbx_dns_get16 (q->alen))))
    tcp_next (r, q);
  else if (whole > 0)
    query_answer (r, q, q->ans, sbx_dns_get16 (q->alen));
}

/* Tries that reached their deadline move on to the next upstream. */
static void
expire (sbx_resolver *r, uint64_t now)
{
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    if (r->qs[i] && r->qs[i]->deadline <= now)
      query_try (r, r->qs[i], r->qs[i]->upstream + 1);
}

/* ---- UDP ---- */

static void
udp_query (sbx_resolver *r, size_t l, const struct sockaddr_storage *from, socklen_t fromlen, size_t n)
{
  unsigned char *p = r->buf;
  unsigned char out[SBX_DNS_HDR + SBX_DNS_QUESTION_MAX];
  size_t m = 0;
  if (n > SBX_DNS_UDP_MAX || sbx_dns_query_check (p, n) < 0)
    {
      r->malformed++;
      m = sbx_dns_formerr (p, n > SBX_DNS_UDP_MAX ? SBX_DNS_UDP_MAX : n, out);
    }
  else
    {
      size_t qend = SBX_DNS_HDR + (size_t) sbx_dns_question_len (p, n);
      query *q = NULL;
      if (!name_listed (r, p, qend))
        {
          r->refused++;
          m = sbx_dns_refused (p, qend, out);
        }
      else if ((q = query_new (r, p, n)) != NULL)
        {
          q->listener = l;
          memcpy (&q->client, from, fromlen);
          q->clientlen = fromlen;
          query_try (r, q, 0);
          return;
        }
      else
        {
          r->failed++;
          m = sbx_dns_servfail (p, qend, out);
        }
    }
  if (m)
    (void) sendto (r->ls[l].fd, out, m, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *) from, fromlen);
}

static void
listener_udp_read (sbx_resolver *r, size_t l)
{
  for (int i = 0; i < BATCH; i++)
    {
      struct sockaddr_storage from;
      socklen_t fromlen = sizeof from;
      /* MSG_TRUNC: the length of a datagram larger than the limit, to refuse it. */
      ssize_t n = recvfrom (r->ls[l].fd, r->buf, SBX_DNS_UDP_MAX, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *) &from,
                            &fromlen);
      if (n < 0)
        {
          if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
          continue; /* an ICMP error for an earlier answer, say */
        }
      if (fromlen > sizeof from)
        continue;
      udp_query (r, l, &from, fromlen, (size_t) n);
    }
}

/* The upstream refused (ICMP port unreachable): its tries fail now rather
 * than at their deadline. */
static void
upstream_refused (sbx_resolver *r, size_t u)
{
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    if (r->qs[i] && !r->qs[i]->conn && r->qs[i]->upstream == u)
      r->qs[i]->deadline = 0;
}

static query *
udp_match (sbx_resolver *r, size_t u, const unsigned char *p, size_t n)
{
  if (n < SBX_DNS_HDR)
    return NULL;
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    {
      query *q = r->qs[i];
      if (q && !q->conn && q->upstream == u && q->id == sbx_dns_get16 (p))
        return answer_matches (q, p, n) ? q : NULL;
    }
  return NULL;
}

static void
upstream_read (sbx_resolver *r, size_t u)
{
  upstream *up = &r->up[u];
  for (int i = 0; i < BATCH; i++)
    {
      struct sockaddr_storage from;
      socklen_t fromlen = sizeof from;
      ssize_t n = recvfrom (up->udp, r->buf, sizeof r->buf, MSG_DONTWAIT, (struct sockaddr *) &from, &fromlen);
      if (n < 0)
        {
          if (errno == ECONNREFUSED)
            upstream_refused (r, u);
          else if (errno != EINTR)
            break;
          continue;
        }
      /* The socket is connected, so the kernel already filters by source;
       * checked again here because the anti-spoofing rests on it. */
      if (fromlen > sizeof from || !same_sockaddr (&from, &up->sa))
        continue;
      query *q = udp_match (r, u, r->buf, (size_t) n);
      if (q)
        query_answer (r, q, r->buf, (size_t) n);
    }
}

/* ---- TCP clients ---- */

static void
conn_flush (sbx_resolver *r, conn *c)
{
  while (c->wlen > 0 && !c->broken)
    {
      ssize_t w = send (c->fd, c->wbuf, c->wlen, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w < 0)
        {
          if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            c->broken = true;
          return;
        }
      memmove (c->wbuf, c->wbuf + w, c->wlen - (size_t) w);
      c->wlen -= (size_t) w;
    }
  if (c->wlen == 0)
    {
      free (c->wbuf);
      c->wbuf = NULL;
      c->idle_at = now_ms_monotonic () + (uint64_t) r->idle_ms;
    }
}

/* Queues the message P length-prefixed and writes what the socket takes.
 * A broken connection is closed by the sweep, never here. */
static void
conn_queue (sbx_resolver *r, conn *c, const unsigned char *p, size_t n)
{
  if (c->broken)
    return;
  c->wbuf = xrealloc (c->wbuf, c->wlen + 2 + n);
  sbx_dns_put16 (c->wbuf + c->wlen, (uint16_t) n);
  memcpy (c->wbuf + c->wlen + 2, p, n);
  c->wlen += 2 + n;
  conn_flush (r, c);
}

/* Whether C may start another query: the bounds in flight, and no answer
 * still waiting to be written (so the write buffer holds at most the
 * answers of the queries in flight). */
static bool
conn_may_start (const sbx_resolver *r, const conn *c)
{
  return !c->broken && c->nout < SBX_RESOLVER_CONN_INFLIGHT && c->wlen == 0 && r->ntcp < SBX_RESOLVER_TCP_INFLIGHT;
}

static bool
conn_frame_ready (const conn *c)
{
  return c->rlen >= 2 && c->rlen >= 2 + (size_t) sbx_dns_get16 (c->rbuf);
}

static bool
conn_wants_read (const sbx_resolver *r, const conn *c)
{
  return !c->eof && conn_may_start (r, c) && !conn_frame_ready (c);
}

static void
tcp_query (sbx_resolver *r, conn *c, const unsigned char *p, size_t n)
{
  unsigned char out[SBX_DNS_HDR + SBX_DNS_QUESTION_MAX];
  if (sbx_dns_query_check (p, n) < 0)
    {
      size_t m = sbx_dns_formerr (p, n, out);
      r->malformed++;
      if (m)
        conn_queue (r, c, out, m);
      else
        c->broken = true;
      return;
    }
  if (!name_listed (r, p, SBX_DNS_HDR + (size_t) sbx_dns_question_len (p, n)))
    {
      r->refused++;
      conn_queue (r, c, out, sbx_dns_refused (p, SBX_DNS_HDR + (size_t) sbx_dns_question_len (p, n), out));
      return;
    }
  query *q = query_new (r, p, n);
  if (!q)
    {
      r->failed++;
      conn_queue (r, c, out, sbx_dns_servfail (p, SBX_DNS_HDR + (size_t) sbx_dns_question_len (p, n), out));
      return;
    }
  q->conn = c;
  c->nout++;
  r->ntcp++;
  query_try (r, q, 0);
}

/* Starts the whole queries buffered, as far as the bounds allow. */
static void
conn_process (sbx_resolver *r, conn *c)
{
  while (conn_may_start (r, c) && conn_frame_ready (c))
    {
      size_t n = sbx_dns_get16 (c->rbuf);
      c->idle_at = now_ms_monotonic () + (uint64_t) r->idle_ms;
      tcp_query (r, c, c->rbuf + 2, n);
      memmove (c->rbuf, c->rbuf + 2 + n, c->rlen - 2 - n);
      c->rlen -= 2 + n;
    }
}

static void
conn_read (sbx_resolver *r, conn *c)
{
  /* Room for the query being read, once its length is known. */
  size_t need = c->rlen < 2 ? CONN_RBUF_MIN : 2 + (size_t) sbx_dns_get16 (c->rbuf);
  if (need < CONN_RBUF_MIN)
    need = CONN_RBUF_MIN;
  if (c->rcap < need)
    {
      c->rbuf = xrealloc (c->rbuf, need);
      c->rcap = need;
    }
  ssize_t n = recv (c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
  if (n == 0)
    c->eof = true;
  else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    c->broken = true;
  if (n <= 0)
    return;
  c->rlen += (size_t) n;
  conn_process (r, c);
}

static void
conn_event (sbx_resolver *r, conn *c, short revents)
{
  if (revents & (POLLERR | POLLHUP | POLLNVAL))
    {
      c->broken = true;
      return;
    }
  if (revents & POLLOUT)
    conn_flush (r, c);
  if ((revents & POLLIN) && conn_wants_read (r, c))
    conn_read (r, c);
}

static void
conn_free (sbx_resolver *r, size_t slot)
{
  conn *c = r->conns[slot];
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    if (r->qs[i] && r->qs[i]->conn == c)
      query_free (r, r->qs[i]);
  close (c->fd);
  free (c->rbuf);
  free (c->wbuf);
  free (c);
  r->conns[slot] = NULL;
  r->nconns--;
}

static void
listener_accept (sbx_resolver *r, size_t l)
{
  for (int i = 0; i < BATCH; i++)
    {
      int fd = accept4 (r->ls[l].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0)
        {
          if (errno == ECONNABORTED || errno == EINTR)
            continue;
          break;
        }
      if (r->nconns == ARRAY_SIZE (r->conns))
        {
          close (fd);
          continue;
        }
      size_t slot = 0;
      while (r->conns[slot])
        slot++;
      conn *c = xmalloc0 (sizeof *c);
      c->serial = ++r->serial;
      c->fd = fd;
      c->idle_at = now_ms_monotonic () + (uint64_t) r->idle_ms;
      r->conns[slot] = c;
      r->nconns++;
    }
}

/* Closes the connections that are broken, done (the client closed its side
 * and has all its answers) or idle. */
static void
sweep (sbx_resolver *r, uint64_t now)
{
  for (size_t i = 0; i < ARRAY_SIZE (r->conns); i++)
    {
      conn *c = r->conns[i];
      if (!c)
        continue;
      bool done = c->eof && c->nout == 0 && c->wlen == 0 && !conn_frame_ready (c);
      if (c->broken || done || (c->nout == 0 && now >= c->idle_at))
        conn_free (r, i);
    }
}

/* ---- the loop ---- */

sbx_resolver *
sbx_resolver_new (const sbx_cidr *upstreams, size_t n, uint16_t upstream_port)
{
  sbx_resolver *r = xmalloc0 (sizeof *r);
  r->timeout_ms = SBX_RESOLVER_TIMEOUT_MS;
  r->idle_ms = SBX_RESOLVER_IDLE_MS;
  r->port = upstream_port;
  for (size_t i = 0; i < n && r->nup < ARRAY_SIZE (r->up); i++)
    {
      if (upstreams[i].family != AF_INET && upstreams[i].family != AF_INET6)
        continue;
      upstream *up = &r->up[r->nup++];
      up->salen = make_sockaddr (upstreams[i].family, upstreams[i].addr, upstream_port, &up->sa);
      up->udp = -1;
    }
  return r;
}

int
sbx_resolver_listen (sbx_resolver *r, int family, const void *addr, uint16_t port, sbx_error **err)
{
  struct sockaddr_storage sa;
  char text[INET6_ADDRSTRLEN] = "?";
  if ((family != AF_INET && family != AF_INET6) || !addr)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "resolver: listen: not an IPv4 or IPv6 address");
  if (r->nls + 2 > ARRAY_SIZE (r->ls))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "resolver: listen: at most %d addresses",
                          SBX_RESOLVER_LISTEN_MAX);
  socklen_t salen = make_sockaddr (family, addr, port, &sa);
  inet_ntop (family, addr, text, sizeof text);
  _cleanup_close_ int udp = listen_socket (&sa, salen, SOCK_DGRAM);
  if (udp < 0)
    return sbx_error_errno (err, -udp, "resolver: listen on %s port %u (udp)", text, port);
  if (port == 0 && getsockname (udp, (struct sockaddr *) &sa, &salen) < 0)
    return sbx_error_errno (err, errno, "resolver: listen on %s (udp): getsockname", text);
  _cleanup_close_ int tcp = listen_socket (&sa, salen, SOCK_STREAM);
  if (tcp < 0)
    return sbx_error_errno (err, -tcp, "resolver: listen on %s port %u (tcp)", text, port);
  r->ls[r->nls++] = (listener){ .fd = steal_fd (&udp), .tcp = false };
  r->ls[r->nls++] = (listener){ .fd = steal_fd (&tcp), .tcp = true };
  for (size_t u = 0; u < r->nup; u++)
    if (same_sockaddr (&r->up[u].sa, &sa))
      r->up[u].self = true;
  return 0;
}

static void
fill (sbx_resolver *r, struct pollfd *pf, size_t max, int fd, short events, ref what)
{
  if (r->nmap >= max)
    return;
  pf[r->nmap] = (struct pollfd){ .fd = fd, .events = events };
  r->map[r->nmap++] = what;
}

size_t
sbx_resolver_pollfds (sbx_resolver *r, struct pollfd *pf, size_t max)
{
  if (max > ARRAY_SIZE (r->map))
    max = ARRAY_SIZE (r->map);
  r->nmap = 0;
  for (size_t i = 0; i < r->nls; i++)
    fill (r, pf, max, r->ls[i].fd, POLLIN, (ref){ REF_LISTENER, (uint32_t) i, 0 });
  for (size_t i = 0; i < r->nup; i++)
    if (r->up[i].udp >= 0)
      fill (r, pf, max, r->up[i].udp, POLLIN, (ref){ REF_UPSTREAM, (uint32_t) i, 0 });
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    {
      const query *q = r->qs[i];
      if (q && q->fd >= 0)
        fill (r, pf, max, q->fd, q->state == TCP_RECEIVING ? POLLIN : POLLOUT,
              (ref){ REF_QUERY, (uint32_t) i, q->serial });
    }
  for (size_t i = 0; i < ARRAY_SIZE (r->conns); i++)
    {
      const conn *c = r->conns[i];
      if (c)
        fill (r, pf, max, c->fd, (short) ((conn_wants_read (r, c) ? POLLIN : 0) | (c->wlen ? POLLOUT : 0)),
              (ref){ REF_CONN, (uint32_t) i, c->serial });
    }
  return r->nmap;
}

static void
dispatch_one (sbx_resolver *r, const ref *what, const struct pollfd *pf)
{
  switch (what->kind)
    {
    case REF_LISTENER:
      if (r->ls[what->idx].fd == pf->fd)
        (r->ls[what->idx].tcp ? listener_accept : listener_udp_read) (r, what->idx);
      break;
    case REF_UPSTREAM:
      if (r->up[what->idx].udp == pf->fd)
        upstream_read (r, what->idx);
      break;
    case REF_QUERY:
      {
        query *q = r->qs[what->idx];
        if (q && q->serial == what->serial && q->fd == pf->fd)
          tcp_step (r, q);
        break;
      }
    default:
      {
        conn *c = r->conns[what->idx];
        if (c && c->serial == what->serial && c->fd == pf->fd)
          conn_event (r, c, pf->revents);
      }
    }
}

void
sbx_resolver_dispatch (sbx_resolver *r, const struct pollfd *pf, size_t n)
{
  if (n > r->nmap)
    n = r->nmap;
  for (size_t i = 0; i < n; i++)
    if (pf[i].revents)
      dispatch_one (r, &r->map[i], &pf[i]);
  r->nmap = 0;
  expire (r, now_ms_monotonic ());
  /* Connections held back by a bound may go on now that queries ended. */
  for (size_t i = 0; i < ARRAY_SIZE (r->conns); i++)
    if (r->conns[i])
      conn_process (r, r->conns[i]);
  sweep (r, now_ms_monotonic ());
}

int
sbx_resolver_timeout_ms (const sbx_resolver *r)
{
  uint64_t next = UINT64_MAX;
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    if (r->qs[i] && r->qs[i]->deadline < next)
      next = r->qs[i]->deadline;
  for (size_t i = 0; i < ARRAY_SIZE (r->conns); i++)
    if (r->conns[i] && r->conns[i]->nout == 0 && r->conns[i]->idle_at < next)
      next = r->conns[i]->idle_at;
  if (next == UINT64_MAX)
    return -1;
  uint64_t now = now_ms_monotonic ();
  if (next <= now)
    return 0;
  return next - now > INT_MAX ? INT_MAX : (int) (next - now);
}

void
sbx_resolver_counts (const sbx_resolver *r, uint64_t *answered, uint64_t *failed, uint64_t *malformed)
{
  if (answered)
    *answered = r->answered;
  if (failed)
    *failed = r->failed;
  if (malformed)
    *malformed = r->malformed;
}

void
sbx_resolver_set_domains (sbx_resolver *r, char *const *rules, uint32_t ttl_max, sbx_resolver_allow_fn allow,
                          void *data)
{
  strv_free (r->rules);
  r->rules = rules ? strv_dup (rules) : NULL;
  r->ttl_max = ttl_max;
  r->allow = allow;
  r->allow_data = data;
}

uint64_t
sbx_resolver_refused_count (const sbx_resolver *r)
{
  return r->refused;
}

void
sbx_resolver_set_timeout_ms (sbx_resolver *r, int ms)
{
  r->timeout_ms = ms < 1 ? 1 : ms;
}

void
sbx_resolver_set_idle_ms (sbx_resolver *r, int ms)
{
  r->idle_ms = ms < 1 ? 1 : ms;
}

void
sbx_resolver_free (sbx_resolver *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < ARRAY_SIZE (r->conns); i++)
    if (r->conns[i])
      conn_free (r, i);
  for (size_t i = 0; i < ARRAY_SIZE (r->qs); i++)
    if (r->qs[i])
      query_free (r, r->qs[i]);
  for (size_t i = 0; i < r->nls; i++)
    close (r->ls[i].fd);
  for (size_t i = 0; i < r->nup; i++)
    if (r->up[i].udp >= 0)
      close (r->up[i].udp);
  strv_free (r->rules);
  free (r);
}
